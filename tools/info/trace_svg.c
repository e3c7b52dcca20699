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

#include "trace_svg.h"

#define TITLE_CHARS 100 /* of the command, after "syncbridge-info trace: " */

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
draw_axis(struct svg_ctx *c, double y_top, double y_bottom)
{
	double range_ms = c->span / 1e6, step = nice_step(range_ms, 10);
	double offset_ms = (c->t0 - c->origin) / 1e6, first = ceil(offset_ms / step - 1e-9) * step;
	int decimals = step >= 1 ? 0 : (int)ceil(-log10(step));

	/* ticks in ms since the trace's start, also when the window starts later */
	for (double t = first; t <= offset_ms + range_ms + step * 1e-6; t += step) {
		double x = LABEL_W + (t - offset_ms) / range_ms * PLOT_W;

		fprintf(c->f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>\n",
			x, y_top, x, y_bottom);
		fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\">%.*f</text>\n", x,
			y_top - 6, decimals, t);
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
		fill = svg_track_color(0), cls = "bar";
		break;
	case SYM_PENDING:
		fill = "url(#pending)", cls = "bar pend";
		break;
	case SYM_WAIT:
		fill = WAIT_COLOR, cls = "bar wait";
		break;
	case SYM_BLOCK:
		fill = BLOCK_COLOR, cls = "bar block";
		break;
	case SYM_SPAN:
		fill = MARK_COLOR, cls = "bar mark";
		break;
	case SYM_ENABLE:
		fprintf(c->f, "<path d=\"M%.1f %.1f l-4 -5 h8 z\" class=\"enable\"/>", *x + 11,
			*y + 9);
		break;
	case SYM_MARKER:
		fprintf(c->f, "<path d=\"M%.1f %.1f l5 5 l-5 5 l-5 -5 z\" class=\"mk\"/>", *x + 11,
			*y + 1);
		break;
	case SYM_TIE:
		fprintf(c->f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"tie\" "
			"stroke=\"%s\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\" "
			"class=\"tiedot\" fill=\"%s\"/>",
			*x + 11, *y + 12, *x + 11, *y, svg_track_color(0), *x + 11, *y,
			svg_track_color(0));
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
	legend_item(c, &x, &y, SYM_PENDING, "not signalled (by the end or its release)");
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

/*
 * The window shown: the whole trace, or with --svg-window markers from the
 * first marker to the last one's end, plus 2% on each side; at least 1 ms,
 * so that an empty trace still has an axis.
 */
static void
set_window(struct svg_ctx *c, const struct tr_model *m, const struct tr_meta *meta)
{
	c->t0 = c->origin = (double)m->begin_ns;
	c->span = (double)(m->end_ns - m->begin_ns);
	if (meta->svg_markers_window && m->nmarkers) {
		int64_t first = INT64_MAX, last = INT64_MIN;

		for (size_t i = 0; i < m->nmarkers; i++) {
			const struct tr_marker *mk = &m->markers[i];
			int64_t e = mk->span ? mk->end_ns : mk->ts_ns;

			first = mk->ts_ns < first ? mk->ts_ns : first;
			last = e > last ? e : last;
		}
		double pad = (double)(last - first) * 0.02 + 1e5;
		double end = (double)last + pad < (double)m->end_ns ? (double)last + pad
								     : (double)m->end_ns;

		c->t0 = (double)first - pad > c->origin ? (double)first - pad : c->origin;
		c->span = end - c->t0;
		c->cropped = true;
	}
	if (c->span < 1e6)
		c->span = 1e6;
}

/* The document's start: its size, the hatching pattern, the styles, a white page. */
static void
write_head(FILE *f, double height)
{
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
		"viewBox=\"0 0 %d %.0f\" font-family=\"DejaVu Sans, Verdana, Arial, "
		"sans-serif\">\n",
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
	      ".tie{stroke-width:1;stroke-dasharray:1 2;opacity:0.7}"
	      ".tiedot{stroke:#333;stroke-width:0.5}\n"
	      "</style>\n</defs>\n",
	      f);
	fprintf(f, "<rect width=\"%d\" height=\"%.0f\" fill=\"#ffffff\"/>\n", SVG_W, height);
}

/* The title (the command, cut at TITLE_CHARS), the summary and the window's note. */
static void
write_title(FILE *f, const struct svg_ctx *c, const struct tr_meta *meta)
{
	const struct tr_model *m = c->m;
	char cmd[512], summary[512];
	size_t signalled = 0, shown = 0;

	for (size_t i = 0; i < m->nfences; i++) {
		if (m->fences[i].hidden || m->fences[i].from_marker)
			continue;
		shown++;
		signalled += m->fences[i].signaled_ns != TR_NONE;
	}
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
		svg_xml_text(f, cmd);
	} else {
		fputs("syncbridge-info trace of ", f);
		svg_xml_text(f, meta->input ? meta->input : "?");
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
	svg_xml_text(f, summary);
	if (meta->exit_status >= 0)
		fprintf(f, "%d", meta->exit_status);
	fputs("</text>\n", f);
	if (c->cropped)
		fprintf(f,
			"<text x=\"10\" y=\"60\" class=\"note\">shown: %.1f to %.1f ms, from the "
			"first marker to the last (--svg-window markers); what lies outside is "
			"left out</text>\n",
			(c->t0 - c->origin) / 1e6, (c->t0 + c->span - c->origin) / 1e6);
}

/* The three sections, each with a note instead of its rows when it has none, and the legend. */
static void
draw_sections(struct svg_ctx *c, int fence_rows, int wait_rows, int marker_rows,
	      double y_rows_end)
{
	c->y = TOP;
	svg_section(c, "Fences (driver / timeline)", fence_rows ? NULL : "no dma_fence events");
	if (!fence_rows)
		c->y += ROW_H;
	svg_draw_fences(c);
	svg_section(c, "Waits (per thread)",
		    wait_rows ? NULL : "no thread blocked in dma_fence_wait() or, for 0.1 ms "
				       "or more, in poll()");
	if (!wait_rows)
		c->y += ROW_H;
	svg_draw_waits(c);
	if (wait_rows)
		svg_draw_signal_lines(c, c->y);
	svg_section(c, "Markers (syncbridge:)", marker_rows ? NULL : "none");
	if (!marker_rows)
		c->y += ROW_H;
	svg_draw_markers(c);
	legend(c, y_rows_end + 30);
}

int
tr_write_svg(const struct tr_model *m, const struct tr_meta *meta, FILE *f)
{
	struct svg_ctx c = { .m = m };
	int fence_rows, wait_rows, marker_rows, ret = 0;
	double height, y_rows_end;
	char *fg_buf = NULL, *bg_buf = NULL;
	size_t fg_len = 0, bg_len = 0;

	svg_count_rows(m, &fence_rows, &wait_rows, &marker_rows);
	y_rows_end = TOP + SECTION_H * 3 +
		     ROW_H * ((fence_rows ? fence_rows : 1) + (wait_rows ? wait_rows : 1) +
			      (marker_rows ? marker_rows : 1)) +
		     4;
	height = y_rows_end + 84; /* axis labels and up to two legend lines */
	set_window(&c, m, meta);
	write_head(f, height);
	write_title(f, &c, meta);

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
	draw_sections(&c, fence_rows, wait_rows, marker_rows, y_rows_end);
	fclose(c.f);
	fclose(c.bg);
	free(c.fence_y);
	c.fence_y = NULL;

	if (copy_stream(f, bg_buf, bg_len) < 0)
		ret = -1;
	c.f = f;
	draw_axis(&c, TOP - 8, y_rows_end);
	if (copy_stream(f, fg_buf, fg_len) < 0)
		ret = -1;
	free(fg_buf);
	free(bg_buf);
	fputs("</svg>\n", f);
	return ret || ferror(f) ? -1 : 0;
}
