/* SPDX-License-Identifier: MIT */
/*
 * A hand-written SVG timeline of a tr_model, readable without any viewer
 * beyond a browser or an image converter:
 *
 *   title, command, summary
 *   time axis (ms from the start of the trace) with a grid
 *   "Fences"  one row per driver/timeline lane; a bar from emit (or init) to
 *             signaled, hatched red if it never signalled; a tick where
 *             someone enabled signalling
 *   "Waits"   one row per thread that blocked in dma_fence_wait()
 *   "Markers" rows per thread that wrote syncbridge: markers, one per
 *             nesting level of its spans (an instant goes on the row below
 *             the spans it falls in); a marker naming a fence
 *             (fence=CONTEXT:SEQNO) has a dotted tie up to that fence's row
 *   legend
 *
 * Every bar carries a <title> tooltip with the fence's details.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "trace_output.h"

#define SVG_W 1200
#define LABEL_W 240
#define RIGHT_PAD 30
#define PLOT_W (SVG_W - LABEL_W - RIGHT_PAD)
#define ROW_H 22
#define BAR_H 14
#define SECTION_H 24
#define TOP 96
#define MAX_LANES_DRAWN 16
#define CHAR_W 6.6 /* average glyph width at font-size 11, for fitting labels */
#define MIN_BLOCK_NS 100000 /* poll()s shorter than 0.1 ms are left out of the picture */
#define BLOCK_COLOR "#f1a340"
#define TITLE_CHARS 100 /* of the command, after "syncbridge-info trace: " */

static const char *const palette[] = {
	"#4e79a7", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7",
};

struct svg_ctx {
	FILE *f;  /* foreground: labels, bars, markers */
	FILE *bg; /* background: row stripes (under the grid) */
	const struct tr_model *m;
	double t0, span; /* ns: the window shown */
	double origin;   /* ns: time 0 of the labels (the trace's start) */
	bool cropped;    /* the window is narrower than the trace: skip what lies outside */
	double y;        /* next row's top */
	int row;         /* for striping */
	double *fence_y; /* per fence: the top of its bar's row, -1 if not drawn */
};

#define MAX_MARKER_ROWS 4 /* per thread; deeper nesting is drawn on the last row */
#define MAX_TIES 400      /* marker-to-fence ties drawn; more would hide the picture */

/* Rows a thread's markers need: one per nesting level (0 if it wrote none). */
static int
marker_rows_of(const struct tr_model *m, int thread)
{
	int rows = 0;

	for (size_t k = 0; k < m->nmarkers; k++)
		if (m->markers[k].thread == thread && m->markers[k].depth + 1 > rows)
			rows = m->markers[k].depth + 1;
	return rows < MAX_MARKER_ROWS ? rows : MAX_MARKER_ROWS;
}

static void
xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default: {
			size_t n;

			/* control characters are not allowed in XML 1.0: a blank instead */
			if ((unsigned char)*s < 0x20) {
				fputc(' ', f);
				break;
			}
			n = utf8_seq_len((const unsigned char *)s, strlen(s));
			if (n == 0) {
				fputs("\xef\xbf\xbd", f); /* U+FFFD for a byte that is not UTF-8 */
				break;
			}
			fwrite(s, 1, n, f);
			s += n - 1;
			break;
		}
		}
	}
}

static double
xpos(const struct svg_ctx *c, int64_t ns)
{
	double x = LABEL_W + ((double)ns - c->t0) / c->span * PLOT_W;

	if (x < LABEL_W)
		x = LABEL_W;
	if (x > LABEL_W + PLOT_W)
		x = LABEL_W + PLOT_W;
	return x;
}

static double
ms(const struct svg_ctx *c, int64_t ns)
{
	return ((double)ns - c->origin) / 1e6;
}

/* Whether [s, e] shows in a cropped window (always, in the whole trace's). */
static bool
in_window(const struct svg_ctx *c, int64_t s, int64_t e)
{
	return !c->cropped || ((double)e >= c->t0 && (double)s <= c->t0 + c->span);
}

/* A step of 1, 2 or 5 times a power of ten giving about `target` intervals. */
static double
nice_step(double range, int target)
{
	double raw = range / target, p = pow(10, floor(log10(raw))), r = raw / p;

	if (r <= 1)
		return p;
	if (r <= 2)
		return 2 * p;
	if (r <= 5)
		return 5 * p;
	return 10 * p;
}

static void
row_label(struct svg_ctx *c, const char *label, bool sub)
{
	char buf[48];
	size_t n = strlen(label);

	/* stripe and label */
	fprintf(c->bg, "<rect x=\"0\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", c->y,
		SVG_W, ROW_H, c->row % 2 ? "#f4f6f8" : "#ffffff");
	if (n > 36) {
		/* keep the head and the tail, cut on UTF-8 character boundaries */
		size_t head = 17, tail = n - 16;

		while (head > 0 && ((unsigned char)label[head] & 0xc0) == 0x80)
			head--;
		while (tail < n && ((unsigned char)label[tail] & 0xc0) == 0x80)
			tail++;
		snprintf(buf, sizeof(buf), "%.*s\xe2\x80\xa6%s", (int)head, label, label + tail);
		label = buf;
	}
	fprintf(c->f, "<text x=\"%d\" y=\"%.1f\" class=\"%s\">", sub ? 22 : 10, c->y + 15,
		sub ? "lbl sub" : "lbl");
	xml_text(c->f, label);
	fputs("</text>\n", c->f);
	c->row++;
}

static void
section(struct svg_ctx *c, const char *title, const char *note)
{
	c->y += 6;
	fprintf(c->f, "<text x=\"10\" y=\"%.1f\" class=\"sec\">", c->y + 14);
	xml_text(c->f, title);
	fputs("</text>", c->f);
	if (note) {
		fprintf(c->f, "<text x=\"%d\" y=\"%.1f\" class=\"note\">", LABEL_W, c->y + 14);
		xml_text(c->f, note);
		fputs("</text>", c->f);
	}
	fputc('\n', c->f);
	c->y += SECTION_H - 6;
}

/* A bar with a tooltip and, if it fits, a label inside. */
static void
bar(struct svg_ctx *c, double x0, double x1, const char *fill, const char *extra_class,
    const char *label, const char *tooltip)
{
	double w = x1 - x0;

	if (c->cropped && ((x1 <= LABEL_W) || (x0 >= LABEL_W + PLOT_W)))
		return; /* outside the window shown */
	if (w < 2) {
		x0 -= (2 - w) / 2;
		w = 2;
	}
	fprintf(c->f, "<g><title>");
	xml_text(c->f, tooltip);
	fprintf(c->f, "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" rx=\"2\" "
		      "fill=\"%s\" class=\"bar%s%s\"/>",
		x0, c->y + (ROW_H - BAR_H) / 2.0, w, BAR_H, fill, extra_class ? " " : "",
		extra_class ? extra_class : "");
	if (label && w >= CHAR_W * (double)strlen(label) + 6) {
		fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\" class=\"%s\">", x0 + 3, c->y + 15,
			extra_class && strcmp(extra_class, "pend") == 0    ? "in dark"
			: extra_class && strcmp(extra_class, "block") == 0 ? "in blk"
									   : "in");
		xml_text(c->f, label);
		fputs("</text>", c->f);
	}
	fputs("</g>\n", c->f);
}

static int
count_rows(const struct tr_model *m, int *fence_rows, int *wait_rows, int *marker_rows)
{
	*fence_rows = *wait_rows = *marker_rows = 0;
	for (size_t t = 0; t < m->ntracks; t++)
		*fence_rows += m->tracks[t].lanes < MAX_LANES_DRAWN ? m->tracks[t].lanes
								  : MAX_LANES_DRAWN;
	for (size_t i = 0; i < m->nthreads; i++) {
		bool w = false;

		for (size_t k = 0; k < m->nwaits && !w; k++)
			w = m->waits[k].thread == (int)i;
		for (size_t k = 0; k < m->nblocks && !w; k++)
			w = m->blocks[k].thread == (int)i &&
			    m->blocks[k].end_ns - m->blocks[k].start_ns >= MIN_BLOCK_NS;
		*wait_rows += w;
		*marker_rows += marker_rows_of(m, (int)i);
	}
	return *fence_rows + *wait_rows + *marker_rows;
}

static void
draw_fences(struct svg_ctx *c)
{
	const struct tr_model *m = c->m;
	char label[TR_NAME_LEN * 2 + 32], tip[512], who[64], created[128], signalled[128];

	for (size_t t = 0; t < m->ntracks; t++) {
		const struct tr_track *tr = &m->tracks[t];
		const char *color = palette[t % (sizeof(palette) / sizeof(palette[0]))];
		int lanes = tr->lanes < MAX_LANES_DRAWN ? tr->lanes : MAX_LANES_DRAWN;

		bool only_markers = true;

		for (size_t i = 0; i < m->nfences; i++)
			if (m->fences[i].track == (int)t && !m->fences[i].from_marker)
				only_markers = false;
		for (int lane = 0; lane < lanes; lane++) {
			if (lane == 0 && only_markers)
				/* no dma_fence event while tracing (made and signalled before) */
				snprintf(label, sizeof(label), "%s / %s: from markers", tr->driver,
					 tr->timeline);
			else if (lane == 0)
				snprintf(label, sizeof(label), "%s / %s (%zu)", tr->driver, tr->timeline,
					 tr->nfences);
			else if (lane == MAX_LANES_DRAWN - 1 && tr->lanes > MAX_LANES_DRAWN)
				snprintf(label, sizeof(label), "lanes %d-%d (overlaid)", lane + 1,
					 tr->lanes);
			else
				snprintf(label, sizeof(label), "lane %d", lane + 1);
			row_label(c, label, lane > 0);

			for (size_t i = 0; i < m->nfences; i++) {
				const struct tr_fence *f = &m->fences[i];
				int flane = f->lane < MAX_LANES_DRAWN ? f->lane : MAX_LANES_DRAWN - 1;
				int64_t s, e;
				bool pending;
				char in[48];

				if (f->track != (int)t || flane != lane)
					continue;
				if (f->from_marker) {
					/* no bar: only the row the markers' ties meet on */
					if (c->fence_y)
						c->fence_y[i] = c->y;
					continue;
				}
				s = tr_fence_start(m, f);
				e = tr_fence_end(m, f);
				pending = f->signaled_ns == TR_NONE;
				snprintf(in, sizeof(in), "%llu:%llu", (unsigned long long)f->context,
					 (unsigned long long)f->seqno);
				if (f->init_ns == TR_NONE)
					snprintf(created, sizeof(created), "created before the trace");
				else
					snprintf(created, sizeof(created), "created at %.3f ms%s%s",
						 ms(c, f->init_ns), f->init_thread >= 0 ? " by " : "",
						 f->init_thread >= 0 ? tr_thread_label(m, f->init_thread, who,
											sizeof(who))
								     : "");
				if (pending)
					snprintf(signalled, sizeof(signalled),
						 "NOT signalled by the end of the trace");
				else
					snprintf(signalled, sizeof(signalled), "signalled at %.3f ms%s%s",
						 ms(c, f->signaled_ns), f->signal_thread >= 0 ? " from " : "",
						 f->signal_thread >= 0
							 ? tr_thread_label(m, f->signal_thread, who, sizeof(who))
							 : "");
				snprintf(tip, sizeof(tip),
					 "%s %s context %llu seqno %llu\n%s\n%s\n%s %.3f ms%s%s",
					 f->driver, f->timeline, (unsigned long long)f->context,
					 (unsigned long long)f->seqno, created, signalled,
					 pending ? "pending for at least" : "pending for",
					 (double)(e - s) / 1e6,
					 f->destroy_thread >= 0 ? "\nlast reference dropped by " : "",
					 f->destroy_thread >= 0 ? tr_thread_label(m, f->destroy_thread, who,
										    sizeof(who))
								: "");
				bar(c, xpos(c, s), xpos(c, e), pending ? "url(#pending)" : color,
				    pending ? "pend" : NULL, in, tip);
				if (c->fence_y)
					c->fence_y[i] = c->y;
				if (f->enable_ns != TR_NONE && in_window(c, f->enable_ns, f->enable_ns)) {
					double x = xpos(c, f->enable_ns);

					fprintf(c->f,
						"<path d=\"M%.1f %.1f l-4 -5 h8 z\" class=\"enable\"/>\n", x,
						c->y + (ROW_H - BAR_H) / 2.0 + 1);
				}
			}
			c->y += ROW_H;
		}
	}
}

static void
draw_waits(struct svg_ctx *c)
{
	const struct tr_model *m = c->m;
	char label[96], tip[512];

	for (size_t i = 0; i < m->nthreads; i++) {
		bool any = false;

		for (size_t k = 0; k < m->nblocks; k++) {
			const struct tr_block *b = &m->blocks[k];

			if (b->thread != (int)i || b->end_ns - b->start_ns < MIN_BLOCK_NS)
				continue;
			if (!any) {
				row_label(c, tr_thread_label(m, (int)i, label, sizeof(label)), false);
				any = true;
			}
			snprintf(tip, sizeof(tip), "%s blocked in %s()\nfrom %.3f ms for %.3f ms%s", label,
				 b->name, ms(c, b->start_ns), (double)(b->end_ns - b->start_ns) / 1e6,
				 b->unfinished ? " (still blocked at the end)" : "");
			bar(c, xpos(c, b->start_ns), xpos(c, b->end_ns), BLOCK_COLOR, "block", b->name,
			    tip);
		}
		for (size_t k = 0; k < m->nwaits; k++) {
			const struct tr_wait *w = &m->waits[k];
			const struct tr_fence *f = &m->fences[w->fence];
			char in[48];

			if (w->thread != (int)i)
				continue;
			if (!any) {
				row_label(c, tr_thread_label(m, (int)i, label, sizeof(label)), false);
				any = true;
			}
			snprintf(in, sizeof(in), "%llu:%llu", (unsigned long long)f->context,
				 (unsigned long long)f->seqno);
			snprintf(tip, sizeof(tip),
				 "%s waited in dma_fence_wait() for %s %s %llu:%llu\nfrom %.3f ms for %.3f ms%s",
				 label, f->driver, f->timeline, (unsigned long long)f->context,
				 (unsigned long long)f->seqno, ms(c, w->start_ns),
				 (double)(w->end_ns - w->start_ns) / 1e6,
				 w->unfinished ? " (still waiting at the end)" : "");
			bar(c, xpos(c, w->start_ns), xpos(c, w->end_ns), "#e15759", "wait", in, tip);
		}
		if (any)
			c->y += ROW_H;
	}
}

/*
 * A dashed line from each fence's signal down through the waits, so a wait
 * that ends at a signal lines up with it (skipped when there are too many).
 */
static void
draw_signal_lines(struct svg_ctx *c, double y_end)
{
	const struct tr_model *m = c->m;
	size_t n = 0;

	if (!c->fence_y)
		return;
	for (size_t i = 0; i < m->nfences; i++)
		n += c->fence_y[i] >= 0 && m->fences[i].signaled_ns != TR_NONE;
	if (n == 0 || n > 64)
		return;
	for (size_t i = 0; i < m->nfences; i++) {
		const struct tr_fence *f = &m->fences[i];
		double x;

		if (c->fence_y[i] < 0 || f->signaled_ns == TR_NONE ||
		    !in_window(c, f->signaled_ns, f->signaled_ns))
			continue;
		x = xpos(c, f->signaled_ns);
		fprintf(c->f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"sig\" "
			      "stroke=\"%s\"/>\n",
			x, c->fence_y[i] + (ROW_H + BAR_H) / 2.0, x, y_end,
			palette[f->track % (int)(sizeof(palette) / sizeof(palette[0]))]);
	}
}

/* "fence CONTEXT:SEQNO (driver / timeline)" for a marker's tooltip. */
static void
marker_fence_text(const struct tr_model *m, const struct tr_marker *mk, char *buf, size_t len)
{
	const struct tr_fence *f;

	buf[0] = '\0';
	if (mk->fence < 0) {
		if (strstr(mk->args, "fence=") && !strstr(mk->args, "fence=none") &&
		    !strstr(mk->args, "fence=?"))
			snprintf(buf, len, "\nits fence has no dma_fence event in the trace");
		return;
	}
	f = &m->fences[mk->fence];
	snprintf(buf, len, "\nfence %llu:%llu (%s / %s)%s", (unsigned long long)f->context,
		 (unsigned long long)f->seqno, f->driver, f->timeline,
		 f->hidden	   ? ", not drawn: only its destruction is in the trace"
		 : f->from_marker ? ", no dma_fence event in the trace: known from markers"
				   : "");
}

/* A dotted tie from a marker up to the row of the fence it names. */
static void
marker_tie(struct svg_ctx *c, const struct tr_marker *mk, double x, double y, size_t *ties)
{
	const struct tr_fence *f;
	double fy;

	if (mk->fence < 0 || !c->fence_y || c->fence_y[mk->fence] < 0 || *ties >= MAX_TIES)
		return;
	f = &c->m->fences[mk->fence];
	fy = c->fence_y[mk->fence] + ROW_H / 2.0;
	(*ties)++;
	fprintf(c->f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"tie\" "
		      "stroke=\"%s\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\" class=\"tiedot\" "
		      "fill=\"%s\"/>\n",
		x, y, x, fy, palette[f->track % (int)(sizeof(palette) / sizeof(palette[0]))], x, fy,
		palette[f->track % (int)(sizeof(palette) / sizeof(palette[0]))]);
}

/*
 * "comm[tid]: layer, egl": the thread and the prefixes (up to the first '.')
 * of its marker names, which say which library wrote them — two processes of
 * one program otherwise share a comm.
 */
static void
thread_marker_label(const struct tr_model *m, int thread, char *buf, size_t len)
{
	size_t used;
	int n = 0;

	tr_thread_label(m, thread, buf, len);
	used = strlen(buf);
	for (size_t k = 0; k < m->nmarkers && n < 2; k++) {
		const struct tr_marker *mk = &m->markers[k];
		const char *dot = strchr(mk->name, '.');
		size_t pl = dot ? (size_t)(dot - mk->name) : 0;
		bool seen = false;

		if (mk->thread != thread || !pl || strncmp(mk->name, "end ", 4) == 0)
			continue;
		for (size_t j = 0; j < k && !seen; j++)
			seen = m->markers[j].thread == thread &&
			       strncmp(m->markers[j].name, mk->name, pl + 1) == 0;
		if (seen || used + pl + 3 >= len)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%.*s", n ? ", " : ": ", (int)pl,
					 mk->name);
		n++;
	}
}

static void
draw_markers(struct svg_ctx *c)
{
	const struct tr_model *m = c->m;
	char label[96], tip[1024], ftext[256];
	size_t ties = 0;

	for (size_t i = 0; i < m->nthreads; i++) {
		int rows = marker_rows_of(m, (int)i);
		double label_end[MAX_MARKER_ROWS] = { 0 };
		double y0 = c->y;

		if (!rows)
			continue;
		thread_marker_label(m, (int)i, label, sizeof(label));
		row_label(c, label, false);
		for (int r = 1; r < rows; r++) {
			c->y += ROW_H;
			row_label(c, "", true);
		}
		for (size_t k = 0; k < m->nmarkers; k++) {
			const struct tr_marker *mk = &m->markers[k];
			int row;
			double x;

			if (mk->thread != (int)i)
				continue;
			row = mk->depth < rows ? mk->depth : rows - 1;
			c->y = y0 + row * ROW_H;
			x = xpos(c, mk->ts_ns);
			marker_fence_text(m, mk, ftext, sizeof(ftext));
			if (mk->span) {
				snprintf(tip, sizeof(tip), "%s %s\nfrom %.3f ms for %.3f ms%s%s", mk->name,
					 mk->args, ms(c, mk->ts_ns),
					 (double)(mk->end_ns - mk->ts_ns) / 1e6,
					 mk->unfinished ? " (not ended by the end of the trace)" : "", ftext);
				bar(c, x, xpos(c, mk->end_ns), "#8a6bbe", "mark", mk->name, tip);
				marker_tie(c, mk, x, c->y + (ROW_H - BAR_H) / 2.0, &ties);
				continue;
			}
			snprintf(tip, sizeof(tip), "%s %s\nat %.3f ms%s", mk->name, mk->args,
				 ms(c, mk->ts_ns), ftext);
			marker_tie(c, mk, x, c->y + 6, &ties);
			fprintf(c->f, "<g><title>");
			xml_text(c->f, tip);
			fprintf(c->f, "</title><path d=\"M%.1f %.1f l5 5 l-5 5 l-5 -5 z\" class=\"mk\"/>",
				x, c->y + 6);
			if (x + 7 > label_end[row] &&
			    x + 7 + CHAR_W * (double)strlen(mk->name) < SVG_W) {
				fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\" class=\"mkl\">", x + 7,
					c->y + 15);
				xml_text(c->f, mk->name);
				fputs("</text>", c->f);
				label_end[row] = x + 7 + CHAR_W * (double)strlen(mk->name) + 4;
			}
			fputs("</g>\n", c->f);
		}
		c->y = y0 + rows * ROW_H;
	}
}

static void
draw_axis(struct svg_ctx *c, double y_top, double y_bottom)
{
	double range_ms = c->span / 1e6, step = nice_step(range_ms, 10);
	double offset_ms = (c->t0 - c->origin) / 1e6, first = ceil(offset_ms / step - 1e-9) * step;
	int decimals = step >= 1 ? 0 : (int)ceil(-log10(step));

	/* ticks in ms since the trace's start, also when the window starts later */
	for (double t = first; t <= offset_ms + range_ms + step * 1e-6; t += step) {
		double x = LABEL_W + (t - offset_ms) / range_ms * PLOT_W;

		fprintf(c->f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>\n",
			x, y_top, x, y_bottom);
		fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">%.*f</text>\n", x, y_top - 6,
			decimals, t);
		fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">%.*f</text>\n", x,
			y_bottom + 14, decimals, t);
	}
	fprintf(c->f, "<text x=\"%d\" y=\"%.1f\" class=\"axis\">time (ms)</text>\n", 10, y_top - 6);
	fprintf(c->f, "<text x=\"%d\" y=\"%.1f\" class=\"axis\">time (ms)</text>\n", 10,
		y_bottom + 14);
}

enum legend_symbol {
	SYM_BAR, SYM_PENDING, SYM_WAIT, SYM_BLOCK, SYM_SPAN, SYM_ENABLE, SYM_MARKER, SYM_TIE,
};

/* One legend entry; wraps to a new line when it would not fit. */
static void
legend_item(struct svg_ctx *c, double *x, double *y, enum legend_symbol sym, const char *text)
{
	double w = 28 + CHAR_W * (double)strlen(text) + 18;
	const char *fill = NULL, *cls = NULL;

	if (*x + w > SVG_W && *x > 10) {
		*x = 10;
		*y += 18;
	}
	switch (sym) {
	case SYM_BAR:
		fill = palette[0], cls = "bar";
		break;
	case SYM_PENDING:
		fill = "url(#pending)", cls = "bar pend";
		break;
	case SYM_WAIT:
		fill = "#e15759", cls = "bar wait";
		break;
	case SYM_BLOCK:
		fill = BLOCK_COLOR, cls = "bar block";
		break;
	case SYM_SPAN:
		fill = "#8a6bbe", cls = "bar mark";
		break;
	case SYM_ENABLE:
		fprintf(c->f, "<path d=\"M%.1f %.1f l-4 -5 h8 z\" class=\"enable\"/>", *x + 11, *y + 9);
		break;
	case SYM_MARKER:
		fprintf(c->f, "<path d=\"M%.1f %.1f l5 5 l-5 5 l-5 -5 z\" class=\"mk\"/>", *x + 11,
			*y + 1);
		break;
	case SYM_TIE:
		fprintf(c->f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"tie\" "
			      "stroke=\"%s\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\" "
			      "class=\"tiedot\" fill=\"%s\"/>",
			*x + 11, *y + 12, *x + 11, *y, palette[0], *x + 11, *y, palette[0]);
		break;
	}
	if (fill)
		fprintf(c->f,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"12\" rx=\"2\" "
			"fill=\"%s\" class=\"%s\"/>",
			*x, *y, fill, cls);
	fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\" class=\"note\">%s</text>\n", *x + 28, *y + 10,
		text);
	*x += w;
}

static void
legend(struct svg_ctx *c, double y)
{
	double x = 10;

	legend_item(c, &x, &y, SYM_BAR, "fence: emit (or init) until signalled");
	legend_item(c, &x, &y, SYM_PENDING, "not signalled by the end");
	legend_item(c, &x, &y, SYM_WAIT, "in dma_fence_wait()");
	legend_item(c, &x, &y, SYM_BLOCK, "blocked in poll()/select()/epoll_wait()");
	legend_item(c, &x, &y, SYM_SPAN, "marker span");
	legend_item(c, &x, &y, SYM_ENABLE, "enable_signal");
	legend_item(c, &x, &y, SYM_MARKER, "syncbridge: marker");
	legend_item(c, &x, &y, SYM_TIE, "the marker's fence (fence=CONTEXT:SEQNO)");
}

static int
copy_stream(FILE *to, char *buf, size_t len)
{
	return fwrite(buf, 1, len, to) == len ? 0 : -1;
}

int
tr_write_svg(const struct tr_model *m, const struct tr_meta *meta, FILE *f)
{
	struct svg_ctx c = { .m = m };
	int fence_rows, wait_rows, marker_rows, ret = 0;
	double height, y_axis_top, y_rows_end;
	char cmd[512], summary[512];
	size_t signalled = 0, shown = 0;
	char *fg_buf = NULL, *bg_buf = NULL;
	size_t fg_len = 0, bg_len = 0;

	count_rows(m, &fence_rows, &wait_rows, &marker_rows);
	y_rows_end = TOP + SECTION_H * 3 +
		     ROW_H * ((fence_rows ? fence_rows : 1) + (wait_rows ? wait_rows : 1) +
			      (marker_rows ? marker_rows : 1)) +
		     4;
	height = y_rows_end + 84; /* axis labels and up to two legend lines */

	c.t0 = c.origin = (double)m->begin_ns;
	c.span = (double)(m->end_ns - m->begin_ns);
	if (meta->svg_markers_window && m->nmarkers) {
		/* from the first marker to the last one's end, plus 2% on each side */
		int64_t first = INT64_MAX, last = INT64_MIN;

		for (size_t i = 0; i < m->nmarkers; i++) {
			const struct tr_marker *mk = &m->markers[i];
			int64_t e = mk->span ? mk->end_ns : mk->ts_ns;

			first = mk->ts_ns < first ? mk->ts_ns : first;
			last = e > last ? e : last;
		}
		double pad = (double)(last - first) * 0.02 + 1e5;
		c.t0 = (double)first - pad > c.origin ? (double)first - pad : c.origin;
		c.span = ((double)last + pad < (double)m->end_ns ? (double)last + pad
								  : (double)m->end_ns) - c.t0;
		c.cropped = true;
	}
	if (c.span < 1e6)
		c.span = 1e6; /* at least 1 ms, so an empty trace still has an axis */

	for (size_t i = 0; i < m->nfences; i++) {
		if (m->fences[i].hidden || m->fences[i].from_marker)
			continue;
		shown++;
		signalled += m->fences[i].signaled_ns != TR_NONE;
	}

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
		   "viewBox=\"0 0 %d %.0f\" font-family=\"DejaVu Sans, Verdana, Arial, sans-serif\">\n",
		SVG_W, height, SVG_W, height);
	fputs("<defs>\n"
	      "<pattern id=\"pending\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
	      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fbe3e3\"/>"
	      "<rect width=\"3\" height=\"6\" fill=\"#e8a0a0\"/></pattern>\n"
	      "<style>\n"
	      ".title{font-size:16px;font-weight:bold;fill:#222}\n"
	      ".note{font-size:11px;fill:#555}\n"
	      ".sec{font-size:12px;font-weight:bold;fill:#333}\n"
	      ".lbl{font-size:11px;fill:#222}.sub{fill:#777}\n"
	      ".tick{font-size:10px;fill:#666;text-anchor:middle}\n"
	      ".axis{font-size:10px;fill:#666}\n"
	      ".grid{stroke:#d5dae0;stroke-width:1}\n"
	      ".sig{stroke-width:1;stroke-dasharray:2 3;opacity:0.8}\n"
	      ".bar{stroke:#333;stroke-width:0.6}.pend{stroke:#c0392b;stroke-dasharray:3 2}\n"
	      ".in{font-size:10px;fill:#fff}.dark{fill:#7b1d1d}\n"
	      ".block .in, .in.blk{fill:#4a2c00}\n"
	      ".enable{fill:#222}.mk{fill:#8a6bbe;stroke:#4b2f7a;stroke-width:0.6}\n"
	      ".mkl{font-size:10px;fill:#4b2f7a}\n"
	      ".tie{stroke-width:1;stroke-dasharray:1 2;opacity:0.7}.tiedot{stroke:#333;stroke-width:0.5}\n"
	      "</style>\n</defs>\n", f);
	fprintf(f, "<rect width=\"%d\" height=\"%.0f\" fill=\"#ffffff\"/>\n", SVG_W, height);

	fputs("<text x=\"10\" y=\"24\" class=\"title\">", f);
	if (meta->argv) {
		fputs("syncbridge-info trace: ", f);
		tr_meta_command(meta, cmd, sizeof(cmd));
		if (strlen(cmd) > TITLE_CHARS) {
			size_t cut = TITLE_CHARS - 3;

			while (cut > 0 && ((unsigned char)cmd[cut] & 0xc0) == 0x80)
				cut--;
			strcpy(cmd + cut, "...");
		}
		xml_text(f, cmd);
	} else {
		fputs("syncbridge-info trace of ", f);
		xml_text(f, meta->input ? meta->input : "?");
	}
	fputs("</text>\n", f);
	snprintf(summary, sizeof(summary),
		 "%.1f ms, %zu fence%s on %zu timeline%s (%zu signalled), %zu dma_fence_wait%s, "
		 "%zu poll-family call%s, %zu marker%s; clock %s%s%s",
		 (double)(m->end_ns - m->begin_ns) / 1e6, shown, shown == 1 ? "" : "s", m->ntracks,
		 m->ntracks == 1 ? "" : "s", signalled, m->nwaits, m->nwaits == 1 ? "" : "s",
		 m->nblocks, m->nblocks == 1 ? "" : "s", m->nmarkers, m->nmarkers == 1 ? "" : "s",
		 meta->clock ? meta->clock : "?",
		 meta->exit_status >= 0 ? "; command exited " : "",
		 tr_model_lost_events(m) ? "; EVENTS LOST (ring buffer full)" : "");
	fputs("<text x=\"10\" y=\"44\" class=\"note\">", f);
	xml_text(f, summary);
	if (meta->exit_status >= 0)
		fprintf(f, "%d", meta->exit_status);
	fputs("</text>\n", f);
	if (c.cropped)
		fprintf(f, "<text x=\"10\" y=\"60\" class=\"note\">shown: %.1f to %.1f ms, from the "
			   "first marker to the last (--svg-window markers); what lies outside is "
			   "left out</text>\n",
			(c.t0 - c.origin) / 1e6, (c.t0 + c.span - c.origin) / 1e6);

	/* rows: stripes into bg, everything else into fg; then bg, grid, fg */
	if (m->nfences) {
		c.fence_y = malloc(m->nfences * sizeof(*c.fence_y));
		for (size_t i = 0; c.fence_y && i < m->nfences; i++)
			c.fence_y[i] = -1;
	}
	c.f = open_memstream(&fg_buf, &fg_len);
	c.bg = open_memstream(&bg_buf, &bg_len);
	if (!c.f || !c.bg) {
		if (c.f)
			fclose(c.f);
		if (c.bg)
			fclose(c.bg);
		free(fg_buf);
		free(bg_buf);
		free(c.fence_y);
		return -1;
	}
	y_axis_top = TOP - 8;
	c.y = TOP;
	section(&c, "Fences (driver / timeline)", fence_rows ? NULL : "no dma_fence events");
	if (!fence_rows)
		c.y += ROW_H;
	draw_fences(&c);
	section(&c, "Waits (per thread)",
		wait_rows ? NULL : "no thread blocked in dma_fence_wait() or, for 0.1 ms or more, in poll()");
	if (!wait_rows)
		c.y += ROW_H;
	draw_waits(&c);
	if (wait_rows)
		draw_signal_lines(&c, c.y);
	section(&c, "Markers (syncbridge:)", marker_rows ? NULL : "none");
	if (!marker_rows)
		c.y += ROW_H;
	draw_markers(&c);
	legend(&c, y_rows_end + 30);
	fclose(c.f);
	fclose(c.bg);
	free(c.fence_y);
	c.fence_y = NULL;

	if (copy_stream(f, bg_buf, bg_len) < 0)
		ret = -1;
	c.f = f;
	draw_axis(&c, y_axis_top, y_rows_end);
	if (copy_stream(f, fg_buf, fg_len) < 0)
		ret = -1;
	free(fg_buf);
	free(bg_buf);
	fputs("</svg>\n", f);
	return ret || ferror(f) ? -1 : 0;
}
