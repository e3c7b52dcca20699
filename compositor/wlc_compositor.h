/* SPDX-License-Identifier: MIT */
/*
 * A small headless Wayland compositor built on the syncbridge compositor
 * helper (<syncbridge/wayland-server.h>): wl_compositor/wl_surface/wl_region,
 * xdg-shell, wl_output, wl_seat (a keyboard with a keymap where libxkbcommon
 * is built, a pointer; no input ever: a mapped toplevel takes the keyboard
 * focus), wl_data_device_manager (the clipboard), wl_subcompositor and
 * wp_presentation implemented here, wl_shm from libwayland,
 * zwp_linux_dmabuf_v1 (version 4 with feedback, single-plane), and both
 * explicit-sync globals from the helper.
 *
 * "Using" a buffer always means reading its first 32-bit word on the CPU,
 * which is what the tests observe. With a renderer (options.renderer) the
 * compositor also copies each applied buffer (GL through EGLImages, or the
 * CPU) and composites the mapped surfaces into an output image on a repaint
 * clock, which --screenshot writes as PNG.
 *
 * The example program (main.c) runs it from main(); the tests run it
 * on a thread of their own and watch it through the hooks (wlc_test.h).
 */
#ifndef WLC_COMPOSITOR_H
#define WLC_COMPOSITOR_H

#include <stdbool.h>
#include <stdint.h>

#include <syncbridge/wayland-server.h>

struct wl_client;
struct wl_display;
struct wlc_comp;

/* The test interface's hooks (wlc_test.h). */
struct wlc_comp_hooks;

enum wlc_render_mode {
	WLC_RENDER_NONE,  /* nothing drawn (the tests' fixture) */
	WLC_RENDER_AUTO,  /* GL where EGL imports dma-bufs, else the CPU */
	WLC_RENDER_GL,
	WLC_RENDER_CPU,
};

struct wlc_comp_options {
	const char *socket;      /* NULL: wl_display_add_socket_auto() */
	int drm_fd;              /* borrowed; -1: no linux-drm-syncobj */
	uint32_t helper_flags;   /* SB_WL_SERVER_* */
	uint32_t max_pending;    /* 0: the helper's default */
	uint32_t max_client_pending; /* 0: the helper's default; UINT32_MAX: no per-client bound */
	/*
	 * The test interface (wlc_test.h). "Render" with a GPU-like fence:
	 * each use makes a vgem fence (on this borrowed vgem card fd) that
	 * signals render_delay_ms later, and the commit is released with it.
	 * -1: release immediately after the read.
	 */
	int vgem_fd;
	int render_delay_ms;
	/*
	 * The naive compositor (control): with SB_WL_SERVER_NO_WAIT, block the
	 * event loop before each use until the acquire fence signals (at
	 * most this long; 0: don't).
	 */
	int blocking_wait_ms;
	const struct wlc_comp_hooks *hooks;
	void *hook_data;
	bool verbose;            /* print a line per use/release on stdout */

	/*
	 * The repaint clock: frame callbacks and presentation feedback are
	 * answered at its ticks. 0: at once, when a commit is applied (the
	 * tests' fixture: no timer between a commit and its answer).
	 */
	int repaint_hz;
	enum wlc_render_mode renderer;
	uint32_t output_width, output_height; /* 0: 640x480 */
	/* With a renderer: write DIR/frame-NNNNNN.png every N repaints that
	 * drew something (0: only at exit) and DIR/last.png at exit. */
	const char *screenshot_dir;
	unsigned screenshot_every;
	/* xdg_wm_base: a client that leaves a ping unanswered this long is
	 * marked not responding (0: 5000 ms; wlc_shell.c), and with
	 * ping_disconnect disconnected (error "unresponsive"). */
	int ping_timeout_ms;
	bool ping_disconnect;
	/*
	 * Keep each surface's current commit until a newer buffer replaces it
	 * (as a compositor that keeps showing it does), instead of releasing it
	 * once read. The released hook is not called for held commits.
	 */
	bool hold_current;
	/*
	 * Do not tell the helper about sub-surfaces (the subsurface tests'
	 * control): a synchronized child's commits then apply on their own.
	 */
	bool subsurfaces_unsynced;
	/*
	 * Take a buffer an xdg_surface commits before its first configure was
	 * acked as if the configure had been sent and acked (instead of the
	 * unconfigured_buffer error): wlcs 1.5.0's own windows commit their
	 * first buffer so, some without an initial commit (tests/wlcs/).
	 * Never the program's.
	 */
	bool accept_unacked_buffer;
	/*
	 * The seat says it has touch and hands out wl_touch objects: for a
	 * host that injects touch (wlc_embed.h). Without it get_touch is the
	 * missing_capability error.
	 */
	bool seat_touch;
};

/* Returns NULL on failure (errno-style code in *err when err is not NULL). */
struct wlc_comp *wlc_comp_create(const struct wlc_comp_options *options, int *err);
const char *wlc_comp_get_socket(const struct wlc_comp *comp);
struct wl_display *wlc_comp_get_display(const struct wlc_comp *comp);
struct sb_wl_server *wlc_comp_get_helper(const struct wlc_comp *comp);
/*
 * Destroy the helper now, with clients connected (what a compositor losing
 * its DRM device does): later commits are applied without it; commits held
 * (hold_current) are released as usual.
 */
void wlc_comp_drop_helper(struct wlc_comp *comp);
/* Run the event loop until wlc_comp_terminate(). */
void wlc_comp_run(struct wlc_comp *comp);
/* Stop wlc_comp_run(); safe from another thread or a signal handler. */
void wlc_comp_terminate(struct wlc_comp *comp);
void wlc_comp_destroy(struct wlc_comp *comp);
/*
 * Ask every window to close (xdg_toplevel.close); false if there is none.
 * The run ends when the caller terminates it.
 */
bool wlc_comp_close_windows(struct wlc_comp *comp);
/* Commits applied with a buffer, and repaints, so far. */
uint64_t wlc_comp_get_commits(const struct wlc_comp *comp);
uint64_t wlc_comp_get_repaints(const struct wlc_comp *comp);
/* xdg_wm_base pings so far, over every client. */
struct wlc_ping_stats {
	uint64_t sent, answered;
	uint64_t not_responding;  /* times a client was marked not responding */
	int64_t longest_wait_ms;  /* the longest a ping waited for its pong */
};
void wlc_comp_get_ping_stats(const struct wlc_comp *comp, struct wlc_ping_stats *out);
/* "gl", "cpu" or "none": what draws the output. */
const char *wlc_comp_get_renderer_name(const struct wlc_comp *comp);
/* Write the output image as a PNG now; 0 or -errno (-ENODEV: no renderer). */
int wlc_comp_screenshot(struct wlc_comp *comp, const char *path);

/* Find a DRM render node with timeline syncobjs; returns an fd or -errno. */
int wlc_open_syncobj_drm(void);
/* Open vgem's card node (for render fences); returns an fd or -errno. */
int wlc_open_vgem(void);

#endif
