/* SPDX-License-Identifier: MIT */
/*
 * DRM sync objects (drivers/gpu/drm/drm_syncobj.c), binary and timeline.
 *
 * A syncobj is named by a DRM device fd and a handle. Binary syncobjs use
 * point 0; timeline syncobjs use points >= 1. A point "materialises" when a
 * fence is attached to it (a submission or a signal); it "signals" when that
 * fence does.
 *
 * drm_fd must be a DRM device node (else -EINVAL); -EBADF means not open.
 *
 * Syncobjs themselves are created and destroyed with libdrm
 * (drmSyncobjCreate / drmSyncobjDestroy); these functions bridge them to
 * sync_files and to pollable fds.
 */
#ifndef SYNCBRIDGE_SYNCOBJ_H
#define SYNCBRIDGE_SYNCOBJ_H

#include <stdbool.h>
#include <stdint.h>

#include <syncbridge/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Export the fence at `point` (0: the binary payload) as a sync_file.
 * drm_fd: borrowed. On success *out_fd is a new sync_file owned by the
 * caller; on failure -1.
 * Returns 0; -EINVAL: drm_fd is not a DRM device node, or the point has not
 * materialised (no fence yet) — the kernel's drm_syncobj_find_fence() answers
 * EINVAL for a payload-less binary syncobj and for a timeline point past the
 * last submitted one, and nothing else in this call can give EINVAL once
 * drm_fd is a DRM node; so for a known DRM fd, -EINVAL means "no fence yet"
 * (sb_syncobj_wait() with SB_SYNCOBJ_WAIT_AVAILABLE, or a waiter, waits for
 * one); -ENOENT (no such handle); -EOPNOTSUPP (driver without syncobj /
 * timeline); -EBADF; -EMFILE; -ENOMEM.
 */
SB_EXPORT int sb_syncobj_export_sync_file(int drm_fd, uint32_t handle, uint64_t point,
					  int *out_fd);

/**
 * Make `point` (0: the binary payload) wait for the fences of a sync_file.
 * drm_fd, sync_file_fd: borrowed; neither is closed, on success or failure.
 * Returns 0; -ENOENT (no such handle); -EINVAL (not a sync_file);
 * -EOPNOTSUPP; -EBADF; -ENOMEM.
 */
SB_EXPORT int sb_syncobj_import_sync_file(int drm_fd, uint32_t handle, uint64_t point,
					  int sync_file_fd);

/**
 * Signal `point` now from the CPU (0: signal the binary payload).
 * drm_fd: borrowed. Returns 0, -ENOENT, -EOPNOTSUPP, -EINVAL, -EBADF, -ENOMEM
 * (the kernel could not allocate: drm_syncobj_array_find(), the fence chain).
 */
SB_EXPORT int sb_syncobj_signal(int drm_fd, uint32_t handle, uint64_t point);

/**
 * Read the last signalled point of a timeline syncobj into *point.
 * drm_fd: borrowed. Returns 0, -ENOENT, -EOPNOTSUPP, -EINVAL, -EBADF, -ENOMEM
 * (the kernel could not allocate its handle/point arrays).
 */
SB_EXPORT int sb_syncobj_query(int drm_fd, uint32_t handle, uint64_t *point);

/** Flags for sb_syncobj_wait() and sb_syncobj_waiter_create(). */
enum sb_syncobj_wait_flags {
	/** Wait only until the point has a fence (materialised), not until it signals. */
	SB_SYNCOBJ_WAIT_AVAILABLE = 1 << 0,
};

/**
 * Wait on the CPU for `point` to signal (or, with SB_SYNCOBJ_WAIT_AVAILABLE,
 * to materialise). A point that has not materialised yet is waited for.
 * drm_fd: borrowed. timeout_ns: relative (SB_TIMEOUT_INFINITE, 0 = poll).
 * Returns 0, -ETIME, -ENOENT, -EOPNOTSUPP, -EINVAL, -EBADF, -ENOMEM (the
 * kernel could not allocate its handle/point arrays or wait entries).
 * A fence that completed with an error counts as signalled here: the DRM wait
 * ioctls report no fence status. To see the error, export the point
 * (sb_syncobj_export_sync_file()) and use sb_sync_file_wait() or
 * sb_sync_file_get_status() on it.
 */
SB_EXPORT int sb_syncobj_wait(int drm_fd, uint32_t handle, uint64_t point, int64_t timeout_ns,
			      uint32_t flags);

/**
 * An asynchronous waiter: a pollable fd that becomes readable (POLLIN) once
 * `point` signals (or materialises, with SB_SYNCOBJ_WAIT_AVAILABLE), exactly
 * once. It uses DRM_IOCTL_SYNCOBJ_EVENTFD (Linux 6.6) when the kernel has it;
 * otherwise a helper thread performs the wait and writes the same eventfd
 * (set SYNCBRIDGE_SYNCOBJ_EVENTFD=0 to force that fallback). The library's
 * helper threads are shared: each waits for up to 64 waiters of one DRM fd
 * at once (1,000 pending waiters: 16 threads), and stops with its last.
 * After fork() the child's new waiters get threads of their own; a fallback
 * waiter inherited from the parent never fires in the child (its thread is
 * the parent's), and destroying it there only frees the child's copy. The
 * child's waiters allocate, as glibc allows after fork(); an allocator that
 * takes no locks around fork() (GCC 12's AddressSanitizer) can hang such a
 * child when a helper thread of the parent was inside it at the fork.
 *
 * The two paths agree on everything the library can see:
 *  - a fence that completed with an error fires like any other (get_error()
 *    0): the kernel reports no fence status through syncobjs; export the
 *    point and ask the sync_file (sb_sync_file_wait()) to see the error;
 *  - the thread path's wait failing for good (the syncobj destroyed, the DRM
 *    fd closed) fires too, and sb_syncobj_waiter_get_error() says why; an
 *    ENOMEM from the kernel is retried, not reported.
 * One thing only the thread path can see: if the syncobj is destroyed
 * before the point signals, the kernel path's registration is dropped by
 * the kernel (drm_syncobj_free()) without signalling the eventfd, so that
 * waiter never fires. Keep the syncobj alive until the waiter is destroyed.
 */
struct sb_syncobj_waiter;

/**
 * Create a waiter. drm_fd: borrowed, and must stay open until the waiter is
 * destroyed (the fallback thread uses it). On success *out is owned by the
 * caller (sb_syncobj_waiter_destroy()); on failure *out is NULL.
 * Returns 0, -ENOENT, -EOPNOTSUPP, -EINVAL, -EBADF, -EMFILE, -ENOMEM, -EAGAIN
 * (no thread could be started).
 */
SB_EXPORT int sb_syncobj_waiter_create(int drm_fd, uint32_t handle, uint64_t point,
				       uint32_t flags, struct sb_syncobj_waiter **out);

/**
 * The waiter's pollable fd (an eventfd, non-blocking, close-on-exec).
 * Owned by the waiter: do not close it; it is valid until the waiter is
 * destroyed. Reading it returns 1 once the point fired; poll it for POLLIN.
 */
SB_EXPORT int sb_syncobj_waiter_get_fd(const struct sb_syncobj_waiter *waiter);

/** Whether the waiter is served by the kernel's eventfd (true) or the fallback thread (false, also for NULL). */
SB_EXPORT bool sb_syncobj_waiter_uses_eventfd(const struct sb_syncobj_waiter *waiter);

/**
 * Why the waiter fired without its point signalling: 0 while it waits and
 * after a normal fire; a negative errno once its wait failed for good (thread
 * path only — e.g. -ENOENT: the syncobj was destroyed; -EBADF / -EINVAL: the
 * DRM fd was closed or reused). Check it when the fd becomes readable.
 */
SB_EXPORT int sb_syncobj_waiter_get_error(const struct sb_syncobj_waiter *waiter);

/**
 * Destroy a waiter, stopping its thread if it has one and closing its fd.
 * NULL is a no-op.
 */
SB_EXPORT void sb_syncobj_waiter_destroy(struct sb_syncobj_waiter *waiter);

#ifdef __cplusplus
}
#endif

#endif
