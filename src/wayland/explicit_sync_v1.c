/* SPDX-License-Identifier: MIT */
/*
 * zwp_linux_explicit_synchronization_v1: an acquire fence (a sync_file) and a
 * zwp_linux_buffer_release_v1 per commit. Only the protocol's requests and
 * rules live here; acquire.c waits for the fence, release.c answers the
 * release object.
 */
#include <unistd.h>

#include <syncbridge/sync_file.h>

#include "linux-explicit-synchronization-unstable-v1-server-protocol.h"
#include "server_internal.h"

static void
set_acquire_fence(struct wl_client *client, struct wl_resource *resource, int32_t fd)
{
	struct sync_surface *ss = sb_wl_sync_object_get_surface(
		resource, ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_NO_SURFACE);

	if (!ss)
		goto out_close;
	/* Weston's rule: a sync_file must answer SYNC_IOC_FILE_INFO. */
	if (!sb_sync_file_is_valid(fd)) {
		wl_resource_post_error(resource,
				       ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_INVALID_FENCE,
				       "the acquire fence fd is not a sync_file");
		goto out_close;
	}
	if (ss->acquire.fd >= 0) {
		wl_resource_post_error(resource,
				       ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_DUPLICATE_FENCE,
				       "an acquire fence was already set for this commit");
		goto out_close;
	}
	ss->acquire.fd = fd;
	return;

out_close:
	close(fd);
}

static void
get_release(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct sync_surface *ss;
	struct buffer_release inert = { 0 };

	if (wl_resource_get_user_data(resource) == SB_WL_SYNC_INERT) {
		/* The helper is gone: the new object exists, and nothing answers it. */
		if (sb_wl_buffer_release_create(&inert, client, id) != 0)
			wl_client_post_no_memory(client);
		sb_wl_buffer_release_clear(&inert);
		return;
	}
	ss = sb_wl_sync_object_get_surface(resource,
					   ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_NO_SURFACE);
	if (!ss)
		return;
	if (ss->release.res) {
		wl_resource_post_error(resource,
				       ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_DUPLICATE_RELEASE,
				       "a release object was already requested for this commit");
		return;
	}
	if (sb_wl_buffer_release_create(&ss->release, client, id) != 0)
		wl_client_post_no_memory(client);
}

static const struct zwp_linux_surface_synchronization_v1_interface surface_impl = {
	.destroy = sb_wl_resource_destroy_request,
	.set_acquire_fence = set_acquire_fence,
	.get_release = get_release,
};

static bool
check_commit(struct sync_surface *ss, const struct sb_wl_surface_commit_info *info)
{
	bool has_buffer = info->buffer_attached && info->buffer;
	uint32_t sid = wl_resource_get_id(ss->surface);

	if (ss->acquire.fd >= 0 && !has_buffer) {
		wl_resource_post_error(ss->sync,
				       ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_NO_BUFFER,
				       "wl_surface@%u: an acquire fence without a buffer", sid);
		return false;
	}
	if (ss->acquire.fd >= 0 && !sb_wl_buffer_supports_sync(ss, info)) {
		wl_resource_post_error(
			ss->sync, ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_UNSUPPORTED_BUFFER,
			"wl_surface@%u: the buffer does not support explicit "
			"synchronization (linux-dmabuf buffers do, and at version 2 "
			"wl_drm EGL buffers)",
			sid);
		return false;
	}
	if (ss->release.res && !has_buffer) {
		wl_resource_post_error(ss->sync,
				       ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_NO_BUFFER,
				       "wl_surface@%u: a release request without a buffer", sid);
		return false;
	}
	return true;
}

static const struct zwp_linux_explicit_synchronization_v1_interface manager_impl = {
	.destroy = sb_wl_resource_destroy_request,
	.get_synchronization = sb_wl_sync_object_create,
};

const struct sync_protocol sb_wl_explicit_v1_protocol = {
	.id = SB_WL_SYNC_EXPLICIT_V1,
	.manager_iface = &zwp_linux_explicit_synchronization_v1_interface,
	.manager_impl = &manager_impl,
	.version = 2,
	.surface_iface = &zwp_linux_surface_synchronization_v1_interface,
	.surface_impl = &surface_impl,
	.exists_error = ZWP_LINUX_EXPLICIT_SYNCHRONIZATION_V1_ERROR_SYNCHRONIZATION_EXISTS,
	.check_commit = check_commit,
};
