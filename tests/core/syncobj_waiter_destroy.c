/* SPDX-License-Identifier: MIT */
/*
 * syncobj-waiter-destroy: destroying a waiter whose point never signals
 * returns promptly (the fallback thread is stopped, not waited out), also
 * for a point materialised with a pending vgem fence; 50 create/destroy
 * rounds leave no fd behind.
 *
 *   syncobj_waiter_destroy [--fallback]   (--fallback: SYNCBRIDGE_SYNCOBJ_EVENTFD=0)
 */
#include "vmtest.h"

static bool fallback;

/*
 * "Promptly" means: not waiting for the point, which here never signals
 * (vgem would signal it itself only after ~10 s; the unmaterialised one
 * never). The thread path stops within one 20 ms slice plus scheduling:
 * typically 18-28 ms, also with a busy loop on each host core; under ASan in
 * a TCG guest sharing two host cores one took 323 ms. The bound is 5 s: half
 * of what waiting the vgem point out would take (the fence is < 1 s old when
 * its waiter is destroyed), 15x the worst destroy seen.
 */
#define PROMPT_NS (5000 * MS)

static int64_t
destroy_time(struct sb_syncobj_waiter *w)
{
	int64_t t0 = now_ns();

	sb_syncobj_waiter_destroy(w);
	return now_ns() - t0;
}

int
main(int argc, char **argv)
{
	struct sb_syncobj_waiter *w = NULL;
	struct sbk_fence f;
	uint32_t h;
	int drm, vgem, base, ret;
	int64_t dt, worst = 0;

	fallback = vm_has_arg(argc, argv, "--fallback");
	if (fallback)
		setenv("SYNCBRIDGE_SYNCOBJ_EVENTFD", "0", 1);
	drm = vm_require_syncobj_node();
	vgem = vm_require_vgem();
	REQUIRE(drmSyncobjCreate(drm, 0, &h) == 0, "drmSyncobjCreate");
	vm_require_fence(vgem, true, &f);
	base = tb_count_fds();

	/* A point that never materialises. */
	ret = sb_syncobj_waiter_create(drm, h, 100, 0, &w);
	REQUIRE(ret == 0, "waiter_create: %s", strerror(-ret));
	CHECK_EQ(sb_syncobj_waiter_uses_eventfd(w), !fallback && sbk_drm_has_syncobj_eventfd(drm),
		 "eventfd path when the kernel has it and it is not disabled");
	CHECK_EQ(vm_poll(sb_syncobj_waiter_get_fd(w), POLLIN, 50), 0, "never fires");
	dt = destroy_time(w);
	tb_note("destroy (unmaterialised point) took %.2f ms", vm_ms(dt));
	CHECK(dt < PROMPT_NS, "destroy returns promptly (%.2f ms)", vm_ms(dt));

	/* A point materialised with a pending vgem fence. */
	CHECK_EQ(sb_syncobj_import_sync_file(drm, h, 7, f.sync_file), 0, "import pending vgem into point 7");
	ret = sb_syncobj_waiter_create(drm, h, 7, 0, &w);
	REQUIRE(ret == 0, "waiter_create: %s", strerror(-ret));
	CHECK_EQ(vm_poll(sb_syncobj_waiter_get_fd(w), POLLIN, 50), 0, "does not fire while vgem is pending");
	dt = destroy_time(w);
	tb_note("destroy (pending vgem fence) took %.2f ms", vm_ms(dt));
	CHECK(dt < PROMPT_NS, "destroy returns promptly (%.2f ms)", vm_ms(dt));

	/* Many rounds. */
	for (int i = 0; i < 50; i++) {
		ret = sb_syncobj_waiter_create(drm, h, 1000 + (uint64_t)i, 0, &w);
		if (ret != 0) {
			CHECK_EQ(ret, 0, "waiter_create in the loop");
			break;
		}
		dt = destroy_time(w);
		if (dt > worst)
			worst = dt;
	}
	tb_note("50 create/destroy rounds: slowest destroy %.2f ms", vm_ms(worst));
	CHECK(worst < PROMPT_NS, "every destroy prompt (slowest %.2f ms)", vm_ms(worst));
	CHECK_EQ(tb_count_fds(), base, "no fd left behind");

	CHECK_EQ(sbk_fence_signal(&f), 0, "signal vgem");
	sbk_fence_destroy(&f);
	drmSyncobjDestroy(drm, h);
	close(vgem);
	close(drm);
	return tb_finish();
}
