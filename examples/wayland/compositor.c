/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-wl-compositor: a minimal headless Wayland compositor whose
 * explicit synchronization is the syncbridge compositor helper. It offers
 * wl_compositor, wl_shm, zwp_linux_dmabuf_v1 (v3), zwp_linux_explicit_
 * synchronization_v1 (v2) and, with a DRM render node that has timeline
 * syncobjs, wp_linux_drm_syncobj_manager_v1. Nothing is drawn: a commit is
 * "used" by reading the buffer's first word once its acquire has signalled.
 *
 *   syncbridge-wl-compositor [--socket NAME] [--drm PATH|auto|none]
 *       [--no-explicit-v1] [--no-drm-syncobj] [--no-wait] [--no-implicit-wait] [--max-pending N]
 *       [--render-delay-ms N] [--blocking-wait-ms N] [--ready-fd FD] [-v]
 *
 *   --socket NAME        listen on $XDG_RUNTIME_DIR/NAME (default: wayland-N)
 *   --drm auto           the first render node with timeline syncobjs (default);
 *                        none: no linux-drm-syncobj-v1
 *   --no-wait            don't hold commits (SB_WL_SERVER_NO_WAIT): the race control
 *   --no-implicit-wait   don't hold dma-buf commits without an explicit acquire for
 *                        the buffer's implicit fences (SB_WL_SERVER_WAIT_IMPLICIT is
 *                        on by default)
 *   --render-delay-ms N  release buffers with a vgem "render" fence signalled N ms
 *                        after use (needs vgem), instead of immediately
 *   --blocking-wait-ms N the naive compositor: block the event loop in commit until
 *                        the acquire fence signals (at most N ms)
 *   --ready-fd FD        write the socket name and a newline to FD once listening
 *   -v                   print one line per buffer use
 *
 * Exit: 0 after SIGINT/SIGTERM, 1 on errors, 2 on usage errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wayland-server-core.h>

#include "sbwl_compositor.h"
#include "sbwl_gpu.h"

static int
on_signal(int sig, void *data)
{
	sbwl_comp_terminate(data);
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: syncbridge-wl-compositor [--socket NAME] [--drm PATH|auto|none] "
		   "[--no-explicit-v1] [--no-drm-syncobj] [--no-wait] [--no-implicit-wait] [--max-pending N] "
		   "[--render-delay-ms N] [--blocking-wait-ms N] [--ready-fd FD] [-v]\n");
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
		{ "no-implicit-wait", no_argument, NULL, 'I' },
		{ "max-pending", required_argument, NULL, 'm' },
		{ "render-delay-ms", required_argument, NULL, 'r' },
		{ "blocking-wait-ms", required_argument, NULL, 'b' },
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
	struct wl_event_source *sig[2];

	memset(&opt, 0, sizeof(opt));
	opt.drm_fd = -1;
	opt.vgem_fd = -1;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case 's': opt.socket = optarg; break;
		case 'd': drm = optarg; break;
		case '1': opt.helper_flags |= SB_WL_SERVER_NO_EXPLICIT_V1; break;
		case '2': opt.helper_flags |= SB_WL_SERVER_NO_DRM_SYNCOBJ; break;
		case 'n': opt.helper_flags |= SB_WL_SERVER_NO_WAIT; break;
		case 'I': implicit_wait = false; break;
		case 'm': opt.max_pending = (uint32_t)atoi(optarg); break;
		case 'r': opt.render_delay_ms = atoi(optarg); break;
		case 'b': opt.blocking_wait_ms = atoi(optarg); break;
		case 'R': ready_fd = atoi(optarg); break;
		case 'v': opt.verbose = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
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
	sig[0] = wl_event_loop_add_signal(wl_display_get_event_loop(sbwl_comp_get_display(comp)),
					  SIGINT, on_signal, comp);
	sig[1] = wl_event_loop_add_signal(wl_display_get_event_loop(sbwl_comp_get_display(comp)),
					  SIGTERM, on_signal, comp);
	fprintf(stderr, "compositor: listening on %s (explicit-sync v1: %s, linux-drm-syncobj: %s)\n",
		sbwl_comp_get_socket(comp),
		sb_wl_server_get_protocols(sbwl_comp_get_helper(comp)) & (1u << SB_WL_SYNC_EXPLICIT_V1) ? "yes" : "no",
		sb_wl_server_get_protocols(sbwl_comp_get_helper(comp)) & (1u << SB_WL_SYNC_DRM_SYNCOBJ) ? "yes" : "no");
	if (ready_fd >= 0) {
		dprintf(ready_fd, "%s\n", sbwl_comp_get_socket(comp));
		close(ready_fd);
	}
	sbwl_comp_run(comp);
	wl_event_source_remove(sig[0]);
	wl_event_source_remove(sig[1]);
	sbwl_comp_destroy(comp);
	if (vgem_fd >= 0)
		close(vgem_fd);
	if (drm_fd >= 0)
		close(drm_fd);
	return 0;
}
