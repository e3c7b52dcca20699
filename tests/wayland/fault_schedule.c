/* SPDX-License-Identifier: MIT */
/*
 * fault-wl's schedule (fault.c, "A schedule names a call..."): the dry run's
 * counts, each call failed in turn, the checks every case ends with; and
 * what the compositor and client cases share: the compositor (with its
 * checked sb_wl_commit_release() and the hold of its thread), settling it
 * between cases, the use records.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <drm.h>
#include <sys/ioctl.h>

#include <syncbridge/wayland-server.h>
#include <wayland-server-core.h>

#include "sbfault.h"
#include "fd_snapshot.h"
#include "harness.h"
#include "fault.h"

/* ---- the compositor ---------------------------------------------------------- */

/* ---- the compositor's sb_wl_commit_release(), checked ---------------------- */

static int (*real_commit_release)(struct sb_wl_commit *, int);
atomic_uint release_errors, release_undocumented;

/* The hold of the compositor thread after a release (see the top of the file). */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static bool hold_next_release, holding;

void
hold_next(void)
{
	pthread_mutex_lock(&hold_lock);
	hold_next_release = true;
	pthread_mutex_unlock(&hold_lock);
}

/* Let a held compositor thread go on, and hold none later. Any thread. */
void
hold_end(void)
{
	pthread_mutex_lock(&hold_lock);
	hold_next_release = false;
	holding = false;
	pthread_cond_broadcast(&hold_cond);
	pthread_mutex_unlock(&hold_lock);
}

/*
 * Ours comes first in symbol lookup for the example compositor (a static
 * library linked into this program): count failures and whether they are the
 * documented ones, and pass the result on. When a client case asked for it,
 * the compositor thread then stops here (in apply(), after the render fence's
 * timer was armed and before its event loop can run that timer) until
 * hold_end().
 */
int
sb_wl_commit_release(struct sb_wl_commit *commit, int fence_fd)
{
	struct wl_resource *surface = commit ? sb_wl_commit_get_surface(commit) : NULL;
	struct wl_client *client = surface ? wl_resource_get_client(surface) : NULL;
	int ret;

	if (!real_commit_release)
		real_commit_release = (__typeof__(real_commit_release))dlsym(RTLD_NEXT,
									     "sb_wl_commit_release");
	ret = real_commit_release(commit, fence_fd); /* frees commit on success */
	pthread_mutex_lock(&hold_lock);
	if (hold_next_release) {
		hold_next_release = false;
		/* The release event reaches the client now, not at the loop's next flush. */
		if (client)
			wl_client_flush(client);
		holding = true;
		while (holding)
			pthread_cond_wait(&hold_cond, &hold_lock);
	}
	pthread_mutex_unlock(&hold_lock);
	if (ret == 0)
		return 0;
	atomic_fetch_add(&release_errors, 1);
	if (ret != -EBADF && ret != -EINVAL)
		atomic_fetch_add(&release_undocumented, 1);
	return ret;
}

/* ---- small helpers ------------------------------------------------------------ */

void
syncobj_free(uint32_t h)
{
	struct drm_syncobj_destroy d = { .handle = h };

	if (h)
		ioctl(dev.client_drm, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
}

static void
noop_cb(void *data)
{
}

/* Whether the compositor makes a render fence per use (start_comp()). */
static bool render_fences;

/*
 * Until the compositor thread holds nothing more of the case, so that the fd
 * check compares the same moments in every run. It used to wait (at most 2 s)
 * for the fd count to come back; that is a race with the compositor's render
 * fence timers, which close their fences' fds render_delay_ms after each use.
 * Instead: the client's hang-up and everything before it are handled in order
 * before a call from the event loop; every render fence made for a use has
 * fired (the render_done hook, counted by wlt); and one more call, after the
 * last render_fence_fire() (and any deferred signal it woke) has closed what
 * it held. The bound only catches a compositor that hangs.
 */
void
settle(void)
{
	wlt_comp_call(&comp, noop_cb, NULL);
	if (!render_fences)
		return;
	wlt_comp_wait_renders(&comp, 30000 * WLT_MS);
	pthread_mutex_lock(&comp.lock);
	int done = comp.n_render_done, used = comp.n_used;
	pthread_mutex_unlock(&comp.lock);
	REQUIRE(done >= used, "every render fence of the compositor fired (%d of %d)", done, used);
	wlt_comp_call(&comp, noop_cb, NULL);
}

void
start_comp(bool immediate)
{
	struct wlc_comp_options opt;
	int ret;

	wlt_comp_options_init(&opt, &dev, immediate ? 0 : 5);
	render_fences = !immediate;
	ret = wlt_comp_start(&comp, &opt);
	REQUIRE(ret == 0, "start the compositor: %s", strerror(-ret));
}

/* Whether the use recorded at index i came after t (or there is none). */
bool
used_after(int i, int64_t t, int *status)
{
	struct wlc_used u;

	pthread_mutex_lock(&comp.lock);
	u = comp.used[i];
	pthread_mutex_unlock(&comp.lock);
	*status = u.acquire_status;
	return u.time_ns >= t;
}

/* ---- the schedule ------------------------------------------------------------- */

/*
 * The ioctl a case fails: its number among the armed calls and the request the
 * dry run saw there (0 for the other kinds). A case that hit a call with
 * another request faulted a different site than the one it names.
 */
static unsigned expect_n;
static unsigned long expect_req;

static void
check_hit(const char *what)
{
	unsigned long req;
	unsigned hit = sbfault_injected();

	CHECK(hit == 1, "%s: the fault was hit (the named call was made): %u injected", what, hit);
	if (!expect_req)
		return;
	req = sbfault_ioctl_request(expect_n - 1);
	CHECK(req == expect_req, "%s: ioctl %u is the dry run's request 0x%lx (got 0x%lx)", what,
	      expect_n, expect_req, req);
}

void
counts_read(struct counts *n)
{
	n->ioctl = sbfault_calls("ioctl");
	n->eventfd = sbfault_calls("eventfd");
	n->dup = sbfault_calls("dup");
	n->pthread_create = sbfault_calls("pthread_create");
	REQUIRE(n->ioctl <= MAX_IOCTLS, "at most %d ioctls per scenario (%u)", MAX_IOCTLS, n->ioctl);
	for (unsigned i = 0; i < n->ioctl; i++)
		n->req[i] = sbfault_ioctl_request(i);
}

static const char *const ioctl_errs[] = { "ENOMEM", "ENOTTY", "EINVAL", "EINTR", "EAGAIN" };
static unsigned rotation;

/*
 * Every call counted in `n`, failed through case_fn: ioctls with ENOMEM and
 * (the suite's run, to stay cheap) every other ioctl site of the program
 * with one of the other four in rotation, or (--all) with all five.
 */
void
fail_each(const struct counts *n, void (*case_fn)(const void *ctx, const char *sched, bool invisible),
	  const void *ctx)
{
	char sched[64];

	for (unsigned i = 1; i <= n->ioctl; i++) {
		unsigned r = rotation++;

		for (int e = 0; e < 5; e++) {
			if (e > 0 && (quick || (!all_errnos && (r % 2 != 0 || (unsigned)e != 1 + r / 2 % 4))))
				continue;
			snprintf(sched, sizeof(sched), "ioctl:%u:%s", i, ioctl_errs[e]);
			expect_n = i;
			expect_req = n->req[i - 1];
			case_fn(ctx, sched, e >= 3);
		}
	}
	expect_n = 0;
	expect_req = 0;
	for (unsigned i = 1; i <= n->eventfd; i++) {
		snprintf(sched, sizeof(sched), "eventfd:%u:EMFILE", i);
		case_fn(ctx, sched, false);
		snprintf(sched, sizeof(sched), "eventfd:%u:ENOMEM", i);
		case_fn(ctx, sched, false);
	}
	for (unsigned i = 1; i <= n->dup; i++) {
		snprintf(sched, sizeof(sched), "dup:%u:EMFILE", i);
		case_fn(ctx, sched, false);
	}
	for (unsigned i = 1; i <= n->pthread_create; i++) {
		snprintf(sched, sizeof(sched), "pthread_create:%u:EAGAIN", i);
		case_fn(ctx, sched, false);
	}
}

void
counts_note(const struct counts *n, const char *what, const char *scope)
{
	tb_note("%s: the helper made ioctl=%u eventfd=%u dup=%u pthread_create=%u", what, n->ioctl,
		     n->eventfd, n->dup, n->pthread_create);
	for (unsigned i = 0; i < n->ioctl && i < 32; i++)
		tb_note("  ioctl %u: 0x%lx", i + 1, n->req[i]);
	if (n->ioctl + n->eventfd + n->dup + n->pthread_create == 0)
		tb_note("%s: nothing counted in %s (under ASan its interceptors hide the caller)", what,
			     scope);
}

void
case_end(const char *what, struct tb_fd_snapshot *before)
{
	int bad_fd = -1;

	check_hit(what);
	CHECK_EQ(sbfault_bad_closes(&bad_fd), 0, "no close() of a closed fd");
	tb_fd_snapshot_check(before, NULL, 0, what);
	tb_fd_snapshot_free(before);
}

FAULT_CHECKS_FN(fault_schedule_checks)
