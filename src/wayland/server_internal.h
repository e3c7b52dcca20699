/* SPDX-License-Identifier: MIT */
/*
 * The compositor helper's private header (include/syncbridge/wayland-server.h
 * is the public one; docs/wayland.md). Who does what, top down (a file
 * calls only files below it; the protocol files are reached through the
 * sync_protocol tables; testbed/check-layering.py checks the order
 * against the calls, so keep one file per line, first in the line):
 *
 *   wayland-server.c    the helper object: globals, manager binding,
 *                       create/destroy
 *   explicit_sync_v1.c  zwp_linux_explicit_synchronization_v1 requests and commit rules
 *   drm_syncobj_v1.c    wp_linux_drm_syncobj_manager_v1 requests and commit rules
 *   surface.c           per-surface state, the per-surface extension object
 *                       of either protocol, sb_wl_server_surface_commit(),
 *                       sb_wl_server_surface_set_parent()
 *   subsurface.c        the wl_subsurface tree's changes: unlinking a surface
 *                       from its parent, dropping what it held back
 *   commit_queue.c      commits: queued in commit order, waited for (only the
 *                       queue head waits), handed over, released; what the
 *                       queue asks of the sub-surface tree
 *   acquire.c           what a commit waits for: a sync_file (the client's, or an
 *                       implicit snapshot of the dma-buf) or a timeline point
 *   release.c           how a commit's buffer is handed back: a
 *                       zwp_linux_buffer_release_v1 event or a timeline point
 *   timeline.c          imported syncobj timelines and points on them
 *   client_state.c      per-client accounting and quiescing, the shared
 *                       destroy request, the helper behind a manager
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
 *        ├─ globals: one per advertised protocol (sync_global)
 *        ├─ managers: the bound global resources
 *        ├─ commits: every live sb_wl_commit (so destroy can detach them)
 *        └─ deferred: release points waiting for a compositor fence
 *
 * Fds: every fd received from a client is owned by the request handler and
 * either moved into state (fd_move) or closed on every path. Nothing here
 * blocks: a fence is waited for by an event-loop fd source on the sync_file
 * itself (explicit-sync v1, and materialised syncobj points exported as a
 * sync_file) or on a sb_syncobj_waiter's eventfd (unmaterialised points).
 *
 * Functions shared between these files are hidden (the library exports only
 * wayland-server.sym) and named sb_wl_<object>_<verb>; objects that the
 * client helper also has (release, surface sync) are named differently here.
 */
#ifndef SB_WL_SERVER_INTERNAL_H
#define SB_WL_SERVER_INTERNAL_H

#include <syncbridge/wayland-server.h>

#include <stdbool.h>
#include <stdint.h>
#include <wayland-server-core.h>

struct sb_syncobj_waiter;

/*
 * Per wl_client: the commits waiting in all of its surfaces' queues, so that a
 * client cannot pin an unbounded number of fences (each waiting commit may
 * hold a sync_file fd) by spreading them over many surfaces. Referenced by
 * the client's destroy listener and by each of its sync_surfaces and
 * timelines: libwayland emits the client's destroy signal before it destroys
 * the client's resources, so they may still need it afterwards.
 */
struct client_state {
	struct wl_listener client_destroy;
	struct wl_client *client; /* NULL once it is being destroyed */
	uint32_t queued;
	int refs;
};

struct timeline {
	struct sb_wl_server *server; /* NULL once the server is gone */
	struct wl_list link;         /* server->timelines */
	struct wl_resource *resource; /* NULL once destroyed */
	struct client_state
		*client; /* a reference: whom to tell when a point cannot be signalled */
	uint32_t handle;             /* on drm_fd; 0 = none */
	/*
	 * The server's DRM fd (borrowed) while the server lives; after
	 * sb_wl_server_destroy() a duplicate of our own (owns_fd), kept while
	 * points of commits the compositor still holds use the timeline: the
	 * compositor may close its fd once the server is gone, and those
	 * release points must still be signalled. -1: unusable.
	 */
	int drm_fd;
	bool owns_fd;
	int refs;
};

/*
 * A point on a timeline. The XML's model is a timeline ("signaling a
 * timeline point also signals every previous point"), whose value starts at
 * 0: point 0 is reached from the start. It is never passed to the kernel,
 * whose timeline ioctls read 0 as a binary operation (wait for / replace the
 * syncobj's current fence), which would wait for the client's newest point,
 * or move its timeline back to 0 and drop its pending points.
 */
struct point {
	struct timeline *timeline; /* a reference, or NULL: unset */
	uint64_t value;
};

/* What a commit waits for: at most one of the two is set. */
struct acquire {
	struct point point; /* drm-syncobj */
	int fd;             /* owned sync_file (explicit-sync v1, implicit snapshot), or -1 */
	int status;         /* 0, the error the fence completed with, or ACQUIRE_STATUS_UNREAD */
};

/*
 * acquire.status of a fence whose wait fired: it has completed, and whether
 * with an error is read only when the compositor asks
 * (sb_wl_acquire_read_status()); a->fd, if set, is kept for that read only.
 */
#define ACQUIRE_STATUS_UNREAD 1

/* The queue head's wait on its acquire (one per waiting surface). */
struct acquire_wait {
	struct wl_event_source *source;
	int fd;                          /* owned sync_file, or -1 */
	struct sb_syncobj_waiter *waiter; /* or NULL */
	bool threaded;
	bool counted; /* in stats.waits_pending (and waits_threaded) */
};

/* How a commit's buffer goes back to the client: at most one is set. */
struct buffer_release {
	struct wl_resource *res; /* zwp_linux_buffer_release_v1 (user data = &res), or NULL */
	struct point point;      /* drm-syncobj */
};

struct sb_wl_commit {
	struct sb_wl_server *server; /* NULL once the server is gone */
	struct wl_list server_link;  /* server->commits */
	/* owner->queue or owner->held; or, for a synchronized sub-surface,
	 * an ancestor's `cached` or a transaction's `riders` */
	struct wl_list link;
	struct sync_surface *owner;  /* NULL once the wl_surface is gone */
	/*
	 * Commits of synchronized sub-surfaces applied with this one (a
	 * transaction, subsurface.c): handed out before it, in order, once
	 * every acquire of the transaction has signalled.
	 */
	struct wl_list riders;
	bool queued;  /* in owner->queue */
	bool cached;  /* in an ancestor's (or owner's) `cached`: waits for its parent's commit */
	bool riding;  /* in carrier->riders */
	struct sb_wl_commit *carrier; /* riding: the commit whose transaction it is in */
	bool ready;   /* acquire signalled (or nothing to wait for) */
	/* Next to the bools: one commit per pending wait, figure 5 counts its bytes. */
	enum sb_wl_sync_protocol protocol;
	void *data;   /* the compositor's commit_data */

	struct acquire acquire;
	struct buffer_release release;
};

struct sync_protocol;

struct sync_surface {
	struct sb_wl_server *server;
	struct wl_list link;          /* server->surfaces */
	struct wl_resource *surface;  /* the wl_surface */
	struct wl_listener surface_destroy;
	struct client_state *client;  /* a reference */

	struct wl_resource *sync;     /* the extension object, or NULL */
	const struct sync_protocol *protocol; /* sync's, or NULL */

	/* Pending (double-buffered) state, applied by the next commit. */
	struct acquire acquire;
	struct buffer_release release;

	struct wl_list queue; /* sb_wl_commit.link, oldest first */
	uint32_t queued;      /* waiting commits of this surface: queued, cached or riding */
	struct wl_list held;  /* sb_wl_commit.link: with the compositor */
	struct acquire_wait wait; /* the queue head's transaction's, when it waits */
	struct sb_wl_commit *waiting; /* whose acquire `wait` is for (the head or a rider) */
	struct wl_event_source
		*idle; /* a ready transaction handed out at the end of the dispatch */

	/* wl_subsurface, as the compositor tells it (subsurface.c) */
	struct sync_surface *parent;  /* NULL: not a sub-surface */
	struct wl_list child_link;    /* parent->children */
	struct wl_list children;
	bool sync_mode;               /* set_sync (the default) */
	/* Commits held for the parent's next commit (this surface's and its
	 * synchronized descendants', in the order they are to be applied). */
	struct wl_list cached;
	uint32_t riding;              /* own commits riding in a transaction not handed out */
};

/*
 * One protocol, as wayland-server.c advertises it, surface.c creates its
 * per-surface object and commit_queue.c checks a commit against it.
 */
struct sync_protocol {
	enum sb_wl_sync_protocol id;
	const struct wl_interface *manager_iface;
	const void *manager_impl;
	uint32_t version;
	const struct wl_interface *surface_iface;
	const void *surface_impl;
	uint32_t exists_error; /* the manager's *_EXISTS code */
	/* The protocol errors a commit can raise; false after posting one. */
	bool (*check_commit)(struct sync_surface *ss, const struct sb_wl_surface_commit_info *info);
};

/* One advertised protocol: the global's data and its manager resources' user data. */
struct sync_global {
	struct sb_wl_server *server;
	const struct sync_protocol *protocol;
	struct wl_global *global; /* NULL: not advertised */
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

	struct sync_global globals[2]; /* explicit-sync v1, drm-syncobj */
	struct wl_listener display_destroy;

	struct wl_list surfaces;  /* sync_surface.link */
	struct wl_list timelines; /* timeline.link */
	struct wl_list managers;  /* wl_resource links of bound globals */
	struct wl_list commits;   /* sb_wl_commit.server_link */
	struct wl_list deferred;  /* deferred_signal.link (release.c) */

	struct sb_wl_server_stats stats;
	bool warned_acquire_error;
};

/* ---- client_state.c ---- */
struct client_state *sb_wl_client_state_get(struct wl_client *client);
void sb_wl_client_state_unref(struct client_state *cs);
/* Every protocol object's request "destroy". */
void sb_wl_resource_destroy_request(struct wl_client *client, struct wl_resource *resource);
/* The helper behind a manager resource; NULL once it is gone (the resource is inert). */
struct sb_wl_server *sb_wl_manager_get_server(struct wl_resource *manager);

/* ---- surface.c ---- */
struct sync_surface *sb_wl_sync_surface_lookup(struct wl_resource *surface);
struct sync_surface *sb_wl_sync_surface_get(struct sb_wl_server *server,
					    struct wl_resource *surface);
/*
 * helper_gone: the server is being destroyed, the sync object (if any)
 * becomes inert (SB_WL_SYNC_INERT); else the wl_surface is gone and the
 * object's later requests raise NO_SURFACE.
 */
void sb_wl_sync_surface_free(struct sync_surface *ss, bool helper_gone);
void sb_wl_sync_surface_clear_pending(struct sync_surface *ss);
/* A commit's buffer supports ss's protocol (ss->sync is set). */
bool sb_wl_buffer_supports_sync(const struct sync_surface *ss,
				const struct sb_wl_surface_commit_info *info);
/* Either manager's get_synchronization / get_surface request. */
void sb_wl_sync_object_create(struct wl_client *client, struct wl_resource *manager, uint32_t id,
			      struct wl_resource *surface);
/*
 * User data of a per-surface sync object whose helper is gone: its requests
 * are ignored (the wl_surface lives; the compositor applies its commits
 * without the helper). NULL user data means the wl_surface is gone.
 */
extern char sb_wl_sync_inert;
#define SB_WL_SYNC_INERT ((struct sync_surface *)(void *)&sb_wl_sync_inert)
/*
 * The sync object's surface state; NULL when there is none: after posting
 * NO_SURFACE when the wl_surface is gone, silently when the object is inert.
 */
struct sync_surface *sb_wl_sync_object_get_surface(struct wl_resource *sync,
						   uint32_t no_surface_error);

/* ---- subsurface.c ---- */
/* ss leaves its parent (if it has one); what it held back for the parent is dropped. */
void sb_wl_subsurface_unlink_parent(struct sync_surface *ss);
/* ss (its wl_surface, or the helper) is going: unlink it from the tree, drop what it held back. */
void sb_wl_subsurface_detach_all(struct sync_surface *ss);

/* ---- commit_queue.c ---- */
/* ss's commits are held for its parent's: it or an ancestor sub-surface is synchronized. */
bool sb_wl_subsurface_is_synchronized(const struct sync_surface *ss);
/* The wl_surface is gone (or the server is): its waiting commits never apply. */
void sb_wl_commit_queue_discard(struct sync_surface *ss);
/* A commit that will never apply: discard it (commit_discard), release its buffer, free it. */
void sb_wl_commit_discard(struct sb_wl_commit *c);
/* Hand ss's ready queue head(s) to the compositor; start the next wait. */
void sb_wl_commit_queue_advance(struct sync_surface *ss);
/*
 * A commit of a synchronized sub-surface: held in ss->cached (with what its
 * own synchronized children cached before it) until its parent's next
 * commit. SB_WL_COMMIT_DEFERRED, -EPROTO (over a limit; posted) or -ENOMEM.
 */
int sb_wl_commit_queue_cache(struct sb_wl_server *server, struct sync_surface *ss,
			     struct acquire *implicit, bool buffer, void *commit_data);
/*
 * A commit of ss with its pending acquire / release or `implicit` (moved in);
 * buffer: the commit attaches one (a pending release waits for such a
 * commit): SB_WL_COMMIT_APPLY (*out set when there is a commit to hand out),
 * SB_WL_COMMIT_DEFERRED, or -ENOMEM (nothing queued; the caller clears ss's
 * pending state and posts no_memory).
 */
int sb_wl_commit_queue_submit(struct sb_wl_server *server, struct sync_surface *ss,
			      struct acquire *implicit, bool buffer, void *commit_data,
			      struct sb_wl_commit **out);

/* ---- explicit_sync_v1.c, drm_syncobj_v1.c ---- */
extern const struct sync_protocol sb_wl_explicit_v1_protocol;
extern const struct sync_protocol sb_wl_drm_syncobj_protocol;

/* ---- timeline.c ---- */
/*
 * A timeline for a handle imported on server->drm_fd, with one reference (its
 * resource's). The handle is the timeline's on success and destroyed on
 * failure (NULL: no memory).
 */
struct timeline *sb_wl_timeline_create(struct sb_wl_server *server, struct wl_client *client,
				       uint32_t handle);
void sb_wl_timeline_unref(struct timeline *tl);
/*
 * The server is going: the resource becomes inert; a timeline still used by
 * points (commits the compositor holds) keeps its handle on a duplicate of
 * the DRM fd until the last point goes.
 */
void sb_wl_timeline_orphan(struct timeline *tl);
void sb_wl_point_set(struct point *p, struct timeline *tl, uint64_t value);
void sb_wl_point_clear(struct point *p);
void sb_wl_point_move(struct point *dst, struct point *src);
/* The point's timeline can still be used (its syncobj and a DRM fd exist). */
bool sb_wl_point_usable(const struct point *p);
/* Point 0 (set): the timeline's initial value, nothing to wait for or signal. */
bool sb_wl_point_is_origin(const struct point *p);

/* ---- acquire.c ---- */
void sb_wl_acquire_init(struct acquire *a);
void sb_wl_acquire_finish(struct acquire *a);
void sb_wl_acquire_move(struct acquire *dst, struct acquire *src);
bool sb_wl_acquire_is_set(const struct acquire *a);
/*
 * Implicit sync: a snapshot of the dma-buf's write fences, if any are still
 * busy. Returns true with a->fd set, or false (idle, or no snapshot).
 */
bool sb_wl_acquire_snapshot(struct acquire *a, int dmabuf_fd);
/* 1: signalled (or nothing to wait for; a->status recorded), 0: not yet or not known. */
int sb_wl_acquire_is_signalled(struct sb_wl_server *server, struct acquire *a);
/* 1: a's fence exists (a sync_file, a materialised point, or nothing to wait for), 0: not yet. */
int sb_wl_acquire_is_materialized(struct acquire *a);
/*
 * 0 and *out_fd a sync_file of the acquire (the caller's), or -1 when there is
 * nothing to wait for; -EAGAIN: a point with no fence yet; else -errno.
 */
int sb_wl_acquire_export(const struct acquire *a, int *out_fd);
void sb_wl_acquire_wait_init(struct acquire_wait *w);
void sb_wl_acquire_wait_finish(struct sb_wl_server *server, struct acquire_wait *w);
/*
 * Start waiting for a (not signalled; with SB_WL_SERVER_WAIT_MATERIALIZED a
 * point not materialised): `fired` runs from the event loop when it has. On
 * success a's sync_file moves into the wait. 0 or -errno.
 */
int sb_wl_acquire_wait_start(struct sb_wl_server *server, struct acquire *a,
			     struct acquire_wait *w, wl_event_loop_fd_func_t fired, void *data);
/*
 * The wait fired: a has completed (its status is read later, if asked:
 * ACQUIRE_STATUS_UNREAD); the wait no longer counts.
 */
void sb_wl_acquire_wait_fired(struct sb_wl_server *server, struct acquire *a,
			      struct acquire_wait *w);
/*
 * 0, or the error a completed with. An unread status is read now (recorded
 * in server's stats; server may be NULL) and a's kept sync_file closed.
 */
int sb_wl_acquire_read_status(struct sb_wl_server *server, struct acquire *a);

/* ---- release.c ---- */
bool sb_wl_buffer_release_is_set(const struct buffer_release *r);
/* The v1 request get_release: a new zwp_linux_buffer_release_v1 in r->res. */
int sb_wl_buffer_release_create(struct buffer_release *r, struct wl_client *client, uint32_t id);
void sb_wl_buffer_release_move(struct buffer_release *dst, struct buffer_release *src);
/* Forget an unsent release (its commit never came: it stays unanswered). */
void sb_wl_buffer_release_clear(struct buffer_release *r);
/*
 * Hand the buffer back once fence_fd (borrowed; -1: now) signals, and clear
 * r. server: NULL once it is gone (a commit the compositor held past
 * sb_wl_server_destroy(): its release point is still signalled).
 */
void sb_wl_buffer_release_send(struct sb_wl_server *server, struct buffer_release *r,
			       int fence_fd);
/* Server teardown: signal every deferred point, waiting for its fence. */
void sb_wl_buffer_release_flush_deferred(struct sb_wl_server *server);

#endif
