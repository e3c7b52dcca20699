/* SPDX-License-Identifier: MIT */
/*
 * egl-bad-inputs: every sb_egl_* function answers bad inputs with its
 * documented error, leaves *out_fd at -1, closes none of the caller's fds and
 * leaks none of its own (the process's fd count is the same before and after):
 *  - EGL_NO_DISPLAY, a display that is not initialised, NULL out-pointers: -EINVAL;
 *  - no current context, or one of another display: -ENOENT;
 *  - fds: -1 (a sync_file "already signalled") is accepted by the wait, any
 *    other negative or closed fd is -EBADF, an open fd of the wrong kind
 *    (pipe, /dev/null, a sync_file where a dma-buf is wanted) -EINVAL;
 *  - bad access values: -EINVAL.
 * The *_export_blocking calls too, and that they need no context: -1 and an
 * idle buffer / signalled fence give 0 and nothing to poll.
 * With vgem (the VM tier) the same with real sync_files and dma-bufs.
 *
 *   egl-bad-inputs [--disabled]
 * --disabled sets SYNCBRIDGE_DISABLE=1 first: the checks must not change.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>

#include <syncbridge/egl.h>
#include <syncbridge/syncbridge.h>

#include "eglt.h"
#include "harness.h"
#include "kernel.h"

/* A closed fd number: open and close one. */
static int
closed_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	close(fd);
	return fd;
}

/* A *_export_blocking call (its out_fd: &bout) fails with want and leaves bout at -1. */
#define CHECK_BLOCKING_FAILS(call, want, what)            \
	do {                                              \
		int bout = 1234;                           \
		CHECK_EQ(call, want, what);                \
		CHECK_EQ(bout, -1, what ": *out_fd = -1"); \
	} while (0)

/* The fd-taking functions on one display with inputs that must all fail. */
static void
bad_fds(EGLDisplay dpy, const char *when, int pipe_fd, int null_fd, int sync_file)
{
	int gone = closed_fd();

	CHECK_BLOCKING_FAILS(sb_egl_sync_file_export_blocking_fence(dpy, -2, &bout), -EBADF,
			     "sync_file_export_blocking(-2)");
	CHECK_BLOCKING_FAILS(sb_egl_sync_file_export_blocking_fence(dpy, gone, &bout), -EBADF,
			     "sync_file_export_blocking(closed fd)");
	CHECK_BLOCKING_FAILS(sb_egl_sync_file_export_blocking_fence(dpy, pipe_fd, &bout), -EINVAL,
			     "sync_file_export_blocking(pipe)");
	CHECK_BLOCKING_FAILS(sb_egl_sync_file_export_blocking_fence(dpy, null_fd, &bout), -EINVAL,
			     "sync_file_export_blocking(/dev/null)");
	for (int a = SB_ACCESS_READ; a <= SB_ACCESS_WRITE; a++) {
		CHECK_BLOCKING_FAILS(sb_egl_dmabuf_export_blocking_fence(dpy, -1, a, &bout), -EBADF,
				     "dmabuf_export_blocking(-1)");
		CHECK_BLOCKING_FAILS(sb_egl_dmabuf_export_blocking_fence(dpy, gone, a, &bout), -EBADF,
				     "dmabuf_export_blocking(closed fd)");
		CHECK_BLOCKING_FAILS(sb_egl_dmabuf_export_blocking_fence(dpy, pipe_fd, a, &bout), -EINVAL,
				     "dmabuf_export_blocking(pipe)");
		CHECK_BLOCKING_FAILS(sb_egl_dmabuf_export_blocking_fence(dpy, null_fd, a, &bout), -EINVAL,
				     "dmabuf_export_blocking(/dev/null)");
		if (sync_file >= 0)
			CHECK_BLOCKING_FAILS(sb_egl_dmabuf_export_blocking_fence(dpy, sync_file, a, &bout),
					     -EINVAL, "dmabuf_export_blocking(a sync_file)");
	}

	CHECK_EQ(sb_egl_sync_file_wait(dpy, -2), -EBADF, "wait(-2)");
	CHECK_EQ(sb_egl_sync_file_wait(dpy, gone), -EBADF, "wait(closed fd)");
	CHECK_EQ(sb_egl_sync_file_wait(dpy, pipe_fd), -EINVAL, "wait(pipe)");
	CHECK_EQ(sb_egl_sync_file_wait(dpy, null_fd), -EINVAL, "wait(/dev/null)");

	for (int a = SB_ACCESS_READ; a <= SB_ACCESS_WRITE; a++) {
		CHECK_EQ(sb_egl_dmabuf_wait(dpy, -1, a), -EBADF, "dmabuf_wait(-1)");
		CHECK_EQ(sb_egl_dmabuf_wait(dpy, gone, a), -EBADF, "dmabuf_wait(closed fd)");
		CHECK_EQ(sb_egl_dmabuf_wait(dpy, pipe_fd, a), -EINVAL, "dmabuf_wait(pipe)");
		CHECK_EQ(sb_egl_dmabuf_wait(dpy, null_fd, a), -EINVAL, "dmabuf_wait(/dev/null)");
		CHECK_EQ(sb_egl_dmabuf_attach(dpy, -1, a), -EBADF, "dmabuf_attach(-1)");
		CHECK_EQ(sb_egl_dmabuf_attach(dpy, gone, a), -EBADF, "dmabuf_attach(closed fd)");
		CHECK_EQ(sb_egl_dmabuf_attach(dpy, pipe_fd, a), -EINVAL, "dmabuf_attach(pipe)");
		CHECK_EQ(sb_egl_dmabuf_attach(dpy, null_fd, a), -EINVAL, "dmabuf_attach(/dev/null)");
		if (sync_file >= 0) {
			CHECK_EQ(sb_egl_dmabuf_wait(dpy, sync_file, a), -EINVAL,
				 "dmabuf_wait(a sync_file)");
			CHECK_EQ(sb_egl_dmabuf_attach(dpy, sync_file, a), -EINVAL,
				 "dmabuf_attach(a sync_file)");
		}
	}
	tb_note("bad fds checked (%s)", when);
}

/* The display calls on a display that is not one (EGL_NO_DISPLAY) or not
 * initialised: all -EINVAL, with the out parameters cleared. */
static void
bad_display(EGLDisplay dpy, const char *which)
{
	uint32_t caps = 0xdead;
	int out = 1234, bout = 1234;
	char what[96];

	snprintf(what, sizeof(what), "caps(%s)", which);
	CHECK_EQ(sb_egl_display_get_caps(dpy, &caps), -EINVAL, what);
	CHECK_EQ(caps, 0, "caps zeroed on failure");
	snprintf(what, sizeof(what), "export(%s)", which);
	CHECK_EQ(sb_egl_sync_file_export(dpy, &out), -EINVAL, what);
	CHECK_EQ(out, -1, "export: *out_fd = -1 on failure");
	snprintf(what, sizeof(what), "wait(%s, -1)", which);
	CHECK_EQ(sb_egl_sync_file_wait(dpy, -1), -EINVAL, what);
	snprintf(what, sizeof(what), "sync_file_export_blocking(%s)", which);
	CHECK_EQ(sb_egl_sync_file_export_blocking_fence(dpy, -1, &bout), -EINVAL, what);
	CHECK_EQ(bout, -1, "sync_file_export_blocking: *out_fd = -1");
}

int
main(int argc, char **argv)
{
	struct eglt t, t2;
	int pipe_fds[2], null_fd, vgem = -1, before, after, out, have_second;
	struct sbk_buf buf = { .fd = -1, .vgem_fd = -1 };
	struct sbk_fence fence = { .sync_file = -1, .bo = { .fd = -1, .vgem_fd = -1 } };
	uint32_t caps;
	EGLDisplay early;

	if (tb_has_arg(argc, argv, "--disabled"))
		setenv("SYNCBRIDGE_DISABLE", "1", 1);

	/* EGL_NO_DISPLAY before anything else touched EGL. */
	bad_display(EGL_NO_DISPLAY, "EGL_NO_DISPLAY");

	/* A display handle that is not initialised yet. */
	{
		PFNEGLGETPLATFORMDISPLAYEXTPROC get_display =
			(PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
		early = get_display ? get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL)
				    : EGL_NO_DISPLAY;
	}
	if (early != EGL_NO_DISPLAY)
		bad_display(early, "uninitialised display");

	int ret = eglt_open(&t, EGLT_SURFACELESS);
	if (ret == -ENODEV)
		tb_skip("no surfaceless EGL display with a GLES2 context");
	REQUIRE(ret == 0, "eglt_open");
	if (early != EGL_NO_DISPLAY) {
		CHECK(t.dpy == early, "same display handle once initialised");
		/* A failed probe is not remembered: now it works. */
		CHECK_EQ(sb_egl_display_get_caps(early, &caps), 0, "caps(display, now initialised)");
	}
	CHECK_EQ(sb_egl_display_get_caps(t.dpy, NULL), -EINVAL, "caps(NULL)");
	CHECK_EQ(sb_egl_sync_file_export(t.dpy, NULL), -EINVAL, "export(NULL)");
	CHECK_EQ(sb_egl_sync_file_export_blocking_fence(t.dpy, -1, NULL), -EINVAL,
		 "sync_file_export_blocking(NULL)");
	CHECK_EQ(sb_egl_dmabuf_export_blocking_fence(t.dpy, -1, SB_ACCESS_READ, NULL), -EINVAL,
		 "dmabuf_export_blocking(NULL)");

	REQUIRE(pipe2(pipe_fds, O_CLOEXEC) == 0, "pipe2");
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	REQUIRE(null_fd >= 0, "open /dev/null");

	/* Real kernel objects where the machine has them (the VM tier). */
	vgem = sbk_vgem_open();
	if (vgem >= 0) {
		REQUIRE(sbk_buf_create(SBK_BUF_VGEM, vgem, 64 * 4096, &buf) == 0, "vgem buffer");
		REQUIRE(sbk_fence_create(vgem, true, &fence) == 0, "vgem fence");
		REQUIRE(sbk_fence_signal(&fence) == 0, "signal the fence");
	} else {
		tb_note("no vgem (%s): host checks only", strerror(-vgem));
	}

	have_second = eglt_open(&t2, EGLT_DEVICE_SW) == 0 && t2.dpy != t.dpy;
	if (!have_second)
		tb_note("no second (software device) display: skipping the other-display checks");
	REQUIRE(eglMakeCurrent(t.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, t.ctx), "make current");

	/* Only this thread opens or closes fds from here on (eglt.h: the disk cache). */
	REQUIRE(!eglt_disk_cache_running(), "no Mesa shader disk-cache thread (it opens fds behind "
		"the fd count: MESA_SHADER_CACHE_DISABLE)");
	before = tb_count_fds();

	/* Context current: bad fds and bad access values. */
	bad_fds(t.dpy, "context current", pipe_fds[0], null_fd, fence.sync_file);
	if (buf.fd >= 0) {
		CHECK_EQ(sb_egl_dmabuf_wait(t.dpy, buf.fd, 0), -EINVAL, "dmabuf_wait(access 0)");
		CHECK_EQ(sb_egl_dmabuf_wait(t.dpy, buf.fd, 3), -EINVAL, "dmabuf_wait(access 3)");
		CHECK_EQ(sb_egl_dmabuf_attach(t.dpy, buf.fd, 0), -EINVAL, "dmabuf_attach(access 0)");
		CHECK_EQ(sb_egl_dmabuf_attach(t.dpy, buf.fd, 3), -EINVAL, "dmabuf_attach(access 3)");
		CHECK_BLOCKING_FAILS(sb_egl_dmabuf_export_blocking_fence(t.dpy, buf.fd, 0, &bout), -EINVAL,
				     "dmabuf_export_blocking(access 0)");
		CHECK_BLOCKING_FAILS(sb_egl_dmabuf_export_blocking_fence(t.dpy, buf.fd, 3, &bout), -EINVAL,
				     "dmabuf_export_blocking(access 3)");
		CHECK_BLOCKING_FAILS(sb_egl_dmabuf_export_blocking_fence(EGL_NO_DISPLAY, buf.fd,
								   SB_ACCESS_READ, &bout),
				     -EINVAL, "dmabuf_export_blocking(EGL_NO_DISPLAY)");
	}
	CHECK_EQ(sb_egl_sync_file_wait(t.dpy, -1), 0, "wait(-1) = already signalled");

	/* No current context. */
	REQUIRE(eglMakeCurrent(t.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT), "release");
	CHECK_EQ(sb_egl_display_get_caps(t.dpy, &caps), 0, "caps need no context");
	CHECK(!((caps & SB_EGL_CAP_FOREIGN_WAIT_BLOCKS) && (caps & SB_EGL_CAP_FOREIGN_WAIT_ASYNC)),
	      "FOREIGN_WAIT_BLOCKS and _ASYNC exclude each other (caps 0x%x)", caps);
	/* The non-blocking path needs no context: nothing pending, nothing to poll. */
	out = 1234;
	CHECK_EQ(sb_egl_sync_file_export_blocking_fence(t.dpy, -1, &out), 0,
		 "sync_file_export_blocking(-1) without a context");
	CHECK_EQ(out, -1, "-1: nothing to poll");
	if (fence.sync_file >= 0) {
		out = 1234;
		CHECK_EQ(sb_egl_sync_file_export_blocking_fence(t.dpy, fence.sync_file, &out), 0,
			 "sync_file_export_blocking(signalled) without a context");
		CHECK_EQ(out, -1, "signalled: nothing to poll");
	}
	if (buf.fd >= 0) {
		out = 1234;
		CHECK_EQ(sb_egl_dmabuf_export_blocking_fence(t.dpy, buf.fd, SB_ACCESS_WRITE, &out), 0,
			 "dmabuf_export_blocking(idle buffer) without a context");
		CHECK_EQ(out, -1, "idle buffer: nothing to poll");
	}
	out = 1234;
	CHECK_EQ(sb_egl_sync_file_export(t.dpy, &out), -ENOENT, "export without a context");
	CHECK_EQ(out, -1, "export: *out_fd = -1");
	CHECK_EQ(sb_egl_sync_file_wait(t.dpy, -1), -ENOENT, "wait(-1) without a context");
	if (fence.sync_file >= 0)
		CHECK_EQ(sb_egl_sync_file_wait(t.dpy, fence.sync_file), -ENOENT,
			 "wait(sync_file) without a context");
	if (buf.fd >= 0) {
		CHECK_EQ(sb_egl_dmabuf_wait(t.dpy, buf.fd, SB_ACCESS_READ), -ENOENT,
			 "dmabuf_wait without a context");
		CHECK_EQ(sb_egl_dmabuf_attach(t.dpy, buf.fd, SB_ACCESS_WRITE), -ENOENT,
			 "dmabuf_attach without a context");
	}
	bad_fds(t.dpy, "no context: fds are checked first", pipe_fds[0], null_fd, fence.sync_file);

	/* A context of another display is current. */
	if (have_second) {
		REQUIRE(eglMakeCurrent(t2.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, t2.ctx), "current on 2nd");
		out = 1234;
		CHECK_EQ(sb_egl_sync_file_export(t.dpy, &out), -ENOENT,
			 "export with another display's context current");
		CHECK_EQ(out, -1, "export: *out_fd = -1");
		CHECK_EQ(sb_egl_sync_file_wait(t.dpy, -1), -ENOENT,
			 "wait with another display's context current");
		if (buf.fd >= 0)
			CHECK_EQ(sb_egl_dmabuf_wait(t.dpy, buf.fd, SB_ACCESS_READ), -ENOENT,
				 "dmabuf_wait with another display's context current");
	}

	after = tb_count_fds();
	CHECK_EQ(after, before, "fd count unchanged by the failed calls");
	CHECK(sbk_fd_is_open(pipe_fds[0]) && sbk_fd_is_open(pipe_fds[1]), "the pipe is still open");
	CHECK(sbk_fd_is_open(null_fd), "/dev/null is still open");
	if (fence.sync_file >= 0)
		CHECK(sb_sync_file_is_valid(fence.sync_file), "the sync_file is still open and valid");
	if (buf.fd >= 0)
		CHECK(sb_dmabuf_is_valid(buf.fd), "the dma-buf is still open");

	if (have_second)
		eglt_close(&t2);
	eglt_close(&t);
	sbk_fence_destroy(&fence);
	sbk_buf_destroy(&buf);
	if (vgem >= 0)
		close(vgem);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	close(null_fd);
	return tb_finish();
}
