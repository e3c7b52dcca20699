/* SPDX-License-Identifier: MIT */
/*
 * syncobj-waiter: sb_syncobj_waiter fires exactly once. Its fd (non-blocking,
 * close-on-exec) shows no POLLIN before the point signals, POLLIN after;
 * read gives 1, a second read EAGAIN, and later signals of further points
 * bring nothing more. With SB_SYNCOBJ_WAIT_AVAILABLE it fires on
 * materialisation (a pending vgem fence imported into the point); a binary
 * syncobj (point 0) fires when its vgem fence signals; an already signalled
 * point fires at once.
 *
 *   syncobj_waiter            the kernel's DRM_IOCTL_SYNCOBJ_EVENTFD path
 *   syncobj_waiter --fallback SYNCBRIDGE_SYNCOBJ_EVENTFD=0: the helper-thread path
 *
 * Timing: a firing is waited for up to 10 s (typically 0.1-25 ms: the thread
 * path's 20 ms slices), only a bound on waiting for the condition. The "no
 * firing" checks watch 100-200 ms: a late wrong firing could slip past them
 * but not make a correct waiter fail.
 */
#include "vmtest.h"

#include <stdint.h>

static bool fallback;
static int want_eventfd; /* what sb_syncobj_waiter_uses_eventfd() must say */

static struct sb_syncobj_waiter *
make(int drm, uint32_t h, uint64_t point, uint32_t flags, const char *what)
{
	struct sb_syncobj_waiter *w = NULL;
	int ret = sb_syncobj_waiter_create(drm, h, point, flags, &w);
	int fd;

	REQUIRE(ret == 0 && w, "sb_syncobj_waiter_create(%s): %s", what, strerror(-ret));
	CHECK_EQ(sb_syncobj_waiter_uses_eventfd(w), want_eventfd,
		 fallback ? "SYNCBRIDGE_SYNCOBJ_EVENTFD=0 forces the thread"
			  : "the kernel's SYNCOBJ_EVENTFD is used when it exists");
	fd = sb_syncobj_waiter_get_fd(w);
	CHECK(fd >= 0, "waiter fd");
	CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK, "waiter fd is non-blocking");
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC, "waiter fd is close-on-exec");
	return w;
}

/* read() the eventfd: the counter value, or -errno. */
static long long
rd(int fd)
{
	uint64_t v = 0;
	ssize_t n = read(fd, &v, sizeof(v));

	if (n < 0)
		return -errno;
	return n == sizeof(v) ? (long long)v : -EIO;
}

static void
fired_once(int fd, const char *what)
{
	int64_t t0 = now_ns();
	int rev = vm_poll(fd, POLLIN, 10000);

	tb_note("%s: POLLIN after %.2f ms", what, vm_ms(now_ns() - t0));
	CHECK(rev & POLLIN, "%s: POLLIN once fired", what);
	CHECK_EQ(rd(fd), 1, "read gives 1");
	CHECK_EQ(rd(fd), -EAGAIN, "a second read is EAGAIN");
	CHECK_EQ(vm_poll(fd, POLLIN, 0), 0, "no POLLIN after the read");
}

int
main(int argc, char **argv)
{
	struct sb_syncobj_waiter *w;
	struct sbk_fence f, g;
	uint32_t ht, ha, hb;
	int drm, vgem, fd, base;

	fallback = vm_has_arg(argc, argv, "--fallback");
	if (fallback)
		setenv("SYNCBRIDGE_SYNCOBJ_EVENTFD", "0", 1);
	drm = vm_require_syncobj_node();
	vgem = vm_require_vgem();
	want_eventfd = !fallback && sbk_drm_has_syncobj_eventfd(drm);
	tb_note("kernel SYNCOBJ_EVENTFD: %s; expecting the %s path",
		     sbk_drm_has_syncobj_eventfd(drm) ? "yes" : "no", want_eventfd ? "eventfd" : "thread");
	REQUIRE(drmSyncobjCreate(drm, 0, &ht) == 0, "drmSyncobjCreate");
	REQUIRE(drmSyncobjCreate(drm, 0, &ha) == 0, "drmSyncobjCreate");
	REQUIRE(drmSyncobjCreate(drm, 0, &hb) == 0, "drmSyncobjCreate");
	vm_require_fence(vgem, true, &f);
	vm_require_fence(vgem, true, &g);
	base = tb_count_fds();

	/* Timeline point 3. */
	w = make(drm, ht, 3, 0, "timeline point 3");
	fd = sb_syncobj_waiter_get_fd(w);
	CHECK_EQ(vm_poll(fd, POLLIN, 0), 0, "not fired before anything happened");
	CHECK_EQ(rd(fd), -EAGAIN, "read before firing is EAGAIN");
	CHECK_EQ(sb_syncobj_signal(drm, ht, 2), 0, "signal point 2");
	CHECK_EQ(vm_poll(fd, POLLIN, 100), 0, "point 2 does not fire a point-3 waiter");
	CHECK_EQ(sb_syncobj_signal(drm, ht, 3), 0, "signal point 3");
	fired_once(fd, "point 3");
	CHECK_EQ(sb_syncobj_signal(drm, ht, 4), 0, "signal point 4");
	CHECK_EQ(sb_syncobj_signal(drm, ht, 5), 0, "signal point 5");
	CHECK_EQ(vm_poll(fd, POLLIN, 200), 0, "no second firing after later signals");
	CHECK_EQ(rd(fd), -EAGAIN, "still EAGAIN");
	sb_syncobj_waiter_destroy(w);

	/* An already signalled point fires at once. */
	w = make(drm, ht, 4, 0, "signalled point 4");
	fired_once(sb_syncobj_waiter_get_fd(w), "already signalled point 4");
	sb_syncobj_waiter_destroy(w);

	/* AVAILABLE: fires on materialisation while the fence is still pending. */
	w = make(drm, ha, 5, SB_SYNCOBJ_WAIT_AVAILABLE, "AVAILABLE point 5");
	fd = sb_syncobj_waiter_get_fd(w);
	CHECK_EQ(vm_poll(fd, POLLIN, 100), 0, "AVAILABLE: not fired before materialisation");
	CHECK_EQ(sb_syncobj_import_sync_file(drm, ha, 5, f.sync_file), 0, "import pending vgem into point 5");
	fired_once(fd, "AVAILABLE point 5");
	CHECK_EQ(vm_status(f.sync_file), 0, "fired while vgem is still pending");
	CHECK_EQ(sbk_fence_signal(&f), 0, "signal vgem");
	CHECK_EQ(sb_syncobj_wait(drm, ha, 5, 2000 * MS, 0), 0, "point 5 signalled");
	CHECK_EQ(vm_poll(fd, POLLIN, 200), 0, "AVAILABLE: no second firing on the signal");
	sb_syncobj_waiter_destroy(w);

	/* Binary syncobj (point 0) holding a pending vgem fence. */
	CHECK_EQ(sb_syncobj_import_sync_file(drm, hb, 0, g.sync_file), 0, "import pending vgem into binary");
	w = make(drm, hb, 0, 0, "binary");
	fd = sb_syncobj_waiter_get_fd(w);
	CHECK_EQ(vm_poll(fd, POLLIN, 100), 0, "binary: not fired while vgem is pending");
	CHECK_EQ(sbk_fence_signal(&g), 0, "signal vgem");
	fired_once(fd, "binary point 0");
	sb_syncobj_waiter_destroy(w);

	sb_syncobj_waiter_destroy(NULL);
	CHECK_EQ(tb_count_fds(), base, "waiters leave no fd behind");

	sbk_fence_destroy(&f);
	sbk_fence_destroy(&g);
	drmSyncobjDestroy(drm, ht);
	drmSyncobjDestroy(drm, ha);
	drmSyncobjDestroy(drm, hb);
	close(vgem);
	close(drm);
	return tb_finish();
}
