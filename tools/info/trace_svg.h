/* SPDX-License-Identifier: MIT */
/*
 * The parts of the SVG timeline (trace_output.h): trace_svg.c writes the
 * document (window, title, sections, axis, legend), trace_svg_rows.c the rows
 * and what is drawn on them.
 */
#ifndef INFO_TRACE_SVG_H
#define INFO_TRACE_SVG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "trace_output.h"

#define SVG_W 1200
#define LABEL_W 240
#define RIGHT_PAD 30
#define PLOT_W (SVG_W - LABEL_W - RIGHT_PAD)
#define ROW_H 22
#define BAR_H 14
#define SECTION_H 24
#define TOP 96
#define CHAR_W 6.6 /* average glyph width at font-size 11, for fitting labels */
#define BLOCK_COLOR "#f1a340"
#define WAIT_COLOR "#e15759"
#define MARK_COLOR "#8a6bbe"

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

/* The colour of a fence track (track 0: the legend's). */
const char *svg_track_color(int track);

/* s as XML character data: markup escaped, control characters blanked, invalid UTF-8 replaced. */
void svg_xml_text(FILE *f, const char *s);

/* A section's title (and a note beside it) at c->y; moves c->y past it. */
void svg_section(struct svg_ctx *c, const char *title, const char *note);

/* The rows of each section (fence lanes, threads that waited, marker rows); returns their sum. */
int svg_count_rows(const struct tr_model *m, int *fence_rows, int *wait_rows, int *marker_rows);

/* The rows of each section, from c->y on; c->fence_y is filled by svg_draw_fences(). */
void svg_draw_fences(struct svg_ctx *c);
void svg_draw_waits(struct svg_ctx *c);
/* A dashed line from each fence's signal down to y_end, through the waits. */
void svg_draw_signal_lines(struct svg_ctx *c, double y_end);
void svg_draw_markers(struct svg_ctx *c);

#endif
