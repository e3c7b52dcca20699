/* SPDX-License-Identifier: MIT */
/*
 * The pieces both halves of the trace JSON write with (trace_json.h): a
 * list written an element at a time, times, threads and fence ids as JSON.
 * Below trace_json.c (the events) and trace_summary.c (the "syncbridge"
 * member), which calls nothing of trace_json.c.
 */
#include "json_out.h"
#include "trace_json.h"

/* `"key":[` (after `sep`, "," or "") */
struct tr_json_list
tr_json_list_open(FILE *f, const char *sep, const char *key)
{
	fprintf(f, "%s\"%s\":[", sep, key);
	return (struct tr_json_list){ .f = f };
}

void
tr_json_emit(struct tr_json_list *l, struct json_object *o)
{
	if (l->n++)
		fputc(',', l->f);
	info_json_emit(l->f, o);
}

void
tr_json_list_close(struct tr_json_list *l)
{
	fputc(']', l->f);
}

struct json_object *
tr_json_ns(int64_t ns)
{
	return ns == TR_NONE ? NULL : json_object_new_int64(ns);
}

struct json_object *
tr_json_thread(const struct tr_model *m, int thread)
{
	char label[64];

	return thread >= 0 ? info_json_str(tr_thread_label(m, thread, label, sizeof(label))) : NULL;
}

int
tr_json_thread_pid(const struct tr_model *m, int thread)
{
	const struct tr_thread *t = &m->threads[thread];

	return t->tgid > 0 ? t->tgid : t->tid;
}

void
tr_json_fence_id(struct json_object *o, const struct tr_fence *f)
{
	json_object_object_add(o, "driver", info_json_str(f->driver));
	json_object_object_add(o, "timeline", info_json_str(f->timeline));
	json_object_object_add(o, "context", json_object_new_uint64(f->context));
	json_object_object_add(o, "seqno", json_object_new_uint64(f->seqno));
}
