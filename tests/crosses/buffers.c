/* SPDX-License-Identifier: MIT */
/*
 * Buffer cells: each importer imports each exporter's dma-buf (export.c) and
 * reads the image back. "ok" means the import worked and every byte read back
 * is the exporter's value (vgem, which cannot read, is judged otherwise:
 * below).
 */
#include "crosses.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include <drm.h>
#include <drm_mode.h>

#include "kernel.h"
#include "kernel_raw.h"

/* The buffer importers and the driver each needs (XD_COUNT: none, the CPU). */
static const struct {
	const char *name;
	enum xdrv needs;
} importers[] = {
	{ "cpu", XD_COUNT },           { "vgem", XD_VGEM },         { "virtio_gpu", XD_VIRTIO },
	{ "lavapipe", XD_LAVAPIPE },   { "llvmpipe", XD_LLVMPIPE }, { "virgl", XD_VIRGL },
};

/*
 * The image's rows at base (b's stride and offset) into rgba, those that lie
 * within the dma-buf's size: a virgl texture's dma-buf can be smaller than its
 * image (the image lives on the host); rows past the end stay 0 in rgba.
 */
static void
copy_rows(const struct xbuf *b, const uint8_t *base, uint8_t *rgba, struct xres *r)
{
	int y;

	for (y = 0; y < XH; y++) {
		size_t at = (size_t)b->offset + (size_t)y * (size_t)b->stride;

		if (at + XROW > b->size)
			break;
		memcpy(rgba + (size_t)y * XROW, base + at, XROW);
	}
	if (y < XH)
		xres_note(r, "the dma-buf has %zu bytes: %d of the image's %d rows", b->size, y, XH);
}

static bool
cpu_read(const struct xbuf *b, uint8_t *rgba, struct xres *r)
{
	struct dma_buf_sync sync = { .flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ };
	size_t image = (size_t)b->offset + (size_t)(XH - 1) * (size_t)b->stride + XROW;
	const char *whole = NULL;
	void *map;
	int ret = 0;

	/* What a consumer that maps the image's extent gets from a smaller dma-buf. */
	if (image > b->size) {
		map = mmap(NULL, image, PROT_READ, MAP_SHARED, b->fd, 0);
		whole = map == MAP_FAILED ? strerrorname_np(errno) : "ok";
		if (map != MAP_FAILED)
			munmap(map, image);
	}
	map = mmap(NULL, b->size, PROT_READ, MAP_SHARED, b->fd, 0);
	if (map == MAP_FAILED) {
		xres_errno(r, "mmap", errno);
	} else {
		ret = sbk_ioctl(b->fd, DMA_BUF_IOCTL_SYNC, &sync);
		if (ret == 0) {
			xres_set(r, "ok");
			copy_rows(b, map, rgba, r);
			sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ;
			sbk_ioctl(b->fd, DMA_BUF_IOCTL_SYNC, &sync);
		} else {
			xres_errno(r, "DMA_BUF_IOCTL_SYNC", ret);
		}
		munmap(map, b->size);
	}
	if (whole)
		xres_note(r, "mmap of the image's %zu bytes: %s", image, whole);
	return map != MAP_FAILED && ret == 0;
}

/* A GEM handle for b on a card node, and whether it is the exporter's own (not to close). */
static int
prime_import(int drm_fd, const struct xbuf *b, uint32_t *handle, bool *own, struct xres *r)
{
	struct drm_prime_handle prime = { .fd = b->fd };
	int ret = sbk_ioctl(drm_fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &prime);

	if (ret < 0) {
		xres_errno(r, "PRIME_FD_TO_HANDLE", ret);
		return ret;
	}
	*handle = prime.handle;
	*own = drm_fd == b->drm_fd && prime.handle == b->handle;
	return 0;
}

static void
gem_close(int drm_fd, uint32_t handle, bool own)
{
	struct drm_gem_close gc = { .handle = handle };

	if (!own)
		sbk_ioctl(drm_fd, DRM_IOCTL_GEM_CLOSE, &gc);
}

/* Read b through a handle on a card node (MAP_DUMB); -errno with r set on failure. */
static int
map_dumb_read(int drm_fd, uint32_t handle, const struct xbuf *b, uint8_t *rgba, struct xres *r)
{
	struct drm_mode_map_dumb map = { .handle = handle };
	int ret = sbk_ioctl(drm_fd, DRM_IOCTL_MODE_MAP_DUMB, &map);
	void *p;

	if (ret < 0) {
		xres_errno(r, "MODE_MAP_DUMB", ret);
		return ret;
	}
	p = mmap(NULL, b->size, PROT_READ, MAP_SHARED, drm_fd, (off_t)map.offset);
	if (p == MAP_FAILED) {
		ret = -errno;
		xres_errno(r, "mmap", ret);
		return ret;
	}
	xres_set(r, "ok");
	copy_rows(b, p, rgba, r);
	munmap(p, b->size);
	return 0;
}

/*
 * vgem has no engine, and drm_gem_dumb_map_offset() refuses to map an
 * imported object (EINVAL), so vgem cannot read a foreign buffer. What is
 * checked instead: the handle is the buffer — a vgem fence attached through
 * it is pending on the exporter's dma-buf (they share one reservation object).
 * Where MAP_DUMB works (vgem's own buffer), the data is checked too.
 */
static bool
vgem_import(struct xenv *e, const struct xbuf *b, uint8_t *rgba, struct xres *r)
{
	struct xres map_res;
	uint32_t handle, id;
	char what[96] = "no sync_file"; /* printed when the export failed */
	bool own, read;
	int sf = -1, status, ret;

	if (prime_import(e->vgem, b, &handle, &own, r) < 0)
		return false;
	read = map_dumb_read(e->vgem, handle, b, rgba, &map_res) == 0;
	ret = sbk_vgem_fence_attach(e->vgem, handle, false, &id);
	if (ret < 0) {
		xres_errno(r, "VGEM_FENCE_ATTACH", ret);
		gem_close(e->vgem, handle, own);
		return false;
	}
	ret = tb_dmabuf_export_raw(b->fd, DMA_BUF_SYNC_WRITE, &sf);
	status = ret < 0 ? ret : xsync_status(sf, what, sizeof(what));
	sbk_vgem_fence_signal(e->vgem, id);
	if (sf >= 0)
		close(sf);
	gem_close(e->vgem, handle, own);
	if (status != 0 || !strstr(what, "vgem")) {
		xres_set(r, "ERR fence-not-on-buffer");
		xres_note(r, "export after a vgem fence on the handle: status %d, %s", status, what);
		return false;
	}
	xres_set(r, "ok");
	if (!read)
		xres_note(r, "the handle is the buffer (a vgem fence through it is on the dma-buf); "
			  "data not readable through vgem: %s", map_res.head);
	return read;
}

static bool
virtio_import(struct xenv *e, const struct xbuf *b, uint8_t *rgba, struct xres *r)
{
	uint32_t handle;
	bool own;
	int ret;

	if (prime_import(e->virtio_card, b, &handle, &own, r) < 0)
		return false;
	ret = map_dumb_read(e->virtio_card, handle, b, rgba, r);
	gem_close(e->virtio_card, handle, own);
	return ret == 0;
}

static void
buffer_cell(struct xenv *e, const struct xbuf *b, const char *imp, enum xdrv needs)
{
	static uint8_t rgba[XROW * XH];
	struct xres r;
	bool read = false;
	int seen;

	memset(rgba, 0, sizeof(rgba));
	xres_set(&r, "not here");
	if (strcmp(b->export.head, "not here") == 0) {
		xres_note(&r, "%s", b->export.note);
	} else if (needs != XD_COUNT && !e->here[needs]) {
		xres_note(&r, "%s", e->why[needs]);
	} else if (xres_failed(&b->export)) {
		r = b->export; /* the exporter's error is every cell's */
	} else if (needs == XD_COUNT) {
		read = cpu_read(b, rgba, &r);
	} else if (needs == XD_VGEM) {
		read = vgem_import(e, b, rgba, &r);
	} else if (needs == XD_VIRTIO) {
		read = virtio_import(e, b, rgba, &r);
	} else if (needs == XD_LAVAPIPE) {
		xvk_import_read_isolated(e, b, rgba, &r);
		read = !xres_failed(&r);
	} else {
		xgl_import_read(xenv_gl(e, needs), b, rgba, &r);
		read = !xres_failed(&r);
	}
	if (read && !xpixels_are(rgba, XROW, b->value, &seen)) {
		snprintf(r.head, sizeof(r.head), "ERR data");
		xres_note(&r, "read 0x%02x where the exporter wrote 0x%02x", seen, b->value);
	}
	xcell(xdrv_name(b->drv), imp, "buffer", &r);
}

void
xbuffers_run(struct xenv *e, struct xbuf *bufs)
{
	for (int d = 0; d < XD_COUNT; d++)
		for (size_t i = 0; i < sizeof(importers) / sizeof(importers[0]); i++)
			buffer_cell(e, &bufs[d],
				    importers[i].needs == XD_LAVAPIPE ? xdrv_name(XD_LAVAPIPE)
								      : importers[i].name,
				    importers[i].needs);
}
