/* SPDX-License-Identifier: MIT */
/*
 * What the parts of the trace model share, bottom up: trace_store.c (storage),
 * trace_markers.c, trace_model.c (feeding lines), trace_layout.c.
 */
#ifndef INFO_TRACE_MODEL_INTERNAL_H
#define INFO_TRACE_MODEL_INTERNAL_H

#include "trace_model.h"

/* Make room for one more element of size `size` in *arr (n used of *cap); false: out of memory. */
bool tr_model_grow(struct tr_model *m, void **arr, size_t n, size_t *cap, size_t size);

/* The index of the thread of line l, added if new; -1 when out of memory. */
int tr_model_thread(struct tr_model *m, const struct tr_line *l);

/* The index of the fence (context, seqno) seen last, or -1. */
int tr_model_fence_find(const struct tr_model *m, uint64_t context, uint64_t seqno);
/* Give fence idx the number seqno (a fence numbered at emit); re-keys the look-up. */
void tr_model_fence_renumber(struct tr_model *m, size_t idx, uint64_t seqno);
/* A new fence (no time seen yet); its index, or -1 when out of memory. */
int tr_model_fence_new(struct tr_model *m, const char *driver, const char *timeline,
		       uint64_t context, uint64_t seqno);

/* A "syncbridge:" trace_marker line (trace_markers.c). */
void tr_model_marker_event(struct tr_model *m, const struct tr_line *l);
/*
 * The fence a marker's "fence=CONTEXT:SEQNO" word names, added from its
 * driver= and timeline= words when the trace has no event of it; -1 if none.
 */
int tr_model_marker_fence(struct tr_model *m, const char *args);

#endif
