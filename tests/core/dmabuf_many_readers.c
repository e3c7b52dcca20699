/* SPDX-License-Identifier: MIT */
/*
 * dmabuf-many-readers: 16 pending read fences, each from its own vgem buffer
 * (its own fence context/timeline), imported as READ onto one buffer. Readers
 * are never blocked (READ export signalled); the WRITE export holds all 16
 * (info num_fences, driver "vgem") and signals only after the last one.
 *
 *   dmabuf_many_readers [--kind vgem|udmabuf|heap] [--control]
 *
 * --control skips the imports: writers are then not blocked although all 16
 * readers are still pending (the race the imports prevent).
 */
#include "vmtest.h"

#define N 16

int
main(int argc, char **argv)
{
	const char *kind_name = vm_arg_value(argc, argv, "--kind", "vgem");
	bool control = vm_has_arg(argc, argv, "--control");
	enum sbk_buf_kind kind;
	struct sbk_fence r[N];
	struct sbk_buf b;
	struct sb_sync_file_info *info = NULL;
	int vgem, er, ew, ret;

	REQUIRE(sbk_buf_kind_parse(kind_name, &kind) == 0, "--kind %s", kind_name);
	vgem = vm_require_vgem();
	vm_require_buf(kind, vgem, 4096, &b);

	for (int i = 0; i < N; i++) {
		vm_require_fence(vgem, false, &r[i]);
		if (control)
			continue;
		ret = sb_dmabuf_import_sync_file(b.fd, SB_ACCESS_READ, r[i].sync_file);
		CHECK_EQ(ret, 0, "import read fence as READ");
	}

	if (control) {
		int pending = 0;

		tb_note("CONTROL: 16 pending readers, none imported");
		for (int i = 0; i < N; i++)
			pending += vm_status(r[i].sync_file) == 0;
		CHECK_EQ(pending, N, "control: all 16 readers pending");
		CHECK_EQ(vm_busy(b.fd, SB_ACCESS_WRITE), 0, "control: a writer is not blocked");
		ew = vm_export(b.fd, SB_ACCESS_WRITE);
		CHECK_EQ(vm_status(ew), 1, "control: WRITE export already signalled");
		close(ew);
		for (int i = 0; i < N; i++) {
			sbk_fence_signal(&r[i]);
			sbk_fence_destroy(&r[i]);
		}
		sbk_buf_destroy(&b);
		close(vgem);
		return tb_finish();
	}

	/* 16 readers do not block a reader; they block a writer. */
	vm_check_dmabuf_blocks(b.fd, false, true, "16 pending imported readers", &er, &ew);

	ret = sb_sync_file_info_create(ew, &info);
	CHECK_EQ(ret, 0, "sb_sync_file_info_create(WRITE export)");
	if (ret == 0) {
		int pending = 0, vgem_fences = 0;

		CHECK_EQ(info->num_fences, N, "WRITE export holds every reader");
		CHECK_EQ(info->status, 0, "aggregate status pending");
		for (uint32_t i = 0; i < info->num_fences; i++) {
			pending += info->fences[i].status == 0;
			vgem_fences += strcmp(info->fences[i].driver, "vgem") == 0;
		}
		CHECK_EQ(pending, N, "every fence pending");
		CHECK_EQ(vgem_fences, N, "every fence is vgem's");
		sb_sync_file_info_destroy(info);
		info = NULL;
	}

	for (int i = 0; i < N; i++) {
		CHECK_EQ(sbk_fence_signal(&r[i]), 0, "signal reader");
		if (i < N - 1) {
			CHECK_EQ(vm_status(ew), 0, "WRITE export pending until the last reader");
			CHECK_EQ(vm_busy(b.fd, SB_ACCESS_WRITE), 1, "writers still blocked");
		}
	}
	ret = sb_sync_file_info_create(ew, &info);
	if (ret == 0) {
		int signalled = 0;

		for (uint32_t i = 0; i < info->num_fences; i++)
			signalled += info->fences[i].status == 1 && info->fences[i].timestamp_ns > 0;
		CHECK_EQ(signalled, N, "all 16 fences signalled with timestamps");
		sb_sync_file_info_destroy(info);
	}
	CHECK_EQ(vm_status(ew), 1, "WRITE export signalled after the last reader");
	CHECK_EQ(sb_sync_file_wait(ew, 0), 0, "wait(WRITE export, 0)");
	CHECK_EQ(vm_busy(b.fd, SB_ACCESS_WRITE), 0, "writers unblocked");

	for (int i = 0; i < N; i++)
		sbk_fence_destroy(&r[i]);
	close(er);
	close(ew);
	sbk_buf_destroy(&b);
	close(vgem);
	return tb_finish();
}
