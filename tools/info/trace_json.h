/* SPDX-License-Identifier: MIT */
/*
 * What the two halves of the trace JSON share: trace_json.c writes the
 * trace events, trace_summary.c the "syncbridge" member.
 */
#ifndef INFO_TRACE_JSON_H
#define INFO_TRACE_JSON_H

#include "trace_output.h"

#include <json-c/json.h>

/*
 * A JSON array written an element at a time: a trace has up to hundreds of
 * thousands of events, fences and markers, and as json-c objects they would
 * all together take ~15 times the memory of their text.
 */
struct tr_json_list {
	FILE *f;
	size_t n;
};

/* Writes `"key":[` after `sep` ("," or ""); then tr_json_emit() each element. */
struct tr_json_list tr_json_list_open(FILE *f, const char *sep, const char *key);
/* Writes o as the list's next element, and frees it. */
void tr_json_emit(struct tr_json_list *l, struct json_object *o);
void tr_json_list_close(struct tr_json_list *l);

/* A time in ns, null for TR_NONE. */
struct json_object *tr_json_ns(int64_t ns);
/* "comm[tid]" of a thread, null for none (-1). */
struct json_object *tr_json_thread(const struct tr_model *m, int thread);
/* The pid a thread's events go on: its tgid when the trace had it, else its tid. */
int tr_json_thread_pid(const struct tr_model *m, int thread);
/* driver, timeline, context and seqno of a fence into o. */
void tr_json_fence_id(struct json_object *o, const struct tr_fence *f);

/* The "syncbridge" member: the parsed model, for scripts. */
void tr_json_write_summary(FILE *f, const struct tr_model *m, const struct tr_meta *meta);

#endif
