/* SPDX-License-Identifier: MIT */
/*
 * The example compositor's test interface (wlc_test.c), kept apart from the
 * commit path as Weston keeps its test plugin apart: what the tests (and -v)
 * observe of each buffer use and release, and the stand-ins they drive it
 * with. Set through wlc_comp_options (hooks, hook_data, vgem_fd,
 * render_delay_ms, blocking_wait_ms, verbose); with none of them set every
 * hook point below does nothing.
 *
 * The commit path (wlc_surface.c) calls it at three points:
 *   wl_surface.commit    wlc_test_commit(): the buffer's kind as a test
 *                        wants it told; -v's implicit-sync witness
 *   apply, before use    wlc_test_use(): the naive compositor's wait (the
 *                        control of "never block the loop"), the use
 *                        reported, the vgem "GPU" render fence to release with
 *   apply, at its end    wlc_test_released(): the release reported
 */
#ifndef WLC_TEST_H
#define WLC_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include <syncbridge/wayland-server.h>

struct wl_client;
struct wl_resource;
struct wlc_comp;
struct wlc_state;
struct wlc_surface;

/** One buffer use: a commit applied with a buffer. */
struct wlc_used {
	struct wl_client *client;
	uint32_t surface_id;        /* the wl_surface's protocol id (per client) */
	uint64_t seq;               /* this surface's applied-commit counter, from 1 */
	uint32_t content;           /* first 32-bit word of the buffer (0xdeadbeef: unreadable) */
	bool dmabuf;
	int64_t time_ns;            /* CLOCK_MONOTONIC */
	enum sb_wl_sync_protocol protocol;
	int acquire_status; /* sb_wl_commit_get_acquire_status()'s *status: 0 or e.g. -EIO */
	struct sb_wl_server_stats stats; /* the helper's counters right then */
};

/** A release the helper has taken (the hook runs last in the apply, after
 * sb_wl_commit_release() succeeded: the v1 release event and the frame
 * callbacks are queued, a release point set to follow the render fence). */
struct wlc_released {
	struct wl_client *client;
	uint32_t surface_id;
	uint64_t seq;
	/** The compositor's render fence the release waits for (owned by the
	 * compositor; valid during the hook only), or -1 for an immediate release. */
	int render_fence_fd;
};

struct wlc_comp_hooks {
	/* Run on the compositor's thread. */
	void (*buffer_used)(void *data, const struct wlc_used *used);
	void (*released)(void *data, const struct wlc_released *released);
	/* Each render fence the compositor signalled (render_delay_ms). */
	void (*render_done)(void *data, int64_t time_ns);
	/*
	 * The kind of a committed buffer as told to the helper (enum
	 * sb_wl_buffer_type): given what the compositor found, returns what to
	 * say. The tests' stand-in for a buffer factory this compositor lacks
	 * (wl_drm). May be NULL.
	 */
	uint32_t (*buffer_type)(void *data, struct wl_resource *buffer, uint32_t found);
};

/* ---- the hook points (the compositor's side) -------------------------------------- */

/*
 * A "GPU" render fence (options.vgem_fd): a vgem fence that signals
 * render_delay_ms after the use, which the commit is released with.
 */
struct wlc_test_fence {
	int fd; /* its sync_file (the fence's own: borrow it) */
	/* A commit sb_wl_commit_release() refused with this fence: released
	 * with -1 once the fence has signalled (what the helper's header asks). */
	struct sb_wl_commit *late_release;
};

/*
 * wl_surface.commit, its snapshot taken, before the helper sees it: the
 * hooks' buffer_type; with -v, the dma-buf's write fences now (snap's
 * witness_fd: acquire_state() in wlc_test.c).
 */
void wlc_test_commit(struct wlc_comp *comp, struct sb_wl_surface_commit_info *info,
		     struct wlc_state *snap);
/*
 * apply() is about to use s's buffer: blocking_wait_ms's wait for the
 * acquire fence, the use reported (hooks' buffer_used, -v's line), and the
 * use's render fence (NULL: none; the compositor's until it signals).
 */
struct wlc_test_fence *wlc_test_use(struct wlc_surface *surf, const struct wlc_state *s,
				    struct sb_wl_commit *commit);
/* The helper took the release of surf's latest commit (hooks' released). */
void wlc_test_released(struct wlc_surface *surf, int render_fence_fd);
/* Signal every pending render fence now (the compositor's teardown). */
void wlc_test_fences_fire_all(struct wlc_comp *comp);

#endif
