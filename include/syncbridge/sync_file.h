/* SPDX-License-Identifier: MIT */
/*
 * sync_file: a file descriptor that stands for one or more kernel dma_fences
 * (drivers/dma-buf/sync_file.c). It becomes readable (POLLIN) once every
 * fence in it has signalled.
 *
 * Fence status follows the kernel's SYNC_IOC_FILE_INFO: 1 signalled,
 * 0 active (pending), negative errno the fence completed with an error.
 */
#ifndef SYNCBRIDGE_SYNC_FILE_H
#define SYNCBRIDGE_SYNC_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <syncbridge/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One fence inside a sync_file. */
struct sb_fence_info {
	char driver[32];   /**< driver implementing the fence, e.g. "vgem" */
	char timeline[32]; /**< name of the fence's timeline (context) */
	int32_t status;    /**< 1 signalled, 0 active, < 0 error */
	uint64_t timestamp_ns; /**< CLOCK_MONOTONIC signal time, 0 while active */
};

#if defined(__cplusplus) && defined(__GNUC__)
/* The flexible array member is C99; C++ compilers accept it as an extension. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
/** Snapshot of a sync_file, as returned by sb_sync_file_info_create(). */
struct sb_sync_file_info {
	char name[32];       /**< the sync_file's own name */
	int32_t status;      /**< aggregate: 1 all signalled, 0 some active, < 0 error */
	uint32_t num_fences; /**< entries in fences[] */
	struct sb_fence_info fences[]; /**< flexible array, num_fences entries */
};
#if defined(__cplusplus) && defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/**
 * Whether fd is an open sync_file (answers SYNC_IOC_FILE_INFO).
 * fd: borrowed; never closed.
 */
SB_EXPORT bool sb_sync_file_is_valid(int fd);

/**
 * Wait until every fence in the sync_file has signalled.
 * fd: borrowed; never closed.
 * timeout_ns: relative timeout, SB_TIMEOUT_INFINITE or 0 to poll.
 * Returns 0 once all fences signalled without error; -ETIME if the timeout
 * expired first; the (negative) error a fence completed with, if one did;
 * -EBADF if fd is not open; -EINVAL if fd is not a sync_file.
 * Cost: one SYNC_IOC_FILE_INFO (it checks fd, and a signalled fence needs
 * no more), a poll() of fd, and one more SYNC_IOC_FILE_INFO after the
 * wake-up, which is how the error is read (poll() reports an errored fence
 * as signalled). A caller in an event loop that does not need the error can
 * poll a sync_file it has checked (POLLIN) itself and skip that query
 * (docs/performance.md, figure 3).
 */
SB_EXPORT int sb_sync_file_wait(int fd, int64_t timeout_ns);

/**
 * Aggregate status without waiting.
 * fd: borrowed. On success *status is 1 (signalled), 0 (active) or a negative
 * fence error. Returns 0, -EBADF or -EINVAL (not a sync_file).
 */
SB_EXPORT int sb_sync_file_get_status(int fd, int *status);

/**
 * Decode every fence in the sync_file.
 * fd: borrowed. On success *out is a new allocation to release with
 * sb_sync_file_info_destroy(); on failure *out is NULL.
 * Returns 0, -EBADF, -EINVAL (not a sync_file), -ENOMEM (ours, or the
 * kernel's copy of the fence array) or -EFAULT (the kernel could not copy
 * the fence array out; never seen).
 */
SB_EXPORT int sb_sync_file_info_create(int fd, struct sb_sync_file_info **out);

/** Free a result of sb_sync_file_info_create(). NULL is a no-op. */
SB_EXPORT void sb_sync_file_info_destroy(struct sb_sync_file_info *info);

/**
 * Merge two sync_files into a new one that signals when both have.
 * a, b: borrowed; never closed (they may be the same fd).
 * On success *out_fd is a new sync_file owned by the caller; on failure -1.
 * Returns 0, -EBADF, -EINVAL (an input is not a sync_file), -EMFILE, -ENOMEM.
 */
SB_EXPORT int sb_sync_file_merge(int a, int b, int *out_fd);

/**
 * Merge n sync_files (n >= 1) into one that signals when all have.
 * fds: borrowed; none is closed. With n == 1 the result is a duplicate.
 * On success *out_fd is a new sync_file owned by the caller; on failure -1.
 * Returns 0, -EINVAL (n == 0, NULL array, or an input is not a sync_file),
 * -EBADF, -EMFILE, -ENOMEM.
 */
SB_EXPORT int sb_sync_file_merge_array(const int *fds, size_t n, int *out_fd);

/**
 * Merge fd into an accumulator (Mesa's sync_accumulate semantics).
 * *acc_fd: owned by the caller before and after. If it is -1 it becomes a
 * duplicate of fd; otherwise it is replaced by the merge of itself and fd
 * and the old accumulator is closed — only after the merge succeeded.
 * fd: borrowed; never closed.
 * On failure *acc_fd is unchanged (still open, still owned by the caller).
 * Returns 0, -EBADF, -EINVAL, -EMFILE, -ENOMEM.
 */
SB_EXPORT int sb_sync_file_accumulate(int *acc_fd, int fd);

/**
 * Tell the fences' drivers the time by which they should signal
 * (SYNC_IOC_SET_DEADLINE, Linux 6.5+), so they can raise clocks.
 * fd: borrowed. deadline_ns: absolute CLOCK_MONOTONIC time.
 * A kernel without the ioctl is not an error: it is a hint (returns 0).
 * Returns 0, -EBADF or -EINVAL (not a sync_file).
 */
SB_EXPORT int sb_sync_file_set_deadline(int fd, uint64_t deadline_ns);

#ifdef __cplusplus
}
#endif

#endif
