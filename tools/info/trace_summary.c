/* SPDX-License-Identifier: MIT */
/*
 * The "syncbridge" member of the trace JSON (trace_json.c writes the rest):
 * the parsed model for scripts, one list each of tracks, fences, waits,
 * blocking syscalls and markers, as the model holds them.
 */
#include <string.h>

#include "json_out.h"
#include "trace_json.h"

/* pid, tid and comm of a thread into o. */
static void
thread_id(struct json_object *o, const struct tr_model *m, int thread)
{
	json_object_object_add(o, "pid", json_object_new_int(tr_json_thread_pid(m, thread)));
	json_object_object_add(o, "tid", json_object_new_int(m->threads[thread].tid));
	json_object_object_add(o, "comm", info_json_str(m->threads[thread].comm));
}

/*
 * A summary object for what a thread did from start to end: `what` (the
 * fence it waited for, the syscall) first, then the thread and the times.
 */
static struct json_object *
thread_span(const struct tr_model *m, const char *key, struct json_object *what, int thread,
	    int64_t start_ns, int64_t end_ns)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, key, what);
	thread_id(o, m, thread);
	json_object_object_add(o, "start_ns", json_object_new_int64(start_ns));
	json_object_object_add(o, "end_ns", json_object_new_int64(end_ns));
	return o;
}

static struct json_object *
summary_fence(const struct tr_model *m, size_t i)
{
	const struct tr_fence *f = &m->fences[i];
	struct json_object *o = json_object_new_object();
	bool placed = f->track >= 0;

	tr_json_fence_id(o, f);
	json_object_object_add(o, "track", placed ? json_object_new_int(f->track) : NULL);
	json_object_object_add(o, "lane", placed ? json_object_new_int(f->lane) : NULL);
	/* created while tracing: its whole life should be in the trace */
	json_object_object_add(o, "born_in_trace", json_object_new_boolean(f->init_ns != TR_NONE ||
									   f->emit_ns != TR_NONE));
	json_object_object_add(o, "signaled", json_object_new_boolean(f->signaled_ns != TR_NONE));
	json_object_object_add(o, "from_marker", json_object_new_boolean(f->from_marker));
	json_object_object_add(o, "init_ns", tr_json_ns(f->init_ns));
	json_object_object_add(o, "emit_ns", tr_json_ns(f->emit_ns));
	json_object_object_add(o, "enable_signal_ns", tr_json_ns(f->enable_ns));
	json_object_object_add(o, "signaled_ns", tr_json_ns(f->signaled_ns));
	json_object_object_add(o, "destroy_ns", tr_json_ns(f->destroy_ns));
	json_object_object_add(o, "created_by", tr_json_thread(m, f->init_thread));
	json_object_object_add(o, "signalled_from", tr_json_thread(m, f->signal_thread));
	json_object_object_add(o, "released_by", tr_json_thread(m, f->destroy_thread));
	return o;
}

static struct json_object *
summary_wait(const struct tr_model *m, size_t i)
{
	const struct tr_wait *wt = &m->waits[i];
	struct json_object *o = thread_span(m, "fence", json_object_new_int(wt->fence), wt->thread,
					    wt->start_ns, wt->end_ns);

	json_object_object_add(o, "unfinished", json_object_new_boolean(wt->unfinished));
	return o;
}

static struct json_object *
summary_block(const struct tr_model *m, size_t i)
{
	const struct tr_block *b = &m->blocks[i];
	struct json_object *o = thread_span(m, "name", info_json_str(b->name), b->thread,
					    b->start_ns, b->end_ns);

	json_object_object_add(o, "ret", b->unfinished ? NULL : json_object_new_int64(b->ret));
	json_object_object_add(o, "unfinished", json_object_new_boolean(b->unfinished));
	return o;
}

static struct json_object *
summary_marker(const struct tr_model *m, size_t i)
{
	const struct tr_marker *mk = &m->markers[i];
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", info_json_str(mk->name));
	json_object_object_add(o, "args", info_json_str(mk->args));
	json_object_object_add(o, "span", json_object_new_boolean(mk->span));
	json_object_object_add(o, "ts_ns", json_object_new_int64(mk->ts_ns));
	json_object_object_add(o, "end_ns", tr_json_ns(mk->span ? mk->end_ns : TR_NONE));
	json_object_object_add(o, "depth", json_object_new_int(mk->depth));
	json_object_object_add(o, "fence", mk->fence >= 0 ? json_object_new_int(mk->fence) : NULL);
	thread_id(o, m, mk->thread);
	return o;
}

static struct json_object *
summary_track(const struct tr_model *m, size_t i)
{
	const struct tr_track *tr = &m->tracks[i];
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "driver", info_json_str(tr->driver));
	json_object_object_add(o, "timeline", info_json_str(tr->timeline));
	json_object_object_add(o, "lanes", json_object_new_int(tr->lanes));
	json_object_object_add(o, "fences", json_object_new_uint64(tr->nfences));
	return o;
}

/* `,"key":[one(m, i) for each i below n]` */
static void
summary_list(FILE *f, const char *key, const struct tr_model *m, size_t n,
	     struct json_object *(*one)(const struct tr_model *m, size_t i))
{
	struct tr_json_list l = tr_json_list_open(f, ",", key);

	for (size_t i = 0; i < n; i++)
		tr_json_emit(&l, one(m, i));
	tr_json_list_close(&l);
}

void
tr_json_write_summary(FILE *f, const struct tr_model *m, const struct tr_meta *meta)
{
	struct json_object *s = json_object_new_object(), *a;
	const char *text;

	json_object_object_add(s, "format", json_object_new_string("syncbridge-info-trace"));
	json_object_object_add(s, "format_version", json_object_new_int(1));
	json_object_object_add(s, "tool_version", info_json_str(meta->tool_version));
	a = meta->argv ? json_object_new_array() : NULL;
	for (const char *const *arg = meta->argv; arg && *arg; arg++)
		json_object_array_add(a, info_json_str(*arg));
	json_object_object_add(s, "command", a);
	json_object_object_add(s, "input", info_json_str(meta->input));
	json_object_object_add(s, "exit_status",
			       meta->exit_status >= 0 ? json_object_new_int(meta->exit_status)
						      : NULL);
	json_object_object_add(s, "clock", info_json_str(meta->clock));
	json_object_object_add(s, "begin_ns", json_object_new_int64(m->begin_ns));
	json_object_object_add(s, "end_ns", json_object_new_int64(m->end_ns));
	json_object_object_add(s, "events", json_object_new_uint64(m->events));
	json_object_object_add(s, "fence_events", json_object_new_uint64(m->fence_events));
	json_object_object_add(s, "malformed_lines", json_object_new_uint64(m->malformed));
	json_object_object_add(s, "lost_events", json_object_new_int64(tr_model_lost_events(m)));

	/* those members, then the lists in place of the object's closing brace */
	text = json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN |
							 JSON_C_TO_STRING_NOSLASHESCAPE);
	if (text)
		fwrite(text, 1, strlen(text) - 1, f);
	json_object_put(s);
	summary_list(f, "tracks", m, m->ntracks, summary_track);
	summary_list(f, "fences", m, m->nfences, summary_fence);
	summary_list(f, "waits", m, m->nwaits, summary_wait);
	summary_list(f, "blocking_syscalls", m, m->nblocks, summary_block);
	summary_list(f, "markers", m, m->nmarkers, summary_marker);
	fputc('}', f);
}
