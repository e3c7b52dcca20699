/* SPDX-License-Identifier: MIT */
/*
 * wl-scaling: N surfaces (default 1000) each commit a dma-buf whose acquire is
 * pending; then the fences signal one at a time. The helper must wake the
 * compositor's event loop exactly once per signalled fence (its wake-up
 * counter, read at each buffer use, is the use's index + 1), apply the
 * surfaces in signal order, start no thread per fence, and keep one fd per
 * pending wait. Reports the compositor's heap bytes per pending wait (malloc
 * statistics around the compositor taking the N commits, client gated off).
 *
 *   wl-scaling --proto v1|syncobj [--surfaces N]
 *
 *   v1:      one pending vgem sync_file per surface (the wait polls that fd)
 *   syncobj: one timeline per surface, acquire point 1 not yet materialised,
 *            signalled from the CPU (the wait is a DRM_IOCTL_SYNCOBJ_EVENTFD eventfd)
 *
 * Timing: v1's vgem fences signal themselves ~10 s after they are made, and a
 * fence that does so before its turn breaks the count of one wake-up per
 * signal. Their buffers are made with the 1,000 surfaces (a setup that took
 * 1.8 s idle, 6.1 s with a busy loop per host core, and over 10 s beside
 * wl-hostile-client making its own 1,000 vgem buffers), the fences
 * themselves only right before the commits: two ioctls each, no buffer, no
 * mapping. The span from the first fence to the last signal is reported ("the
 * last fence signalled N ms after the first was made"; the limit is 10 s)
 * and a fence vgem completed first fails the "signal" step with that
 * explanation.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <syncbridge/syncbridge.h>

#include "demo_util.h"
#include "harness.h"
#include "kernel.h"
#include "kernel_raw.h"
#include "wlt.h"

static void
usage(FILE *f)
{
	fprintf(f, "usage: wl-scaling [--proto v1|syncobj] [--surfaces 1-%d]\n", WLT_MAX_EVENTS - 1);
}

int
main(int argc, char **argv)
{
	static const char *const protos[] = { "v1", "syncobj", NULL };
	int proto = 0, n = 1000, ret;
	struct wlc_comp_options opt;
	struct wlt_comp comp;
	struct wlt_client c;
	struct sbk_buf buf;
	struct wlt_devices dev;
	bool syncobj;
	const struct demo_opt opts[] = {
		{ "proto", DEMO_OPT_WORD, &proto, .words = protos },
		{ "surfaces", DEMO_OPT_INT, &n, 1, WLT_MAX_EVENTS - 1 },
		{ NULL },
	};

	if (demo_opt_parse("wl-scaling", argc, argv, opts, usage, 0) < 0)
		return 2;
	syncobj = strcmp(protos[proto], "syncobj") == 0;
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* Up to 4 fds per surface live at once (v1: client fence + its bo, the compositor's two). */
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_max < (rlim_t)n * 8) {
		struct rlimit more = { (rlim_t)n * 8, (rlim_t)n * 8 };
		if (setrlimit(RLIMIT_NOFILE, &more) == 0) /* root may raise the hard limit */
			rl = more;
	}
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < (rlim_t)n * 4 + 200)
		tb_skip("RLIMIT_NOFILE %llu is too low for %d surfaces", (unsigned long long)rl.rlim_cur, n);

	wlt_devices_open(&dev, syncobj ? WLT_DEV_DRM_REQUIRED : 0);
	if (syncobj && !sbk_drm_has_syncobj_eventfd(dev.comp_drm))
		tb_skip("no DRM_IOCTL_SYNCOBJ_EVENTFD: the waiter would use a thread per wait");

	wlt_comp_options_init(&opt, &dev, 0);
	/* One client with n waiting commits: above the helper's per-client bound (128). */
	opt.max_client_pending = UINT32_MAX;
	ret = wlt_comp_start(&comp, &opt);
	REQUIRE(ret == 0, "start the compositor: %s", strerror(-ret));
	ret = wlt_client_connect(&c, comp.socket);
	REQUIRE(ret == 0, "connect: %s", strerror(-ret));
	REQUIRE(syncobj ? c.syncobj != NULL : c.explicit_sync != NULL, "the %s global is missing", protos[proto]);
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, dev.vgem, 16 * 64, &buf) == 0, "vgem buffer");
	struct wl_buffer *wbuf = wlt_dmabuf_buffer(&c, buf.fd, 16, 16, 64);

	struct wl_surface **surf = calloc((size_t)n, sizeof(*surf));
	struct zwp_linux_surface_synchronization_v1 **sync = calloc((size_t)n, sizeof(*sync));
	struct wp_linux_drm_syncobj_surface_v1 **so = calloc((size_t)n, sizeof(*so));
	struct wp_linux_drm_syncobj_timeline_v1 **tl = calloc((size_t)n, sizeof(*tl));
	struct wp_linux_drm_syncobj_timeline_v1 *rel_tl = NULL;
	uint32_t *handle = calloc((size_t)n, sizeof(*handle));
	struct sbk_fence *fence = calloc((size_t)n, sizeof(*fence));
	REQUIRE(surf && sync && so && tl && handle && fence, "out of memory");

	int64_t t0 = now_ns();
	if (syncobj)
		rel_tl = wlt_timeline_new(&c, dev.client_drm, NULL);
	for (int i = 0; i < n; i++) {
		surf[i] = wl_compositor_create_surface(c.compositor);
		if (syncobj) {
			so[i] = wp_linux_drm_syncobj_manager_v1_get_surface(c.syncobj, surf[i]);
			tl[i] = wlt_timeline_new(&c, dev.client_drm, &handle[i]);
		} else {
			sync[i] = zwp_linux_explicit_synchronization_v1_get_synchronization(c.explicit_sync, surf[i]);
			/* The fence's buffer now, the fence itself later (header). */
			fence[i].vgem_fd = dev.vgem;
			fence[i].write = true;
			fence[i].sync_file = -1;
			REQUIRE(sbk_buf_create(SBK_BUF_VGEM, dev.vgem, 4096, &fence[i].bo) == 0, "vgem buffer %d", i);
		}
		if (i % 64 == 63)
			REQUIRE(wl_display_roundtrip(c.display) >= 0, "setup roundtrip");
	}
	REQUIRE(wl_display_roundtrip(c.display) >= 0, "setup roundtrip");
	tb_note("%d surfaces set up in %.0f ms", n, (double)(now_ns() - t0) / 1e6);
	/* The fences last: vgem's 10 s start now (header). */
	int64_t t_fences = now_ns();
	for (int i = 0; i < n && !syncobj; i++) {
		REQUIRE(sbk_vgem_fence_attach(dev.vgem, fence[i].bo.handle, true, &fence[i].fence_id) == 0,
			"vgem fence %d", i);
		REQUIRE(tb_dmabuf_export_raw(fence[i].bo.fd, DMA_BUF_SYNC_READ, &fence[i].sync_file) == 0,
			"export vgem fence %d", i);
	}
	if (!syncobj)
		tb_note("%d fences made in %.0f ms", n, (double)(now_ns() - t_fences) / 1e6);

	/*
	 * The commits, sent while the compositor is gated off: then only it
	 * allocates. They must all fit in the pipe meanwhile: an unbounded
	 * client buffer, one big flush, and a large socket send buffer.
	 */
	int threads0 = sbk_thread_count();
	int sndbuf = 16 << 20;
	wl_display_set_max_buffer_size(c.display, 0);
	if (setsockopt(wl_display_get_fd(c.display), SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0)
		setsockopt(wl_display_get_fd(c.display), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	wlt_comp_gate_close(&comp);
	for (int i = 0; i < n; i++) {
		wl_surface_attach(surf[i], wbuf, 0, 0);
		if (syncobj) {
			wp_linux_drm_syncobj_surface_v1_set_acquire_point(so[i], tl[i], 0, 1);
			wp_linux_drm_syncobj_surface_v1_set_release_point(so[i], rel_tl, 0, (uint32_t)i + 1);
		} else {
			zwp_linux_surface_synchronization_v1_set_acquire_fence(sync[i], fence[i].sync_file);
		}
		wl_surface_commit(surf[i]);
	}
	REQUIRE(wl_display_flush(c.display) >= 0, "flush all %d commits (socket full?)", n);
	int fds0 = tb_count_fds();
	struct mallinfo2 m0 = mallinfo2();
	t0 = now_ns();
	wlt_comp_gate_open(&comp);
	/* The roundtrip's answer comes after the compositor took every commit. */
	REQUIRE(wl_display_roundtrip(c.display) >= 0, "roundtrip after the commits (protocol error?)");
	int64_t t_taken = now_ns() - t0;
	struct mallinfo2 m1 = mallinfo2();
	int fds1 = tb_count_fds();
	int threads1 = sbk_thread_count();

	CHECK_EQ(wlt_comp_n_used(&comp), 0, "buffers used before any acquire signalled");
	CHECK_EQ(threads1, threads0, "threads with every wait pending (none per fence)");
	/*
	 * v1: two per wait — the event loop's duplicate of the client's sync_file
	 * and the helper's own, kept to read the fence's completion status (an
	 * error) when it fires; syncobj: one eventfd each (the point is exported
	 * again at that time).
	 */
	int per = syncobj ? 1 : 2;
	CHECK(fds1 - fds0 >= per * n && fds1 - fds0 <= per * n + 16,
	      "fds while %d waits are pending: +%d (want about %d per wait)", n, fds1 - fds0, per);
	double per_wait = ((double)m1.uordblks - (double)m0.uordblks) / n;
	tb_note("compositor took %d commits in %.0f ms; heap +%.0f bytes and +%.2f fds per "
		     "pending wait (commit snapshot, helper commit + event source, libwayland)",
		     n, (double)t_taken / 1e6, per_wait, (double)(fds1 - fds0) / n);
	CHECK(per_wait < 4096, "heap per pending wait %.0f bytes (< 4 KiB)", per_wait);

	/* Signal one at a time; each must cost exactly one helper wake-up. */
	int bad_wakeups = 0, bad_order = 0;
	int64_t t_sig = now_ns();
	for (int i = 0; i < n; i++) {
		if (syncobj)
			REQUIRE(sb_syncobj_signal(dev.client_drm, handle[i], 1) == 0, "signal %d", i);
		else
			REQUIRE((ret = sbk_fence_signal(&fence[i])) == 0,
				"signal %d: %s%s", i, strerror(-ret),
				ret == -ETIMEDOUT ? " (vgem completed it itself: the fences lived 10 s, see the header)"
						  : "");
		REQUIRE(wlt_comp_wait_used(&comp, i + 1, 5000 * WLT_MS) == 0,
			"surface %d was not used within 5 s of its signal", i);
		wlt_dispatch_for(&c, 0); /* read the wl_buffer.release events as they come */
		pthread_mutex_lock(&comp.lock);
		const struct wlc_used *u = &comp.used[i];
		if (u->stats.wakeups != (uint64_t)i + 1)
			bad_wakeups++;
		if (u->surface_id != wl_proxy_get_id((struct wl_proxy *)surf[i]))
			bad_order++;
		if (i == 0)
			CHECK_EQ(u->stats.waits_pending, n - 1, "waits pending after the first signal");
		pthread_mutex_unlock(&comp.lock);
	}
	int64_t t_all = now_ns() - t_sig;
	if (!syncobj)
		tb_note("the last fence signalled %.0f ms after the first was made (vgem: 10 s)",
			     (double)(t_sig + t_all - t_fences) / 1e6);
	CHECK_EQ(bad_wakeups, 0, "uses whose wake-up count was not (signals so far)");
	CHECK_EQ(bad_order, 0, "uses out of signal order");
	pthread_mutex_lock(&comp.lock);
	struct sb_wl_server_stats last = comp.used[n - 1].stats;
	pthread_mutex_unlock(&comp.lock);
	CHECK_EQ(last.wakeups, n, "helper wake-ups (one per signalled fence)");
	CHECK_EQ(last.commits_deferred, n, "commits deferred");
	CHECK_EQ(last.waits_pending, 0, "waits pending at the end");
	CHECK_EQ(last.waits_threaded, 0, "waits on a thread");
	CHECK_EQ(sbk_thread_count(), threads0, "threads at the end");
	tb_note("signal → use, one at a time: %.2f ms each on average", (double)t_all / 1e6 / n);

	/* Every proxy made here, before the disconnect (LSan counts what is left). */
	for (int i = 0; i < n; i++) {
		if (sync[i])
			zwp_linux_surface_synchronization_v1_destroy(sync[i]);
		if (so[i])
			wp_linux_drm_syncobj_surface_v1_destroy(so[i]);
		if (tl[i])
			wp_linux_drm_syncobj_timeline_v1_destroy(tl[i]);
		wl_surface_destroy(surf[i]);
	}
	if (rel_tl)
		wp_linux_drm_syncobj_timeline_v1_destroy(rel_tl);
	wl_buffer_destroy(wbuf);
	wlt_client_disconnect(&c);
	wlt_comp_stop(&comp);
	for (int i = 0; i < n; i++)
		if (!syncobj)
			sbk_fence_destroy(&fence[i]);
	sbk_buf_destroy(&buf);
	wlt_devices_close(&dev);
	free(surf);
	free(sync);
	free(so);
	free(tl);
	free(handle);
	free(fence);
	return tb_finish();
}
