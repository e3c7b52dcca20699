/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-wl-client's frames (client.c has the picture): a buffer back
 * from the compositor, a pending vgem fence as its acquire fence, commit,
 * "render", signal, and when the compositor said it presented the frame:
 * before the signal is an early use.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wayland-client.h>

#include <syncbridge/syncbridge.h>
#include <syncbridge/wayland-client.h>

#include "client.h"
#include "demo_util.h"
#include "presentation-time-client-protocol.h"

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
	fr->presented_rx_ns = client_clock_ns(fr->clock);
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
	fr->done_rx_ns = client_clock_ns(fr->clock);
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

/*
 * Reuse only after the compositor let go of the buffer: its wl_buffer.release
 * (not sent with linux-drm-syncobj), then the helper's release fence.
 */
static void
reclaim_slot(struct app *a, struct slot *s, int f, enum sb_wl_sync_protocol proto,
	     struct client_tally *t)
{
	int ret;

	if (f >= 2 && proto != SB_WL_SYNC_DRM_SYNCOBJ &&
	    client_wait_flag(a->display, &s->released, 5000))
		fprintf(stderr, "client: frame %d: no wl_buffer.release for the buffer of "
			"frame %d\n", f, f - 2);
	if (!s->release)
		return;
	ret = sb_wl_release_wait(s->release, (int64_t)5000 * 1000000);
	if (ret) {
		fprintf(stderr, "client: frame %d: release wait: %s\n", f, strerror(-ret));
		t->failures++;
	}
	if (sb_wl_release_is_fenced(s->release))
		t->fenced++;
	else
		t->immediate++;
	sb_wl_release_destroy(s->release);
	s->release = NULL;
}

/*
 * The buffer attached with a new pending fence as its acquire fence (unless
 * --no-fence), a release tracked, the frame's callback and feedback asked
 * for, committed. 0, or -1 after saying why (*fence then not left to free).
 */
static int
commit_frame(struct app *a, const struct client_options *o, struct slot *s, int f,
	     struct sbk_fence *fence, struct frame *fr)
{
	int ret = sbk_fence_create(a->vgem, true, fence);

	if (ret) {
		fprintf(stderr, "client: vgem fence: %s\n", strerror(-ret));
		return -1;
	}
	wl_surface_attach(a->surface, s->buffer, 0, 0);
	wl_surface_damage_buffer(a->surface, 0, 0, W, H);
	ret = o->no_fence ? 0 : sb_wl_surface_sync_set_acquire_fence(a->ss, fence->sync_file,
								     s->dumb.fd);
	if (ret == 0 && !o->no_fence)
		ret = sb_wl_release_create(a->ss, s->dumb.fd, &s->release);
	if (ret) {
		fprintf(stderr, "client: frame %d: acquire/release: %s\n", f, strerror(-ret));
		sbk_fence_destroy(fence);
		return -1;
	}
	fr->cb = wl_surface_frame(a->surface);
	wl_callback_add_listener(fr->cb, &frame_listener, fr);
	if (a->presentation) {
		fr->feedback = wp_presentation_feedback(a->presentation, a->surface);
		wp_presentation_feedback_add_listener(fr->feedback, &feedback_listener, fr);
	}
	s->released = false;
	wl_surface_commit(a->surface);
	wl_display_flush(a->display);
	return 0;
}

/* "Render": the CPU writes the frame's colour, then it goes to the host (virtio_gpu). */
static void
render(struct slot *s, int f, uint32_t colour, struct client_tally *t)
{
	for (uint32_t y = 0; y < H; y++)
		for (uint32_t x = 0; x < W; x++)
			s->dumb.map[y * (s->dumb.stride / 4) + x] = colour;
	int ret = wlgpu_dumb_flush(&s->dumb);
	if (ret) {
		fprintf(stderr, "client: frame %d: transfer to the host: %s\n", f, strerror(-ret));
		t->failures++;
	}
}

/*
 * vgem signals a fence left pending ~10 s by itself (facts.md). A frame
 * whose fence did so was rightly shown before our "signal": the run was too
 * slow to judge it (a slow screenshot hook under load), which is said and
 * fails, but is not counted as the compositor's doing. Returns whether it did.
 */
static bool
signal_fence(struct sbk_fence *fence, int f, struct client_tally *t)
{
	bool self_signalled;
	int ret = wlgpu_fence_signal(fence, &self_signalled);

	if (self_signalled) {
		t->expired++;
		printf("client: frame %d: its fence had signalled itself (vgem's ~10 s limit) "
		       "before the client signalled it: the frame's order is not judged\n", f);
	} else if (ret) {
		fprintf(stderr, "client: frame %d: signal: %s\n", f, strerror(-ret));
		t->failures++;
	}
	return self_signalled;
}

/*
 * When does the compositor say it presented the frame? wp_presentation's
 * feedback (in its clock) when it has it, else the frame callback's
 * timestamp (our compositor: CLOCK_MONOTONIC ms). Only the order of events
 * counts: a timestamp before the signal (by more than the rounding) of an
 * event received after it is the compositor's estimate, reported, not
 * counted.
 */
static void
judge(struct app *a, const struct client_options *o, struct client_tally *t, struct frame *fr,
      int f, int64_t t_signal, bool before_signal, uint32_t colour)
{
	int64_t dt_ms;

	if (a->presentation) {
		client_wait_flag(a->display, &fr->feedback_done, ANSWER_MS);
		if (!fr->presented) {
			fprintf(stderr, "client: frame %d: presentation feedback discarded\n", f);
			t->failures++;
		}
		dt_ms = (fr->presented_ns - t_signal) / 1000000;
	} else {
		dt_ms = (int64_t)fr->time_ms - (int64_t)(uint32_t)(t_signal / 1000000);
	}
	if (o->hook && f > 0)
		run_hook(o->hook, "shown", f, colour, &t->hook_ok, &t->hook_missing);
	if (before_signal)
		t->early++;
	else if (dt_ms < -1)
		t->stamp_early++;
	printf("client: frame %d presented %lld ms after its fence signalled%s%s\n", f,
	       (long long)dt_ms, a->presentation ? " (wp_presentation)" : "",
	       before_signal ? ": its presentation arrived before the signal"
	       : dt_ms < -1  ? ": the compositor's timestamp, its event came after the signal"
			     : "");
	if (o->timing && a->presentation && fr->presented)
		printf("timing: frame=%d stamp_us=%lld presented_rx_us=%lld "
		       "done_rx_us=%lld\n", f, (long long)((fr->presented_ns - t_signal) / 1000),
		       (long long)((fr->presented_rx_ns - t_signal) / 1000),
		       (long long)((fr->done_rx_ns - t_signal) / 1000));
}

int
client_run_frame(struct app *a, const struct client_options *o, struct client_tally *t,
		 enum sb_wl_sync_protocol proto, int f)
{
	struct slot *s = &a->slots[f % 2];
	struct sbk_fence fence;
	struct frame fr = { .clock = a->clock };

	reclaim_slot(a, s, f, proto, t);
	if (commit_frame(a, o, s, f, &fence, &fr) < 0)
		return -1;

	/* "Render" after the commit; the fence tells the compositor when it
	 * is done. Dispatch meanwhile: the frame's presentation arriving
	 * before the signal is the causal proof of an early use. */
	uint32_t colour = 0xff000000u | (uint32_t)(f * 0x1f3d5b);
	render(s, f, colour, t);
	bool never = false;
	client_wait_flag(a->display, &never, o->render_ms);
	bool before_signal = a->presentation ? fr.presented : fr.done;
	int hook_early_was = t->hook_early;
	/* Frame 0 is black, which an empty screen shows too: not judged. */
	if (o->hook && f > 0)
		run_hook(o->hook, "pending", f, colour, &t->hook_ok, &t->hook_early);
	int64_t t_signal = client_clock_ns(a->clock);
	if (signal_fence(&fence, f, t)) {
		t->hook_early = hook_early_was;
		before_signal = false;
	}

	int ret = client_wait_flag(a->display, &fr.done, ANSWER_MS);
	if (ret) {
		fprintf(stderr, "client: frame %d: no frame callback: %s\n", f, strerror(-ret));
		client_report_error(a->display);
		frame_finish(&fr);
		sbk_fence_destroy(&fence);
		return -1;
	}
	judge(a, o, t, &fr, f, t_signal, before_signal, colour);
	frame_finish(&fr);
	sbk_fence_destroy(&fence);
	return 0;
}
