/* SPDX-License-Identifier: MIT */
/*
 * fault-wl, the compositor helper's cases (fault.c: "Compositor helper"):
 * the scenarios, each run dry and then with each of its calls failed in
 * turn (fault_schedule.c), armed on the compositor's thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <syncbridge/syncbridge.h>

#include "sbfault.h"
#include "fd_snapshot.h"
#include "harness.h"
#include "fault.h"

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

/* One surface's commit with its explicit-sync objects. */
struct commit_objs {
	enum proto proto;
	struct wl_surface *surf;
	struct wl_buffer *wb;
	struct zwp_linux_surface_synchronization_v1 *sync;
	struct wlt_release rel; /* v1; its fence closed on arrival */
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
		REQUIRE(sbk_fence_create(dev.vgem, true, &o->f) == 0, "vgem fence");
		if (when == SIGNALLED)
			REQUIRE(sbk_fence_signal(&o->f) == 0, "signal");
	}
	o->surf = wl_compositor_create_surface(c->compositor);
	o->wb = wlt_dmabuf_buffer(c, buf.fd, 16, 16, 64);
	wl_surface_attach(o->surf, o->wb, 0, 0);
	if (proto == SYNCOBJ) {
		o->so = wp_linux_drm_syncobj_manager_v1_get_surface(c->syncobj, o->surf);
		o->acq_h = wlt_syncobj_create(dev.client_drm);
		o->rel_h = wlt_syncobj_create(dev.client_drm);
		o->acq_tl = wlt_timeline_import(c, dev.client_drm, o->acq_h);
		o->rel_tl = wlt_timeline_import(c, dev.client_drm, o->rel_h);
		if (o->have_fence)
			REQUIRE(sb_syncobj_import_sync_file(dev.client_drm, o->acq_h, 1, o->f.sync_file) == 0,
				"import the acquire fence");
		wp_linux_drm_syncobj_surface_v1_set_acquire_point(o->so, o->acq_tl, 0, 1);
		wp_linux_drm_syncobj_surface_v1_set_release_point(o->so, o->rel_tl, 0, 1);
	} else {
		o->sync = zwp_linux_explicit_synchronization_v1_get_synchronization(c->explicit_sync,
										      o->surf);
		zwp_linux_surface_synchronization_v1_set_acquire_fence(o->sync, o->f.sync_file);
		wlt_release_get(&o->rel, o->sync, true);
	}
	wl_surface_commit(o->surf);
}

static void
objs_signal(struct commit_objs *o)
{
	if (o->have_fence)
		REQUIRE(sbk_fence_signal(&o->f) == 0, "signal");
	else
		REQUIRE(sb_syncobj_signal(dev.client_drm, o->acq_h, 1) == 0, "signal point 1");
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

/*
 * The commit's release (v1: its event; syncobj: its point signalled) within
 * BOUND, or else the client was told (*failed, with the error). False, with
 * why, when neither came.
 */
static bool
released(struct wlt_client *c, struct commit_objs *o, bool *failed, const char **iface, uint32_t *code,
	 const char *prefix, char *why, size_t why_len)
{
	if (o->proto == V1) {
		int64_t end = now_ns() + BOUND;

		while (!o->rel.arrived && now_ns() < end && wlt_dispatch_for(c, 5 * WLT_MS) == 0)
			;
		if (o->rel.arrived)
			return true;
		*failed = connection_failed(c, iface, code);
		if (!*failed)
			snprintf(why, why_len, "%sno release within %d ms", prefix, (int)(BOUND / WLT_MS));
		return *failed;
	}
	int r = sb_syncobj_wait(dev.client_drm, o->rel_h, 1, BOUND, 0);

	if (r == 0)
		return true;
	*failed = connection_failed(c, iface, code);
	if (!*failed)
		snprintf(why, why_len, "%srelease point not signalled: %s", prefix, strerror(-r));
	return *failed;
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
		t_signal = now_ns();
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
		if (out == KEPT && sc->destroy_surface && !failed &&
		    !released(&c, &o, &failed, &iface, &code, "discarded: ", why, why_len))
			out = BROKEN;
	} else if (wlt_comp_wait_used(&comp, n0 + 1, failed ? 50 * WLT_MS : BOUND) == 0) {
		if (!used_after(n0, t_signal, &status)) {
			snprintf(why, why_len, "used before its fence signalled");
			out = BROKEN;
		}
		/* The release: within the bound, or the client was told. */
		if (out == KEPT && !failed && !released(&c, &o, &failed, &iface, &code, "", why, why_len))
			out = BROKEN;
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

static void
srv_case(const struct srv_scenario *sc, bool immediate, const char *sched, bool invisible)
{
	struct tb_fd_snapshot before;
	char what[160], why[128];
	unsigned rel_err0 = atomic_load(&release_errors);
	unsigned rel_undoc0 = atomic_load(&release_undocumented);
	enum outcome o;

	snprintf(what, sizeof(what), "server %s%s [%s]", sc->name, immediate ? " (immediate)" : "",
		 sched);
	REQUIRE(tb_fd_snapshot_take(&before) == 0, "snapshot");
	o = run_srv(sc, immediate, sched, why, sizeof(why));
	settle();
	wlt_comp_call(&comp, disarm_cb, NULL);
	cases++;
	n_kept += o == KEPT;
	n_reported += o == REPORTED;
	tb_note("%s: %s (%s)%s", what, outcome_names[o], why,
		     atomic_load(&release_errors) != rel_err0 ? " [sb_wl_commit_release failed]" : "");
	CHECK(o != BROKEN, "%s: ordering kept or the failure reported (%s)", what, why);
	if (invisible)
		CHECK(o == KEPT, "%s: a retried errno changes nothing", what);
	CHECK(atomic_load(&release_undocumented) == rel_undoc0,
	      "%s: sb_wl_commit_release() failed only with a documented error", what);
	case_end(what, &before);
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

void
server_part(void)
{
	for (int immediate = 0; immediate <= 1; immediate++) {
		start_comp(immediate);
		for (int s = 0; s < N_SRV; s++) {
			const struct srv_scenario *sc = &srv_scenarios[s];
			struct srv_ctx ctx = { sc, immediate };
			struct counts n;
			char why[128], what[128];
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
				snprintf(what, sizeof(what), "server %s%s%s", sc->name,
					 immediate ? " (immediate release)" : "", thread ? " (waiter thread)" : "");
				counts_note(&n, what, SERVER_SCOPE);
				fail_each(&n, srv_case_fn, &ctx);
				if (thread)
					unsetenv("SYNCBRIDGE_SYNCOBJ_EVENTFD");
			}
		}
		wlt_comp_stop(&comp);
	}
}

FAULT_CHECKS_FN(fault_server_checks)
