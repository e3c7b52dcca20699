/* SPDX-License-Identifier: MIT */
/*
 * wl-errored-fence (VM tier): what the compositor helper does with an acquire
 * fence that completes with an error (docs/wayland.md, "Errors of a fence"):
 * the commit is still applied — after the fence completed, never before —
 * and sb_wl_commit_get_acquire_status() reports the error (here -EIO);
 * sb_wl_server_stats.acquire_errors counts it.
 *
 * No driver of the test kernel makes errored fences (docs/reliability.md), so
 * libsbfault's fence_error rule, armed on the compositor's thread only,
 * rewrites the kernel's SYNC_IOC_FILE_INFO answers the way it reports such
 * fences (signalled → -EIO). The fences are real vgem fences and virtio_gpu
 * timeline points. Cases, each for explicit-sync v1 and linux-drm-syncobj:
 * completed before the commit; pending at the commit and completing 100 ms
 * later (for syncobj: a materialised point, and an unmaterialised point
 * signalled from the CPU). The control is the same cases without the rule:
 * status 0, no error counted.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <drm.h>
#include <sys/ioctl.h>

#include <syncbridge/syncbridge.h>

#include "sbfault.h"
#include "harness.h"
#include "kernel.h"
#include "wlt.h"

#define RULE "fence_error:*:EIO"

static struct wlt_comp comp;
static struct wlt_devices dev;

static void
arm(void *data)
{
	sbfault_arm(RULE);
}

static void
disarm(void *data)
{
	sbfault_disarm();
}

enum when { BEFORE, PENDING, UNMATERIALISED };
static const char *when_name[] = { "completed before the commit", "pending at the commit",
				   "unmaterialised point" };

/* One commit; returns the use's acquire status (or 1 when it was not used in time). */
static int
one_case(struct wlt_client *c, struct sbk_buf *buf, bool syncobj, enum when when, bool errored)
{
	struct wl_surface *surf = wl_compositor_create_surface(c->compositor);
	struct wl_buffer *wb = wlt_dmabuf_buffer(c, buf->fd, 16, 16, 64);
	struct zwp_linux_surface_synchronization_v1 *sync = NULL;
	struct wp_linux_drm_syncobj_surface_v1 *so = NULL;
	struct wp_linux_drm_syncobj_timeline_v1 *acq = NULL, *rel = NULL;
	uint32_t acq_h = 0;
	struct sbk_fence f;
	bool have_fence = when != UNMATERIALISED;
	struct wlc_used u;
	int status = 1, n0 = wlt_comp_n_used(&comp);
	int64_t t_signal = 0;
	const char *what = syncobj ? "syncobj" : "v1";

	if (have_fence) {
		REQUIRE(sbk_fence_create(dev.vgem, true, &f) == 0, "vgem fence");
		if (when == BEFORE)
			REQUIRE(sbk_fence_signal(&f) == 0, "signal");
	}
	wl_surface_attach(surf, wb, 0, 0);
	if (syncobj) {
		so = wp_linux_drm_syncobj_manager_v1_get_surface(c->syncobj, surf);
		acq = wlt_timeline_new(c, dev.client_drm, &acq_h);
		rel = wlt_timeline_new(c, dev.client_drm, NULL);
		if (have_fence)
			REQUIRE(sb_syncobj_import_sync_file(dev.client_drm, acq_h, 1, f.sync_file) == 0, "import");
		wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, acq, 0, 1);
		wp_linux_drm_syncobj_surface_v1_set_release_point(so, rel, 0, 1);
	} else {
		sync = zwp_linux_explicit_synchronization_v1_get_synchronization(c->explicit_sync, surf);
		zwp_linux_surface_synchronization_v1_set_acquire_fence(sync, f.sync_file);
	}
	wl_surface_commit(surf);
	REQUIRE(wl_display_roundtrip(c->display) >= 0, "%s: commit", what);
	if (when != BEFORE) {
		sbk_sleep_ns(100 * WLT_MS);
		CHECK(wlt_comp_n_used(&comp) == n0, "%s, %s%s: not used before the fence completed", what,
		      when_name[when], errored ? ", errored" : "");
		t_signal = now_ns();
		if (have_fence)
			REQUIRE(sbk_fence_signal(&f) == 0, "signal");
		else
			REQUIRE(sb_syncobj_signal(dev.client_drm, acq_h, 1) == 0, "signal point 1");
	}
	if (wlt_comp_wait_used(&comp, n0 + 1, 5000 * WLT_MS) == 0) {
		pthread_mutex_lock(&comp.lock);
		u = comp.used[n0];
		pthread_mutex_unlock(&comp.lock);
		status = u.acquire_status;
		CHECK(u.time_ns >= t_signal, "%s, %s: used after the fence completed", what, when_name[when]);
	}
	tb_note("%-7s %-28s %s: acquire status %d", what, when_name[when],
		     errored ? "errored" : "control", status);
	if (sync)
		zwp_linux_surface_synchronization_v1_destroy(sync);
	if (so) {
		wp_linux_drm_syncobj_surface_v1_destroy(so);
		wp_linux_drm_syncobj_timeline_v1_destroy(acq);
		wp_linux_drm_syncobj_timeline_v1_destroy(rel);
	}
	wl_buffer_destroy(wb);
	wl_surface_destroy(surf);
	wl_display_roundtrip(c->display);
	if (have_fence)
		sbk_fence_destroy(&f);
	return status;
}

int
main(void)
{
	struct wlc_comp_options opt;
	struct wlt_client c;
	struct sbk_buf buf;
	struct wlt_comp_sample s;
	int ret, cases = 0, errors = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!dlsym(RTLD_DEFAULT, "sbfault_arm"))
		tb_skip("libsbfault is not loaded");
	if (!wlt_devices_open(&dev, WLT_DEV_DRM))
		tb_note("no virtio_gpu: explicit-sync v1 cases only");

	wlt_comp_options_init(&opt, &dev, 0);
	ret = wlt_comp_start(&comp, &opt);
	REQUIRE(ret == 0, "start the compositor: %s", strerror(-ret));
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, dev.vgem, 16 * 64, &buf) == 0, "vgem buffer");
	REQUIRE(wlt_client_connect(&c, comp.socket) == 0, "connect");

	for (int errored = 0; errored <= 1; errored++) {
		if (errored)
			wlt_comp_call(&comp, arm, NULL);
		for (int so = 0; so <= (c.syncobj && dev.client_drm >= 0 ? 1 : 0); so++) {
			for (int w = BEFORE; w <= UNMATERIALISED; w++) {
				if (w == UNMATERIALISED && !so)
					continue;
				int st = one_case(&c, &buf, so, w, errored);
				cases++;
				if (errored) {
					errors++;
					CHECK_EQ(st, -EIO, "errored: the compositor sees -EIO");
				} else {
					CHECK_EQ(st, 0, "control: status 0");
				}
			}
		}
		wlt_comp_sample(&comp, &s);
		if (errored) {
			wlt_comp_call(&comp, disarm, NULL);
			CHECK_EQ(s.stats.acquire_errors, (uint64_t)errors, "acquire_errors counted");
		} else {
			CHECK_EQ(s.stats.acquire_errors, 0, "control: no acquire error counted");
		}
	}
	CHECK_EQ(s.stats.waits_pending, 0, "no wait left");

	wlt_client_disconnect(&c);
	wlt_comp_stop(&comp);
	sbk_buf_destroy(&buf);
	wlt_devices_close(&dev);
	return tb_finish();
}
