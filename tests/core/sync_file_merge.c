/* SPDX-License-Identifier: MIT */
/*
 * sync-file-merge: sb_sync_file_merge_array() of N pending vgem fences holds
 * N fences and signals only when the last input signals (checked with status,
 * wait(0), and a blocking wait woken by another thread). Also the two-input
 * merge, merging an fd with itself, and n == 1 (a duplicate). Inputs stay open.
 * The blocking wait must return after the helper started signalling the last
 * input (causal, vmtest.h), and with 0 well before its 5 s timeout.
 */
#include "vmtest.h"

#define N 8

int
main(void)
{
	int vgem = vm_require_vgem();
	struct sbk_fence f[N], a, c;
	struct sb_sync_file_info *info = NULL;
	struct vm_later later;
	int fds[N], m = -1, m2 = -1, self = -1, dup1 = -1, ret;
	int64_t t0, t1;

	for (int i = 0; i < N; i++) {
		vm_require_fence(vgem, true, &f[i]);
		fds[i] = f[i].sync_file;
	}

	ret = sb_sync_file_merge_array(fds, N, &m);
	CHECK_EQ(ret, 0, "merge_array of 8 pending fences");
	REQUIRE(m >= 0, "merged fd");
	for (int i = 0; i < N; i++)
		CHECK(sbk_fd_is_open(fds[i]), "input %d still open", i);
	ret = sb_sync_file_info_create(m, &info);
	CHECK_EQ(ret, 0, "info of the merge");
	if (ret == 0) {
		CHECK_EQ(info->num_fences, N, "merge holds every input fence");
		sb_sync_file_info_destroy(info);
	}

	/* Signal all but the last from this thread; the last one from another. */
	for (int i = 0; i < N - 1; i++) {
		CHECK_EQ(sbk_fence_signal(&f[i]), 0, "signal input");
		CHECK_EQ(vm_status(m), 0, "merge pending while an input is pending");
	}
	CHECK_EQ(sb_sync_file_wait(m, 0), -ETIME, "wait(merge, 0) before the last input");
	vm_later_start(&later, 150 * MS, vm_later_signal_fence, &f[N - 1]);
	t0 = now_ns();
	ret = sb_sync_file_wait(m, 5000 * MS);
	t1 = now_ns();
	CHECK_EQ(vm_later_join(&later), 0, "last input signalled by the helper");
	tb_note("wait(merge) = %d after %.1f ms (last input at +%.1f ms)", ret, vm_ms(t1 - t0),
		     vm_ms(later.start_ns - t0));
	CHECK_EQ(ret, 0, "wait(merge) once the last input signalled");
	CHECK(t1 >= later.start_ns, "the merge waited for the last input (returned %.1f ms before it)",
	      vm_ms(later.start_ns - t1));
	CHECK_EQ(vm_status(m), 1, "merge signalled");

	/* Two inputs. */
	vm_require_fence(vgem, true, &a);
	vm_require_fence(vgem, true, &c);
	CHECK_EQ(sb_sync_file_merge(a.sync_file, c.sync_file, &m2), 0, "merge(a, c)");
	CHECK_EQ(sb_sync_file_merge(a.sync_file, a.sync_file, &self), 0, "merge(a, a)");
	CHECK(self != a.sync_file && sbk_fd_is_open(self), "merge(a, a) is a new fd");
	CHECK_EQ(sb_sync_file_merge_array(&c.sync_file, 1, &dup1), 0, "merge_array(n = 1)");
	CHECK(dup1 != c.sync_file && sbk_fd_is_open(dup1), "n == 1 gives a new fd");
	CHECK_EQ(vm_status(m2), 0, "merge(a, c) pending");
	CHECK_EQ(sbk_fence_signal(&c), 0, "signal c");
	CHECK_EQ(vm_status(dup1), 1, "the n == 1 duplicate follows c");
	CHECK_EQ(vm_status(m2), 0, "merge(a, c) pending on a");
	CHECK_EQ(vm_status(self), 0, "merge(a, a) pending on a");
	CHECK_EQ(sbk_fence_signal(&a), 0, "signal a");
	CHECK_EQ(vm_status(m2), 1, "merge(a, c) signalled");
	CHECK_EQ(vm_status(self), 1, "merge(a, a) signalled");

	/* Bad n. */
	{
		int out = 123;

		CHECK_EQ(sb_sync_file_merge_array(fds, 0, &out), -EINVAL, "merge_array(n = 0)");
		CHECK_EQ(out, -1, "output -1 on failure");
		out = 123;
		CHECK_EQ(sb_sync_file_merge_array(NULL, 2, &out), -EINVAL, "merge_array(NULL)");
		CHECK_EQ(out, -1, "output -1 on failure");
	}

	close(m);
	close(m2);
	close(self);
	close(dup1);
	sbk_fence_destroy(&a);
	sbk_fence_destroy(&c);
	for (int i = 0; i < N; i++)
		sbk_fence_destroy(&f[i]);
	close(vgem);
	return tb_finish();
}
