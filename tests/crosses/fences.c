/* SPDX-License-Identifier: MIT */
/*
 * Fence cells: each driver produces a fence as a sync_file, and each importer
 * takes it in and waits for it its own way. A fresh fence per cell.
 *
 * "ok pending" / "ok signalled": the import worked, and the importer's wait
 * returned only once the fence had signalled — its status, read as soon as
 * the wait returned, is signalled, and for a vgem fence (which this program
 * signals 300 ms after the import began, from another thread) the wait
 * returned after the signal had started. "pending"/"signalled" is the fence's
 * state when it crossed (read just before the import): software drivers'
 * fences have signalled by the time they are exported. An importer whose wait
 * returns while the fence is still pending is "ERR early".
 */
#include "crosses.h"
#include "kernel_raw.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include <drm.h>
#include <virtgpu_drm.h>

#include "vmtest.h"

#define SIGNAL_DELAY_NS (300 * MS)
#define WAIT_MS 20000 /* a hang guard: every wait here ends in ms, or 300 ms (vgem) */
#define VIRGL_TRIES 3

enum how { I_POLL, I_DMABUF, I_VK, I_GL, I_SYNCOBJ };

static const struct {
	const char *name;
	enum xdrv needs; /* XD_COUNT: nothing */
	enum how how;
} importers[] = {
	{ "sync_file", XD_COUNT, I_POLL },
	{ "dmabuf/vgem", XD_VGEM, I_DMABUF },
	{ "dmabuf/udmabuf", XD_UDMABUF, I_DMABUF },
	{ "dmabuf/virtio_gpu", XD_VIRTIO, I_DMABUF },
	{ "dmabuf/lavapipe", XD_LAVAPIPE, I_DMABUF },
	{ "dmabuf/llvmpipe", XD_LLVMPIPE, I_DMABUF },
	{ "dmabuf/virgl", XD_VIRGL, I_DMABUF },
	{ "lavapipe", XD_LAVAPIPE, I_VK },
	{ "llvmpipe", XD_LLVMPIPE, I_GL },
	{ "virgl", XD_VIRGL, I_GL },
	{ "syncobj/virtio_gpu", XD_VIRTIO, I_SYNCOBJ },
	{ "syncobj/vgem", XD_VGEM, I_SYNCOBJ },
};

/* The importer's name in the table: the Vulkan column is named for its driver. */
static const char *
importer_name(size_t i)
{
	static char name[64];

	if (importers[i].needs != XD_LAVAPIPE)
		return importers[i].name;
	snprintf(name, sizeof(name), "%s%s", importers[i].how == I_DMABUF ? "dmabuf/" : "",
		 xdrv_name(XD_LAVAPIPE));
	return name;
}

struct xfence {
	int fd; /* the sync_file, or -1 */
	struct xres export;
	bool is_vgem;
	struct sbk_fence vgem; /* owns fd when is_vgem */
};

/*
 * virtio_gpu's own fence: an EXECBUFFER whose batch is one VIRGL_CCMD_NOP
 * (a zero header: command 0, no payload), with an out-fence. The kernel
 * refuses EXECBUFFER without 3D (ENOSYS), which is what the 2D guest shows.
 */
static int
virtio_fence(struct xenv *e, struct xres *r)
{
	uint32_t nop = 0;
	struct drm_virtgpu_execbuffer eb = {
		.flags = VIRTGPU_EXECBUF_FENCE_FD_OUT,
		.size = sizeof(nop),
		.command = (uint64_t)(uintptr_t)&nop,
		.fence_fd = -1,
	};
	int ret = sbk_ioctl(e->virtio_render, DRM_IOCTL_VIRTGPU_EXECBUFFER, &eb);

	if (ret < 0) {
		xres_errno(r, "VIRTGPU_EXECBUFFER", ret);
		return -1;
	}
	xres_set(r, "ok");
	xres_cloexec(r, eb.fence_fd, "the out-fence fd");
	return eb.fence_fd;
}

/* virgl: a native fence after long draws; again, longer, if it had signalled already. */
static int
virgl_fence(struct xenv *e, struct xres *r)
{
	struct xgl *g = xenv_gl(e, XD_VIRGL);
	int iters = e->virgl_iters, fd = -1;

	for (int i = 0; i < VIRGL_TRIES; i++, iters *= 2) {
		fd = xgl_fence_export(g, iters, r);
		if (fd < 0 || xsync_status(fd, NULL, 0) == 0 || i + 1 == VIRGL_TRIES)
			break;
		close(fd);
		glFinish();
	}
	return fd;
}

static void
fence_export(struct xenv *e, enum xdrv d, struct xfence *f)
{
	int ret;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	switch (d) {
	case XD_VGEM:
		ret = sbk_fence_create(e->vgem, true, &f->vgem);
		if (ret < 0) {
			xres_errno(&f->export, "vgem fence", ret);
			break;
		}
		f->is_vgem = true;
		f->fd = f->vgem.sync_file;
		xres_set(&f->export, "ok");
		break;
	case XD_VIRTIO:
		f->fd = virtio_fence(e, &f->export);
		break;
	case XD_LAVAPIPE:
		f->fd = xvk_fence_export(e, &f->export);
		break;
	case XD_LLVMPIPE:
		f->fd = xgl_fence_export(xenv_gl(e, d), 0, &f->export);
		break;
	case XD_VIRGL:
		f->fd = virgl_fence(e, &f->export);
		break;
	default:
		xres_set(&f->export, "ERR no fence exporter");
	}
}

static void
fence_free(struct xfence *f)
{
	if (f->is_vgem) {
		sbk_fence_signal(&f->vgem);
		sbk_fence_destroy(&f->vgem);
	} else if (f->fd >= 0) {
		close(f->fd);
	}
	f->fd = -1;
}

static void
poll_wait(int fd, const char *step, struct xres *r)
{
	int revents = vm_poll(fd, POLLIN, WAIT_MS);

	if (revents < 0)
		xres_errno(r, step, revents);
	else if (!(revents & POLLIN))
		xres_set(r, "ERR %s timeout", step);
	else
		xres_set(r, "ok");
}

/* The kernel's own fence container: import the sync_file into a new syncobj, wait. */
static void
syncobj_wait(int drm_fd, int sync_file, struct xres *r)
{
	struct drm_syncobj_create create = { 0 };
	struct drm_syncobj_handle import = {
		.flags = DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE,
		.fd = sync_file, /* borrowed: the kernel takes its own reference to the fence */
	};
	struct drm_syncobj_wait wait = { .count_handles = 1 };
	struct drm_syncobj_destroy destroy = { 0 };
	int ret = sbk_ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_CREATE, &create);

	if (ret < 0) {
		xres_errno(r, "SYNCOBJ_CREATE", ret);
		return;
	}
	import.handle = create.handle;
	ret = sbk_ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &import);
	if (ret < 0) {
		xres_errno(r, "SYNCOBJ_FD_TO_HANDLE", ret);
	} else {
		wait.handles = (uint64_t)(uintptr_t)&create.handle;
		wait.timeout_nsec = xnow() + (int64_t)WAIT_MS * MS;
		ret = sbk_ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_WAIT, &wait);
		if (ret < 0)
			xres_errno(r, "SYNCOBJ_WAIT", ret);
		else
			xres_set(r, "ok");
	}
	destroy.handle = create.handle;
	sbk_ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_DESTROY, &destroy);
}

static void
import_wait(struct xenv *e, const struct xbuf *bufs, int i, int sync_file, struct xres *r)
{
	int ret;

	switch (importers[i].how) {
	case I_POLL:
		poll_wait(sync_file, "poll(sync_file)", r);
		break;
	case I_DMABUF:
		/* The buffer's write fences now include this one: a poll()er waits for it. */
		ret = tb_dmabuf_import_raw(bufs[importers[i].needs].fd, DMA_BUF_SYNC_WRITE, sync_file);
		if (ret < 0)
			xres_errno(r, "IMPORT_SYNC_FILE", ret);
		else
			poll_wait(bufs[importers[i].needs].fd, "poll(dma-buf)", r);
		break;
	case I_VK:
		xvk_fence_wait(e, sync_file, r);
		break;
	case I_GL:
		xgl_fence_wait(xenv_gl(e, importers[i].needs), sync_file, r);
		break;
	case I_SYNCOBJ:
		syncobj_wait(importers[i].needs == XD_VGEM ? e->vgem : e->virtio_render, sync_file, r);
		break;
	}
}

static void
fence_cell(struct xenv *e, const struct xbuf *bufs, enum xdrv d, int i)
{
	enum xdrv needs = importers[i].needs;
	struct vm_later later;
	struct xfence f;
	struct xres r;
	char what[96];
	int before, after;
	int64_t t0, t_done;

	xres_set(&r, "not here");
	if (!e->here[d]) {
		xres_note(&r, "%s", e->why[d]);
		goto out;
	}
	if (needs != XD_COUNT && !e->here[needs]) {
		xres_note(&r, "%s", e->why[needs]);
		goto out;
	}
	if (importers[i].how == I_DMABUF && xres_failed(&bufs[needs].export)) {
		r = bufs[needs].export; /* no buffer to import into: the exporter's error */
		goto out;
	}
	fence_export(e, d, &f);
	if (xres_failed(&f.export)) {
		r = f.export;
		goto out;
	}
	before = xsync_status(f.fd, what, sizeof(what));
	if (f.is_vgem)
		vm_later_start(&later, SIGNAL_DELAY_NS, vm_later_signal_fence, &f.vgem);
	t0 = xnow();
	import_wait(e, bufs, i, f.fd, &r);
	t_done = xnow();
	/* Read before the signalling thread is joined: it says what the wait's return proves. */
	after = xsync_status(f.fd, NULL, 0);
	if (f.is_vgem)
		vm_later_join(&later);
	if (!xres_failed(&r)) {
		if (after != 1 || (f.is_vgem && t_done < later.start_ns)) {
			xres_set(&r, "ERR early");
			xres_note(&r, "the wait returned while the fence was pending (status %d)", after);
		} else {
			xres_set(&r, before == 0 ? "ok pending" : "ok signalled");
		}
	}
	if (xres_failed(&r) && strcmp(r.head, "ERR early") != 0)
		xres_note(&r, "%s", what);
	else
		xres_note(&r, "%s, waited %.0f ms", what, (double)(t_done - t0) / 1e6);
	if (f.export.note[0])
		xres_note(&r, "export: %s", f.export.note);
	fence_free(&f);
out:
	xcell(xdrv_name(d), importer_name(i), "fence", &r);
}

void
xfences_run(struct xenv *e, struct xbuf *bufs)
{
	for (int d = 0; d < XD_COUNT; d++) {
		if (d == XD_UDMABUF)
			continue; /* no engine, no fence of its own */
		for (size_t i = 0; i < sizeof(importers) / sizeof(importers[0]); i++)
			fence_cell(e, bufs, d, (int)i);
	}
}
