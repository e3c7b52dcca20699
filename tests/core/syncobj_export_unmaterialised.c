/* SPDX-License-Identifier: MIT */
/*
 * syncobj-export-unmaterialised: exporting a point that has no fence yet
 * fails with the documented -EINVAL (binary syncobj never signalled; timeline
 * point above the last one), leaves *out_fd at -1 and creates no fd; an
 * unknown handle is -ENOENT; once materialised the export works.
 */
#include "vmtest.h"

int
main(void)
{
	int drm = vm_require_syncobj_node();
	uint32_t hb, ht;
	int out, base;

	REQUIRE(drmSyncobjCreate(drm, 0, &hb) == 0, "drmSyncobjCreate");
	REQUIRE(drmSyncobjCreate(drm, 0, &ht) == 0, "drmSyncobjCreate");
	base = tb_count_fds();

	out = 1234;
	CHECK_EQ(sb_syncobj_export_sync_file(drm, hb, 0, &out), -EINVAL, "export an empty binary syncobj");
	CHECK_EQ(out, -1, "out_fd -1 on failure");

	out = 1234;
	CHECK_EQ(sb_syncobj_export_sync_file(drm, ht, 5, &out), -EINVAL, "export point 5 of an empty timeline");
	CHECK_EQ(out, -1, "out_fd -1 on failure");

	CHECK_EQ(sb_syncobj_signal(drm, ht, 2), 0, "signal point 2");
	out = 1234;
	CHECK_EQ(sb_syncobj_export_sync_file(drm, ht, 5, &out), -EINVAL, "export point 5 when at 2");
	CHECK_EQ(out, -1, "out_fd -1 on failure");

	out = 1234;
	CHECK_EQ(sb_syncobj_export_sync_file(drm, 0xdead, 1, &out), -ENOENT, "export from an unknown handle");
	CHECK_EQ(out, -1, "out_fd -1 on failure");
	CHECK_EQ(tb_count_fds(), base, "failed exports leave no fd behind");

	CHECK_EQ(sb_syncobj_export_sync_file(drm, ht, 2, &out), 0, "export the materialised point 2");
	CHECK_EQ(vm_status(out), 1, "point 2 signalled");
	close(out);
	CHECK_EQ(sb_syncobj_signal(drm, hb, 0), 0, "signal the binary syncobj");
	CHECK_EQ(sb_syncobj_export_sync_file(drm, hb, 0, &out), 0, "export the signalled binary");
	CHECK_EQ(vm_status(out), 1, "binary signalled");
	close(out);
	CHECK_EQ(tb_count_fds(), base, "no fd left behind");

	drmSyncobjDestroy(drm, hb);
	drmSyncobjDestroy(drm, ht);
	close(drm);
	return tb_finish();
}
