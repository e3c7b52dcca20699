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
 *                        unanswered this long (error "unresponsive"; default 5000)
 *   --ready-fd FD        write the socket name and a newline to FD once listening
 *   -v                   print one line per buffer use
 *
 * SIGINT/SIGTERM: the windows are asked to close (xdg_toplevel.close) and
 * the compositor stops once its clients are gone, or after a second signal
 * or one second. At exit it prints one line of counts on stderr.
 *
 * Exit: 0 after SIGINT/SIGTERM, 1 on errors, 2 on usage errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wayland-server-core.h>

#include "sbwl_compositor.h"
#include "sbwl_gpu.h"

struct run {
	struct sbwl_comp *comp;
	struct wl_event_source *grace;
	bool closing;
	int grace_ticks;
};

/* While closing: stop once every client has gone, or after a second. */
static int
grace_tick(void *data)
{
	struct run *run = data;
	struct wl_display *display = sbwl_comp_get_display(run->comp);

	if (wl_list_empty(wl_display_get_client_list(display)) || ++run->grace_ticks >= 20)
		sbwl_comp_terminate(run->comp);
	else
		wl_event_source_timer_update(run->grace, 50);
	return 0;
}

/* First signal: ask the windows to close, stop within a second; second: now. */
static int
on_signal(int sig, void *data)
{
	struct run *run = data;

	if (run->closing || !sbwl_comp_close_windows(run->comp)) {
		sbwl_comp_terminate(run->comp);
		return 0;
	}
	run->closing = true;
	wl_event_source_timer_update(run->grace, 50);
	return 0;
}

static bool
parse_size(const char *arg, uint32_t *w, uint32_t *h)
{
	char *end;
	unsigned long a = strtoul(arg, &end, 10), b;

	if (*end != 'x')
		return false;
	b = strtoul(end + 1, &end, 10);
	if (*end || a == 0 || b == 0 || a > 8192 || b > 8192)
		return false;
	*w = (uint32_t)a;
	*h = (uint32_t)b;
	return true;
}

static bool
parse_renderer(const char *arg, enum sbwl_render_mode *mode)
{
	static const struct {
		const char *name;
		enum sbwl_render_mode mode;
	} modes[] = { { "auto", SBWL_RENDER_AUTO }, { "gl", SBWL_RENDER_GL },
		      { "cpu", SBWL_RENDER_CPU },   { "none", SBWL_RENDER_NONE } };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(arg, modes[i].name) == 0) {
			*mode = modes[i].mode;
			return true;
		}
	}
	return false;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: syncbridge-wl-compositor [--socket NAME] [--drm PATH|auto|none] "
		   "[--no-explicit-v1] [--no-drm-syncobj] [--no-wait] [--gpu-wait] [--no-implicit-wait] [--max-pending N] "
		   "[--render-delay-ms N] [--blocking-wait-ms N] [--renderer auto|gl|cpu|none] [--size WxH] "
		   "[--repaint-hz N] [--screenshot DIR] [--screenshot-every N] [--ping-timeout-ms N] "
		   "[--ready-fd FD] [-v]\n");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "drm", required_argument, NULL, 'd' },
		{ "no-explicit-v1", no_argument, NULL, '1' },
		{ "no-drm-syncobj", no_argument, NULL, '2' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ "gpu-wait", no_argument, NULL, 'g' },
		{ "no-implicit-wait", no_argument, NULL, 'I' },
		{ "max-pending", required_argument, NULL, 'm' },
		{ "render-delay-ms", required_argument, NULL, 'r' },
		{ "blocking-wait-ms", required_argument, NULL, 'b' },
		{ "renderer", required_argument, NULL, 'G' },
		{ "size", required_argument, NULL, 'S' },
		{ "repaint-hz", required_argument, NULL, 'H' },
		{ "screenshot", required_argument, NULL, 'P' },
		{ "screenshot-every", required_argument, NULL, 'E' },
		{ "ping-timeout-ms", required_argument, NULL, 'T' },
		{ "ready-fd", required_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sbwl_comp_options opt;
	const char *drm = "auto";
	bool implicit_wait = true;
	int ready_fd = -1, drm_fd = -1, vgem_fd = -1, c, err = 0;
	struct sbwl_comp *comp;
	struct wl_event_loop *loop;
	struct wl_event_source *sig[2];
	struct run run = { 0 };
	struct sb_wl_server_stats stats;

	memset(&opt, 0, sizeof(opt));
	opt.drm_fd = -1;
	opt.vgem_fd = -1;
	opt.repaint_hz = 60;
	opt.renderer = SBWL_RENDER_AUTO;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case 's': opt.socket = optarg; break;
		case 'd': drm = optarg; break;
		case '1': opt.helper_flags |= SB_WL_SERVER_NO_EXPLICIT_V1; break;
		case '2': opt.helper_flags |= SB_WL_SERVER_NO_DRM_SYNCOBJ; break;
		case 'n': opt.helper_flags |= SB_WL_SERVER_NO_WAIT; break;
		case 'g': opt.helper_flags |= SB_WL_SERVER_WAIT_MATERIALIZED; break;
		case 'I': implicit_wait = false; break;
		case 'm': opt.max_pending = (uint32_t)atoi(optarg); break;
		case 'r': opt.render_delay_ms = atoi(optarg); break;
		case 'b': opt.blocking_wait_ms = atoi(optarg); break;
		case 'G':
			if (!parse_renderer(optarg, &opt.renderer)) {
				usage(stderr);
				return 2;
			}
			break;
		case 'S':
			if (!parse_size(optarg, &opt.output_width, &opt.output_height)) {
				usage(stderr);
				return 2;
			}
			break;
		case 'H': opt.repaint_hz = atoi(optarg); break;
		case 'P': opt.screenshot_dir = optarg; break;
		case 'E': opt.screenshot_every = (unsigned)atoi(optarg); break;
		case 'T': opt.ping_timeout_ms = atoi(optarg); break;
		case 'R': ready_fd = atoi(optarg); break;
		case 'v': opt.verbose = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || opt.repaint_hz < 0 || opt.repaint_hz > 1000) {
		usage(stderr);
		return 2;
	}
	if (opt.screenshot_dir && opt.renderer == SBWL_RENDER_NONE) {
		fprintf(stderr, "compositor: --screenshot needs a renderer\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (strcmp(drm, "auto") == 0) {
		drm_fd = sbwl_open_syncobj_drm();
		if (drm_fd < 0)
			fprintf(stderr, "compositor: no DRM render node with timeline syncobjs; "
					"linux-drm-syncobj-v1 is off\n");
	} else if (strcmp(drm, "none") != 0) {
		drm_fd = open(drm, O_RDWR | O_CLOEXEC);
		if (drm_fd < 0) {
			fprintf(stderr, "compositor: %s: %s\n", drm, strerror(errno));
			return 1;
		}
	}
	opt.drm_fd = drm_fd < 0 ? -1 : drm_fd;
	if (implicit_wait)
		opt.helper_flags |= SB_WL_SERVER_WAIT_IMPLICIT;
	if (opt.render_delay_ms > 0) {
		vgem_fd = sbwl_open_vgem();
		if (vgem_fd < 0) {
			fprintf(stderr, "compositor: --render-delay-ms needs vgem: %s\n", strerror(-vgem_fd));
			return 1;
		}
		opt.vgem_fd = vgem_fd;
	}

	comp = sbwl_comp_create(&opt, &err);
	if (!comp) {
		fprintf(stderr, "compositor: cannot start: %s\n", strerror(-err));
		return 1;
	}
	loop = wl_display_get_event_loop(sbwl_comp_get_display(comp));
	run.comp = comp;
	run.grace = wl_event_loop_add_timer(loop, grace_tick, &run);
	sig[0] = wl_event_loop_add_signal(loop, SIGINT, on_signal, &run);
	sig[1] = wl_event_loop_add_signal(loop, SIGTERM, on_signal, &run);
	if (!run.grace || !sig[0] || !sig[1]) {
		fprintf(stderr, "compositor: cannot watch signals\n");
		return 1;
	}
	fprintf(stderr, "compositor: listening on %s (renderer: %s, explicit-sync v1: %s, linux-drm-syncobj: %s)\n",
		sbwl_comp_get_socket(comp), sbwl_comp_get_renderer_name(comp),
		sb_wl_server_get_protocols(sbwl_comp_get_helper(comp)) & (1u << SB_WL_SYNC_EXPLICIT_V1) ? "yes" : "no",
		sb_wl_server_get_protocols(sbwl_comp_get_helper(comp)) & (1u << SB_WL_SYNC_DRM_SYNCOBJ) ? "yes" : "no");
	if (ready_fd >= 0) {
		dprintf(ready_fd, "%s\n", sbwl_comp_get_socket(comp));
		close(ready_fd);
	}
	sbwl_comp_run(comp);
	sb_wl_server_get_stats(sbwl_comp_get_helper(comp), &stats);
	fprintf(stderr, "compositor: %" PRIu64 " commits applied, %" PRIu64 " deferred for a fence, "
			"%" PRIu64 " repaints, %" PRIu64 " clients over the limit\n",
		sbwl_comp_get_commits(comp), stats.commits_deferred, sbwl_comp_get_repaints(comp),
		stats.clients_over_limit);
	wl_event_source_remove(sig[0]);
	wl_event_source_remove(sig[1]);
	wl_event_source_remove(run.grace);
	sbwl_comp_destroy(comp);
	if (vgem_fd >= 0)
		close(vgem_fd);
	if (drm_fd >= 0)
		close(drm_fd);
	return 0;
}
