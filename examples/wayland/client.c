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
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <drm_fourcc.h>
#include <wayland-client.h>

#include <syncbridge/syncbridge.h>
#include <syncbridge/wayland-client.h>

#include "linux-dmabuf-v1-client-protocol.h"
#include "presentation-time-client-protocol.h"
#include "demo_util.h"
#include "wl_gpu.h"
#include "xdg-shell-client-protocol.h"

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

static const char *
proto_name(enum sb_wl_sync_protocol p)
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

static int64_t
clock_ns(clockid_t clk)
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

/* One frame's events; frame_finish() drops the proxies still unanswered. */
struct frame {
	struct wl_callback *cb;
	struct wp_presentation_feedback *feedback;
	clockid_t clock;    /* wp_presentation's, for the receive times */
	bool done;
	uint32_t time_ms;   /* the frame callback's timestamp (ours: CLOCK_MONOTONIC ms) */
	int64_t done_rx_ns; /* when the frame callback was dispatched here */
	bool feedback_done; /* wp_presentation_feedback answered */
	bool presented;
	int64_t presented_ns;    /* in wp_presentation's clock */
	int64_t presented_rx_ns; /* when the presented event was dispatched here */
};

static void
fb_sync_output(void *data, struct wp_presentation_feedback *fb, struct wl_output *o)
{
}

static void
fb_presented(void *data, struct wp_presentation_feedback *fb, uint32_t sec_hi, uint32_t sec_lo,
	     uint32_t nsec, uint32_t refresh, uint32_t seq_hi, uint32_t seq_lo, uint32_t flags)
{
	struct frame *fr = data;

	fr->feedback_done = fr->presented = true;
	fr->presented_rx_ns = clock_ns(fr->clock);
	fr->presented_ns = (int64_t)((((uint64_t)sec_hi << 32) | sec_lo) * 1000000000 + nsec);
	wp_presentation_feedback_destroy(fb);
	fr->feedback = NULL;
}

static void
fb_discarded(void *data, struct wp_presentation_feedback *fb)
{
	struct frame *fr = data;

	fr->feedback_done = true;
	wp_presentation_feedback_destroy(fb);
	fr->feedback = NULL;
}

static const struct wp_presentation_feedback_listener feedback_listener = {
	fb_sync_output, fb_presented, fb_discarded,
};

static void
frame_done(void *data, struct wl_callback *cb, uint32_t t)
{
	struct frame *fr = data;

	fr->done = true;
	fr->done_rx_ns = clock_ns(fr->clock);
	fr->time_ms = t;
	wl_callback_destroy(cb);
	fr->cb = NULL;
}

static const struct wl_callback_listener frame_listener = { frame_done };

/* The frame's proxies that got no answer (after a timeout, a lost connection). */
static void
frame_finish(struct frame *fr)
{
	if (fr->cb)
		wl_callback_destroy(fr->cb);
	if (fr->feedback)
		wp_presentation_feedback_destroy(fr->feedback);
	fr->cb = NULL;
	fr->feedback = NULL;
}

/* Dispatch the default queue until *flag, at most timeout_ms; 0 or -ETIME/-EPIPE. */
static int
wait_flag(struct wl_display *d, bool *flag, int timeout_ms)
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

static void
report_connection_error(struct wl_display *d)
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

/*
 * `CMD PHASE FRAME 0xRRGGBB` through sh -c; the hook sees the client's
 * environment (WAYLAND_DISPLAY, the session bus). The client's own fds are
 * close-on-exec. Counts the check in *passed when it exited 0, else in
 * *failed (and says why on stderr).
 */
static void
run_hook(const char *hook, const char *phase, int frame, uint32_t colour, int *passed, int *failed)
{
	char cmd[4096];
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s %d 0x%06" PRIx32, hook, phase, frame, colour & 0xffffffu);
	st = system(cmd);
	if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		(*passed)++;
		return;
	}
	(*failed)++;
	fprintf(stderr, "client: frame %d: pixel check '%s' failed (%s %d)\n", frame, phase,
		st == -1 ? "system" : WIFEXITED(st) ? "exit" : "signal",
		st == -1 ? errno : WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
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

int
main(int argc, char **argv)
{
	int frames = 10, render_ms = 50, ret, failures = 0, early = 0, stamp_early = 0;
	int fenced = 0, immediate = 0, status = 1;
	const char *buffers = "vgem", *drm = "auto", *expect = NULL, *hook = NULL;
	int hook_early = 0, hook_missing = 0, hook_ok = 0, expired = 0;
	uint32_t flags = 0;
	bool strict = false, timing = false, no_fence = false;
	enum sb_wl_sync_protocol proto;
	struct app a = { .vgem = -1, .card = -1, .drm_fd = -1, .clock = CLOCK_MONOTONIC,
			 .slots = { { .dumb.fd = -1 }, { .dumb.fd = -1 } } };
	struct slot *slots = a.slots;

	bool no_drm_syncobj = false, no_explicit_v1 = false;
	const struct demo_opt opts[] = {
		{ "frames", DEMO_OPT_INT, &frames, 0, 100000 },
		{ "render-ms", DEMO_OPT_INT, &render_ms, 0, 9000 },
		{ "buffers", DEMO_OPT_STRING, &buffers },
		{ "drm", DEMO_OPT_STRING, &drm },
		{ "no-drm-syncobj", DEMO_OPT_FLAG, &no_drm_syncobj },
		{ "no-explicit-v1", DEMO_OPT_FLAG, &no_explicit_v1 },
		{ "expect", DEMO_OPT_STRING, &expect },
		{ "strict", DEMO_OPT_FLAG, &strict },
		{ "timing", DEMO_OPT_FLAG, &timing },
		{ "no-fence", DEMO_OPT_FLAG, &no_fence },
		{ "hook", DEMO_OPT_STRING, &hook },
		{ NULL },
	};

	if (demo_opt_parse("syncbridge-wl-client", argc, argv, opts, usage, 0) < 0)
		return 2;
	if (no_drm_syncobj)
		flags |= SB_WL_CLIENT_NO_DRM_SYNCOBJ;
	if (no_explicit_v1)
		flags |= SB_WL_CLIENT_NO_EXPLICIT_V1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Implicit sync, nothing attached: no syncobj surface wanting points. */
	if (no_fence)
		flags |= SB_WL_CLIENT_NO_DRM_SYNCOBJ | SB_WL_CLIENT_NO_EXPLICIT_V1;

	a.vgem = wlgpu_drm_open("vgem", false);
	if (a.vgem < 0) {
		fprintf(stderr, "client: no vgem card node (%s): it makes the fences\n",
			strerror(-a.vgem));
		status = 77;
		goto out;
	}
	a.card = strcmp(buffers, "vgem") == 0 ? a.vgem : wlgpu_drm_open(buffers, false);
	if (a.card < 0) {
		fprintf(stderr, "client: no %s card node: %s\n", buffers, strerror(-a.card));
		status = 77;
		goto out;
	}
	if (strcmp(drm, "auto") == 0)
		a.drm_fd = wlgpu_drm_open_syncobj();
	else if (strcmp(drm, "none") != 0)
		a.drm_fd = open(drm, O_RDWR | O_CLOEXEC);

	a.display = wl_display_connect(NULL);
	if (!a.display) {
		fprintf(stderr, "client: cannot connect to the compositor (WAYLAND_DISPLAY=%s)\n",
			getenv("WAYLAND_DISPLAY") ? getenv("WAYLAND_DISPLAY") : "");
		goto out;
	}
	a.registry = wl_display_get_registry(a.display);
	wl_registry_add_listener(a.registry, &registry_listener, &a);
	wl_display_roundtrip(a.display);
	/* the binds' events: wp_presentation's clock_id */
	if (a.presentation)
		wl_display_roundtrip(a.display);
	if (!a.compositor || !a.dmabuf) {
		fprintf(stderr,
			"client: the compositor lacks wl_compositor or zwp_linux_dmabuf_v1 v3\n");
		goto out;
	}

	/* The helper: binds the best explicit-sync global on a private queue. */
	ret = sb_wl_client_create(a.display, a.drm_fd < 0 ? -1 : a.drm_fd, flags, &a.sbc);
	if (ret) {
		fprintf(stderr, "client: sb_wl_client_create: %s\n", strerror(-ret));
		goto out;
	}
	proto = sb_wl_client_get_protocol(a.sbc);
	printf("client: synchronization: %s\n", proto_name(proto));
	if (expect && strcmp(expect, proto_name(proto)) != 0) {
		fprintf(stderr, "client: expected %s\n", expect);
		failures++;
	}

	a.surface = wl_compositor_create_surface(a.compositor);
	ret = sb_wl_surface_sync_create(a.sbc, a.surface, &a.ss);
	if (ret) {
		fprintf(stderr, "client: sb_wl_surface_sync_create: %s\n", strerror(-ret));
		goto out;
	}
	if (a.wm) {
		a.xs = xdg_wm_base_get_xdg_surface(a.wm, a.surface);
		xdg_surface_add_listener(a.xs, &xdg_surface_listener, &a);
		a.top = xdg_surface_get_toplevel(a.xs);
		xdg_toplevel_add_listener(a.top, &toplevel_listener, &a);
		xdg_toplevel_set_title(a.top, "syncbridge-wl-client");
		wl_surface_commit(a.surface);
		if (wait_flag(a.display, &a.configured, ANSWER_MS)) {
			fprintf(stderr, "client: no xdg_surface.configure\n");
			report_connection_error(a.display);
			goto out;
		}
	}

	for (int i = 0; i < 2; i++) {
		struct zwp_linux_buffer_params_v1 *params;

		ret = wlgpu_dumb_create(a.card, W, H, &slots[i].dumb);
		if (ret) {
			fprintf(stderr, "client: dumb buffer on %s: %s\n", buffers, strerror(-ret));
			goto out;
		}
		params = zwp_linux_dmabuf_v1_create_params(a.dmabuf);
		zwp_linux_buffer_params_v1_add(params, slots[i].dumb.fd, 0, 0, slots[i].dumb.stride,
					       (uint32_t)(DRM_FORMAT_MOD_LINEAR >> 32),
					       (uint32_t)DRM_FORMAT_MOD_LINEAR);
		slots[i].buffer = zwp_linux_buffer_params_v1_create_immed(params, W, H,
									  DRM_FORMAT_XRGB8888, 0);
		zwp_linux_buffer_params_v1_destroy(params);
		wl_buffer_add_listener(slots[i].buffer, &buffer_listener, &slots[i]);
	}

	for (int f = 0; f < frames; f++) {
		struct slot *s = &slots[f % 2];
		struct sbk_fence fence;
		struct frame fr = { .clock = a.clock };
		int64_t t_signal;

		/* Reuse only after the compositor let go of the buffer. */
		if (f >= 2 && proto != SB_WL_SYNC_DRM_SYNCOBJ &&
		    wait_flag(a.display, &s->released, 5000))
			fprintf(stderr,
				"client: frame %d: no wl_buffer.release for the buffer of frame %d\n",
				f, f - 2);
		if (s->release) {
			ret = sb_wl_release_wait(s->release, (int64_t)5000 * 1000000);
			if (ret) {
				fprintf(stderr, "client: frame %d: release wait: %s\n", f,
					strerror(-ret));
				failures++;
			}
			if (sb_wl_release_is_fenced(s->release))
				fenced++;
			else
				immediate++;
			sb_wl_release_destroy(s->release);
			s->release = NULL;
		}

		ret = sbk_fence_create(a.vgem, true, &fence);
		if (ret) {
			fprintf(stderr, "client: vgem fence: %s\n", strerror(-ret));
			goto out;
		}
		wl_surface_attach(a.surface, s->buffer, 0, 0);
		wl_surface_damage_buffer(a.surface, 0, 0, W, H);
		ret = no_fence ? 0
			       : sb_wl_surface_sync_set_acquire_fence(a.ss, fence.sync_file,
								      s->dumb.fd);
		if (ret == 0 && !no_fence)
			ret = sb_wl_release_create(a.ss, s->dumb.fd, &s->release);
		if (ret) {
			fprintf(stderr, "client: frame %d: acquire/release: %s\n", f,
				strerror(-ret));
			sbk_fence_destroy(&fence);
			goto out;
		}
		fr.cb = wl_surface_frame(a.surface);
		wl_callback_add_listener(fr.cb, &frame_listener, &fr);
		if (a.presentation) {
			fr.feedback = wp_presentation_feedback(a.presentation, a.surface);
			wp_presentation_feedback_add_listener(fr.feedback, &feedback_listener, &fr);
		}
		s->released = false;
		wl_surface_commit(a.surface);
		wl_display_flush(a.display);

		/* "Render" after the commit; the fence tells the compositor when it
		 * is done. Dispatch meanwhile: the frame's presentation arriving
		 * before the signal is the causal proof of an early use. */
		uint32_t colour = 0xff000000u | (uint32_t)(f * 0x1f3d5b);
		for (uint32_t y = 0; y < H; y++)
			for (uint32_t x = 0; x < W; x++)
				s->dumb.map[y * (s->dumb.stride / 4) + x] = colour;
		ret = wlgpu_dumb_flush(&s->dumb);
		if (ret) {
			fprintf(stderr, "client: frame %d: transfer to the host: %s\n", f,
				strerror(-ret));
			failures++;
		}
		bool never = false;
		wait_flag(a.display, &never, render_ms);
		bool before_signal = a.presentation ? fr.presented : fr.done;
		int hook_early_was = hook_early;
		/* Frame 0 is black, which an empty screen shows too: not judged. */
		if (hook && f > 0)
			run_hook(hook, "pending", f, colour, &hook_ok, &hook_early);
		t_signal = clock_ns(a.clock);
		/*
		 * vgem signals a fence left pending ~10 s by itself (facts.md). A
		 * frame whose fence did so was rightly shown before our "signal":
		 * the run was too slow to judge it (a slow screenshot hook under
		 * load), which is said and fails, but is not counted as the
		 * compositor's doing.
		 */
		bool self_signalled;
		ret = wlgpu_fence_signal(&fence, &self_signalled);
		if (self_signalled) {
			expired++;
			printf("client: frame %d: its fence had signalled itself (vgem's ~10 s limit) before "
			       "the client signalled it: the frame's order is not judged\n",
			       f);
			hook_early = hook_early_was;
			before_signal = false;
		} else if (ret) {
			fprintf(stderr, "client: frame %d: signal: %s\n", f, strerror(-ret));
			failures++;
		}

		ret = wait_flag(a.display, &fr.done, ANSWER_MS);
		if (ret) {
			fprintf(stderr, "client: frame %d: no frame callback: %s\n", f,
				strerror(-ret));
			report_connection_error(a.display);
			frame_finish(&fr);
			sbk_fence_destroy(&fence);
			goto out;
		}
		/*
		 * When does the compositor say it presented the frame?
		 * wp_presentation's feedback (in its clock) when it has it, else
		 * the frame callback's timestamp (our compositor: CLOCK_MONOTONIC
		 * ms). Only the order of events counts: a timestamp before the
		 * signal (by more than the rounding) of an event received after
		 * it is the compositor's estimate, reported, not counted.
		 */
		int64_t dt_ms;
		if (a.presentation) {
			wait_flag(a.display, &fr.feedback_done, ANSWER_MS);
			if (!fr.presented) {
				fprintf(stderr,
					"client: frame %d: presentation feedback discarded\n", f);
				failures++;
			}
			dt_ms = (fr.presented_ns - t_signal) / 1000000;
		} else {
			dt_ms = (int64_t)fr.time_ms - (int64_t)(uint32_t)(t_signal / 1000000);
		}
		if (hook && f > 0)
			run_hook(hook, "shown", f, colour, &hook_ok, &hook_missing);
		if (before_signal)
			early++;
		else if (dt_ms < -1)
			stamp_early++;
		printf("client: frame %d presented %lld ms after its fence signalled%s%s\n", f,
		       (long long)dt_ms, a.presentation ? " (wp_presentation)" : "",
		       before_signal ? ": its presentation arrived before the signal"
		       : dt_ms < -1
			       ? ": the compositor's timestamp, its event came after the signal"
			       : "");
		if (timing && a.presentation && fr.presented)
			printf("timing: frame=%d stamp_us=%lld presented_rx_us=%lld done_rx_us=%lld\n",
			       f, (long long)((fr.presented_ns - t_signal) / 1000),
			       (long long)((fr.presented_rx_ns - t_signal) / 1000),
			       (long long)((fr.done_rx_ns - t_signal) / 1000));
		frame_finish(&fr);
		sbk_fence_destroy(&fence);
	}

	/* The last buffer stays on screen: count what has been released by now. */
	for (int i = 0; i < 2; i++) {
		int fd = -1;
		if (slots[i].release && sb_wl_release_export_fence(slots[i].release, &fd) == 0) {
			if (sb_wl_release_is_fenced(slots[i].release))
				fenced++;
			else
				immediate++;
			if (fd >= 0)
				close(fd);
		}
		sb_wl_release_destroy(slots[i].release);
		slots[i].release = NULL;
	}
	if (wl_display_roundtrip(a.display) < 0) {
		report_connection_error(a.display);
		failures++;
	}
	printf("client: %d frames, %s, releases: %d fenced, %d immediate, %d presented before their fence"
	       " (%d timestamped before it, reported after it)\n",
	       frames, proto_name(proto), fenced, immediate, early, stamp_early);
	if (strict && early)
		failures++;
	if (expired) {
		printf("client: %d fences expired before the client signalled them: this run cannot judge "
		       "their frames\n",
		       expired);
		failures += expired;
	}
	if (hook) {
		printf("client: pixel checks: %d passed, %d failed (%d frames on screen before their fence "
		       "signalled, %d not on screen after they were presented)\n",
		       hook_ok, hook_early + hook_missing, hook_early, hook_missing);
		failures += hook_early + hook_missing;
	}

	status = failures ? 1 : 0;
out:
	app_finish(&a);
	return status;
}
