/* SPDX-License-Identifier: MIT */
/*
 * fault-wl, the client helper's cases (fault.c: "Client helper"): one frame
 * through the whole public API per protocol, each call of the helper failed
 * in turn (fault_schedule.c), armed on this thread.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <syncbridge/syncbridge.h>
#include <syncbridge/wayland-client.h>

#include "sbfault.h"
#include "fd_snapshot.h"
#include "harness.h"
#include "fault.h"

struct cli_scenario {
	const char *name;
	uint32_t flags; /* sb_wl_client_create() */
	enum sb_wl_sync_protocol want;
	bool point;     /* set_acquire_point instead of set_acquire_fence */
};

static const struct cli_scenario cli_scenarios[] = {
	{ "syncobj-fence", 0, SB_WL_SYNC_DRM_SYNCOBJ, false },
	{ "syncobj-point", 0, SB_WL_SYNC_DRM_SYNCOBJ, true },
	{ "v1-fence", SB_WL_CLIENT_NO_DRM_SYNCOBJ, SB_WL_SYNC_EXPLICIT_V1, false },
	{ "v1-point", SB_WL_CLIENT_NO_DRM_SYNCOBJ, SB_WL_SYNC_EXPLICIT_V1, true },
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
	REQUIRE(sbk_fence_create(dev.vgem, true, &f) == 0, "vgem fence");
	if (sc->point) {
		point_h = wlt_syncobj_create(dev.client_drm);
		REQUIRE(sb_syncobj_import_sync_file(dev.client_drm, point_h, 1, f.sync_file) == 0, "import");
	}
	surf = wl_compositor_create_surface(c.compositor);
	wb = wlt_dmabuf_buffer(&c, buf.fd, 16, 16, 64);
	/*
	 * v1: the render fence stays pending until the client polls it (see the
	 * top of the file). linux-drm-syncobj waits in one DRM ioctl whatever the
	 * point's state, and without a poll nothing would end the hold.
	 */
	if (sc->want == SB_WL_SYNC_EXPLICIT_V1) {
		hold_next();
		sbfault_set_poll_hook(end_hold_at_fence_poll, NULL);
	}

	if (sched)
		sbfault_arm_scoped(sched, CLIENT_SCOPE);
	CALL(res, "sb_wl_client_create", doc_create,
	     sb_wl_client_create(c.display, dev.client_drm, sc->flags, &cl), cl == NULL);
	CALL(res, "sb_wl_surface_sync_create", doc_any,
	     sb_wl_surface_sync_create(cl, surf, &ss), ss == NULL);
	wl_surface_attach(surf, wb, 0, 0);
	if (sc->point)
		CALL(res, "sb_wl_surface_sync_set_acquire_point", doc_set_point,
		     sb_wl_surface_sync_set_acquire_point(ss, point_h, 1, buf.fd), true);
	else
		CALL(res, "sb_wl_surface_sync_set_acquire_fence", doc_any,
		     sb_wl_surface_sync_set_acquire_fence(ss, f.sync_file, buf.fd), true);
	CALL(res, "sb_wl_release_create", doc_any,
	     sb_wl_release_create(ss, buf.fd, &rel), rel == NULL);
	wl_surface_commit(surf);
	wl_display_roundtrip(c.display);
	/* A negative-check window for a use before the signal (used_after below is causal). */
	sbk_sleep_ns(5 * WLT_MS);
	if (wlt_comp_n_used(&comp) != n0) {
		res->broken = true;
		snprintf(res->why, sizeof(res->why), "used before its fence signalled");
	}
	t_signal = now_ns();
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
		CALL(res, "sb_wl_release_export_fence", doc_release_get_fence,
		     sb_wl_release_export_fence(rel, &fd), fd == -1);
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
	struct tb_fd_snapshot before;
	struct cli_result res;
	char what[160];

	snprintf(what, sizeof(what), "client %s [%s]", sc->name, sched);
	REQUIRE(tb_fd_snapshot_take(&before) == 0, "snapshot");
	run_cli(sc, sched, &res);
	settle();
	cases++;
	n_kept += !res.failed_call && !res.broken;
	n_reported += res.failed_call && !res.broken;
	if (res.failed_call)
		tb_note("%s: %s -> %d (%s)%s%s", what, res.failed_call, res.ret, strerror(-res.ret),
			     res.broken ? ": BROKEN " : "", res.broken ? res.why : "");
	else
		tb_note("%s: kept%s%s", what, res.broken ? ": BROKEN " : "", res.broken ? res.why : "");
	CHECK(!res.broken, "%s: the frame is right after the failure (%s)", what, res.why);
	if (invisible)
		CHECK(!res.failed_call, "%s: a retried errno changes nothing", what);
	case_end(what, &before);
}

void
client_part(void)
{
	start_comp(false);
	for (int s = 0; s < N_CLI; s++) {
		const struct cli_scenario *sc = &cli_scenarios[s];
		struct cli_result res;
		struct counts n;
		char what[64];

		run_cli(sc, "", &res);
		settle();
		counts_read(&n);
		REQUIRE(!res.failed_call && !res.broken, "client %s dry run: %s %d %s", sc->name,
			res.failed_call ? res.failed_call : "-", res.ret, res.why);
		snprintf(what, sizeof(what), "client %s", sc->name);
		counts_note(&n, what, CLIENT_SCOPE);
		fail_each(&n, cli_case, sc);
	}
	wlt_comp_stop(&comp);
}

FAULT_CHECKS_FN(fault_client_checks)
