/* SPDX-License-Identifier: MIT */
/*
 * How a commit's buffer goes back to its client once the compositor no longer
 * reads it: explicit-sync v1's zwp_linux_buffer_release_v1 (a fenced_release
 * event with the compositor's fence, or immediate_release), or a release
 * point on an imported timeline (linux-drm-syncobj-v1), signalled when the
 * compositor's fence signals — never early, and never not at all.
 */
#include <stdlib.h>

#include <syncbridge/sync_file.h>
#include <syncbridge/syncobj.h>

#include "linux-explicit-synchronization-unstable-v1-server-protocol.h"
#include "log.h"
#include "server_internal.h"
#include "util.h"

/* Signals a release point once a compositor fence signals (import fallback). */
struct deferred_signal {
	struct sb_wl_server *server;
	struct wl_list link; /* server->deferred */
	struct wl_event_source *source;
	int fd;
	struct point point;
};

bool
sb_wl_buffer_release_is_set(const struct buffer_release *r)
{
	return r->res || r->point.timeline;
}

/* The resource's destructor clears whichever field points at it. */
static void
release_res_destroy(struct wl_resource *resource)
{
	struct wl_resource **slot = wl_resource_get_user_data(resource);

	if (slot)
		*slot = NULL;
}

int
sb_wl_buffer_release_create(struct buffer_release *r, struct wl_client *client, uint32_t id)
{
	struct wl_resource *res = wl_resource_create(client, &zwp_linux_buffer_release_v1_interface,
						     1, id);

	if (!res)
		return -ENOMEM;
	wl_resource_set_implementation(res, NULL, &r->res, release_res_destroy);
	r->res = res;
	return 0;
}

void
sb_wl_buffer_release_move(struct buffer_release *dst, struct buffer_release *src)
{
	dst->res = src->res;
	src->res = NULL;
	if (dst->res)
		wl_resource_set_user_data(dst->res, &dst->res);
	sb_wl_point_move(&dst->point, &src->point);
}

void
sb_wl_buffer_release_clear(struct buffer_release *r)
{
	if (r->res) {
		wl_resource_set_user_data(r->res, NULL);
		r->res = NULL;
	}
	sb_wl_point_clear(&r->point);
}

/* Send the v1 release event (it destroys the object). fence_fd: borrowed or -1. */
static void
res_send(struct wl_resource **slot, int fence_fd)
{
	struct wl_resource *res = *slot;

	if (!res)
		return;
	if (fence_fd >= 0)
		zwp_linux_buffer_release_v1_send_fenced_release(res, fence_fd); /* dups the fd */
	else
		zwp_linux_buffer_release_v1_send_immediate_release(res);
	wl_resource_destroy(res); /* clears *slot */
}

static void
deferred_signal_free(struct deferred_signal *d)
{
	if (d->source)
		wl_event_source_remove(d->source);
	fd_clear(&d->fd);
	sb_wl_point_clear(&d->point);
	wl_list_remove(&d->link);
	free(d);
}

/*
 * Signal a release point now. The kernel may refuse (DRM_IOCTL_SYNCOBJ_
 * TIMELINE_SIGNAL allocates a fence chain node: ENOMEM), and then nothing
 * else ever signals the point: the client would wait for its buffer forever.
 * The protocol has no error for it, so the client is disconnected (no
 * memory) — a client that gets no answer would hang instead (fault-wl).
 */
static void
point_signal_now(struct point *p)
{
	int ret = sb_syncobj_signal(p->timeline->drm_fd, p->timeline->handle, p->value);

	if (ret == 0)
		return;
	sb_log_errno(SB_LOG_ERROR, ret, "cannot signal release point %llu (kernel); disconnecting "
		     "its client, which would wait for it forever", (unsigned long long)p->value);
	/*
	 * The timeline's client, even when it destroyed the timeline object
	 * (points set stay valid), but not while libwayland destroys that client:
	 * its display resource may already be gone then.
	 */
	if (p->timeline->client && p->timeline->client->client)
		wl_client_post_no_memory(p->timeline->client->client);
}

static int
deferred_signal_fire(int fd, uint32_t mask, void *data)
{
	struct deferred_signal *d = data;

	if (sb_wl_point_usable(&d->point))
		point_signal_now(&d->point);
	deferred_signal_free(d);
	return 0;
}

/*
 * Signal p once fence_fd (borrowed; -1: now) signals. server: NULL once it is
 * gone (a commit the compositor held past sb_wl_server_destroy(): its
 * timeline kept its own DRM fd; without the event loop the import fallback
 * waits here).
 */
static void
point_signal(struct sb_wl_server *server, struct point *p, int fence_fd)
{
	struct deferred_signal *d;
	int ret, fd;

	if (!sb_wl_point_usable(p))
		return;
	if (sb_wl_point_is_origin(p)) {
		/* Reached from the start (struct point): nothing to signal, and the
		 * kernel would replace the client's timeline with the fence. */
		sb_debug("release point 0: the timeline's initial value, nothing to signal");
		return;
	}
	if (fence_fd < 0) {
		point_signal_now(p);
		return;
	}
	ret = sb_syncobj_import_sync_file(p->timeline->drm_fd, p->timeline->handle, p->value,
					  fence_fd);
	if (ret == 0)
		return;
	/* Never signal early: wait for the fence in the loop, then signal. */
	sb_log_errno(SB_LOG_WARN, ret, "release fence import failed; signalling point %llu "
		     "once the fence signals", (unsigned long long)p->value);
	d = server ? calloc(1, sizeof(*d)) : NULL;
	fd = d ? sb_fd_dup(fence_fd) : -1;
	if (!d || fd < 0) {
		/* Last resort, still correct: wait here. */
		free(d);
		if (fd >= 0)
			close(fd);
		sb_sync_file_wait(fence_fd, SB_TIMEOUT_INFINITE);
		point_signal_now(p);
		return;
	}
	d->server = server;
	d->fd = fd;
	wl_list_insert(&server->deferred, &d->link);
	sb_wl_point_set(&d->point, p->timeline, p->value);
	d->source =
		wl_event_loop_add_fd(server->loop, fd, WL_EVENT_READABLE, deferred_signal_fire, d);
	if (!d->source) {
		sb_sync_file_wait(fence_fd, SB_TIMEOUT_INFINITE);
		deferred_signal_fire(fd, 0, d); /* frees d */
	}
}

void
sb_wl_buffer_release_send(struct sb_wl_server *server, struct buffer_release *r, int fence_fd)
{
	res_send(&r->res, fence_fd);
	point_signal(server, &r->point, fence_fd);
	/* Whatever was not sent (cannot happen) is forgotten. */
	sb_wl_buffer_release_clear(r);
}

void
sb_wl_buffer_release_flush_deferred(struct sb_wl_server *server)
{
	struct deferred_signal *d, *tmp;

	wl_list_for_each_safe(d, tmp, &server->deferred, link) {
		sb_sync_file_wait(d->fd, SB_TIMEOUT_INFINITE);
		deferred_signal_fire(d->fd, 0, d);
	}
}
