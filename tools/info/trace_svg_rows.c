/* SPDX-License-Identifier: MIT */
/*
 * The rows of the SVG timeline (trace_svg.h): a stripe and a label each;
 * fence bars per driver/timeline lane, the waits and blocking syscalls per
 * thread, and the markers per thread and nesting level, tied to their fences.
 */
#include <stdlib.h>
#include <string.h>

#include "json_out.h"
#include "trace_svg.h"

#define MAX_LANES_DRAWN 16
#define MIN_BLOCK_NS 100000 /* poll()s shorter than 0.1 ms are left out of the picture */
#define MAX_MARKER_ROWS 4   /* per thread; deeper nesting is drawn on the last row */
#define MAX_TIES 400        /* marker-to-fence ties drawn; more would hide the picture */

static const char *const palette[] = {
	"#4e79a7", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7",
};

const char *
svg_track_color(int track)
{
	return palette[track % (int)(sizeof(palette) / sizeof(palette[0]))];
}

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

void
svg_xml_text(FILE *f, const char *s)
{
	static const char *const entities[128] = {
		['&'] = "&amp;",  ['<'] = "&lt;",    ['>'] = "&gt;",
		['"'] = "&quot;", ['\''] = "&apos;",
	};

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		size_t n;

		if (c < 128 && entities[c]) {
			fputs(entities[c], f);
		} else if (c < 0x20) {
			/* control characters are not allowed in XML 1.0: a blank instead */
			fputc(' ', f);
		} else if ((n = utf8_seq_len((const unsigned char *)s, strlen(s))) == 0) {
			fputs("\xef\xbf\xbd", f); /* U+FFFD for a byte that is not UTF-8 */
		} else {
			fwrite(s, 1, n, f);
			s += n - 1;
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
	svg_xml_text(c->f, label);
	fputs("</text>\n", c->f);
	c->row++;
}

void
svg_section(struct svg_ctx *c, const char *title, const char *note)
{
	c->y += 6;
	fprintf(c->f, "<text x=\"10\" y=\"%.1f\" class=\"sec\">", c->y + 14);
	svg_xml_text(c->f, title);
	fputs("</text>", c->f);
	if (note) {
		fprintf(c->f, "<text x=\"%d\" y=\"%.1f\" class=\"note\">", LABEL_W, c->y + 14);
		svg_xml_text(c->f, note);
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
	svg_xml_text(c->f, tooltip);
	fprintf(c->f, "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" rx=\"2\" "
		      "fill=\"%s\" class=\"bar%s%s\"/>",
		x0, c->y + (ROW_H - BAR_H) / 2.0, w, BAR_H, fill, extra_class ? " " : "",
		extra_class ? extra_class : "");
	if (label && w >= CHAR_W * (double)strlen(label) + 6) {
		fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\" class=\"%s\">", x0 + 3, c->y + 15,
			extra_class && strcmp(extra_class, "pend") == 0    ? "in dark"
			: extra_class && strcmp(extra_class, "block") == 0 ? "in blk"
									   : "in");
		svg_xml_text(c->f, label);
		fputs("</text>", c->f);
	}
	fputs("</g>\n", c->f);
}

int
svg_count_rows(const struct tr_model *m, int *fence_rows, int *wait_rows, int *marker_rows)
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

/* A fence bar's tooltip: its key, when it was made and signalled and by whom. */
static void
fence_tip(const struct svg_ctx *c, const struct tr_fence *f, char *tip, size_t len)
{
	const struct tr_model *m = c->m;
	char who[64], created[128], signalled[128];
	bool pending = f->signaled_ns == TR_NONE;
	int64_t s = tr_fence_start(m, f), e = tr_fence_end(m, f);

	if (f->init_ns == TR_NONE)
		snprintf(created, sizeof(created), "created before the trace");
	else
		snprintf(created, sizeof(created), "created at %.3f ms%s%s", ms(c, f->init_ns),
			 f->init_thread >= 0 ? " by " : "",
			 f->init_thread >= 0 ? tr_thread_label(m, f->init_thread, who, sizeof(who))
					     : "");
	if (pending && f->destroy_ns != TR_NONE)
		snprintf(signalled, sizeof(signalled),
			 "released at %.3f ms with no signal event (a fence nobody asked, "
			 "e.g. a dma_fence_array)", ms(c, f->destroy_ns));
	else if (pending)
		snprintf(signalled, sizeof(signalled), "NOT signalled by the end of the trace");
	else
		snprintf(signalled, sizeof(signalled), "signalled at %.3f ms%s%s",
			 ms(c, f->signaled_ns), f->signal_thread >= 0 ? " from " : "",
			 f->signal_thread >= 0 ?
				 tr_thread_label(m, f->signal_thread, who, sizeof(who)) : "");
	snprintf(tip, len, "%s %s context %llu seqno %llu\n%s\n%s\n%s %.3f ms%s%s",
		 f->driver, f->timeline, (unsigned long long)f->context,
		 (unsigned long long)f->seqno, created, signalled,
		 pending ? "pending for at least" : "pending for", (double)(e - s) / 1e6,
		 f->destroy_thread >= 0 ? "\nlast reference dropped by " : "",
		 f->destroy_thread >= 0 ? tr_thread_label(m, f->destroy_thread, who, sizeof(who))
					: "");
}

/* Fence i's bar on the current row, hatched while pending, and its enable_signal tick. */
static void
draw_fence(struct svg_ctx *c, size_t i, const char *color)
{
	const struct tr_fence *f = &c->m->fences[i];
	bool pending = f->signaled_ns == TR_NONE;
	char in[48], tip[512];

	snprintf(in, sizeof(in), "%llu:%llu", (unsigned long long)f->context,
		 (unsigned long long)f->seqno);
	fence_tip(c, f, tip, sizeof(tip));
	bar(c, xpos(c, tr_fence_start(c->m, f)), xpos(c, tr_fence_end(c->m, f)),
	    pending ? "url(#pending)" : color, pending ? "pend" : NULL, in, tip);
	if (c->fence_y)
		c->fence_y[i] = c->y;
	if (f->enable_ns != TR_NONE && in_window(c, f->enable_ns, f->enable_ns)) {
		double x = xpos(c, f->enable_ns);

		fprintf(c->f, "<path d=\"M%.1f %.1f l-4 -5 h8 z\" class=\"enable\"/>\n", x,
			c->y + (ROW_H - BAR_H) / 2.0 + 1);
	}
}

/* The label of a track's lane: the first names the track, the last drawn may hold several. */
static void
lane_label(const struct tr_track *tr, int lane, bool only_markers, char *label, size_t len)
{
	if (lane == 0 && only_markers)
		/* no dma_fence event while tracing (made and signalled before) */
		snprintf(label, len, "%s / %s: from markers", tr->driver, tr->timeline);
	else if (lane == 0)
		snprintf(label, len, "%s / %s (%zu)", tr->driver, tr->timeline, tr->nfences);
	else if (lane == MAX_LANES_DRAWN - 1 && tr->lanes > MAX_LANES_DRAWN)
		snprintf(label, len, "lanes %d-%d (overlaid)", lane + 1, tr->lanes);
	else
		snprintf(label, len, "lane %d", lane + 1);
}

void
svg_draw_fences(struct svg_ctx *c)
{
	const struct tr_model *m = c->m;
	char label[TR_NAME_LEN * 2 + 32];

	for (size_t t = 0; t < m->ntracks; t++) {
		const struct tr_track *tr = &m->tracks[t];
		const char *color = svg_track_color((int)t);
		int lanes = tr->lanes < MAX_LANES_DRAWN ? tr->lanes : MAX_LANES_DRAWN;
		bool only_markers = true;

		for (size_t i = 0; i < m->nfences; i++)
			if (m->fences[i].track == (int)t && !m->fences[i].from_marker)
				only_markers = false;
		for (int lane = 0; lane < lanes; lane++) {
			lane_label(tr, lane, only_markers, label, sizeof(label));
			row_label(c, label, lane > 0);
			for (size_t i = 0; i < m->nfences; i++) {
				const struct tr_fence *f = &m->fences[i];
				int flane = f->lane < MAX_LANES_DRAWN ? f->lane
								      : MAX_LANES_DRAWN - 1;

				if (f->track != (int)t || flane != lane)
					continue;
				if (!f->from_marker)
					draw_fence(c, i, color);
				else if (c->fence_y)
					/* no bar: only the row the markers' ties meet on */
					c->fence_y[i] = c->y;
			}
			c->y += ROW_H;
		}
	}
}

void
svg_draw_waits(struct svg_ctx *c)
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
				row_label(c, tr_thread_label(m, (int)i, label, sizeof(label)),
					  false);
				any = true;
			}
			snprintf(tip, sizeof(tip), "%s blocked in %s()\nfrom %.3f ms for %.3f ms%s",
				 label, b->name, ms(c, b->start_ns),
				 (double)(b->end_ns - b->start_ns) / 1e6,
				 b->unfinished ? " (still blocked at the end)" : "");
			bar(c, xpos(c, b->start_ns), xpos(c, b->end_ns), BLOCK_COLOR, "block",
			    b->name, tip);
		}
		for (size_t k = 0; k < m->nwaits; k++) {
			const struct tr_wait *w = &m->waits[k];
			const struct tr_fence *f = &m->fences[w->fence];
			char in[48];

			if (w->thread != (int)i)
				continue;
			if (!any) {
				row_label(c, tr_thread_label(m, (int)i, label, sizeof(label)),
					  false);
				any = true;
			}
			snprintf(in, sizeof(in), "%llu:%llu", (unsigned long long)f->context,
				 (unsigned long long)f->seqno);
			snprintf(tip, sizeof(tip),
				 "%s waited in dma_fence_wait() for %s %s %llu:%llu\n"
				 "from %.3f ms for %.3f ms%s",
				 label, f->driver, f->timeline, (unsigned long long)f->context,
				 (unsigned long long)f->seqno, ms(c, w->start_ns),
				 (double)(w->end_ns - w->start_ns) / 1e6,
				 w->unfinished ? " (still waiting at the end)" : "");
			bar(c, xpos(c, w->start_ns), xpos(c, w->end_ns), WAIT_COLOR, "wait", in,
			    tip);
		}
		if (any)
			c->y += ROW_H;
	}
}

/* So a wait that ends at a signal lines up with it (skipped when there are too many). */
void
svg_draw_signal_lines(struct svg_ctx *c, double y_end)
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
			svg_track_color(f->track));
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
		x, y, x, fy, svg_track_color(f->track), x, fy,
		svg_track_color(f->track));
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

void
svg_draw_markers(struct svg_ctx *c)
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
				snprintf(tip, sizeof(tip), "%s %s\nfrom %.3f ms for %.3f ms%s%s",
					 mk->name, mk->args, ms(c, mk->ts_ns),
					 (double)(mk->end_ns - mk->ts_ns) / 1e6,
					 mk->unfinished ? " (not ended by the end of the trace)"
							: "",
					 ftext);
				bar(c, x, xpos(c, mk->end_ns), MARK_COLOR, "mark", mk->name, tip);
				marker_tie(c, mk, x, c->y + (ROW_H - BAR_H) / 2.0, &ties);
				continue;
			}
			snprintf(tip, sizeof(tip), "%s %s\nat %.3f ms%s", mk->name, mk->args,
				 ms(c, mk->ts_ns), ftext);
			marker_tie(c, mk, x, c->y + 6, &ties);
			fprintf(c->f, "<g><title>");
			svg_xml_text(c->f, tip);
			fprintf(c->f,
				"</title><path d=\"M%.1f %.1f l5 5 l-5 5 l-5 -5 z\" class=\"mk\"/>",
				x, c->y + 6);
			if (x + 7 > label_end[row] &&
			    x + 7 + CHAR_W * (double)strlen(mk->name) < SVG_W) {
				fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\" class=\"mkl\">", x + 7,
					c->y + 15);
				svg_xml_text(c->f, mk->name);
				fputs("</text>", c->f);
				label_end[row] = x + 7 + CHAR_W * (double)strlen(mk->name) + 4;
			}
			fputs("</g>\n", c->f);
		}
		c->y = y0 + rows * ROW_H;
	}
}
