/* SPDX-License-Identifier: MIT */
/*
 * fault-errored-fence (VM tier): a fence that completed with an error is
 * reported as that error by the library, never as success.
 *
 * No driver in the test kernel makes such fences (docs/reliability.md lists
 * what was tried: vgem's 10 s self-timeout signals with status 1), so
 * libsbfault's "fence_error" rule makes the kernel's SYNC_IOC_FILE_INFO answer
 * say what it says for them: every signalled fence (and the aggregate) has
 * status -EIO; poll() is untouched (an errored fence is signalled). The
 * fences themselves are real vgem fences; a control without the rule shows
 * the same calls succeed.
 */
#include <dlfcn.h>
#include <linux/dma-buf.h>

#include "vmtest.h"
#include "sbfault.h"

#define RULE "fence_error:*:EIO"

static int
signal_fence(void *arg)
{
	return sbk_fence_signal(arg);
}

int
main(void)
{
	int vgem, st, ret, m = -1, exp = -1;
	struct sbk_fence sig, pend, pend2;
	struct sb_sync_file_info *info = NULL;
	struct vm_later later;
	int64_t t0;

	if (!dlsym(RTLD_DEFAULT, "sbfault_arm"))
		tb_skip("libsbfault is not loaded");
	vgem = vm_require_vgem();
	vm_require_fence(vgem, true, &sig);
	vm_require_fence(vgem, true, &pend);
	vm_require_fence(vgem, false, &pend2);
	REQUIRE(sbk_fence_signal(&sig) == 0, "signal");

	/* Control: the same calls without the rule. */
	CHECK_EQ(sb_sync_file_wait(sig.sync_file, 0), 0, "control: a signalled fence waits as 0");
	CHECK(sb_sync_file_get_status(sig.sync_file, &st) == 0 && st == 1, "control: status 1 (%d)", st);

	sbfault_arm(RULE);
	/* A signalled, errored fence. */
	CHECK_EQ(sb_sync_file_wait(sig.sync_file, 0), -EIO, "wait(0) on an errored fence");
	CHECK_EQ(sb_sync_file_wait(sig.sync_file, SB_TIMEOUT_INFINITE), -EIO,
		 "wait(infinite) on an errored fence");
	st = 0;
	CHECK(sb_sync_file_get_status(sig.sync_file, &st) == 0 && st == -EIO,
	      "get_status: -EIO (%d)", st);
	ret = sb_sync_file_info_create(sig.sync_file, &info);
	CHECK(ret == 0 && info && info->status == -EIO && info->num_fences == 1 &&
		      info->fences[0].status == -EIO,
	      "get_info: aggregate and fence status -EIO (ret %d, %d/%d)", ret, info ? info->status : 0,
	      info && info->num_fences ? info->fences[0].status : 0);
	sb_sync_file_info_destroy(info);

	/* A pending fence that completes with an error while we wait. */
	CHECK_EQ(sb_sync_file_wait(pend.sync_file, 0), -ETIME, "pending: -ETIME before it completes");
	t0 = now_ns();
	vm_later_start(&later, 100 * MS, signal_fence, &pend);
	ret = sb_sync_file_wait(pend.sync_file, 5000 * MS);
	CHECK_EQ(ret, -EIO, "wait on a fence that completes with an error meanwhile");
	CHECK(now_ns() - t0 >= 90 * MS, "and only once it completed (%.0f ms)",
	      vm_ms(now_ns() - t0));
	vm_later_join(&later);

	/* A merge with one pending and one errored fence: pending, then the error. */
	REQUIRE(sb_sync_file_merge(pend2.sync_file, sig.sync_file, &m) == 0, "merge");
	CHECK(sb_sync_file_get_status(m, &st) == 0 && st == 0, "merge: still active (%d)", st);
	REQUIRE(sbk_fence_signal(&pend2) == 0, "signal");
	CHECK_EQ(sb_sync_file_wait(m, 5000 * MS), -EIO, "merge: the error once all completed");

	/*
	 * dma-buf implicit fences: poll() cannot tell an error from success, so
	 * sb_dmabuf_wait() returns 0 (documented: it reports -ETIME/-EBADF/-EINVAL
	 * only); the sync_file exported from the buffer carries the error.
	 */
	CHECK_EQ(sb_dmabuf_wait(sig.bo.fd, SB_ACCESS_READ, 0), 0,
		 "sb_dmabuf_wait: 0 (poll sees a completed fence)");
	REQUIRE(sb_dmabuf_export_sync_file(sig.bo.fd, SB_ACCESS_READ, &exp) == 0, "export");
	CHECK_EQ(sb_sync_file_wait(exp, 0), -EIO, "the exported sync_file reports the error");
	sbfault_disarm();
	CHECK(sbfault_calls("fence_error") > 0, "the rule was applied (%u SYNC_IOC_FILE_INFO answers)",
	      sbfault_calls("fence_error"));

	close(m);
	close(exp);
	sbk_fence_destroy(&sig);
	sbk_fence_destroy(&pend);
	sbk_fence_destroy(&pend2);
	close(vgem);
	return tb_finish();
}
