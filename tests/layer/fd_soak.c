/* SPDX-License-Identifier: MIT */
/*
 * fd soak: the process's fd count is unchanged after many acquire/release
 * submits through the layer (--iterations, default 10000; the VM tier runs
 * fewer, see meson.build). One command buffer, recorded once and resubmitted:
 * acquire from FOREIGN, copy out, copy in, release to FOREIGN — each submit
 * exports a sync_file from the dma-buf, exports our release semaphore and
 * imports it back. Every 50th iteration also submits an acquire-only command
 * buffer while a vgem fence is pending (signalled right after the submit), so
 * the semaphore-import path and the pooled-semaphore recycling run too.
 */
#include <string.h>

#include "harness.h"
#include "kernel.h"
#include "tbvk.h"

#define SIZE 4096

int
main(int argc, char **argv)
{
	struct tbvk_options opt;
	int vgem = tbvk_start(argc, argv, &opt);
	long iterations = opt.iterations > 0 ? opt.iterations : 10000;

	struct vkt t;
	tbvk_init(&t, &opt, true);
	struct tbvk_cycle c;
	tbvk_cycle_create(&t, vgem, SIZE, &c);

	struct tbvk_rec both, acq;
	tbvk_begin(&t, &opt, false, &both);
	tbvk_record_cycle(&t, &opt, tbvk_cmd(&both), &c);
	tbvk_end(&t, &both);

	tbvk_begin(&t, &opt, false, &acq);
	tbvk_acquire(&t, &opt, tbvk_cmd(&acq), &c.sh, VK_ACCESS_TRANSFER_READ_BIT);
	tbvk_copy_from_shared(tbvk_cmd(&acq), &c.sh, &c.dst);
	tbvk_end(&t, &acq);

	VkFence fence = vkt_fence(&t);
	long errors = 0;
	int fds_before = -1;
	const long warmup = 20;
	int64_t t0 = 0;
	for (long i = 0; i < iterations + warmup && errors < 5; i++) {
		if (i == warmup) {
			/* Pools are filled by now: from here on nothing may grow. */
			fds_before = tb_count_fds();
			t0 = now_ns();
		}
		VkResult r;
		if (i % 50 == 49) {
			uint32_t fence_id;
			if (sbk_vgem_fence_attach(vgem, c.buf.handle, true, &fence_id) < 0) {
				errors++;
				continue;
			}
			r = tbvk_submit(&t, &opt, acq.primary, VK_NULL_HANDLE, 0, fence);
			sbk_vgem_fence_signal(vgem, fence_id);
		} else {
			r = tbvk_submit(&t, &opt, both.primary, VK_NULL_HANDLE, 0, fence);
		}
		if (r != VK_SUCCESS ||
		    vkWaitForFences(t.device, 1, &fence, VK_TRUE, 20ull * 1000000000) != VK_SUCCESS)
			errors++;
		vkResetFences(t.device, 1, &fence);
	}
	int64_t t1 = now_ns();
	int fds_after = tb_count_fds();
	tb_note("%ld submits in %.1f s (%.2f ms each); fds %d → %d", iterations,
		     (t1 - t0) / 1e9, (t1 - t0) / 1e6 / (double)iterations, fds_before, fds_after);
	CHECK_EQ(errors, 0, "submit/wait errors");
	CHECK_EQ(fds_after, fds_before, "open fds after the soak");

	vkDestroyFence(t.device, fence, NULL);
	tbvk_rec_free(&t, &both);
	tbvk_rec_free(&t, &acq);
	tbvk_cycle_destroy(&t, &c);
	vkt_finish(&t);
	close(vgem);
	return tb_finish();
}
