/* SPDX-License-Identifier: MIT */
/*
 * The compositor helper (include/syncbridge/wayland-server.h, docs/wayland.md):
 * wp_linux_drm_syncobj_manager_v1 and zwp_linux_explicit_synchronization_v1
 * for any libwayland-server compositor.
 *
 * Objects and who points at whom:
 *
 *   sb_wl_server ── surfaces ──► sync_surface (one per wl_surface that ever got
 *        │                         │  a sync object; found through its destroy
 *        │                         │  listener on the wl_surface resource)
 *        │                         ├─ sync: the extension resource (user data
 *        │                         │        = the sync_surface, NULL once the
 *        │                         │        wl_surface is gone → NO_SURFACE)
 *        │                         ├─ pending acquire/release state
 *        │                         ├─ queue: commits waiting, in commit order;
 *        │                         │         only the head waits (one event
 *        │                         │         source per waiting surface)
 *        │                         └─ held: commits handed to the compositor
 *        ├─ timelines ──► timeline (imported syncobj handle, refcounted by
 *        │                          its resource and by every point using it)
 *        ├─ managers: the bound global resources
 *        └─ commits: every live sb_wl_commit (so destroy can detach them)
 *
 * Fds: every fd received from a client is owned by the request handler and
 * either moved into state (fd_move) or closed on every path. Nothing here
 * blocks: a fence is waited for by an event-loop fd source on the sync_file
 * itself (explicit-sync v1, and materialised syncobj points exported as a
 * sync_file) or on a sb_syncobj_waiter's eventfd (unmaterialised points).
 */
#include <syncbridge/wayland-server.h>

#include <drm.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <wayland-server-core.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>
#include <syncbridge/syncobj.h>

#include "linux-drm-syncobj-v1-server-protocol.h"
#include "linux-explicit-synchronization-unstable-v1-server-protocol.h"
#include "log.h"
#include "trace.h"
#include "sync_file_internal.h"
#include "util.h"

#define EXPLICIT_V1_VERSION 2
#define DRM_SYNCOBJ_VERSION 1

struct client_state;

struct timeline {
	struct sb_wl_server *server; /* NULL once the server is gone */
	struct wl_list link;         /* server->timelines */
	struct wl_resource *resource; /* NULL once destroyed */
	struct client_state *client; /* a reference: whom to tell when a point cannot be signalled */
	uint32_t handle;             /* on server->drm_fd; 0 = none */
	int refs;
};

struct point {
	struct timeline *timeline; /* a reference, or NULL: unset */
	uint64_t value;
};

struct wait {
	struct wl_event_source *source;
	int fd;                          /* owned sync_file, or -1 */
	struct sb_syncobj_waiter *waiter; /* or NULL */
	bool threaded;
	bool counted; /* in stats.waits_pending (and waits_threaded) */
};

struct sync_surface;

/*
 * Per wl_client: the commits waiting in all of its surfaces' queues, so that a
 * client cannot pin an unbounded number of fences (each waiting commit may
 * hold a sync_file fd) by spreading them over many surfaces. Referenced by
 * the client's destroy listener and by each of its sync_surfaces: libwayland
 * emits the client's destroy signal before it destroys the client's
 * resources, so the surfaces may still need it afterwards.
 */
struct client_state {
	struct wl_listener client_destroy;
	struct wl_client *client; /* NULL once it is being destroyed */
	uint32_t queued;
	int refs;
};

struct sb_wl_commit {
	struct sb_wl_server *server; /* NULL once the server is gone */
	struct wl_list server_link;  /* server->commits */
	struct wl_list link;         /* owner->queue or owner->held */
	struct sync_surface *owner;  /* NULL once the wl_surface is gone */
	bool queued;
	bool ready;   /* acquire signalled (or nothing to wait for) */
	int acquire_status; /* 0, or the error the acquire fence completed with */
	void *data;   /* the compositor's commit_data */

	enum sb_wl_sync_protocol protocol;
	int acquire_fd;                    /* v1: owned sync_file, or -1 */
	struct wl_resource *release_res;   /* v1: zwp_linux_buffer_release_v1, or NULL */
	struct point acquire, release;     /* drm-syncobj */
};

struct sync_surface {
	struct sb_wl_server *server;
	struct wl_list link;          /* server->surfaces */
	struct wl_resource *surface;  /* the wl_surface */
	struct wl_listener surface_destroy;
	struct client_state *client;  /* a reference */

	struct wl_resource *sync;     /* the extension object, or NULL */
	enum sb_wl_sync_protocol protocol;

	/* Pending (double-buffered) state, applied by the next commit. */
	int acquire_fd;                  /* v1 */
	struct wl_resource *release_res; /* v1 */
	struct point acquire, release;   /* drm-syncobj */

	struct wl_list queue; /* sb_wl_commit.link, oldest first */
	uint32_t queued;
	struct wl_list held;  /* sb_wl_commit.link: with the compositor */
	struct wait wait;     /* the queue head's, when it waits */
};

struct sb_wl_server {
	struct wl_display *display;
	struct wl_event_loop *loop;
	int drm_fd;
	uint32_t flags;
	uint32_t max_pending;
	uint32_t max_client_pending;
	struct sb_wl_server_impl impl;
	void *data;

	struct wl_global *explicit_global;
	struct wl_global *syncobj_global;
	struct wl_listener display_destroy;

	struct wl_list surfaces;  /* sync_surface.link */
	struct wl_list timelines; /* timeline.link */
	struct wl_list managers;  /* wl_resource links of bound globals */
	struct wl_list commits;   /* sb_wl_commit.server_link */
	struct wl_list deferred;  /* deferred_signal.link */

	struct sb_wl_server_stats stats;
	bool warned_acquire_error;
};

/* ---- per-client accounting ------------------------------------------------- */

static void
client_state_unref(struct client_state *cs)
{
	if (cs && --cs->refs == 0)
		free(cs);
}

/*
 * Keep the client's last events deliverable: stop it sending, then drop
 * what it sent that nobody will read.
 *
 * libwayland-server emits the client's destroy signal, then flushes the
 * client's events (a protocol error we posted among them), then closes the
 * socket. If requests the client sent in the meantime are still unread in
 * the socket then, the kernel marks the client's end ECONNRESET (af_unix
 * close with a non-empty receive queue), and libwayland-client 1.23 reads
 * until EAGAIN: its read after the error event's bytes fails ECONNRESET, and
 * it drops the bytes it already has. The client sees "Connection reset by
 * peer" instead of our error. shutdown(SHUT_RD) makes the client's further
 * sends fail with EPIPE (which libwayland-client tolerates) and lets nothing
 * more into our receive queue; draining it leaves the close nothing to reset.
 * Fds in the drained messages are released by the kernel (no control buffer).
 * This changes the socket's state, which wl_client_get_fd() warns about; the
 * connection is being destroyed, and only the flush and the close follow.
 */
static void
client_quiesce(struct wl_client *client)
{
	int fd = wl_client_get_fd(client);
	char sink[4096];
	ssize_t n;

	if (shutdown(fd, SHUT_RD) < 0)
		return; /* not connected any more: nothing can be reset */
	do {
		n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
	} while (n > 0 || (n < 0 && errno == EINTR));
}

static void
client_destroy_notify(struct wl_listener *listener, void *data)
{
	struct client_state *cs = wl_container_of(listener, cs, client_destroy);

	client_quiesce(data);
	cs->client = NULL;
	wl_list_remove(&cs->client_destroy.link);
	client_state_unref(cs);
}

/* The client's state, created on first use; returns a new reference or NULL. */
static struct client_state *
client_state_get(struct wl_client *client)
{
	struct wl_listener *l = wl_client_get_destroy_listener(client, client_destroy_notify);
	struct client_state *cs;

	if (l) {
		cs = wl_container_of(l, cs, client_destroy);
	} else {
		cs = calloc(1, sizeof(*cs));
		if (!cs)
			return NULL;
		cs->refs = 1; /* the listener's */
		cs->client = client;
		cs->client_destroy.notify = client_destroy_notify;
		wl_client_add_destroy_listener(client, &cs->client_destroy);
	}
	cs->refs++;
	return cs;
}

/* ---- timelines and points ------------------------------------------------ */

/* Drop our handle of an imported timeline on the server's DRM fd. */
static void
handle_destroy(struct sb_wl_server *server, uint32_t handle)
{
	struct drm_syncobj_destroy args;

	memset(&args, 0, sizeof(args));
	args.handle = handle;
	sb_ioctl(server->drm_fd, DRM_IOCTL_SYNCOBJ_DESTROY, &args);
}

static void
timeline_unref(struct timeline *tl)
{
	if (!tl || --tl->refs > 0)
		return;
	if (tl->server && tl->handle)
		handle_destroy(tl->server, tl->handle);
	wl_list_remove(&tl->link);
	client_state_unref(tl->client);
	free(tl);
}

static void
point_set(struct point *p, struct timeline *tl, uint64_t value)
{
	if (tl)
		tl->refs++;
	timeline_unref(p->timeline);
	p->timeline = tl;
	p->value = value;
}

static void
point_clear(struct point *p)
{
	point_set(p, NULL, 0);
}

static void
point_move(struct point *dst, struct point *src)
{
	point_clear(dst);
	*dst = *src;
	src->timeline = NULL;
	src->value = 0;
}

/* The point's timeline can still be used (the server and its DRM fd exist). */
static bool
point_usable(const struct point *p)
{
	return p->timeline && p->timeline->server && p->timeline->handle;
}

/* ---- waits ------------------------------------------------------------------ */

static void
wait_init(struct wait *w)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
}

/* The wait no longer counts as pending (it fired, or it is being torn down). */
static void
wait_uncount(struct sb_wl_server *server, struct wait *w)
{
	if (w->counted && server) {
		server->stats.waits_pending--;
		if (w->threaded)
			server->stats.waits_threaded--;
	}
	w->counted = false;
}

static void
wait_finish(struct sb_wl_server *server, struct wait *w)
{
	if (w->source)
		wl_event_source_remove(w->source);
	wait_uncount(server, w);
	sb_syncobj_waiter_destroy(w->waiter);
	fd_clear(&w->fd);
	wait_init(w);
}

/* ---- commits ------------------------------------------------------------------ */

static struct sb_wl_commit *
commit_create(struct sb_wl_server *server, void *data)
{
	struct sb_wl_commit *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->server = server;
	c->data = data;
	c->acquire_fd = -1;
	wl_list_init(&c->link);
	wl_list_insert(&server->commits, &c->server_link);
	return c;
}

/* The release resource's destructor clears whichever field points at it. */
static void
release_res_destroy(struct wl_resource *resource)
{
	struct wl_resource **slot = wl_resource_get_user_data(resource);

	if (slot)
		*slot = NULL;
}

static void
release_res_move(struct wl_resource **dst, struct wl_resource **src)
{
	*dst = *src;
	*src = NULL;
	if (*dst)
		wl_resource_set_user_data(*dst, dst);
}

/* Send the v1 release event (it destroys the object). fence_fd: borrowed or -1. */
static void
release_res_send(struct wl_resource **slot, int fence_fd)
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

/* Signals a release point once a compositor fence signals (import fallback). */
struct deferred_signal {
	struct sb_wl_server *server;
	struct wl_list link; /* server->deferred */
	struct wl_event_source *source;
	int fd;
	struct point point;
};

static void
deferred_signal_free(struct deferred_signal *d)
{
	if (d->source)
		wl_event_source_remove(d->source);
	fd_clear(&d->fd);
	point_clear(&d->point);
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
point_signal_now(struct sb_wl_server *server, struct point *p)
{
	int ret = sb_syncobj_signal(server->drm_fd, p->timeline->handle, p->value);

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

	if (point_usable(&d->point))
		point_signal_now(d->server, &d->point);
	deferred_signal_free(d);
	return 0;
}

static void
release_point_signal(struct sb_wl_server *server, struct point *p, int fence_fd)
{
	int ret;

	if (!point_usable(p))
		return;
	if (fence_fd < 0) {
		point_signal_now(server, p);
		return;
	}
	ret = sb_syncobj_import_sync_file(server->drm_fd, p->timeline->handle, p->value, fence_fd);
	if (ret == 0)
		return;
	/* Never signal early: wait for the fence in the loop, then signal. */
	sb_log_errno(SB_LOG_WARN, ret, "release fence import failed; signalling point %llu "
		     "from the event loop once the fence signals", (unsigned long long)p->value);
	struct deferred_signal *d = calloc(1, sizeof(*d));
	int fd = sb_fd_dup(fence_fd);
	if (!d || fd < 0) {
		/* Last resort, still correct: wait here. */
		free(d);
		if (fd >= 0)
			close(fd);
		sb_sync_file_wait(fence_fd, SB_TIMEOUT_INFINITE);
		point_signal_now(server, p);
		return;
	}
	d->server = server;
	d->fd = fd;
	wl_list_insert(&server->deferred, &d->link);
	point_set(&d->point, p->timeline, p->value);
	d->source = wl_event_loop_add_fd(server->loop, fd, WL_EVENT_READABLE, deferred_signal_fire, d);
	if (!d->source) {
		sb_sync_file_wait(fence_fd, SB_TIMEOUT_INFINITE);
		deferred_signal_fire(fd, 0, d); /* frees d */
	}
}

/* Release the commit's buffer (fence_fd: borrowed, -1 = now) and free it. */
static void
commit_release_and_free(struct sb_wl_commit *c, int fence_fd)
{
	release_res_send(&c->release_res, fence_fd);
	if (c->server)
		release_point_signal(c->server, &c->release, fence_fd);
	point_clear(&c->acquire);
	point_clear(&c->release);
	fd_clear(&c->acquire_fd);
	if (c->release_res) /* not sent (cannot happen) — detach */
		wl_resource_set_user_data(c->release_res, NULL);
	wl_list_remove(&c->link);
	if (c->server) {
		wl_list_remove(&c->server_link);
		if (c->queued)
			c->server->stats.commits_queued--;
	}
	if (c->owner && c->queued) {
		c->owner->queued--;
		c->owner->client->queued--;
	}
	free(c);
}

/*
 * A fence that completed with an error still completed (the kernel signals
 * it; dma_fence_set_error() only annotates it), and neither protocol XML
 * defines an answer for it: the commit is applied, and the error is recorded
 * for the compositor (sb_wl_commit_get_acquire_status()), which may choose
 * not to show the buffer.
 */
static void
acquire_record_status(struct sb_wl_commit *c, int status)
{
	struct sb_wl_server *server = c->server;

	if (status >= 0 || !server)
		return;
	c->acquire_status = status;
	server->stats.acquire_errors++;
	if (!server->warned_acquire_error) {
		server->warned_acquire_error = true;
		sb_warn("a client's acquire fence completed with error %d (the client's or its "
			"driver's problem); applying its commit and reporting it through "
			"sb_wl_commit_get_acquire_status() (further ones are logged at debug level)",
			status);
	} else {
		sb_debug("client acquire fence completed with error %d; applying anyway", status);
	}
}

/*
 * Record the status of a completed acquire: fd is a sync_file of it, or -1
 * for a timeline point (exported now: DRM syncobj waits report no error).
 */
static void
acquire_check_status(struct sb_wl_commit *c, int fd)
{
	int status = 1, own = -1;

	if (fd < 0 && c->server && point_usable(&c->acquire) &&
	    sb_syncobj_export_sync_file(c->server->drm_fd, c->acquire.timeline->handle,
					c->acquire.value, &own) == 0)
		fd = own;
	if (fd >= 0 && sb_sync_file_get_status(fd, &status) == 0)
		acquire_record_status(c, status);
	fd_clear(&own);
}

/*
 * Whether the commit's acquire has signalled: 1 yes (or nothing to wait
 * for), 0 not yet or not known. A fence that completed with an error has
 * signalled (acquire_record_status()). When the kernel will not answer (the
 * status query or the zero-timeout wait fails), the answer is "not yet":
 * applying would show the buffer before its fence (fault-wl caught that).
 * The event-loop wait (wait_start()) then decides — poll() on the sync_file
 * needs no ioctl; a point gets exported or a waiter — and if it cannot be
 * set up either, the client is disconnected: never held forever.
 */
static int
acquire_signalled(struct sb_wl_commit *c)
{
	int status = 1, ret;

	if (c->acquire_fd >= 0) {
		/* The fd answered SYNC_IOC_FILE_INFO when the client sent it. */
		ret = sb_sync_file_get_status(c->acquire_fd, &status);
		if (ret) {
			sb_log_errno(SB_LOG_DEBUG, ret, "acquire fence status unknown (kernel); "
				     "waiting for it in the event loop");
			return 0;
		}
		acquire_record_status(c, status);
		return status != 0;
	}
	if (point_usable(&c->acquire)) {
		ret = sb_syncobj_wait(c->server->drm_fd, c->acquire.timeline->handle,
				      c->acquire.value, 0, 0);
		if (ret == -ETIME)
			return 0;
		if (ret) {
			sb_log_errno(SB_LOG_DEBUG, ret, "acquire point %llu: zero-timeout wait failed "
				     "(kernel); waiting for it in the event loop",
				     (unsigned long long)c->acquire.value);
			return 0;
		}
		acquire_check_status(c, -1);
		return 1;
	}
	return 1;
}

/* ---- the queue ---------------------------------------------------------------- */

static void queue_advance(struct sync_surface *ss);
static void queue_hand_over(struct sync_surface *ss, struct sb_wl_commit *c);

static int
wait_fired(int fd, uint32_t mask, void *data)
{
	struct sync_surface *ss = data;
	struct sb_wl_commit *head;
	int err;

	sb_trace("wl.acquire_signalled surface=%u", wl_resource_get_id(ss->surface));
	ss->server->stats.wakeups++;
	if (ss->wait.waiter && (err = sb_syncobj_waiter_get_error(ss->wait.waiter)) != 0)
		sb_log_errno(SB_LOG_DEBUG, err, "acquire point wait ended without the point "
			     "signalling; applying (errors count as signalled)");
	if (!wl_list_empty(&ss->queue)) {
		head = wl_container_of(ss->queue.next, head, link);
		/* The client's sync_file (v1, implicit), or -1: export the point. */
		acquire_check_status(head, ss->wait.fd);
		head->ready = true;
		wait_uncount(ss->server, &ss->wait);
		/*
		 * Hand the head over before tearing the wait down: removing the
		 * source (epoll_ctl + close of its duplicate) and closing the
		 * client's sync_file are two to three system calls that need not
		 * stand between the signal and the compositor (bench-wake,
		 * docs/performance.md figure 3). A commit_ready() that re-enters
		 * the queue finds ss->wait.source still set and leaves the next
		 * wait to the queue_advance() below.
		 */
		queue_hand_over(ss, head);
	}
	wait_finish(ss->server, &ss->wait);
	queue_advance(ss);
	return 0;
}

/*
 * Start waiting for the head's acquire. Returns 0 (waiting), 1 (signalled
 * after all) or -errno.
 */
static int
wait_start(struct sync_surface *ss, struct sb_wl_commit *c)
{
	struct sb_wl_server *server = ss->server;
	struct wait *w = &ss->wait;
	int fd, ret;

	if (c->acquire_fd >= 0) {
		fd = c->acquire_fd; /* the source polls a duplicate; ours is closed below */
	} else {
		uint32_t handle = c->acquire.timeline->handle;

		/* A materialised point: its fence as a sync_file (no thread on any kernel). */
		ret = sb_syncobj_export_sync_file(server->drm_fd, handle, c->acquire.value, &w->fd);
		if (ret == 0) {
			fd = w->fd;
		} else if (ret == -EINVAL) {
			/* Not materialised yet: the kernel's eventfd, or the waiter's thread. */
			ret = sb_syncobj_waiter_create(server->drm_fd, handle, c->acquire.value, 0,
						       &w->waiter);
			if (ret)
				return ret;
			w->threaded = !sb_syncobj_waiter_uses_eventfd(w->waiter);
			fd = sb_syncobj_waiter_get_fd(w->waiter);
		} else {
			return ret;
		}
	}
	w->source = wl_event_loop_add_fd(server->loop, fd, WL_EVENT_READABLE, wait_fired, ss);
	if (!w->source) {
		wait_finish(server, w);
		return -ENOMEM;
	}
	/*
	 * wl_event_loop_add_fd() polls a duplicate of fd (and hands its callback
	 * the number it was given, not the duplicate). Keep as few fds as the
	 * wait needs: the client's sync_file stays with the wait so that its
	 * completion status can be read when it fires (a fence may complete with
	 * an error: acquire_check_status()); an exported point's sync_file is
	 * dropped (the point is exported again then). The kernel's eventfd
	 * registration holds its own reference to the eventfd, so the kernel
	 * path needs no waiter object any more; the waiter's thread fallback
	 * keeps its fd, since the thread writes to it.
	 */
	fd_clear(&w->fd);
	if (c->acquire_fd >= 0)
		w->fd = fd_move(&c->acquire_fd);
	if (w->waiter && !w->threaded) {
		sb_syncobj_waiter_destroy(w->waiter);
		w->waiter = NULL;
	}
	server->stats.waits_pending++;
	if (w->threaded)
		server->stats.waits_threaded++;
	w->counted = true;
	return 0;
}

/* Hand every ready commit at the head of the queue to the compositor, in order. */
static void
queue_advance(struct sync_surface *ss)
{
	struct sb_wl_server *server = ss->server;

	while (!wl_list_empty(&ss->queue)) {
		struct sb_wl_commit *c = wl_container_of(ss->queue.next, c, link);

		if (!c->ready) {
			if (ss->wait.source)
				return;
			if ((server->flags & SB_WL_SERVER_NO_WAIT) || acquire_signalled(c)) {
				c->ready = true;
			} else {
				int ret = wait_start(ss, c);
				if (ret == 0)
					return;
				if (ret != 1) {
					sb_log_errno(SB_LOG_ERROR, ret, "cannot wait for an acquire fence "
						     "(ours/kernel); disconnecting the client");
					wl_client_post_no_memory(wl_resource_get_client(ss->surface));
					return;
				}
				c->ready = true;
			}
		}
		queue_hand_over(ss, c);
	}
}

/* Move a ready commit from the queue to the held list and give it to the compositor. */
static void
queue_hand_over(struct sync_surface *ss, struct sb_wl_commit *c)
{
	struct sb_wl_server *server = ss->server;

	wl_list_remove(&c->link);
	wl_list_insert(ss->held.prev, &c->link);
	c->queued = false;
	ss->queued--;
	ss->client->queued--;
	server->stats.commits_queued--;
	sb_trace("wl.commit_ready surface=%u", wl_resource_get_id(ss->surface));
	server->impl.commit_ready(c, c->data, server->data);
}

/* The wl_surface is gone (or the server is): its waiting commits never apply. */
static void
queue_discard(struct sync_surface *ss)
{
	struct sb_wl_server *server = ss->server;
	struct sb_wl_commit *c, *tmp;

	wait_finish(server, &ss->wait);
	wl_list_for_each_safe(c, tmp, &ss->queue, link) {
		wl_list_remove(&c->link);
		wl_list_init(&c->link);
		if (server->impl.commit_discard)
			server->impl.commit_discard(c->data, server->data);
		/* Never shown: the client may reuse the buffer at once. */
		commit_release_and_free(c, -1);
	}
}

/* ---- per-surface state ----------------------------------------------------------- */

static void surface_destroy_notify(struct wl_listener *listener, void *data);

static struct sync_surface *
sync_surface_lookup(struct wl_resource *surface)
{
	struct wl_listener *l = wl_resource_get_destroy_listener(surface, surface_destroy_notify);
	struct sync_surface *ss;

	if (!l)
		return NULL;
	return wl_container_of(l, ss, surface_destroy);
}

static void
pending_clear(struct sync_surface *ss)
{
	fd_clear(&ss->acquire_fd);
	if (ss->release_res) {
		/* A get_release whose commit never came: it stays unanswered. */
		wl_resource_set_user_data(ss->release_res, NULL);
		ss->release_res = NULL;
	}
	point_clear(&ss->acquire);
	point_clear(&ss->release);
}

static struct sync_surface *
sync_surface_get(struct sb_wl_server *server, struct wl_resource *surface)
{
	struct sync_surface *ss = sync_surface_lookup(surface);

	if (ss)
		return ss;
	ss = calloc(1, sizeof(*ss));
	if (!ss)
		return NULL;
	ss->client = client_state_get(wl_resource_get_client(surface));
	if (!ss->client) {
		free(ss);
		return NULL;
	}
	ss->server = server;
	ss->surface = surface;
	ss->acquire_fd = -1;
	wl_list_init(&ss->queue);
	wl_list_init(&ss->held);
	wait_init(&ss->wait);
	ss->surface_destroy.notify = surface_destroy_notify;
	wl_resource_add_destroy_listener(surface, &ss->surface_destroy);
	wl_list_insert(&server->surfaces, &ss->link);
	return ss;
}

static void
sync_surface_free(struct sync_surface *ss)
{
	struct sb_wl_commit *c, *tmp;

	queue_discard(ss);
	pending_clear(ss);
	wl_list_for_each_safe(c, tmp, &ss->held, link) {
		wl_list_remove(&c->link);
		wl_list_init(&c->link);
		c->owner = NULL;
	}
	if (ss->sync)
		wl_resource_set_user_data(ss->sync, NULL); /* later requests: NO_SURFACE */
	wl_list_remove(&ss->surface_destroy.link);
	wl_list_remove(&ss->link);
	client_state_unref(ss->client);
	free(ss);
}

static void
surface_destroy_notify(struct wl_listener *listener, void *data)
{
	struct sync_surface *ss = wl_container_of(listener, ss, surface_destroy);

	sync_surface_free(ss);
}

/* The extension object went away: the surface has no sync object now. */
static void
sync_res_destroy(struct wl_resource *resource)
{
	struct sync_surface *ss = wl_resource_get_user_data(resource);

	if (!ss)
		return;
	pending_clear(ss);
	ss->sync = NULL;
	ss->protocol = SB_WL_SYNC_NONE;
}

static void
resource_destroy_request(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

/* ---- zwp_linux_explicit_synchronization_v1 ------------------------------------- */

static void
v1_set_acquire_fence(struct wl_client *client, struct wl_resource *resource, int32_t fd)
{
	struct sync_surface *ss = wl_resource_get_user_data(resource);

	if (!ss) {
		wl_resource_post_error(resource, ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_NO_SURFACE,
				       "the wl_surface of this object was destroyed");
		goto out_close;
	}
	/* Weston's rule: a sync_file must answer SYNC_IOC_FILE_INFO. */
	if (!sb_sync_file_is_valid(fd)) {
		wl_resource_post_error(resource, ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_INVALID_FENCE,
				       "the acquire fence fd is not a sync_file");
		goto out_close;
	}
	if (ss->acquire_fd >= 0) {
		wl_resource_post_error(resource, ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_DUPLICATE_FENCE,
				       "an acquire fence was already set for this commit");
		goto out_close;
	}
	ss->acquire_fd = fd;
	return;

out_close:
	close(fd);
}

static void
v1_get_release(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct sync_surface *ss = wl_resource_get_user_data(resource);
	struct wl_resource *rel;

	if (!ss) {
		wl_resource_post_error(resource, ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_NO_SURFACE,
				       "the wl_surface of this object was destroyed");
		return;
	}
	if (ss->release_res) {
		wl_resource_post_error(resource, ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_DUPLICATE_RELEASE,
				       "a release object was already requested for this commit");
		return;
	}
	rel = wl_resource_create(client, &zwp_linux_buffer_release_v1_interface, 1, id);
	if (!rel) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(rel, NULL, &ss->release_res, release_res_destroy);
	ss->release_res = rel;
}

static const struct zwp_linux_surface_synchronization_v1_interface v1_surface_impl = {
	.destroy = resource_destroy_request,
	.set_acquire_fence = v1_set_acquire_fence,
	.get_release = v1_get_release,
};

static void
manager_res_destroy(struct wl_resource *resource)
{
	wl_list_remove(wl_resource_get_link(resource));
}

/*
 * Create the per-surface extension object. `exists_error` is the manager's
 * *_exists code: a surface has at most one explicit synchronization object,
 * of either protocol.
 */
static void
create_sync_object(struct wl_client *client, struct wl_resource *manager, uint32_t id,
		   struct wl_resource *surface, enum sb_wl_sync_protocol protocol,
		   const struct wl_interface *iface, const void *impl, uint32_t exists_error)
{
	struct sb_wl_server *server = wl_resource_get_user_data(manager);
	struct sync_surface *ss = NULL;
	struct wl_resource *res;

	if (server) {
		ss = sync_surface_lookup(surface);
		if (ss && ss->sync) {
			wl_resource_post_error(manager, exists_error,
					       "wl_surface@%u already has an explicit synchronization object",
					       wl_resource_get_id(surface));
			return;
		}
	}
	res = wl_resource_create(client, iface, wl_resource_get_version(manager), id);
	if (!res) {
		wl_client_post_no_memory(client);
		return;
	}
	if (!server) { /* the helper is being torn down: an inert object */
		wl_resource_set_implementation(res, impl, NULL, sync_res_destroy);
		return;
	}
	ss = sync_surface_get(server, surface);
	if (!ss) {
		wl_resource_destroy(res);
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(res, impl, ss, sync_res_destroy);
	ss->sync = res;
	ss->protocol = protocol;
}

static void
v1_get_synchronization(struct wl_client *client, struct wl_resource *resource, uint32_t id,
		       struct wl_resource *surface)
{
	create_sync_object(client, resource, id, surface, SB_WL_SYNC_EXPLICIT_V1,
			   &zwp_linux_surface_synchronization_v1_interface, &v1_surface_impl,
			   ZWP_LINUX_EXPLICIT_SYNCHRONIZATION_V1_ERROR_SYNCHRONIZATION_EXISTS);
}

static const struct zwp_linux_explicit_synchronization_v1_interface v1_manager_impl = {
	.destroy = resource_destroy_request,
	.get_synchronization = v1_get_synchronization,
};

static void
bind_manager(struct wl_client *client, struct sb_wl_server *server, const struct wl_interface *iface,
	     const void *impl, uint32_t version, uint32_t id)
{
	struct wl_resource *res = wl_resource_create(client, iface, version, id);

	if (!res) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(res, impl, server, manager_res_destroy);
	wl_list_insert(&server->managers, wl_resource_get_link(res));
	/* The client state's destroy listener quiesces the connection (see
	 * client_quiesce): every client that can get an error from us has one. */
	client_state_unref(client_state_get(client));
}

static void
v1_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	bind_manager(client, data, &zwp_linux_explicit_synchronization_v1_interface,
		     &v1_manager_impl, version, id);
}

/* ---- wp_linux_drm_syncobj_manager_v1 --------------------------------------------- */

static void
timeline_res_destroy(struct wl_resource *resource)
{
	struct timeline *tl = wl_resource_get_user_data(resource);

	if (!tl)
		return;
	/* Points already set keep the timeline (the XML: they are not unset). */
	tl->resource = NULL;
	timeline_unref(tl);
}

static const struct wp_linux_drm_syncobj_timeline_v1_interface timeline_impl = {
	.destroy = resource_destroy_request,
};

static void
syncobj_import_timeline(struct wl_client *client, struct wl_resource *resource, uint32_t id,
			int32_t fd)
{
	struct sb_wl_server *server = wl_resource_get_user_data(resource);
	struct drm_syncobj_handle args;
	struct timeline *tl = NULL;
	struct wl_resource *res;
	int ret = -ENODEV;

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
	memset(&args, 0, sizeof(args));
	args.fd = fd;
	ret = sb_ioctl(server->drm_fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &args);
	if (ret < 0) {
		wl_resource_post_error(resource, WP_LINUX_DRM_SYNCOBJ_MANAGER_V1_ERROR_INVALID_TIMELINE,
				       "the fd is not a DRM syncobj (import failed: %s)", strerror(-ret));
		goto out_close;
	}
	tl = calloc(1, sizeof(*tl));
	if (!tl)
		goto err_destroy_handle;
	tl->client = client_state_get(client);
	if (!tl->client)
		goto err_free_timeline;
	tl->server = server;
	tl->handle = args.handle;
	tl->refs = 1; /* the resource's */
	tl->resource = res;
	wl_list_insert(&server->timelines, &tl->link);
	wl_resource_set_user_data(res, tl);
	goto out_close;

err_free_timeline:
	free(tl);
err_destroy_handle:
	handle_destroy(server, args.handle);
	wl_client_post_no_memory(client);
out_close:
	close(fd);
}

static void
syncobj_set_point(struct wl_resource *resource, struct wl_resource *timeline_res,
		  uint32_t hi, uint32_t lo, bool acquire)
{
	struct sync_surface *ss = wl_resource_get_user_data(resource);
	struct timeline *tl = wl_resource_get_user_data(timeline_res);

	if (!ss) {
		wl_resource_post_error(resource, WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_NO_SURFACE,
				       "the wl_surface of this object was destroyed");
		return;
	}
	if (!tl)
		return; /* an inert timeline (helper torn down) */
	point_set(acquire ? &ss->acquire : &ss->release, tl, ((uint64_t)hi << 32) | lo);
}

static void
syncobj_set_acquire_point(struct wl_client *client, struct wl_resource *resource,
			  struct wl_resource *timeline, uint32_t hi, uint32_t lo)
{
	syncobj_set_point(resource, timeline, hi, lo, true);
}

static void
syncobj_set_release_point(struct wl_client *client, struct wl_resource *resource,
			  struct wl_resource *timeline, uint32_t hi, uint32_t lo)
{
	syncobj_set_point(resource, timeline, hi, lo, false);
}

static const struct wp_linux_drm_syncobj_surface_v1_interface syncobj_surface_impl = {
	.destroy = resource_destroy_request,
	.set_acquire_point = syncobj_set_acquire_point,
	.set_release_point = syncobj_set_release_point,
};

static void
syncobj_get_surface(struct wl_client *client, struct wl_resource *resource, uint32_t id,
		    struct wl_resource *surface)
{
	create_sync_object(client, resource, id, surface, SB_WL_SYNC_DRM_SYNCOBJ,
			   &wp_linux_drm_syncobj_surface_v1_interface, &syncobj_surface_impl,
			   WP_LINUX_DRM_SYNCOBJ_MANAGER_V1_ERROR_SURFACE_EXISTS);
}

static const struct wp_linux_drm_syncobj_manager_v1_interface syncobj_manager_impl = {
	.destroy = resource_destroy_request,
	.get_surface = syncobj_get_surface,
	.import_timeline = syncobj_import_timeline,
};

static void
syncobj_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	bind_manager(client, data, &wp_linux_drm_syncobj_manager_v1_interface,
		     &syncobj_manager_impl, version, id);
}

/* ---- commit ------------------------------------------------------------------------ */

/* The protocol errors a commit can raise; returns false after posting one. */
static bool
check_commit(struct sync_surface *ss, const struct sb_wl_surface_commit_info *info)
{
	bool has_buffer = info->buffer_attached && info->buffer;
	uint32_t sid = wl_resource_get_id(ss->surface);

	if (ss->protocol == SB_WL_SYNC_EXPLICIT_V1) {
		if (ss->acquire_fd >= 0 && !has_buffer) {
			wl_resource_post_error(ss->sync, ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_NO_BUFFER,
					       "wl_surface@%u: an acquire fence without a buffer", sid);
			return false;
		}
		if (ss->acquire_fd >= 0 && !info->buffer_supports_sync) {
			wl_resource_post_error(ss->sync,
					       ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_UNSUPPORTED_BUFFER,
					       "wl_surface@%u: the buffer does not support explicit "
					       "synchronization (only linux-dmabuf buffers do)", sid);
			return false;
		}
		if (ss->release_res && !has_buffer) {
			wl_resource_post_error(ss->sync, ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_NO_BUFFER,
					       "wl_surface@%u: a release request without a buffer", sid);
			return false;
		}
		return true;
	}
	if (ss->protocol != SB_WL_SYNC_DRM_SYNCOBJ)
		return true;

	if (!has_buffer) {
		if (ss->acquire.timeline || ss->release.timeline) {
			wl_resource_post_error(ss->sync, WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_NO_BUFFER,
					       "wl_surface@%u: a timeline point without a buffer", sid);
			return false;
		}
		return true;
	}
	if (!ss->acquire.timeline) {
		wl_resource_post_error(ss->sync, WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_NO_ACQUIRE_POINT,
				       "wl_surface@%u: a buffer without an acquire point", sid);
		return false;
	}
	if (!ss->release.timeline) {
		wl_resource_post_error(ss->sync, WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_NO_RELEASE_POINT,
				       "wl_surface@%u: a buffer without a release point", sid);
		return false;
	}
	if (!info->buffer_supports_sync) {
		wl_resource_post_error(ss->sync, WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_UNSUPPORTED_BUFFER,
				       "wl_surface@%u: the buffer does not support explicit "
				       "synchronization (only linux-dmabuf buffers do)", sid);
		return false;
	}
	if (ss->acquire.timeline == ss->release.timeline && ss->acquire.value >= ss->release.value) {
		wl_resource_post_error(ss->sync, WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_CONFLICTING_POINTS,
				       "wl_surface@%u: acquire point %llu is not before release point "
				       "%llu on the same timeline", sid,
				       (unsigned long long)ss->acquire.value,
				       (unsigned long long)ss->release.value);
		return false;
	}
	return true;
}

int
sb_wl_server_surface_commit(struct sb_wl_server *server, struct wl_resource *surface,
			    const struct sb_wl_surface_commit_info *info, void *commit_data,
			    struct sb_wl_commit **out)
{
	struct sync_surface *ss;
	struct sb_wl_commit *c;
	bool carries;

	if (out)
		*out = NULL;
	if (!server || !surface || !info || !out)
		return -EINVAL;

	ss = sync_surface_lookup(surface);
	if (ss && ss->sync && !check_commit(ss, info)) {
		pending_clear(ss);
		return -EPROTO;
	}

	/* Implicit sync: no explicit acquire, a dma-buf: wait for its writers. */
	int implicit_fd = -1;
	if ((server->flags & SB_WL_SERVER_WAIT_IMPLICIT) && !(server->flags & SB_WL_SERVER_NO_WAIT) &&
	    info->buffer_attached && info->buffer && info->dmabuf_fd >= 0 &&
	    !(ss && (ss->acquire_fd >= 0 || ss->acquire.timeline))) {
		int ret = sb_dmabuf_export_sync_file(info->dmabuf_fd, SB_ACCESS_READ, &implicit_fd);
		int st = 1;
		if (ret)
			sb_log_errno(SB_LOG_DEBUG, ret, "no implicit fence snapshot of the buffer");
		else if (sb_sync_file_get_status(implicit_fd, &st) != 0 || st != 0)
			fd_clear(&implicit_fd); /* idle already */
		if (implicit_fd >= 0 && !ss) {
			ss = sync_surface_get(server, surface);
			if (!ss) {
				fd_clear(&implicit_fd);
				wl_resource_post_no_memory(surface);
				return -ENOMEM;
			}
		}
	}
	if (!ss)
		return SB_WL_COMMIT_APPLY; /* no sync object, nothing to wait for */

	carries = ss->acquire_fd >= 0 || ss->release_res || ss->acquire.timeline || ss->release.timeline;
	if (!carries && implicit_fd < 0 && wl_list_empty(&ss->queue))
		return SB_WL_COMMIT_APPLY;

	c = commit_create(server, commit_data);
	if (!c) {
		fd_clear(&implicit_fd);
		pending_clear(ss);
		wl_resource_post_no_memory(surface);
		return -ENOMEM;
	}
	c->owner = ss;
	c->protocol = carries ? ss->protocol : SB_WL_SYNC_NONE;
	c->acquire_fd = implicit_fd >= 0 ? implicit_fd : fd_move(&ss->acquire_fd);
	release_res_move(&c->release_res, &ss->release_res);
	point_move(&c->acquire, &ss->acquire);
	point_move(&c->release, &ss->release);

	if (wl_list_empty(&ss->queue) &&
	    ((server->flags & SB_WL_SERVER_NO_WAIT) || acquire_signalled(c))) {
		c->ready = true;
		sb_trace("wl.commit surface=%u result=apply acquire_point=%llu %s",
			 wl_resource_get_id(surface), (unsigned long long)c->acquire.value,
			 sb_trace_sync_file(c->acquire_fd).s);
		wl_list_insert(ss->held.prev, &c->link);
		*out = c;
		return SB_WL_COMMIT_APPLY;
	}

	if (ss->queued >= server->max_pending) {
		server->stats.clients_over_limit++;
		wl_client_post_implementation_error(wl_resource_get_client(surface),
						    "wl_surface@%u has %u commits waiting for acquire "
						    "fences that have not signalled (limit %u)",
						    wl_resource_get_id(surface), ss->queued,
						    server->max_pending);
		commit_release_and_free(c, -1);
		return -EPROTO;
	}
	if (ss->client->queued >= server->max_client_pending) {
		server->stats.clients_over_limit++;
		wl_client_post_implementation_error(wl_resource_get_client(surface),
						    "%u commits of this client wait for acquire fences "
						    "that have not signalled (limit %u per client)",
						    ss->client->queued, server->max_client_pending);
		commit_release_and_free(c, -1);
		return -EPROTO;
	}
	wl_list_insert(ss->queue.prev, &c->link);
	c->queued = true;
	ss->queued++;
	ss->client->queued++;
	server->stats.commits_queued++;
	server->stats.commits_deferred++;
	sb_trace("wl.commit surface=%u result=deferred acquire_point=%llu %s",
		 wl_resource_get_id(surface), (unsigned long long)c->acquire.value,
		 sb_trace_sync_file(c->acquire_fd).s);
	if (ss->queue.next == &c->link) {
		/* The head: start waiting (it is not signalled, checked above). */
		int ret = wait_start(ss, c);
		if (ret < 0) {
			sb_log_errno(SB_LOG_ERROR, ret, "cannot wait for an acquire fence (ours/kernel)");
			wl_list_remove(&c->link);
			wl_list_init(&c->link);
			c->queued = false;
			ss->queued--;
			ss->client->queued--;
			server->stats.commits_queued--;
			commit_release_and_free(c, -1);
			wl_resource_post_no_memory(surface);
			return -ENOMEM;
		}
	}
	return SB_WL_COMMIT_DEFERRED;
}

enum sb_wl_sync_protocol
sb_wl_server_surface_get_protocol(struct sb_wl_server *server, struct wl_resource *surface)
{
	struct sync_surface *ss;

	if (!server || !surface)
		return SB_WL_SYNC_NONE;
	ss = sync_surface_lookup(surface);
	return ss && ss->sync ? ss->protocol : SB_WL_SYNC_NONE;
}

enum sb_wl_sync_protocol
sb_wl_commit_get_protocol(const struct sb_wl_commit *commit)
{
	return commit ? commit->protocol : SB_WL_SYNC_NONE;
}

int
sb_wl_commit_get_acquire_status(const struct sb_wl_commit *commit)
{
	return commit ? commit->acquire_status : -EINVAL;
}

struct wl_resource *
sb_wl_commit_get_surface(const struct sb_wl_commit *commit)
{
	return commit && commit->owner ? commit->owner->surface : NULL;
}

int
sb_wl_commit_export_acquire_fence(const struct sb_wl_commit *commit, int *out_fd)
{
	int ret;

	if (!out_fd)
		return -EINVAL;
	*out_fd = -1;
	if (!commit)
		return -EINVAL;
	if (commit->acquire_fd >= 0) {
		ret = sb_fd_dup(commit->acquire_fd);
		if (ret < 0)
			return ret;
		*out_fd = ret;
		return 0;
	}
	if (!point_usable(&commit->acquire))
		return 0;
	ret = sb_syncobj_export_sync_file(commit->server->drm_fd, commit->acquire.timeline->handle,
					  commit->acquire.value, out_fd);
	return ret == -EINVAL ? -EAGAIN : ret;
}

int
sb_wl_commit_release(struct sb_wl_commit *commit, int fence_fd)
{
	int ret;

	if (!commit)
		return 0;
	if (fence_fd != -1) {
		ret = sb_sync_file_check(fence_fd, NULL, NULL);
		if (ret)
			return ret;
	}
	sb_trace("wl.release surface=%u %s",
		 commit->owner ? wl_resource_get_id(commit->owner->surface) : 0,
		 sb_trace_sync_file(fence_fd).s);
	commit_release_and_free(commit, fence_fd);
	return 0;
}

void
sb_wl_server_get_stats(const struct sb_wl_server *server, struct sb_wl_server_stats *stats)
{
	if (!stats)
		return;
	memset(stats, 0, sizeof(*stats));
	if (server)
		*stats = server->stats;
}

uint32_t
sb_wl_server_get_protocols(const struct sb_wl_server *server)
{
	uint32_t mask = 0;

	if (server && server->explicit_global)
		mask |= 1u << SB_WL_SYNC_EXPLICIT_V1;
	if (server && server->syncobj_global)
		mask |= 1u << SB_WL_SYNC_DRM_SYNCOBJ;
	return mask;
}

/* ---- create / destroy ------------------------------------------------------------ */

static bool
drm_has_timelines(int drm_fd)
{
	struct drm_get_cap cap;

	memset(&cap, 0, sizeof(cap));
	cap.capability = DRM_CAP_SYNCOBJ_TIMELINE;
	return sb_ioctl(drm_fd, DRM_IOCTL_GET_CAP, &cap) == 0 && cap.value;
}

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
	if (want_syncobj && !drm_has_timelines(options->drm_fd)) {
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

	if (want_v1) {
		server->explicit_global = wl_global_create(display, &zwp_linux_explicit_synchronization_v1_interface,
							   EXPLICIT_V1_VERSION, server, v1_bind);
		if (!server->explicit_global)
			goto err;
	}
	if (want_syncobj) {
		server->syncobj_global = wl_global_create(display, &wp_linux_drm_syncobj_manager_v1_interface,
							  DRM_SYNCOBJ_VERSION, server, syncobj_bind);
		if (!server->syncobj_global)
			goto err;
	}
	server->display_destroy.notify = display_destroy_notify;
	wl_display_add_destroy_listener(display, &server->display_destroy);
	*out = server;
	return 0;

err:
	if (server->explicit_global)
		wl_global_destroy(server->explicit_global);
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
	struct deferred_signal *d, *d_tmp;

	if (!server)
		return;
	/* Release points still waiting for a compositor fence (import fallback):
	 * never early, never not at all — teardown may block for the fence. */
	wl_list_for_each_safe(d, d_tmp, &server->deferred, link) {
		sb_sync_file_wait(d->fd, SB_TIMEOUT_INFINITE);
		deferred_signal_fire(d->fd, 0, d);
	}
	if (server->explicit_global)
		wl_global_destroy(server->explicit_global);
	if (server->syncobj_global)
		wl_global_destroy(server->syncobj_global);

	/* Waiting commits are discarded (and released); held ones stay the compositor's. */
	wl_list_for_each_safe(ss, ss_tmp, &server->surfaces, link)
		sync_surface_free(ss);
	wl_list_for_each_safe(c, c_tmp, &server->commits, server_link) {
		/* Held commits: release points can no longer be signalled through us. */
		wl_list_remove(&c->server_link);
		wl_list_init(&c->server_link);
		c->server = NULL;
	}
	wl_list_for_each_safe(tl, tl_tmp, &server->timelines, link) {
		handle_destroy(server, tl->handle);
		tl->handle = 0;
		tl->server = NULL;
		wl_list_remove(&tl->link);
		wl_list_init(&tl->link);
		if (tl->resource)
			wl_resource_set_user_data(tl->resource, NULL);
		if (tl->resource) {
			tl->resource = NULL;
			timeline_unref(tl); /* the resource's reference */
		}
	}
	wl_resource_for_each_safe(res, res_tmp, &server->managers) {
		wl_list_remove(wl_resource_get_link(res));
		wl_list_init(wl_resource_get_link(res));
		wl_resource_set_user_data(res, NULL);
	}
	wl_list_remove(&server->display_destroy.link);
	free(server);
}
