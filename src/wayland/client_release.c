/* SPDX-License-Identifier: MIT */
/*
 * The client helper's releases (include/syncbridge/wayland-client.h): when
 * may the app reuse a buffer it committed? A release point on a timeline of
 * the helper's (linux-drm-syncobj-v1), a zwp_linux_buffer_release_v1 event
 * (explicit-sync v1), or the dma-buf's own fences (implicit).
 */
#include <stdlib.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>
#include <syncbridge/syncobj.h>

#include "client_internal.h"
#include "linux-drm-syncobj-v1-client-protocol.h"
#include "linux-explicit-synchronization-unstable-v1-client-protocol.h"
#include "syncobj_internal.h"
#include "trace.h"
#include "util.h"

static void
release_fenced(void *data, struct zwp_linux_buffer_release_v1 *proxy, int32_t fence)
{
	struct sb_wl_release *r = data;

	sb_trace("wlc.release_arrived fenced=1 %s", sb_trace_sync_file(fence).s);
	r->arrived = true;
	r->fenced = true;
	r->fence_fd = fence; /* ours */
	zwp_linux_buffer_release_v1_destroy(proxy);
	r->proxy = NULL;
}

static void
release_immediate(void *data, struct zwp_linux_buffer_release_v1 *proxy)
{
	struct sb_wl_release *r = data;

	sb_trace("wlc.release_arrived fenced=0");
	r->arrived = true;
	zwp_linux_buffer_release_v1_destroy(proxy);
	r->proxy = NULL;
}

static const struct zwp_linux_buffer_release_v1_listener release_listener = {
	.fenced_release = release_fenced,
	.immediate_release = release_immediate,
};

int
sb_wl_release_create(struct sb_wl_surface_sync *sync, int dmabuf_fd,
			       struct sb_wl_release **out)
{
	struct sb_wl_client *client;
	struct sb_wl_release *r;
	int ret;

	if (out)
		*out = NULL;
	if (!sync || !out)
		return -EINVAL;
	client = sync->client;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->sync = sync;
	r->client = client;
	r->protocol = client->protocol;
	r->fence_fd = -1;
	r->dmabuf_fd = dmabuf_fd;

	switch (client->protocol) {
	case SB_WL_SYNC_DRM_SYNCOBJ:
		if (!wl_list_empty(&sync->free_release)) {
			r->timeline = wl_container_of(sync->free_release.next, r->timeline, link);
			wl_list_remove(&r->timeline->link);
			wl_list_init(&r->timeline->link);
		} else {
			ret = sb_wl_client_timeline_create(client, 0, &r->timeline);
			if (ret) {
				free(r);
				return ret;
			}
		}
		r->point = ++r->timeline->next;
		r->fenced = true;
		wp_linux_drm_syncobj_surface_v1_set_release_point(sync->syncobj_surface,
								  r->timeline->proxy,
								  (uint32_t)(r->point >> 32),
								  (uint32_t)r->point);
		break;
	case SB_WL_SYNC_EXPLICIT_V1:
		r->proxy = zwp_linux_surface_synchronization_v1_get_release(sync->explicit_surface);
		if (!r->proxy) {
			free(r);
			return -ENOMEM;
		}
		zwp_linux_buffer_release_v1_add_listener(r->proxy, &release_listener, r);
		break;
	case SB_WL_SYNC_IMPLICIT:
		if (dmabuf_fd < 0 || !sb_dmabuf_is_valid(dmabuf_fd)) {
			free(r);
			return -EINVAL;
		}
		r->fenced = true;
		break;
	}
	wl_list_insert(&sync->releases, &r->link);
	*out = r;
	return 0;
}

int
sb_wl_release_export_fence(struct sb_wl_release *r, int *out_fd)
{
	int ret;

	if (out_fd)
		*out_fd = -1;
	if (!r || !out_fd)
		return -EINVAL;
	switch (r->protocol) {
	case SB_WL_SYNC_DRM_SYNCOBJ:
		return sb_syncobj_export_point(r->client->drm_fd, r->timeline->handle, r->point,
					       out_fd);
	case SB_WL_SYNC_EXPLICIT_V1:
		if (!r->arrived) {
			ret = sb_wl_client_pump_queue(r->client, 0);
			if (ret == -EPIPE)
				return ret;
		}
		if (!r->arrived)
			return -EAGAIN;
		if (r->fence_fd < 0)
			return 0;
		ret = sb_fd_dup(r->fence_fd);
		if (ret < 0)
			return ret;
		*out_fd = ret;
		return 0;
	case SB_WL_SYNC_IMPLICIT:
		return sb_dmabuf_export_sync_file(r->dmabuf_fd, SB_ACCESS_WRITE, out_fd);
	}
	return -EINVAL;
}

int
sb_wl_release_wait(struct sb_wl_release *r, int64_t timeout_ns)
{
	int64_t deadline;
	int ret;

	if (!r)
		return -EINVAL;
	deadline = sb_deadline_from_timeout(sb_now_ns(), timeout_ns);
	sb_trace("wlc.release_wait protocol=%s point=%llu %s",
		 sb_wl_client_protocol_name(r->protocol), (unsigned long long)r->point,
		 sb_trace_sync_file(r->fence_fd).s);
	switch (r->protocol) {
	case SB_WL_SYNC_DRM_SYNCOBJ:
		return sb_syncobj_wait(r->client->drm_fd, r->timeline->handle, r->point, timeout_ns,
				       0);
	case SB_WL_SYNC_EXPLICIT_V1:
		while (!r->arrived) {
			ret = sb_wl_client_pump_queue(r->client, deadline);
			if (ret)
				return ret;
		}
		if (r->fence_fd < 0)
			return 0;
		return sb_sync_file_wait(r->fence_fd, sb_deadline_remaining(sb_now_ns(), deadline));
	case SB_WL_SYNC_IMPLICIT:
		return sb_dmabuf_wait(r->dmabuf_fd, SB_ACCESS_WRITE, timeout_ns);
	}
	return -EINVAL;
}

bool
sb_wl_release_is_fenced(const struct sb_wl_release *r)
{
	return r && r->fenced;
}

void
sb_wl_release_destroy(struct sb_wl_release *r)
{
	if (!r)
		return;
	if (r->proxy)
		zwp_linux_buffer_release_v1_destroy(r->proxy);
	fd_clear(&r->fence_fd);
	if (r->timeline) {
		if (r->sync) /* back to the pool, for a later (higher) point */
			wl_list_insert(&r->sync->free_release, &r->timeline->link);
		else
			sb_wl_client_timeline_destroy(r->client, r->timeline);
	}
	wl_list_remove(&r->link);
	free(r);
}
