/* SPDX-License-Identifier: MIT */
/*
 * wl-stuck-client: client A commits a buffer whose acquire never signals
 * (a vgem fence nobody signals; a timeline point nobody submits). Client B's
 * commits — and A's other surface — must go through at their own pace; A's
 * stuck surface must not; and A piling up more than max_pending commits on it
 * gets A (only A) disconnected with an implementation error.
 *
 *   wl-stuck-client --proto v1|syncobj [--control]
 *
 * --control: the naive compositor, which waits for acquire fences inside its
 * commit handler (blocking the event loop, here for at most 1.5 s): the test
 * passes only if B's commit is then held up behind A's fence.
 *
 * Timing: two wall-clock bounds, each the point of its check, with wide
 * margins. "B was never held up": B's worst commit-to-frame < 1000 ms, where
 * it was 3-104 ms over 120 runs in the TCG guest, two at a time on a loaded host;
 * being held up would cost the whole wait, which never ends here. The
 * control's "held up" is >= 750 ms against a 1,500 ms blocking wait (1,505-1,531 ms). No
 * sleep orders anything: A's commit is known taken by a roundtrip (see
 * main), the cut-off by the protocol error itself. The v1 variant's stuck
 * fence is a vgem fence, which signals itself after ~10 s: the program needs
 * it pending for its ~0.5 s run (~1 s under ASan; the valgrind selection
 * takes the syncobj variant, whose stuck point nobody ever submits).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include <syncbridge/syncbridge.h>

#include "demo_util.h"
#include "harness.h"
#include "kernel.h"
#include "wlt.h"

#define MAX_PENDING 4
#define BLOCK_MS 1500

struct side {
	struct wlt_client c;
	struct wl_surface *surf;
	struct wl_buffer *buf;
	struct zwp_linux_surface_synchronization_v1 *sync;
	struct wp_linux_drm_syncobj_surface_v1 *so;
	/* acq: the stuck commit's timeline (never signalled past 0); acq2: every
	 * other commit's. Separate, since signalling point N of a timeline also
	 * completes every point below N. */
	struct wp_linux_drm_syncobj_timeline_v1 *acq, *acq2, *rel;
	uint32_t acq_handle, acq2_handle;
	uint64_t point;
};

static struct wlt_devices dev;

static void
side_init(struct side *s, const char *socket, bool syncobj, int dmabuf_fd)
{
	memset(s, 0, sizeof(*s));
	REQUIRE(wlt_client_connect(&s->c, socket) == 0, "connect");
	s->surf = wl_compositor_create_surface(s->c.compositor);
	s->buf = wlt_dmabuf_buffer(&s->c, dmabuf_fd, 16, 16, 64);
	if (syncobj) {
		REQUIRE(s->c.syncobj, "no linux-drm-syncobj global");
		s->so = wp_linux_drm_syncobj_manager_v1_get_surface(s->c.syncobj, s->surf);
		s->acq = wlt_timeline_new(&s->c, dev.client_drm, &s->acq_handle);
		s->acq2 = wlt_timeline_new(&s->c, dev.client_drm, &s->acq2_handle);
		s->rel = wlt_timeline_new(&s->c, dev.client_drm, NULL);
	} else {
		REQUIRE(s->c.explicit_sync, "no explicit-sync global");
		s->sync = zwp_linux_explicit_synchronization_v1_get_synchronization(s->c.explicit_sync, s->surf);
	}
}

/* Every proxy the side made, then its connection (LSan counts what is left). */
static void
side_finish(struct side *s)
{
	if (s->sync)
		zwp_linux_surface_synchronization_v1_destroy(s->sync);
	if (s->so)
		wp_linux_drm_syncobj_surface_v1_destroy(s->so);
	if (s->acq)
		wp_linux_drm_syncobj_timeline_v1_destroy(s->acq);
	if (s->acq2)
		wp_linux_drm_syncobj_timeline_v1_destroy(s->acq2);
	if (s->rel)
		wp_linux_drm_syncobj_timeline_v1_destroy(s->rel);
	if (s->buf)
		wl_buffer_destroy(s->buf);
	if (s->surf)
		wl_surface_destroy(s->surf);
	wlt_client_disconnect(&s->c);
}

/*
 * Commit the buffer with an acquire: fence_fd (v1; -1 none) or the next
 * point of the side's acquire timeline (syncobj), signalled now when
 * `signal` is set.
 */
static void
side_commit(struct side *s, int fence_fd, bool signal, bool *frame)
{
	wl_surface_attach(s->surf, s->buf, 0, 0);
	if (s->so) {
		s->point++;
		if (signal)
			REQUIRE(sb_syncobj_signal(dev.client_drm, s->acq2_handle, s->point) == 0, "signal point");
		wp_linux_drm_syncobj_surface_v1_set_acquire_point(s->so, signal ? s->acq2 : s->acq, 0,
								  signal ? (uint32_t)s->point : 1);
		wp_linux_drm_syncobj_surface_v1_set_release_point(s->so, s->rel, 0, (uint32_t)s->point);
	} else if (fence_fd >= 0) {
		zwp_linux_surface_synchronization_v1_set_acquire_fence(s->sync, fence_fd);
	}
	if (frame)
		wlt_frame(s->surf, frame);
	wl_surface_commit(s->surf);
	wl_display_flush(s->c.display);
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: wl-stuck [--proto v1|syncobj] [--control]\n");
}

int
main(int argc, char **argv)
{
	static const char *const protos[] = { "v1", "syncobj", NULL };
	int proto = 0;
	bool control = false, syncobj;
	const struct demo_opt opts[] = {
		{ "proto", DEMO_OPT_WORD, &proto, .words = protos },
		{ "control", DEMO_OPT_FLAG, &control },
		{ NULL },
	};
	struct wlc_comp_options opt;
	struct wlt_comp comp;
	struct side a, b;
	struct sbk_buf buf;
	struct sbk_fence stuck;
	int ret;

	if (demo_opt_parse("wl-stuck", argc, argv, opts, usage, 0) < 0)
		return 2;
	syncobj = strcmp(protos[proto], "syncobj") == 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	wlt_devices_open(&dev, syncobj ? WLT_DEV_DRM_REQUIRED : 0);
	if (control && syncobj) {
		/* The naive wait exports the acquire point as a sync_file: it needs a fence. */
		tb_note("control with syncobj: the stuck point is a pending vgem fence");
	}

	wlt_comp_options_init(&opt, &dev, 0);
	opt.max_pending = MAX_PENDING;
	opt.blocking_wait_ms = control ? BLOCK_MS : 0;
	ret = wlt_comp_start(&comp, &opt);
	REQUIRE(ret == 0, "start the compositor: %s", strerror(-ret));
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, dev.vgem, 16 * 64, &buf) == 0, "vgem buffer");
	REQUIRE(sbk_fence_create(dev.vgem, true, &stuck) == 0, "vgem fence"); /* never signalled by us */

	side_init(&a, comp.socket, syncobj, buf.fd);
	side_init(&b, comp.socket, syncobj, buf.fd);
	REQUIRE(wl_display_roundtrip(a.c.display) >= 0 && wl_display_roundtrip(b.c.display) >= 0, "setup");

	/* A: one commit that will never be ready. */
	if (syncobj && control)
		REQUIRE(sb_syncobj_import_sync_file(dev.client_drm, a.acq_handle, 1, stuck.sync_file) == 0,
			"import the stuck fence at point 1");
	side_commit(&a, stuck.sync_file, false, NULL);
	/*
	 * B starts once the compositor has taken A's commit: a roundtrip on A
	 * is answered after its commit handler ran. Not in the control, whose
	 * handler blocks (the roundtrip would wait it out): there A's commit is
	 * readable before B's first one is sent, so the compositor dispatches it
	 * in the same epoll batch as B's first commit at the latest, and at least
	 * one of B's frames waits behind the blocking wait.
	 */
	if (!control)
		REQUIRE(wl_display_roundtrip(a.c.display) >= 0, "A's stuck commit taken");

	/* B: five frames, each with an already-signalled acquire, each must show up promptly. */
	int64_t worst = 0;
	for (int i = 0; i < 5; i++) {
		struct sbk_fence f;
		bool frame = false;
		int64_t t0 = now_ns();

		REQUIRE(sbk_fence_create(dev.vgem, true, &f) == 0, "vgem fence");
		sbk_fence_signal(&f);
		side_commit(&b, f.sync_file, true, &frame);
		ret = wlt_wait_flag(&b.c, &frame, 5000 * WLT_MS);
		int64_t dt = now_ns() - t0;
		if (dt > worst)
			worst = dt;
		CHECK(ret == 0, "B frame %d: frame callback (%s)", i, strerror(-ret));
		sbk_fence_destroy(&f);
	}
	tb_note("B's worst commit-to-frame time: %.1f ms", (double)worst / 1e6);
	if (control) {
		CHECK(worst >= (BLOCK_MS / 2) * WLT_MS,
		      "control: the naive compositor held B up behind A's fence (worst %.1f ms)",
		      (double)worst / 1e6);
		goto out;
	}
	CHECK(worst < 1000 * WLT_MS, "B was never held up by A (worst %.1f ms)", (double)worst / 1e6);
	/* A's stuck surface: never used — the five uses are B's (one client, seq 1..5). */
	pthread_mutex_lock(&comp.lock);
	int total = comp.n_used, others = 0;
	for (int i = 0; i < comp.n_used; i++)
		if (comp.used[i].client != comp.used[0].client || comp.used[i].seq != (uint64_t)i + 1)
			others++;
	pthread_mutex_unlock(&comp.lock);
	CHECK_EQ(total, 5, "buffer uses (B's five; none of A's stuck surface)");
	CHECK_EQ(others, 0, "uses that are not B's frames 1..5 in order");

	/* A's second surface, no sync object: not held up by the first. */
	{
		struct wl_surface *s2 = wl_compositor_create_surface(a.c.compositor);
		struct wl_buffer *b2 = wlt_shm_buffer(&a.c, 7);
		bool frame = false;
		wl_surface_attach(s2, b2, 0, 0);
		wlt_frame(s2, &frame);
		wl_surface_commit(s2);
		CHECK(wlt_wait_flag(&a.c, &frame, 5000 * WLT_MS) == 0,
		      "A's other surface is served while its first one waits");
		wl_buffer_destroy(b2);
		wl_surface_destroy(s2);
	}

	/* A piles up commits behind the stuck one: MAX_PENDING waiting, then one more. */
	for (int i = 1; i < MAX_PENDING; i++) {
		struct sbk_fence f;
		REQUIRE(sbk_fence_create(dev.vgem, true, &f) == 0, "vgem fence");
		sbk_fence_signal(&f);
		side_commit(&a, f.sync_file, true, NULL);
		sbk_fence_destroy(&f);
	}
	const char *iface;
	uint32_t code, id;
	CHECK(wlt_roundtrip_error(&a.c, &iface, &code, &id) == 0,
	      "A with %d commits waiting is still connected", MAX_PENDING);
	side_commit(&a, -1, true, NULL);
	ret = wlt_roundtrip_error(&a.c, &iface, &code, &id);
	CHECK(ret < 0 && strcmp(iface, "wl_display") == 0 && code == WL_DISPLAY_ERROR_IMPLEMENTATION,
	      "A's commit number %d on the stuck surface: implementation error (got %s %u)",
	      MAX_PENDING + 1, ret < 0 ? iface : "none", code);
	{
		bool frame = false;
		struct sbk_fence f;
		REQUIRE(sbk_fence_create(dev.vgem, true, &f) == 0, "vgem fence");
		sbk_fence_signal(&f);
		side_commit(&b, f.sync_file, true, &frame);
		CHECK(wlt_wait_flag(&b.c, &frame, 5000 * WLT_MS) == 0, "B is still served after A was cut off");
		sbk_fence_destroy(&f);
	}
	struct wlc_used last;
	pthread_mutex_lock(&comp.lock);
	last = comp.used[comp.n_used - 1];
	pthread_mutex_unlock(&comp.lock);
	CHECK_EQ(last.stats.clients_over_limit, 1, "clients disconnected over the limit");
	CHECK_EQ(last.stats.commits_queued, 0, "commits left queued after A is gone");
	CHECK_EQ(last.stats.waits_pending, 0, "waits left after A is gone");

out:
	side_finish(&a);
	side_finish(&b);
	wlt_comp_stop(&comp);
	sbk_fence_signal(&stuck);
	sbk_fence_destroy(&stuck);
	sbk_buf_destroy(&buf);
	wlt_devices_close(&dev);
	return tb_finish();
}
