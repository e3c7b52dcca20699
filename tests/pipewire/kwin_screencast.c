/* SPDX-License-Identifier: MIT */
/*
 * kwin-screencast: start KWin's screencast of its first output and say its
 * PipeWire node (issue 35, item 4; tests/pipewire/pw-screencast.sh --peer
 * kwin). KWin offers screencasts through zkde_screencast_unstable_v1
 * (plasma-wayland-protocols), a restricted global: KWin advertises it to
 * every client only with KWIN_WAYLAND_NO_PERMISSION_CHECKS=1 (else to the
 * programs whose desktop file lists it), and only where its screencast
 * plugin is loaded (Debian's kwin-common).
 *
 *   kwin-screencast      (WAYLAND_DISPLAY: KWin's socket)
 *
 * Prints "node=N" once KWin created the stream, then holds it (the stream
 * lives as long as this client's object) until KWin closes it or a signal
 * ends the program. Exit: 0 closed by KWin or by SIGTERM/SIGINT, 1 a
 * failure (KWin's message on stderr), 77 no such global.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wayland-client.h>

#include "zkde-screencast-unstable-v1-client-protocol.h"

struct app {
	struct wl_output *output;
	struct zkde_screencast_unstable_v1 *screencast;
	bool done, failed;
};

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	stop = 1;
}

static void
global(void *data, struct wl_registry *r, uint32_t name, const char *iface, uint32_t version)
{
	struct app *a = data;

	if (!strcmp(iface, wl_output_interface.name) && !a->output)
		a->output = wl_registry_bind(r, name, &wl_output_interface, 1);
	else if (!strcmp(iface, zkde_screencast_unstable_v1_interface.name))
		a->screencast = wl_registry_bind(r, name, &zkde_screencast_unstable_v1_interface,
						 version < 3 ? version : 3);
}

static void
global_remove(void *data, struct wl_registry *r, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = { global, global_remove };

static void
closed(void *data, struct zkde_screencast_stream_unstable_v1 *s)
{
	struct app *a = data;

	printf("# KWin closed the stream\n");
	a->done = true;
}

static void
created(void *data, struct zkde_screencast_stream_unstable_v1 *s, uint32_t node)
{
	printf("node=%u\n", node);
	fflush(stdout);
}

static void
failed(void *data, struct zkde_screencast_stream_unstable_v1 *s, const char *error)
{
	struct app *a = data;

	fprintf(stderr, "kwin-screencast: KWin refused the stream: %s\n", error);
	a->failed = a->done = true;
}

static const struct zkde_screencast_stream_unstable_v1_listener stream_listener = {
	closed, created, failed,
};

int
main(void)
{
	struct app a = { 0 };
	struct zkde_screencast_stream_unstable_v1 *stream;
	struct wl_display *dpy = wl_display_connect(NULL);
	struct sigaction sa = { .sa_handler = on_signal };
	struct wl_registry *reg;

	if (!dpy) {
		fprintf(stderr, "kwin-screencast: cannot connect to the compositor: %s\n", strerror(errno));
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	reg = wl_display_get_registry(dpy);
	wl_registry_add_listener(reg, &registry_listener, &a);
	wl_display_roundtrip(dpy);
	if (!a.screencast || !a.output) {
		fprintf(stderr, "kwin-screencast: no %s%s (KWin needs its screencast plugin and "
				"KWIN_WAYLAND_NO_PERMISSION_CHECKS=1)\n",
			a.screencast ? "" : "zkde_screencast_unstable_v1 ", a.output ? "" : "wl_output");
		wl_display_disconnect(dpy);
		return 77;
	}
	stream = zkde_screencast_unstable_v1_stream_output(a.screencast, a.output,
							   ZKDE_SCREENCAST_UNSTABLE_V1_POINTER_HIDDEN);
	zkde_screencast_stream_unstable_v1_add_listener(stream, &stream_listener, &a);
	wl_display_flush(dpy);
	/* Poll with a timeout so that a signal between two dispatches ends us too. */
	while (!a.done && !stop) {
		struct pollfd p = { .fd = wl_display_get_fd(dpy), .events = POLLIN };

		wl_display_flush(dpy);
		if (poll(&p, 1, 200) < 0 && errno != EINTR)
			break;
		if ((p.revents & POLLIN) && wl_display_dispatch(dpy) < 0) {
			fprintf(stderr, "kwin-screencast: the connection failed: %s\n", strerror(errno));
			a.failed = true;
			break;
		}
		wl_display_dispatch_pending(dpy);
	}
	if (!a.failed)
		zkde_screencast_stream_unstable_v1_close(stream);
	zkde_screencast_unstable_v1_destroy(a.screencast);
	wl_output_destroy(a.output);
	wl_registry_destroy(reg);
	wl_display_roundtrip(dpy);
	wl_display_disconnect(dpy);
	return a.failed ? 1 : 0;
}
