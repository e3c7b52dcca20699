/* SPDX-License-Identifier: MIT */
/*
 * Building a tr_model from the lines of a trace: dma_fence events and waits
 * and the poll-family syscalls. Storage (threads, the fence hash) is in
 * trace_store.c, markers in trace_markers.c, what finish() does and the
 * queries in trace_layout.c.
 */
#include "trace_model_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * virtio_gpu creates a fence before it knows its number and numbers it when
 * it emits it (drivers/gpu/drm/virtio/virtgpu_fence.c, 6.12):
 *
 *	"This only partially initializes the fence because the seqno is
 *	 unknown yet.  The fence must not be used outside of the driver
 *	 until virtio_gpu_fence_emit is called."
 *	dma_fence_init(&fence->f, &virtio_gpu_fence_ops, &drv->lock, fence_context, 0);
 *
 * and later `fence->fence_id = fence->f.seqno = ++drv->current_fence_id;`
 * then trace_dma_fence_emit(). So its init is traced as CONTEXT:0 and every
 * later event as CONTEXT:N. The first event of an unknown CONTEXT:N (N > 0)
 * that is an emit takes over the oldest fence of that context still waiting
 * for its number (in-flight submissions are numbered in the order they were
 * created, under the driver's lock). Without this each such fence showed up
 * twice: an init that never signals and an emit born before the trace.
 */
/* Take entry k out of the list of fences waiting for their number. */
static void
unnumbered_take(struct tr_model *m, size_t k)
{
	memmove(&m->unnumbered[k], &m->unnumbered[k + 1],
		(m->nunnumbered - k - 1) * sizeof(*m->unnumbered));
	m->nunnumbered--;
}

static int
renumber(struct tr_model *m, uint64_t context, uint64_t seqno)
{
	for (size_t k = 0; k < m->nunnumbered; k++) {
		size_t idx = m->unnumbered[k];

		if (m->fences[idx].context != context)
			continue;
		unnumbered_take(m, k);
		tr_model_fence_renumber(m, idx, seqno);
		m->renumbered++;
		return (int)idx;
	}
	return -1;
}

/* Fence idx is no longer waiting for its number (it was emitted or destroyed). */
static void
numbered(struct tr_model *m, size_t idx)
{
	for (size_t k = 0; k < m->nunnumbered; k++) {
		if (m->unnumbered[k] == idx) {
			unnumbered_take(m, k);
			return;
		}
	}
}

/* dma_fence_wait_start: an open wait of thread on fence idx. */
static void
wait_start(struct tr_model *m, int idx, int thread, int64_t ts_ns)
{
	struct tr_wait *w;

	if (!tr_model_grow(m, (void **)&m->waits, m->nwaits, &m->waits_cap, sizeof(*m->waits)))
		return;
	w = &m->waits[m->nwaits++];
	w->fence = idx;
	w->thread = thread;
	w->start_ns = ts_ns;
	w->end_ns = TR_NONE;
	w->unfinished = false;
}

/* dma_fence_wait_end: closes the innermost open wait of thread tid, preferably on fence idx. */
static void
wait_end(struct tr_model *m, int idx, int tid, int64_t ts_ns)
{
	struct tr_wait *match = NULL;

	for (size_t i = m->nwaits; i-- > 0;) {
		struct tr_wait *w = &m->waits[i];

		if (m->threads[w->thread].tid != tid || w->end_ns != TR_NONE)
			continue;
		if (w->fence == idx) {
			match = w;
			break;
		}
		if (!match)
			match = w;
	}
	if (match)
		match->end_ns = ts_ns;
	else
		m->unmatched_wait_ends++;
}

static void
fence_event(struct tr_model *m, const struct tr_line *l, const char *what)
{
	char driver[TR_NAME_LEN], timeline[TR_NAME_LEN];
	uint64_t context, seqno;
	int idx, thread;
	struct tr_fence *f;

	if (tr_fence_fields_parse(l->data, driver, sizeof(driver), timeline, sizeof(timeline),
				  &context, &seqno) < 0) {
		m->malformed++;
		return;
	}
	m->fence_events++;
	thread = tr_model_thread(m, l);
	idx = tr_model_fence_find(m, context, seqno);
	/* A new object under a key seen before (the old one was destroyed or re-inited). */
	if (idx >= 0 && strcmp(what, "init") == 0 &&
	    (m->fences[idx].init_ns != TR_NONE || m->fences[idx].destroy_ns != TR_NONE))
		idx = -1;
	if (idx >= 0 && m->fences[idx].destroy_ns != TR_NONE && strcmp(what, "destroy") != 0)
		idx = -1;
	if (idx < 0 && seqno != 0 && strcmp(what, "emit") == 0)
		idx = renumber(m, context, seqno);
	if (idx < 0) {
		idx = tr_model_fence_new(m, driver, timeline, context, seqno);
		if (idx >= 0 && seqno == 0 && context != 0 && strcmp(what, "init") == 0 &&
		    tr_model_grow(m, (void **)&m->unnumbered, m->nunnumbered, &m->unnumbered_cap,
				  sizeof(*m->unnumbered)))
			m->unnumbered[m->nunnumbered++] = (size_t)idx;
	}
	if (idx < 0)
		return;
	f = &m->fences[idx];
	if (f->seqno == 0 && (strcmp(what, "emit") == 0 || strcmp(what, "destroy") == 0))
		numbered(m, (size_t)idx);

	if (strcmp(what, "init") == 0) {
		f->init_ns = l->ts_ns;
		f->init_thread = thread;
	} else if (strcmp(what, "emit") == 0) {
		if (f->emit_ns == TR_NONE)
			f->emit_ns = l->ts_ns;
	} else if (strcmp(what, "enable_signal") == 0) {
		if (f->enable_ns == TR_NONE)
			f->enable_ns = l->ts_ns;
	} else if (strcmp(what, "signaled") == 0) {
		if (f->signaled_ns == TR_NONE) {
			f->signaled_ns = l->ts_ns;
			f->signal_thread = thread;
		}
	} else if (strcmp(what, "destroy") == 0) {
		f->destroy_ns = l->ts_ns;
		f->destroy_thread = thread;
	} else if (strcmp(what, "wait_start") == 0) {
		wait_start(m, idx, thread, l->ts_ns);
	} else if (strcmp(what, "wait_end") == 0) {
		wait_end(m, idx, l->tid, l->ts_ns);
	}
}

const char *const tr_poll_syscalls[TR_NPOLL_SYSCALLS] = {
	"poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2",
};

static bool
is_blocking_syscall(const char *name)
{
	for (size_t i = 0; i < TR_NPOLL_SYSCALLS; i++)
		if (strcmp(name, tr_poll_syscalls[i]) == 0)
			return true;
	return false;
}

static void
syscall_event(struct tr_model *m, const struct tr_line *l, bool enter, const char *name)
{
	int thread = tr_model_thread(m, l);
	struct tr_block *b;

	if (thread < 0)
		return;
	if (enter) {
		if (!tr_model_grow(m, (void **)&m->blocks, m->nblocks, &m->blocks_cap,
				   sizeof(*m->blocks)))
			return;
		b = &m->blocks[m->nblocks++];
		memset(b, 0, sizeof(*b));
		b->thread = thread;
		snprintf(b->name, sizeof(b->name), "%s", name);
		b->start_ns = l->ts_ns;
		b->end_ns = TR_NONE;
		return;
	}
	for (size_t i = m->nblocks; i-- > 0;) {
		b = &m->blocks[i];
		if (b->thread == thread && b->end_ns == TR_NONE && strcmp(b->name, name) == 0) {
			b->end_ns = l->ts_ns;
			b->ret = strtoll(l->data, NULL, 0);
			return;
		}
	}
	m->unmatched_syscall_exits++; /* entered before the trace began */
}

static bool
followed(const struct tr_model *m, int tid)
{
	for (size_t i = 0; i < m->nfollowed; i++)
		if (m->followed[i] == tid)
			return true;
	return false;
}

void
tr_model_follow(struct tr_model *m, int tid)
{
	if (tid <= 0 || followed(m, tid))
		return;
	if (!tr_model_grow(m, (void **)&m->followed, m->nfollowed, &m->followed_cap,
			   sizeof(*m->followed)))
		return;
	m->followed[m->nfollowed++] = tid;
}

/* "comm=sh pid=10 child_comm=sh child_pid=11" */
static void
fork_event(struct tr_model *m, const struct tr_line *l)
{
	const char *parent = strstr(l->data, " pid="), *child = strstr(l->data, "child_pid=");

	if (!parent && strncmp(l->data, "pid=", 4) == 0)
		parent = l->data - 1;
	if (!parent || !child) {
		m->malformed++;
		return;
	}
	if (m->nfollowed && followed(m, atoi(parent + 5)))
		tr_model_follow(m, atoi(child + 10));
}

static void
header_line(struct tr_model *m, const char *line)
{
	const char *p = strstr(line, "entries-in-buffer/entries-written:");
	long long a, b;
	int pid;

	if (sscanf(line, "# syncbridge-info: command pid %d", &pid) == 1)
		tr_model_follow(m, pid);

	if (p && sscanf(p, "entries-in-buffer/entries-written: %lld/%lld", &a, &b) == 2) {
		m->entries_in_buffer = a;
		m->entries_written = b;
	}
}

void
tr_model_feed_line(struct tr_model *m, const char *line)
{
	struct tr_line l;
	int ret;

	m->lines++;
	ret = tr_line_parse(line, &l);
	if (ret == 0) {
		if (line[0] == '#')
			header_line(m, line);
		return;
	}
	if (ret < 0) {
		m->malformed++;
		return;
	}
	m->events++;
	if (m->first_ns == TR_NONE || l.ts_ns < m->first_ns)
		m->first_ns = l.ts_ns;
	if (m->last_ns == TR_NONE || l.ts_ns > m->last_ns)
		m->last_ns = l.ts_ns;

	if (strncmp(l.event, "dma_fence_", 10) == 0) {
		static const char *const kinds[] = { "init", "emit", "enable_signal", "signaled",
						     "wait_start", "wait_end", "destroy" };
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			if (strcmp(l.event + 10, kinds[i]) == 0) {
				fence_event(m, &l, kinds[i]);
				return;
			}
		}
	} else if (strcmp(l.event, "tracing_mark_write") == 0 &&
		   strncmp(l.data, "syncbridge:", 11) == 0) {
		tr_model_marker_event(m, &l);
		return;
	} else if (strcmp(l.event, "sched_process_fork") == 0) {
		fork_event(m, &l);
		return;
	} else if (strncmp(l.event, "sys_", 4) == 0 && m->nfollowed && !followed(m, l.tid)) {
		m->unfollowed_syscalls++;
		return;
	} else if (strncmp(l.event, "sys_enter_", 10) == 0 && is_blocking_syscall(l.event + 10)) {
		syscall_event(m, &l, true, l.event + 10);
		return;
	} else if (strncmp(l.event, "sys_exit_", 9) == 0 && is_blocking_syscall(l.event + 9)) {
		syscall_event(m, &l, false, l.event + 9);
		return;
	}
	m->other_events++;
}

void
tr_model_feed_text(struct tr_model *m, const char *text)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char stackbuf[1024];
		char *line = n < sizeof(stackbuf) ? stackbuf : malloc(n + 1);

		if (!line) {
			m->failed = true;
			return;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		tr_model_feed_line(m, line);
		if (line != stackbuf)
			free(line);
		if (!nl)
			break;
		p = nl + 1;
	}
}

int
tr_model_feed_file(struct tr_model *m, FILE *f, FILE *copy)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	while ((n = getline(&line, &cap, f)) >= 0) {
		if (copy)
			fwrite(line, 1, (size_t)n, copy);
		if (n > 0 && line[n - 1] == '\n')
			line[n - 1] = '\0';
		tr_model_feed_line(m, line);
	}
	free(line);
	return ferror(f) ? -EIO : 0;
}
