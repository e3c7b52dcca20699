/* SPDX-License-Identifier: MIT */
/*
 * Foreign fences (include/syncbridge/egl.h, docs/egl.md "Foreign fences"):
 * whether a GPU-side wait for another driver's pending fence blocks the
 * calling thread on a display, per driver, and the non-blocking path — the
 * fence a caller on an event loop polls before it makes GL wait.
 */
#include <syncbridge/egl.h>

#include <EGL/eglext.h>
#include <drm.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>

#include "egl_internal.h"
#include "log.h"
#include "sync_file_internal.h"
#include "trace.h"
#include "util.h"

/* EGL_EXT_device_drm_render_node (eglext.h before 2021 lacks it). */
#ifndef EGL_DRM_RENDER_NODE_FILE_EXT
#define EGL_DRM_RENDER_NODE_FILE_EXT 0x3377
#endif

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
egl_foreign_probe(EGLDisplay dpy, const char *client_exts, struct display_info *info)
{
	PFNEGLQUERYDISPLAYATTRIBEXTPROC query_display = NULL;
	PFNEGLQUERYDEVICESTRINGEXTPROC query_device = NULL;
	EGLAttrib attr = 0;
	const char *dev_exts = NULL, *node = NULL;
	bool software = false;
	int ret = -ENOTSUP;

	info->driver[0] = '\0';
	if (egl_has_extension(client_exts, "EGL_EXT_device_query") ||
	    egl_has_extension(client_exts, "EGL_EXT_device_base")) {
		query_display = (PFNEGLQUERYDISPLAYATTRIBEXTPROC)eglGetProcAddress(
			"eglQueryDisplayAttribEXT");
		query_device = (PFNEGLQUERYDEVICESTRINGEXTPROC)eglGetProcAddress(
			"eglQueryDeviceStringEXT");
	}
	if (query_display && query_device && query_display(dpy, EGL_DEVICE_EXT, &attr) && attr) {
		EGLDeviceEXT dev = (EGLDeviceEXT)attr;

		dev_exts = query_device(dev, EGL_EXTENSIONS);
		software = egl_has_extension(dev_exts, "EGL_MESA_device_software");
		if (!software && egl_has_extension(dev_exts, "EGL_EXT_device_drm_render_node"))
			node = query_device(dev, EGL_DRM_RENDER_NODE_FILE_EXT);
		if (node)
			ret = node_driver(node, info->driver, sizeof(info->driver));
		if (ret && node)
			sb_debug("egl: display %p: no driver for its device %s (%s)", (void *)dpy, node,
				 strerror(-ret));
	}
	(void)eglGetError(); /* a failed query leaves an error the caller does not expect */
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

/*
 * Whether making GL wait for the (validated) sync_file would block the
 * calling thread on this display: 1 or 0, or -errno. The rules: egl.h.
 * status: the sync_file's, as SYNC_IOC_FILE_INFO gave it (0: pending) — a
 * completed one blocks nothing, and needs no look at its fences.
 */
static int
would_block(const struct display_info *d, int sync_file_fd, int32_t status)
{
	struct sb_sync_file_info *info = NULL;
	int ret, block = 0;

	if ((d->caps & (SB_EGL_CAP_DISABLED | SB_EGL_CAP_FOREIGN_WAIT_ASYNC)) || status != 0)
		return 0;
	ret = sb_sync_file_info_create(sync_file_fd, &info);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < info->num_fences && !block; i++) {
		const struct sb_fence_info *f = &info->fences[i];

		/* Signalled, or completed with an error (the wait says so at once). */
		if (f->status != 0)
			continue;
		if (d->own_fences_async && strcmp(f->driver, d->driver) == 0)
			continue;
		block = 1;
	}
	sb_sync_file_info_destroy(info);
	return block;
}

/* Hand out a duplicate of fd when a wait for it would block. */
static int
export_if_blocking(const struct display_info *d, int fd, int32_t status, int *out_fd)
{
	int ret = would_block(d, fd, status);

	if (ret <= 0)
		return ret;
	ret = sb_fd_dup(fd);
	if (ret < 0)
		return ret;
	*out_fd = ret;
	return 0;
}

int
sb_egl_sync_file_export_blocking(EGLDisplay dpy, int sync_file_fd, int *out_fd)
{
	struct display_info d;
	int32_t status = 1;
	int ret;

	if (!out_fd)
		return -EINVAL;
	*out_fd = -1;
	if (sync_file_fd != -1) {
		/* The check reads the status too: a signalled fence costs one ioctl. */
		ret = sb_sync_file_check(sync_file_fd, &status, NULL);
		if (ret)
			return ret;
	}
	ret = egl_display_get(dpy, &d);
	if (ret || sync_file_fd == -1)
		return ret;
	ret = export_if_blocking(&d, sync_file_fd, status, out_fd);
	sb_trace("egl.sync_file_export_blocking ret=%d blocks=%d %s", ret, *out_fd >= 0,
		 sb_trace_sync_file(sync_file_fd).s);
	return ret;
}

int
sb_egl_dmabuf_export_blocking(EGLDisplay dpy, int dmabuf_fd, enum sb_access access, int *out_fd)
{
	struct display_info d;
	int fence_fd = -1, ret;

	if (!out_fd)
		return -EINVAL;
	*out_fd = -1;
	ret = sb_fd_check_open(dmabuf_fd);
	if (ret)
		return ret;
	if (!sb_dmabuf_is_dmabuf(dmabuf_fd) ||
	    (access != SB_ACCESS_READ && access != SB_ACCESS_WRITE))
		return -EINVAL;
	ret = egl_display_get(dpy, &d);
	if (ret)
		return ret;
	if (d.caps & (SB_EGL_CAP_DISABLED | SB_EGL_CAP_FOREIGN_WAIT_ASYNC))
		return 0; /* nothing to export: no wait can block */

	ret = sb_dmabuf_export_sync_file(dmabuf_fd, access, &fence_fd);
	if (ret)
		return ret;
	ret = would_block(&d, fence_fd, 0); /* status not read: the fences are looked at */
	sb_trace("egl.dmabuf_export_blocking buf_ino=%lu ret=%d blocks=%d %s",
		 sb_trace_ino(dmabuf_fd), ret < 0 ? ret : 0, ret > 0, sb_trace_sync_file(fence_fd).s);
	if (ret > 0) {
		*out_fd = fd_move(&fence_fd);
		ret = 0;
	}
	fd_clear(&fence_fd);
	return ret;
}
