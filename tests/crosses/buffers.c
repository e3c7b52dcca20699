/* SPDX-License-Identifier: MIT */
/*
 * Buffer cells: each driver exports a dma-buf holding a 64x64 image whose
 * every byte is the exporter's own value; each importer imports it and reads
 * the image back. "ok" means the import worked and every byte read back is the
 * exporter's value (vgem, which cannot read, is judged otherwise: below).
 * Also the "implicit" cells: right after an exporter's write was submitted,
 * is a fence of that write pending on its dma-buf?
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
#include <drm_fourcc.h>
#include <drm_mode.h>

#include "kernel.h"

/* The long draws' loop count is doubled for each try whose fence had ended already. */
#define VIRGL_TRIES 3

/* The buffer importers and the driver each needs (XD_COUNT: none, the CPU). */
static const struct {
	const char *name;
	enum xdrv needs;
} importers[] = {
	{ "cpu", XD_COUNT },           { "vgem", XD_VGEM },         { "virtio_gpu", XD_VIRTIO },
	{ "lavapipe", XD_LAVAPIPE },   { "llvmpipe", XD_LLVMPIPE }, { "virgl", XD_VIRGL },
};

/* A 64x64x32 dumb buffer on a card node, exported, written through the driver's own map. */
static void
dumb_export(int drm_fd, struct xbuf *b)
{
	struct drm_mode_create_dumb create = { .width = XW, .height = XH, .bpp = 32 };
	struct drm_prime_handle prime = { .flags = DRM_CLOEXEC | DRM_RDWR, .fd = -1 };
	struct drm_mode_map_dumb map = { 0 };
	int ret;

	ret = sbk_ioctl(drm_fd, DRM_IOCTL_MODE_CREATE_DUMB, &create);
	if (ret < 0) {
		xres_errno(&b->export, "MODE_CREATE_DUMB", ret);
		return;
	}
	b->drm_fd = drm_fd;
	b->handle = create.handle;
	b->stride = (int)create.pitch;
	b->fourcc = DRM_FORMAT_ARGB8888;
	prime.handle = create.handle;
	ret = sbk_ioctl(drm_fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime);
	if (ret < 0) {
		xres_errno(&b->export, "PRIME_HANDLE_TO_FD", ret);
		return;
	}
	b->fd = prime.fd;
	map.handle = create.handle;
	ret = sbk_ioctl(drm_fd, DRM_IOCTL_MODE_MAP_DUMB, &map);
	if (ret < 0) {
		xres_errno(&b->export, "MODE_MAP_DUMB", ret);
		return;
	}
	b->map = mmap(NULL, create.size, PROT_READ | PROT_WRITE, MAP_SHARED, drm_fd, (off_t)map.offset);
	if (b->map == MAP_FAILED) {
		b->map = NULL;
		xres_errno(&b->export, "mmap", errno);
		return;
	}
	b->map_size = create.size;
	memset(b->map, b->value, b->map_size);
	xres_set(&b->export, "ok");
}

static void
udmabuf_export(struct xbuf *b)
{
	struct dma_buf_sync sync = { .flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE };
	struct sbk_buf kb;
	int ret = sbk_buf_create(SBK_BUF_UDMABUF, -1, (size_t)XROW * XH, &kb);

	if (ret < 0) {
		xres_errno(&b->export, "UDMABUF_CREATE", ret);
		return;
	}
	b->fd = kb.fd;
	b->map = kb.map;
	b->map_size = kb.size;
	b->stride = XROW;
	b->fourcc = DRM_FORMAT_ARGB8888;
	sbk_ioctl(b->fd, DMA_BUF_IOCTL_SYNC, &sync);
	memset(b->map, b->value, b->map_size);
	sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE;
	sbk_ioctl(b->fd, DMA_BUF_IOCTL_SYNC, &sync);
	xres_set(&b->export, "ok");
}

void
ximplicit_judge(const struct xbuf *b, struct xres *r)
{
	char what[96];
	int sf = -1, status, ret = sbk_dmabuf_export_raw(b->fd, DMA_BUF_SYNC_READ, &sf);

	if (ret < 0) {
		xres_errno(r, "EXPORT_SYNC_FILE", ret);
		return;
	}
	status = xsync_status(sf, what, sizeof(what));
	if (status == 0)
		xres_set(r, "pending");
	else
		xres_set(r, "none");
	xres_note(r, "%s, status %d", what, status);
	close(sf);
}

/* The vgem fence the implicit cell of vgem attaches: vgem's "work" is the fence. */
static void
vgem_implicit(struct xbuf *b, struct xres *r)
{
	uint32_t id;
	int ret = sbk_vgem_fence_attach(b->drm_fd, b->handle, true, &id);

	if (ret < 0) {
		xres_errno(r, "VGEM_FENCE_ATTACH", ret);
		return;
	}
	ximplicit_judge(b, r);
	sbk_vgem_fence_signal(b->drm_fd, id);
}

/* virgl: the write after long draws; tried again, longer, if its fence had ended at the export. */
static void
virgl_write(struct xenv *e, struct xbuf *b, struct xres *r)
{
	struct xgl *g = xenv_gl(e, XD_VIRGL);
	int iters = e->virgl_iters;

	for (int i = 0; i < VIRGL_TRIES; i++, iters *= 2) {
		xgl_write(g, b, iters);
		ximplicit_judge(b, r);
		glFinish();
		if (strcmp(r->head, "pending") == 0)
			break;
	}
	xres_note(r, "%d loop iterations", iters);
}

void
xbuf_export(struct xenv *e, enum xdrv d, struct xbuf *b)
{
	struct xres implicit;
	bool has_implicit = true;
	char exp_name[64] = "-";

	memset(b, 0, sizeof(*b));
	b->drv = d;
	b->fd = -1;
	b->drm_fd = -1;
	b->modifier = DRM_FORMAT_MOD_INVALID;
	b->image = EGL_NO_IMAGE_KHR;
	b->value = (uint8_t)(0x21 + 0x11 * d);
	if (!e->here[d]) {
		xres_set(&b->export, "not here");
		xres_note(&b->export, "%s", e->why[d]);
		/* Both guests' tables have the same cells: the implicit one is "not here" too. */
		if (d != XD_UDMABUF && d != XD_VIRTIO)
			xcell(xdrv_name(d), "dmabuf", "implicit", &b->export);
		return;
	}
	switch (d) {
	case XD_VGEM:
		dumb_export(e->vgem, b);
		if (!xres_failed(&b->export))
			vgem_implicit(b, &implicit);
		break;
	case XD_UDMABUF:
		udmabuf_export(b);
		has_implicit = false; /* no engine: a CPU write has no fence */
		break;
	case XD_VIRTIO:
		dumb_export(e->virtio_card, b);
		has_implicit = false; /* a dumb buffer written by the CPU */
		break;
	case XD_LAVAPIPE:
		xvk_export(e, b, &implicit);
		break;
	case XD_LLVMPIPE:
		xgl_export(xenv_gl(e, d), b);
		if (!xres_failed(&b->export)) {
			xgl_write(xenv_gl(e, d), b, 0);
			ximplicit_judge(b, &implicit);
			glFinish();
		}
		break;
	case XD_VIRGL:
		xgl_export(xenv_gl(e, d), b);
		if (!xres_failed(&b->export))
			virgl_write(e, b, &implicit);
		break;
	default:
		break;
	}
	if (b->fd >= 0) {
		b->size = (size_t)lseek(b->fd, 0, SEEK_END);
		xdmabuf_exporter(b->fd, exp_name, sizeof(exp_name));
	}
	printf("# %s exports: %s%s%s; a dma-buf of %s, %zu bytes; fourcc 0x%08x, stride %d, "
	       "offset %d, modifier 0x%llx; value 0x%02x\n", xdrv_name(d), b->export.head,
	       b->export.note[0] ? ", " : "", b->export.note, exp_name, b->size, b->fourcc, b->stride,
	       b->offset, (unsigned long long)b->modifier, b->value);
	if (has_implicit) {
		if (xres_failed(&b->export))
			implicit = b->export;
		xcell(xdrv_name(d), "dmabuf", "implicit", &implicit);
	}
}

void
xbuf_free(struct xenv *e, struct xbuf *b)
{
	if (b->drv == XD_LAVAPIPE)
		xvk_buffer_free(e, b);
	if (b->drv == XD_LLVMPIPE || b->drv == XD_VIRGL)
		xgl_buffer_free(xenv_gl(e, b->drv), b);
	if (b->map)
		munmap(b->map, b->map_size);
	b->map = NULL;
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	if (b->drm_fd >= 0 && b->handle) {
		struct drm_gem_close gc = { .handle = b->handle };

		sbk_ioctl(b->drm_fd, DRM_IOCTL_GEM_CLOSE, &gc);
	}
	b->handle = 0;
}

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
	char what[96];
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
	ret = sbk_dmabuf_export_raw(b->fd, DMA_BUF_SYNC_WRITE, &sf);
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
		xvk_import_read(e, b, rgba, &r);
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
			buffer_cell(e, &bufs[d], importers[i].name, importers[i].needs);
}
