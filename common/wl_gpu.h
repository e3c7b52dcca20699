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
#include "kernel.h" /* struct sbk_fence */

/* The first /dev/dri node (card or render) whose driver is `driver`; -ENODEV if none. */
int wlgpu_drm_open(const char *driver, bool render);

/*
 * The first render node whose driver has timeline syncobjs
 * (DRM_CAP_SYNCOBJ_TIMELINE); -ENODEV if none.
 */
int wlgpu_drm_open_syncobj(void);

/* A dumb buffer (XRGB8888-sized) as a dma-buf with a CPU mapping. */
struct wlgpu_dumb {
	int drm_fd;      /* borrowed card node */
	uint32_t handle;
	int fd;          /* the dma-buf */
	uint32_t width, height, stride;
	size_t size;
	uint32_t *map;
	bool virtio_gpu; /* the card is virtio_gpu: CPU writes need wlgpu_dumb_flush() */
};

int wlgpu_dumb_create(int card_fd, uint32_t width, uint32_t height, struct wlgpu_dumb *out);
void wlgpu_dumb_destroy(struct wlgpu_dumb *b);

/*
 * After CPU writes through b->map: make them what the GPU reads. On
 * virtio_gpu with virgl the host keeps its own copy of the resource, which a
 * compositor's EGL import samples; the guest pages reach it only through
 * DRM_IOCTL_VIRTGPU_TRANSFER_TO_HOST (what Mesa's virgl winsys issues after a
 * mapped write; the kernel does it itself only for KMS scanout of dumb
 * buffers). Queued, not waited for: the host runs it before any later
 * command. A no-op on other drivers (vgem's pages are the buffer). 0 / -errno.
 */
int wlgpu_dumb_flush(struct wlgpu_dumb *b);

/*
 * The examples' vgem fences are common/kernel.h's sbk_fence: make one with
 * sbk_fence_create(vgem_fd, true, &f), close it with sbk_fence_destroy().
 * Signal it here: a fence left pending ~10 s signals itself (vgem's
 * timeout) and the kernel then refuses FENCE_SIGNAL with -ETIMEDOUT, which
 * for a renderer that was merely slow is success, not an error. 0 / -errno.
 * expired (may be NULL): set to whether vgem had signalled it itself — a
 * client that judges the frame's order needs to know.
 */
int wlgpu_fence_signal(struct sbk_fence *f, bool *expired);

#endif
