/* SPDX-License-Identifier: MIT */
/*
 * fault-dmabuf-probe (VM tier): the library's process-wide "kernel < 6.0"
 * probe (src/core/dmabuf.c) concludes only from an ENOTTY that a real dma-buf
 * gave, never from one that a reused fd number gave (NEWS.md, F4).
 *
 * Each case runs in its own child process (the probe is per process):
 *
 *   reused   DMA_BUF_IOCTL_EXPORT_SYNC_FILE fails with ENOTTY (libsbfault)
 *            and, at that moment, the fd number names a memfd instead of the
 *            dma-buf (the hook dup2()s one over it: what a caller's other
 *            thread closing and reusing the number looks like). The export
 *            must fail with -EINVAL (not a dma-buf any more), and a later
 *            export from another dma-buf must still reach the kernel and work.
 *   old      control: the same ENOTTY while the fd still is the dma-buf —
 *            what a kernel before 6.0 answers. Export gives -EOPNOTSUPP and
 *            every later export and import gives -EOPNOTSUPP without an ioctl
 *            (the probe latched). This is what `reused` got before the fix.
 */
#include <dlfcn.h>
#include <linux/dma-buf.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "vmtest.h"
#include "sbfault.h"

struct swap {
	int memfd;
	int swapped_fd;
};

static void
swap_hook(int fd, unsigned long request, int err, void *data)
{
	struct swap *s = data;

	if (request == DMA_BUF_IOCTL_EXPORT_SYNC_FILE && err == ENOTTY && dup2(s->memfd, fd) == fd)
		s->swapped_fd = fd;
}

static int
run_case(bool reuse)
{
	struct sbk_buf a = SBK_BUF_INIT, b = SBK_BUF_INIT;
	struct swap s = { .memfd = -1, .swapped_fd = -1 };
	int vgem = vm_require_vgem(), out = -1, ret;
	const char *name = reuse ? "reused" : "old";

	vm_require_buf(SBK_BUF_VGEM, vgem, 4096, &a);
	vm_require_buf(SBK_BUF_VGEM, vgem, 4096, &b);
	if (reuse) {
		s.memfd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
		REQUIRE(s.memfd >= 0, "memfd_create");
		sbfault_set_ioctl_hook(swap_hook, &s);
	}

	sbfault_arm("ioctl:1:ENOTTY");
	ret = sb_dmabuf_export_sync_file(a.fd, SB_ACCESS_READ, &out);
	sbfault_disarm();
	sbfault_set_ioctl_hook(NULL, NULL);
	CHECK_EQ(sbfault_injected(), 1, "the ENOTTY was injected");
	CHECK_EQ(out, -1, "no output on failure");
	if (reuse) {
		CHECK_EQ(s.swapped_fd, a.fd, "the fd number named a memfd when the ENOTTY came");
		CHECK_EQ(ret, -EINVAL, "reused: the fd is no dma-buf any more");
	} else {
		CHECK_EQ(ret, -EOPNOTSUPP, "old: ENOTTY from a dma-buf means Linux < 6.0");
	}

	/* A later export from another, real dma-buf. */
	sbfault_arm("");
	ret = sb_dmabuf_export_sync_file(b.fd, SB_ACCESS_WRITE, &out);
	sbfault_disarm();
	if (reuse) {
		CHECK_EQ(ret, 0, "reused: the next export works (the probe did not latch)");
		CHECK(sbfault_calls("ioctl") >= 1, "reused: it reached the kernel (%u ioctls)",
		      sbfault_calls("ioctl"));
		CHECK(out >= 0 && sb_sync_file_is_valid(out), "reused: a sync_file came back");
	} else {
		CHECK_EQ(ret, -EOPNOTSUPP, "old: the next export is -EOPNOTSUPP (latched)");
		CHECK_EQ(sbfault_calls("ioctl"), 0, "old: without asking the kernel again");
	}
	if (out >= 0)
		close(out);
	tb_note("%s: first export → ENOTTY injected, later export → %s", name,
		     ret == 0 ? "0" : strerror(-ret));

	if (s.memfd >= 0)
		close(s.memfd);
	/* In `reused`, a.fd now names the memfd: sbk_buf_destroy() closes that copy. */
	sbk_buf_destroy(&a);
	sbk_buf_destroy(&b);
	close(vgem);
	return tb_finish();
}

static int
in_child(bool reuse)
{
	int status;
	pid_t pid;

	pid = tb_fork();
	if (pid == 0) {
		int rc;

		/* The child counts its own checks (the parent's are inherited). */
		tb_failures = tb_checks = 0;
		rc = run_case(reuse);
		fflush(stdout);
		_exit(rc);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	if (!WIFEXITED(status))
		return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return WEXITSTATUS(status);
}

int
main(void)
{
	int rc;

	if (!dlsym(RTLD_DEFAULT, "sbfault_set_ioctl_hook"))
		tb_skip("libsbfault is not loaded");
	close(vm_require_vgem());

	rc = in_child(true);
	if (rc == 77)
		return 77;
	CHECK_EQ(rc, 0, "reused fd number: no latch (child exit status)");
	rc = in_child(false);
	CHECK_EQ(rc, 0, "control, a real ENOTTY from a dma-buf: latched (child exit status)");
	return tb_finish();
}
