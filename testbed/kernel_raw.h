/* SPDX-License-Identifier: MIT */
/*
 * The tests' own view of the kernel's fences: raw DMA_BUF_IOCTL_EXPORT/
 * IMPORT_SYNC_FILE, dma-buf poll() and SYNC_IOC_FILE_INFO, by ioctl() and
 * not through libsyncbridge, so that a test reads what the kernel holds
 * independently of the code it tests. Test-only (testbed/): shipped
 * programs use the core's calls (sb_dmabuf_export_sync_file(),
 * sb_sync_file_info_create(), ...), the one implementation they ship.
 */
#ifndef TB_KERNEL_RAW_H
#define TB_KERNEL_RAW_H

#include <stdint.h>

/*
 * Raw DMA_BUF_IOCTL_EXPORT_SYNC_FILE (flags DMA_BUF_SYNC_READ/_WRITE).
 * dmabuf_fd: borrowed. 0 with *out_fd a new sync_file the caller owns, or
 * -errno with *out_fd -1.
 */
int tb_dmabuf_export_raw(int dmabuf_fd, uint32_t flags, int *out_fd);
/* Raw DMA_BUF_IOCTL_IMPORT_SYNC_FILE. Both fds borrowed, never closed; 0 or -errno. */
int tb_dmabuf_import_raw(int dmabuf_fd, uint32_t flags, int sync_file_fd);
/* poll() a dma-buf (borrowed) with timeout 0; returns the revents (POLLIN/POLLOUT) or -errno. */
int tb_dmabuf_poll_raw(int dmabuf_fd);

/*
 * Raw SYNC_IOC_FILE_INFO: the aggregate status and number of fences, and the
 * status of fence `index` (if fence_status is not NULL and index < count).
 * fd: borrowed, never closed. 0 or -errno (-ERANGE: no fence `index`).
 */
int tb_sync_file_info_raw(int fd, int *status, uint32_t *num_fences, uint32_t index,
			   int *fence_status);
/*
 * Raw SYNC_IOC_FILE_INFO with the fence entries: up to n of them into fences
 * (names NUL-terminated); their count, or -1 if fd is not a sync_file or
 * has more than n. fd: borrowed, never closed.
 */
struct sync_fence_info;
int tb_sync_file_fences(int fd, struct sync_fence_info *fences, uint32_t n);
/*
 * The latest signal time (CLOCK_MONOTONIC ns, the kernel's fence timestamps)
 * of the sync_file's fences, or 0 while one is pending or on error. fd:
 * borrowed, never closed.
 */
int64_t tb_sync_file_signal_time(int fd);

#endif
