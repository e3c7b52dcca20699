/* SPDX-License-Identifier: MIT */
/*
 * The compositor helper (include/syncbridge/wayland-server.h, docs/wayland.md):
 * wp_linux_drm_syncobj_manager_v1 and zwp_linux_explicit_synchronization_v1
 * for any libwayland-server compositor. This file holds the helper object:
 * its globals, the bound managers, create and destroy; server_internal.h says
 * where the rest lives and how the objects point at each other.
 */
#include <syncbridge/wayland-server.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server_internal.h"
#include "syncobj_internal.h"
#include "util.h"

/* ---- manager resources ----------------------------------------------------------- */

static void
manager_res_destroy(struct wl_resource *resource)
{
	wl_list_remove(wl_resource_get_link(resource));
}

static void
manager_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	struct sync_global *g = data;
	struct wl_resource *res =
		wl_resource_create(client, g->protocol->manager_iface, version, id);

	if (!res) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(res, g->protocol->manager_impl, g, manager_res_destroy);
	wl_list_insert(&g->server->managers, wl_resource_get_link(res));
	/* The client state's destroy listener quiesces the connection (see
	 * client_quiesce): every client that can get an error from us has one. */
	sb_wl_client_state_unref(sb_wl_client_state_get(client));
}

static bool
global_create(struct sb_wl_server *server, struct sync_global *g,
	      const struct sync_protocol *protocol)
{
	g->server = server;
	g->protocol = protocol;
	g->global = wl_global_create(server->display, protocol->manager_iface, protocol->version, g,
				     manager_bind);
	return g->global != NULL;
}

static void
globals_destroy(struct sb_wl_server *server)
{
	for (size_t i = 0; i < SB_ARRAY_SIZE(server->globals); i++) {
		if (server->globals[i].global)
			wl_global_destroy(server->globals[i].global);
		server->globals[i].global = NULL;
	}
}

/* ---- queries ------------------------------------------------------------------------ */

enum sb_wl_sync_protocol
sb_wl_server_surface_get_protocol(struct sb_wl_server *server, struct wl_resource *surface)
{
	struct sync_surface *ss;

	if (!server || !surface)
		return SB_WL_SYNC_IMPLICIT;
	ss = sb_wl_sync_surface_lookup(surface);
	return ss && ss->sync ? ss->protocol->id : SB_WL_SYNC_IMPLICIT;
}

int
sb_wl_server_get_stats(const struct sb_wl_server *server, struct sb_wl_server_stats *stats)
{
	if (!stats)
		return -EINVAL;
	memset(stats, 0, sizeof(*stats));
	if (!server)
		return -EINVAL;
	*stats = server->stats;
	return 0;
}

uint32_t
sb_wl_server_get_protocols(const struct sb_wl_server *server)
{
	uint32_t mask = 0;

	for (size_t i = 0; server && i < SB_ARRAY_SIZE(server->globals); i++)
		if (server->globals[i].global)
			mask |= 1u << server->globals[i].protocol->id;
	return mask;
}

/* ---- create / destroy ------------------------------------------------------------ */

static void
display_destroy_notify(struct wl_listener *listener, void *data)
{
	struct sb_wl_server *server = wl_container_of(listener, server, display_destroy);

	sb_wl_server_destroy(server);
}

int
sb_wl_server_create(struct wl_display *display, const struct sb_wl_server_options *options,
		    struct sb_wl_server **out)
{
	struct sb_wl_server *server;
	bool want_v1, want_syncobj;
	int ret;

	if (out)
		*out = NULL;
	if (!display || !options || !options->impl || !options->impl->commit_ready || !out)
		return -EINVAL;
	want_v1 = !(options->flags & SB_WL_SERVER_NO_EXPLICIT_V1);
	want_syncobj = !(options->flags & SB_WL_SERVER_NO_DRM_SYNCOBJ) && options->drm_fd >= 0;
	if (!want_v1 && (options->flags & SB_WL_SERVER_NO_DRM_SYNCOBJ))
		return -EINVAL;
	if (options->drm_fd >= 0) {
		ret = sb_fd_check_open(options->drm_fd);
		if (ret)
			return ret;
	}
	if (want_syncobj && !sb_drm_has_timelines(options->drm_fd)) {
		sb_info("the DRM device has no timeline syncobjs (DRM_CAP_SYNCOBJ_TIMELINE); "
			"not advertising wp_linux_drm_syncobj_manager_v1");
		want_syncobj = false;
	}
	if (!want_v1 && !want_syncobj)
		return -ENODEV;

	server = calloc(1, sizeof(*server));
	if (!server)
		return -ENOMEM;
	server->display = display;
	server->loop = wl_display_get_event_loop(display);
	server->drm_fd = want_syncobj ? options->drm_fd : -1;
	server->flags = options->flags;
	server->max_pending = options->max_pending_commits ? options->max_pending_commits
							   : SB_WL_SERVER_DEFAULT_MAX_PENDING;
	server->max_client_pending = options->max_client_pending_commits ?
				     options->max_client_pending_commits :
				     SB_WL_SERVER_DEFAULT_MAX_CLIENT_PENDING;
	server->impl = *options->impl;
	server->data = options->data;
	wl_list_init(&server->surfaces);
	wl_list_init(&server->timelines);
	wl_list_init(&server->managers);
	wl_list_init(&server->commits);
	wl_list_init(&server->deferred);

	if (want_v1 && !global_create(server, &server->globals[0], &sb_wl_explicit_v1_protocol))
		goto err_destroy_globals;
	if (want_syncobj &&
	    !global_create(server, &server->globals[1], &sb_wl_drm_syncobj_protocol))
		goto err_destroy_globals;
	server->display_destroy.notify = display_destroy_notify;
	wl_display_add_destroy_listener(display, &server->display_destroy);
	*out = server;
	return 0;

err_destroy_globals:
	globals_destroy(server);
	free(server);
	return -ENOMEM;
}

void
sb_wl_server_destroy(struct sb_wl_server *server)
{
	struct sync_surface *ss, *ss_tmp;
	struct timeline *tl, *tl_tmp;
	struct sb_wl_commit *c, *c_tmp;
	struct wl_resource *res, *res_tmp;

	if (!server)
		return;
	/* Release points still waiting for a compositor fence (import fallback):
	 * never early, never not at all — teardown may block for the fence. */
	sb_wl_buffer_release_flush_deferred(server);
	globals_destroy(server);

	/* Waiting commits are discarded (and released); held ones stay the compositor's. */
	wl_list_for_each_safe(ss, ss_tmp, &server->surfaces, link)
		sb_wl_sync_surface_free(ss, true);
	wl_list_for_each_safe(c, c_tmp, &server->commits, server_link) {
		/* Held commits stay valid: their release points are signalled on
		 * the timeline's own fd (sb_wl_timeline_orphan()). */
		wl_list_remove(&c->server_link);
		wl_list_init(&c->server_link);
		c->server = NULL;
	}
	/* Timelines: inert objects; those held commits use keep their syncobj. */
	wl_list_for_each_safe(tl, tl_tmp, &server->timelines, link)
		sb_wl_timeline_orphan(tl);
	wl_resource_for_each_safe(res, res_tmp, &server->managers) {
		wl_list_remove(wl_resource_get_link(res));
		wl_list_init(wl_resource_get_link(res));
		wl_resource_set_user_data(res, NULL);
	}
	wl_list_remove(&server->display_destroy.link);
	free(server);
}
