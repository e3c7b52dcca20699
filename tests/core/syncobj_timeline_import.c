/* SPDX-License-Identifier: MIT */
/*
 * syncobj-timeline-import: a pending vgem sync_file imported into point 5 of
 * a timeline syncobj: the point materialises (WAIT_AVAILABLE succeeds) but
 * does not signal until vgem does (wait times out, query stays below 5, the
 * exported point-5 sync_file is pending and carries vgem's fence); after the
 * vgem signal the point and the export are done and query reads 5.
 *
 * --control: point 5 is signalled from the CPU instead of importing: the
 * point reports done while vgem is pending.
 */
#include "vmtest.h"

int
main(int argc, char **argv)
{
	bool control = vm_has_arg(argc, argv, "--control");
	struct vm_syncobj_case c;
	uint64_t q = 99;
	int e = -1, ret, vg;

	vm_syncobj_case_init(&c);
	vm_syncobj_case_attach(&c, 5, control);

	CHECK_EQ(sb_syncobj_wait(c.drm, c.handle, 5, 0, SB_SYNCOBJ_WAIT_AVAILABLE), 0,
		 "point 5 materialised");
	ret = sb_syncobj_wait(c.drm, c.handle, 5, 50 * MS, 0);
	CHECK_EQ(ret, control ? 0 : -ETIME,
		 control ? "control: point 5 done while vgem is pending" : "point 5 waits for vgem");
	CHECK_EQ(sb_syncobj_query(c.drm, c.handle, &q), 0, "query");
	tb_note("query before the vgem signal: %llu", (unsigned long long)q);
	if (control)
		CHECK_EQ(q, 5, "control: query reads 5");
	else
		CHECK(q < 5, "query below 5 while vgem is pending (%llu)", (unsigned long long)q);

	CHECK_EQ(sb_syncobj_export_sync_file(c.drm, c.handle, 5, &e), 0, "export point 5");
	CHECK_EQ(vm_status(e), control ? 1 : 0, control ? "control: export signalled" : "export pending");
	if (!control && (vg = vm_fences_of(e, "vgem", NULL)) >= 0)
		CHECK(vg >= 1, "point 5's sync_file carries vgem's fence");
	CHECK_EQ(vm_status(c.f.sync_file), 0, "producer still pending");

	CHECK_EQ(sbk_fence_signal(&c.f), 0, "signal vgem");
	CHECK_EQ(sb_syncobj_wait(c.drm, c.handle, 5, 2000 * MS, 0), 0, "point 5 done after vgem");
	CHECK_EQ(sb_syncobj_query(c.drm, c.handle, &q), 0, "query");
	CHECK_EQ(q, 5, "query reads 5");
	CHECK_EQ(vm_status(e), 1, "export signalled");

	close(e);
	vm_syncobj_case_finish(&c);
	return tb_finish();
}
