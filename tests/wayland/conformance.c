/* SPDX-License-Identifier: MIT */
/*
 * wl-conformance: what the protocol XMLs say in the corners the
 * point-by-point comparison with wlroots, KWin and Weston found (issue 29;
 * docs/wayland.md, "Against the XML and other compositors"), each against
 * the example compositor on a thread:
 *
 *   wl-conformance --case NAME [--proto v1|syncobj] [--control]
 *
 *   release-orphan   v1: a zwp_linux_buffer_release_v1 whose synchronization
 *                    object is destroyed before the commit still gets its
 *                    event ("not affected by this request"), from the next
 *                    commit with a buffer, not from one without.
 *                    --control: the object is not destroyed (the event comes).
 *   helper-gone      the helper is destroyed while the compositor holds a
 *                    commit: that commit's release (point or event) still
 *                    comes once the compositor lets the buffer go, and the
 *                    client's sync object is inert, not NO_SURFACE.
 *                    --control: the helper stays.
 *   egl-buffer       a compositor that says a buffer is a wl_drm (EGL)
 *                    buffer: v1 at version 2 must accept an acquire fence on
 *                    it; linux-drm-syncobj raises unsupported_buffer (its XML
 *                    only guarantees dma-bufs). --control: the buffer is said
 *                    to be wl_shm, and v1 raises unsupported_buffer.
 *   point-zero       syncobj: point 0 is the timeline's initial value: an
 *                    acquire point 0 waits for nothing (not for the
 *                    timeline's newest, pending point) and a release point
 *                    0 leaves the client's timeline as it was (no fence
 *                    replaced, its payload not moved back to 0).
 *
 *   materialised     SB_WL_SERVER_WAIT_MATERIALIZED (the compositor lets its
 *                    GPU wait): a point with no fence is held, and handed
 *                    over once it has one, still pending; a v1 fence that is
 *                    pending is handed over at once. --control: without the
 *                    flag the pending v1 fence's commit is held.
 *
 * Each ends with the process's fds where they were before the client came.
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

#define CONTENT 0x11223344u

struct t {
	bool control, syncobj;
	struct wlt_devices dev;
	struct wlt_comp comp;
	struct wlt_client c;
	struct sbk_buf buf;
	struct wl_buffer *a, *b;
	struct wl_surface *surf;
	int fds0;
};

static void
setup_opt(struct t *t, unsigned dev_flags, int render_ms, bool hold, uint32_t helper_flags)
{
	struct wlc_comp_options opt;
	int ret;

	wlt_devices_open(&t->dev, WLT_DEV_RENDER_VGEM | dev_flags);
	wlt_comp_options_init(&opt, &t->dev, render_ms);
	opt.hold_current = hold;
	opt.helper_flags = helper_flags;
	ret = wlt_comp_start(&t->comp, &opt);
	REQUIRE(ret == 0, "start the compositor: %s", strerror(-ret));
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, t->dev.vgem, 16 * 64, &t->buf) == 0, "vgem buffer");
	((volatile uint32_t *)t->buf.map)[0] = CONTENT;
	wlt_comp_keep_timerfd(&t->comp);
	t->fds0 = wlt_count_fds();
	ret = wlt_client_connect(&t->c, t->comp.socket);
	REQUIRE(ret == 0, "connect: %s", strerror(-ret));
	t->a = wlt_dmabuf_buffer(&t->c, t->buf.fd, 16, 16, 64);
	t->b = wlt_dmabuf_buffer(&t->c, t->buf.fd, 16, 16, 64);
	REQUIRE(t->a && t->b, "dma-buf wl_buffers");
	t->surf = wl_compositor_create_surface(t->c.compositor);
}

static void
setup(struct t *t, unsigned dev_flags, int render_ms, bool hold)
{
	setup_opt(t, dev_flags, render_ms, hold, 0);
}

/* Disconnect and stop; the process's fds must come back to where they were. */
static void
teardown(struct t *t)
{
	int fds = -1;

	wl_buffer_destroy(t->a);
	wl_buffer_destroy(t->b);
	wl_surface_destroy(t->surf);
	wlt_client_disconnect(&t->c);
	/* The compositor sees the disconnect on its own thread. */
	fds = wlt_count_fds_wait(t->fds0, 2000 * WLT_MS);
	CHECK_EQ(fds, t->fds0, "fds once the client is gone (none leaked, none closed twice)");
	if (fds != t->fds0) {
		char cmd[64];
		snprintf(cmd, sizeof(cmd), "ls -l /proc/%d/fd >&2", (int)getpid());
		if (system(cmd) != 0)
			tb_note("(could not list the fds)");
	}
	wlt_comp_stop(&t->comp);
	sbk_buf_destroy(&t->buf);
	wlt_devices_close(&t->dev);
}

/* A signalled vgem fence as a sync_file (the caller's). */
static int
signalled_fence(struct t *t)
{
	struct sbk_fence f;
	int fd;

	REQUIRE(sbk_fence_create(t->dev.vgem, true, &f) == 0, "vgem fence");
	sbk_fence_signal(&f);
	fd = dup(f.sync_file);
	sbk_fence_destroy(&f);
	REQUIRE(fd >= 0, "dup");
	return fd;
}

static void
expect_no_error(struct t *t, const char *what)
{
	const char *iface = NULL;
	uint32_t code = 0, id = 0;
	int ret = wlt_roundtrip_error(&t->c, &iface, &code, &id);

	CHECK(ret == 0, "%s: no protocol error (got %s code %u on object %u)", what,
	      iface ? iface : "-", code, id);
}

static void
expect_error(struct t *t, const char *want_iface, uint32_t want_code, const char *what)
{
	const char *iface = NULL;
	uint32_t code = 0, id = 0;
	int ret = wlt_roundtrip_error(&t->c, &iface, &code, &id);

	CHECK(ret < 0 && iface && strcmp(iface, want_iface) == 0 && code == want_code,
	      "%s: want %s error %u, got %s code %u", what, want_iface, want_code,
	      ret == 0 ? "none" : iface ? iface : "-", code);
}

static void
commit_buffer(struct t *t, struct wl_buffer *b)
{
	wl_surface_attach(t->surf, b, 0, 0);
	wl_surface_damage(t->surf, 0, 0, 16, 16);
	wl_surface_commit(t->surf);
}

/* ---- release-orphan ------------------------------------------------------------ */

static void
case_release_orphan(struct t *t)
{
	struct zwp_linux_surface_synchronization_v1 *sync;
	struct wlt_release rel = { .fd = -1 };

	setup(t, 0, 0, false);
	REQUIRE(t->c.explicit_sync, "the explicit-sync v1 global");
	sync = zwp_linux_explicit_synchronization_v1_get_synchronization(t->c.explicit_sync, t->surf);
	wlt_release_get(&rel, sync, true);
	if (!t->control) {
		zwp_linux_surface_synchronization_v1_destroy(sync);
		sync = NULL;
		/* A commit without a buffer: the release waits for one that has. */
		wl_surface_commit(t->surf);
		expect_no_error(t, "a commit without a buffer after the destroy");
		wlt_dispatch_for(&t->c, 200 * WLT_MS);
		CHECK(!rel.arrived, "no release event for a commit without a buffer");
	}
	commit_buffer(t, t->a);
	commit_buffer(t, t->b);
	expect_no_error(t, "two commits with buffers");
	CHECK(wlt_wait_flag(&t->c, &rel.arrived, 3000 * WLT_MS) == 0,
	      "the release object got its event %s", t->control ? "(sync object kept)" :
	      "after its synchronization object was destroyed");
	if (rel.proxy)
		zwp_linux_buffer_release_v1_destroy(rel.proxy);
	if (sync)
		zwp_linux_surface_synchronization_v1_destroy(sync);
	teardown(t);
}

/* ---- helper-gone ----------------------------------------------------------------- */

static void
drop_helper(void *data)
{
	wlc_comp_drop_helper(data);
}

static void
case_helper_gone(struct t *t)
{
	struct zwp_linux_surface_synchronization_v1 *sync = NULL;
	struct wp_linux_drm_syncobj_surface_v1 *so = NULL;
	struct wp_linux_drm_syncobj_timeline_v1 *acq = NULL, *relp = NULL;
	struct wlt_release rel = { .fd = -1 };
	uint32_t acq_tl = 0, rel_tl = 0;
	int ret;

	/* The compositor keeps showing A until B replaces it; its render takes 300 ms. */
	setup(t, t->syncobj ? WLT_DEV_DRM_REQUIRED : 0, 300, true);
	if (t->syncobj) {
		REQUIRE(t->c.syncobj, "the linux-drm-syncobj global");
		so = wp_linux_drm_syncobj_manager_v1_get_surface(t->c.syncobj, t->surf);
		acq = wlt_timeline_new(&t->c, t->dev.client_drm, &acq_tl);
		relp = wlt_timeline_new(&t->c, t->dev.client_drm, &rel_tl);
		REQUIRE(sb_syncobj_signal(t->dev.client_drm, acq_tl, 1) == 0, "signal acquire point 1");
		wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, acq, 0, 1);
		wp_linux_drm_syncobj_surface_v1_set_release_point(so, relp, 0, 1);
	} else {
		REQUIRE(t->c.explicit_sync, "the explicit-sync v1 global");
		sync = zwp_linux_explicit_synchronization_v1_get_synchronization(t->c.explicit_sync,
										 t->surf);
		int fd = signalled_fence(t);
		zwp_linux_surface_synchronization_v1_set_acquire_fence(sync, fd);
		close(fd);
		wlt_release_get(&rel, sync, true);
	}
	commit_buffer(t, t->a);
	expect_no_error(t, "commit A");
	REQUIRE(wlt_comp_wait_used(&t->comp, 1, 5000 * WLT_MS) == 0, "the compositor shows A");

	if (!t->control)
		wlt_comp_call(&t->comp, drop_helper, t->comp.comp);

	/* The wl_surface lives: its sync object may still be used (inert). */
	if (t->syncobj) {
		wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, acq, 0, 2);
		wp_linux_drm_syncobj_surface_v1_set_release_point(so, relp, 0, 2);
		if (t->control)
			REQUIRE(sb_syncobj_signal(t->dev.client_drm, acq_tl, 2) == 0, "signal point 2");
	} else {
		int fd = signalled_fence(t);
		zwp_linux_surface_synchronization_v1_set_acquire_fence(sync, fd);
		close(fd);
	}
	expect_no_error(t, t->control ? "set_acquire (helper kept)" : "set_acquire after the helper went");

	/* B replaces A: A goes back to the client once its render fence signalled. */
	commit_buffer(t, t->b);
	expect_no_error(t, "commit B");
	if (t->syncobj) {
		ret = sb_syncobj_wait(t->dev.client_drm, rel_tl, 1, 3000 * WLT_MS, 0);
		CHECK_EQ(ret, 0, t->control ? "A's release point 1 signals (helper kept)" :
		         "A's release point 1 signals after the helper went");
	} else {
		CHECK(wlt_wait_flag(&t->c, &rel.arrived, 3000 * WLT_MS) == 0,
		      "A's release event arrives%s", t->control ? " (helper kept)" : " after the helper went");
	}
	wlt_sync_proxies_destroy(rel.proxy, sync, so, acq, relp);
	if (acq_tl)
		wlt_syncobj_destroy(t->dev.client_drm, acq_tl);
	if (rel_tl)
		wlt_syncobj_destroy(t->dev.client_drm, rel_tl);
	teardown(t);
}

/* ---- egl-buffer ------------------------------------------------------------------ */

static void
case_egl_buffer(struct t *t)
{
	struct zwp_linux_surface_synchronization_v1 *sync;
	struct wl_buffer *shm;
	int fd;

	setup(t, 0, 0, false);
	REQUIRE(t->c.explicit_sync && t->c.shm, "the explicit-sync v1 and wl_shm globals");
	REQUIRE(wl_proxy_get_version((struct wl_proxy *)t->c.explicit_sync) >= 2,
		"explicit-sync v1 at version 2");
	pthread_mutex_lock(&t->comp.lock);
	t->comp.shm_buffer_type = t->control ? 0 : SB_WL_BUFFER_EGL;
	pthread_mutex_unlock(&t->comp.lock);

	shm = wlt_shm_buffer(&t->c, CONTENT);
	sync = zwp_linux_explicit_synchronization_v1_get_synchronization(t->c.explicit_sync, t->surf);
	fd = signalled_fence(t);
	zwp_linux_surface_synchronization_v1_set_acquire_fence(sync, fd);
	close(fd);
	commit_buffer(t, shm);
	if (t->control) {
		expect_error(t, "zwp_linux_surface_synchronization_v1",
			     ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_UNSUPPORTED_BUFFER,
			     "control: an acquire fence on a wl_shm buffer");
	} else {
		expect_no_error(t, "v1 (version 2): an acquire fence on a wl_drm (EGL) buffer");
		CHECK(wlt_comp_wait_used(&t->comp, 1, 3000 * WLT_MS) == 0,
		      "the EGL buffer's commit was applied");
	}
	zwp_linux_surface_synchronization_v1_destroy(sync);
	wl_buffer_destroy(shm);
	teardown(t);

	/* linux-drm-syncobj guarantees dma-bufs only: the compositor did not opt in. */
	if (t->control)
		return;
	struct t t2 = { 0 };
	struct wp_linux_drm_syncobj_surface_v1 *so;
	struct wp_linux_drm_syncobj_timeline_v1 *acq, *rel;
	if (!wlt_devices_open(&t2.dev, WLT_DEV_DRM)) {
		tb_note("no DRM node with timeline syncobjs: the linux-drm-syncobj half not run");
		wlt_devices_close(&t2.dev);
		return;
	}
	wlt_devices_close(&t2.dev);
	setup(&t2, WLT_DEV_DRM_REQUIRED, 0, false);
	pthread_mutex_lock(&t2.comp.lock);
	t2.comp.shm_buffer_type = SB_WL_BUFFER_EGL;
	pthread_mutex_unlock(&t2.comp.lock);
	shm = wlt_shm_buffer(&t2.c, CONTENT);
	so = wp_linux_drm_syncobj_manager_v1_get_surface(t2.c.syncobj, t2.surf);
	acq = wlt_timeline_new(&t2.c, t2.dev.client_drm, NULL);
	rel = wlt_timeline_new(&t2.c, t2.dev.client_drm, NULL);
	wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, acq, 0, 1);
	wp_linux_drm_syncobj_surface_v1_set_release_point(so, rel, 0, 1);
	commit_buffer(&t2, shm);
	expect_error(&t2, "wp_linux_drm_syncobj_surface_v1",
		     WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_UNSUPPORTED_BUFFER,
		     "linux-drm-syncobj: a point on a wl_drm (EGL) buffer the compositor did not opt in");
	wp_linux_drm_syncobj_surface_v1_destroy(so);
	wp_linux_drm_syncobj_timeline_v1_destroy(acq);
	wp_linux_drm_syncobj_timeline_v1_destroy(rel);
	wl_buffer_destroy(shm);
	teardown(&t2);
}

/* ---- point-zero ------------------------------------------------------------------ */

static void
case_point_zero(struct t *t)
{
	struct wp_linux_drm_syncobj_surface_v1 *so;
	struct wp_linux_drm_syncobj_timeline_v1 *acq, *rel, *acq2, *rel2;
	uint32_t acq_tl, rel_tl, acq2_tl, rel2_tl;
	struct sbk_fence pending;
	uint64_t payload = 0;
	int ret;

	setup(t, WLT_DEV_DRM_REQUIRED, 0, false);
	REQUIRE(t->c.syncobj, "the linux-drm-syncobj global");
	so = wp_linux_drm_syncobj_manager_v1_get_surface(t->c.syncobj, t->surf);

	/* Release point 0 on a timeline already at 3. */
	acq = wlt_timeline_new(&t->c, t->dev.client_drm, &acq_tl);
	rel = wlt_timeline_new(&t->c, t->dev.client_drm, &rel_tl);
	REQUIRE(sb_syncobj_signal(t->dev.client_drm, acq_tl, 1) == 0, "acquire point 1");
	REQUIRE(sb_syncobj_signal(t->dev.client_drm, rel_tl, 3) == 0, "release timeline at 3");
	wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, acq, 0, 1);
	wp_linux_drm_syncobj_surface_v1_set_release_point(so, rel, 0, 0);
	commit_buffer(t, t->a);
	expect_no_error(t, "a commit with release point 0");
	REQUIRE(wlt_comp_wait_used(&t->comp, 1, 3000 * WLT_MS) == 0, "the commit was applied");
	wlt_dispatch_for(&t->c, 100 * WLT_MS); /* its release has been handled */
	REQUIRE(sb_syncobj_query(t->dev.client_drm, rel_tl, &payload) == 0, "query the timeline");
	CHECK_EQ(payload, 3, "the release timeline's value after a release of point 0 (not moved back)");
	ret = sb_syncobj_wait(t->dev.client_drm, rel_tl, 3, 0, 0);
	CHECK_EQ(ret, 0, "point 3 of the release timeline is still signalled");

	/* Acquire point 0 on a timeline whose point 1 is pending. */
	acq2 = wlt_timeline_new(&t->c, t->dev.client_drm, &acq2_tl);
	rel2 = wlt_timeline_new(&t->c, t->dev.client_drm, &rel2_tl);
	REQUIRE(sbk_fence_create(t->dev.vgem, true, &pending) == 0, "vgem fence");
	REQUIRE(sb_syncobj_import_sync_file(t->dev.client_drm, acq2_tl, 1, pending.sync_file) == 0,
		"a pending point 1");
	wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, acq2, 0, 0);
	wp_linux_drm_syncobj_surface_v1_set_release_point(so, rel2, 0, 1);
	commit_buffer(t, t->b);
	expect_no_error(t, "a commit with acquire point 0");
	CHECK(wlt_comp_wait_used(&t->comp, 2, 1000 * WLT_MS) == 0,
	      "acquire point 0 is applied at once (not held for the timeline's pending point 1)");
	ret = sb_syncobj_wait(t->dev.client_drm, rel2_tl, 1, 1000 * WLT_MS, 0);
	CHECK_EQ(ret, 0, "its release point 1 signals");
	sbk_fence_signal(&pending);
	sbk_fence_destroy(&pending);

	wp_linux_drm_syncobj_surface_v1_destroy(so);
	wp_linux_drm_syncobj_timeline_v1_destroy(acq);
	wp_linux_drm_syncobj_timeline_v1_destroy(rel);
	wp_linux_drm_syncobj_timeline_v1_destroy(acq2);
	wp_linux_drm_syncobj_timeline_v1_destroy(rel2);
	wlt_syncobj_destroy(t->dev.client_drm, acq_tl);
	wlt_syncobj_destroy(t->dev.client_drm, rel_tl);
	wlt_syncobj_destroy(t->dev.client_drm, acq2_tl);
	wlt_syncobj_destroy(t->dev.client_drm, rel2_tl);
	teardown(t);
}

/* ---- materialised ---------------------------------------------------------------- */

static void
case_materialised(struct t *t)
{
	struct zwp_linux_surface_synchronization_v1 *sync;
	struct sbk_fence f;
	struct wlc_used used;
	int n;

	setup_opt(t, WLT_DEV_DRM, 0, false, t->control ? 0 : SB_WL_SERVER_WAIT_MATERIALIZED);
	REQUIRE(t->c.explicit_sync, "the explicit-sync v1 global");

	/* v1: a pending fence. */
	REQUIRE(sbk_fence_create(t->dev.vgem, true, &f) == 0, "vgem fence");
	sync = zwp_linux_explicit_synchronization_v1_get_synchronization(t->c.explicit_sync, t->surf);
	zwp_linux_surface_synchronization_v1_set_acquire_fence(sync, f.sync_file);
	commit_buffer(t, t->a);
	expect_no_error(t, "commit with a pending v1 fence");
	n = wlt_comp_wait_used(&t->comp, 1, 500 * WLT_MS) == 0 ? 1 : 0;
	if (t->control) {
		CHECK_EQ(n, 0, "control: uses before the v1 fence signalled (the default waits for it)");
	} else {
		CHECK_EQ(n, 1, "uses before the v1 fence signalled (handed over while pending)");
		CHECK(wlt_comp_find_used(&t->comp, wl_proxy_get_id((struct wl_proxy *)t->surf), 1,
					 &used) && used.stats.commits_deferred == 0,
		      "not deferred (commits_deferred %llu)",
		      (unsigned long long)used.stats.commits_deferred);
	}
	sbk_fence_signal(&f);
	sbk_fence_destroy(&f);
	REQUIRE(wlt_comp_wait_used(&t->comp, 1, 3000 * WLT_MS) == 0, "used once it signalled");
	zwp_linux_surface_synchronization_v1_destroy(sync);

	/* syncobj: an unmaterialised point, then a pending fence on it. */
	if (!t->control && t->c.syncobj && t->dev.client_drm >= 0) {
		struct wl_surface *s2 = wl_compositor_create_surface(t->c.compositor);
		struct wp_linux_drm_syncobj_surface_v1 *so =
			wp_linux_drm_syncobj_manager_v1_get_surface(t->c.syncobj, s2);
		uint32_t acq_tl, rel_tl;
		struct wp_linux_drm_syncobj_timeline_v1 *acq = wlt_timeline_new(&t->c, t->dev.client_drm, &acq_tl);
		struct wp_linux_drm_syncobj_timeline_v1 *rel = wlt_timeline_new(&t->c, t->dev.client_drm, &rel_tl);

		wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, acq, 0, 1);
		wp_linux_drm_syncobj_surface_v1_set_release_point(so, rel, 0, 1);
		wl_surface_attach(s2, t->b, 0, 0);
		wl_surface_commit(s2);
		expect_no_error(t, "commit with an unmaterialised acquire point");
		wlt_dispatch_for(&t->c, 300 * WLT_MS);
		CHECK_EQ(wlt_comp_n_used(&t->comp), 1, "uses while the point has no fence (held)");
		REQUIRE(sbk_fence_create(t->dev.vgem, true, &f) == 0, "vgem fence");
		REQUIRE(sb_syncobj_import_sync_file(t->dev.client_drm, acq_tl, 1, f.sync_file) == 0,
			"materialise point 1 with a pending fence");
		CHECK(wlt_comp_wait_used(&t->comp, 2, 2000 * WLT_MS) == 0,
		      "handed over once materialised, the fence still pending");
		CHECK(wlt_comp_find_used(&t->comp, wl_proxy_get_id((struct wl_proxy *)s2), 1, &used) &&
		      used.stats.commits_deferred == 1,
		      "the helper deferred it once (for the materialisation)");
		sbk_fence_signal(&f);
		sbk_fence_destroy(&f);
		CHECK_EQ(sb_syncobj_wait(t->dev.client_drm, rel_tl, 1, 3000 * WLT_MS, 0), 0,
			 "its release point signals");
		wp_linux_drm_syncobj_surface_v1_destroy(so);
		wp_linux_drm_syncobj_timeline_v1_destroy(acq);
		wp_linux_drm_syncobj_timeline_v1_destroy(rel);
		wlt_syncobj_destroy(t->dev.client_drm, acq_tl);
		wlt_syncobj_destroy(t->dev.client_drm, rel_tl);
		wl_surface_destroy(s2);
	} else if (!t->control) {
		tb_note("no DRM node with timeline syncobjs: the drm-syncobj half not run");
	}
	teardown(t);
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: wl-conformance --case release-orphan|helper-gone|egl-buffer|point-zero|"
		   "materialised [--proto v1|syncobj] [--control]\n");
}

int
main(int argc, char **argv)
{
	/* --case's words and what each runs, in the same order. */
	static const char *const case_names[] = { "release-orphan", "helper-gone", "egl-buffer",
						  "point-zero", "materialised", NULL };
	static void (*const cases[])(struct t *) = { case_release_orphan, case_helper_gone,
						     case_egl_buffer, case_point_zero, case_materialised };
	static const char *const protos[] = { "v1", "syncobj", NULL };
	int c = -1, proto = 0;
	struct t t = { 0 };
	const struct demo_opt opts[] = {
		{ "case", DEMO_OPT_WORD, &c, .words = case_names, .required = true },
		{ "proto", DEMO_OPT_WORD, &proto, .words = protos },
		{ "control", DEMO_OPT_FLAG, &t.control },
		{ NULL },
	};

	if (demo_opt_parse("wl-conformance", argc, argv, opts, usage, 0) < 0)
		return 2;
	t.syncobj = strcmp(protos[proto], "syncobj") == 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	cases[c](&t);
	return tb_finish();
}
