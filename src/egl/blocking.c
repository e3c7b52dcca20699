/* SPDX-License-Identifier: MIT */
/*
 * The non-blocking path for foreign fences (include/syncbridge/egl.h,
 * docs/egl.md "Foreign fences"): the fence a caller on an event loop polls
 * before it makes GL wait, when the display's rule (foreign.c, read from the
 * probe's struct display_info) says that the wait would block its thread.
 */
#include <syncbridge/egl.h>

#include <string.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>

#include "egl_internal.h"
#include "sync_file_internal.h"
#include "trace.h"
#include "util.h"

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
sb_egl_sync_file_export_blocking_fence(EGLDisplay dpy, int sync_file_fd, int *out_fd)
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
sb_egl_dmabuf_export_blocking_fence(EGLDisplay dpy, int dmabuf_fd, enum sb_access access,
				    int *out_fd)
{
	struct display_info d;
	int fence_fd = -1, ret;

	if (!out_fd)
		return -EINVAL;
	*out_fd = -1;
	ret = sb_fd_check_open(dmabuf_fd);
	if (ret)
		return ret;
	if (!sb_dmabuf_is_valid(dmabuf_fd) ||
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
		 sb_trace_ino(dmabuf_fd), ret < 0 ? ret : 0, ret > 0,
		 sb_trace_sync_file(fence_fd).s);
	if (ret > 0) {
		*out_fd = fd_move(&fence_fd);
		ret = 0;
	}
	fd_clear(&fence_fd);
	return ret;
}
