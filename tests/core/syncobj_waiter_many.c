/* SPDX-License-Identifier: MIT */
/*
 * syncobj-waiter-many: many waiters at once, each firing exactly once and
 * only for its own point, and (fallback path) served by a few shared
 * threads, at most 64 waiters each per wait mode (syncobj_hub.c,
 * HUB_MAX_WAITERS), not one thread each.
 *
 *   syncobj_waiter_many            the kernel's DRM_IOCTL_SYNCOBJ_EVENTFD path
 *   syncobj_waiter_many --fallback SYNCBRIDGE_SYNCOBJ_EVENTFD=0: the shared thread
 *
 * 200 waiters: 150 on timeline points, 30 on binary syncobjs (no fence yet:
 * WAIT_FOR_SUBMIT), 20 with SB_SYNCOBJ_WAIT_AVAILABLE (the second wait mode,
 * so a second thread). The points are signalled one at a time in a shuffled
 * order; after each one, its waiter fires and no waiter whose point is still
 * pending has. Every tenth waiter is destroyed while still pending (taken out
 * of the shared wait), and one syncobj is destroyed under its waiter: the
 * shared thread fires that waiter with -ENOENT and the others go on (the
 * kernel path drops such a registration without firing: not checked there,
 * see syncobj.h). The thread count: +4 while the waiters live (180 waiters
 * of one mode: 3 threads; 20 of the other: 1), back to the
 * start once they are destroyed (the fallback threads stop); the fd count
 * back to the start.
 *
 * Fallback only, first: a child forked while a waiter (and so a thread) of
 * the parent exists gets waiters that fire (the parent's thread is not in
 * the child: the child must start its own), and destroying the inherited
 * waiter there neither hangs nor touches the parent's thread.
 */
#include "vmtest.h"

#include <sys/syscall.h>
#include <sys/wait.h>

#include <stdint.h>

#include "xorshift.h"

#define N 200
#define N_TIMELINE 150
#define N_BINARY 30 /* then N - N_TIMELINE - N_BINARY with AVAILABLE */

struct one {
	uint32_t handle;
	uint64_t point;
	uint32_t flags;
	struct sb_syncobj_waiter *w;
	bool signalled, destroyed, fired;
};

/* Did waiter o fire (POLLIN now)? */
static bool
fired(const struct one *o, int timeout_ms)
{
	return vm_poll(sb_syncobj_waiter_get_fd(o->w), POLLIN, timeout_ms) & POLLIN;
}


/* The fork case (fallback): 0 in the child when all was well. */
static int
child_after_fork(int drm, struct sb_syncobj_waiter *inherited)
{
	struct sb_syncobj_waiter *w = NULL;
	uint32_t h = 0;
	int ok;

	if (drmSyncobjCreate(drm, 0, &h) != 0 || sb_syncobj_waiter_create(drm, h, 1, 0, &w) != 0)
		return 2;
	if (sb_syncobj_signal(drm, h, 1) != 0)
		return 3;
	ok = vm_poll(sb_syncobj_waiter_get_fd(w), POLLIN, 10000) & POLLIN;
	sb_syncobj_waiter_destroy(w);
	sb_syncobj_waiter_destroy(inherited);
	drmSyncobjDestroy(drm, h);
	return ok ? 0 : 4;
}

static void
fork_case(int drm)
{
	struct sb_syncobj_waiter *w = NULL;
	uint32_t h = 0;
	int status = -1;
	pid_t pid;

	REQUIRE(drmSyncobjCreate(drm, 0, &h) == 0, "drmSyncobjCreate");
	REQUIRE(sb_syncobj_waiter_create(drm, h, 1, 0, &w) == 0, "the parent's waiter");
	/*
	 * fork() only once the parent's hub thread sleeps in its DRM wait.
	 * Started just now, it may still be allocating (its first wait, or
	 * AddressSanitizer's own set-up of a new thread), and a child forked
	 * then inherits the allocator's lock held: glibc's malloc takes its
	 * locks around fork(), GCC 12's libasan does not (LLVM's asan only
	 * since llvm/llvm-project#75290, December 2023). The child here
	 * allocates (it creates waiters), as glibc allows; under ASan it hung
	 * 2 runs in 16 before this wait, its new hub thread blocked in
	 * SizeClassAllocator64::GetFromAllocator.
	 */
	REQUIRE(sbk_threads_wait_in_syscall(SYS_ioctl, 5 * INT64_C(1000000000)) == 0,
		"the parent's hub thread sleeps in its wait");
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0)
		_exit(child_after_fork(drm, w));
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "fork: the child's waiter fired and the inherited one was destroyed (status 0x%x)",
	      status);
	CHECK_EQ(sb_syncobj_signal(drm, h, 1), 0, "signal the parent's point");
	CHECK(vm_poll(sb_syncobj_waiter_get_fd(w), POLLIN, 10000) & POLLIN,
	      "fork: the parent's waiter still fires");
	sb_syncobj_waiter_destroy(w);
	drmSyncobjDestroy(drm, h);
}

int
main(int argc, char **argv)
{
	static struct one all[N];
	bool fallback = vm_has_arg(argc, argv, "--fallback");
	uint64_t rng = 0x5eed5b00c0ffeeULL;
	unsigned order[N], early = 0, stray = 0;
	int drm, base_fds, base_threads, with_threads, want;

	if (fallback)
		setenv("SYNCBRIDGE_SYNCOBJ_EVENTFD", "0", 1);
	drm = vm_require_syncobj_node();
	if (!fallback && !sbk_drm_has_syncobj_eventfd(drm))
		tb_skip("the kernel has no DRM_IOCTL_SYNCOBJ_EVENTFD (--fallback covers this kernel)");
	for (unsigned i = 0; i < N; i++) {
		struct one *o = &all[i];

		REQUIRE(drmSyncobjCreate(drm, 0, &o->handle) == 0, "drmSyncobjCreate");
		o->point = i < N_TIMELINE ? 1 + i % 7 : 0;
		o->flags = i >= N_TIMELINE + N_BINARY ? SB_SYNCOBJ_WAIT_AVAILABLE : 0;
		if (o->flags)
			o->point = 2;
	}
	if (fallback)
		fork_case(drm);
	base_fds = tb_count_fds();
	/*
	 * The main thread alone, once fork_case()'s hub thread is gone from
	 * /proc (joined is not yet gone: sbk_thread_count_wait()). Counted
	 * while it lingered, the base was one too many: "threads for 200
	 * waiters: 3, want 4" in a CI run.
	 */
	base_threads = sbk_thread_count_wait(1, 2 * INT64_C(1000000000));

	for (unsigned i = 0; i < N; i++) {
		int ret = sb_syncobj_waiter_create(drm, all[i].handle, all[i].point, all[i].flags,
						   &all[i].w);

		REQUIRE(ret == 0, "waiter %u: %s", i, strerror(-ret));
		CHECK(sb_syncobj_waiter_uses_eventfd(all[i].w) == !fallback, "waiter %u's path", i);
	}
	with_threads = sbk_thread_count();
	/* ceil(180 / 64) + ceil(20 / 64): HUB_MAX_WAITERS in syncobj_hub.c */
	want = base_threads + (fallback ? 3 + 1 : 0);
	tb_note("threads: %d before, %d with %d waiters (%s path)", base_threads, with_threads, N,
		     fallback ? "fallback" : "eventfd");
	CHECK(with_threads == want, "%s threads for %d waiters: %d, want %d",
	      fallback ? "shared threads, 64 waiters each," : "no", N, with_threads - base_threads,
	      want - base_threads);
	for (unsigned i = 0; i < N; i++)
		early += fired(&all[i], 0);
	CHECK_EQ(early, 0, "no waiter fired before its point signalled");

	/* A shuffled order of signals. */
	for (unsigned i = 0; i < N; i++)
		order[i] = i;
	for (unsigned i = N - 1; i > 0; i--) {
		unsigned j = (unsigned)(tb_xorshift64(&rng) % (i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}

	/* One syncobj destroyed under its (fallback) waiter: it fires with -ENOENT. */
	if (fallback) {
		struct one *o = &all[order[N - 1]];

		REQUIRE(drmSyncobjDestroy(drm, o->handle) == 0, "destroy a waited-on syncobj");
		o->handle = 0;
		CHECK(fired(o, 10000), "the waiter of a destroyed syncobj fires");
		CHECK_EQ(sb_syncobj_waiter_get_error(o->w), -ENOENT, "with -ENOENT");
		o->fired = true;
	}

	for (unsigned k = 0; k < N; k++) {
		struct one *o = &all[order[k]];

		if (!o->handle)
			continue;
		if (k % 10 == 5) {
			/* Destroyed while pending: out of the shared wait. */
			sb_syncobj_waiter_destroy(o->w);
			o->w = NULL;
			o->destroyed = true;
			continue;
		}
		/* For AVAILABLE, signalling the point also materialises it. */
		CHECK_EQ(sb_syncobj_signal(drm, o->handle, o->point), 0, "signal");
		o->signalled = true;
		o->fired = fired(o, 10000);
		CHECK(o->fired, "waiter %u fires after its signal", order[k]);
		/* Every tenth signal: no pending waiter fired along with it. */
		if (k % 10 == 0)
			for (unsigned i = 0; i < N; i++)
				if (all[i].w && !all[i].signalled && !all[i].fired && all[i].handle)
					stray += fired(&all[i], 0);
	}
	CHECK_EQ(stray, 0, "no waiter fired for another's signal");
	for (unsigned i = 0; i < N; i++) {
		if (!all[i].w)
			continue;
		uint64_t v = 0;

		CHECK(read(sb_syncobj_waiter_get_fd(all[i].w), &v, sizeof(v)) == sizeof(v) && v == 1,
		      "waiter %u: fired exactly once (counter %llu)", i, (unsigned long long)v);
		if (all[i].handle)
			CHECK(sb_syncobj_waiter_get_error(all[i].w) == 0, "waiter %u: no error", i);
		sb_syncobj_waiter_destroy(all[i].w);
	}
	CHECK_EQ(sbk_thread_count_wait(base_threads, 2 * INT64_C(1000000000)), base_threads,
		 "the shared threads stop with the last waiter");
	CHECK_EQ(tb_count_fds(), base_fds, "waiters leave no fd behind");
	for (unsigned i = 0; i < N; i++)
		if (all[i].handle)
			drmSyncobjDestroy(drm, all[i].handle);
	close(drm);
	return tb_finish();
}
