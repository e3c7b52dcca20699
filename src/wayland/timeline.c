/* SPDX-License-Identifier: MIT */
/*
 * Imported syncobj timelines (wp_linux_drm_syncobj_timeline_v1) and points on
 * them, shared by acquire.c and release.c. A timeline is refcounted by its
 * resource and by every point set on it: the protocol XML keeps points valid
 * after the timeline object is destroyed.
 */
#include <stdlib.h>

#include "server_internal.h"
#include "syncobj_internal.h"

struct timeline *
sb_wl_timeline_create(struct sb_wl_server *server, struct wl_client *client, uint32_t handle)
{
	struct timeline *tl = calloc(1, sizeof(*tl));

	if (!tl)
		goto err_destroy_handle;
	tl->client = sb_wl_client_state_get(client);
	if (!tl->client)
		goto err_free_timeline;
	tl->server = server;
	tl->handle = handle;
	tl->refs = 1; /* the resource's */
	wl_list_insert(&server->timelines, &tl->link);
	return tl;

err_free_timeline:
	free(tl);
err_destroy_handle:
	sb_syncobj_destroy(server->drm_fd, handle);
	return NULL;
}

void
sb_wl_timeline_unref(struct timeline *tl)
{
	if (!tl || --tl->refs > 0)
		return;
	if (tl->server && tl->handle)
		sb_syncobj_destroy(tl->server->drm_fd, tl->handle);
	wl_list_remove(&tl->link);
	sb_wl_client_state_unref(tl->client);
	free(tl);
}

void
sb_wl_timeline_orphan(struct timeline *tl)
{
	sb_syncobj_destroy(tl->server->drm_fd, tl->handle);
	tl->handle = 0;
	tl->server = NULL;
	wl_list_remove(&tl->link);
	wl_list_init(&tl->link);
	if (tl->resource) {
		wl_resource_set_user_data(tl->resource, NULL);
		tl->resource = NULL;
		sb_wl_timeline_unref(tl); /* the resource's reference */
	}
}

void
sb_wl_point_set(struct point *p, struct timeline *tl, uint64_t value)
{
	if (tl)
		tl->refs++;
	sb_wl_timeline_unref(p->timeline);
	p->timeline = tl;
	p->value = value;
}

void
sb_wl_point_clear(struct point *p)
{
	sb_wl_point_set(p, NULL, 0);
}

void
sb_wl_point_move(struct point *dst, struct point *src)
{
	sb_wl_point_clear(dst);
	*dst = *src;
	src->timeline = NULL;
	src->value = 0;
}

bool
sb_wl_point_usable(const struct point *p)
{
	return p->timeline && p->timeline->server && p->timeline->handle;
}
