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
	struct vm_syncobj_case c;
	uint32_t total = 0;
	int e = -1, e2 = -1, ret, vg;

	vm_syncobj_case_init(&c);
	vm_syncobj_case_attach(&c, 0, control);

	ret = sb_syncobj_wait(c.drm, c.handle, 0, 50 * MS, 0);
	CHECK_EQ(ret, control ? 0 : -ETIME,
		 control ? "control: the syncobj is done while vgem is pending"
			 : "syncobj waits for the pending vgem fence");
	CHECK_EQ(sb_syncobj_wait(c.drm, c.handle, 0, 0, SB_SYNCOBJ_WAIT_AVAILABLE), 0,
		 "payload is materialised");

	ret = sb_syncobj_export_sync_file(c.drm, c.handle, 0, &e);
	CHECK_EQ(ret, 0, "sb_syncobj_export_sync_file(binary)");
	REQUIRE(e >= 0, "exported fd");
	CHECK_EQ(vm_status(c.f.sync_file), 0, "producer still pending");
	CHECK_EQ(vm_status(e), control ? 1 : 0,
		 control ? "control: export already signalled" : "export pending on vgem");
	if (!control && (vg = vm_fences_of(e, "vgem", &total)) >= 0)
		CHECK(total == 1 && vg == 1, "the exported sync_file carries vgem's fence");

	CHECK_EQ(sbk_fence_signal(&c.f), 0, "signal vgem");
	CHECK_EQ(sb_syncobj_wait(c.drm, c.handle, 0, 2000 * MS, 0), 0, "syncobj done after vgem");
	CHECK_EQ(vm_status(e), 1, "export signalled after vgem");

	CHECK_EQ(sb_syncobj_signal(c.drm, c.handle, 0), 0, "CPU signal");
	CHECK_EQ(sb_syncobj_export_sync_file(c.drm, c.handle, 0, &e2), 0, "export after the CPU signal");
	CHECK_EQ(vm_status(e2), 1, "signalled export");

	close(e);
	close(e2);
	vm_syncobj_case_finish(&c);
	return tb_finish();
}
