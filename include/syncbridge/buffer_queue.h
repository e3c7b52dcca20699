/* SPDX-License-Identifier: MIT */
/*
 * A fenced buffer queue: the hand-over contract camera and media pipelines
 * lack. V4L2 has no fences — a dequeued buffer is complete, and nothing stops
 * the driver from overwriting a buffer that is queued back while a GPU or an
 * encoder still reads it. This queue gives every buffer (a "slot") two fences:
 *
 *  - an acquire fence: the producer's "the frame is written" (a sync_file,
 *    or none when it is complete already, as a V4L2 capture buffer is);
 *  - a release fence: "every consumer is done with it" (a sync_file, or the
 *    fences on the slot's dma-buf when the consumers use implicit sync);
 *
 * and hands a slot back to the producer (who may give it to the driver:
 * VIDIOC_QBUF) only after its release fence has signalled.
 *
 *            dequeue                  queue(acquire fence)
 *   FREE ───────────────► DEQUEUED ─────────────────────► QUEUED
 *    ▲                                                       │ acquire
 *    │ release fence                                          ▼
 *    │ signalled         release(release fence)           ACQUIRED
 *   RELEASED ◄──────────────────────────────────────────────┘
 *
 * In mailbox mode a consumer acquires the newest queued slot and the older
 * queued ones are dropped: they go back as RELEASED with their acquire fence
 * as release fence (the producer may still be writing them). See
 * docs/buffer-queue.md.
 *
 * Conventions, on top of <syncbridge/common.h>:
 *  - Every function is thread-safe. Any number of threads may block in
 *    sb_buffer_queue_acquire(); one at a time in sb_buffer_queue_dequeue()
 *    (a second gets -EBUSY).
 *  - Fence fds passed in are taken over on success only (on failure they
 *    stay the caller's); -1 means "nothing to wait for". Fence fds handed
 *    out are new fds (close-on-exec) owned by the caller.
 *  - A fence that completes with an error: an acquire fence is handed to the
 *    consumer all the same (its wait on it reports the error: the frame is
 *    bad); a release fence counts as signalled (the buffer is no longer
 *    used) and is logged as a warning. Both are counted in
 *    sb_buffer_queue_stats.fence_errors. Nothing waits forever on one.
 *  - SYNCBRIDGE_DISABLE (set to any value when the queue is created) turns
 *    the queue's waits off, for tests and bug hunts: dequeue hands slots
 *    back without waiting for their release fences — the race the queue
 *    prevents then shows.
 */
#ifndef SYNCBRIDGE_BUFFER_QUEUE_H
#define SYNCBRIDGE_BUFFER_QUEUE_H

#include <stdint.h>

#include <syncbridge/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Most slots a queue can have. */
#define SB_BUFFER_QUEUE_MAX_SLOTS 64

struct sb_buffer_queue;

/** Flags of sb_buffer_queue_create(). */
enum sb_buffer_queue_flags {
	/**
	 * Acquire returns the newest queued slot and drops the older queued
	 * ones (a display that shows only the latest frame). Without it the
	 * queue is FIFO: every queued frame is acquired, in order.
	 */
	SB_BUFFER_QUEUE_MAILBOX = 1 << 0,
};

/** Counters since the queue was created (sb_buffer_queue_get_stats()). */
struct sb_buffer_queue_stats {
	uint64_t dequeued;    /**< slots handed to the producer */
	uint64_t queued;      /**< frames queued by the producer */
	uint64_t acquired;    /**< frames handed to a consumer */
	uint64_t released;    /**< frames released by a consumer */
	uint64_t dropped;     /**< mailbox: queued frames replaced by a newer one */
	uint64_t reuse_waits; /**< dequeues that had to wait for a release fence */
	/**
	 * fences seen completed with an error: acquire fences at queue (the
	 * frame still goes to a consumer, whose wait on the fence reports the
	 * error) and release / dropped frames' fences (the slot is reused)
	 */
	uint64_t fence_errors;
	uint64_t reserved[3];
};

/**
 * Create a queue of `slots` slots (1..SB_BUFFER_QUEUE_MAX_SLOTS), all FREE.
 * flags: enum sb_buffer_queue_flags.
 * On success *out is owned by the caller (sb_buffer_queue_destroy()); on
 * failure NULL. Returns 0, -EINVAL (bad count or flags, NULL out),
 * -ENOMEM, -EMFILE.
 */
SB_EXPORT int sb_buffer_queue_create(unsigned slots, uint32_t flags,
				     struct sb_buffer_queue **out);

/**
 * Destroy the queue and close every fence it holds. No thread may be blocked
 * in it (call sb_buffer_queue_close() and join them first). NULL is a no-op.
 * It does not wait for pending release fences: whoever owns the buffers
 * must not free them before those signal.
 */
SB_EXPORT void sb_buffer_queue_destroy(struct sb_buffer_queue *queue);

/**
 * Shut the queue down: threads blocked in dequeue or acquire return -EPIPE,
 * and so do later calls to them. Queue and release still work (so that
 * in-flight frames can be returned). Returns 0 or -EINVAL (NULL queue).
 */
SB_EXPORT int sb_buffer_queue_close(struct sb_buffer_queue *queue);

/**
 * Tell the queue which dma-buf backs `slot`, for
 * sb_buffer_queue_release_dmabuf(). dmabuf_fd: borrowed, never closed; it
 * must stay open while the queue may use it (until destroy, or until it is
 * replaced; -1 forgets it).
 * Returns 0; -EINVAL (bad slot, NULL queue, not a dma-buf); -EBADF.
 */
SB_EXPORT int sb_buffer_queue_set_dmabuf(struct sb_buffer_queue *queue, unsigned slot,
					 int dmabuf_fd);

/**
 * Producer: take a FREE slot whose release fence has signalled — the one
 * released longest ago — waiting up to timeout_ns (relative;
 * SB_TIMEOUT_INFINITE; 0 polls). If no slot is ready but some are RELEASED
 * with a pending fence, it waits for the first of those fences (counted in
 * reuse_waits); if none is even released, for a release.
 * On success *slot is DEQUEUED, owned by the producer.
 * Returns 0; -ETIME (nothing became free in time); -EPIPE (closed); -EBUSY
 * (another thread is blocked in dequeue); -EINVAL (NULL argument).
 */
SB_EXPORT int sb_buffer_queue_dequeue(struct sb_buffer_queue *queue, int64_t timeout_ns,
				      unsigned *slot);

/**
 * Producer: the frame in `slot` (DEQUEUED) is submitted; it is complete once
 * acquire_fence signals (-1: complete now). acquire_fence: taken over on
 * success (closed at once if it has signalled already); left to the caller on
 * failure.
 * Returns 0; -EINVAL (slot not DEQUEUED, not a sync_file, NULL queue);
 * -EBADF.
 */
SB_EXPORT int sb_buffer_queue_queue(struct sb_buffer_queue *queue, unsigned slot,
				    int acquire_fence);

/**
 * Consumer: take the oldest QUEUED slot (the newest in mailbox mode, which
 * drops the others), waiting up to timeout_ns for one.
 * On success *slot is ACQUIRED, owned by the consumer, and *acquire_fence
 * is the producer's fence — the caller owns it and must wait for it (on the
 * CPU, or GPU-side) before reading — or -1 when the frame is complete.
 * Returns 0; -ETIME; -EPIPE (closed and nothing queued); -EINVAL (NULL
 * argument).
 */
SB_EXPORT int sb_buffer_queue_acquire(struct sb_buffer_queue *queue, int64_t timeout_ns,
				      unsigned *slot, int *acquire_fence);

/**
 * Consumer: done with `slot` (ACQUIRED) once release_fence signals (-1: done
 * now). To release for several readers, merge their fences first
 * (sb_sync_file_merge_array()). release_fence: taken over on success (closed
 * at once if it has signalled already); left to the caller on failure.
 * Returns 0; -EINVAL (slot not ACQUIRED, not a sync_file, NULL queue); -EBADF.
 */
SB_EXPORT int sb_buffer_queue_release(struct sb_buffer_queue *queue, unsigned slot,
				      int release_fence);

/**
 * Consumer: release `slot` (ACQUIRED) with the fences its dma-buf carries now
 * (sb_buffer_queue_set_dmabuf()) — every reader and writer a new writer
 * would wait for. For consumers that sync implicitly: a GPU read through
 * VK_LAYER_SYNCBRIDGE_implicit_sync or sb_egl_dmabuf_attach(), a KMS plane.
 * Returns 0; -EINVAL (slot not ACQUIRED or without a dma-buf); -EOPNOTSUPP
 * (kernel before 6.0: nothing was released — wait for the buffer with
 * sb_dmabuf_wait(SB_ACCESS_WRITE), then release with -1); -ENOMEM; -EMFILE.
 */
SB_EXPORT int sb_buffer_queue_release_dmabuf(struct sb_buffer_queue *queue, unsigned slot);

/**
 * Copy the queue's counters into *stats.
 * Returns 0 or -EINVAL (NULL argument).
 */
SB_EXPORT int sb_buffer_queue_get_stats(struct sb_buffer_queue *queue,
					struct sb_buffer_queue_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
