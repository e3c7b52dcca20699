/* SPDX-License-Identifier: MIT */
/*
 * syncobj-wait-available: sb_syncobj_wait() with SB_SYNCOBJ_WAIT_AVAILABLE
 * waits for a point to materialise, not to signal. A thread imports a pending
 * vgem sync_file into point 5 at +200 ms: the AVAILABLE wait returns then,
 * while a plain wait on point 5 still times out until vgem signals. A plain
 * wait on a not-yet-materialised point 8 waits for it (signalled at +200 ms).
 *
 * Timing (vmtest.h): the timed-out wait lasts at least its 100 ms and at most
 * VM_SLACK_NS (2 s) more; each wait that succeeds must have returned after
 * the helper thread started its import / signal (causal: however late the
 * helper runs). The vgem fence stays pending for under 1 s of its 10 s.
 */
#include "vmtest.h"

struct import_args {
	int drm;
	uint32_t h;
	uint64_t point;
	int sync_file;
};

static int
do_import(void *p)
{
	struct import_args *a = p;

	return sb_syncobj_import_sync_file(a->drm, a->h, a->point, a->sync_file);
}

static int
do_signal(void *p)
{
	struct import_args *a = p;

	return sb_syncobj_signal(a->drm, a->h, a->point);
}

/*
 * sb_syncobj_wait(point, flags) while the helper calls fn(arg) 200 ms after it
 * starts: the helper's call must succeed (`helper_did`), and the wait must
 * return 0 (`what`) after the helper's call started (causal, however late
 * the helper runs).
 */
static void
wait_for_helper(int drm, uint32_t h, uint64_t point, uint32_t flags, int (*fn)(void *), void *arg,
		const char *helper_did, const char *what)
{
	struct vm_later later;
	int64_t t0, t1;
	int ret;

	vm_later_start(&later, 200 * MS, fn, arg);
	t0 = now_ns();
	ret = sb_syncobj_wait(drm, h, point, 5000 * MS, flags);
	t1 = now_ns();
	CHECK_EQ(vm_later_join(&later), 0, helper_did);
	tb_note("%s = %d after %.1f ms (the helper's call at +%.1f ms)", what, ret, vm_ms(t1 - t0),
		     vm_ms(later.start_ns - t0));
	CHECK_EQ(ret, 0, what);
	CHECK(t1 >= later.start_ns, "returned after the helper's call (%.1f ms before it)",
	      vm_ms(later.start_ns - t1));
}

int
main(void)
{
	int drm = vm_require_syncobj_node();
	int vgem = vm_require_vgem();
	struct sbk_fence f;
	struct import_args args;
	uint32_t h;
	int64_t t0, dt;
	int ret;

	REQUIRE(drmSyncobjCreate(drm, 0, &h) == 0, "drmSyncobjCreate");
	vm_require_fence(vgem, true, &f);

	CHECK_EQ(sb_syncobj_wait(drm, h, 5, 0, SB_SYNCOBJ_WAIT_AVAILABLE), -ETIME,
		 "point 5 not materialised (poll)");
	t0 = now_ns();
	ret = sb_syncobj_wait(drm, h, 5, 100 * MS, SB_SYNCOBJ_WAIT_AVAILABLE);
	dt = now_ns() - t0;
	CHECK_EQ(ret, -ETIME, "AVAILABLE wait times out before materialisation");
	CHECK(dt >= 99 * MS && dt <= 100 * MS + VM_SLACK_NS, "after ~100 ms (%.1f)", vm_ms(dt));

	args = (struct import_args){ .drm = drm, .h = h, .point = 5, .sync_file = f.sync_file };
	wait_for_helper(drm, h, 5, SB_SYNCOBJ_WAIT_AVAILABLE, do_import, &args,
			"helper imported into point 5", "AVAILABLE wait returns once point 5 materialised");
	CHECK_EQ(vm_status(f.sync_file), 0, "vgem still pending");
	CHECK_EQ(sb_syncobj_wait(drm, h, 5, 50 * MS, 0), -ETIME, "point 5 not signalled yet");

	wait_for_helper(drm, h, 5, 0, vm_later_signal_fence, &f, "helper signalled vgem",
			"plain wait: point 5 signals with vgem");

	/* A plain wait on an unmaterialised point waits for it to appear and signal. */
	args.point = 8;
	wait_for_helper(drm, h, 8, 0, do_signal, &args, "helper signalled point 8",
			"plain wait on unmaterialised point 8");

	drmSyncobjDestroy(drm, h);
	sbk_fence_destroy(&f);
	close(vgem);
	close(drm);
	return tb_finish();
}
