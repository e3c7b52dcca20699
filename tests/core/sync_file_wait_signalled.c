/* SPDX-License-Identifier: MIT */
/*
 * sync-file-wait-signalled: a 5 s sb_sync_file_wait() on a pending fence,
 * while the waiting thread gets SIGUSR1 (no SA_RESTART) every ~1 ms and
 * another thread signals the vgem fence at +300 ms, returns 0 shortly after
 * +300 ms (not earlier, not -EINTR). The same with an infinite timeout and
 * for sb_dmabuf_wait(READ).
 *
 * Timing (vmtest.h): "not earlier" is causal (it returned after the helper
 * started signalling, however late that was); "shortly after" means while
 * the 3 s bombardment still ran: typically 0.2-5 ms after the signal, against
 * >= 3 s for a wait that stays blocked until the signals stop. "Really
 * interrupted" wants >= 10 signals in the 300 ms (77-282 seen under --load).
 */
#include "vmtest.h"

#define AT (300 * MS)

static void
run(int vgem, const char *what, bool dmabuf, int64_t timeout)
{
	struct sbk_fence f;
	struct vm_bombard bomb;
	struct vm_later later;
	int64_t t0, t1, dt;
	long got0;
	int ret;

	vm_require_fence(vgem, true, &f);
	vm_bombard_start(&bomb, 3000 * MS);
	got0 = vm_sigusr1_count;
	vm_later_start(&later, AT, vm_later_signal_fence, &f);
	t0 = now_ns();
	if (dmabuf)
		ret = sb_dmabuf_wait(f.bo.fd, SB_ACCESS_READ, timeout);
	else
		ret = sb_sync_file_wait(f.sync_file, timeout);
	t1 = now_ns();
	dt = t1 - t0;
	vm_bombard_stop(&bomb);
	CHECK_EQ(vm_later_join(&later), 0, "helper signalled the fence");
	tb_note("%s: %d after %.1f ms (signalled at +%.1f ms), %ld signals handled", what, ret,
		     vm_ms(dt), vm_ms(later.done_ns - t0), (long)(vm_sigusr1_count - got0));
	CHECK_EQ(ret, 0, what);
	CHECK(t1 >= later.start_ns, "%s did not return before the signal (%.1f ms before it)", what,
	      vm_ms(later.start_ns - t1));
	CHECK(dt < bomb.max_ns && !bomb.expired,
	      "%s returned while the signals still came, shortly after the signal (%.1f ms)", what,
	      vm_ms(dt));
	CHECK(vm_sigusr1_count - got0 >= 10, "%s was really interrupted", what);
	sbk_fence_destroy(&f);
}

int
main(void)
{
	int vgem = vm_require_vgem();

	run(vgem, "sb_sync_file_wait(5 s)", false, 5000 * MS);
	run(vgem, "sb_sync_file_wait(infinite)", false, SB_TIMEOUT_INFINITE);
	run(vgem, "sb_dmabuf_wait(READ, 5 s)", true, 5000 * MS);
	close(vgem);
	return tb_finish();
}
