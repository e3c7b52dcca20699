/* SPDX-License-Identifier: MIT */
/*
 * The exporters: each driver makes a dma-buf holding a 64x64 image whose
 * every byte is its own value (crosses.h), written the driver's own way. The
 * "implicit" cells are recorded here: right after the exporter's write was
 * submitted, is a fence of that write pending on its dma-buf?
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
#include "kernel_raw.h"

/* The long draws' loop count is doubled for each try whose fence had ended already. */
#define VIRGL_TRIES 3

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
	int sf = -1, status, ret = tb_dmabuf_export_raw(b->fd, DMA_BUF_SYNC_READ, &sf);

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

	for (int i = 0;; i++, iters *= 2) {
		xgl_write(g, b, iters);
		ximplicit_judge(b, r);
		glFinish();
		if (strcmp(r->head, "pending") == 0 || i + 1 == VIRGL_TRIES)
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
