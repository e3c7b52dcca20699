/* SPDX-License-Identifier: MIT */
/*
 * fd-leak-cycles: 10,000 rounds of export (READ and WRITE) / import /
 * merge / accumulate / get_info against a buffer carrying a real pending
 * vgem fence, plus failing calls (wrong fd kinds) each round, leave the
 * process's open-fd count unchanged. When a virtio_gpu syncobj is available,
 * 1,000 rounds of syncobj import/export/waiter are added.
 */
#include "vmtest.h"

#define ROUNDS 10000
#define SYNCOBJ_ROUNDS 1000

int
main(void)
{
	int vgem = vm_require_vgem();
	struct sbk_fence f;
	struct sbk_buf b;
	int base, fails = 0, drm;
	int64_t t0 = now_ns();

	vm_require_buf(SBK_BUF_VGEM, vgem, 4096, &b);
	vm_require_fence(vgem, true, &f);
	base = tb_count_fds();
	tb_note("open fds before: %d", base);

	for (int i = 0; i < ROUNDS; i++) {
		struct sb_sync_file_info *info = NULL;
		int er = -1, ew = -1, m = -1, acc = -1, bad = -1;

		fails += sb_dmabuf_export_sync_file(f.bo.fd, SB_ACCESS_READ, &er) != 0;
		fails += sb_dmabuf_import_sync_file(b.fd, (i & 1) ? SB_ACCESS_READ : SB_ACCESS_WRITE, er) != 0;
		fails += sb_dmabuf_export_sync_file(b.fd, SB_ACCESS_WRITE, &ew) != 0;
		fails += sb_sync_file_merge(er, ew, &m) != 0;
		fails += sb_sync_file_accumulate(&acc, m) != 0;
		fails += sb_sync_file_accumulate(&acc, er) != 0;
		fails += sb_sync_file_info_create(acc, &info) != 0;
		sb_sync_file_info_destroy(info);
		/* Failure paths must not leak either. */
		fails += sb_sync_file_merge(er, b.fd, &bad) != -EINVAL || bad != -1;
		fails += sb_dmabuf_export_sync_file(er, SB_ACCESS_READ, &bad) != -EINVAL || bad != -1;
		fails += sb_dmabuf_import_sync_file(b.fd, SB_ACCESS_READ, b.fd) != -EINVAL;
		fails += sb_sync_file_accumulate(&acc, b.fd) != -EINVAL;
		close(er);
		close(ew);
		close(m);
		close(acc);
	}
	CHECK_EQ(fails, 0, "every call in 10,000 rounds returned what it should");
	CHECK_EQ(tb_count_fds(), base, "open-fd count unchanged after 10,000 dma-buf/sync_file rounds");
	tb_note("10,000 dma-buf/sync_file rounds took %.0f ms", vm_ms(now_ns() - t0));

	drm = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);
	if (drm >= 0) {
		uint32_t h;

		if (drmSyncobjCreate(drm, 0, &h) == 0) {
			int base2 = tb_count_fds();

			fails = 0;
			t0 = now_ns();
			for (int i = 0; i < SYNCOBJ_ROUNDS; i++) {
				struct sb_syncobj_waiter *w = NULL;
				int e = -1, bad = -1;

				fails += sb_syncobj_import_sync_file(drm, h, (uint64_t)i + 1, f.sync_file) != 0;
				fails += sb_syncobj_export_sync_file(drm, h, (uint64_t)i + 1, &e) != 0;
				fails += sb_syncobj_export_sync_file(drm, h, (uint64_t)i + 1000000, &bad) != -EINVAL;
				fails += sb_syncobj_import_sync_file(drm, h, (uint64_t)i + 1, b.fd) != -EINVAL;
				fails += sb_syncobj_waiter_create(drm, h, (uint64_t)i + 1, 0, &w) != 0;
				sb_syncobj_waiter_destroy(w);
				close(e);
			}
			CHECK_EQ(fails, 0, "every syncobj call in 1,000 rounds returned what it should");
			CHECK_EQ(tb_count_fds(), base2, "open-fd count unchanged after 1,000 syncobj rounds");
			tb_note("1,000 syncobj rounds took %.0f ms", vm_ms(now_ns() - t0));
			drmSyncobjDestroy(drm, h);
		}
		close(drm);
	} else {
		tb_note("no virtio_gpu render node: syncobj rounds not run");
	}

	sbk_fence_signal(&f);
	sbk_fence_destroy(&f);
	sbk_buf_destroy(&b);
	close(vgem);
	return tb_finish();
}
