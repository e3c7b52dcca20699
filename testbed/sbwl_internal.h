/* SPDX-License-Identifier: MIT */
/* What the example compositor's files (sbwl_compositor.c, sbwl_dmabuf.c) share. */
#ifndef SBWL_INTERNAL_H
#define SBWL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <wayland-server-core.h>

/* Our side of a linux-dmabuf wl_buffer; refcounted so a commit outlives the resource. */
struct dmabuf_buffer {
	int refs;
	struct wl_resource *resource; /* NULL once destroyed */
	int fd;
	uint32_t width, height, format, offset, stride;
	size_t size;
	void *map;
};

/* Drop a reference (NULL: nothing); the last one unmaps and closes. */
void dmabuf_buffer_unref(struct dmabuf_buffer *b);
/* The dma-buf behind a wl_buffer, or NULL for any other buffer (shm) or NULL. */
struct dmabuf_buffer *dmabuf_buffer_from_resource(struct wl_resource *res);
/* The zwp_linux_dmabuf_v1 global's bind. */
void sbwl_dmabuf_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id);

/* Every interface's destroy request: the resource goes (sbwl_compositor.c). */
void sbwl_destroy_request(struct wl_client *client, struct wl_resource *resource);

/*
 * A new resource with its implementation, or NULL once the client was told
 * (wl_client_post_no_memory()): then data is still the caller's to free.
 */
static inline struct wl_resource *
sbwl_resource_new(struct wl_client *client, const struct wl_interface *iface, int version, uint32_t id,
		  const void *impl, void *data, wl_resource_destroy_func_t destroy)
{
	struct wl_resource *res = wl_resource_create(client, iface, version, id);

	if (!res) {
		wl_client_post_no_memory(client);
		return NULL;
	}
	wl_resource_set_implementation(res, impl, data, destroy);
	return res;
}

#endif
