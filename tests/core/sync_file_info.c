/* SPDX-License-Identifier: MIT */
/*
 * sync-file-info: sb_sync_file_info_create() / get_status() on a real vgem
 * fence: status 0, timestamp 0, driver "vgem", timeline "unbound" while
 * pending; status 1 and a CLOCK_MONOTONIC timestamp between the instants
 * around the signal afterwards. Matches the raw SYNC_IOC_FILE_INFO. Also
 * is_valid, set_deadline (a hint: 0) and a two-fence merge listing both.
 */
#include "vmtest.h"
#include "kernel_raw.h"

int
main(void)
{
	int vgem = vm_require_vgem();
	struct sbk_fence f, g;
	struct sb_sync_file_info *info = NULL;
	int merged = -1, raw_status = -99, ret;
	int64_t t_before, t_after;

	vm_require_fence(vgem, true, &f);
	CHECK(sb_sync_file_is_valid(f.sync_file), "is_valid(vgem sync_file)");

	ret = sb_sync_file_info_create(f.sync_file, &info);
	REQUIRE(ret == 0 && info, "sb_sync_file_info_create: %s", strerror(-ret));
	CHECK_EQ(info->status, 0, "pending: aggregate status 0");
	CHECK_EQ(info->num_fences, 1, "one fence");
	if (info->num_fences >= 1) {
		tb_note("pending fence: driver \"%s\" timeline \"%s\" status %d timestamp %llu",
			     info->fences[0].driver, info->fences[0].timeline, info->fences[0].status,
			     (unsigned long long)info->fences[0].timestamp_ns);
		CHECK(strcmp(info->fences[0].driver, "vgem") == 0, "driver is \"vgem\" (got \"%s\")",
		      info->fences[0].driver);
		CHECK(strcmp(info->fences[0].timeline, "unbound") == 0,
		      "vgem's timeline is \"unbound\" (got \"%s\")", info->fences[0].timeline);
		CHECK_EQ(info->fences[0].status, 0, "pending: fence status 0");
		CHECK_EQ(info->fences[0].timestamp_ns, 0, "pending: timestamp 0");
	}
	sb_sync_file_info_destroy(info);
	info = NULL;
	CHECK_EQ(vm_status(f.sync_file), 0, "get_status pending");
	CHECK_EQ(tb_sync_file_info_raw(f.sync_file, &raw_status, NULL, 0, NULL), 0, "raw info");
	CHECK_EQ(raw_status, 0, "raw status pending");

	CHECK_EQ(sb_sync_file_set_deadline(f.sync_file, (uint64_t)(now_ns() + 5 * MS)), 0,
		 "set_deadline on a pending vgem fence");

	t_before = now_ns();
	CHECK_EQ(sbk_fence_signal(&f), 0, "signal");
	t_after = now_ns();

	ret = sb_sync_file_info_create(f.sync_file, &info);
	REQUIRE(ret == 0 && info, "sb_sync_file_info_create after the signal: %s", strerror(-ret));
	CHECK_EQ(info->status, 1, "signalled: aggregate status 1");
	if (info->num_fences >= 1) {
		int64_t ts = (int64_t)info->fences[0].timestamp_ns;

		tb_note("signalled fence: status %d timestamp %lld (signal call in [%lld, %lld])",
			     info->fences[0].status, (long long)ts, (long long)t_before, (long long)t_after);
		CHECK_EQ(info->fences[0].status, 1, "signalled: fence status 1");
		CHECK(ts > 0, "signalled: timestamp > 0");
		CHECK(ts >= t_before && ts <= t_after,
		      "timestamp is CLOCK_MONOTONIC of the signal (%lld not in [%lld, %lld])", (long long)ts,
		      (long long)t_before, (long long)t_after);
	}
	sb_sync_file_info_destroy(info);
	info = NULL;
	CHECK_EQ(vm_status(f.sync_file), 1, "get_status signalled");
	CHECK_EQ(tb_sync_file_info_raw(f.sync_file, &raw_status, NULL, 0, NULL), 0, "raw info");
	CHECK_EQ(raw_status, 1, "raw status signalled");
	CHECK_EQ(sb_sync_file_set_deadline(f.sync_file, (uint64_t)now_ns()), 0,
		 "set_deadline on a signalled fence");

	/* Two fences: one signalled, one pending → aggregate pending, both listed. */
	vm_require_fence(vgem, true, &g);
	CHECK_EQ(sb_sync_file_merge(f.sync_file, g.sync_file, &merged), 0, "merge");
	ret = sb_sync_file_info_create(merged, &info);
	CHECK_EQ(ret, 0, "info of the merge");
	if (ret == 0) {
		tb_note("merge of signalled+pending: %u fence(s), status %d", info->num_fences,
			     info->status);
		CHECK_EQ(info->status, 0, "merge pending");
		CHECK(info->num_fences >= 1, "the pending fence is listed");
		for (uint32_t i = 0; i < info->num_fences; i++)
			CHECK(strcmp(info->fences[i].driver, "vgem") == 0, "fence %u is vgem's", i);
		sb_sync_file_info_destroy(info);
	}
	CHECK_EQ(sbk_fence_signal(&g), 0, "signal g");
	CHECK_EQ(vm_status(merged), 1, "merge signalled");

	sb_sync_file_info_destroy(NULL);
	close(merged);
	sbk_fence_destroy(&f);
	sbk_fence_destroy(&g);
	close(vgem);
	return tb_finish();
}
