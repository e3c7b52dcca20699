/* SPDX-License-Identifier: MIT */
/*
 * Imported syncobj timelines (wp_linux_drm_syncobj_timeline_v1) and points on
 * them, shared by acquire.c and release.c. A timeline is refcounted by its
 * resource and by every point set on it: the protocol XML keeps points valid
 * after the timeline object is destroyed.
 */
#include <stdlib.h>
#include <unistd.h>

#include "log.h"
#include "server_internal.h"
#include "syncobj_internal.h"
#include "util.h"

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
	tl->drm_fd = server->drm_fd;
	tl->refs = 1; /* the resource's */
	wl_list_insert(&server->timelines, &tl->link);
	return tl;

err_free_timeline:
	free(tl);
err_destroy_handle:
	sb_syncobj_destroy(server->drm_fd, handle);
	return NULL;
}

static void
timeline_free(struct timeline *tl)
{
	if (tl->handle && tl->drm_fd >= 0)
		sb_syncobj_destroy(tl->drm_fd, tl->handle);
	if (tl->owns_fd)
		close(tl->drm_fd);
	wl_list_remove(&tl->link);
	sb_wl_client_state_unref(tl->client);
	free(tl);
}

void
sb_wl_timeline_unref(struct timeline *tl)
{
	if (tl && --tl->refs == 0)
		timeline_free(tl);
}

void
sb_wl_timeline_orphan(struct timeline *tl)
{
	int fd;

	tl->server = NULL;
	wl_list_remove(&tl->link);
	wl_list_init(&tl->link);
	if (tl->resource) {
		wl_resource_set_user_data(tl->resource, NULL);
		tl->resource = NULL;
		if (--tl->refs == 0) { /* the resource's reference was the last */
			timeline_free(tl);
			return;
		}
	}
	/* Points of held commits: their release must still be signalled. */
	fd = sb_fd_dup(tl->drm_fd);
	if (fd < 0) {
		sb_log_errno(SB_LOG_ERROR, fd, "cannot keep a timeline past the helper's destroy "
			     "(dup of the DRM fd); release points of commits the compositor still "
			     "holds on it will not be signalled");
		sb_syncobj_destroy(tl->drm_fd, tl->handle);
		tl->handle = 0;
		tl->drm_fd = -1;
		return;
	}
	tl->drm_fd = fd;
	tl->owns_fd = true;
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
	return p->timeline && p->timeline->handle && p->timeline->drm_fd >= 0;
}

bool
sb_wl_point_is_origin(const struct point *p)
{
	return p->timeline && p->value == 0;
}
