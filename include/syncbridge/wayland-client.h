/* SPDX-License-Identifier: MIT */
/*
 * The client helper (libsyncbridge-wayland-client, pkg-config
 * syncbridge-wayland-client): explicit synchronization for a Wayland client
 * with whatever the compositor offers. See docs/wayland.md.
 *
 * On sb_wl_client_create() the helper looks at the compositor's globals and
 * picks, in this order:
 *  1. wp_linux_drm_syncobj_manager_v1 (linux-drm-syncobj-v1) — when the
 *     client gave a DRM fd whose driver has timeline syncobjs;
 *  2. zwp_linux_explicit_synchronization_v1 (version 1 or 2);
 *  3. implicit sync: the acquire fence is attached to the buffer's dma-buf
 *     as a write fence (sb_dmabuf_import_sync_file), so a compositor that
 *     honours dma-buf fences waits for it.
 *
 * Per frame, on a surface's sync object, between wl_surface.attach and
 * wl_surface.commit:
 *
 *   sb_wl_surface_sync_set_acquire_fence(ss, render_done_fd, dmabuf_fd);
 *   sb_wl_release_create(ss, dmabuf_fd, &rel);
 *   wl_surface_commit(surface);
 *   ...
 *   sb_wl_release_wait(rel, SB_TIMEOUT_INFINITE);   // before writing the buffer again
 *   sb_wl_release_destroy(rel);
 *
 * Conventions, on top of those in <syncbridge/common.h>: objects are created
 * with *_create and freed with *_destroy (NULL is a no-op); docs/core.md has the naming rules. Use a
 * client object from one thread at a time. Release events travel on a private
 * event queue of the helper, so the application's own queues are never
 * dispatched by it.
 */
#ifndef SYNCBRIDGE_WAYLAND_CLIENT_H
#define SYNCBRIDGE_WAYLAND_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <syncbridge/common.h>
#include <syncbridge/wayland-common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct wl_display;
struct wl_surface;

struct sb_wl_client;
struct sb_wl_surface_sync;
struct sb_wl_release;

/** Bits of sb_wl_client_create()'s flags. */
enum sb_wl_client_flags {
	/** Never use linux-drm-syncobj-v1. */
	SB_WL_CLIENT_NO_DRM_SYNCOBJ = 1 << 0,
	/** Never use zwp_linux_explicit_synchronization_v1. */
	SB_WL_CLIENT_NO_EXPLICIT_V1 = 1 << 1,
};

/**
 * Find the compositor's explicit-sync globals (one roundtrip on a private
 * queue) and bind the best one.
 * display: borrowed, must outlive the client object.
 * drm_fd: the client's DRM device (a render node), borrowed; it must stay
 *   open until sb_wl_client_destroy(). Needed for linux-drm-syncobj-v1
 *   (timelines are created on it); -1: that protocol is not used.
 * On success *out is owned by the caller; on failure NULL.
 * Returns 0; -EINVAL (NULL display/out, unknown flags); -EBADF (drm_fd not
 * open); -EPIPE (the connection failed during the roundtrip); -ENOMEM.
 */
SB_EXPORT int sb_wl_client_create(struct wl_display *display, int drm_fd, uint32_t flags,
				  struct sb_wl_client **out);

/**
 * Destroy the client object. Surface sync objects and releases made from it
 * must be destroyed first. NULL is a no-op.
 */
SB_EXPORT void sb_wl_client_destroy(struct sb_wl_client *client);

/** The protocol the client picked. */
SB_EXPORT enum sb_wl_sync_protocol sb_wl_client_get_protocol(const struct sb_wl_client *client);

/**
 * Give `surface` explicit synchronization (the protocol's per-surface object;
 * nothing on the wire for implicit sync). A surface can have one.
 * surface: borrowed, must outlive the sync object.
 * Returns 0, -EINVAL, -ENOMEM, or a negative errno from creating the
 * surface's acquire timeline (linux-drm-syncobj).
 */
SB_EXPORT int sb_wl_surface_sync_create(struct sb_wl_client *client, struct wl_surface *surface,
					    struct sb_wl_surface_sync **out);

/** Destroy the per-surface object (sent to the compositor). NULL is a no-op. */
SB_EXPORT void sb_wl_surface_sync_destroy(struct sb_wl_surface_sync *sync);

/**
 * The compositor must not read the buffer attached for the next commit
 * before `sync_file_fd` has signalled.
 *  - linux-drm-syncobj: imported into the surface's acquire timeline at a
 *    new point, which is set as the acquire point;
 *  - explicit-sync v1: sent as the acquire fence;
 *  - implicit: attached to dmabuf_fd as a write fence.
 * sync_file_fd: borrowed, never closed; -1 means "already signalled".
 * dmabuf_fd: the attached buffer's dma-buf, borrowed; needed for implicit sync
 *   only (-1 otherwise allowed).
 * Call at most once per commit.
 * Returns 0; -EBADF / -EINVAL (not a sync_file; implicit sync without a
 * dma-buf); -EOPNOTSUPP (implicit sync on a kernel without dma-buf sync_file
 * import: wait for the fence yourself); -ENOMEM; other kernel errors.
 */
SB_EXPORT int sb_wl_surface_sync_set_acquire_fence(struct sb_wl_surface_sync *sync, int sync_file_fd,
						   int dmabuf_fd);

/**
 * Like sb_wl_surface_sync_set_acquire_fence(), from a timeline point of a
 * syncobj on the client's DRM fd (handle: the client's syncobj handle).
 * linux-drm-syncobj sends the point itself (the timeline is imported once per
 * handle); the others export the point's fence as a sync_file, so the point
 * must have materialised (a fence was submitted for it).
 * Returns 0; -EAGAIN (v1 / implicit: the point has no fence yet; also when
 * the kernel refuses the export with EINVAL); -ENODEV (no DRM fd was given);
 * -EINVAL; -ENOENT (no such handle); -ENOMEM; -EMFILE; -EOPNOTSUPP (the DRM
 * fd has no syncobjs); or an error of set_acquire_fence() (v1 / implicit).
 */
SB_EXPORT int sb_wl_surface_sync_set_acquire_point(struct sb_wl_surface_sync *sync, uint32_t handle,
						   uint64_t point, int dmabuf_fd);

/**
 * Ask for the release of the buffer attached for the next commit. Call before
 * wl_surface.commit, at most once per commit (linux-drm-syncobj requires one
 * with every buffer; the helper then picks a release timeline of its own
 * per in-flight release, as the protocol recommends).
 * dmabuf_fd: the buffer's dma-buf, borrowed, must stay open while the
 *   release lives; used by implicit sync only (-1 otherwise allowed).
 * On success *out is owned by the caller (sb_wl_release_destroy()).
 * Returns 0, -EINVAL, -ENOMEM or a kernel error.
 */
SB_EXPORT int sb_wl_release_create(struct sb_wl_surface_sync *sync, int dmabuf_fd,
					     struct sb_wl_release **out);

/**
 * Without blocking: whether the compositor has released the buffer and with
 * which fence. On success *out_fd is a new sync_file owned by the caller that
 * signals when the buffer may be written again, or -1 when it may be already.
 * Returns 0; -EAGAIN (not released yet; explicit-sync v1 reads pending
 * events from the connection without blocking); -EPIPE (the connection
 * failed); -ENOMEM; -EMFILE.
 * Implicit sync has no release event: call it after wl_buffer.release; it
 * returns the dma-buf's fences a writer must wait for.
 */
SB_EXPORT int sb_wl_release_export_fence(struct sb_wl_release *release, int *out_fd);

/**
 * Block until the buffer may be written again: the release arrived and its
 * fence signalled (linux-drm-syncobj: the release point signalled).
 * timeout_ns: relative (SB_TIMEOUT_INFINITE, 0 = poll).
 * Returns 0; -ETIME; -EPIPE (the connection failed); the fence's error;
 * -ENOMEM / -EINVAL (linux-drm-syncobj: the kernel refused the DRM wait —
 * the release may still come, wait again; implicit: the dma-buf wait).
 * Implicit sync: call it after wl_buffer.release (it waits for the dma-buf's
 * fences).
 */
SB_EXPORT int sb_wl_release_wait(struct sb_wl_release *release, int64_t timeout_ns);

/** Whether the compositor released the buffer with a fence (fenced_release / a point) or immediately. */
SB_EXPORT bool sb_wl_release_is_fenced(const struct sb_wl_release *release);

/** Destroy a release object (whether or not it arrived). NULL is a no-op. */
SB_EXPORT void sb_wl_release_destroy(struct sb_wl_release *release);

#ifdef __cplusplus
}
#endif

#endif
