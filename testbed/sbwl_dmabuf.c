/* SPDX-License-Identifier: MIT */
/*
 * The example compositor's linux-dmabuf (sbwl_compositor.h): version 3, one
 * plane, LINEAR ARGB8888/XRGB8888, each client fd validated (a dma-buf,
 * large enough) before it becomes a wl_buffer that the compositor maps to
 * read.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <drm_fourcc.h>
#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include <syncbridge/dmabuf.h>

#include "linux-dmabuf-v1-server-protocol.h"
#include "sbwl_internal.h"

/* ---- buffers --------------------------------------------------------------- */

void
dmabuf_buffer_unref(struct dmabuf_buffer *b)
{
	if (!b || --b->refs > 0)
		return;
	if (b->map)
		munmap(b->map, b->size);
	if (b->fd >= 0)
		close(b->fd);
	free(b);
}

static const struct wl_buffer_interface dmabuf_buffer_impl = {
	.destroy = sbwl_destroy_request,
};

static void
dmabuf_buffer_res_destroy(struct wl_resource *resource)
{
	struct dmabuf_buffer *b = wl_resource_get_user_data(resource);

	b->resource = NULL;
	dmabuf_buffer_unref(b);
}

struct dmabuf_buffer *
dmabuf_buffer_from_resource(struct wl_resource *res)
{
	if (!res || !wl_resource_instance_of(res, &wl_buffer_interface, &dmabuf_buffer_impl))
		return NULL;
	return wl_resource_get_user_data(res);
}

/* ---- zwp_linux_dmabuf_v1 (version 3, one plane) --------------------------------- */

struct dmabuf_params {
	bool used;
	int fd;
	uint32_t offset, stride;
	uint64_t modifier;
};

static void
params_res_destroy(struct wl_resource *resource)
{
	struct dmabuf_params *p = wl_resource_get_user_data(resource);

	if (p->fd >= 0)
		close(p->fd);
	free(p);
}

static void
params_add(struct wl_client *client, struct wl_resource *resource, int32_t fd, uint32_t plane_idx,
	   uint32_t offset, uint32_t stride, uint32_t mod_hi, uint32_t mod_lo)
{
	struct dmabuf_params *p = wl_resource_get_user_data(resource);

	if (p->used) {
		wl_resource_post_error(resource, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_ALREADY_USED,
				       "params were already used");
		close(fd);
		return;
	}
	if (plane_idx != 0) {
		wl_resource_post_error(resource, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_PLANE_IDX,
				       "plane %u: this compositor takes single-plane buffers", plane_idx);
		close(fd);
		return;
	}
	if (p->fd >= 0) {
		wl_resource_post_error(resource, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_PLANE_SET,
				       "plane 0 already set");
		close(fd);
		return;
	}
	p->fd = fd;
	p->offset = offset;
	p->stride = stride;
	p->modifier = ((uint64_t)mod_hi << 32) | mod_lo;
}

static struct wl_resource *
params_create_common(struct wl_client *client, struct wl_resource *resource, uint32_t id,
		     int32_t width, int32_t height, uint32_t format, bool immed)
{
	struct dmabuf_params *p = wl_resource_get_user_data(resource);
	struct dmabuf_buffer *b;
	struct wl_resource *res;
	off_t size;

	if (p->used) {
		wl_resource_post_error(resource, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_ALREADY_USED,
				       "params were already used");
		return NULL;
	}
	p->used = true;
	if (p->fd < 0) {
		wl_resource_post_error(resource, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INCOMPLETE,
				       "no plane 0");
		return NULL;
	}
	if (format != DRM_FORMAT_ARGB8888 && format != DRM_FORMAT_XRGB8888) {
		wl_resource_post_error(resource, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_FORMAT,
				       "format 0x%08x not supported", format);
		return NULL;
	}
	if (width <= 0 || height <= 0 || p->stride < (uint32_t)width * 4) {
		wl_resource_post_error(resource, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_DIMENSIONS,
				       "invalid size %dx%d (stride %u)", width, height, p->stride);
		return NULL;
	}
	/* Validate the client's fd: a dma-buf, large enough (weston's lseek check). */
	size = sb_dmabuf_is_dmabuf(p->fd) ? lseek(p->fd, 0, SEEK_END) : -1;
	if (size >= 0 && (uint64_t)p->offset + (uint64_t)p->stride * (uint32_t)height > (uint64_t)size) {
		wl_resource_post_error(resource, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_OUT_OF_BOUNDS,
				       "plane 0 exceeds the dma-buf (%lld bytes)", (long long)size);
		return NULL;
	}
	if (size < 0 || (p->modifier != DRM_FORMAT_MOD_LINEAR && p->modifier != DRM_FORMAT_MOD_INVALID)) {
		if (immed)
			wl_resource_post_error(resource, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_WL_BUFFER,
					       "not an importable dma-buf");
		else
			zwp_linux_buffer_params_v1_send_failed(resource);
		return NULL;
	}

	b = calloc(1, sizeof(*b));
	if (!b) {
		wl_client_post_no_memory(client);
		return NULL;
	}
	b->refs = 1;
	b->fd = p->fd;
	p->fd = -1;
	b->width = width;
	b->height = height;
	b->format = format;
	b->offset = p->offset;
	b->stride = p->stride;
	b->size = (size_t)size;
	b->map = mmap(NULL, b->size, PROT_READ, MAP_SHARED, b->fd, 0);
	if (b->map == MAP_FAILED)
		b->map = NULL; /* content then reads as 0xdeadbeef */
	res = sbwl_resource_new(client, &wl_buffer_interface, 1, id, &dmabuf_buffer_impl, b,
				dmabuf_buffer_res_destroy);
	if (!res)
		dmabuf_buffer_unref(b);
	else
		b->resource = res;
	return res;
}

static void
params_create(struct wl_client *client, struct wl_resource *resource, int32_t width,
	      int32_t height, uint32_t format, uint32_t flags)
{
	struct wl_resource *buf = params_create_common(client, resource, 0, width, height, format, false);

	if (buf)
		zwp_linux_buffer_params_v1_send_created(resource, buf);
}

static void
params_create_immed(struct wl_client *client, struct wl_resource *resource, uint32_t id,
		    int32_t width, int32_t height, uint32_t format, uint32_t flags)
{
	params_create_common(client, resource, id, width, height, format, true);
}

static const struct zwp_linux_buffer_params_v1_interface params_impl = {
	.destroy = sbwl_destroy_request,
	.add = params_add,
	.create = params_create,
	.create_immed = params_create_immed,
};

static void
dmabuf_create_params(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct dmabuf_params *p = calloc(1, sizeof(*p));

	if (!p) {
		wl_client_post_no_memory(client);
		return;
	}
	p->fd = -1;
	if (!sbwl_resource_new(client, &zwp_linux_buffer_params_v1_interface,
			       wl_resource_get_version(resource), id, &params_impl, p, params_res_destroy))
		free(p);
}

static const struct zwp_linux_dmabuf_v1_interface dmabuf_impl = {
	.destroy = sbwl_destroy_request,
	.create_params = dmabuf_create_params,
};

void
sbwl_dmabuf_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	static const uint32_t formats[] = { DRM_FORMAT_ARGB8888, DRM_FORMAT_XRGB8888 };
	struct wl_resource *res = sbwl_resource_new(client, &zwp_linux_dmabuf_v1_interface, (int)version,
						    id, &dmabuf_impl, data, NULL);

	if (!res)
		return;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (version >= ZWP_LINUX_DMABUF_V1_MODIFIER_SINCE_VERSION)
			zwp_linux_dmabuf_v1_send_modifier(res, formats[i], 0, 0); /* LINEAR */
		else
			zwp_linux_dmabuf_v1_send_format(res, formats[i]);
	}
}
