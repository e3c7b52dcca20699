/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-wl-client's parts (client.c: setup, options, the summary;
 * client_frame.c: one frame, from its buffer's release to its presentation):
 * what both use.
 */
#ifndef SB_WL_CLIENT_EXAMPLE_H
#define SB_WL_CLIENT_EXAMPLE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <wayland-client.h>

#include <syncbridge/wayland-client.h>

#include "wl_gpu.h"

#define W 64
#define H 64
/*
 * How long to wait for what the compositor owes (a configure, a frame
 * callback, presentation feedback) before calling it a failure. Generous:
 * a GL compositor's first draw compiles its shaders, and llvmpipe in the
 * TCG test guest took 1.5-6.7 s for it, the longer with the host busy.
 */
#define ANSWER_MS 30000

struct slot {
	struct wlgpu_dumb dumb;
	struct wl_buffer *buffer;
	bool released;             /* wl_buffer.release received since the last commit */
	struct sb_wl_release *release;
};

/* Everything the client sets up; app_finish() takes down what is there. */
struct app {
	int vgem, card, drm_fd;    /* card may be vgem */
	struct wl_display *display;
	struct wl_registry *registry;
	struct wl_compositor *compositor;
	struct zwp_linux_dmabuf_v1 *dmabuf;
	struct xdg_wm_base *wm;
	struct wp_presentation *presentation;
	clockid_t clock; /* wp_presentation's clock (CLOCK_MONOTONIC without it) */
	bool configured;
	struct sb_wl_client *sbc;
	struct wl_surface *surface;
	struct sb_wl_surface_sync *ss;
	struct xdg_surface *xs;
	struct xdg_toplevel *top;
	struct slot slots[2];
};

/* The command line (the comment at the top of client.c). */
struct client_options {
	int frames, render_ms;
	const char *buffers, *drm, *expect, *hook;
	uint32_t flags;  /* SB_WL_CLIENT_NO_* */
	bool strict, timing, no_fence;
};

/* What the run counted: the summary's figures and the exit status's. */
struct client_tally {
	int failures;
	int early;       /* presented (its event received) before the fence signalled */
	int stamp_early; /* timestamped before the signal, its event received after it */
	int fenced, immediate; /* releases */
	int hook_ok, hook_early, hook_missing;
	int expired;     /* fences vgem signalled itself (its ~10 s limit) */
};

/* "syncobj", "v1" or "implicit": --expect's words. */
const char *client_proto_name(enum sb_wl_sync_protocol p);
/* Now on clk (wp_presentation's clock, or CLOCK_MONOTONIC). */
int64_t client_clock_ns(clockid_t clk);
/* Dispatch the default queue until *flag, at most timeout_ms; 0 or -ETIME/-EPIPE. */
int client_wait_flag(struct wl_display *d, bool *flag, int timeout_ms);
/* The connection's error (a protocol error: its interface and object), on stderr. */
void client_report_error(struct wl_display *d);

/*
 * Frame f into slots[f % 2], counted in t: -1 when the run cannot go on
 * (said on stderr), else 0.
 */
int client_run_frame(struct app *a, const struct client_options *o, struct client_tally *t,
		     enum sb_wl_sync_protocol proto, int f);

#endif
