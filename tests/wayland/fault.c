/* SPDX-License-Identifier: MIT */
/*
 * fault-wl (VM tier): both Wayland helpers under failing kernel and libc
 * calls (docs/reliability.md, "fault-wl"). libsbfault is scoped to one
 * helper library (and the static core inside it) and counts one thread only.
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
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <drm.h>
#include <sys/ioctl.h>

#include <syncbridge/syncbridge.h>
#include <syncbridge/wayland-client.h>
#include <wayland-server-core.h>

#include "sbfault.h"
#include "fd_snapshot.h"
#include "harness.h"
#include "kernel.h"
#include "wlt.h"

#define SERVER_SCOPE "libsyncbridge-wayland-server"
#define CLIENT_SCOPE "libsyncbridge-wayland-client"
#define BOUND (2000 * WLT_MS)

static struct wlt_comp comp;
static int vgem = -1, vgem_render = -1, client_drm = -1, comp_drm = -1;
static struct sbk_buf buf;
static bool quick, all_errnos;

/* ---- the compositor's sb_wl_commit_release(), checked ---------------------- */

static int (*real_commit_release)(struct sb_wl_commit *, int);
static atomic_uint release_errors, release_undocumented;

/* The hold of the compositor thread after a release (see the top of the file). */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static bool hold_next_release, holding;

/* Let a held compositor thread go on, and hold none later. Any thread. */
static void
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

static void
syncobj_free(uint32_t h)
{
	struct drm_syncobj_destroy d = { .handle = h };

	if (h)
		ioctl(client_drm, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
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
static void
settle(void)
{
	wlt_comp_call(&comp, noop_cb, NULL);
	if (!render_fences)
		return;
	pthread_mutex_lock(&comp.lock);
	int64_t end = wlt_now_ns() + 30000 * WLT_MS;
	while (comp.n_render_done < comp.n_used && wlt_now_ns() < end) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * WLT_MS;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&comp.cond, &comp.lock, &ts);
	}
	int done = comp.n_render_done, used = comp.n_used;
	pthread_mutex_unlock(&comp.lock);
	REQUIRE(done >= used, "every render fence of the compositor fired (%d of %d)", done, used);
	wlt_comp_call(&comp, noop_cb, NULL);
}

/* ---- compositor helper cases --------------------------------------------------- */

enum proto { V1, SYNCOBJ };
enum when { SIGNALLED, PENDING, UNMATERIALISED };

struct srv_scenario {
	const char *name;
	enum proto proto;
	enum when when;
	bool destroy_surface;
	bool client_gone;
};

static const struct srv_scenario srv_scenarios[] = {
	{ "v1-pending", V1, PENDING, false, false },
	{ "v1-signalled", V1, SIGNALLED, false, false },
	{ "syncobj-pending", SYNCOBJ, PENDING, false, false },
	{ "syncobj-signalled", SYNCOBJ, SIGNALLED, false, false },
	{ "syncobj-unmaterialised", SYNCOBJ, UNMATERIALISED, false, false },
	{ "v1-surface-destroyed", V1, PENDING, true, false },
	{ "syncobj-surface-destroyed", SYNCOBJ, UNMATERIALISED, true, false },
	{ "client-gone", V1, PENDING, false, true },
};
#define N_SRV ((int)(sizeof(srv_scenarios) / sizeof(srv_scenarios[0])))

enum outcome { KEPT, REPORTED, BROKEN };
static const char *const outcome_names[] = { "kept", "reported", "BROKEN" };

struct v1_release {
	struct zwp_linux_buffer_release_v1 *proxy; /* NULL once an event destroyed it */
	bool arrived, fenced;
};

static void
v1_fenced(void *data, struct zwp_linux_buffer_release_v1 *r, int32_t fd)
{
	struct v1_release *rel = data;

	rel->arrived = rel->fenced = true;
	close(fd);
	zwp_linux_buffer_release_v1_destroy(r);
	rel->proxy = NULL;
}

static void
v1_immediate(void *data, struct zwp_linux_buffer_release_v1 *r)
{
	struct v1_release *rel = data;

	rel->arrived = true;
	zwp_linux_buffer_release_v1_destroy(r);
	rel->proxy = NULL;
}

static const struct zwp_linux_buffer_release_v1_listener v1_release_listener = {
	.fenced_release = v1_fenced,
	.immediate_release = v1_immediate,
};

/* One surface's commit with its explicit-sync objects. */
struct commit_objs {
	enum proto proto;
	struct wl_surface *surf;
	struct wl_buffer *wb;
	struct zwp_linux_surface_synchronization_v1 *sync;
	struct v1_release rel;
	struct wp_linux_drm_syncobj_surface_v1 *so;
	struct wp_linux_drm_syncobj_timeline_v1 *acq_tl, *rel_tl;
	uint32_t acq_h, rel_h;
	struct sbk_fence f;
	bool have_fence;
};

static void
objs_commit(struct wlt_client *c, struct commit_objs *o, enum proto proto, enum when when)
{
	memset(o, 0, sizeof(*o));
	o->proto = proto;
	o->have_fence = when != UNMATERIALISED;
	if (o->have_fence) {
		REQUIRE(sbk_fence_create(vgem, true, &o->f) == 0, "vgem fence");
		if (when == SIGNALLED)
			REQUIRE(sbk_fence_signal(&o->f) == 0, "signal");
	}
	o->surf = wl_compositor_create_surface(c->compositor);
	o->wb = wlt_dmabuf_buffer(c, buf.fd, 16, 16, 64);
	wl_surface_attach(o->surf, o->wb, 0, 0);
	if (proto == SYNCOBJ) {
		o->so = wp_linux_drm_syncobj_manager_v1_get_surface(c->syncobj, o->surf);
		o->acq_h = wlt_syncobj_create(client_drm);
		o->rel_h = wlt_syncobj_create(client_drm);
		o->acq_tl = wlt_timeline_import(c, client_drm, o->acq_h);
		o->rel_tl = wlt_timeline_import(c, client_drm, o->rel_h);
		if (o->have_fence)
			REQUIRE(sb_syncobj_import_sync_file(client_drm, o->acq_h, 1, o->f.sync_file) == 0,
				"import the acquire fence");
		wp_linux_drm_syncobj_surface_v1_set_acquire_point(o->so, o->acq_tl, 0, 1);
		wp_linux_drm_syncobj_surface_v1_set_release_point(o->so, o->rel_tl, 0, 1);
	} else {
		struct zwp_linux_buffer_release_v1 *r;

		o->sync = zwp_linux_explicit_synchronization_v1_get_synchronization(c->explicit_sync,
										      o->surf);
		zwp_linux_surface_synchronization_v1_set_acquire_fence(o->sync, o->f.sync_file);
		r = zwp_linux_surface_synchronization_v1_get_release(o->sync);
		zwp_linux_buffer_release_v1_add_listener(r, &v1_release_listener, &o->rel);
		o->rel.proxy = r;
	}
	wl_surface_commit(o->surf);
}

static void
objs_signal(struct commit_objs *o)
{
	if (o->have_fence)
		REQUIRE(sbk_fence_signal(&o->f) == 0, "signal");
	else
		REQUIRE(sb_syncobj_signal(client_drm, o->acq_h, 1) == 0, "signal point 1");
}

/*
 * Protocol objects first (the connection may be gone: they are only freed
 * then). keep_release: the v1 release object stays, for its event.
 */
static void
objs_destroy(struct commit_objs *o, bool keep_release)
{
	if (o->sync)
		zwp_linux_surface_synchronization_v1_destroy(o->sync);
	if (o->so) {
		wp_linux_drm_syncobj_surface_v1_destroy(o->so);
		wp_linux_drm_syncobj_timeline_v1_destroy(o->acq_tl);
		wp_linux_drm_syncobj_timeline_v1_destroy(o->rel_tl);
	}
	if (o->wb)
		wl_buffer_destroy(o->wb);
	if (o->surf)
		wl_surface_destroy(o->surf);
	o->sync = NULL, o->so = NULL, o->acq_tl = NULL, o->rel_tl = NULL;
	o->wb = NULL, o->surf = NULL;
	/* No request: the compositor destroys it with its event (or never, when it failed). */
	if (o->rel.proxy && !keep_release) {
		zwp_linux_buffer_release_v1_destroy(o->rel.proxy);
		o->rel.proxy = NULL;
	}
}

/* Free the proxies here only, sending nothing: the client is about to vanish with them. */
static void
objs_forget(struct commit_objs *o)
{
	struct wl_proxy *p[] = {
		(struct wl_proxy *)o->sync, (struct wl_proxy *)o->so, (struct wl_proxy *)o->acq_tl,
		(struct wl_proxy *)o->rel_tl, (struct wl_proxy *)o->wb, (struct wl_proxy *)o->surf,
		(struct wl_proxy *)o->rel.proxy,
	};

	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		if (p[i])
			wl_proxy_destroy(p[i]);
	o->sync = NULL, o->so = NULL, o->acq_tl = NULL, o->rel_tl = NULL;
	o->wb = NULL, o->surf = NULL, o->rel.proxy = NULL;
}

static void
objs_free_kernel(struct commit_objs *o)
{
	syncobj_free(o->acq_h);
	syncobj_free(o->rel_h);
	if (o->have_fence) {
		sbk_fence_signal(&o->f);
		sbk_fence_destroy(&o->f);
	}
}

static void
arm_cb(void *data)
{
	sbfault_arm_scoped(data, SERVER_SCOPE);
}

static void
disarm_cb(void *data)
{
	sbfault_disarm();
}

/* Whether the use recorded at index i came after t (or there is none). */
static bool
used_after(int i, int64_t t, int *status)
{
	struct sbwl_used u;

	pthread_mutex_lock(&comp.lock);
	u = comp.used[i];
	pthread_mutex_unlock(&comp.lock);
	*status = u.acquire_status;
	return u.time_ns >= t;
}

static bool
connection_failed(struct wlt_client *c, const char **iface, uint32_t *code)
{
	uint32_t id;

	if (wl_display_get_error(c->display)) {
		const struct wl_interface *intf = NULL;

		*code = wl_display_get_error(c->display) == EPROTO ?
			wl_display_get_protocol_error(c->display, &intf, &id) : 0;
		*iface = intf ? intf->name : "(connection)";
		return true;
	}
	return wlt_roundtrip_error(c, iface, code, &id) < 0;
}

static enum outcome
run_srv(const struct srv_scenario *sc, bool immediate, const char *sched, char *why, size_t why_len)
{
	struct wlt_client c;
	struct commit_objs o, o2;
	const char *iface = "";
	uint32_t code = 0;
	int n0 = wlt_comp_n_used(&comp), status = 0;
	int64_t t_signal = 0;
	bool failed, used;
	enum outcome out = KEPT;

	(void)immediate;
	snprintf(why, why_len, "-");
	REQUIRE(wlt_client_connect(&c, comp.socket) == 0, "connect");
	wlt_comp_call(&comp, arm_cb, (void *)sched);
	objs_commit(&c, &o, sc->proto, sc->when);
	if (sc->client_gone)
		objs_commit(&c, &o2, SYNCOBJ, UNMATERIALISED);
	failed = connection_failed(&c, &iface, &code);
	if (sc->when != SIGNALLED) {
		/*
		 * The commit was handled in the roundtrip; a wait that fires at once
		 * would show now. A negative-check window: a use after it is still
		 * caught below (used_after), none can fail a correct compositor.
		 */
		sbk_sleep_ns(5 * WLT_MS);
		if (!failed)
			failed = connection_failed(&c, &iface, &code);
		if (wlt_comp_n_used(&comp) != n0) {
			snprintf(why, why_len, "used before its fence signalled");
			out = BROKEN;
		}
		if (sc->destroy_surface && !failed) {
			objs_destroy(&o, true);
			failed = connection_failed(&c, &iface, &code);
		}
		if (sc->client_gone) {
			objs_forget(&o);
			objs_forget(&o2);
			wlt_client_disconnect(&c);
			c.display = NULL;
			/* Only a window: the hang-up is ordered before the signals by epoll (header). */
			sbk_sleep_ns(10 * WLT_MS);
		}
		t_signal = wlt_now_ns();
		objs_signal(&o);
		if (sc->client_gone)
			objs_signal(&o2);
	}
	if (sc->destroy_surface || sc->client_gone) {
		/* Never to be used: give a wrong use the time to show (a negative-check window). */
		sbk_sleep_ns(10 * WLT_MS);
		if (c.display && !failed)
			failed = connection_failed(&c, &iface, &code);
		used = wlt_comp_n_used(&comp) != n0;
		if (used && out == KEPT) {
			snprintf(why, why_len, "a discarded commit was used");
			out = BROKEN;
		}
		/* A discarded commit's buffer is released at once (or the client told). */
		if (out == KEPT && sc->destroy_surface && !failed && sc->proto == SYNCOBJ) {
			int r = sb_syncobj_wait(client_drm, o.rel_h, 1, BOUND, 0);
			if (r)
				failed = connection_failed(&c, &iface, &code);
			if (r && !failed) {
				snprintf(why, why_len, "discarded: release point not signalled: %s",
					 strerror(-r));
				out = BROKEN;
			}
		}
		if (out == KEPT && sc->destroy_surface && !failed && sc->proto == V1) {
			int64_t end = wlt_now_ns() + BOUND;
			while (!o.rel.arrived && wlt_now_ns() < end && wlt_dispatch_for(&c, 5 * WLT_MS) == 0)
				;
			if (!o.rel.arrived)
				failed = connection_failed(&c, &iface, &code);
			if (!o.rel.arrived && !failed) {
				snprintf(why, why_len, "discarded: no release within %d ms",
					 (int)(BOUND / WLT_MS));
				out = BROKEN;
			}
		}
	} else if (wlt_comp_wait_used(&comp, n0 + 1, failed ? 50 * WLT_MS : BOUND) == 0) {
		if (!used_after(n0, t_signal, &status)) {
			snprintf(why, why_len, "used before its fence signalled");
			out = BROKEN;
		}
		/* The release: within the bound, or the client was told. */
		if (out == KEPT && !failed) {
			if (sc->proto == V1) {
				int64_t end = wlt_now_ns() + BOUND;
				while (!o.rel.arrived && wlt_now_ns() < end &&
				       wlt_dispatch_for(&c, 5 * WLT_MS) == 0)
					;
				if (!o.rel.arrived)
					failed = connection_failed(&c, &iface, &code);
				if (!o.rel.arrived && !failed) {
					snprintf(why, why_len, "no release within %d ms", (int)(BOUND / WLT_MS));
					out = BROKEN;
				}
			} else {
				int r = sb_syncobj_wait(client_drm, o.rel_h, 1, BOUND, 0);
				if (r)
					failed = connection_failed(&c, &iface, &code);
				if (r && !failed) {
					snprintf(why, why_len, "release point not signalled: %s", strerror(-r));
					out = BROKEN;
				}
			}
		}
	} else if (!failed) {
		failed = connection_failed(&c, &iface, &code);
		if (!failed) {
			snprintf(why, why_len, "neither used nor reported within %d ms",
				 (int)(BOUND / WLT_MS));
			out = BROKEN;
		}
	}
	if (out == KEPT && failed) {
		out = REPORTED;
		snprintf(why, why_len, "%s error %u", iface, code);
	} else if (out == KEPT && status) {
		snprintf(why, why_len, "acquire status %d", status);
	}
	if (c.display) {
		objs_destroy(&o, false);
		if (sc->client_gone)
			objs_destroy(&o2, false);
		wlt_client_disconnect(&c);
	}
	objs_free_kernel(&o);
	if (sc->client_gone)
		objs_free_kernel(&o2);
	return out;
}

static int cases, n_kept, n_reported;

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

static void
srv_case(const struct srv_scenario *sc, bool immediate, const char *sched, bool invisible)
{
	struct sb_fd_snapshot before;
	char what[160], why[128];
	int bad_fd = -1;
	unsigned rel_err0 = atomic_load(&release_errors);
	unsigned rel_undoc0 = atomic_load(&release_undocumented);
	enum outcome o;

	snprintf(what, sizeof(what), "server %s%s [%s]", sc->name, immediate ? " (immediate)" : "",
		 sched);
	REQUIRE(sb_fd_snapshot_take(&before) == 0, "snapshot");
	o = run_srv(sc, immediate, sched, why, sizeof(why));
	settle();
	wlt_comp_call(&comp, disarm_cb, NULL);
	cases++;
	n_kept += o == KEPT;
	n_reported += o == REPORTED;
	sb_test_note("%s: %s (%s)%s", what, outcome_names[o], why,
		     atomic_load(&release_errors) != rel_err0 ? " [sb_wl_commit_release failed]" : "");
	CHECK(o != BROKEN, "%s: ordering kept or the failure reported (%s)", what, why);
	if (invisible)
		CHECK(o == KEPT, "%s: a retried errno changes nothing", what);
	CHECK(atomic_load(&release_undocumented) == rel_undoc0,
	      "%s: sb_wl_commit_release() failed only with a documented error", what);
	check_hit(what);
	CHECK_EQ(sbfault_bad_closes(&bad_fd), 0, "no close() of a closed fd");
	sb_fd_snapshot_check(&before, NULL, 0, what);
	sb_fd_snapshot_free(&before);
}

#define MAX_IOCTLS 64

struct counts {
	unsigned ioctl, eventfd, dup, pthread_create;
	unsigned long req[MAX_IOCTLS]; /* the dry run's ioctl requests, in order */
};

static void
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
static void
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

struct srv_ctx {
	const struct srv_scenario *sc;
	bool immediate;
};

static void
srv_case_fn(const void *ctx, const char *sched, bool invisible)
{
	const struct srv_ctx *x = ctx;

	srv_case(x->sc, x->immediate, sched, invisible);
}

static void
start_comp(bool immediate)
{
	struct sbwl_comp_options opt;
	int ret;

	memset(&opt, 0, sizeof(opt));
	opt.drm_fd = comp_drm;
	opt.vgem_fd = immediate ? -1 : vgem_render;
	opt.render_delay_ms = 5;
	render_fences = !immediate;
	ret = wlt_comp_start(&comp, &opt);
	REQUIRE(ret == 0, "start the compositor: %s", strerror(-ret));
}

static void
server_part(void)
{
	for (int immediate = 0; immediate <= 1; immediate++) {
		start_comp(immediate);
		for (int s = 0; s < N_SRV; s++) {
			const struct srv_scenario *sc = &srv_scenarios[s];
			struct srv_ctx ctx = { sc, immediate };
			struct counts n;
			char why[128];
			enum outcome o;

			/* Release paths only differ with immediate release. */
			if (immediate && (sc->destroy_surface || sc->client_gone || sc->when == SIGNALLED))
				continue;
			/*
			 * The suite's run (cost): syncobj-signalled's sites are a subset of
			 * syncobj-pending's, and the immediate unmaterialised run's of the
			 * immediate pending and the unmaterialised runs'. --all runs them.
			 */
			if (!all_errnos && ((!immediate && sc->proto == SYNCOBJ && sc->when == SIGNALLED) ||
					    (immediate && sc->when == UNMATERIALISED)))
				continue;
			for (int thread = 0; thread <= (sc->when == UNMATERIALISED && !immediate); thread++) {
				if (thread)
					setenv("SYNCBRIDGE_SYNCOBJ_EVENTFD", "0", 1);

				o = run_srv(sc, immediate, "", why, sizeof(why));
				settle();
				wlt_comp_call(&comp, disarm_cb, NULL);
				counts_read(&n);
				REQUIRE(o == KEPT, "server %s dry run: %s (%s)", sc->name, outcome_names[o], why);
				sb_test_note("server %s%s%s: the helper made ioctl=%u eventfd=%u dup=%u "
					     "pthread_create=%u", sc->name, immediate ? " (immediate release)" : "",
					     thread ? " (waiter thread)" : "", n.ioctl, n.eventfd, n.dup,
					     n.pthread_create);
				for (unsigned i = 0; i < n.ioctl && i < 32; i++)
					sb_test_note("  ioctl %u: 0x%lx", i + 1, sbfault_ioctl_request(i));
				if (n.ioctl + n.eventfd + n.dup + n.pthread_create == 0)
					sb_test_note("server %s: nothing counted in %s (under ASan its "
						     "interceptors hide the caller)", sc->name, SERVER_SCOPE);
				fail_each(&n, srv_case_fn, &ctx);
				if (thread)
					unsetenv("SYNCBRIDGE_SYNCOBJ_EVENTFD");
			}
		}
		wlt_comp_stop(&comp);
	}
}

/* ---- client helper cases ------------------------------------------------------- */

struct cli_scenario {
	const char *name;
	uint32_t flags; /* sb_wl_client_create() */
	enum sb_wl_client_protocol want;
	bool point;     /* set_acquire_point instead of set_acquire_fence */
};

static const struct cli_scenario cli_scenarios[] = {
	{ "syncobj-fence", 0, SB_WL_CLIENT_DRM_SYNCOBJ, false },
	{ "syncobj-point", 0, SB_WL_CLIENT_DRM_SYNCOBJ, true },
	{ "v1-fence", SB_WL_CLIENT_NO_DRM_SYNCOBJ, SB_WL_CLIENT_EXPLICIT_V1, false },
	{ "v1-point", SB_WL_CLIENT_NO_DRM_SYNCOBJ, SB_WL_CLIENT_EXPLICIT_V1, true },
};
#define N_CLI ((int)(sizeof(cli_scenarios) / sizeof(cli_scenarios[0])))

/* The documented errors (include/syncbridge/wayland-client.h); 0-terminated. */
static const int doc_create[] = { -EINVAL, -EBADF, -EPIPE, -ENOMEM, 0 };
static const int doc_release_get_fence[] = { -EAGAIN, -EPIPE, -ENOMEM, -EMFILE, 0 };
static const int doc_release_wait[] = { -ETIME, -EPIPE, -ENOMEM, -EINVAL, 0 };
static const int doc_set_point[] = { -EAGAIN, -ENODEV, -EINVAL, -ENOENT, -ENOMEM, -EMFILE,
				    -EOPNOTSUPP, 0 };
/* "-EINVAL, -ENOMEM, or a negative errno from creating the acquire timeline" etc. */
static const int doc_any[] = { 1, 0 };

static bool
documented(const int *errs, int ret)
{
	if (errs[0] == 1)
		return ret < 0;
	for (int i = 0; errs[i]; i++)
		if (errs[i] == ret)
			return true;
	return false;
}

struct cli_result {
	const char *failed_call; /* the first call that failed, or NULL */
	int ret;
	bool broken;
	char why[128];
};

/*
 * A call of the helper: on failure record it, check its result, disarm and
 * retry it (an application would: the failure was transient). out_check: the
 * outputs are -1/NULL.
 */
#define CALL(res, name, docs, expr, outputs_reset)                                       \
	do {                                                                              \
		int r_ = (expr);                                                          \
		if (r_ != 0) {                                                            \
			if (!(res)->failed_call) {                                        \
				(res)->failed_call = name;                                \
				(res)->ret = r_;                                          \
			}                                                                 \
			CHECK(documented(docs, r_), "%s: %d (%s) is documented", name, r_, \
			      strerror(-r_));                                             \
			CHECK(outputs_reset, "%s failed: its outputs are -1/NULL", name); \
			sbfault_disarm();                                                 \
			r_ = (expr);                                                      \
			REQUIRE(r_ == 0, "%s retried without faults: %d", name, r_);     \
		}                                                                         \
	} while (0)

static bool
is_sync_file(int fd)
{
	char path[64], target[64];
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	len = readlink(path, target, sizeof(target) - 1);
	if (len < 0)
		return false;
	target[len] = '\0';
	return strcmp(target, "anon_inode:sync_file") == 0;
}

/*
 * libsbfault's poll hook on this thread: the client helper is about to poll
 * a sync_file (the release fence, in sb_wl_release_wait(), after its first
 * check found it pending): let the compositor go on, so that its timer
 * signals the render fence now and the wait's second check sees it signalled.
 */
static void
end_hold_at_fence_poll(const struct pollfd *fds, unsigned long nfds, void *data)
{
	(void)data;
	for (unsigned long i = 0; i < nfds; i++) {
		if (is_sync_file(fds[i].fd)) {
			hold_end();
			return;
		}
	}
}

static void
run_cli(const struct cli_scenario *sc, const char *sched, struct cli_result *res)
{
	struct wlt_client c;
	struct sb_wl_client *cl = NULL;
	struct sb_wl_surface_sync *ss = NULL;
	struct sb_wl_release *rel = NULL;
	struct wl_surface *surf;
	struct wl_buffer *wb;
	struct sbk_fence f;
	uint32_t point_h = 0;
	int n0 = wlt_comp_n_used(&comp), fd = -1, status = 0, r;
	int64_t t_signal;

	memset(res, 0, sizeof(*res));
	REQUIRE(wlt_client_connect(&c, comp.socket) == 0, "connect");
	REQUIRE(sbk_fence_create(vgem, true, &f) == 0, "vgem fence");
	if (sc->point) {
		point_h = wlt_syncobj_create(client_drm);
		REQUIRE(sb_syncobj_import_sync_file(client_drm, point_h, 1, f.sync_file) == 0, "import");
	}
	surf = wl_compositor_create_surface(c.compositor);
	wb = wlt_dmabuf_buffer(&c, buf.fd, 16, 16, 64);
	/*
	 * v1: the render fence stays pending until the client polls it (see the
	 * top of the file). linux-drm-syncobj waits in one DRM ioctl whatever the
	 * point's state, and without a poll nothing would end the hold.
	 */
	if (sc->want == SB_WL_CLIENT_EXPLICIT_V1) {
		pthread_mutex_lock(&hold_lock);
		hold_next_release = true;
		pthread_mutex_unlock(&hold_lock);
		sbfault_set_poll_hook(end_hold_at_fence_poll, NULL);
	}

	if (sched)
		sbfault_arm_scoped(sched, CLIENT_SCOPE);
	CALL(res, "sb_wl_client_create", doc_create,
	     sb_wl_client_create(c.display, client_drm, sc->flags, &cl), cl == NULL);
	CALL(res, "sb_wl_client_get_surface_sync", doc_any,
	     sb_wl_client_get_surface_sync(cl, surf, &ss), ss == NULL);
	wl_surface_attach(surf, wb, 0, 0);
	if (sc->point)
		CALL(res, "sb_wl_surface_sync_set_acquire_point", doc_set_point,
		     sb_wl_surface_sync_set_acquire_point(ss, point_h, 1, buf.fd), true);
	else
		CALL(res, "sb_wl_surface_sync_set_acquire_fence", doc_any,
		     sb_wl_surface_sync_set_acquire_fence(ss, f.sync_file, buf.fd), true);
	CALL(res, "sb_wl_surface_sync_get_release", doc_any,
	     sb_wl_surface_sync_get_release(ss, buf.fd, &rel), rel == NULL);
	wl_surface_commit(surf);
	wl_display_roundtrip(c.display);
	/* A negative-check window for a use before the signal (used_after below is causal). */
	sbk_sleep_ns(5 * WLT_MS);
	if (wlt_comp_n_used(&comp) != n0) {
		res->broken = true;
		snprintf(res->why, sizeof(res->why), "used before its fence signalled");
	}
	t_signal = wlt_now_ns();
	REQUIRE(sbk_fence_signal(&f) == 0, "signal");
	if (wlt_comp_wait_used(&comp, n0 + 1, BOUND) != 0) {
		res->broken = true;
		snprintf(res->why, sizeof(res->why), "not used within %d ms", (int)(BOUND / WLT_MS));
	} else if (!used_after(n0, t_signal, &status)) {
		res->broken = true;
		snprintf(res->why, sizeof(res->why), "used before its fence signalled");
	}
	if (!res->broken) {
		CALL(res, "sb_wl_release_wait", doc_release_wait, sb_wl_release_wait(rel, BOUND), true);
		CALL(res, "sb_wl_release_get_fence", doc_release_get_fence,
		     sb_wl_release_get_fence(rel, &fd), fd == -1);
		if (fd >= 0) {
			r = sb_sync_file_wait(fd, 0);
			CHECK(r == 0, "%s: the release fence has signalled after release_wait (%d)",
			      sc->name, r);
			close(fd);
		}
	}
	sb_wl_release_destroy(rel);
	sb_wl_surface_sync_destroy(ss);
	sb_wl_client_destroy(cl);
	sbfault_disarm();
	/* Whatever happened (a frame never used or waited for): no hold remains. */
	sbfault_set_poll_hook(NULL, NULL);
	hold_end();
	if (!res->broken && (r = wlt_dispatch_for(&c, 0)) != 0) {
		res->broken = true;
		snprintf(res->why, sizeof(res->why), "the connection failed (%d)", r);
	}
	wl_buffer_destroy(wb);
	wl_surface_destroy(surf);
	wl_display_roundtrip(c.display);
	wlt_client_disconnect(&c);
	sbk_fence_destroy(&f);
	syncobj_free(point_h);
}

static void
cli_case(const void *ctx, const char *sched, bool invisible)
{
	const struct cli_scenario *sc = ctx;
	struct sb_fd_snapshot before;
	struct cli_result res;
	char what[160];
	int bad_fd = -1;

	snprintf(what, sizeof(what), "client %s [%s]", sc->name, sched);
	REQUIRE(sb_fd_snapshot_take(&before) == 0, "snapshot");
	run_cli(sc, sched, &res);
	settle();
	cases++;
	n_kept += !res.failed_call && !res.broken;
	n_reported += res.failed_call && !res.broken;
	if (res.failed_call)
		sb_test_note("%s: %s -> %d (%s)%s%s", what, res.failed_call, res.ret, strerror(-res.ret),
			     res.broken ? ": BROKEN " : "", res.broken ? res.why : "");
	else
		sb_test_note("%s: kept%s%s", what, res.broken ? ": BROKEN " : "", res.broken ? res.why : "");
	CHECK(!res.broken, "%s: the frame is right after the failure (%s)", what, res.why);
	if (invisible)
		CHECK(!res.failed_call, "%s: a retried errno changes nothing", what);
	check_hit(what);
	CHECK_EQ(sbfault_bad_closes(&bad_fd), 0, "no close() of a closed fd");
	sb_fd_snapshot_check(&before, NULL, 0, what);
	sb_fd_snapshot_free(&before);
}

static void
client_part(void)
{
	start_comp(false);
	for (int s = 0; s < N_CLI; s++) {
		const struct cli_scenario *sc = &cli_scenarios[s];
		struct cli_result res;
		struct counts n;

		run_cli(sc, "", &res);
		settle();
		counts_read(&n);
		REQUIRE(!res.failed_call && !res.broken, "client %s dry run: %s %d %s", sc->name,
			res.failed_call ? res.failed_call : "-", res.ret, res.why);
		sb_test_note("client %s: the helper made ioctl=%u eventfd=%u dup=%u pthread_create=%u",
			     sc->name, n.ioctl, n.eventfd, n.dup, n.pthread_create);
		for (unsigned i = 0; i < n.ioctl && i < 32; i++)
			sb_test_note("  ioctl %u: 0x%lx", i + 1, sbfault_ioctl_request(i));
		if (n.ioctl + n.dup == 0)
			sb_test_note("client %s: nothing counted in %s (under ASan its interceptors "
				     "hide the caller)", sc->name, CLIENT_SCOPE);
		fail_each(&n, cli_case, sc);
	}
	wlt_comp_stop(&comp);
}

int
main(int argc, char **argv)
{
	bool server = true, client = true;
	int64_t t0 = wlt_now_ns();

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
		sb_test_skip("libsbfault is not loaded");
	/* The helpers' warnings go to the log. */
	setenv("SYNCBRIDGE_DEBUG", "warn", 0);
	vgem = sbk_vgem_open();
	vgem_render = sbk_vgem_open();
	if (vgem < 0 || vgem_render < 0)
		sb_test_skip("no vgem node: %s", strerror(-vgem));
	client_drm = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);
	comp_drm = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);
	if (client_drm < 0 || comp_drm < 0)
		sb_test_skip("no virtio_gpu render node (timeline syncobjs): run in the VM tier");
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, vgem, 16 * 64, &buf) == 0, "vgem buffer");

	if (server)
		server_part();
	if (client)
		client_part();

	sb_test_note("%d fault cases: %d kept, %d reported; %.1f s", cases, n_kept, n_reported,
		     (double)(wlt_now_ns() - t0) / 1e9);
	sbk_buf_destroy(&buf);
	close(vgem);
	close(vgem_render);
	close(client_drm);
	close(comp_drm);
	return sb_test_finish();
}
