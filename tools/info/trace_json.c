/* SPDX-License-Identifier: MIT */
/*
 * Chrome trace-event format (the JSON object form that chrome://tracing,
 * Perfetto UI and speedscope load):
 *  - one synthetic process per fence driver ("vgem fences"), one thread per
 *    timeline lane; a fence is a complete ("X") event from emit (or init) to
 *    signaled, an enable_signal an instant on it;
 *  - dma_fence_wait() spans on the real (pid, tid) of the waiting thread, with
 *    a flow arrow from the fence's signal to the end of the wait;
 *  - "syncbridge:" markers as instants (or spans) on the writing thread,
 *    with a flow arrow from the fence a marker names (fence=CONTEXT:SEQNO);
 * The extra top-level member "syncbridge" holds the parsed model for scripts
 * (trace_summary.c). Both write with trace_json_util.c's pieces.
 */
#include <string.h>

#include "json_out.h"
#include "trace_json.h"

/* Flow ids of marker arrows, apart from the signal -> wait ones (1..nwaits). */
#define TR_MARKER_FLOW_ID_BASE 0x40000000u

/* Where an event goes: a (pid, tid) track, real or synthetic (the fences'). */
struct where {
	int pid, tid;
};

static int
driver_index(const struct tr_model *m, size_t track)
{
	for (size_t t = 0; t < track; t++)
		if (strcmp(m->tracks[t].driver, m->tracks[track].driver) == 0)
			return driver_index(m, t);
	return (int)track;
}

/* A fence's track: a process per driver, a thread per timeline lane. */
static struct where
on_lane(const struct tr_model *m, int track, int lane)
{
	return (struct where){ TR_FENCE_PID_BASE + driver_index(m, (size_t)track),
			       TR_FENCE_PID_BASE + track * 256 + (lane < 255 ? lane : 255) };
}

static struct where
on_fence(const struct tr_model *m, const struct tr_fence *f)
{
	return on_lane(m, f->track, f->lane);
}

static struct where
on_thread(const struct tr_model *m, int thread)
{
	return (struct where){ tr_json_thread_pid(m, thread), m->threads[thread].tid };
}

/* A trace time (ns) in the format's microseconds. */
static struct json_object *
us_value(int64_t ns)
{
	return info_json_fixed((double)ns / 1000.0, 3);
}

/* ms since the trace's start, for the args of an event. */
static struct json_object *
ms_value(const struct tr_model *m, int64_t ns)
{
	return info_json_fixed((double)(ns - m->begin_ns) / 1e6, 3);
}

/* An event's name, cat and ph; the caller adds what its phase needs, then place(). */
static struct json_object *
event(const char *name, const char *cat, const char *ph)
{
	struct json_object *ev = json_object_new_object();

	json_object_object_add(ev, "name", info_json_str(name));
	json_object_object_add(ev, "cat", json_object_new_string(cat));
	json_object_object_add(ev, "ph", json_object_new_string(ph));
	return ev;
}

/* ts, dur (a span: dur_ns >= 0), pid and tid of an event. */
static struct json_object *
place(struct json_object *ev, int64_t ts_ns, int64_t dur_ns, struct where at)
{
	json_object_object_add(ev, "ts", us_value(ts_ns));
	if (dur_ns >= 0)
		json_object_object_add(ev, "dur", us_value(dur_ns));
	json_object_object_add(ev, "pid", json_object_new_int(at.pid));
	json_object_object_add(ev, "tid", json_object_new_int(at.tid));
	return ev;
}

static struct json_object *
instant(const char *name, const char *cat, int64_t ts_ns, struct where at)
{
	struct json_object *ev = event(name, cat, "i");

	json_object_object_add(ev, "s", json_object_new_string("t"));
	return place(ev, ts_ns, -1, at);
}

/* A flow arrow: its start ("s") and its end ("f", bound to the enclosing slice). */
static void
flow(struct tr_json_list *events, const char *name, const char *cat, uint64_t id, int64_t from_ns,
     struct where from, int64_t to_ns, struct where to)
{
	struct json_object *s = event(name, cat, "s"), *f = event(name, cat, "f");

	json_object_object_add(s, "id", json_object_new_uint64(id));
	tr_json_emit(events, place(s, from_ns, -1, from));
	json_object_object_add(f, "bp", json_object_new_string("e"));
	json_object_object_add(f, "id", json_object_new_uint64(id));
	tr_json_emit(events, place(f, to_ns, -1, to));
}

/* "key=value" words become args; everything else is joined into "text". */
static struct json_object *
marker_args(const char *args)
{
	struct json_object *o = json_object_new_object();
	char text[512] = "";
	const char *p = args;

	while (*p) {
		const char *s, *e, *eq;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		s = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		e = p;
		eq = memchr(s, '=', (size_t)(e - s));
		if (eq && eq > s) {
			char key[64];
			size_t kl = (size_t)(eq - s) < sizeof(key) - 1 ? (size_t)(eq - s)
								       : sizeof(key) - 1;

			memcpy(key, s, kl);
			key[kl] = '\0';
			if (strcmp(key, "text") != 0) {
				/* a key is a JSON string like any other: repaired the same way */
				struct json_object *k = info_json_str(key);
				const char *name = k ? json_object_get_string(k) : "?";

				size_t vl = (size_t)(e - eq - 1);

				json_object_object_add(o, name, info_json_strn(eq + 1, vl));
				json_object_put(k);
				continue;
			}
		}
		if (strlen(text) + (size_t)(e - s) + 2 < sizeof(text)) {
			if (text[0])
				strcat(text, " ");
			strncat(text, s, (size_t)(e - s));
		}
	}
	if (text[0])
		json_object_object_add(o, "text", info_json_str(text));
	return o;
}

/* A metadata event: `what` (process_name, thread_sort_index, ...) with args {key: value}. */
static void
metadata(struct tr_json_list *events, const char *what, int pid, int tid, const char *key,
	 struct json_object *value)
{
	struct json_object *ev = json_object_new_object(), *args = json_object_new_object();

	json_object_object_add(ev, "ph", json_object_new_string("M"));
	json_object_object_add(ev, "name", json_object_new_string(what));
	json_object_object_add(ev, "pid", json_object_new_int(pid));
	if (tid >= 0)
		json_object_object_add(ev, "tid", json_object_new_int(tid));
	json_object_object_add(args, key, value);
	json_object_object_add(ev, "args", args);
	tr_json_emit(events, ev);
}

static void
write_metadata(struct tr_json_list *events, const struct tr_model *m)
{
	char name[TR_NAME_LEN * 2 + 32];

	for (size_t t = 0; t < m->ntracks; t++) {
		const struct tr_track *tr = &m->tracks[t];
		int pid = on_lane(m, (int)t, 0).pid;

		if (driver_index(m, t) == (int)t) {
			snprintf(name, sizeof(name), "%s fences", tr->driver);
			metadata(events, "process_name", pid, -1, "name", info_json_str(name));
			metadata(events, "process_sort_index", pid, -1, "sort_index",
				 json_object_new_int(-100 + (int)t));
		}
		for (int lane = 0; lane < tr->lanes && lane < 256; lane++) {
			int tid = on_lane(m, (int)t, lane).tid;

			if (lane == 0)
				snprintf(name, sizeof(name), "%s / %s", tr->driver, tr->timeline);
			else
				snprintf(name, sizeof(name), "%s / %s (lane %d)", tr->driver,
					 tr->timeline, lane + 1);
			metadata(events, "thread_name", pid, tid, "name", info_json_str(name));
			metadata(events, "thread_sort_index", pid, tid, "sort_index",
				 json_object_new_int((int)t * 256 + lane));
		}
	}
	for (size_t i = 0; i < m->nthreads; i++) {
		struct where at = on_thread(m, (int)i);

		metadata(events, "thread_name", at.pid, at.tid, "name",
			 info_json_str(m->threads[i].comm));
		if (at.tid == at.pid)
			metadata(events, "process_name", at.pid, -1, "name",
				 info_json_str(m->threads[i].comm));
	}
}

static struct json_object *
fence_args(const struct tr_model *m, const struct tr_fence *f)
{
	struct json_object *a = json_object_new_object();

	tr_json_fence_id(a, f);
	json_object_object_add(a, "signaled", json_object_new_boolean(f->signaled_ns != TR_NONE));
	if (f->init_ns != TR_NONE)
		json_object_object_add(a, "init_ms", ms_value(m, f->init_ns));
	else
		json_object_object_add(a, "init", json_object_new_string("before the trace"));
	if (f->emit_ns != TR_NONE)
		json_object_object_add(a, "emit_ms", ms_value(m, f->emit_ns));
	if (f->enable_ns != TR_NONE)
		json_object_object_add(a, "enable_signal_ms", ms_value(m, f->enable_ns));
	if (f->signaled_ns != TR_NONE)
		json_object_object_add(a, "signaled_ms", ms_value(m, f->signaled_ns));
	if (f->init_thread >= 0)
		json_object_object_add(a, "created_by", tr_json_thread(m, f->init_thread));
	if (f->signal_thread >= 0)
		json_object_object_add(a, "signalled_from", tr_json_thread(m, f->signal_thread));
	if (f->destroy_thread >= 0)
		json_object_object_add(a, "released_by", tr_json_thread(m, f->destroy_thread));
	return a;
}

static void
write_fence_events(struct tr_json_list *events, const struct tr_model *m)
{
	char name[96];

	for (size_t i = 0; i < m->nfences; i++) {
		const struct tr_fence *f = &m->fences[i];
		struct json_object *ev;
		int64_t start, end;

		if (f->hidden || f->from_marker)
			continue;
		start = tr_fence_start(m, f);
		end = tr_fence_end(m, f);
		snprintf(name, sizeof(name), "fence %llu:%llu%s", (unsigned long long)f->context,
			 (unsigned long long)f->seqno,
			 f->signaled_ns == TR_NONE ? " (not signalled)" : "");
		ev = place(event(name, "dma_fence", "X"), start, end - start, on_fence(m, f));
		json_object_object_add(ev, "args", fence_args(m, f));
		tr_json_emit(events, ev);
		if (f->enable_ns != TR_NONE)
			tr_json_emit(events, instant("enable_signal", "dma_fence", f->enable_ns,
							      on_fence(m, f)));
	}
}

static void
write_wait_events(struct tr_json_list *events, const struct tr_model *m)
{
	char name[96];

	for (size_t i = 0; i < m->nwaits; i++) {
		const struct tr_wait *wt = &m->waits[i];
		const struct tr_fence *f = &m->fences[wt->fence];
		struct json_object *ev, *args = json_object_new_object();

		snprintf(name, sizeof(name), "wait %s %llu:%llu", f->driver,
			 (unsigned long long)f->context, (unsigned long long)f->seqno);
		ev = place(event(name, "dma_fence_wait", "X"), wt->start_ns,
			   wt->end_ns - wt->start_ns, on_thread(m, wt->thread));
		tr_json_fence_id(args, f);
		json_object_object_add(args, "unfinished", json_object_new_boolean(wt->unfinished));
		json_object_object_add(ev, "args", args);
		tr_json_emit(events, ev);

		/* flow: fence signalled -> the wait ends */
		if (f->signaled_ns != TR_NONE && !f->hidden && !wt->unfinished)
			flow(events, "signal", "dma_fence_flow", i + 1, f->signaled_ns,
			     on_fence(m, f), wt->end_ns, on_thread(m, wt->thread));
	}
}

static void
write_block_events(struct tr_json_list *events, const struct tr_model *m)
{
	for (size_t i = 0; i < m->nblocks; i++) {
		const struct tr_block *b = &m->blocks[i];
		struct json_object *ev, *args = json_object_new_object();

		ev = place(event(b->name, "syscall", "X"), b->start_ns, b->end_ns - b->start_ns,
			   on_thread(m, b->thread));
		if (b->unfinished)
			json_object_object_add(args, "unfinished", json_object_new_boolean(true));
		else
			json_object_object_add(args, "ret", json_object_new_int64(b->ret));
		json_object_object_add(ev, "args", args);
		tr_json_emit(events, ev);
	}
}

static void
write_marker_events(struct tr_json_list *events, const struct tr_model *m)
{
	for (size_t i = 0; i < m->nmarkers; i++) {
		const struct tr_marker *mk = &m->markers[i];
		struct where at = on_thread(m, mk->thread);
		struct json_object *ev;

		if (mk->span)
			ev = place(event(mk->name, "syncbridge", "X"), mk->ts_ns,
				   mk->end_ns - mk->ts_ns, at);
		else
			ev = instant(mk->name, "syncbridge", mk->ts_ns, at);
		json_object_object_add(ev, "args", marker_args(mk->args));
		tr_json_emit(events, ev);

		/*
		 * flow: the fence the marker names -> the marker. It starts on the
		 * fence's bar, at the marker's time when the bar covers it.
		 */
		if (mk->fence >= 0 && !m->fences[mk->fence].hidden &&
		    !m->fences[mk->fence].from_marker) {
			const struct tr_fence *f = &m->fences[mk->fence];
			int64_t s = tr_fence_start(m, f), e = tr_fence_end(m, f);
			int64_t from = mk->ts_ns < s ? s : mk->ts_ns > e ? e : mk->ts_ns;

			flow(events, "marker fence", "syncbridge_flow", TR_MARKER_FLOW_ID_BASE + i,
			     from, on_fence(m, f), mk->ts_ns, at);
		}
	}
}

int
tr_write_chrome_json(const struct tr_model *m, const struct tr_meta *meta, FILE *f)
{
	struct json_object *other = json_object_new_object();
	struct tr_json_list events;
	char cmd[512];

	json_object_object_add(other, "generator", json_object_new_string("syncbridge-info trace"));
	json_object_object_add(other, "version", info_json_str(meta->tool_version));
	json_object_object_add(other, "command",
			       meta->argv ? info_json_str(tr_meta_command(meta, cmd, sizeof(cmd)))
					  : NULL);
	json_object_object_add(other, "clock", info_json_str(meta->clock));

	/* {"displayTimeUnit":"ms","otherData":{...},"traceEvents":[...],"syncbridge":{...}} */
	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":", f);
	info_json_emit(f, other);
	events = tr_json_list_open(f, ",", "traceEvents");
	write_metadata(&events, m);
	write_fence_events(&events, m);
	write_wait_events(&events, m);
	write_block_events(&events, m);
	write_marker_events(&events, m);
	tr_json_list_close(&events);
	fputs(",\"syncbridge\":", f);
	tr_json_write_summary(f, m, meta);
	fputs("}\n", f);
	return ferror(f) ? -1 : 0;
}

const char *
tr_meta_command(const struct tr_meta *meta, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	if (!meta->argv)
		return buf;
	for (const char *const *a = meta->argv; *a && used + 1 < len; a++) {
		bool quote = strpbrk(*a, " \t'\"$\\") != NULL || !**a;
		int n = snprintf(buf + used, len - used, "%s%s%s%s", used ? " " : "",
				 quote ? "'" : "", *a, quote ? "'" : "");

		if (n < 0)
			break;
		used += (size_t)n;
		if (used >= len) {
			used = len - 1;
			break;
		}
	}
	return buf;
}
