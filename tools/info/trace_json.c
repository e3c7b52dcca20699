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
 * The extra top-level member "syncbridge" holds the parsed model for scripts.
 */
#include <string.h>

#include "json.h"
#include "trace_output.h"

/* Flow ids of marker arrows, apart from the signal -> wait ones (1..nwaits). */
#define TR_MARKER_FLOW_ID_BASE 0x40000000u

static double
us(int64_t ns)
{
	return (double)ns / 1000.0;
}

static void
ns_or_null(struct json_writer *w, const char *key, int64_t ns)
{
	if (ns == TR_NONE)
		json_null(w, key);
	else
		json_int(w, key, ns);
}

static int
thread_pid(const struct tr_model *m, int thread)
{
	const struct tr_thread *t = &m->threads[thread];

	return t->tgid > 0 ? t->tgid : t->tid;
}

static int
driver_index(const struct tr_model *m, size_t track)
{
	for (size_t t = 0; t < track; t++)
		if (strcmp(m->tracks[t].driver, m->tracks[track].driver) == 0)
			return driver_index(m, t);
	return (int)track;
}

static int
fence_pid(const struct tr_model *m, const struct tr_fence *f)
{
	return TR_FENCE_PID_BASE + driver_index(m, (size_t)f->track);
}

static int
fence_tid(const struct tr_fence *f)
{
	return TR_FENCE_PID_BASE + f->track * 256 + (f->lane < 255 ? f->lane : 255);
}

/* "key=value" words become args; everything else is joined into "text". */
static void
marker_args(struct json_writer *w, const char *args)
{
	char text[512] = "";
	const char *p = args;

	json_object_begin(w, "args");
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
			size_t kl = (size_t)(eq - s) < sizeof(key) - 1 ? (size_t)(eq - s) : sizeof(key) - 1;

			memcpy(key, s, kl);
			key[kl] = '\0';
			if (strcmp(key, "text") != 0) {
				json_string_n(w, key, eq + 1, (size_t)(e - eq - 1));
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
		json_string(w, "text", text);
	json_object_end(w);
}

static void
metadata(struct json_writer *w, const char *what, int pid, int tid, const char *name)
{
	json_object_begin(w, NULL);
	json_string(w, "ph", "M");
	json_string(w, "name", what);
	json_int(w, "pid", pid);
	if (tid >= 0)
		json_int(w, "tid", tid);
	json_object_begin(w, "args");
	json_string(w, "name", name);
	json_object_end(w);
	json_object_end(w);
}

static void
sort_index(struct json_writer *w, const char *what, int pid, int tid, int index)
{
	json_object_begin(w, NULL);
	json_string(w, "ph", "M");
	json_string(w, "name", what);
	json_int(w, "pid", pid);
	if (tid >= 0)
		json_int(w, "tid", tid);
	json_object_begin(w, "args");
	json_int(w, "sort_index", index);
	json_object_end(w);
	json_object_end(w);
}

static void
write_metadata(struct json_writer *w, const struct tr_model *m)
{
	char name[TR_NAME_LEN * 2 + 32];

	for (size_t t = 0; t < m->ntracks; t++) {
		const struct tr_track *tr = &m->tracks[t];
		int pid = TR_FENCE_PID_BASE + driver_index(m, t);

		if (driver_index(m, t) == (int)t) {
			snprintf(name, sizeof(name), "%s fences", tr->driver);
			metadata(w, "process_name", pid, -1, name);
			sort_index(w, "process_sort_index", pid, -1, -100 + (int)t);
		}
		for (int lane = 0; lane < tr->lanes && lane < 256; lane++) {
			struct tr_fence f = { .track = (int)t, .lane = lane };
			int tid = fence_tid(&f);

			if (lane == 0)
				snprintf(name, sizeof(name), "%s / %s", tr->driver, tr->timeline);
			else
				snprintf(name, sizeof(name), "%s / %s (lane %d)", tr->driver, tr->timeline,
					 lane + 1);
			metadata(w, "thread_name", pid, tid, name);
			sort_index(w, "thread_sort_index", pid, tid, (int)t * 256 + lane);
		}
	}
	for (size_t i = 0; i < m->nthreads; i++) {
		const struct tr_thread *t = &m->threads[i];
		int pid = thread_pid(m, (int)i);

		metadata(w, "thread_name", pid, t->tid, t->comm);
		if (t->tid == pid)
			metadata(w, "process_name", pid, -1, t->comm);
	}
}

static void
write_fence_events(struct json_writer *w, const struct tr_model *m)
{
	char name[96], label[64];

	for (size_t i = 0; i < m->nfences; i++) {
		const struct tr_fence *f = &m->fences[i];
		int64_t start, end;

		if (f->hidden || f->from_marker)
			continue;
		start = tr_fence_start(m, f);
		end = tr_fence_end(m, f);
		snprintf(name, sizeof(name), "fence %llu:%llu%s", (unsigned long long)f->context,
			 (unsigned long long)f->seqno,
			 f->signaled_ns == TR_NONE ? " (not signalled)" : "");
		json_object_begin(w, NULL);
		json_string(w, "name", name);
		json_string(w, "cat", "dma_fence");
		json_string(w, "ph", "X");
		json_double(w, "ts", us(start), 3);
		json_double(w, "dur", us(end - start), 3);
		json_int(w, "pid", fence_pid(m, f));
		json_int(w, "tid", fence_tid(f));
		json_object_begin(w, "args");
		json_string(w, "driver", f->driver);
		json_string(w, "timeline", f->timeline);
		json_uint(w, "context", f->context);
		json_uint(w, "seqno", f->seqno);
		json_bool(w, "signaled", f->signaled_ns != TR_NONE);
		if (f->init_ns != TR_NONE)
			json_double(w, "init_ms", (double)(f->init_ns - m->begin_ns) / 1e6, 3);
		else
			json_string(w, "init", "before the trace");
		if (f->emit_ns != TR_NONE)
			json_double(w, "emit_ms", (double)(f->emit_ns - m->begin_ns) / 1e6, 3);
		if (f->enable_ns != TR_NONE)
			json_double(w, "enable_signal_ms", (double)(f->enable_ns - m->begin_ns) / 1e6, 3);
		if (f->signaled_ns != TR_NONE)
			json_double(w, "signaled_ms", (double)(f->signaled_ns - m->begin_ns) / 1e6, 3);
		if (f->init_thread >= 0)
			json_string(w, "created_by", tr_thread_label(m, f->init_thread, label, sizeof(label)));
		if (f->signal_thread >= 0)
			json_string(w, "signalled_from",
				    tr_thread_label(m, f->signal_thread, label, sizeof(label)));
		if (f->destroy_thread >= 0)
			json_string(w, "released_by",
				    tr_thread_label(m, f->destroy_thread, label, sizeof(label)));
		json_object_end(w);
		json_object_end(w);

		if (f->enable_ns != TR_NONE) {
			json_object_begin(w, NULL);
			json_string(w, "name", "enable_signal");
			json_string(w, "cat", "dma_fence");
			json_string(w, "ph", "i");
			json_string(w, "s", "t");
			json_double(w, "ts", us(f->enable_ns), 3);
			json_int(w, "pid", fence_pid(m, f));
			json_int(w, "tid", fence_tid(f));
			json_object_end(w);
		}
	}
}

static void
write_wait_events(struct json_writer *w, const struct tr_model *m)
{
	char name[96];

	for (size_t i = 0; i < m->nwaits; i++) {
		const struct tr_wait *wt = &m->waits[i];
		const struct tr_fence *f = &m->fences[wt->fence];
		int pid = thread_pid(m, wt->thread), tid = m->threads[wt->thread].tid;

		snprintf(name, sizeof(name), "wait %s %llu:%llu", f->driver,
			 (unsigned long long)f->context, (unsigned long long)f->seqno);
		json_object_begin(w, NULL);
		json_string(w, "name", name);
		json_string(w, "cat", "dma_fence_wait");
		json_string(w, "ph", "X");
		json_double(w, "ts", us(wt->start_ns), 3);
		json_double(w, "dur", us(wt->end_ns - wt->start_ns), 3);
		json_int(w, "pid", pid);
		json_int(w, "tid", tid);
		json_object_begin(w, "args");
		json_string(w, "driver", f->driver);
		json_string(w, "timeline", f->timeline);
		json_uint(w, "context", f->context);
		json_uint(w, "seqno", f->seqno);
		json_bool(w, "unfinished", wt->unfinished);
		json_object_end(w);
		json_object_end(w);

		/* flow: fence signalled -> the wait ends */
		if (f->signaled_ns != TR_NONE && !f->hidden && !wt->unfinished) {
			json_object_begin(w, NULL);
			json_string(w, "name", "signal");
			json_string(w, "cat", "dma_fence_flow");
			json_string(w, "ph", "s");
			json_uint(w, "id", i + 1);
			json_double(w, "ts", us(f->signaled_ns), 3);
			json_int(w, "pid", fence_pid(m, f));
			json_int(w, "tid", fence_tid(f));
			json_object_end(w);
			json_object_begin(w, NULL);
			json_string(w, "name", "signal");
			json_string(w, "cat", "dma_fence_flow");
			json_string(w, "ph", "f");
			json_string(w, "bp", "e");
			json_uint(w, "id", i + 1);
			json_double(w, "ts", us(wt->end_ns), 3);
			json_int(w, "pid", pid);
			json_int(w, "tid", tid);
			json_object_end(w);
		}
	}
}

static void
write_block_events(struct json_writer *w, const struct tr_model *m)
{
	for (size_t i = 0; i < m->nblocks; i++) {
		const struct tr_block *b = &m->blocks[i];

		json_object_begin(w, NULL);
		json_string(w, "name", b->name);
		json_string(w, "cat", "syscall");
		json_string(w, "ph", "X");
		json_double(w, "ts", us(b->start_ns), 3);
		json_double(w, "dur", us(b->end_ns - b->start_ns), 3);
		json_int(w, "pid", thread_pid(m, b->thread));
		json_int(w, "tid", m->threads[b->thread].tid);
		json_object_begin(w, "args");
		if (b->unfinished)
			json_bool(w, "unfinished", true);
		else
			json_int(w, "ret", b->ret);
		json_object_end(w);
		json_object_end(w);
	}
}

static void
write_marker_events(struct json_writer *w, const struct tr_model *m)
{
	for (size_t i = 0; i < m->nmarkers; i++) {
		const struct tr_marker *mk = &m->markers[i];

		json_object_begin(w, NULL);
		json_string(w, "name", mk->name);
		json_string(w, "cat", "syncbridge");
		if (mk->span) {
			json_string(w, "ph", "X");
			json_double(w, "ts", us(mk->ts_ns), 3);
			json_double(w, "dur", us(mk->end_ns - mk->ts_ns), 3);
		} else {
			json_string(w, "ph", "i");
			json_string(w, "s", "t");
			json_double(w, "ts", us(mk->ts_ns), 3);
		}
		json_int(w, "pid", thread_pid(m, mk->thread));
		json_int(w, "tid", m->threads[mk->thread].tid);
		marker_args(w, mk->args);
		json_object_end(w);

		/*
		 * flow: the fence the marker names -> the marker. It starts on the
		 * fence's bar, at the marker's time when the bar covers it.
		 */
		if (mk->fence >= 0 && !m->fences[mk->fence].hidden &&
		    !m->fences[mk->fence].from_marker) {
			const struct tr_fence *f = &m->fences[mk->fence];
			int64_t s = tr_fence_start(m, f), e = tr_fence_end(m, f);
			int64_t at = mk->ts_ns < s ? s : mk->ts_ns > e ? e : mk->ts_ns;

			json_object_begin(w, NULL);
			json_string(w, "name", "marker fence");
			json_string(w, "cat", "syncbridge_flow");
			json_string(w, "ph", "s");
			json_uint(w, "id", TR_MARKER_FLOW_ID_BASE + i);
			json_double(w, "ts", us(at), 3);
			json_int(w, "pid", fence_pid(m, f));
			json_int(w, "tid", fence_tid(f));
			json_object_end(w);
			json_object_begin(w, NULL);
			json_string(w, "name", "marker fence");
			json_string(w, "cat", "syncbridge_flow");
			json_string(w, "ph", "f");
			json_string(w, "bp", "e");
			json_uint(w, "id", TR_MARKER_FLOW_ID_BASE + i);
			json_double(w, "ts", us(mk->ts_ns), 3);
			json_int(w, "pid", thread_pid(m, mk->thread));
			json_int(w, "tid", m->threads[mk->thread].tid);
			json_object_end(w);
		}
	}
}

static void
write_summary(struct json_writer *w, const struct tr_model *m, const struct tr_meta *meta)
{
	char label[64];

	json_object_begin(w, "syncbridge");
	json_string(w, "format", "syncbridge-info-trace");
	json_int(w, "format_version", 1);
	json_string(w, "tool_version", meta->tool_version);
	if (meta->argv) {
		json_array_begin(w, "command");
		for (const char *const *a = meta->argv; *a; a++)
			json_string(w, NULL, *a);
		json_array_end(w);
	} else {
		json_null(w, "command");
	}
	json_string(w, "input", meta->input);
	if (meta->exit_status >= 0)
		json_int(w, "exit_status", meta->exit_status);
	else
		json_null(w, "exit_status");
	json_string(w, "clock", meta->clock);
	json_int(w, "begin_ns", m->begin_ns);
	json_int(w, "end_ns", m->end_ns);
	json_uint(w, "events", m->events);
	json_uint(w, "fence_events", m->fence_events);
	json_uint(w, "malformed_lines", m->malformed);
	json_int(w, "lost_events", tr_model_lost_events(m));

	json_array_begin(w, "tracks");
	for (size_t t = 0; t < m->ntracks; t++) {
		json_object_begin(w, NULL);
		json_string(w, "driver", m->tracks[t].driver);
		json_string(w, "timeline", m->tracks[t].timeline);
		json_int(w, "lanes", m->tracks[t].lanes);
		json_uint(w, "fences", m->tracks[t].nfences);
		json_object_end(w);
	}
	json_array_end(w);

	json_array_begin(w, "fences");
	for (size_t i = 0; i < m->nfences; i++) {
		const struct tr_fence *f = &m->fences[i];

		json_object_begin(w, NULL);
		json_string(w, "driver", f->driver);
		json_string(w, "timeline", f->timeline);
		json_uint(w, "context", f->context);
		json_uint(w, "seqno", f->seqno);
		if (f->track >= 0) {
			json_int(w, "track", f->track);
			json_int(w, "lane", f->lane);
		} else {
			json_null(w, "track");
			json_null(w, "lane");
		}
		/* created while tracing: its whole life should be in the trace */
		json_bool(w, "born_in_trace", f->init_ns != TR_NONE || f->emit_ns != TR_NONE);
		json_bool(w, "signaled", f->signaled_ns != TR_NONE);
		json_bool(w, "from_marker", f->from_marker);
		ns_or_null(w, "init_ns", f->init_ns);
		ns_or_null(w, "emit_ns", f->emit_ns);
		ns_or_null(w, "enable_signal_ns", f->enable_ns);
		ns_or_null(w, "signaled_ns", f->signaled_ns);
		ns_or_null(w, "destroy_ns", f->destroy_ns);
		json_string(w, "created_by",
			    f->init_thread >= 0 ? tr_thread_label(m, f->init_thread, label, sizeof(label))
						: NULL);
		json_string(w, "signalled_from",
			    f->signal_thread >= 0
				    ? tr_thread_label(m, f->signal_thread, label, sizeof(label))
				    : NULL);
		json_string(w, "released_by",
			    f->destroy_thread >= 0
				    ? tr_thread_label(m, f->destroy_thread, label, sizeof(label))
				    : NULL);
		json_object_end(w);
	}
	json_array_end(w);

	json_array_begin(w, "waits");
	for (size_t i = 0; i < m->nwaits; i++) {
		const struct tr_wait *wt = &m->waits[i];

		json_object_begin(w, NULL);
		json_uint(w, "fence", (unsigned long long)wt->fence);
		json_int(w, "pid", thread_pid(m, wt->thread));
		json_int(w, "tid", m->threads[wt->thread].tid);
		json_string(w, "comm", m->threads[wt->thread].comm);
		json_int(w, "start_ns", wt->start_ns);
		json_int(w, "end_ns", wt->end_ns);
		json_bool(w, "unfinished", wt->unfinished);
		json_object_end(w);
	}
	json_array_end(w);

	json_array_begin(w, "blocking_syscalls");
	for (size_t i = 0; i < m->nblocks; i++) {
		const struct tr_block *b = &m->blocks[i];

		json_object_begin(w, NULL);
		json_string(w, "name", b->name);
		json_int(w, "pid", thread_pid(m, b->thread));
		json_int(w, "tid", m->threads[b->thread].tid);
		json_string(w, "comm", m->threads[b->thread].comm);
		json_int(w, "start_ns", b->start_ns);
		json_int(w, "end_ns", b->end_ns);
		if (b->unfinished)
			json_null(w, "ret");
		else
			json_int(w, "ret", b->ret);
		json_bool(w, "unfinished", b->unfinished);
		json_object_end(w);
	}
	json_array_end(w);

	json_array_begin(w, "markers");
	for (size_t i = 0; i < m->nmarkers; i++) {
		const struct tr_marker *mk = &m->markers[i];

		json_object_begin(w, NULL);
		json_string(w, "name", mk->name);
		json_string(w, "args", mk->args);
		json_bool(w, "span", mk->span);
		json_int(w, "ts_ns", mk->ts_ns);
		ns_or_null(w, "end_ns", mk->span ? mk->end_ns : TR_NONE);
		json_int(w, "depth", mk->depth);
		if (mk->fence >= 0)
			json_int(w, "fence", mk->fence);
		else
			json_null(w, "fence");
		json_int(w, "pid", thread_pid(m, mk->thread));
		json_int(w, "tid", m->threads[mk->thread].tid);
		json_string(w, "comm", m->threads[mk->thread].comm);
		json_object_end(w);
	}
	json_array_end(w);
	json_object_end(w);
}

int
tr_write_chrome_json(const struct tr_model *m, const struct tr_meta *meta, FILE *f)
{
	struct json_writer w;
	char cmd[512];

	json_init(&w, f, false);
	json_object_begin(&w, NULL);
	json_string(&w, "displayTimeUnit", "ms");
	json_object_begin(&w, "otherData");
	json_string(&w, "generator", "syncbridge-info trace");
	json_string(&w, "version", meta->tool_version);
	json_string(&w, "command", meta->argv ? tr_meta_command(meta, cmd, sizeof(cmd)) : NULL);
	json_string(&w, "clock", meta->clock);
	json_object_end(&w);

	json_array_begin(&w, "traceEvents");
	write_metadata(&w, m);
	write_fence_events(&w, m);
	write_wait_events(&w, m);
	write_block_events(&w, m);
	write_marker_events(&w, m);
	json_array_end(&w);

	write_summary(&w, m, meta);
	json_object_end(&w);
	fputc('\n', f);
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
