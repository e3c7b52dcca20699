/* SPDX-License-Identifier: MIT */
/*
 * fault-wl (VM tier): both Wayland helpers under failing kernel and libc
 * calls (docs/reliability.md, "fault-wl"). libsbfault is scoped to one
 * helper library (and the calls the shared core, libsyncbridge.so, makes on
 * its behalf: testbed/sbfault.c, in_scope()) and counts one thread only.
 *
 * Compositor helper (the example compositor on a thread, armed there, scoped
 * to libsyncbridge-wayland-server): a raw client commits a vgem dma-buf
 *   v1-pending / v1-signalled           explicit-sync v1 acquire fence, pending
 *                                        at the commit (signalled 5 ms later)
 *                                        or already signalled; release asked;
 *   syncobj-pending / -signalled         a materialised timeline point;
 *   syncobj-unmaterialised               a point with no fence yet, signalled
 *                                        from the CPU later;
 *   v1- / syncobj-surface-destroyed      the wl_surface destroyed while its
 *                                        commit waits;
 *   client-gone                          the client disconnects while a v1 and
 *                                        a syncobj commit wait;
 * with the compositor's render fences (release = fenced_release / a point
 * the helper attaches the fence to) and without (immediate release / the
 * point signalled at once), and the unmaterialised case once more with the
 * syncobj waiter's thread (SYNCBRIDGE_SYNCOBJ_EVENTFD=0: pthread_create).
 * A dry run counts the calls; then each is failed in turn — ioctl with
 * ENOTTY, EINVAL, ENOMEM (EINTR and EAGAIN too: sb_ioctl() retries them, so
 * they must change nothing), eventfd with EMFILE and ENOMEM, dup with EMFILE,
 * pthread_create with EAGAIN — in a fresh connection, and the case must end
 *   kept      the buffer used after its fence (never before), the release
 *             delivered; a destroyed surface's commit never used;
 *   reported  the client got a protocol error (the helper said why) and
 *             nothing was used before its fence;
 * never "BROKEN" (used early, or neither used nor reported within 2 s, or a
 * release that never comes). EINTR/EAGAIN must be "kept". No fd of the process
 * may leak or be closed under it, no close() may hit a closed fd.
 *
 * This program's own sb_wl_commit_release() (it comes first in symbol
 * lookup) checks the result against the header; on failure the example
 * compositor does what the header asks of a compositor (the commit is still
 * its own: it releases it without a fence once its render fence signalled),
 * and the case's "release within 2 s" check sees whether it did.
 *
 * Client helper (armed on this thread, scoped to
 * libsyncbridge-wayland-client): one frame through the whole public API —
 * create, get_surface_sync, set_acquire_fence or set_acquire_point (a pending
 * vgem fence), get_release, commit, release_wait, release_get_fence, the
 * destroys — per protocol (linux-drm-syncobj, explicit-sync v1), each call
 * failed in turn as above. A failing call must return a documented error
 * with its outputs -1/NULL; the program then retries it without faults, as
 * an application would, and the frame must still be right: used after the
 * fence, released. Same fd and close checks.
 *
 *   fault-wl [--server-only | --client-only] [--quick | --all]
 *
 * The suite's run fails each ioctl with ENOMEM, and every other ioctl site
 * also with one of ENOTTY, EINVAL, EINTR, EAGAIN in rotation (so that it
 * stays near 20 s in the guest: each of those meets an eighth of the
 * sites), and leaves out two scenario runs whose call sites others cover
 * (syncobj-signalled; unmaterialised with immediate release); --all: every
 * errno at every site, every run; --quick: ENOMEM only.
 * A schedule names a call by its number among the armed thread's calls in
 * the helper's scope, so a scenario must make the same calls in the same order
 * in every run: each case checks that the fault was hit and that the ioctl it
 * hit has the request the dry run saw there. The one wait whose calls depend
 * on another thread's timing is the client's sb_wl_release_wait() on
 * explicit-sync v1: it checks the compositor's render fence (SYNC_IOC_FILE_INFO)
 * and only when that is still pending polls and checks again. The render fence
 * signals from the compositor thread's timer, render_delay_ms after the use,
 * so a client that got there later than that (a loaded machine) made one
 * ioctl fewer, and "ioctl:8" of v1-point named a call that was not made. (The
 * compositor gate of wlt.c cannot hold that timer back: libwayland dispatches
 * the expired timers of an epoll batch before its other sources, so a timer
 * that expired while the compositor was still busy fires before the gate's
 * callback runs.) The v1 client cases therefore hold the compositor thread
 * inside its sb_wl_commit_release() (ours, below) once the release event is
 * flushed to the client, before it can return to its event loop, and let it
 * go from libsbfault's poll hook when the client is about to poll a
 * sync_file: the first check always sees the fence pending, the second
 * always signalled.
 *
 * Under ASan its interceptors hide the caller from libsbfault's scope:
 * nothing is counted there and the program says so (it is not in the
 * sanitizer selection).
 *
 * Timing (issue 19): the 5 and 10 ms sleeps are negative-check windows: they
 * give a wrong use (a commit used before its fence, a discarded commit used)
 * the time to show, and a late compositor can only make such a bug go unseen
 * in one case, never fail a correct one; every "used" check is causal (used
 * after `t_signal`, taken before the signal). The 10 ms after a client's
 * disconnect is not what orders its hang-up before its fences either: the
 * hang-up is queued on the compositor's epoll set before the signal makes the
 * fence readable, and epoll reports ready fds in that order, so a compositor
 * thread that did not run in between still sees the client gone first.
 * BOUND (2 s) bounds events that must happen (a use after the signal, a
 * release, a protocol error): typically a few ms, against 2 s; a use or
 * release that does not come at all is what it catches.
 *
 * Files: this one (options, devices, the two parts in turn), fault.h,
 * fault_schedule.c (the schedule; the compositor and what both sides share),
 * fault_server.c (the compositor helper's cases), fault_client.c (the client
 * helper's).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbfault.h"
#include "harness.h"
#include "fault.h"

struct wlt_comp comp;
struct wlt_devices dev;
struct sbk_buf buf;
bool quick, all_errnos;
int cases, n_kept, n_reported;

int
main(int argc, char **argv)
{
	bool server = true, client = true;
	int64_t t0 = now_ns();

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--server-only") == 0)
			client = false;
		else if (strcmp(argv[i], "--client-only") == 0)
			server = false;
		else if (strcmp(argv[i], "--quick") == 0)
			quick = true;
		else if (strcmp(argv[i], "--all") == 0)
			all_errnos = true;
		else
			REQUIRE(false, "unknown argument %s", argv[i]);
	}
	if (!dlsym(RTLD_DEFAULT, "sbfault_arm_scoped"))
		tb_skip("libsbfault is not loaded");
	/* The helpers' warnings go to the log. */
	setenv("SYNCBRIDGE_DEBUG", "warn", 0);
	wlt_devices_open(&dev, WLT_DEV_RENDER_VGEM | WLT_DEV_DRM_REQUIRED);
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, dev.vgem, 16 * 64, &buf) == 0, "vgem buffer");

	if (server)
		server_part();
	if (client)
		client_part();

	tb_note("%d fault cases: %d kept, %d reported; %.1f s", cases, n_kept, n_reported,
		     (double)(now_ns() - t0) / 1e9);
	sbk_buf_destroy(&buf);
	wlt_devices_close(&dev);
	for (int i = 0; i < 3; i++) {
		struct fault_checks part = i == 0 ? fault_schedule_checks() :
					   i == 1 ? fault_server_checks() : fault_client_checks();
		tb_checks += part.checks;
		tb_failures += part.failures;
	}
	return tb_finish();
}
