/* SPDX-License-Identifier: MIT */
/*
 * The client helper's private header (include/syncbridge/wayland-client.h is
 * the public one): wayland-client.c holds the client object, its timelines
 * and the per-surface object; client_release.c the releases. The functions
 * shared between them are hidden (wayland-client.sym exports the API only).
 */
#ifndef SB_WL_CLIENT_INTERNAL_H
#define SB_WL_CLIENT_INTERNAL_H

#include <syncbridge/wayland-client.h>

#include <stdbool.h>
#include <stdint.h>
#include <wayland-client-core.h>

struct sb_wl_client {
	struct wl_display *display;
	struct wl_event_queue *queue;
	int drm_fd; /* borrowed; -1 */
	bool timelines; /* drm_fd has timeline syncobjs: linux-drm-syncobj may be used */
	uint32_t flags;
	enum sb_wl_sync_protocol protocol;
	struct wp_linux_drm_syncobj_manager_v1 *syncobj;
	struct zwp_linux_explicit_synchronization_v1 *explicit_sync;
	uint32_t explicit_version;
	uint32_t syncobj_name, explicit_name;
};

/* A syncobj of ours (or the app's) imported as a wp_linux_drm_syncobj_timeline_v1. */
struct timeline {
	struct wl_list link;
	uint32_t handle;     /* on client->drm_fd */
	bool owned;          /* created by the helper (destroy the handle with it) */
	struct wp_linux_drm_syncobj_timeline_v1 *proxy;
	uint64_t next;       /* last point used */
};

struct sb_wl_surface_sync {
	struct sb_wl_client *client;
	struct wl_surface *surface;
	struct wp_linux_drm_syncobj_surface_v1 *syncobj_surface;
	struct zwp_linux_surface_synchronization_v1 *explicit_surface;
	struct timeline *acquire;  /* drm-syncobj: sync_files are imported here */
	struct wl_list imported;   /* timeline.link: the app's handles */
	struct wl_list free_release; /* timeline.link: release timelines not in use */
	struct wl_list releases;   /* sb_wl_release.link: live releases */
};

struct sb_wl_release {
	struct sb_wl_surface_sync *sync; /* NULL once the sync object is gone */
	struct sb_wl_client *client;
	struct wl_list link;
	enum sb_wl_sync_protocol protocol;
	/* explicit-sync v1 */
	struct zwp_linux_buffer_release_v1 *proxy;
	bool arrived;
	int fence_fd; /* owned; -1: immediate */
	/* drm-syncobj */
	struct timeline *timeline; /* owned while in use */
	uint64_t point;
	/* implicit */
	int dmabuf_fd; /* borrowed */
	bool fenced;
};

/*
 * Import `handle` as a protocol timeline (create one when handle is 0).
 * 0 or -errno; the app's handle stays the app's.
 */
int sb_wl_client_timeline_create(struct sb_wl_client *client, uint32_t handle,
				 struct timeline **out);
void sb_wl_client_timeline_destroy(struct sb_wl_client *client, struct timeline *tl);

/*
 * Read and dispatch events for the helper's queue, waiting until the absolute
 * deadline at most. Returns 0 (something may have been dispatched), -ETIME or
 * -EPIPE.
 */
int sb_wl_client_pump_queue(struct sb_wl_client *client, int64_t deadline_ns);

/* For markers: which protocol carries the fences. */
const char *sb_wl_client_protocol_name(enum sb_wl_sync_protocol p);

#endif
