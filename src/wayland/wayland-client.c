/* SPDX-License-Identifier: MIT */
/*
 * The client helper (include/syncbridge/wayland-client.h, docs/wayland.md):
 * linux-drm-syncobj-v1, else zwp_linux_explicit_synchronization_v1, else
 * implicit sync through the buffer's dma-buf.
 *
 * Every proxy the helper makes lives on its private event queue (the
 * registry, the managers, the per-surface objects, release objects), so
 * waiting for a release never dispatches the application's events. This file
 * holds the client object, its timelines and the per-surface object with
 * its acquire; client_release.c the releases.
 */
#include <syncbridge/wayland-client.h>

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <wayland-client-core.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>
#include <syncbridge/syncobj.h>

#include "linux-drm-syncobj-v1-client-protocol.h"
#include "linux-explicit-synchronization-unstable-v1-client-protocol.h"
#include "log.h"
#include "trace.h"
#include "sync_file_internal.h"
#include "syncobj_internal.h"
#include "client_internal.h"
#include "util.h"

/* ---- timelines on the client's DRM fd ------------------------------------ */

void
sb_wl_client_timeline_destroy(struct sb_wl_client *client, struct timeline *tl)
{
	if (!tl)
		return;
	if (tl->proxy)
		wp_linux_drm_syncobj_timeline_v1_destroy(tl->proxy);
	if (tl->owned)
		sb_syncobj_destroy(client->drm_fd, tl->handle);
	wl_list_remove(&tl->link);
	free(tl);
}

/* Import `handle` as a protocol timeline (create one when handle is 0). */
int
sb_wl_client_timeline_create(struct sb_wl_client *client, uint32_t handle, struct timeline **out)
{
	struct timeline *tl;
	int fd, ret;

	*out = NULL;
	tl = calloc(1, sizeof(*tl));
	if (!tl)
		return -ENOMEM;
	wl_list_init(&tl->link);
	if (handle == 0) {
		ret = sb_syncobj_create(client->drm_fd, &tl->handle);
		if (ret)
			goto err_free;
		tl->owned = true;
	} else {
		tl->handle = handle;
	}
	/* The syncobj itself (not a sync_file) is what the protocol imports. */
	ret = sb_syncobj_handle_to_fd(client->drm_fd, tl->handle, &fd);
	if (ret)
		goto err_destroy;
	tl->proxy = wp_linux_drm_syncobj_manager_v1_import_timeline(client->syncobj, fd);
	close(fd); /* libwayland sent its own duplicate */
	if (!tl->proxy) {
		ret = -ENOMEM;
		goto err_destroy;
	}
	*out = tl;
	return 0;

err_destroy:
	if (tl->owned)
		sb_syncobj_destroy(client->drm_fd, tl->handle);
err_free:
	free(tl);
	return ret;
}

/* ---- the private queue ---------------------------------------------------- */

/*
 * Read and dispatch events for the helper's queue, waiting until the absolute
 * deadline at most. Returns 0 (something may have been dispatched), -ETIME or
 * -EPIPE.
 */
int
sb_wl_client_pump_queue(struct sb_wl_client *client, int64_t deadline_ns)
{
	struct wl_display *d = client->display;
	int ret;

	if (wl_display_prepare_read_queue(d, client->queue) != 0)
		return wl_display_dispatch_queue_pending(d, client->queue) < 0 ? -EPIPE : 0;
	if (wl_display_flush(d) < 0 && errno != EAGAIN) {
		wl_display_cancel_read(d);
		return -EPIPE;
	}
	ret = sb_poll_until(wl_display_get_fd(d), POLLIN, deadline_ns);
	if (ret < 0) {
		wl_display_cancel_read(d);
		return ret == -ETIME ? -ETIME : -EPIPE;
	}
	if (wl_display_read_events(d) < 0)
		return -EPIPE;
	return wl_display_dispatch_queue_pending(d, client->queue) < 0 ? -EPIPE : 0;
}

/* ---- the client object -------------------------------------------------------- */

static void
registry_global(void *data, struct wl_registry *registry, uint32_t name, const char *iface,
		uint32_t version)
{
	struct sb_wl_client *c = data;

	if (strcmp(iface, wp_linux_drm_syncobj_manager_v1_interface.name) == 0 && !c->syncobj &&
	    c->timelines && !(c->flags & SB_WL_CLIENT_NO_DRM_SYNCOBJ)) {
		c->syncobj = wl_registry_bind(registry, name,
					      &wp_linux_drm_syncobj_manager_v1_interface, 1);
		c->syncobj_name = name;
	} else if (strcmp(iface, zwp_linux_explicit_synchronization_v1_interface.name) == 0 &&
		   !c->explicit_sync && !(c->flags & SB_WL_CLIENT_NO_EXPLICIT_V1)) {
		c->explicit_version = version < 2 ? version : 2;
		c->explicit_sync = wl_registry_bind(
			registry, name, &zwp_linux_explicit_synchronization_v1_interface,
			c->explicit_version);
		c->explicit_name = name;
	}
}

static void
registry_global_remove(void *data, struct wl_registry *registry, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {
	.global = registry_global,
	.global_remove = registry_global_remove,
};

int
sb_wl_client_create(struct wl_display *display, int drm_fd, uint32_t flags,
		    struct sb_wl_client **out)
{
	struct sb_wl_client *c;
	struct wl_display *wrapper;
	struct wl_registry *registry;
	int ret;

	if (out)
		*out = NULL;
	if (!display || !out || (flags & ~(uint32_t)(SB_WL_CLIENT_NO_DRM_SYNCOBJ |
						    SB_WL_CLIENT_NO_EXPLICIT_V1)))
		return -EINVAL;
	if (drm_fd >= 0) {
		ret = sb_fd_check_open(drm_fd);
		if (ret)
			return ret;
	}

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->display = display;
	c->flags = flags;
	/*
	 * The fd is kept even without timelines (or when the kernel refused the
	 * GET_CAP query): sb_wl_surface_sync_set_acquire_point() exports points
	 * through it for the other protocols. Dropping it made that call answer
	 * -ENODEV, "no DRM fd was given", to a caller that gave one (fault-wl).
	 */
	c->drm_fd = drm_fd;
	c->timelines = drm_fd >= 0 && sb_drm_has_timelines(drm_fd);
	if (drm_fd >= 0 && !c->timelines)
		sb_info("the client's DRM fd has no timeline syncobjs; "
			"not using linux-drm-syncobj-v1");
	c->queue = wl_display_create_queue(display);
	if (!c->queue)
		goto err_nomem;
	wrapper = wl_proxy_create_wrapper(display);
	if (!wrapper)
		goto err_nomem;
	wl_proxy_set_queue((struct wl_proxy *)wrapper, c->queue);
	registry = wl_display_get_registry(wrapper);
	wl_proxy_wrapper_destroy(wrapper);
	if (!registry)
		goto err_nomem;
	wl_registry_add_listener(registry, &registry_listener, c);
	ret = wl_display_roundtrip_queue(display, c->queue);
	wl_registry_destroy(registry);
	if (ret < 0) {
		ret = -EPIPE;
		goto err;
	}

	if (c->syncobj) {
		c->protocol = SB_WL_SYNC_DRM_SYNCOBJ;
		if (c->explicit_sync) {
			zwp_linux_explicit_synchronization_v1_destroy(c->explicit_sync);
			c->explicit_sync = NULL;
		}
	} else if (c->explicit_sync) {
		c->protocol = SB_WL_SYNC_EXPLICIT_V1;
	} else {
		c->protocol = SB_WL_SYNC_IMPLICIT;
	}
	sb_debug("wayland client: using %s",
		 c->protocol == SB_WL_SYNC_DRM_SYNCOBJ ? "wp_linux_drm_syncobj_manager_v1" :
		 c->protocol == SB_WL_SYNC_EXPLICIT_V1 ? "zwp_linux_explicit_synchronization_v1" :
		 "implicit sync (dma-buf fences)");
	*out = c;
	return 0;

err_nomem:
	ret = -ENOMEM;
err:
	sb_wl_client_destroy(c);
	return ret;
}

void
sb_wl_client_destroy(struct sb_wl_client *client)
{
	if (!client)
		return;
	if (client->syncobj)
		wp_linux_drm_syncobj_manager_v1_destroy(client->syncobj);
	if (client->explicit_sync)
		zwp_linux_explicit_synchronization_v1_destroy(client->explicit_sync);
	if (client->queue)
		wl_event_queue_destroy(client->queue);
	free(client);
}

enum sb_wl_sync_protocol
sb_wl_client_get_protocol(const struct sb_wl_client *client)
{
	return client ? client->protocol : SB_WL_SYNC_IMPLICIT;
}

/* ---- per-surface ---------------------------------------------------------------- */

int
sb_wl_surface_sync_create(struct sb_wl_client *client, struct wl_surface *surface,
			      struct sb_wl_surface_sync **out)
{
	struct sb_wl_surface_sync *s;
	int ret;

	if (out)
		*out = NULL;
	if (!client || !surface || !out)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->client = client;
	s->surface = surface;
	wl_list_init(&s->imported);
	wl_list_init(&s->free_release);
	wl_list_init(&s->releases);

	switch (client->protocol) {
	case SB_WL_SYNC_DRM_SYNCOBJ:
		s->syncobj_surface =
			wp_linux_drm_syncobj_manager_v1_get_surface(client->syncobj, surface);
		if (!s->syncobj_surface) {
			ret = -ENOMEM;
			goto err;
		}
		ret = sb_wl_client_timeline_create(client, 0, &s->acquire);
		if (ret)
			goto err;
		break;
	case SB_WL_SYNC_EXPLICIT_V1:
		s->explicit_surface = zwp_linux_explicit_synchronization_v1_get_synchronization(
			client->explicit_sync, surface);
		if (!s->explicit_surface) {
			ret = -ENOMEM;
			goto err;
		}
		break;
	case SB_WL_SYNC_IMPLICIT:
		break;
	}
	*out = s;
	return 0;

err:
	sb_wl_surface_sync_destroy(s);
	return ret;
}

void
sb_wl_surface_sync_destroy(struct sb_wl_surface_sync *sync)
{
	struct timeline *tl, *tmp;
	struct sb_wl_release *r, *rtmp;

	if (!sync)
		return;
	wl_list_for_each_safe(r, rtmp, &sync->releases, link) {
		wl_list_remove(&r->link);
		wl_list_init(&r->link);
		r->sync = NULL; /* it keeps (and later frees) its own timeline */
	}
	wl_list_for_each_safe(tl, tmp, &sync->free_release, link)
		sb_wl_client_timeline_destroy(sync->client, tl);
	wl_list_for_each_safe(tl, tmp, &sync->imported, link)
		sb_wl_client_timeline_destroy(sync->client, tl);
	sb_wl_client_timeline_destroy(sync->client, sync->acquire);
	if (sync->syncobj_surface)
		wp_linux_drm_syncobj_surface_v1_destroy(sync->syncobj_surface);
	if (sync->explicit_surface)
		zwp_linux_surface_synchronization_v1_destroy(sync->explicit_surface);
	free(sync);
}

/* For markers: which protocol carries the fences. */
const char *
sb_wl_client_protocol_name(enum sb_wl_sync_protocol p)
{
	return p == SB_WL_SYNC_DRM_SYNCOBJ ? "drm_syncobj"
	       : p == SB_WL_SYNC_EXPLICIT_V1 ? "explicit_v1"
					       : "implicit";
}

static void
set_point(struct sb_wl_surface_sync *sync, struct timeline *tl, uint64_t point)
{
	wp_linux_drm_syncobj_surface_v1_set_acquire_point(sync->syncobj_surface, tl->proxy,
							  (uint32_t)(point >> 32), (uint32_t)point);
}

int
sb_wl_surface_sync_set_acquire_fence(struct sb_wl_surface_sync *sync, int sync_file_fd,
				     int dmabuf_fd)
{
	struct sb_wl_client *client;
	uint64_t point;
	int ret;

	if (!sync)
		return -EINVAL;
	client = sync->client;
	if (sync_file_fd != -1) {
		ret = sb_sync_file_check(sync_file_fd, NULL, NULL);
		if (ret)
			return ret;
	}

	sb_trace("wlc.set_acquire protocol=%s buf_ino=%lu %s",
		 sb_wl_client_protocol_name(client->protocol),
		 dmabuf_fd >= 0 ? sb_trace_ino(dmabuf_fd) : 0, sb_trace_sync_file(sync_file_fd).s);
	switch (client->protocol) {
	case SB_WL_SYNC_DRM_SYNCOBJ:
		point = sync->acquire->next + 1;
		if (sync_file_fd == -1)
			ret = sb_syncobj_signal(client->drm_fd, sync->acquire->handle, point);
		else
			ret = sb_syncobj_import_sync_file(client->drm_fd, sync->acquire->handle,
							  point, sync_file_fd);
		if (ret)
			return ret;
		sync->acquire->next = point;
		set_point(sync, sync->acquire, point);
		return 0;
	case SB_WL_SYNC_EXPLICIT_V1:
		if (sync_file_fd != -1) /* libwayland sends a duplicate */
			zwp_linux_surface_synchronization_v1_set_acquire_fence(
				sync->explicit_surface, sync_file_fd);
		return 0;
	case SB_WL_SYNC_IMPLICIT:
		if (sync_file_fd == -1)
			return 0;
		if (dmabuf_fd < 0)
			return -EINVAL;
		return sb_dmabuf_import_sync_file(dmabuf_fd, SB_ACCESS_WRITE, sync_file_fd);
	}
	return -EINVAL;
}

int
sb_wl_surface_sync_set_acquire_point(struct sb_wl_surface_sync *sync, uint32_t handle,
				     uint64_t point, int dmabuf_fd)
{
	struct sb_wl_client *client;
	struct timeline *tl;
	int fd, ret;

	if (!sync || handle == 0)
		return -EINVAL;
	client = sync->client;
	if (client->drm_fd < 0)
		return -ENODEV;

	if (client->protocol == SB_WL_SYNC_DRM_SYNCOBJ) {
		wl_list_for_each(tl, &sync->imported, link)
			if (tl->handle == handle)
				goto found;
		ret = sb_wl_client_timeline_create(client, handle, &tl);
		if (ret)
			return ret;
		wl_list_insert(&sync->imported, &tl->link);
found:
		set_point(sync, tl, point);
		return 0;
	}

	ret = sb_syncobj_export_point(client->drm_fd, handle, point, &fd);
	if (ret)
		return ret;
	ret = sb_wl_surface_sync_set_acquire_fence(sync, fd, dmabuf_fd);
	close(fd);
	return ret;
}

