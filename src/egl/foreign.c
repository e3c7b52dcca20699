/* SPDX-License-Identifier: MIT */
/*
 * Foreign fences (include/syncbridge/egl.h, docs/egl.md "Foreign fences"):
 * whether a GPU-side wait for another driver's pending fence blocks the
 * calling thread on a display, per kernel driver of its device. The probe
 * (display.c) hands the device over; this file calls nothing of the
 * bridge's. The non-blocking path built on it is blocking.c.
 */
#include <syncbridge/egl.h>

#include <drm.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "egl_internal.h"
#include "log.h"
#include "util.h"

/* include/uapi/drm/drm.h: "#define DRM_MAJOR 226". */
#define DRM_CHAR_MAJOR 226

/*
 * The rule, per kernel driver of the display's DRM device.
 *
 * virtio_gpu (Mesa virgl) blocks. drivers/gpu/drm/virtio/virtgpu_submit.c
 * (identical from 6.5, where the file appeared, to 6.12 and later):
 * virtio_gpu_execbuffer_ioctl() calls virtio_gpu_wait_in_fence() before it
 * submits ("Wait if the fence is from a foreign context, or if the fence
 * array contains any fence from a foreign context."), which for each fence
 * in the in-fence does
 *
 *     static int virtio_gpu_do_fence_wait(struct virtio_gpu_submit *submit,
 *                                         struct dma_fence *in_fence)
 *     {
 *             u32 context = submit->fence_ctx + submit->ring_idx;
 *
 *             if (dma_fence_match_context(in_fence, context))
 *                     return 0;
 *
 *             return dma_fence_wait(in_fence, true);
 *     }
 *
 * — a CPU wait in the submitting thread's ioctl. Mesa virgl hands an
 * imported native fence to the next execbuffer as its in-fence
 * (VIRTGPU_EXECBUF_FENCE_FD_IN), so eglWaitSyncKHR returns at once and the
 * next flush blocks (measured: egl-foreign-fence-control, docs/egl.md).
 * Its own fences share the device's fence context (Mesa virgl uses no
 * rings), so they are skipped: a wait for another virgl process's fence does
 * not block. A second virtio-gpu device's fences have the same driver name
 * and do block; SYNC_IOC_FILE_INFO does not say which device a fence is of.
 *
 * i915 and amdgpu queue in-fences as dependencies (read in the kernel's
 * source, not measured on this project's machines): i915_gem_do_execbuffer()
 * → eb_fences_add() → i915_request_await_dma_fence(rq, in_fence), a
 * callback on the fence; amdgpu_cs_ioctl() → amdgpu_syncobj_lookup_and_add()
 * → amdgpu_sync_fence(&p->sync, fence), turned into scheduler dependencies
 * of the job. Mesa's iris and radeonsi pass imported sync_files to the
 * kernel as syncobj waits.
 *
 * Every other driver: unknown (neither bit), and so is a display whose
 * device has no render node (EGL_EXT_device_drm_render_node). Software
 * renderers block, and so does every display without GPU-side waits: see
 * egl_foreign_rule().
 */
static const struct {
	const char *driver;
	uint32_t cap;
	bool own_fences_async;
} drivers[] = {
	{ "virtio_gpu", SB_EGL_CAP_FOREIGN_WAIT_BLOCKS, true },
	{ "i915", SB_EGL_CAP_FOREIGN_WAIT_ASYNC, true },
	{ "amdgpu", SB_EGL_CAP_FOREIGN_WAIT_ASYNC, true },
};

uint32_t
egl_foreign_rule(uint32_t caps, bool software, const char *driver, bool *own_fences_async)
{
	if (own_fences_async)
		*own_fences_async = false;
	/* No GPU-side wait: the bridge waits on the CPU, in the call. */
	if (!(caps & SB_EGL_CAP_GPU_WAIT))
		return SB_EGL_CAP_FOREIGN_WAIT_BLOCKS;
	/*
	 * llvmpipe's eglWaitSyncKHR on a pending imported fence blocks the
	 * calling thread until it signals (measured, Mesa 25 in the test guest:
	 * egl-foreign-fence-control on the software device).
	 */
	if (software)
		return SB_EGL_CAP_FOREIGN_WAIT_BLOCKS;
	for (size_t i = 0; driver && i < SB_ARRAY_SIZE(drivers); i++) {
		if (strcmp(driver, drivers[i].driver) == 0) {
			if (own_fences_async)
				*own_fences_async = drivers[i].own_fences_async;
			return drivers[i].cap;
		}
	}
	return 0;
}

/*
 * The kernel DRM driver's name of a render node (DRM_IOCTL_VERSION, what
 * drmGetVersion() asks). Only render nodes are opened: opening a primary
 * node can make this process DRM master. (sysfs is no help: a DRM device's
 * "device/driver" link names the bus driver — virtio-pci for virtio_gpu,
 * measured in the GPU guest.) 0 or -errno.
 */
static int
node_driver(const char *path, char *buf, size_t size)
{
	struct drm_version v;
	struct stat st;
	int fd, ret;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != DRM_CHAR_MAJOR)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	memset(&v, 0, sizeof(v));
	memset(buf, 0, size);
	v.name = buf;
	v.name_len = size - 1;
	ret = sb_ioctl(fd, DRM_IOCTL_VERSION, &v);
	close(fd);
	if (ret < 0)
		return ret;
	if (v.name_len >= size)
		return -ENAMETOOLONG;
	buf[v.name_len] = '\0';
	return 0;
}

void
egl_foreign_probe(EGLDisplay dpy, bool software, const char *node, struct display_info *info)
{
	int ret = -ENOTSUP;

	info->driver[0] = '\0';
	if (node)
		ret = node_driver(node, info->driver, sizeof(info->driver));
	if (ret && node)
		sb_debug("egl: display %p: no driver for its device %s (%s)", (void *)dpy, node,
			 strerror(-ret));
	if (ret)
		info->driver[0] = '\0';

	info->caps |= egl_foreign_rule(info->caps, software, info->driver,
				       &info->own_fences_async);
	sb_info("egl: display %p: device %s, driver %s: waits for other drivers' fences %s",
		(void *)dpy, software ? "software" : node ? node : "unknown",
		info->driver[0] ? info->driver : "unknown",
		(info->caps & SB_EGL_CAP_FOREIGN_WAIT_ASYNC) ? "are asynchronous" :
		(info->caps & SB_EGL_CAP_FOREIGN_WAIT_BLOCKS) ? "block the calling thread" :
		"may block (driver not known)");
}
