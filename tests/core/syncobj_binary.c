/* SPDX-License-Identifier: MIT */
/*
 * syncobj-binary: a binary DRM syncobj (virtio_gpu) bridged to sync_files.
 * A pending vgem sync_file imported into the syncobj (point 0) makes the
 * syncobj wait for vgem; exporting it gives back a pending sync_file holding
 * vgem's fence; both complete when vgem signals. Signalling from the CPU and
 * re-exporting gives a signalled sync_file.
 *
 * --control: instead of importing, signal the syncobj from the CPU: the
 * syncobj then reports done while the producer is still pending — proving
 * the checks catch an import that does not attach the fence.
 */
#include "vmtest.h"

int
main(int argc, char **argv)
{
	bool control = vm_has_arg(argc, argv, "--control");
	int drm = vm_require_syncobj_node();
	int vgem = vm_require_vgem();
	struct sbk_fence f;
	uint32_t h;
	int e = -1, e2 = -1, ret;

	REQUIRE(drmSyncobjCreate(drm, 0, &h) == 0, "drmSyncobjCreate");
	vm_require_fence(vgem, true, &f);

	if (control) {
		sb_test_note("CONTROL: no import, the syncobj is signalled from the CPU instead");
		CHECK_EQ(sb_syncobj_signal(drm, h, 0), 0, "sb_syncobj_signal(binary)");
	} else {
		ret = sb_syncobj_import_sync_file(drm, h, 0, f.sync_file);
		CHECK_EQ(ret, 0, "sb_syncobj_import_sync_file(binary)");
		CHECK(sbk_fd_is_open(f.sync_file), "import leaves the sync_file open");
	}

	ret = sb_syncobj_wait(drm, h, 0, 50 * MS, 0);
	CHECK_EQ(ret, control ? 0 : -ETIME,
		 control ? "control: the syncobj is done while vgem is pending"
			 : "syncobj waits for the pending vgem fence");
	CHECK_EQ(sb_syncobj_wait(drm, h, 0, 0, SB_SYNCOBJ_WAIT_AVAILABLE), 0, "payload is materialised");

	ret = sb_syncobj_export_sync_file(drm, h, 0, &e);
	CHECK_EQ(ret, 0, "sb_syncobj_export_sync_file(binary)");
	REQUIRE(e >= 0, "exported fd");
	CHECK_EQ(vm_status(f.sync_file), 0, "producer still pending");
	CHECK_EQ(vm_status(e), control ? 1 : 0,
		 control ? "control: export already signalled" : "export pending on vgem");
	if (!control) {
		struct sb_sync_file_info *info = NULL;

		if (sb_sync_file_get_info(e, &info) == 0) {
			CHECK(info->num_fences == 1 && strcmp(info->fences[0].driver, "vgem") == 0,
			      "the exported sync_file carries vgem's fence");
			sb_sync_file_info_free(info);
		}
	}

	CHECK_EQ(sbk_fence_signal(&f), 0, "signal vgem");
	CHECK_EQ(sb_syncobj_wait(drm, h, 0, 2000 * MS, 0), 0, "syncobj done after vgem");
	CHECK_EQ(vm_status(e), 1, "export signalled after vgem");

	CHECK_EQ(sb_syncobj_signal(drm, h, 0), 0, "CPU signal");
	CHECK_EQ(sb_syncobj_export_sync_file(drm, h, 0, &e2), 0, "export after the CPU signal");
	CHECK_EQ(vm_status(e2), 1, "signalled export");

	close(e);
	close(e2);
	drmSyncobjDestroy(drm, h);
	sbk_fence_destroy(&f);
	close(vgem);
	close(drm);
	return sb_test_finish();
}
