/* SPDX-License-Identifier: MIT */
/*
 * The PipeWire bridge (libsyncbridge-pipewire, pkg-config
 * syncbridge-pipewire): explicit sync for pw_stream video buffers, as
 * PipeWire >= 1.2 defines it, on DRM syncobj timelines. See docs/pipewire.md.
 *
 * PipeWire's contract (spa/buffer/meta.h, spa_meta_sync_timeline): a buffer
 * with explicit sync carries a SPA_META_SyncTimeline meta and, as its last
 * two data planes, two SPA_DATA_SyncObj planes — the acquire timeline and
 * the release timeline, each a DRM syncobj fd. The producer signals the
 * acquire point when its write is done and reuses the buffer only once the
 * release point has signalled; the consumer waits for the acquire point
 * before it reads and signals the release point when its read is done.
 * It is the same contract as the buffer queue's slots and as
 * linux-drm-syncobj-v1.
 *
 * What this library adds: the params that offer it (and a plain fallback for
 * peers that do not take it, e.g. GStreamer's pipewiresrc), the syncobjs of
 * each buffer, and the four moves — set the acquire point from a sync_file
 * (a GPU's, a vgem fence, or -1 for a CPU write), watch the release point
 * without blocking the stream's loop, export the acquire point as a
 * sync_file for a GPU-side wait (sb_egl_sync_file_wait(), a Vulkan import),
 * and signal the release point from the reader's fence. A buffer negotiated
 * without the meta (the fallback) gets the producer's fence as the dma-buf's
 * implicit write fence instead, which a reader's implicit sync waits for.
 *
 * Conventions as in <syncbridge/common.h>: 0 or -errno; fds borrowed unless
 * a comment says otherwise. Everything runs on the stream's thread; the
 * object is not locked.
 *
 * SYNCBRIDGE_DISABLE (set when sb_pw_sync_create() runs) turns the bridge off
 * for tests: only the plain Buffers param is offered, and the fences given
 * to the calls below are not waited for or attached.
 */
#ifndef SYNCBRIDGE_PIPEWIRE_H
#define SYNCBRIDGE_PIPEWIRE_H

#include <stdbool.h>
#include <stdint.h>

#include <syncbridge/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct spa_buffer;
struct spa_pod;
struct spa_pod_builder;

/** Per-stream state: the DRM device the timelines live on, and per-buffer syncobjs. */
struct sb_pw_sync;

/**
 * drm_fd: a DRM node with timeline syncobjs (DRM_CAP_SYNCOBJ_TIMELINE),
 * borrowed: it must stay open until sb_pw_sync_destroy(). Producer and
 * consumer may use different devices: a syncobj fd imports on any.
 * On success *out is the caller's; on failure NULL.
 * Returns 0; -EINVAL (NULL out, drm_fd not a DRM node); -EBADF;
 * -EOPNOTSUPP (no timeline syncobjs); -ENOMEM.
 */
SB_EXPORT int sb_pw_sync_create(int drm_fd, struct sb_pw_sync **out);
/** Destroys every buffer's syncobjs still known. NULL is a no-op. */
SB_EXPORT void sb_pw_sync_destroy(struct sb_pw_sync *sync);

/**
 * The SPA_PARAM_Buffers and SPA_PARAM_Meta params both sides offer, built in
 * `b`, in order: Buffers with `planes` + 2 blocks and the SyncTimeline meta
 * mandatory, the SyncTimeline Meta, then Buffers with `planes` blocks (the
 * fallback PipeWire picks when the peer does not take the meta).
 * buffers: the count wanted; size/stride: each image plane's;
 * data_types: the SPA_DATA_* bit mask of the image planes.
 * Up to `max` params go to params[]; returns how many (3; 1, the fallback
 * only, with SYNCBRIDGE_DISABLE), -EINVAL or -ENOSPC (max, or b's memory).
 */
SB_EXPORT int sb_pw_sync_build_params(const struct sb_pw_sync *sync, struct spa_pod_builder *b,
				 const struct spa_pod **params, uint32_t max, uint32_t buffers,
				 uint32_t planes, uint32_t size, uint32_t stride,
				 uint32_t data_types);

/**
 * A buffer of the stream was added (the pw_stream add_buffer event).
 * Producer (it allocates: PW_STREAM_FLAG_ALLOC_BUFFERS): when the buffer was
 * negotiated with the meta, two timeline syncobjs are made and their fds put
 * into the last two planes (SPA_DATA_SyncObj; owned by this library until
 * sb_pw_buffer_remove()). Consumer: the two planes' fds are imported on
 * drm_fd (the fds stay PipeWire's).
 * Returns 1 (explicit sync), 0 (negotiated without it: the fallback),
 * -EINVAL (a malformed buffer: the meta without two SyncObj planes),
 * -ENOMEM, or the kernel's error.
 */
SB_EXPORT int sb_pw_buffer_add(struct sb_pw_sync *sync, struct spa_buffer *buf, bool producer);
/** The buffer goes (remove_buffer): its syncobjs are destroyed. Unknown buffers: no-op. */
SB_EXPORT void sb_pw_buffer_remove(struct sb_pw_sync *sync, struct spa_buffer *buf);
/** Whether buf carries explicit sync (sb_pw_buffer_add() returned 1). */
SB_EXPORT bool sb_pw_buffer_is_synced(const struct sb_pw_sync *sync, const struct spa_buffer *buf);

/**
 * Producer, before pw_stream_queue_buffer(): the frame's write is done once
 * fence_fd (a sync_file; -1: done already) signals. Explicit sync: the next
 * point of the buffer's acquire timeline waits for the fence (or is signalled
 * now), and the meta gets that acquire point and the release point the
 * consumer is to signal. Fallback: the fence becomes the dma-buf's implicit
 * write fence (data plane 0 must be SPA_DATA_DmaBuf), else the call waits
 * for it on the CPU.
 * Returns 0; -EBUSY (the buffer's last release point has not signalled: the
 * consumer still reads it); -ENOENT (unknown buffer); -EINVAL (fence_fd not a
 * sync_file); the kernel's error.
 */
SB_EXPORT int sb_pw_producer_set_acquire(struct sb_pw_sync *sync, struct spa_buffer *buf,
					 int fence_fd);

/**
 * Producer: may buf be written again? 1: its last release point has
 * signalled (or it never went out; or the consumer never took it — the
 * meta's SPA_META_SYNC_TIMELINE_UNSCHEDULED_RELEASE flag, set by
 * sb_pw_producer_set_acquire(), is still set, so nobody will signal it; or
 * it is a fallback buffer: PipeWire returns those once the consumer queued
 * them back), 0: not yet. With
 * timeout_ns (SB_TIMEOUT_INFINITE, 0 = poll) waits that long on the CPU.
 * Returns 1, 0, -ENOENT, or the kernel's error.
 */
SB_EXPORT int sb_pw_producer_wait_release(struct sb_pw_sync *sync, struct spa_buffer *buf,
					  int64_t timeout_ns);

/**
 * Producer: a pollable fd (POLLIN) that becomes readable once buf's last
 * release point signals, for the stream's loop (pw_loop_add_io) instead of a
 * blocking wait in the process callback. Owned by the library, valid until
 * the next call for buf or sb_pw_buffer_remove(). *out_fd is -1 when there is
 * nothing to wait for (returns 1 then).
 * Returns 1 (released already), 0 (*out_fd set), -ENOENT, -ENOMEM, or the
 * kernel's error.
 */
SB_EXPORT int sb_pw_producer_watch_release(struct sb_pw_sync *sync, struct spa_buffer *buf,
					   int *out_fd);

/**
 * Consumer, after pw_stream_dequeue_buffer(), before reading: a sync_file of
 * the buffer's acquire point in *out_fd, and the promise to signal its
 * release point with sb_pw_consumer_release() (it clears the meta's
 * SPA_META_SYNC_TIMELINE_UNSCHEDULED_RELEASE flag; a buffer queued back
 * without this call is free for the producer at once) (the caller's: wait for it GPU-side
 * or with sb_sync_file_wait()), or -1 when there is nothing to wait for (a
 * fallback buffer: its dma-buf's implicit fences, which sb_egl_dmabuf_wait()
 * and a driver's implicit sync honour).
 * Returns 0; -ENOENT (unknown buffer); -EAGAIN (the producer has not
 * submitted the acquire point yet: wait with SB_SYNCOBJ_WAIT_AVAILABLE or
 * try again); -EPROTO (the producer broke the contract: the acquire point is
 * not after the last frame released from this buffer, so it signalled long
 * ago — do not read the frame); the kernel's error.
 */
SB_EXPORT int sb_pw_consumer_acquire(struct sb_pw_sync *sync, struct spa_buffer *buf,
				     int *out_fd);

/**
 * Consumer, when its read of buf is submitted: the release point signals
 * once fence_fd (the read's sync_file; -1: done already) does — never
 * before. Call it before or after pw_stream_queue_buffer(). A fallback
 * buffer: fence_fd is waited for on the CPU (PipeWire has no other way to
 * tell the producer).
 * Returns 0; -ENOENT; -EINVAL (fence_fd not a sync_file); -EPROTO (the
 * producer broke the contract: the release point is not after its timeline's
 * value, so signalling it would tell the producer nothing and move the
 * timeline backwards; nothing is signalled); the kernel's error.
 */
SB_EXPORT int sb_pw_consumer_release(struct sb_pw_sync *sync, struct spa_buffer *buf,
				     int fence_fd);

#ifdef __cplusplus
}
#endif

#endif
