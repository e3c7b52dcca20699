/* SPDX-License-Identifier: MIT */
/*
 * Per-surface state, and the per-surface extension object of either protocol
 * (a surface has at most one, of either protocol).
 */
#include <errno.h>
#include <stdlib.h>

#include "server_internal.h"

/* ---- per-surface state ----------------------------------------------------------- */

char sb_wl_sync_inert;

static void
surface_destroy_notify(struct wl_listener *listener, void *data)
{
	struct sync_surface *ss = wl_container_of(listener, ss, surface_destroy);

	sb_wl_sync_surface_free(ss, false);
}

struct sync_surface *
sb_wl_sync_surface_lookup(struct wl_resource *surface)
{
	struct wl_listener *l = wl_resource_get_destroy_listener(surface, surface_destroy_notify);
	struct sync_surface *ss;

	if (!l)
		return NULL;
	return wl_container_of(l, ss, surface_destroy);
}

/* A get_release whose commit never came stays unanswered. */
void
sb_wl_sync_surface_clear_pending(struct sync_surface *ss)
{
	sb_wl_acquire_finish(&ss->acquire);
	sb_wl_buffer_release_clear(&ss->release);
}

struct sync_surface *
sb_wl_sync_surface_get(struct sb_wl_server *server, struct wl_resource *surface)
{
	struct sync_surface *ss = sb_wl_sync_surface_lookup(surface);

	if (ss)
		return ss;
	ss = calloc(1, sizeof(*ss));
	if (!ss)
		return NULL;
	ss->client = sb_wl_client_state_get(wl_resource_get_client(surface));
	if (!ss->client) {
		free(ss);
		return NULL;
	}
	ss->server = server;
	ss->surface = surface;
	sb_wl_acquire_init(&ss->acquire);
	wl_list_init(&ss->queue);
	wl_list_init(&ss->held);
	wl_list_init(&ss->children);
	wl_list_init(&ss->child_link);
	wl_list_init(&ss->cached);
	sb_wl_acquire_wait_init(&ss->wait);
	ss->surface_destroy.notify = surface_destroy_notify;
	wl_resource_add_destroy_listener(surface, &ss->surface_destroy);
	wl_list_insert(&server->surfaces, &ss->link);
	return ss;
}

void
sb_wl_sync_surface_free(struct sync_surface *ss, bool helper_gone)
{
	struct sb_wl_commit *c, *tmp;

	sb_wl_commit_queue_discard(ss);
	sb_wl_subsurface_detach_all(ss);
	sb_wl_sync_surface_clear_pending(ss);
	wl_list_for_each_safe(c, tmp, &ss->held, link) {
		wl_list_remove(&c->link);
		wl_list_init(&c->link);
		c->owner = NULL;
	}
	/* Later requests: ignored (the helper is gone), or NO_SURFACE. */
	if (ss->sync)
		wl_resource_set_user_data(ss->sync, helper_gone ? SB_WL_SYNC_INERT : NULL);
	wl_list_remove(&ss->surface_destroy.link);
	wl_list_remove(&ss->link);
	sb_wl_client_state_unref(ss->client);
	free(ss);
}

/* ---- the per-surface extension object ------------------------------------------ */

/* Which protocol's manager this is (also once the helper is gone). */
static const struct sync_protocol *
protocol_of(struct wl_resource *manager)
{
	const struct sync_protocol *p = &sb_wl_explicit_v1_protocol;

	return wl_resource_instance_of(manager, p->manager_iface, p->manager_impl)
	       ? p : &sb_wl_drm_syncobj_protocol;
}

/*
 * The extension object went away: the surface has no sync object now. What
 * it set since the last commit is dropped, except a v1 release object, which
 * stays pending for the surface's next commit with a buffer. The v1 XML, on
 * zwp_linux_surface_synchronization_v1.destroy: "Any fence set by this
 * object with set_acquire_fence since the last commit will be discarded by
 * the server. [...] zwp_linux_buffer_release_v1 objects created by this
 * object are not affected by this request." linux-drm-syncobj-v1 allows
 * dropping both points ("may be discarded by the compositor").
 */
static void
sync_res_destroy(struct wl_resource *resource)
{
	struct sync_surface *ss = wl_resource_get_user_data(resource);

	if (!ss || ss == SB_WL_SYNC_INERT)
		return;
	sb_wl_acquire_finish(&ss->acquire);
	if (!ss->release.res)
		sb_wl_buffer_release_clear(&ss->release);
	ss->sync = NULL;
	ss->protocol = NULL;
}

void
sb_wl_sync_object_create(struct wl_client *client, struct wl_resource *manager, uint32_t id,
			 struct wl_resource *surface)
{
	const struct sync_protocol *protocol = protocol_of(manager);
	struct sb_wl_server *server = sb_wl_manager_get_server(manager);
	struct sync_surface *ss = NULL;
	struct wl_resource *res;

	if (server) {
		ss = sb_wl_sync_surface_lookup(surface);
		if (ss && ss->sync) {
			wl_resource_post_error(
				manager, protocol->exists_error,
				"wl_surface@%u already has an explicit synchronization object",
				wl_resource_get_id(surface));
			return;
		}
	}
	res = wl_resource_create(client, protocol->surface_iface, wl_resource_get_version(manager),
				 id);
	if (!res) {
		wl_client_post_no_memory(client);
		return;
	}
	if (!server) { /* the helper is gone: an inert object */
		wl_resource_set_implementation(res, protocol->surface_impl, SB_WL_SYNC_INERT,
					       sync_res_destroy);
		return;
	}
	ss = sb_wl_sync_surface_get(server, surface);
	if (!ss) {
		wl_resource_destroy(res);
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(res, protocol->surface_impl, ss, sync_res_destroy);
	ss->sync = res;
	ss->protocol = protocol;
}

struct sync_surface *
sb_wl_sync_object_get_surface(struct wl_resource *sync, uint32_t no_surface_error)
{
	struct sync_surface *ss = wl_resource_get_user_data(sync);

	if (ss == SB_WL_SYNC_INERT)
		return NULL;
	if (!ss)
		wl_resource_post_error(sync, no_surface_error,
				       "the wl_surface of this object was destroyed");
	return ss;
}

/* ---- a wl_surface.commit ----------------------------------------------------------- */

/*
 * What the protocols guarantee, then what the compositor adds. linux-drm-
 * syncobj-v1: "Explicit synchronization is guaranteed to be supported for
 * buffers created with any version of the linux-dmabuf protocol". The v1
 * XML: "Version 2 additionally guarantees explicit synchronization support
 * for opaque EGL buffers [...] described in the EGL_WL_bind_wayland_display
 * extension."
 */
bool
sb_wl_buffer_supports_sync(const struct sync_surface *ss,
			   const struct sb_wl_surface_commit_info *info)
{
	if (info->buffer_type == SB_WL_BUFFER_DMABUF)
		return true;
	if (info->buffer_type == SB_WL_BUFFER_EGL && ss->protocol->id == SB_WL_SYNC_EXPLICIT_V1 &&
	    wl_resource_get_version(ss->sync) >= 2)
		return true;
	return info->buffer_supports_sync;
}

/* Implicit sync: no explicit acquire, a dma-buf: wait for its writers. */
static bool
wants_implicit(const struct sb_wl_server *server, const struct sync_surface *ss,
	       const struct sb_wl_surface_commit_info *info)
{
	return (server->flags & SB_WL_SERVER_WAIT_IMPLICIT) &&
	       !(server->flags & SB_WL_SERVER_NO_WAIT) && info->buffer_attached && info->buffer &&
	       info->dmabuf_fd >= 0 && !(ss && sb_wl_acquire_is_set(&ss->acquire));
}

int
sb_wl_server_surface_commit(struct sb_wl_server *server, struct wl_resource *surface,
			    const struct sb_wl_surface_commit_info *info, void *commit_data,
			    struct sb_wl_commit **out)
{
	struct sync_surface *ss;
	struct acquire implicit;
	bool buffer;
	int ret;

	if (out)
		*out = NULL;
	if (!server || !surface || !info || !out)
		return -EINVAL;

	ss = sb_wl_sync_surface_lookup(surface);
	if (ss && ss->sync && !ss->protocol->check_commit(ss, info)) {
		sb_wl_sync_surface_clear_pending(ss);
		return -EPROTO;
	}

	sb_wl_acquire_init(&implicit);
	if (wants_implicit(server, ss, info) &&
	    sb_wl_acquire_snapshot(&implicit, info->dmabuf_fd) && !ss) {
		ss = sb_wl_sync_surface_get(server, surface);
		if (!ss) {
			sb_wl_acquire_finish(&implicit);
			wl_resource_post_no_memory(surface);
			return -ENOMEM;
		}
	}
	if (!ss)
		return SB_WL_COMMIT_APPLY; /* no sync object, nothing to wait for */

	buffer = info->buffer_attached && info->buffer;
	if (sb_wl_subsurface_is_synchronized(ss))
		ret = sb_wl_commit_queue_cache(server, ss, &implicit, buffer, commit_data);
	else
		ret = sb_wl_commit_queue_submit(server, ss, &implicit, buffer, commit_data, out);
	if (ret == -ENOMEM) {
		sb_wl_sync_surface_clear_pending(ss);
		wl_resource_post_no_memory(surface);
	}
	return ret;
}

/* wl_subsurface's parent and mode, as the compositor tells it (subsurface.c: the tree). */
int
sb_wl_server_surface_set_parent(struct sb_wl_server *server, struct wl_resource *surface,
				struct wl_resource *parent, bool synchronized)
{
	struct sync_surface *ss, *ps;

	if (!server || !surface || surface == parent)
		return -EINVAL;
	if (!parent) {
		ss = sb_wl_sync_surface_lookup(surface);
		if (ss)
			sb_wl_subsurface_unlink_parent(ss);
		return 0;
	}
	ps = sb_wl_sync_surface_get(server, parent);
	ss = ps ? sb_wl_sync_surface_get(server, surface) : NULL;
	if (!ss) {
		wl_resource_post_no_memory(surface);
		return -ENOMEM;
	}
	if (ss->parent != ps) {
		sb_wl_subsurface_unlink_parent(ss);
		ss->parent = ps;
		wl_list_insert(ps->children.prev, &ss->child_link);
	}
	/* set_desync keeps the cache: it applies with the child's next commit. */
	ss->sync_mode = synchronized;
	return 0;
}
