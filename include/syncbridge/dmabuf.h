/* SPDX-License-Identifier: MIT */
/*
 * Implicit fences on dma-bufs.
 *
 * Each dma-buf carries a reservation object (struct dma_resv) that holds the
 * fences of everybody using the buffer: readers' fences ("shared") and
 * writers' fences ("exclusive"). The kernel exposes it to userspace as:
 *  - DMA_BUF_IOCTL_EXPORT_SYNC_FILE (Linux 6.0): a sync_file snapshot of the
 *    fences a reader (SB_ACCESS_READ: the writers) or a writer
 *    (SB_ACCESS_WRITE: everybody) would have to wait for;
 *  - DMA_BUF_IOCTL_IMPORT_SYNC_FILE (Linux 6.0): add a sync_file's fences as
 *    a read (shared) or write (exclusive) fence;
 *  - poll(): POLLIN once the writers are done, POLLOUT once everybody is.
 *
 * Kernels before 6.0: exporting and importing return -EOPNOTSUPP;
 * sb_dmabuf_wait() and sb_dmabuf_is_busy() always work (they use poll(),
 * available since Linux 3.17) and are the CPU-wait fallback that keeps the
 * ordering guarantee. The library learns "before 6.0" once per process, from
 * an ENOTTY answered by an fd that is still a dma-buf after the call; an
 * ENOTTY from an fd number that meanwhile names another file (closed and
 * reused by another thread) gives that call -EBADF / -EINVAL and teaches
 * nothing.
 *
 * Fence errors: poll() has no status, so sb_dmabuf_wait() and
 * sb_dmabuf_is_busy() treat a fence that completed with an error like one
 * that completed normally. To see the error, export the fences
 * (sb_dmabuf_export_sync_file()) and use sb_sync_file_wait() or
 * sb_sync_file_get_status() on the sync_file.
 */
#ifndef SYNCBRIDGE_DMABUF_H
#define SYNCBRIDGE_DMABUF_H

#include <stdbool.h>
#include <stdint.h>

#include <syncbridge/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Whether fd is an open dma-buf.
 * fd: borrowed; never closed.
 */
SB_EXPORT bool sb_dmabuf_is_valid(int fd);

/**
 * Export a sync_file holding the fences that a party wanting `access` must
 * wait for. It is a snapshot: fences added to the buffer later are not in it.
 * dmabuf_fd: borrowed; never closed.
 * On success *out_fd is a new sync_file owned by the caller (already
 * signalled if the buffer was idle); on failure -1.
 * Returns 0; -EBADF; -EINVAL (not a dma-buf, or bad access); -EOPNOTSUPP
 * (kernel older than 6.0: use sb_dmabuf_wait()); -EMFILE; -ENOMEM.
 */
SB_EXPORT int sb_dmabuf_export_sync_file(int dmabuf_fd, enum sb_access access, int *out_fd);

/**
 * Add the fences of a sync_file to the dma-buf: as a read (shared) fence
 * with SB_ACCESS_READ, or as a write (exclusive) fence with SB_ACCESS_WRITE.
 * Later readers then wait for write fences, later writers for both.
 * dmabuf_fd, sync_file_fd: borrowed; neither is closed, on success or failure
 * (the kernel takes its own reference to the fences).
 * Returns 0; -EBADF; -EINVAL (not a dma-buf / not a sync_file / bad access);
 * -EOPNOTSUPP (kernel older than 6.0: nothing was attached — the caller must
 * wait for the sync_file itself before others may use the buffer); -ENOMEM.
 */
SB_EXPORT int sb_dmabuf_import_sync_file(int dmabuf_fd, enum sb_access access, int sync_file_fd);

/**
 * Whether a party wanting `access` would have to wait now.
 * dmabuf_fd: borrowed. On success *busy is set.
 * Returns 0, -EBADF or -EINVAL (not a dma-buf / bad access).
 */
SB_EXPORT int sb_dmabuf_is_busy(int dmabuf_fd, enum sb_access access, bool *busy);

/**
 * Wait on the CPU until a party wanting `access` may use the buffer.
 * dmabuf_fd: borrowed. timeout_ns: relative (SB_TIMEOUT_INFINITE, 0 = poll).
 * Returns 0 (also when a fence completed with an error: see above), -ETIME,
 * -EBADF or -EINVAL (not a dma-buf / bad access).
 */
SB_EXPORT int sb_dmabuf_wait(int dmabuf_fd, enum sb_access access, int64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif
