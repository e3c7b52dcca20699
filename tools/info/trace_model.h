/* SPDX-License-Identifier: MIT */
/*
 * The fence story told by the kernel's dma_fence tracepoints
 * (include/trace/events/dma_fence.h), rebuilt from the text of a tracefs
 * `trace` file:
 *
 *   dma_fence_init     a fence object was created     (driver, timeline, context, seqno)
 *   dma_fence_emit     it was handed to the hardware  (most drivers; vgem does not emit)
 *   dma_fence_enable_signal  someone asked to be told when it signals
 *   dma_fence_signaled it signalled
 *   dma_fence_wait_start / _wait_end   a thread blocked in dma_fence_wait()
 *   dma_fence_destroy  the last reference went away
 *
 * plus trace_marker lines starting with "syncbridge:" (see struct tr_marker)
 * and the poll-family syscalls of the traced command (struct tr_block).
 * A fence is identified by (context, seqno); a track is one (driver,
 * timeline) pair, split into lanes where its fences overlap in time.
 */
#ifndef INFO_TRACE_MODEL_H
#define INFO_TRACE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TR_NONE INT64_MIN /* a time that was not seen */
#define TR_NAME_LEN 64
#define TR_COMM_LEN 32

/* One line of tracefs `trace` output, split into its columns. */
struct tr_line {
	char comm[TR_COMM_LEN];
	int tid;
	int tgid;  /* -1 unless options/record-tgid was on */
	int cpu;
	int64_t ts_ns;
	char event[64];
	const char *data; /* the event's text: points into the parsed line */
};

/*
 * Split one line. Returns 1 for an event line, 0 for a line that carries no
 * event (comments, blank lines, "CPU buffer started" notes), -EINVAL for a
 * line that looks like neither.
 */
int tr_line_parse(const char *line, struct tr_line *out);

/*
 * Syscall events print without an event name: "sys_ppoll(ufds: 0x.., ...)"
 * and "sys_ppoll -> 0x1". tr_line_parse() reports them as events
 * "sys_enter_ppoll" (data: the arguments) and "sys_exit_ppoll" (data: the
 * return value).
 */

/* "driver=%s timeline=%s context=%u seqno=%u" (the timeline may hold blanks). */
int tr_fence_fields_parse(const char *data, char *driver, size_t driver_len, char *timeline,
			  size_t timeline_len, uint64_t *context, uint64_t *seqno);

struct tr_thread {
	int tid;
	int tgid; /* -1 if unknown */
	char comm[TR_COMM_LEN];
};

struct tr_fence {
	char driver[TR_NAME_LEN];
	char timeline[TR_NAME_LEN];
	uint64_t context, seqno;
	int64_t init_ns, emit_ns, enable_ns, signaled_ns, destroy_ns; /* TR_NONE if not seen */
	int init_thread;    /* index into threads, -1 if not seen */
	int signal_thread;  /* the context the signal came from (thread, irq or worker) */
	int destroy_thread; /* who dropped the last reference */
	int track, lane;   /* set by tr_model_finish(); -1 for hidden fences */
	bool hidden;       /* only destroy seen: created and signalled before the trace */
	bool from_marker;  /* no dma_fence event at all: known only from a marker naming it
			    * (e.g. the kernel's stub fence, made once per boot) */
};

struct tr_wait {
	int fence;
	int thread;
	int64_t start_ns, end_ns; /* end_ns is TR_NONE until wait_end; finish() closes it */
	bool unfinished;
};

/*
 * A "syncbridge:" trace_marker line:
 *   syncbridge: NAME [key=value ...]          an instant event
 *   syncbridge: begin NAME [key=value ...]    opens a span on the writing thread
 *   syncbridge: end NAME [key=value ...]      closes the innermost open NAME span
 *                                             (its words are added to the span's)
 * A "fence=CONTEXT:SEQNO" word ties the marker to that fence (resolved by
 * tr_model_finish(), so it may name a fence whose events come later); a
 * fence with no event in the trace is added from the marker's driver= and
 * timeline= words (from_marker).
 */
struct tr_marker {
	int thread;
	int64_t ts_ns;
	int64_t end_ns; /* spans only: TR_NONE until closed */
	bool span;
	bool unfinished;
	int depth;  /* spans of the same thread open when it was written (nesting) */
	int fence;  /* index into fences of its "fence=CONTEXT:SEQNO" word, -1 if none */
	char *name;
	char *args; /* the rest of the line (key=value words), may be "" */
};

/*
 * A blocking syscall of the traced command (poll, ppoll, select, pselect6,
 * epoll_wait, epoll_pwait, epoll_pwait2) from the raw "sys_NAME(args)" /
 * "sys_NAME -> RET" lines of tracefs syscall events: how userspace waits for
 * a sync_file or a dma-buf, which dma_fence_wait_* events never show.
 */
/* The poll-family syscalls recorded as blocking waits. */
#define TR_NPOLL_SYSCALLS 7
extern const char *const tr_poll_syscalls[TR_NPOLL_SYSCALLS];

struct tr_block {
	int thread;
	char name[16];
	int64_t start_ns, end_ns; /* end_ns is TR_NONE until the exit; finish() closes it */
	long long ret;
	bool unfinished;
};

struct tr_track {
	char driver[TR_NAME_LEN];
	char timeline[TR_NAME_LEN];
	int lanes;
	size_t nfences;
};

struct tr_model {
	struct tr_thread *threads;
	size_t nthreads, threads_cap;
	struct tr_fence *fences;
	size_t nfences, fences_cap;
	struct tr_wait *waits;
	size_t nwaits, waits_cap;
	struct tr_marker *markers;
	size_t nmarkers, markers_cap;
	struct tr_block *blocks;
	size_t nblocks, blocks_cap;
	struct tr_track *tracks;
	size_t ntracks;

	/* fence look-up: open addressing over (context, seqno) -> index + 1 */
	size_t *hash;
	size_t hash_cap;
	/*
	 * Fences inited with seqno 0 and not yet emitted, oldest first: drivers
	 * that number a fence only at emit (virtio_gpu) trace its init as
	 * CONTEXT:0; its first event under a new number on that context is its
	 * emit (trace_model.c, renumber()).
	 */
	size_t *unnumbered;
	size_t nunnumbered, unnumbered_cap;
	unsigned long renumbered;

	int64_t first_ns, last_ns;  /* first and last event seen (TR_NONE if none) */
	int64_t begin_ns, end_ns;   /* the window shown: set by the caller or from first/last */

	unsigned long lines, events, fence_events, other_events, malformed;
	unsigned long unmatched_wait_ends, unmatched_marker_ends, unmatched_syscall_exits;
	long long entries_in_buffer, entries_written; /* from the header, -1 if absent */
	bool failed; /* out of memory */

	/*
	 * The command's tids, when set: syscall events of other tasks are
	 * dropped. The root comes from tr_model_follow(); sched_process_fork
	 * lines add each child (process or thread) of a followed task.
	 */
	int *followed;
	size_t nfollowed, followed_cap;
	unsigned long unfollowed_syscalls;
};

void tr_model_init(struct tr_model *m);
void tr_model_free(struct tr_model *m);
/*
 * Keep only the syscall events of tid and the tasks it forks or clones
 * afterwards (seen as sched_process_fork lines). A trace text saved by
 * `syncbridge-info trace --text` carries the same request as a
 * "# syncbridge-info: command pid N" line.
 */
void tr_model_follow(struct tr_model *m, int tid);

/* Feed one line of `trace` text (with or without its newline). */
void tr_model_feed_line(struct tr_model *m, const char *line);
/* Feed a whole text (several lines). */
void tr_model_feed_text(struct tr_model *m, const char *text);
/*
 * Read and feed a whole FILE, each line also written to copy unless it is
 * NULL. Returns 0 or -EIO (a read error); running out of memory is reported
 * by tr_model_finish().
 */
int tr_model_feed_file(struct tr_model *m, FILE *f, FILE *copy);

/*
 * Close what the trace left open (waits, marker spans), set begin/end if the
 * caller did not (first/last event), build the tracks and lanes.
 * Returns 0 or -ENOMEM.
 */
int tr_model_finish(struct tr_model *m);

/*
 * Start and end of a fence's bar: emit (else init, else begin) .. signaled
 * (else end); begin .. begin for a fence known only from markers.
 */
int64_t tr_fence_start(const struct tr_model *m, const struct tr_fence *f);
int64_t tr_fence_end(const struct tr_model *m, const struct tr_fence *f);

/* "comm[tid]" of a thread index (or "?"), into buf. */
const char *tr_thread_label(const struct tr_model *m, int thread, char *buf, size_t len);

/* Number of events lost to a full ring buffer (from the header), 0 if none/unknown. */
long long tr_model_lost_events(const struct tr_model *m);

#endif
