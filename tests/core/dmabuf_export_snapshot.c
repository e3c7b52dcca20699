/* SPDX-License-Identifier: MIT */
/*
 * dmabuf-export-snapshot: an exported sync_file is a snapshot of the fences
 * on the buffer at export time. Fences attached later are not in earlier
 * exports; an export made while idle (or after the signal) stays signalled;
 * an export holding only an earlier fence signals with it even while a later
 * fence keeps the buffer busy.
 */
#include "vmtest.h"
#include "kernel_raw.h"

int
main(void)
{
	int vgem = vm_require_vgem();
	struct sbk_buf b;
	uint32_t f1, f2, f3;
	int idle_r, idle_w, e1, e2, e3, e4;

	vm_require_buf(SBK_BUF_VGEM, vgem, 4096, &b);

	/* Idle: exports are already signalled, and stay so. */
	idle_r = vm_export(b.fd, SB_ACCESS_READ);
	idle_w = vm_export(b.fd, SB_ACCESS_WRITE);
	CHECK_EQ(vm_status(idle_r), 1, "READ export of an idle buffer is signalled");
	CHECK_EQ(vm_status(idle_w), 1, "WRITE export of an idle buffer is signalled");

	/* Writer 1. */
	REQUIRE(sbk_vgem_fence_attach(vgem, b.handle, true, &f1) == 0, "attach write fence 1");
	CHECK_EQ(vm_status(idle_r), 1, "idle READ export stays signalled after a later write fence");
	CHECK_EQ(vm_status(idle_w), 1, "idle WRITE export stays signalled after a later write fence");
	CHECK_EQ(sb_sync_file_wait(idle_w, 0), 0, "wait on the idle export");
	e1 = vm_export(b.fd, SB_ACCESS_READ);
	CHECK_EQ(vm_status(e1), 0, "READ export while writer 1 is pending");
	CHECK_EQ(sbk_vgem_fence_signal(vgem, f1), 0, "signal writer 1");
	CHECK_EQ(vm_status(e1), 1, "export signalled with writer 1");

	e2 = vm_export(b.fd, SB_ACCESS_WRITE);
	CHECK_EQ(vm_status(e2), 1, "export after writer 1 signalled is signalled");

	/* Writer 2 attached later does not reach back into e1 / e2. */
	REQUIRE(sbk_vgem_fence_attach(vgem, b.handle, true, &f2) == 0, "attach write fence 2");
	CHECK_EQ(vm_status(e1), 1, "e1 unaffected by the later writer 2");
	CHECK_EQ(vm_status(e2), 1, "e2 unaffected by the later writer 2");
	CHECK_EQ(vm_busy(b.fd, SB_ACCESS_READ), 1, "buffer is busy again (writer 2)");
	e3 = vm_export(b.fd, SB_ACCESS_READ);
	CHECK_EQ(vm_status(e3), 0, "a new export sees writer 2");
	CHECK_EQ(sbk_vgem_fence_signal(vgem, f2), 0, "signal writer 2");
	CHECK_EQ(vm_status(e3), 1, "e3 signalled with writer 2");

	/* Reader A, export, then reader B: the export waits for A only. */
	REQUIRE(sbk_vgem_fence_attach(vgem, b.handle, false, &f2) == 0, "attach read fence A");
	e4 = vm_export(b.fd, SB_ACCESS_WRITE);
	REQUIRE(sbk_vgem_fence_attach(vgem, b.handle, false, &f3) == 0, "attach read fence B");
	{
		uint32_t n = 0;

		CHECK_EQ(tb_sync_file_info_raw(e4, NULL, &n, 0, NULL), 0, "raw info of e4");
		CHECK_EQ(n, 1, "e4 holds only reader A");
	}
	CHECK_EQ(vm_status(e4), 0, "e4 pending on reader A");
	CHECK_EQ(sbk_vgem_fence_signal(vgem, f2), 0, "signal reader A");
	CHECK_EQ(vm_status(e4), 1, "e4 signalled with reader A although reader B is pending");
	CHECK_EQ(vm_busy(b.fd, SB_ACCESS_WRITE), 1, "buffer still busy for writers (reader B)");
	CHECK_EQ(sbk_vgem_fence_signal(vgem, f3), 0, "signal reader B");
	CHECK_EQ(vm_busy(b.fd, SB_ACCESS_WRITE), 0, "idle after reader B");

	close(idle_r);
	close(idle_w);
	close(e1);
	close(e2);
	close(e3);
	close(e4);
	sbk_buf_destroy(&b);
	close(vgem);
	return tb_finish();
}
