/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-wl-compositor: a small headless Wayland compositor whose
 * explicit synchronization is the syncbridge compositor helper, for stock
 * clients (weston-simple-*, vkcube-wayland, glmark2, mpv, GTK 4, foot,
 * Xwayland, wl-clipboard, wayland-info). It offers wl_compositor, wl_shm,
 * wl_output, wl_seat (a keyboard with a keymap, a pointer without events),
 * wl_data_device_manager (the clipboard), wl_subcompositor,
 * xdg_wm_base, wp_presentation, zwp_linux_dmabuf_v1 (v4 with feedback),
 * zwp_linux_explicit_synchronization_v1 (v2) and, with a DRM render node that
 * has timeline syncobjs, wp_linux_drm_syncobj_manager_v1. It composites the
 * mapped windows into an output image at --repaint-hz (GL through EGL where
 * it can import dma-bufs, else the CPU), which --screenshot writes as PNG.
 *
 *   syncbridge-wl-compositor [--socket NAME] [--drm PATH|auto|none]
 *       [--no-explicit-v1] [--no-drm-syncobj] [--no-wait] [--gpu-wait] [--no-implicit-wait]
 *       [--max-pending N]
 *       [--render-delay-ms N] [--blocking-wait-ms N] [--renderer auto|gl|cpu|none]
 *       [--size WxH] [--repaint-hz N] [--screenshot DIR] [--screenshot-every N]
 *       [--ping-timeout-ms N] [--ready-fd FD] [-v]
 *
 *   --socket NAME        listen on $XDG_RUNTIME_DIR/NAME (default: wayland-N)
 *   --drm auto           the first render node with timeline syncobjs (default);
 *                        none: no linux-drm-syncobj-v1
 *   --no-wait            don't hold commits (SB_WL_SERVER_NO_WAIT): the race control
 *   --gpu-wait           hold commits only until their acquire fence exists
 *                        (SB_WL_SERVER_WAIT_MATERIALIZED); the GL renderer's copy
 *                        waits for it on the GPU, and "presented" for the repaint's
 *                        fence (the CPU renderer waits on the CPU)
 *   --no-implicit-wait   don't hold dma-buf commits without an explicit acquire for
 *                        the buffer's implicit fences (SB_WL_SERVER_WAIT_IMPLICIT is
 *                        on by default)
 *   --render-delay-ms N  release buffers with a vgem "render" fence signalled N ms
 *                        after use (needs vgem), instead of immediately
 *   --blocking-wait-ms N the naive compositor: block the event loop in commit until
 *                        the acquire fence signals (at most N ms)
 *   --renderer MODE      what draws the output: auto (default: gl where EGL imports
 *                        dma-bufs, else cpu), gl, cpu, or none (nothing drawn)
 *   --size WxH           the output (default 640x480)
 *   --repaint-hz N       the repaint clock: frame callbacks and presentation feedback
 *                        are answered at its ticks (default 60; 0: at once, at apply)
 *   --screenshot DIR     write DIR/last.png at exit, and with --screenshot-every N
 *                        DIR/frame-NNNNNN.png every N repaints that drew windows
 *   --ping-timeout-ms N  xdg_wm_base: disconnect a client that leaves a ping
 *                        unanswered this long (error "unresponsive"). Without it a
 *                        ping unanswered for 5000 ms only marks the client not
 *                        responding (a line on stderr, and one when it answers)
 *   --ready-fd FD        write the socket name and a newline to FD once listening
 *   -v                   print one line per buffer use: "used ... acquire=STATE
 *                        [of=commit-snapshot] sync=PROTOCOL", STATE the acquire
 *                        fence's (pending, signalled, error, none) at that moment;
 *                        under implicit sync, where the helper hands out no fence,
 *                        that of the dma-buf's write fences as they were at commit
 *                        (of=commit-snapshot)
 *
 * SIGINT/SIGTERM: the windows are asked to close (xdg_toplevel.close) and
 * the compositor stops once its clients are gone, or after a second signal
 * or one second. At exit it prints one line of counts on stderr.
 *
 * Exit: 0 after SIGINT/SIGTERM, 1 on errors, 2 on usage errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wayland-server-core.h>

#include "demo_util.h"
#include "wlc_compositor.h"
#include "wl_gpu.h"

struct run {
	struct wlc_comp *comp;
	struct wl_event_source *grace;
	bool closing;
	int grace_ticks;
};

/* While closing: stop once every client has gone, or after a second. */
static int
grace_tick(void *data)
{
	struct run *run = data;
	struct wl_display *display = wlc_comp_get_display(run->comp);

	if (wl_list_empty(wl_display_get_client_list(display)) || ++run->grace_ticks >= 20)
		wlc_comp_terminate(run->comp);
	else
		wl_event_source_timer_update(run->grace, 50);
	return 0;
}

/* First signal: ask the windows to close, stop within a second; second: now. */
static int
on_signal(int sig, void *data)
{
	struct run *run = data;

	if (run->closing || !wlc_comp_close_windows(run->comp)) {
		wlc_comp_terminate(run->comp);
		return 0;
	}
	run->closing = true;
	wl_event_source_timer_update(run->grace, 50);
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: syncbridge-wl-compositor [--socket NAME] [--drm PATH|auto|none] "
		   "[--no-explicit-v1] [--no-drm-syncobj] [--no-wait] [--gpu-wait] "
		   "[--no-implicit-wait] [--max-pending N] "
		   "[--render-delay-ms N] [--blocking-wait-ms N] [--renderer auto|gl|cpu|none] "
		   "[--size WxH] [--repaint-hz N] [--screenshot DIR] [--screenshot-every N] "
		   "[--ping-timeout-ms N] [--ready-fd FD] [-v]\n");
}

/* The command line into opt, *drm (--drm) and *ready_fd; 0, or the exit status (2). */
static int
parse_options(int argc, char **argv, struct wlc_comp_options *opt, const char **drm,
	      int *ready_fd)
{
	/* --renderer's words, in enum wlc_render_mode's order */
	static const char *const renderers[] = { "none", "auto", "gl", "cpu", NULL };
	static const uint32_t flag_bits[] = { SB_WL_SERVER_NO_EXPLICIT_V1,
					      SB_WL_SERVER_NO_DRM_SYNCOBJ, SB_WL_SERVER_NO_WAIT,
					      SB_WL_SERVER_WAIT_MATERIALIZED };
	bool flag_set[4] = { false }, no_implicit_wait = false;
	int renderer = WLC_RENDER_AUTO;
	const struct demo_opt opts[] = {
		{ "socket", DEMO_OPT_STRING, &opt->socket },
		{ "drm", DEMO_OPT_STRING, drm },
		{ "no-explicit-v1", DEMO_OPT_FLAG, &flag_set[0] },
		{ "no-drm-syncobj", DEMO_OPT_FLAG, &flag_set[1] },
		{ "no-wait", DEMO_OPT_FLAG, &flag_set[2] },
		{ "gpu-wait", DEMO_OPT_FLAG, &flag_set[3] },
		{ "no-implicit-wait", DEMO_OPT_FLAG, &no_implicit_wait },
		{ "max-pending", DEMO_OPT_UINT, &opt->max_pending, 0, UINT32_MAX },
		{ "render-delay-ms", DEMO_OPT_INT, &opt->render_delay_ms, -1, 600000 },
		{ "blocking-wait-ms", DEMO_OPT_INT, &opt->blocking_wait_ms, 0, 600000 },
		{ "renderer", DEMO_OPT_WORD, &renderer, .words = renderers },
		{ "size", DEMO_OPT_SIZE, &opt->output_width, 1, 8192, .dst2 = &opt->output_height },
		{ "repaint-hz", DEMO_OPT_INT, &opt->repaint_hz, 0, 1000 },
		{ "screenshot", DEMO_OPT_STRING, &opt->screenshot_dir },
		{ "screenshot-every", DEMO_OPT_UINT, &opt->screenshot_every, 0, UINT32_MAX },
		{ "ping-timeout-ms", DEMO_OPT_INT, &opt->ping_timeout_ms, 1, 3600000 },
		{ "ready-fd", DEMO_OPT_INT, ready_fd, 0, 65535 },
		{ "verbose", DEMO_OPT_FLAG, &opt->verbose, .short_name = 'v' },
		{ NULL },
	};

	memset(opt, 0, sizeof(*opt));
	opt->drm_fd = -1;
	opt->vgem_fd = -1;
	opt->repaint_hz = 60;
	if (demo_opt_parse("syncbridge-wl-compositor", argc, argv, opts, usage, 0) < 0)
		return 2;
	opt->renderer = (enum wlc_render_mode)renderer;
	opt->ping_disconnect = opt->ping_timeout_ms > 0; /* given: disconnect */
	for (size_t i = 0; i < sizeof(flag_bits) / sizeof(flag_bits[0]); i++)
		if (flag_set[i])
			opt->helper_flags |= flag_bits[i];
	if (!no_implicit_wait)
		opt->helper_flags |= SB_WL_SERVER_WAIT_IMPLICIT;
	if (opt->screenshot_dir && opt->renderer == WLC_RENDER_NONE) {
		fprintf(stderr, "compositor: --screenshot needs a renderer\n");
		return 2;
	}
	return 0;
}

/*
 * The devices the options ask for, into opt: the syncobj node (--drm) and
 * vgem (--render-delay-ms's render fences). 0, or the exit status (1).
 */
static int
open_devices(struct wlc_comp_options *opt, const char *drm)
{
	if (strcmp(drm, "auto") == 0) {
		opt->drm_fd = wlc_open_syncobj_drm();
		if (opt->drm_fd < 0)
			fprintf(stderr, "compositor: no DRM render node with timeline syncobjs; "
					"linux-drm-syncobj-v1 is off\n");
	} else if (strcmp(drm, "none") != 0) {
		opt->drm_fd = open(drm, O_RDWR | O_CLOEXEC);
		if (opt->drm_fd < 0) {
			fprintf(stderr, "compositor: %s: %s\n", drm, strerror(errno));
			return 1;
		}
	}
	if (opt->drm_fd < 0)
		opt->drm_fd = -1;
	if (opt->render_delay_ms > 0) {
		opt->vgem_fd = wlc_open_vgem();
		if (opt->vgem_fd < 0) {
			fprintf(stderr, "compositor: --render-delay-ms needs vgem: %s\n",
				strerror(-opt->vgem_fd));
			opt->vgem_fd = -1;
			return 1;
		}
	}
	return 0;
}

static const char *
yes_no(bool b)
{
	return b ? "yes" : "no";
}

static void
print_started(struct wlc_comp *comp)
{
	uint32_t protocols = sb_wl_server_get_protocols(wlc_comp_get_helper(comp));

	fprintf(stderr, "compositor: listening on %s (renderer: %s, explicit-sync v1: %s, "
			"linux-drm-syncobj: %s)\n",
		wlc_comp_get_socket(comp), wlc_comp_get_renderer_name(comp),
		yes_no(protocols & (1u << SB_WL_SYNC_EXPLICIT_V1)),
		yes_no(protocols & (1u << SB_WL_SYNC_DRM_SYNCOBJ)));
}

static void
print_totals(struct wlc_comp *comp)
{
	struct sb_wl_server_stats stats;
	struct wlc_ping_stats pings;

	sb_wl_server_get_stats(wlc_comp_get_helper(comp), &stats);
	fprintf(stderr,
		"compositor: %" PRIu64 " commits applied, %" PRIu64 " deferred for a fence, "
		"%" PRIu64 " repaints, %" PRIu64 " clients over the limit\n",
		wlc_comp_get_commits(comp), stats.commits_deferred, wlc_comp_get_repaints(comp),
		stats.clients_over_limit);
	wlc_comp_get_ping_stats(comp, &pings);
	fprintf(stderr, "compositor: %" PRIu64 " pings, %" PRIu64 " answered (the longest wait %"
			PRId64 " ms), %" PRIu64 " times a client was marked not responding\n",
		pings.sent, pings.answered, pings.longest_wait_ms, pings.not_responding);
}

int
main(int argc, char **argv)
{
	struct wlc_comp_options opt;
	const char *drm = "auto";
	int ready_fd = -1, err = 0, ret;
	struct wlc_comp *comp;
	struct wl_event_loop *loop;
	struct wl_event_source *sig[2];
	struct run run = { 0 };

	ret = parse_options(argc, argv, &opt, &drm, &ready_fd);
	if (ret)
		return ret;
	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = open_devices(&opt, drm);
	if (ret)
		return ret;

	comp = wlc_comp_create(&opt, &err);
	if (!comp) {
		fprintf(stderr, "compositor: cannot start: %s\n", strerror(-err));
		return 1;
	}
	loop = wl_display_get_event_loop(wlc_comp_get_display(comp));
	run.comp = comp;
	run.grace = wl_event_loop_add_timer(loop, grace_tick, &run);
	sig[0] = wl_event_loop_add_signal(loop, SIGINT, on_signal, &run);
	sig[1] = wl_event_loop_add_signal(loop, SIGTERM, on_signal, &run);
	if (!run.grace || !sig[0] || !sig[1]) {
		fprintf(stderr, "compositor: cannot watch signals\n");
		return 1;
	}
	print_started(comp);
	if (ready_fd >= 0) {
		dprintf(ready_fd, "%s\n", wlc_comp_get_socket(comp));
		close(ready_fd);
	}
	wlc_comp_run(comp);
	print_totals(comp);
	wl_event_source_remove(sig[0]);
	wl_event_source_remove(sig[1]);
	wl_event_source_remove(run.grace);
	wlc_comp_destroy(comp);
	if (opt.vgem_fd >= 0)
		close(opt.vgem_fd);
	if (opt.drm_fd >= 0)
		close(opt.drm_fd);
	return 0;
}
