/* SPDX-License-Identifier: MIT */
/*
 * dmabuf-read-fence-blocks-writers: a pending read (shared) fence on a
 * dma-buf makes writers wait but not readers. Through the library: the WRITE
 * export is pending and the READ export signalled; is_busy READ false, WRITE
 * true; wait READ succeeds at once and WRITE times out. Signalling the fence
 * releases writers. Every library answer is cross-checked against the raw
 * kernel (poll revents, raw export).
 */
#include "vmtest.h"
#include "kernel_raw.h"

#include <linux/dma-buf.h>

int
main(void)
{
	int vgem = vm_require_vgem();
	struct sbk_buf b;
	uint32_t fence;
	int er, ew, raw, ret;

	vm_require_buf(SBK_BUF_VGEM, vgem, 4096, &b);
	REQUIRE(sbk_vgem_fence_attach(vgem, b.handle, false, &fence) == 0, "attach a read fence");

	/* The kernel's own view first: readers may go (POLLIN), writers may not. */
	raw = tb_dmabuf_poll_raw(b.fd);
	CHECK_EQ(raw, POLLIN, "raw poll revents with a pending read fence");

	/* Readers do not wait for readers, writers do. */
	vm_check_dmabuf_blocks(b.fd, false, true, "a pending read fence", &er, &ew);
	CHECK_EQ(sb_sync_file_wait(er, 0), 0, "wait(READ export, 0)");
	CHECK_EQ(sb_sync_file_wait(ew, 0), -ETIME, "wait(WRITE export, 0)");

	CHECK_EQ(sb_dmabuf_wait(b.fd, SB_ACCESS_READ, 0), 0, "sb_dmabuf_wait(READ, 0)");
	CHECK_EQ(sb_dmabuf_wait(b.fd, SB_ACCESS_WRITE, 0), -ETIME, "sb_dmabuf_wait(WRITE, 0)");
	CHECK_EQ(sb_dmabuf_wait(b.fd, SB_ACCESS_WRITE, 20 * MS), -ETIME,
		 "sb_dmabuf_wait(WRITE, 20 ms)");

	/* A second reader may join while the first reads (read over read). */
	{
		uint32_t fence2;
		int ew2;

		ret = sbk_vgem_fence_attach(vgem, b.handle, false, &fence2);
		CHECK_EQ(ret, 0, "second read fence attaches over a pending read fence");
		CHECK_EQ(vm_busy(b.fd, SB_ACCESS_READ), 0, "still not busy for READ with two readers");
		ew2 = vm_export(b.fd, SB_ACCESS_WRITE);
		{
			uint32_t n = 0;

			CHECK_EQ(tb_sync_file_info_raw(ew2, NULL, &n, 0, NULL), 0, "raw info");
			CHECK_EQ(n, 2, "WRITE export holds both read fences");
		}
		if (ret == 0)
			CHECK_EQ(sbk_vgem_fence_signal(vgem, fence2), 0, "signal the second reader");
		CHECK_EQ(vm_status(ew2), 0, "WRITE export still pending on the first reader");
		close(ew2);
	}

	CHECK_EQ(sbk_vgem_fence_signal(vgem, fence), 0, "signal the read fence");
	CHECK_EQ(vm_status(ew), 1, "WRITE export signalled once the reader is done");
	CHECK_EQ(vm_busy(b.fd, SB_ACCESS_WRITE), 0, "is_busy(WRITE) after the signal");
	CHECK_EQ(sb_dmabuf_wait(b.fd, SB_ACCESS_WRITE, 0), 0, "sb_dmabuf_wait(WRITE, 0) after the signal");
	CHECK_EQ(tb_dmabuf_poll_raw(b.fd), POLLIN | POLLOUT, "raw poll revents when idle");

	/* The library's READ export agrees with the kernel's. */
	REQUIRE(tb_dmabuf_export_raw(b.fd, DMA_BUF_SYNC_READ, &raw) == 0, "raw export");
	CHECK_EQ(vm_status(raw), 1, "raw READ export signalled");
	close(raw);

	close(er);
	close(ew);
	sbk_buf_destroy(&b);
	close(vgem);
	return tb_finish();
}
