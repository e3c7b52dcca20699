/* SPDX-License-Identifier: MIT */
/*
 * The example compositor's linux-dmabuf (wlc_internal.h): version 4, one
 * plane, the (format, modifier) pairs its renderer imports, each client fd
 * validated (a dma-buf, large enough) before it becomes a wl_buffer that the
 * compositor maps to read where it can.
 *
 * Version 4's feedback tells clients which device to allocate on (the main
 * device: the render node the compositor imports on) and what it imports
 * there: one tranche with every pair, listed as indices into a format table
 * that is shared read-only (a sealed memfd of 16-byte entries).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <drm_fourcc.h>
#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include <syncbridge/dmabuf.h>

#include "linux-dmabuf-v1-server-protocol.h"
#include "wlc_internal.h"

/* ---- buffers --------------------------------------------------------------- */

void
dmabuf_buffer_unref(struct dmabuf_buffer *b)
{
	if (!b || --b->refs > 0)
		return;
	if (b->render_data_free)
		b->render_data_free(b->render_data);
	if (b->map)
		munmap(b->map, b->size);
	if (b->fd >= 0)
		close(b->fd);
	free(b);
}

static const struct wl_buffer_interface dmabuf_buffer_impl = {
	.destroy = wlc_destroy_request,
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

/* ---- zwp_linux_dmabuf_v1 (version 4, one plane) --------------------------------- */

#define DMABUF_VERSION 4

struct wlc_dmabuf {
	struct wl_global *global;
	struct wlc_format *formats;
	size_t nformats;
	dev_t main_device;
	int table_fd; /* the format table: sealed memfd, or -1 */
	size_t table_size;
};

static bool
dmabuf_supports(const struct wlc_dmabuf *d, uint32_t format, uint64_t modifier)
{
	for (size_t i = 0; i < d->nformats; i++)
		if (d->formats[i].format == format &&
		    (d->formats[i].modifier == modifier || modifier == DRM_FORMAT_MOD_INVALID))
			return true;
	return false;
}

struct dmabuf_params {
	struct wlc_dmabuf *dmabuf;
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
				       "plane %u: this compositor takes single-plane buffers",
				       plane_idx);
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
	if (!dmabuf_supports(p->dmabuf, format, DRM_FORMAT_MOD_INVALID)) {
		wl_resource_post_error(resource, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_FORMAT,
				       "format 0x%08x not supported", format);
		return NULL;
	}
	if (width <= 0 || height <= 0 || p->stride < (uint32_t)width * 4) {
		wl_resource_post_error(resource,
				       ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_DIMENSIONS,
				       "invalid size %dx%d (stride %u)", width, height, p->stride);
		return NULL;
	}
	/* Validate the client's fd: a dma-buf, large enough (weston's lseek check). */
	size = sb_dmabuf_is_valid(p->fd) ? lseek(p->fd, 0, SEEK_END) : -1;
	if (size >= 0 &&
	    (uint64_t)p->offset + (uint64_t)p->stride * (uint32_t)height > (uint64_t)size) {
		wl_resource_post_error(resource, ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_OUT_OF_BOUNDS,
				       "plane 0 exceeds the dma-buf (%lld bytes)", (long long)size);
		return NULL;
	}
	if (size < 0 || !dmabuf_supports(p->dmabuf, format, p->modifier)) {
		if (immed)
			wl_resource_post_error(resource,
					       ZWP_LINUX_BUFFER_PARAMS_V1_ERROR_INVALID_WL_BUFFER,
					       "not an importable dma-buf");
		else
			zwp_linux_buffer_params_v1_send_failed(resource);
		return NULL;
	}

	b = wlc_client_zalloc(client, sizeof(*b));
	if (!b)
		return NULL;
	b->refs = 1;
	b->fd = p->fd;
	p->fd = -1;
	b->width = width;
	b->height = height;
	b->format = format;
	b->offset = p->offset;
	b->stride = p->stride;
	b->modifier = p->modifier;
	b->size = (size_t)size;
	b->map = mmap(NULL, b->size, PROT_READ, MAP_SHARED, b->fd, 0);
	if (b->map == MAP_FAILED)
		b->map = NULL; /* content then reads as 0xdeadbeef */
	res = wlc_resource_new(client, &wl_buffer_interface, 1, id, &dmabuf_buffer_impl, b,
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
	struct wl_resource *buf = params_create_common(client, resource, 0, width, height, format,
						       false);

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
	.destroy = wlc_destroy_request,
	.add = params_add,
	.create = params_create,
	.create_immed = params_create_immed,
};

static void
dmabuf_create_params(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct dmabuf_params *p = wlc_client_zalloc(client, sizeof(*p));

	if (!p)
		return;
	p->fd = -1;
	p->dmabuf = wl_resource_get_user_data(resource);
	if (!wlc_resource_new(client, &zwp_linux_buffer_params_v1_interface,
			      wl_resource_get_version(resource), id, &params_impl, p,
			      params_res_destroy))
		free(p);
}

/* ---- feedback (version 4) ------------------------------------------------------ */

static const struct zwp_linux_dmabuf_feedback_v1_interface feedback_impl = {
	.destroy = wlc_destroy_request,
};

static void
send_dev(struct wl_resource *res, dev_t dev,
	 void (*send)(struct wl_resource *, struct wl_array *))
{
	struct wl_array a = { .size = sizeof(dev), .alloc = 0, .data = &dev };

	send(res, &a);
}

/* One tranche: every pair, on the main device; the same for every surface. */
static void
send_feedback(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct wlc_dmabuf *d = wl_resource_get_user_data(resource);
	struct wl_resource *res = wlc_resource_new(client, &zwp_linux_dmabuf_feedback_v1_interface,
						   wl_resource_get_version(resource), id,
						   &feedback_impl, NULL, NULL);
	struct wl_array indices;

	if (!res)
		return;
	wl_array_init(&indices);
	for (size_t i = 0; i < d->nformats; i++) {
		uint16_t *idx = wl_array_add(&indices, sizeof(*idx));
		if (!idx) {
			wl_array_release(&indices);
			wl_client_post_no_memory(client);
			return;
		}
		*idx = (uint16_t)i;
	}
	zwp_linux_dmabuf_feedback_v1_send_format_table(res, d->table_fd, (uint32_t)d->table_size);
	send_dev(res, d->main_device, zwp_linux_dmabuf_feedback_v1_send_main_device);
	send_dev(res, d->main_device, zwp_linux_dmabuf_feedback_v1_send_tranche_target_device);
	zwp_linux_dmabuf_feedback_v1_send_tranche_formats(res, &indices);
	zwp_linux_dmabuf_feedback_v1_send_tranche_flags(res, 0);
	zwp_linux_dmabuf_feedback_v1_send_tranche_done(res);
	zwp_linux_dmabuf_feedback_v1_send_done(res);
	wl_array_release(&indices);
}

static void
dmabuf_get_default_feedback(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	send_feedback(client, resource, id);
}

static void
dmabuf_get_surface_feedback(struct wl_client *client, struct wl_resource *resource, uint32_t id,
			    struct wl_resource *surface)
{
	send_feedback(client, resource, id);
}

static const struct zwp_linux_dmabuf_v1_interface dmabuf_impl = {
	.destroy = wlc_destroy_request,
	.create_params = dmabuf_create_params,
	.get_default_feedback = dmabuf_get_default_feedback,
	.get_surface_feedback = dmabuf_get_surface_feedback,
};

static void
dmabuf_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	struct wlc_dmabuf *d = data;
	struct wl_resource *res = wlc_resource_new(client, &zwp_linux_dmabuf_v1_interface,
						   (int)version, id, &dmabuf_impl, d, NULL);

	/* "Starting version 4, the format and modifier events are deprecated
	 * and must not be sent by compositors." */
	if (!res || version >= ZWP_LINUX_DMABUF_V1_GET_DEFAULT_FEEDBACK_SINCE_VERSION)
		return;
	for (size_t i = 0; i < d->nformats; i++) {
		if (version >= ZWP_LINUX_DMABUF_V1_MODIFIER_SINCE_VERSION)
			zwp_linux_dmabuf_v1_send_modifier(res, d->formats[i].format,
							  (uint32_t)(d->formats[i].modifier >> 32),
							  (uint32_t)d->formats[i].modifier);
		else if (d->formats[i].modifier == DRM_FORMAT_MOD_LINEAR)
			zwp_linux_dmabuf_v1_send_format(res, d->formats[i].format);
	}
}

/* The format table: {u32 format, u32 padding, u64 modifier} per pair, sealed. */
static int
table_create(struct wlc_dmabuf *d)
{
	struct {
		uint32_t format, pad;
		uint64_t modifier;
	} *t = calloc(d->nformats, sizeof(*t));
	int fd;

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < d->nformats; i++) {
		t[i].format = d->formats[i].format;
		t[i].modifier = d->formats[i].modifier;
	}
	d->table_size = d->nformats * sizeof(*t);
	fd = wlc_sealed_memfd("sbwl-dmabuf-formats", t, d->table_size);
	free(t);
	if (fd < 0)
		return fd;
	d->table_fd = fd;
	return 0;
}

struct wlc_dmabuf *
wlc_dmabuf_create(struct wl_display *display, dev_t main_device, const struct wlc_format *formats,
		   size_t nformats)
{
	struct wlc_dmabuf *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->table_fd = -1;
	d->main_device = main_device;
	/* the table's indices are 16 bits */
	d->nformats = nformats < UINT16_MAX ? nformats : UINT16_MAX;
	d->formats = malloc((d->nformats ? d->nformats : 1) * sizeof(*formats));
	if (!d->formats)
		goto fail;
	memcpy(d->formats, formats, d->nformats * sizeof(*formats));
	if (main_device && d->nformats && table_create(d) < 0)
		goto fail;
	d->global = wl_global_create(display, &zwp_linux_dmabuf_v1_interface,
				     d->table_fd >= 0 ? DMABUF_VERSION : DMABUF_VERSION - 1, d,
				     dmabuf_bind);
	if (!d->global)
		goto fail;
	return d;
fail:
	wlc_dmabuf_destroy(d);
	return NULL;
}

void
wlc_dmabuf_destroy(struct wlc_dmabuf *d)
{
	if (!d)
		return;
	if (d->global)
		wl_global_destroy(d->global);
	if (d->table_fd >= 0)
		close(d->table_fd);
	free(d->formats);
	free(d);
}
