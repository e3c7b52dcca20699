/* SPDX-License-Identifier: MIT */
/*
 * sync-file-accumulate: sb_sync_file_accumulate() from -1 over N pending
 * fences: the first call duplicates, each later call replaces the accumulator
 * (old one closed: the process holds exactly one accumulator fd), the inputs
 * stay open, and the accumulator signals only after the last input. A failed
 * accumulate leaves the accumulator unchanged and open.
 */
#include "vmtest.h"

#define N 6

int
main(void)
{
	int vgem = vm_require_vgem();
	struct sbk_fence f[N];
	struct sbk_buf b;
	int acc = -1, before, base, ret;

	vm_require_buf(SBK_BUF_VGEM, vgem, 4096, &b);
	for (int i = 0; i < N; i++)
		vm_require_fence(vgem, true, &f[i]);
	base = tb_count_fds();

	for (int i = 0; i < N; i++) {
		ret = sb_sync_file_accumulate(&acc, f[i].sync_file);
		CHECK_EQ(ret, 0, "accumulate");
		CHECK(acc >= 0 && acc != f[i].sync_file, "accumulator is its own fd (%d)", acc);
		CHECK(sbk_fd_is_open(f[i].sync_file), "input %d stays open", i);
		CHECK_EQ(tb_count_fds(), base + 1, "exactly one accumulator fd is open");
	}
	{
		struct sb_sync_file_info *info = NULL;

		if (sb_sync_file_info_create(acc, &info) == 0) {
			CHECK_EQ(info->num_fences, N, "accumulator holds every fence");
			sb_sync_file_info_destroy(info);
		} else {
			CHECK(0, "sb_sync_file_info_create(acc)");
		}
	}

	/* A failed accumulate: a dma-buf is not a sync_file. */
	before = acc;
	ret = sb_sync_file_accumulate(&acc, b.fd);
	CHECK_EQ(ret, -EINVAL, "accumulate(dma-buf)");
	CHECK_EQ(acc, before, "accumulator unchanged after a failure");
	CHECK(sbk_fd_is_open(acc), "accumulator still open after a failure");
	CHECK(sbk_fd_is_open(b.fd), "the dma-buf still open after a failure");

	for (int i = 0; i < N; i++) {
		CHECK_EQ(vm_status(acc), 0, "accumulator pending while an input is");
		CHECK_EQ(sbk_fence_signal(&f[i]), 0, "signal input");
	}
	CHECK_EQ(vm_status(acc), 1, "accumulator signalled after the last input");
	CHECK_EQ(sb_sync_file_wait(acc, 0), 0, "wait(acc, 0)");

	close(acc);
	CHECK_EQ(tb_count_fds(), base, "no fd left behind");
	for (int i = 0; i < N; i++)
		sbk_fence_destroy(&f[i]);
	sbk_buf_destroy(&b);
	close(vgem);
	return tb_finish();
}
