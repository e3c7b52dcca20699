/* SPDX-License-Identifier: MIT */
/*
 * The compositor helper (libsyncbridge-wayland-server, pkg-config
 * syncbridge-wayland-server): both Wayland explicit-synchronization globals
 * for any libwayland-server compositor. See docs/wayland.md.
 *
 *  - wp_linux_drm_syncobj_manager_v1 (linux-drm-syncobj-v1): acquire and
 *    release points on DRM syncobj timelines. Advertised when the compositor
 *    gives a DRM fd whose driver has DRM_CAP_SYNCOBJ_TIMELINE.
 *  - zwp_linux_explicit_synchronization_v1 version 2 (linux-explicit-
 *    synchronization-unstable-v1): acquire sync_files, and release events
 *    that carry a sync_file (fenced_release) or none (immediate_release).
 *
 * The helper validates every fd a client sends before trusting it (a sync_file
 * must answer SYNC_IOC_FILE_INFO; a timeline must import on the compositor's
 * DRM fd) and answers each misuse with the exact error the protocol XML
 * defines. It holds a surface's commits until their acquire fence or point
 * has signalled, in commit order, without ever blocking the event loop: one
 * wl_event_loop fd source per waiting surface (the sync_file itself, or the
 * syncobj waiter's eventfd), so a client whose fence never signals stalls
 * only its own surface.
 *
 * libwayland-server has no generic wl_surface.commit hook, so the compositor
 * calls the helper from its own commit handler:
 *
 *   static void surface_commit(struct wl_client *c, struct wl_resource *res)
 *   {
 *       struct my_surface *s = wl_resource_get_user_data(res);
 *       struct sb_wl_surface_commit_info info = {
 *           .buffer_attached = s->pending.attached,
 *           .buffer = s->pending.buffer,
 *           .buffer_type = buffer_type_of(s->pending.buffer), // sb_wl_buffer_type
 *       };
 *       struct my_state *snap = snapshot_and_reset_pending(s);
 *       struct sb_wl_commit *commit;
 *       int r = sb_wl_server_surface_commit(server, res, &info, snap, &commit);
 *       if (r < 0) { free_state(snap); return; }      // protocol error sent
 *       if (r == SB_WL_COMMIT_APPLY) apply(s, snap, commit);
 *       // else SB_WL_COMMIT_DEFERRED: impl->commit_ready(commit, snap) comes later
 *   }
 *
 * and, once it no longer reads the buffer of a commit (e.g. its render fence
 * signalled, or a newer buffer replaced it), hands the commit back with
 * sb_wl_commit_release(commit, render_fence_fd).
 *
 * Conventions, on top of those in <syncbridge/common.h>: objects are created
 * with *_create and freed with *_destroy (NULL is a no-op); everything runs on
 * the thread that dispatches the wl_display's event loop.
 */
#ifndef SYNCBRIDGE_WAYLAND_SERVER_H
#define SYNCBRIDGE_WAYLAND_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <syncbridge/common.h>
#include <syncbridge/wayland-common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct wl_display;
struct wl_resource;

/** The helper: both globals on one wl_display. */
struct sb_wl_server;

/**
 * One wl_surface.commit of a surface that has an explicit-sync object (or
 * that is queued behind one that had, or a synchronized sub-surface's). Owned by the compositor from the moment
 * the helper hands it out (SB_WL_COMMIT_APPLY, or commit_ready) until it
 * passes it to sb_wl_commit_release().
 */
struct sb_wl_commit;

/** Bits of sb_wl_server_options.flags. */
enum sb_wl_server_flags {
	/** Do not advertise zwp_linux_explicit_synchronization_v1. */
	SB_WL_SERVER_NO_EXPLICIT_V1 = 1 << 0,
	/** Do not advertise wp_linux_drm_syncobj_manager_v1 (even with a DRM fd). */
	SB_WL_SERVER_NO_DRM_SYNCOBJ = 1 << 1,
	/**
	 * Do not hold commits: every commit is ready at once and the compositor
	 * waits for the acquire fence itself, e.g. GPU-side with
	 * sb_wl_commit_export_acquire_fence() + sb_egl_sync_file_wait(). Also the
	 * "no bridge" control of the tests (the race is then visible).
	 */
	SB_WL_SERVER_NO_WAIT = 1 << 2,
	/**
	 * Implicit sync for commits without an explicit acquire: a commit whose
	 * buffer is a dma-buf (sb_wl_surface_commit_info.dmabuf_fd) is held until
	 * the buffer's write fences have signalled (a snapshot taken at commit,
	 * DMA_BUF_IOCTL_EXPORT_SYNC_FILE), like an acquire fence. What the client
	 * helper's implicit fallback relies on.
	 */
	SB_WL_SERVER_WAIT_IMPLICIT = 1 << 3,
	/**
	 * Hold a commit only until its acquire fence exists, not until it
	 * signals: a sync_file (explicit-sync v1, an implicit snapshot) at
	 * once, a drm-syncobj point once it has materialised. The compositor
	 * then makes its GPU wait for the fence before it reads the buffer
	 * (sb_wl_commit_export_acquire_fence() + sb_egl_sync_file_wait()), and
	 * sends presentation feedback only once that work is done. Lower
	 * latency where the renderer waits on fences (the GPU starts as soon as
	 * the fence signals); the default waits on the CPU, so a slow client
	 * never stalls a repaint. What wlroots does (docs/wayland.md).
	 */
	SB_WL_SERVER_WAIT_MATERIALIZED = 1 << 4,
};

/** What the helper calls back. Both run on the event-loop thread. */
struct sb_wl_server_impl {
	/**
	 * A commit that sb_wl_server_surface_commit() deferred is ready: apply
	 * commit_data now. Called in commit order per surface, never from inside
	 * sb_wl_server_surface_commit(); a synchronized sub-surface's commits
	 * come right before their parent's (sb_wl_server_surface_set_parent()).
	 * Do not destroy the surface from here.
	 */
	void (*commit_ready)(struct sb_wl_commit *commit, void *commit_data, void *data);
	/**
	 * A deferred commit will never be applied: its wl_surface was destroyed
	 * (or its client disconnected) while it waited, or the helper is being
	 * destroyed. Free commit_data. The helper releases the commit's buffer
	 * itself (immediate release / release point signalled); the commit is
	 * gone after this returns. Called before the compositor's own wl_surface
	 * destructor runs. May be NULL.
	 */
	void (*commit_discard)(void *commit_data, void *data);
	/** Zero (NULL): room for callbacks of later releases (docs/core.md, "ABI"). */
	void (*reserved[4])(void);
};

struct sb_wl_server_options {
	/**
	 * DRM device fd for wp_linux_drm_syncobj_manager_v1 (borrowed: it must
	 * stay open until sb_wl_server_destroy()). Timelines are imported on it
	 * and release points signalled through it. -1: no linux-drm-syncobj.
	 */
	int drm_fd;
	/** enum sb_wl_server_flags. */
	uint32_t flags;
	/**
	 * Most commits one surface may have waiting (not yet handed to the
	 * compositor); one more and the client is disconnected with an
	 * implementation error. 0: SB_WL_SERVER_DEFAULT_MAX_PENDING.
	 */
	uint32_t max_pending_commits;
	const struct sb_wl_server_impl *impl; /**< required */
	void *data;                           /**< passed to impl's functions */
	/**
	 * Most commits one client may have waiting over all of its surfaces
	 * (each may hold a sync_file fd: without this bound a client spreading
	 * never-signalling fences over many surfaces could use up the
	 * compositor's fds); one more and the client is disconnected with an
	 * implementation error. 0: SB_WL_SERVER_DEFAULT_MAX_CLIENT_PENDING.
	 */
	uint32_t max_client_pending_commits;
	/** Zero: room for options of later releases, whose zero is today's behaviour. */
	uint64_t reserved[4];
};

#define SB_WL_SERVER_DEFAULT_MAX_PENDING 16
#define SB_WL_SERVER_DEFAULT_MAX_CLIENT_PENDING 128

/**
 * Create the globals on `display`. The helper destroys itself when the
 * display is destroyed (or call sb_wl_server_destroy() earlier).
 * On success *out is the helper; on failure NULL.
 * Returns 0; -EINVAL (NULL display/options/impl/out, or both globals
 * disabled); -ENODEV (SB_WL_SERVER_NO_EXPLICIT_V1 given and drm_fd has no
 * timeline syncobjs, so there would be no global at all); -EBADF (drm_fd is
 * not open); -ENOMEM.
 * A drm_fd without timeline syncobjs is not an error otherwise: only the
 * explicit-sync v1 global is advertised then (see sb_wl_server_get_protocols()).
 */
SB_EXPORT int sb_wl_server_create(struct wl_display *display,
				  const struct sb_wl_server_options *options,
				  struct sb_wl_server **out);

/**
 * Remove the globals and free everything. Commits still waiting are discarded
 * (impl->commit_discard); commits the compositor holds stay valid until it
 * releases them. NULL is a no-op.
 */
SB_EXPORT void sb_wl_server_destroy(struct sb_wl_server *server);

/** Bit mask of (1 << enum sb_wl_sync_protocol) for the advertised globals. */
SB_EXPORT uint32_t sb_wl_server_get_protocols(const struct sb_wl_server *server);

/** What kind of wl_buffer a commit attaches (sb_wl_surface_commit_info.buffer_type). */
enum sb_wl_buffer_type {
	/** Not said (callers from before this field): buffer_supports_sync alone decides. */
	SB_WL_BUFFER_UNKNOWN = 0,
	/** wl_shm. */
	SB_WL_BUFFER_SHM = 1,
	/** zwp_linux_dmabuf_v1 (any version). */
	SB_WL_BUFFER_DMABUF = 2,
	/** wl_drm: an opaque EGL buffer of EGL_WL_bind_wayland_display. */
	SB_WL_BUFFER_EGL = 3,
	/** Any other buffer factory. */
	SB_WL_BUFFER_OTHER = 4,
};

/** What the compositor's pending wl_surface state holds at commit time. */
struct sb_wl_surface_commit_info {
	/** wl_surface.attach was requested since the last commit (also attach(NULL)). */
	bool buffer_attached;
	/** The attached wl_buffer, NULL for attach(NULL) or when nothing was attached. */
	struct wl_resource *buffer;
	/**
	 * The compositor supports explicit synchronization for this buffer
	 * beyond what the protocols require (see buffer_type); an acquire
	 * fence/point on a buffer that supports none is UNSUPPORTED_BUFFER.
	 */
	bool buffer_supports_sync;
	/**
	 * The attached buffer's dma-buf (borrowed, read during the call only), or
	 * -1. Read only with SB_WL_SERVER_WAIT_IMPLICIT — set it to -1 for
	 * non-dma-buf buffers then (0 is a valid fd).
	 */
	int dmabuf_fd;
	/**
	 * enum sb_wl_buffer_type. With it the helper applies what the protocols
	 * require: both guarantee explicit sync for linux-dmabuf buffers, and
	 * zwp_linux_explicit_synchronization_v1 from version 2 also for opaque
	 * EGL (wl_drm) buffers; other buffers are supported where
	 * buffer_supports_sync says so. SB_WL_BUFFER_UNKNOWN (0):
	 * buffer_supports_sync alone, which must then be true for every
	 * linux-dmabuf buffer and, for a compositor that accepts wl_drm
	 * buffers, for those too.
	 */
	uint32_t buffer_type;
	/** Zero: room for state of later releases. */
	uint32_t reserved32;
	uint64_t reserved[1];
};

/** Non-negative results of sb_wl_server_surface_commit(). */
enum sb_wl_commit_result {
	/** Apply the commit now (its acquire has signalled, or it had none). */
	SB_WL_COMMIT_APPLY = 0,
	/** The helper holds it; impl->commit_ready() comes when it may be applied. */
	SB_WL_COMMIT_DEFERRED = 1,
};

/**
 * Call from the compositor's wl_surface.commit handler, for every commit of
 * every surface, before applying anything. The helper checks the surface's
 * explicit-sync state against `info` (posting the protocol error, if any) and
 * takes the pending acquire/release state over.
 *
 * surface: the wl_surface resource being committed.
 * commit_data: the compositor's snapshot of the committed state; returned
 *   through impl->commit_ready / commit_discard when the commit is deferred.
 * *out: on SB_WL_COMMIT_APPLY, the commit to release later, or NULL when the
 *   commit carries no explicit-sync state (nothing to release); on
 *   SB_WL_COMMIT_DEFERRED, NULL (the commit comes with commit_ready); on
 *   failure NULL.
 *
 * Returns SB_WL_COMMIT_APPLY, SB_WL_COMMIT_DEFERRED, or:
 * -EPROTO: a protocol error was posted to the client (the commit must be
 *   dropped; the client is being disconnected);
 * -ENOMEM: out of memory, or the kernel or libc refused what waiting for the
 *   acquire needs (an eventfd, a fd, a thread, a DRM ioctl):
 *   wl_resource_post_no_memory was sent (a commit is never applied before
 *   its acquire instead);
 * -EINVAL: NULL arguments.
 */
SB_EXPORT int sb_wl_server_surface_commit(struct sb_wl_server *server,
					  struct wl_resource *surface,
					  const struct sb_wl_surface_commit_info *info,
					  void *commit_data, struct sb_wl_commit **out);

/**
 * Tell the helper about a wl_subsurface, so that it applies the sub-surface
 * rules to commits: call it from wl_subcompositor.get_subsurface (parent,
 * synchronized = true: "a sub-surface is initially in the synchronized
 * mode"), from wl_subsurface.set_sync / set_desync (the same parent), and
 * with parent NULL when the wl_subsurface goes or its parent does.
 *
 * A commit of a surface that is synchronized (itself, or through an
 * ancestor) is then held: sb_wl_server_surface_commit() returns
 * SB_WL_COMMIT_DEFERRED, and the commit comes through impl->commit_ready
 * with its parent's next commit that applies, once every fence of that
 * whole transaction has signalled (the parent's and each cached child
 * commit's): the children's commits first, in commit order, then the
 * parent's, in one dispatch. A transaction is never handed out inside
 * sb_wl_server_surface_commit(): even when all its fences have signalled it
 * comes at the end of that dispatch. After set_desync a child's cached
 * commits apply with its own next commit (the XML: "applied as a whole").
 * Held commits count toward max_pending_commits. Removing the relation
 * discards what the child held for its parent (impl->commit_discard; the
 * buffers are released at once: never shown).
 *
 * Returns 0; -EINVAL (NULL server or surface, or parent == surface);
 * -ENOMEM (no_memory posted on the surface's client).
 */
SB_EXPORT int sb_wl_server_surface_set_parent(struct sb_wl_server *server,
					      struct wl_resource *surface,
					      struct wl_resource *parent, bool synchronized);

/**
 * Which explicit-sync protocol the client uses on `surface` now
 * (SB_WL_SYNC_IMPLICIT without a synchronization object).
 */
SB_EXPORT enum sb_wl_sync_protocol sb_wl_server_surface_get_protocol(struct sb_wl_server *server,
								     struct wl_resource *surface);

/** The protocol that carried the commit's synchronization (SB_WL_SYNC_IMPLICIT if none). */
SB_EXPORT enum sb_wl_sync_protocol sb_wl_commit_get_protocol(const struct sb_wl_commit *commit);

/**
 * How the commit's acquire fence (or point, or implicit dma-buf fence)
 * completed: *status is 0 (signalled, or none) or the negative error it
 * completed with (e.g. -EIO: the client's GPU job failed). Such a commit is
 * still handed out (neither protocol defines an error for it, and holding it
 * would freeze the surface); the compositor may choose not to show its
 * buffer. Known once the commit is handed to the compositor, but read only
 * when asked: the helper hands the commit over right after the wake-up, and
 * the first call queries the kernel (SYNC_IOC_FILE_INFO; for a drm-syncobj
 * point an export first), later calls answer from the commit. A compositor
 * that never asks makes no status query at all.
 * Returns 0; -EINVAL (NULL commit or status). The fence's error and a bad
 * argument never share the return value.
 */
SB_EXPORT int sb_wl_commit_get_acquire_status(const struct sb_wl_commit *commit, int *status);

/** The commit's wl_surface, or NULL once the surface was destroyed. */
SB_EXPORT struct wl_resource *sb_wl_commit_get_surface(const struct sb_wl_commit *commit);

/**
 * The commit's acquire fence as a new sync_file (for compositors that wait
 * GPU-side: SB_WL_SERVER_WAIT_MATERIALIZED, SB_WL_SERVER_NO_WAIT). Without
 * those flags it is already signalled.
 * On success *out_fd is a sync_file owned by the caller, or -1 when there is
 * nothing to wait for (no acquire fence/point, or the helper already waited
 * for it); on failure -1.
 * Returns 0; -EAGAIN (an acquire point that has no fence yet: not
 * materialised); -EINVAL (NULL arguments); -ENOMEM; -EMFILE.
 */
SB_EXPORT int sb_wl_commit_export_acquire_fence(const struct sb_wl_commit *commit, int *out_fd);

/**
 * The compositor no longer uses the commit's buffer once `fence_fd` has
 * signalled (its render fence; -1: it is done already). The helper then
 * sends zwp_linux_buffer_release_v1.fenced_release (or immediate_release)
 * or attaches the fence to the release point (or signals it), and frees the
 * commit. NULL commit is a no-op.
 * fence_fd: borrowed, never closed (the client and the kernel get their own
 * references).
 * Returns 0 (the commit is gone); -EBADF or -EINVAL (fence_fd is not -1 and
 * not an open sync_file, or the kernel would not answer SYNC_IOC_FILE_INFO
 * about it: nothing was done, the commit is still the caller's — wait for
 * the fence yourself, then release with -1).
 * A release point the kernel refuses to signal (e.g. ENOMEM) would leave
 * the client waiting forever: that client is disconnected (no memory).
 */
SB_EXPORT int sb_wl_commit_release(struct sb_wl_commit *commit, int fence_fd);

/** Counters, for tests and for the curious. */
struct sb_wl_server_stats {
	/** Commits held back because an acquire had not signalled (total). */
	uint64_t commits_deferred;
	/** Times one of the helper's event sources woke the loop (total). */
	uint64_t wakeups;
	/** Event sources now waiting for an acquire fence/point (one per waiting surface). */
	uint32_t waits_pending;
	/** Of those, waits served by the syncobj waiter's thread fallback. */
	uint32_t waits_threaded;
	/** Commits waiting in all surfaces' queues now. */
	uint32_t commits_queued;
	/** Clients disconnected for exceeding max_pending_commits or
	 *  max_client_pending_commits (total). */
	uint64_t clients_over_limit;
	/** Commits whose acquire fence completed with an error (total), as found
	 *  by the helper at commit time or by sb_wl_commit_get_acquire_status(). */
	uint64_t acquire_errors;
	/** Zero: room for counters of later releases. */
	uint64_t reserved[4];
};

/**
 * Fill *stats. Returns 0; -EINVAL (NULL server or stats: *stats, if there is
 * one, is zeroed) — the same convention as sb_buffer_queue_get_stats().
 */
SB_EXPORT int sb_wl_server_get_stats(const struct sb_wl_server *server,
				     struct sb_wl_server_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
