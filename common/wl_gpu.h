/* SPDX-License-Identifier: MIT */
/*
 * Kernel objects the Wayland examples need, made without a GPU driver:
 * dumb buffers exported as dma-bufs (vgem or virtio_gpu card nodes) and
 * vgem fences as sync_files. 0 / fd on success, -errno on failure; every fd
 * is close-on-exec.
 */
#ifndef SB_COMMON_WL_GPU_H
#define SB_COMMON_WL_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h" /* now_ns() */

/* The first /dev/dri node (card or render) whose driver is `driver`; -ENODEV if none. */
int wlgpu_drm_open(const char *driver, bool render);

/* The first render node whose driver has timeline syncobjs (DRM_CAP_SYNCOBJ_TIMELINE); -ENODEV if none. */
int wlgpu_drm_open_syncobj(void);

/* A dumb buffer (XRGB8888-sized) as a dma-buf with a CPU mapping. */
struct wlgpu_dumb {
	int drm_fd;      /* borrowed card node */
	uint32_t handle;
	int fd;          /* the dma-buf */
	uint32_t width, height, stride;
	size_t size;
	uint32_t *map;
};

int wlgpu_dumb_create(int card_fd, uint32_t width, uint32_t height, struct wlgpu_dumb *out);
void wlgpu_dumb_destroy(struct wlgpu_dumb *b);

/*
 * A pending vgem fence as a sync_file: a private 4 KiB vgem buffer gets a
 * write fence, exported with DMA_BUF_IOCTL_EXPORT_SYNC_FILE. It signals on
 * wlgpu_fence_signal(), or by itself after ~10 s (vgem's timeout).
 */
struct wlgpu_fence {
	int vgem_fd;     /* borrowed */
	struct wlgpu_dumb bo;
	uint32_t fence_id;
	bool signalled;
	int sync_file;   /* owned */
};

int wlgpu_fence_create(int vgem_fd, struct wlgpu_fence *out);
int wlgpu_fence_signal(struct wlgpu_fence *f);
void wlgpu_fence_destroy(struct wlgpu_fence *f);

#endif
