/* SPDX-License-Identifier: MIT */
/*
 * wl-subsurface: synchronized sub-surfaces through the helper
 * (sb_wl_server_surface_set_parent; docs/wayland.md, "Sub-surfaces"), with
 * explicit-sync v1 fences on vgem dma-bufs, against the example compositor
 * on a thread:
 *
 *   wl-subsurface --case sync|desync|unlink [--control]
 *
 *   sync     a synchronized child's commit is not shown before its parent's
 *            commit, even with its fence signalled; the parent's commit waits
 *            for the child's pending fence (the transaction's every fence);
 *            once it signals, the child's two commits are applied, in order,
 *            then the parent's.
 *            --control: the compositor does not tell the helper
 *            (subsurfaces_unsynced): the child shows before its parent
 *            commits, and the parent without its child's new state.
 *   desync   a desynchronized child keeps its own queue: its commit applies
 *            on its fence without a parent commit, and a parent commit does
 *            not wait for the child's pending fence.
 *   unlink   a child's cached commit is dropped when its wl_subsurface goes:
 *            never applied, its buffer released at once (immediate_release).
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

#define HOLD_MS 300

struct t {
	bool control;
	struct wlt_devices dev;
	struct wlt_comp comp;
	struct wlt_client c;
	struct sbk_buf buf;
	struct wl_buffer *bufs[4];
	struct wl_surface *parent, *child;
	struct wl_subsurface *sub;
	struct zwp_linux_surface_synchronization_v1 *psync, *csync;
	uint32_t pid, cid;
	int fds0;
};

static void
setup(struct t *t)
{
	struct wlc_comp_options opt;
	int ret;

	wlt_devices_open(&t->dev, WLT_DEV_RENDER_VGEM);
	wlt_comp_options_init(&opt, &t->dev, 0);
	opt.subsurfaces_unsynced = t->control;
	ret = wlt_comp_start(&t->comp, &opt);
	REQUIRE(ret == 0, "start the compositor: %s", strerror(-ret));
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, t->dev.vgem, 16 * 64, &t->buf) == 0, "vgem buffer");
	wlt_comp_keep_timerfd(&t->comp);
	t->fds0 = wlt_count_fds();
	ret = wlt_client_connect(&t->c, t->comp.socket);
	REQUIRE(ret == 0, "connect: %s", strerror(-ret));
	REQUIRE(t->c.subcompositor && t->c.explicit_sync, "wl_subcompositor and explicit-sync v1");
	for (int i = 0; i < 4; i++) {
		t->bufs[i] = wlt_dmabuf_buffer(&t->c, t->buf.fd, 16, 16, 64);
		REQUIRE(t->bufs[i], "dma-buf wl_buffer");
	}
	t->parent = wl_compositor_create_surface(t->c.compositor);
	t->child = wl_compositor_create_surface(t->c.compositor);
	t->sub = wl_subcompositor_get_subsurface(t->c.subcompositor, t->child, t->parent);
	t->psync = zwp_linux_explicit_synchronization_v1_get_synchronization(t->c.explicit_sync, t->parent);
	t->csync = zwp_linux_explicit_synchronization_v1_get_synchronization(t->c.explicit_sync, t->child);
	t->pid = wl_proxy_get_id((struct wl_proxy *)t->parent);
	t->cid = wl_proxy_get_id((struct wl_proxy *)t->child);
}

static void
teardown(struct t *t)
{
	int fds = -1;

	if (t->sub)
		wl_subsurface_destroy(t->sub);
	zwp_linux_surface_synchronization_v1_destroy(t->psync);
	zwp_linux_surface_synchronization_v1_destroy(t->csync);
	wl_surface_destroy(t->child);
	wl_surface_destroy(t->parent);
	for (int i = 0; i < 4; i++)
		wl_buffer_destroy(t->bufs[i]);
	wlt_client_disconnect(&t->c);
	fds = wlt_count_fds_wait(t->fds0, 2000 * WLT_MS);
	CHECK_EQ(fds, t->fds0, "fds once the client is gone (none leaked, none closed twice)");
	wlt_comp_stop(&t->comp);
	sbk_buf_destroy(&t->buf);
	wlt_devices_close(&t->dev);
}

/* Commit `b` on s with an acquire fence (f: pending, or NULL: a signalled one). */
static void
commit_fenced(struct t *t, struct wl_surface *s, struct zwp_linux_surface_synchronization_v1 *sync,
	      struct wl_buffer *b, struct sbk_fence *f)
{
	struct sbk_fence done;

	if (!f) {
		REQUIRE(sbk_fence_create(t->dev.vgem, true, &done) == 0, "vgem fence");
		sbk_fence_signal(&done);
		f = &done;
	}
	wl_surface_attach(s, b, 0, 0);
	wl_surface_damage(s, 0, 0, 16, 16);
	zwp_linux_surface_synchronization_v1_set_acquire_fence(sync, f->sync_file);
	wl_surface_commit(s);
	if (f == &done)
		sbk_fence_destroy(&done);
}

static void
no_error(struct t *t, const char *what)
{
	const char *iface = NULL;
	uint32_t code = 0, id = 0;

	CHECK(wlt_roundtrip_error(&t->c, &iface, &code, &id) == 0, "%s: no protocol error (got %s %u)",
	      what, iface ? iface : "-", code);
}

/* Uses of surface `id` so far (its highest seq). */
static uint64_t
uses_of(struct t *t, uint32_t id)
{
	struct wlc_used u;
	uint64_t n = 0;

	while (wlt_comp_find_used(&t->comp, id, n + 1, &u))
		n++;
	return n;
}

/*
 * After `what` (no protocol error) and HOLD_MS, long enough for a commit
 * that is not held to show: surface id's uses are `want`, or `control_want`
 * in the control (subsurfaces_unsynced: the commit shows too early).
 */
static void
check_held_uses(struct t *t, const char *what, uint32_t id, uint64_t want, uint64_t control_want,
		const char *which)
{
	no_error(t, what);
	wlt_dispatch_for(&t->c, HOLD_MS * WLT_MS);
	CHECK_EQ(uses_of(t, id), t->control ? control_want : want, which);
}

static void
case_sync(struct t *t)
{
	struct sbk_fence late;
	struct wlc_used c1, c2, p1;

	setup(t);
	/* The parent shows something first (its own commit, nothing cached). */
	commit_fenced(t, t->parent, t->psync, t->bufs[0], NULL);
	no_error(t, "the parent's first commit");
	REQUIRE(wlt_comp_wait_used(&t->comp, 1, 3000 * WLT_MS) == 0, "the parent's first commit applied");

	/* A: the child commits with a signalled fence; the parent does not commit. */
	commit_fenced(t, t->child, t->csync, t->bufs[1], NULL);
	check_held_uses(t, "the child's commit", t->cid, 0, 1,
			"uses of the synchronized child before its parent's commit");

	/* B: the child again, with a pending fence; then the parent commits. */
	REQUIRE(sbk_fence_create(t->dev.vgem, true, &late) == 0, "vgem fence");
	commit_fenced(t, t->child, t->csync, t->bufs[2], &late);
	commit_fenced(t, t->parent, t->psync, t->bufs[3], NULL);
	check_held_uses(t, "the child's second commit and the parent's commit", t->pid, 1, 2,
			"parent uses while its child's fence is pending (the transaction waits)");
	if (!t->control)
		CHECK_EQ(uses_of(t, t->cid), 0, "child uses while its own fence is pending");

	/* The late fence signals: the whole transaction applies, children first. */
	sbk_fence_signal(&late);
	sbk_fence_destroy(&late);
	REQUIRE(wlt_comp_wait_used(&t->comp, 4, 3000 * WLT_MS) == 0, "everything applied after the signal");
	if (!t->control) {
		REQUIRE(wlt_comp_find_used(&t->comp, t->cid, 1, &c1) &&
			wlt_comp_find_used(&t->comp, t->cid, 2, &c2) &&
			wlt_comp_find_used(&t->comp, t->pid, 2, &p1), "use records");
		CHECK(c1.time_ns <= c2.time_ns && c2.time_ns <= p1.time_ns,
		      "applied in order: child 1, child 2, then the parent");
		CHECK(p1.time_ns - c1.time_ns < 50 * WLT_MS, "in one go (%.1f ms apart)",
		      (double)(p1.time_ns - c1.time_ns) / 1e6);
	}
	teardown(t);
}

static void
case_desync(struct t *t)
{
	struct sbk_fence late;

	setup(t);
	wl_subsurface_set_desync(t->sub);
	commit_fenced(t, t->child, t->csync, t->bufs[1], NULL);
	no_error(t, "a desynchronized child's commit");
	CHECK(wlt_comp_wait_used(&t->comp, 1, 1000 * WLT_MS) == 0 && uses_of(t, t->cid) == 1,
	      "a desynchronized child's commit applies without a parent commit");
	REQUIRE(sbk_fence_create(t->dev.vgem, true, &late) == 0, "vgem fence");
	commit_fenced(t, t->child, t->csync, t->bufs[2], &late);
	commit_fenced(t, t->parent, t->psync, t->bufs[3], NULL);
	no_error(t, "the child's pending commit and the parent's");
	CHECK(wlt_comp_wait_used(&t->comp, 2, 1000 * WLT_MS) == 0 && uses_of(t, t->pid) == 1,
	      "the parent's commit does not wait for a desynchronized child's fence");
	CHECK_EQ(uses_of(t, t->cid), 1, "the child's pending commit still waits for its own fence");
	sbk_fence_signal(&late);
	sbk_fence_destroy(&late);
	CHECK(wlt_comp_wait_used(&t->comp, 3, 3000 * WLT_MS) == 0, "applied once its fence signalled");
	teardown(t);
}

static void
case_unlink(struct t *t)
{
	struct wlt_release rel = { .fd = -1 };
	struct sbk_fence f;

	setup(t);
	REQUIRE(sbk_fence_create(t->dev.vgem, true, &f) == 0, "vgem fence");
	wlt_release_get(&rel, t->csync, true);
	commit_fenced(t, t->child, t->csync, t->bufs[1], &f);
	no_error(t, "the child's cached commit");
	wl_subsurface_destroy(t->sub);
	t->sub = NULL;
	no_error(t, "wl_subsurface.destroy");
	CHECK(wlt_wait_flag(&t->c, &rel.arrived, 2000 * WLT_MS) == 0 && !rel.fenced,
	      "the dropped commit's buffer is released at once (immediate_release)");
	commit_fenced(t, t->parent, t->psync, t->bufs[3], NULL);
	no_error(t, "the parent's commit");
	CHECK(wlt_comp_wait_used(&t->comp, 1, 1000 * WLT_MS) == 0, "the parent applies");
	wlt_dispatch_for(&t->c, 100 * WLT_MS);
	CHECK_EQ(uses_of(t, t->cid), 0, "the dropped commit was never applied");
	sbk_fence_signal(&f);
	sbk_fence_destroy(&f);
	if (rel.proxy)
		zwp_linux_buffer_release_v1_destroy(rel.proxy);
	teardown(t);
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: wl-subsurface --case sync|desync|unlink [--control]\n");
}

int
main(int argc, char **argv)
{
	/* --case's words and what each runs, in the same order. */
	static const char *const case_names[] = { "sync", "desync", "unlink", NULL };
	static void (*const cases[])(struct t *) = { case_sync, case_desync, case_unlink };
	int c = -1;
	struct t t = { 0 };
	const struct demo_opt opts[] = {
		{ "case", DEMO_OPT_WORD, &c, .words = case_names, .required = true },
		{ "control", DEMO_OPT_FLAG, &t.control },
		{ NULL },
	};

	if (demo_opt_parse("wl-subsurface", argc, argv, opts, usage, 0) < 0)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	cases[c](&t);
	return tb_finish();
}
