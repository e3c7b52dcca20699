/* SPDX-License-Identifier: MIT */
/*
 * dmabuf-write-fence-blocks-all: a pending write (exclusive) fence makes both
 * readers and writers wait: both exports pending, both busy, both waits time
 * out; after the signal both exports signal and the buffer is idle.
 */
#include "vmtest.h"
#include "kernel_raw.h"

int
main(void)
{
	int vgem = vm_require_vgem();
	struct sbk_buf b;
	uint32_t fence, other;
	int er, ew;

	vm_require_buf(SBK_BUF_VGEM, vgem, 4096, &b);
	REQUIRE(sbk_vgem_fence_attach(vgem, b.handle, true, &fence) == 0, "attach a write fence");

	CHECK_EQ(tb_dmabuf_poll_raw(b.fd), 0, "raw poll revents with a pending write fence");
	/* Readers and writers wait for the writer. */
	vm_check_dmabuf_blocks(b.fd, true, true, "a pending write fence", &er, &ew);
	CHECK_EQ(sb_dmabuf_wait(b.fd, SB_ACCESS_READ, 20 * MS), -ETIME, "sb_dmabuf_wait(READ, 20 ms)");
	CHECK_EQ(sb_dmabuf_wait(b.fd, SB_ACCESS_WRITE, 0), -ETIME, "sb_dmabuf_wait(WRITE, 0)");

	/* The kernel refuses another party while the writer is pending (vgem: EBUSY). */
	CHECK_EQ(sbk_vgem_fence_attach(vgem, b.handle, false, &other), -EBUSY,
		 "vgem read attach over a pending write");

	CHECK_EQ(sbk_vgem_fence_signal(vgem, fence), 0, "signal the write fence");
	CHECK_EQ(vm_status(er), 1, "READ export signalled after the writer");
	CHECK_EQ(vm_status(ew), 1, "WRITE export signalled after the writer");
	CHECK_EQ(vm_busy(b.fd, SB_ACCESS_READ), 0, "is_busy(READ) after the signal");
	CHECK_EQ(vm_busy(b.fd, SB_ACCESS_WRITE), 0, "is_busy(WRITE) after the signal");
	CHECK_EQ(sbk_vgem_fence_signal(vgem, fence), -ENOENT, "vgem: signalling twice is ENOENT");

	close(er);
	close(ew);
	sbk_buf_destroy(&b);
	close(vgem);
	return tb_finish();
}
