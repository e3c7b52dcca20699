/* SPDX-License-Identifier: MIT */
/* Writers for a finished tr_model: Chrome/Perfetto trace JSON and an SVG timeline. */
#ifndef INFO_TRACE_OUTPUT_H
#define INFO_TRACE_OUTPUT_H

#include <stdio.h>

#include "trace_model.h"

struct tr_meta {
	const char *tool_version;
	const char *const *argv; /* the traced command, NULL-terminated; NULL for --input */
	const char *input;       /* the text file read with --input, else NULL */
	int exit_status;         /* the command's exit status, -1 if none/unknown */
	const char *clock;       /* tracefs trace_clock used ("mono", ...) */
	bool svg_markers_window; /* SVG: show only the markers' time (--svg-window markers) */
};

/*
 * Synthetic process ids for the fence tracks, above any real pid (pid_max
 * is at most 2^22), so Perfetto never merges them with real threads.
 */
#define TR_FENCE_PID_BASE 0x40000000

/* Chrome trace-event JSON (object form) plus a "syncbridge" summary member. */
int tr_write_chrome_json(const struct tr_model *m, const struct tr_meta *meta, FILE *f);

/* A standalone SVG: one row per timeline lane, waits and markers per thread, axis in ms. */
int tr_write_svg(const struct tr_model *m, const struct tr_meta *meta, FILE *f);

/* The command line as one string ("a b 'c d'"), into buf. */
const char *tr_meta_command(const struct tr_meta *meta, char *buf, size_t len);

#endif
