/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-wl-client: present dma-buf frames with explicit synchronization
 * through the syncbridge client helper (<syncbridge/wayland-client.h>), which
 * picks linux-drm-syncobj-v1, else zwp_linux_explicit_synchronization_v1,
 * else implicit sync (the fence attached to the dma-buf).
 *
 * Each frame: a buffer of a ring of two (after its release), a pending vgem
 * fence as the acquire fence, commit, then "render" (the CPU writes the
 * frame's colour into the buffer), then signal the fence. A compositor that
 * honours the acquire fence presents the frame — frame callback — only after
 * the signal. The client dispatches its events while it renders: the frame's
 * presentation (wp_presentation's presented event, else the frame callback)
 * received before the signal is the proof that the compositor did not wait.
 *
 *   syncbridge-wl-client [--frames N] [--render-ms N] [--buffers vgem|virtio_gpu]
 *       [--drm PATH|auto|none] [--no-drm-syncobj] [--no-explicit-v1]
 *       [--expect implicit|v1|syncobj] [--strict] [--timing] [--no-fence]
 *       [--hook CMD]
 *
 *   --buffers   which card node makes the dumb buffers (default vgem; Weston's GL
 *               renderer in the test guest imports virtio_gpu's)
 *   --drm       the client's DRM node for linux-drm-syncobj timelines (default:
 *               the first render node with timeline syncobjs)
 *   --expect    fail unless the helper picked this protocol
 *   --strict    fail when a frame was presented before its fence signalled:
 *               its presentation event arrived before the signal. The
 *               compositor's timestamp is printed, not judged: a timestamp
 *               before the signal of an event that came after it is only the
 *               compositor's clock (Weston's timer backends report a stale
 *               estimate after a repaint of more than 2^31 ns, docs/wayland.md)
 *   --timing    one more line per frame, in microseconds from the fence's signal
 *               (the client's clock read just before FENCE_SIGNAL, in
 *               wp_presentation's clock): the presented timestamp, when the
 *               presented event and when the frame callback reached the client
 *               (bench/e2e_weston.py reads it)
 *   --no-fence  the tests' control: the fence is made and signalled as ever but
 *               given to nobody (no helper call, implicit sync with nothing
 *               attached): what a client without syncbridge does. A compositor
 *               then may present the frame before the signal (--strict fails)
 *   --hook CMD  a pixel check by the compositor's own means (a screenshot): for
 *               each frame after the first, `CMD pending FRAME 0xRRGGBB` runs
 *               (sh -c) while the frame's fence is still pending, its colour
 *               already in the buffer: it must exit 0 when the screen does not
 *               show that colour yet; then `CMD shown FRAME 0xRRGGBB` once the
 *               frame was presented: exit 0 when the screen shows it. A
 *               non-zero exit is a failure (counted, and printed)
 *
 * Uses xdg_wm_base when the compositor has it (Weston maps only shell
 * surfaces). Needs vgem (root). Exit: 0 ok, 1 failure, 2 usage, 77 no vgem.
 *
 * This file sets up (devices, globals, the helper, the surface, two
 * buffers) and sums up; client_frame.c has one frame's steps.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <drm_fourcc.h>
#include <wayland-client.h>

#include <syncbridge/syncbridge.h>
#include <syncbridge/wayland-client.h>

#include "client.h"
#include "linux-dmabuf-v1-client-protocol.h"
#include "presentation-time-client-protocol.h"
#include "demo_util.h"
#include "wl_gpu.h"
#include "xdg-shell-client-protocol.h"

const char *
client_proto_name(enum sb_wl_sync_protocol p)
{
	switch (p) {
	case SB_WL_SYNC_DRM_SYNCOBJ: return "syncobj";
	case SB_WL_SYNC_EXPLICIT_V1: return "v1";
	case SB_WL_SYNC_IMPLICIT: return "implicit";
	}
	return "?";
}

static void
wm_ping(void *data, struct xdg_wm_base *wm, uint32_t serial)
{
	xdg_wm_base_pong(wm, serial);
}

static const struct xdg_wm_base_listener wm_listener = { wm_ping };

static void
presentation_clock_id(void *data, struct wp_presentation *p, uint32_t clk_id)
{
	((struct app *)data)->clock = (clockid_t)clk_id;
}

static const struct wp_presentation_listener presentation_listener = { presentation_clock_id };

/*
 * Listeners go on at bind: an event that reaches a proxy without one is
 * dropped by libwayland-client, and a compositor may ping as soon as
 * xdg_wm_base is bound (ours does) — a ping dispatched before the listener
 * is never answered, and the client is disconnected as unresponsive.
 */
static void
global(void *data, struct wl_registry *r, uint32_t name, const char *iface, uint32_t version)
{
	struct app *a = data;

	if (strcmp(iface, wl_compositor_interface.name) == 0) {
		a->compositor = wl_registry_bind(r, name, &wl_compositor_interface, 4);
	} else if (strcmp(iface, zwp_linux_dmabuf_v1_interface.name) == 0 && version >= 3) {
		a->dmabuf = wl_registry_bind(r, name, &zwp_linux_dmabuf_v1_interface, 3);
	} else if (strcmp(iface, xdg_wm_base_interface.name) == 0) {
		a->wm = wl_registry_bind(r, name, &xdg_wm_base_interface, 1);
		xdg_wm_base_add_listener(a->wm, &wm_listener, a);
	} else if (strcmp(iface, wp_presentation_interface.name) == 0) {
		a->presentation = wl_registry_bind(r, name, &wp_presentation_interface, 1);
		wp_presentation_add_listener(a->presentation, &presentation_listener, a);
	}
}

int64_t
client_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
global_remove(void *data, struct wl_registry *r, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = { global, global_remove };

static void
xdg_surface_configure(void *data, struct xdg_surface *xs, uint32_t serial)
{
	struct app *a = data;

	xdg_surface_ack_configure(xs, serial);
	a->configured = true;
}

static const struct xdg_surface_listener xdg_surface_listener = { xdg_surface_configure };

static void
toplevel_configure(void *data, struct xdg_toplevel *t, int32_t w, int32_t h,
		   struct wl_array *states)
{
}

static void
toplevel_close(void *data, struct xdg_toplevel *t)
{
}

static const struct xdg_toplevel_listener toplevel_listener = {toplevel_configure, toplevel_close};

static void
buffer_release(void *data, struct wl_buffer *b)
{
	((struct slot *)data)->released = true;
}

static const struct wl_buffer_listener buffer_listener = { buffer_release };

int
client_wait_flag(struct wl_display *d, bool *flag, int timeout_ms)
{
	int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;

	while (!*flag) {
		int64_t left = deadline - now_ns();
		struct pollfd p = { .fd = wl_display_get_fd(d), .events = POLLIN };

		if (left <= 0)
			return -ETIME;
		while (wl_display_prepare_read(d) != 0)
			if (wl_display_dispatch_pending(d) < 0)
				return -EPIPE;
		wl_display_flush(d);
		if (poll(&p, 1, (int)(left / 1000000) + 1) > 0) {
			if (wl_display_read_events(d) < 0)
				return -EPIPE;
		} else {
			wl_display_cancel_read(d);
		}
		if (wl_display_dispatch_pending(d) < 0)
			return -EPIPE;
	}
	return 0;
}

void
client_report_error(struct wl_display *d)
{
	const struct wl_interface *iface = NULL;
	uint32_t id = 0, code;
	int err = wl_display_get_error(d);

	if (err == EPROTO) {
		code = wl_display_get_protocol_error(d, &iface, &id);
		fprintf(stderr, "client: protocol error %u on %s@%u\n", code,
			iface ? iface->name : "?", id);
	} else if (err) {
		fprintf(stderr, "client: connection error: %s\n", strerror(err));
	}
}

static void
app_finish(struct app *a)
{
	for (int i = 0; i < 2; i++)
		sb_wl_release_destroy(a->slots[i].release);
	sb_wl_surface_sync_destroy(a->ss);
	sb_wl_client_destroy(a->sbc);
	if (a->top)
		xdg_toplevel_destroy(a->top);
	if (a->xs)
		xdg_surface_destroy(a->xs);
	for (int i = 0; i < 2; i++) {
		if (a->slots[i].buffer)
			wl_buffer_destroy(a->slots[i].buffer);
		if (a->slots[i].dumb.fd >= 0)
			wlgpu_dumb_destroy(&a->slots[i].dumb);
	}
	if (a->surface)
		wl_surface_destroy(a->surface);
	/* The globals too: wl_display_disconnect() frees no proxy (LSan and
	 * memcheck report them as leaks of this program). */
	if (a->presentation)
		wp_presentation_destroy(a->presentation);
	if (a->wm)
		xdg_wm_base_destroy(a->wm);
	if (a->dmabuf)
		zwp_linux_dmabuf_v1_destroy(a->dmabuf);
	if (a->compositor)
		wl_compositor_destroy(a->compositor);
	if (a->registry)
		wl_registry_destroy(a->registry);
	if (a->display) {
		wl_display_roundtrip(a->display);
		wl_display_disconnect(a->display);
	}
	if (a->drm_fd >= 0)
		close(a->drm_fd);
	if (a->card >= 0 && a->card != a->vgem)
		close(a->card);
	if (a->vgem >= 0)
		close(a->vgem);
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: syncbridge-wl-client [--frames N] [--render-ms N] [--buffers vgem|DRIVER] "
		"[--drm PATH|auto|none] [--no-drm-syncobj] [--no-explicit-v1] [--expect PROTOCOL] "
		"[--strict] [--timing] [--no-fence] [--hook CMD]\n"
		"(the comment at the top of examples/wayland/client.c says more)\n");
}

static int
parse_options(int argc, char **argv, struct client_options *o)
{
	bool no_drm_syncobj = false, no_explicit_v1 = false;
	const struct demo_opt opts[] = {
		{ "frames", DEMO_OPT_INT, &o->frames, 0, 100000 },
		{ "render-ms", DEMO_OPT_INT, &o->render_ms, 0, 9000 },
		{ "buffers", DEMO_OPT_STRING, &o->buffers },
		{ "drm", DEMO_OPT_STRING, &o->drm },
		{ "no-drm-syncobj", DEMO_OPT_FLAG, &no_drm_syncobj },
		{ "no-explicit-v1", DEMO_OPT_FLAG, &no_explicit_v1 },
		{ "expect", DEMO_OPT_STRING, &o->expect },
		{ "strict", DEMO_OPT_FLAG, &o->strict },
		{ "timing", DEMO_OPT_FLAG, &o->timing },
		{ "no-fence", DEMO_OPT_FLAG, &o->no_fence },
		{ "hook", DEMO_OPT_STRING, &o->hook },
		{ NULL },
	};

	*o = (struct client_options){ .frames = 10, .render_ms = 50, .buffers = "vgem",
				      .drm = "auto" };
	if (demo_opt_parse("syncbridge-wl-client", argc, argv, opts, usage, 0) < 0)
		return -1;
	if (no_drm_syncobj)
		o->flags |= SB_WL_CLIENT_NO_DRM_SYNCOBJ;
	if (no_explicit_v1)
		o->flags |= SB_WL_CLIENT_NO_EXPLICIT_V1;
	/* Implicit sync, nothing attached: no syncobj surface wanting points. */
	if (o->no_fence)
		o->flags |= SB_WL_CLIENT_NO_DRM_SYNCOBJ | SB_WL_CLIENT_NO_EXPLICIT_V1;
	return 0;
}

/* vgem (the fences), the card making the buffers, the DRM node for syncobj timelines. */
static int
open_devices(struct app *a, const struct client_options *o)
{
	a->vgem = wlgpu_drm_open("vgem", false);
	if (a->vgem < 0) {
		fprintf(stderr, "client: no vgem card node (%s): it makes the fences\n",
			strerror(-a->vgem));
		return -ENODEV;
	}
	a->card = strcmp(o->buffers, "vgem") == 0 ? a->vgem : wlgpu_drm_open(o->buffers, false);
	if (a->card < 0) {
		fprintf(stderr, "client: no %s card node: %s\n", o->buffers, strerror(-a->card));
		return -ENODEV;
	}
	if (strcmp(o->drm, "auto") == 0)
		a->drm_fd = wlgpu_drm_open_syncobj();
	else if (strcmp(o->drm, "none") != 0)
		a->drm_fd = open(o->drm, O_RDWR | O_CLOEXEC);
	return 0;
}

/* The connection and the globals (and, with wp_presentation, its clock). */
static int
connect_compositor(struct app *a)
{
	a->display = wl_display_connect(NULL);
	if (!a->display) {
		fprintf(stderr, "client: cannot connect to the compositor (WAYLAND_DISPLAY=%s)\n",
			getenv("WAYLAND_DISPLAY") ? getenv("WAYLAND_DISPLAY") : "");
		return -1;
	}
	a->registry = wl_display_get_registry(a->display);
	wl_registry_add_listener(a->registry, &registry_listener, a);
	wl_display_roundtrip(a->display);
	/* the binds' events: wp_presentation's clock_id */
	if (a->presentation)
		wl_display_roundtrip(a->display);
	if (!a->compositor || !a->dmabuf) {
		fprintf(stderr,
			"client: the compositor lacks wl_compositor or zwp_linux_dmabuf_v1 v3\n");
		return -1;
	}
	return 0;
}

/*
 * The helper (it binds the best explicit-sync global on a private queue),
 * the protocol it picked (against --expect), the surface with its sync
 * object, and an xdg_toplevel configured when the compositor has xdg_wm_base.
 */
static int
start_surface(struct app *a, const struct client_options *o, struct client_tally *t,
	      enum sb_wl_sync_protocol *proto)
{
	int ret = sb_wl_client_create(a->display, a->drm_fd < 0 ? -1 : a->drm_fd, o->flags,
				      &a->sbc);
	if (ret) {
		fprintf(stderr, "client: sb_wl_client_create: %s\n", strerror(-ret));
		return -1;
	}
	*proto = sb_wl_client_get_protocol(a->sbc);
	printf("client: synchronization: %s\n", client_proto_name(*proto));
	if (o->expect && strcmp(o->expect, client_proto_name(*proto)) != 0) {
		fprintf(stderr, "client: expected %s\n", o->expect);
		t->failures++;
	}

	a->surface = wl_compositor_create_surface(a->compositor);
	ret = sb_wl_surface_sync_create(a->sbc, a->surface, &a->ss);
	if (ret) {
		fprintf(stderr, "client: sb_wl_surface_sync_create: %s\n", strerror(-ret));
		return -1;
	}
	if (!a->wm)
		return 0;
	a->xs = xdg_wm_base_get_xdg_surface(a->wm, a->surface);
	xdg_surface_add_listener(a->xs, &xdg_surface_listener, a);
	a->top = xdg_surface_get_toplevel(a->xs);
	xdg_toplevel_add_listener(a->top, &toplevel_listener, a);
	xdg_toplevel_set_title(a->top, "syncbridge-wl-client");
	wl_surface_commit(a->surface);
	if (client_wait_flag(a->display, &a->configured, ANSWER_MS)) {
		fprintf(stderr, "client: no xdg_surface.configure\n");
		client_report_error(a->display);
		return -1;
	}
	return 0;
}

/* The ring of two: dumb buffers on the card, as LINEAR XRGB8888 wl_buffers. */
static int
create_buffers(struct app *a, const char *buffers)
{
	for (int i = 0; i < 2; i++) {
		struct slot *s = &a->slots[i];
		struct zwp_linux_buffer_params_v1 *params;
		int ret = wlgpu_dumb_create(a->card, W, H, &s->dumb);

		if (ret) {
			fprintf(stderr, "client: dumb buffer on %s: %s\n", buffers, strerror(-ret));
			return -1;
		}
		params = zwp_linux_dmabuf_v1_create_params(a->dmabuf);
		zwp_linux_buffer_params_v1_add(params, s->dumb.fd, 0, 0, s->dumb.stride,
					       (uint32_t)(DRM_FORMAT_MOD_LINEAR >> 32),
					       (uint32_t)DRM_FORMAT_MOD_LINEAR);
		s->buffer = zwp_linux_buffer_params_v1_create_immed(params, W, H,
								     DRM_FORMAT_XRGB8888, 0);
		zwp_linux_buffer_params_v1_destroy(params);
		wl_buffer_add_listener(s->buffer, &buffer_listener, s);
	}
	return 0;
}

/* The last buffer stays on screen: count what has been released by now. */
static void
count_last_releases(struct app *a, struct client_tally *t)
{
	for (int i = 0; i < 2; i++) {
		struct slot *s = &a->slots[i];
		int fd = -1;

		if (s->release && sb_wl_release_export_fence(s->release, &fd) == 0) {
			if (sb_wl_release_is_fenced(s->release))
				t->fenced++;
			else
				t->immediate++;
			if (fd >= 0)
				close(fd);
		}
		sb_wl_release_destroy(s->release);
		s->release = NULL;
	}
}

/* The run's summary lines; returns the failures, --strict's and the expired fences' too. */
static int
summary(const struct client_options *o, struct client_tally *t, enum sb_wl_sync_protocol proto)
{
	printf("client: %d frames, %s, releases: %d fenced, %d immediate, %d presented before "
	       "their fence (%d timestamped before it, reported after it)\n",
	       o->frames, client_proto_name(proto), t->fenced, t->immediate, t->early,
	       t->stamp_early);
	if (o->strict && t->early)
		t->failures++;
	if (t->expired) {
		printf("client: %d fences expired before the client signalled them: this run "
		       "cannot judge their frames\n", t->expired);
		t->failures += t->expired;
	}
	if (o->hook) {
		printf("client: pixel checks: %d passed, %d failed (%d frames on screen before "
		       "their fence signalled, %d not on screen after they were presented)\n",
		       t->hook_ok, t->hook_early + t->hook_missing, t->hook_early, t->hook_missing);
		t->failures += t->hook_early + t->hook_missing;
	}
	return t->failures;
}

int
main(int argc, char **argv)
{
	struct client_options o;
	struct client_tally t = { 0 };
	enum sb_wl_sync_protocol proto;
	struct app a = { .vgem = -1, .card = -1, .drm_fd = -1, .clock = CLOCK_MONOTONIC,
			 .slots = { { .dumb.fd = -1 }, { .dumb.fd = -1 } } };
	int status = 1;

	if (parse_options(argc, argv, &o) < 0)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (open_devices(&a, &o) < 0) {
		status = 77;
		goto out;
	}
	if (connect_compositor(&a) < 0 || start_surface(&a, &o, &t, &proto) < 0 ||
	    create_buffers(&a, o.buffers) < 0)
		goto out;
	for (int f = 0; f < o.frames; f++)
		if (client_run_frame(&a, &o, &t, proto, f) < 0)
			goto out;
	count_last_releases(&a, &t);
	if (wl_display_roundtrip(a.display) < 0) {
		client_report_error(a.display);
		t.failures++;
	}
	status = summary(&o, &t, proto) ? 1 : 0;
out:
	app_finish(&a);
	return status;
}
