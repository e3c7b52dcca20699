/* SPDX-License-Identifier: MIT */
/*
 * dmabuf-wait: sb_dmabuf_wait() (poll on the dma-buf) with pending fences.
 * With a read fence: READ returns at once, WRITE times out after the timeout
 * and returns 0 shortly after another thread signals. With a write fence:
 * READ times out, then returns once signalled. Bad access values: -EINVAL.
 *
 * Timing (vmtest.h): a timed-out wait lasts at least its timeout (the
 * kernel's guarantee) and at most timeout + VM_SLACK_NS (2 s; typically
 * 0.5-5 ms late); a wait that succeeds must have returned after the helper
 * thread started signalling (causal: no bound on how late the helper runs).
 */
#include "vmtest.h"

static void
phase(int vgem, struct sbk_buf *b, bool write_fence)
{
	enum sb_access blocked = write_fence ? SB_ACCESS_READ : SB_ACCESS_WRITE;
	const char *what = write_fence ? "write fence" : "read fence";
	struct sbk_fence f;
	struct vm_later later;
	int64_t t0, t1, dt;
	int ret;

	/* Attach on the buffer itself: the fence's own bo is unused. */
	memset(&f, 0, sizeof(f));
	f.vgem_fd = vgem;
	f.sync_file = -1;
	f.bo.fd = -1;
	f.bo.vgem_fd = -1;
	REQUIRE(sbk_vgem_fence_attach(vgem, b->handle, write_fence, &f.fence_id) == 0, "attach");

	if (!write_fence)
		CHECK_EQ(sb_dmabuf_wait(b->fd, SB_ACCESS_READ, 1000 * MS), 0,
			 "read fence: wait(READ) returns at once");

	t0 = now_ns();
	ret = sb_dmabuf_wait(b->fd, blocked, 100 * MS);
	dt = now_ns() - t0;
	tb_note("%s: wait(%s, 100 ms) = %d after %.1f ms", what,
		     blocked == SB_ACCESS_READ ? "READ" : "WRITE", ret, vm_ms(dt));
	CHECK_EQ(ret, -ETIME, "timed-out wait");
	CHECK(dt >= 99 * MS && dt <= 100 * MS + VM_SLACK_NS, "timed out after ~100 ms (%.1f)", vm_ms(dt));
	CHECK_EQ(sb_dmabuf_wait(b->fd, SB_ACCESS_WRITE, 0), -ETIME, "wait(WRITE, 0) polls busy");

	vm_later_start(&later, 200 * MS, vm_later_signal_fence, &f);
	t0 = now_ns();
	ret = sb_dmabuf_wait(b->fd, blocked, write_fence ? SB_TIMEOUT_INFINITE : 5000 * MS);
	t1 = now_ns();
	CHECK_EQ(vm_later_join(&later), 0, "helper signalled the fence");
	tb_note("%s: wait until signalled = %d after %.1f ms (signalled at +%.1f ms)", what, ret,
		     vm_ms(t1 - t0), vm_ms(later.done_ns - t0));
	CHECK_EQ(ret, 0, "wait succeeds once signalled");
	CHECK(t1 >= later.start_ns, "returned after the helper started signalling (%.1f ms before)",
	      vm_ms(later.start_ns - t1));
	CHECK_EQ(sb_dmabuf_wait(b->fd, SB_ACCESS_WRITE, 0), 0, "idle afterwards");
}

int
main(void)
{
	int vgem = vm_require_vgem();
	struct sbk_buf b;

	vm_require_buf(SBK_BUF_VGEM, vgem, 4096, &b);
	CHECK_EQ(sb_dmabuf_wait(b.fd, SB_ACCESS_WRITE, 0), 0, "idle buffer: wait(WRITE, 0)");
	CHECK_EQ(sb_dmabuf_wait(b.fd, SB_ACCESS_READ, SB_TIMEOUT_INFINITE), 0,
		 "idle buffer: wait(READ, infinite)");
	CHECK_EQ(sb_dmabuf_wait(b.fd, (enum sb_access)0, 0), -EINVAL, "access 0");
	CHECK_EQ(sb_dmabuf_wait(b.fd, (enum sb_access)3, 0), -EINVAL, "access READ|WRITE");

	phase(vgem, &b, false);
	phase(vgem, &b, true);

	sbk_buf_destroy(&b);
	close(vgem);
	return tb_finish();
}
