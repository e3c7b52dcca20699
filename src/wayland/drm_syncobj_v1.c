/* SPDX-License-Identifier: MIT */
/*
 * wp_linux_drm_syncobj_manager_v1: timelines imported from the client's
 * syncobj fds, and an acquire and a release point per commit. Only the
 * protocol's requests and rules live here; timeline.c holds the timelines,
 * acquire.c waits for the acquire point, release.c signals the release point.
 */
#include <string.h>
#include <unistd.h>

#include "linux-drm-syncobj-v1-server-protocol.h"
#include "server_internal.h"
#include "syncobj_internal.h"

/* ---- timelines ------------------------------------------------------------- */

static void
timeline_res_destroy(struct wl_resource *resource)
{
	struct timeline *tl = wl_resource_get_user_data(resource);

	if (!tl)
		return;
	/* Points already set keep the timeline (the XML: they are not unset). */
	tl->resource = NULL;
	sb_wl_timeline_unref(tl);
}

static const struct wp_linux_drm_syncobj_timeline_v1_interface timeline_impl = {
	.destroy = sb_wl_resource_destroy_request,
};

static void
import_timeline(struct wl_client *client, struct wl_resource *resource, uint32_t id, int32_t fd)
{
	struct sb_wl_server *server = sb_wl_manager_get_server(resource);
	struct wl_resource *res;
	struct timeline *tl;
	uint32_t handle;
	int ret;

	res = wl_resource_create(client, &wp_linux_drm_syncobj_timeline_v1_interface,
				 wl_resource_get_version(resource), id);
	if (!res) {
		wl_client_post_no_memory(client);
		goto out_close;
	}
	wl_resource_set_implementation(res, &timeline_impl, NULL, timeline_res_destroy);
	if (!server)
		goto out_close; /* being torn down: inert */

	/* drmSyncobjFDToHandle: the kernel checks that fd is a syncobj file. */
	ret = sb_syncobj_fd_to_handle(server->drm_fd, fd, &handle);
	if (ret) {
		wl_resource_post_error(
			resource, WP_LINUX_DRM_SYNCOBJ_MANAGER_V1_ERROR_INVALID_TIMELINE,
			"the fd is not a DRM syncobj (import failed: %s)", strerror(-ret));
		goto out_close;
	}
	tl = sb_wl_timeline_create(server, client, handle);
	if (!tl) {
		wl_client_post_no_memory(client);
		goto out_close;
	}
	tl->resource = res;
	wl_resource_set_user_data(res, tl);

out_close:
	close(fd);
}

/* ---- per-surface object ------------------------------------------------------ */

static void
set_point(struct wl_resource *resource, struct wl_resource *timeline_res, uint32_t hi,
	  uint32_t lo, bool acquire)
{
	struct sync_surface *ss = sb_wl_sync_object_get_surface(
		resource, WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_NO_SURFACE);
	struct timeline *tl = wl_resource_get_user_data(timeline_res);

	if (!ss || !tl)
		return; /* !tl: an inert timeline (helper torn down) */
	sb_wl_point_set(acquire ? &ss->acquire.point : &ss->release.point, tl,
			((uint64_t)hi << 32) | lo);
}

static void
set_acquire_point(struct wl_client *client, struct wl_resource *resource,
		  struct wl_resource *timeline, uint32_t hi, uint32_t lo)
{
	set_point(resource, timeline, hi, lo, true);
}

static void
set_release_point(struct wl_client *client, struct wl_resource *resource,
		  struct wl_resource *timeline, uint32_t hi, uint32_t lo)
{
	set_point(resource, timeline, hi, lo, false);
}

static const struct wp_linux_drm_syncobj_surface_v1_interface surface_impl = {
	.destroy = sb_wl_resource_destroy_request,
	.set_acquire_point = set_acquire_point,
	.set_release_point = set_release_point,
};

/* The protocol errors a commit can raise; returns false after posting one. */
static bool
check_commit(struct sync_surface *ss, const struct sb_wl_surface_commit_info *info)
{
	struct point *acquire = &ss->acquire.point, *release = &ss->release.point;
	uint32_t sid = wl_resource_get_id(ss->surface);

	if (!info->buffer_attached || !info->buffer) {
		if (acquire->timeline || release->timeline) {
			wl_resource_post_error(
				ss->sync, WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_NO_BUFFER,
				"wl_surface@%u: a timeline point without a buffer", sid);
			return false;
		}
		return true;
	}
	if (!acquire->timeline) {
		wl_resource_post_error(ss->sync,
				       WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_NO_ACQUIRE_POINT,
				       "wl_surface@%u: a buffer without an acquire point", sid);
		return false;
	}
	if (!release->timeline) {
		wl_resource_post_error(ss->sync,
				       WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_NO_RELEASE_POINT,
				       "wl_surface@%u: a buffer without a release point", sid);
		return false;
	}
	if (!sb_wl_buffer_supports_sync(ss, info)) {
		wl_resource_post_error(ss->sync,
				       WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_UNSUPPORTED_BUFFER,
				       "wl_surface@%u: the buffer does not support explicit "
				       "synchronization (linux-dmabuf buffers do)",
				       sid);
		return false;
	}
	if (acquire->timeline == release->timeline && acquire->value >= release->value) {
		wl_resource_post_error(
			ss->sync, WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_CONFLICTING_POINTS,
			"wl_surface@%u: acquire point %llu is not before release point "
			"%llu on the same timeline",
			sid, (unsigned long long)acquire->value,
			(unsigned long long)release->value);
		return false;
	}
	return true;
}

static const struct wp_linux_drm_syncobj_manager_v1_interface manager_impl = {
	.destroy = sb_wl_resource_destroy_request,
	.get_surface = sb_wl_sync_object_create,
	.import_timeline = import_timeline,
};

const struct sync_protocol sb_wl_drm_syncobj_protocol = {
	.id = SB_WL_SYNC_DRM_SYNCOBJ,
	.manager_iface = &wp_linux_drm_syncobj_manager_v1_interface,
	.manager_impl = &manager_impl,
	.version = 1,
	.surface_iface = &wp_linux_drm_syncobj_surface_v1_interface,
	.surface_impl = &surface_impl,
	.exists_error = WP_LINUX_DRM_SYNCOBJ_MANAGER_V1_ERROR_SURFACE_EXISTS,
	.check_commit = check_commit,
};
