/* SPDX-License-Identifier: MIT */
/*
 * syncobj-signal-query: CPU signals and queries of a timeline syncobj:
 * query starts at 0, follows sb_syncobj_signal() (1, then 4); signalled
 * points wait and export as signalled; later points time out; an unknown
 * handle is -ENOENT.
 */
#include "vmtest.h"

int
main(void)
{
	int drm = vm_require_syncobj_node();
	uint64_t q = 99;
	uint32_t h, hb;
	int e = -1, e3 = -1;

	REQUIRE(drmSyncobjCreate(drm, 0, &h) == 0, "drmSyncobjCreate");
	REQUIRE(drmSyncobjCreate(drm, 0, &hb) == 0, "drmSyncobjCreate");

	CHECK_EQ(sb_syncobj_query(drm, h, &q), 0, "query a fresh timeline");
	CHECK_EQ(q, 0, "fresh timeline at 0");
	CHECK_EQ(sb_syncobj_signal(drm, h, 1), 0, "signal point 1");
	CHECK_EQ(sb_syncobj_query(drm, h, &q), 0, "query");
	CHECK_EQ(q, 1, "timeline at 1");
	CHECK_EQ(sb_syncobj_signal(drm, h, 4), 0, "signal point 4");
	CHECK_EQ(sb_syncobj_query(drm, h, &q), 0, "query");
	CHECK_EQ(q, 4, "timeline at 4");

	CHECK_EQ(sb_syncobj_wait(drm, h, 4, 0, 0), 0, "point 4 done");
	CHECK_EQ(sb_syncobj_wait(drm, h, 3, 0, 0), 0, "point 3 (below 4) done");
	CHECK_EQ(sb_syncobj_wait(drm, h, 6, 0, 0), -ETIME, "point 6 not yet");
	CHECK_EQ(sb_syncobj_wait(drm, h, 6, 30 * MS, 0), -ETIME, "point 6 times out");
	CHECK_EQ(sb_syncobj_export_sync_file(drm, h, 4, &e), 0, "export point 4");
	CHECK_EQ(vm_status(e), 1, "point 4's sync_file signalled");
	CHECK_EQ(sb_syncobj_export_sync_file(drm, h, 3, &e3), 0, "export point 3");
	CHECK_EQ(vm_status(e3), 1, "point 3's sync_file signalled");

	/* Binary: signal point 0. */
	CHECK_EQ(sb_syncobj_wait(drm, hb, 0, 0, 0), -ETIME, "fresh binary syncobj not signalled");
	CHECK_EQ(sb_syncobj_signal(drm, hb, 0), 0, "signal binary");
	CHECK_EQ(sb_syncobj_wait(drm, hb, 0, 0, 0), 0, "binary signalled");

	/* Unknown handle. */
	CHECK_EQ(sb_syncobj_signal(drm, 0xdead, 1), -ENOENT, "signal unknown handle");
	CHECK_EQ(sb_syncobj_query(drm, 0xdead, &q), -ENOENT, "query unknown handle");
	CHECK_EQ(sb_syncobj_wait(drm, 0xdead, 1, 0, 0), -ENOENT, "wait unknown handle");

	close(e);
	close(e3);
	drmSyncobjDestroy(drm, h);
	drmSyncobjDestroy(drm, hb);
	close(drm);
	return tb_finish();
}
