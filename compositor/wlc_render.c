/* SPDX-License-Identifier: MIT */
/*
 * The example compositor's output image (wlc_internal.h): the CPU renderer,
 * and the screenshot both renderers share.
 *
 * The CPU renderer copies each applied buffer into the surface's own pixels
 * (shm: the copy made at commit; a dma-buf: through its mapping, once the
 * helper has seen its acquire fence signal — the copy is then complete, so
 * the release carries no fence) and composites them into a 32-bit image.
 * A dma-buf it cannot map (virgl's) is left out: the GL renderer reads those.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <drm_fourcc.h>
#include <syncbridge/sync_file.h>

#include "demo_util.h"
#include "wlc_internal.h"

struct cpu_image {
	uint32_t width, height;
	uint32_t *pixels; /* 0xAARRGGBB, premultiplied, rows of width */
};

struct cpu_renderer {
	struct wlc_renderer base;
	struct cpu_image output;
};

static const struct wlc_format cpu_formats[] = {
	{ DRM_FORMAT_ARGB8888, DRM_FORMAT_MOD_LINEAR },
	{ DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR },
	{ DRM_FORMAT_ABGR8888, DRM_FORMAT_MOD_LINEAR },
	{ DRM_FORMAT_XBGR8888, DRM_FORMAT_MOD_LINEAR },
};

/* wl_shm formats are DRM fourccs except the first two. */
static uint32_t
drm_format_of_shm(uint32_t shm_format)
{
	if (shm_format == 0)
		return DRM_FORMAT_ARGB8888;
	if (shm_format == 1)
		return DRM_FORMAT_XRGB8888;
	return shm_format;
}

/* One pixel of `format` as 0xAARRGGBB; false for a format we do not read. */
static bool
convert_row(uint32_t *dst, const uint32_t *src, uint32_t n, uint32_t format)
{
	switch (format) {
	case DRM_FORMAT_ARGB8888:
		memcpy(dst, src, n * 4);
		return true;
	case DRM_FORMAT_XRGB8888:
		for (uint32_t i = 0; i < n; i++)
			dst[i] = src[i] | 0xff000000u;
		return true;
	case DRM_FORMAT_ABGR8888:
	case DRM_FORMAT_XBGR8888:
		for (uint32_t i = 0; i < n; i++) {
			uint32_t p = src[i];
			p = (p & 0xff00ff00u) | ((p & 0xffu) << 16) | ((p >> 16) & 0xffu);
			dst[i] = format == DRM_FORMAT_XBGR8888 ? p | 0xff000000u : p;
		}
		return true;
	default:
		return false;
	}
}

static int
image_copy(struct cpu_image *img, const uint8_t *src, uint32_t width, uint32_t height,
	   uint32_t stride, uint32_t format)
{
	if (img->width != width || img->height != height) {
		uint32_t *p = malloc((size_t)width * height * 4);
		if (!p)
			return -ENOMEM;
		free(img->pixels);
		img->pixels = p;
		img->width = width;
		img->height = height;
	}
	for (uint32_t y = 0; y < height; y++)
		if (!convert_row(img->pixels + (size_t)y * width,
				 (const uint32_t *)(src + (size_t)y * stride), width, format))
			return -EINVAL;
	return 0;
}

static int
cpu_take(struct wlc_renderer *base, struct wlc_surface *surf, const struct wlc_state *s,
	 int acquire_fd, int *release_fd)
{
	struct cpu_image *img = surf->render_data;
	int ret;

	*release_fd = -1;
	/* With SB_WL_SERVER_WAIT_MATERIALIZED the fence may still be pending:
	 * the CPU is this renderer's GPU, so it waits (blocking the loop). */
	if (acquire_fd >= 0)
		sb_sync_file_wait(acquire_fd, SB_TIMEOUT_INFINITE);
	if (!img) {
		img = calloc(1, sizeof(*img));
		if (!img)
			return -ENOMEM;
		surf->render_data = img;
	}
	if (s->shm_pixels)
		return image_copy(img, s->shm_pixels, s->shm_width, s->shm_height, s->shm_stride,
				  drm_format_of_shm(s->shm_format));
	if (!s->dmabuf)
		return -EINVAL;
	if (!s->dmabuf->map)
		return -ENODEV; /* cannot be mapped here */
	/* The helper applied the commit after its fence signalled: no wait left. */
	ret = image_copy(img, (const uint8_t *)s->dmabuf->map + s->dmabuf->offset, s->dmabuf->width,
			 s->dmabuf->height, s->dmabuf->stride, s->dmabuf->format);
	return ret;
}

static void
cpu_surface_destroy(struct wlc_renderer *base, struct wlc_surface *surf)
{
	struct cpu_image *img = surf->render_data;

	if (img)
		free(img->pixels);
	free(img);
	surf->render_data = NULL;
}

/* src over dst, both premultiplied 0xAARRGGBB */
static uint32_t
over(uint32_t src, uint32_t dst)
{
	uint32_t a = src >> 24, out = 0;

	if (a == 0xff)
		return src;
	for (int shift = 0; shift < 32; shift += 8) {
		uint32_t s = (src >> shift) & 0xff, d = (dst >> shift) & 0xff;
		out |= ((s + d * (255 - a) / 255) & 0xff) << shift;
	}
	return out;
}

static int
cpu_repaint(struct wlc_renderer *base, struct wl_list *stack)
{
	struct cpu_renderer *r = (struct cpu_renderer *)base;
	struct cpu_image *out = &r->output;
	struct wlc_surface *surf;

	for (size_t i = 0; i < (size_t)out->width * out->height; i++)
		out->pixels[i] = base->background;
	wl_list_for_each(surf, stack, link) {
		struct cpu_image *img = surf->render_data;
		if (!img || !img->pixels || !surf->width)
			continue;
		for (uint32_t y = 0; y < img->height; y++) {
			int64_t oy = (int64_t)surf->y + y;
			if (oy < 0 || oy >= out->height)
				continue;
			for (uint32_t x = 0; x < img->width; x++) {
				int64_t ox = (int64_t)surf->x + x;
				if (ox < 0 || ox >= out->width)
					continue;
				uint32_t *d = &out->pixels[(size_t)oy * out->width + (size_t)ox];
				*d = over(img->pixels[(size_t)y * img->width + x], *d);
			}
		}
	}
	return 0;
}

static int
cpu_read_pixels(struct wlc_renderer *base, uint8_t **rgba)
{
	struct cpu_renderer *r = (struct cpu_renderer *)base;
	size_t n = (size_t)r->output.width * r->output.height;
	uint8_t *p = malloc(n * 4);

	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t v = r->output.pixels[i];
		p[i * 4 + 0] = (uint8_t)(v >> 16);
		p[i * 4 + 1] = (uint8_t)(v >> 8);
		p[i * 4 + 2] = (uint8_t)v;
		p[i * 4 + 3] = (uint8_t)(v >> 24);
	}
	*rgba = p;
	return 0;
}

static void
cpu_destroy(struct wlc_renderer *base)
{
	struct cpu_renderer *r = (struct cpu_renderer *)base;

	free(r->output.pixels);
	free(r);
}

static const struct wlc_renderer_impl cpu_impl = {
	.name = "cpu",
	.take = cpu_take,
	.surface_destroy = cpu_surface_destroy,
	.repaint = cpu_repaint,
	.read_pixels = cpu_read_pixels,
	.destroy = cpu_destroy,
};

struct wlc_renderer *
wlc_renderer_cpu_create(uint32_t width, uint32_t height, int *err)
{
	struct cpu_renderer *r;

	if (!width || !height) {
		*err = -EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (r)
		r->output.pixels = malloc((size_t)width * height * 4);
	if (!r || !r->output.pixels) {
		free(r);
		*err = -ENOMEM;
		return NULL;
	}
	r->output.width = width;
	r->output.height = height;
	r->base.impl = &cpu_impl;
	r->base.width = width;
	r->base.height = height;
	r->base.background = 0xff202020u;
	r->base.formats = cpu_formats;
	r->base.nformats = sizeof(cpu_formats) / sizeof(cpu_formats[0]);
	/* the background, before any repaint */
	for (size_t i = 0; i < (size_t)width * height; i++)
		r->output.pixels[i] = r->base.background;
	return &r->base;
}

void
wlc_renderer_destroy(struct wlc_renderer *r)
{
	if (r)
		r->impl->destroy(r);
}

int
wlc_renderer_screenshot(struct wlc_renderer *r, const char *path)
{
	uint8_t *rgba = NULL;
	int ret = r->impl->read_pixels(r, &rgba);

	if (ret < 0)
		return ret;
	ret = demo_png_write(path, rgba, r->width, r->height, r->width * 4, 4);
	free(rgba);
	return ret;
}
