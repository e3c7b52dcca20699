/* SPDX-License-Identifier: MIT */
/*
 * egl-export: sb_egl_sync_file_export() after GL rendering, on whichever path
 * the display gives:
 *  - native fence sync: a real sync_file, close-on-exec, owned by us (closing
 *    it is the only close), signalled once GL is done, fd count back to the
 *    start after closing;
 *  - fallback (no EGL_ANDROID_native_fence_sync, or SYNCBRIDGE_EGL_FALLBACK=1):
 *    0 with fd -1 ("already signalled") after a CPU wait; no fd made;
 *  - disabled (SYNCBRIDGE_DISABLE): 0 with fd -1, no wait.
 * Either way the readback shows what GL rendered, and sb_egl_sync_file_wait()
 * accepts what the export gave. Runs on the host (fallback) and in the guest.
 *
 *   egl-export [--fallback] [--core] [--disabled] [--expect-native]
 * --fallback sets SYNCBRIDGE_EGL_FALLBACK=1, --core SYNCBRIDGE_EGL_CORE=1 (the
 * EGL 1.5 entry points), --disabled SYNCBRIDGE_DISABLE=1; --expect-native
 * fails (instead of testing the fallback) when the display lacks native fences.
 */
#include <fcntl.h>
#include <stdbool.h>

#include <syncbridge/egl.h>
#include <syncbridge/syncbridge.h>

#include "egl_common.h"
#include "harness.h"

#define SIZE 64

int
main(int argc, char **argv)
{
	struct eglc_switches sw = eglc_switches_apply(argc, argv);
	bool fallback = sw.fallback, core = sw.core, disabled = sw.disabled;
	bool expect_native = tb_has_arg(argc, argv, "--expect-native");
	struct eglt t;
	struct eglt_target target;
	uint32_t caps = 0;
	int before, fd, ret;

	ret = eglt_open(&t, EGLT_ANY);
	if (ret == -ENODEV)
		tb_skip("no EGL display with a GLES2 context");
	REQUIRE(ret == 0, "eglt_open");
	REQUIRE(sb_egl_display_get_caps(t.dpy, &caps) == 0, "caps");
	tb_note("caps 0x%x: native %d, gpu-wait %d, fence-sync %d, core %d, disabled %d", caps,
		     !!(caps & SB_EGL_CAP_NATIVE_FENCE), !!(caps & SB_EGL_CAP_GPU_WAIT),
		     !!(caps & SB_EGL_CAP_FENCE_SYNC), !!(caps & SB_EGL_CAP_CORE_SYNC),
		     !!(caps & SB_EGL_CAP_DISABLED));
	if (expect_native)
		REQUIRE(caps & SB_EGL_CAP_NATIVE_FENCE, "the display has native fence sync");
	if (fallback)
		CHECK(!(caps & (SB_EGL_CAP_NATIVE_FENCE | SB_EGL_CAP_GPU_WAIT)),
		      "SYNCBRIDGE_EGL_FALLBACK: no native fences, no GPU waits");
	if (core) {
		const char *v = eglQueryString(t.dpy, EGL_VERSION);

		if (v && strncmp(v, "1.5", 3) == 0)
			CHECK(caps & SB_EGL_CAP_CORE_SYNC, "SYNCBRIDGE_EGL_CORE on EGL 1.5: core entry points");
		else
			tb_note("EGL %s: no 1.5 core entry points to test", v ? v : "?");
	} else {
		CHECK(!(caps & SB_EGL_CAP_CORE_SYNC) || !(caps & SB_EGL_CAP_FENCE_SYNC) ||
			      !strstr(eglQueryString(t.dpy, EGL_EXTENSIONS), "EGL_KHR_fence_sync"),
		      "KHR entry points preferred when the display has EGL_KHR_fence_sync");
	}
	CHECK_EQ(!!(caps & SB_EGL_CAP_DISABLED), disabled, "DISABLED cap follows SYNCBRIDGE_DISABLE");

	REQUIRE(eglt_target_create(&t, SIZE, SIZE, &target) == 0, "render target");
	eglt_fill(&target, 0x11);
	(void)eglt_count(&target, 0x11, NULL); /* warm up: the first readback allocates */
	/* Only this thread opens or closes fds from here on (eglt.h: the disk cache). */
	REQUIRE(!eglt_disk_cache_running(), "no Mesa shader disk-cache thread (it opens fds behind "
		"the fd count: MESA_SHADER_CACHE_DISABLE)");
	before = tb_count_fds();

	for (int round = 0; round < 3; round++) {
		uint8_t value = (uint8_t)(0x40 + 0x30 * round);
		int flags, status = INT32_MIN;

		eglt_fill(&target, value);
		fd = -2;
		ret = sb_egl_sync_file_export(t.dpy, &fd);
		CHECK_EQ(ret, 0, "export after rendering");
		if ((caps & SB_EGL_CAP_NATIVE_FENCE) && !disabled) {
			CHECK(fd >= 0 && sb_sync_file_is_valid(fd), "a real sync_file (fd %d)", fd);
			flags = fcntl(fd, F_GETFD);
			CHECK(flags >= 0 && (flags & FD_CLOEXEC), "close-on-exec");
			CHECK_EQ(sb_sync_file_wait(fd, 10 * INT64_C(1000000000)), 0, "it signals");
			CHECK_EQ(sb_sync_file_get_status(fd, &status), 0, "status");
			CHECK_EQ(status, 1, "signalled");
			CHECK_EQ(tb_count_fds(), before + 1, "exactly one new fd: ours");
		} else {
			CHECK_EQ(fd, -1, "no native fence: fd -1 (already signalled)");
			CHECK_EQ(tb_count_fds(), before, "no fd made");
		}
		/* What the export gave is what the wait takes. */
		CHECK_EQ(sb_egl_sync_file_wait(t.dpy, fd), 0, "wait on the exported fence");
		if (fd >= 0) {
			CHECK(sb_sync_file_is_valid(fd), "the wait borrowed it: still open");
			CHECK_EQ(close(fd), 0, "closing it is ours to do, once");
		}
		CHECK_EQ(eglt_count(&target, value, NULL), SIZE * SIZE, "readback shows what GL rendered");
		CHECK_EQ(tb_count_fds(), before, "fd count back to the start");
	}

	eglt_target_destroy(&t, &target);
	eglt_close(&t);
	return tb_finish();
}
