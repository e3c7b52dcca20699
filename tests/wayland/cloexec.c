/* SPDX-License-Identifier: MIT */
/*
 * wl-cloexec (VM tier): every fd the Wayland helpers hold is close-on-exec
 * (the Wayland part of hardening-cloexec, which cannot host a compositor).
 *
 * The example compositor runs on a thread with both helpers' fds live at
 * once: the compositor helper waiting for a v1 acquire fence (the event
 * loop's copy and the helper's own) and for an unmaterialised timeline point
 * (the kernel-registered eventfd), and a client-helper release that arrived
 * with a fence (sb_wl_release_export_fence()'s export, the release's own copy).
 * Every fd that appeared meanwhile must have FD_CLOEXEC, and a fork+exec'ed
 * child (hardening-cloexec --list-fds, its path is argv[1]) must inherit none
 * of them — and exactly our fds without FD_CLOEXEC (a plain dup() made for
 * the purpose: the method's control).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>


#include <syncbridge/syncbridge.h>
#include <syncbridge/wayland-client.h>

#include "fd_snapshot.h"
#include "harness.h"
#include "kernel.h"
#include "wlt.h"

int
main(int argc, char **argv)
{
	struct wlc_comp_options opt;
	struct wlt_comp comp;
	struct wlt_client raw;
	struct sbk_buf buf;
	struct sbk_fence pending, ready;
	struct tb_fd_snapshot pre, post;
	struct wlt_devices dev;
	int ret, plain;

	REQUIRE(argc == 2, "usage: wl-cloexec PATH-OF-hardening-cloexec");
	setvbuf(stdout, NULL, _IOLBF, 0);
	wlt_devices_open(&dev, WLT_DEV_RENDER_VGEM | WLT_DEV_DRM);
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, dev.vgem, 16 * 64, &buf) == 0, "vgem buffer");
	REQUIRE(sbk_fence_create(dev.vgem, true, &pending) == 0, "vgem fence");
	REQUIRE(sbk_fence_create(dev.vgem, false, &ready) == 0, "vgem fence");
	sbk_fence_signal(&ready);

	REQUIRE(tb_fd_snapshot_take(&pre) == 0, "snapshot");

	wlt_comp_options_init(&opt, &dev, 10000); /* releases carry a render fence: fenced_release */
	ret = wlt_comp_start(&comp, &opt);
	REQUIRE(ret == 0, "start the compositor: %s", strerror(-ret));

	/* Compositor helper: a v1 wait (pending vgem fence) and a point with no fence yet. */
	REQUIRE(wlt_client_connect(&raw, comp.socket) == 0, "connect");
	struct wl_surface *s1 = wl_compositor_create_surface(raw.compositor);
	struct wl_buffer *b1 = wlt_dmabuf_buffer(&raw, buf.fd, 16, 16, 64);
	struct zwp_linux_surface_synchronization_v1 *sy =
		zwp_linux_explicit_synchronization_v1_get_synchronization(raw.explicit_sync, s1);
	wl_surface_attach(s1, b1, 0, 0);
	zwp_linux_surface_synchronization_v1_set_acquire_fence(sy, pending.sync_file);
	wl_surface_commit(s1);
	struct wl_surface *s2 = NULL;
	struct wp_linux_drm_syncobj_surface_v1 *so = NULL;
	struct wp_linux_drm_syncobj_timeline_v1 *tl = NULL;
	if (raw.syncobj && dev.client_drm >= 0) {
		s2 = wl_compositor_create_surface(raw.compositor);
		so = wp_linux_drm_syncobj_manager_v1_get_surface(raw.syncobj, s2);
		tl = wlt_timeline_new(&raw, dev.client_drm, NULL);
		wl_surface_attach(s2, b1, 0, 0);
		wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, tl, 0, 1);
		wp_linux_drm_syncobj_surface_v1_set_release_point(so, tl, 0, 2);
		wl_surface_commit(s2);
	} else {
		tb_note("no linux-drm-syncobj: the eventfd wait not covered");
	}
	REQUIRE(wl_display_roundtrip(raw.display) >= 0, "commits taken");

	/* Client helper: a release that arrives with the compositor's render fence. */
	struct wlt_client hc;
	struct sb_wl_client *cl = NULL;
	struct sb_wl_surface_sync *ss = NULL;
	struct sb_wl_release *rel = NULL;
	int rel_fd = -1;
	REQUIRE(wlt_client_connect(&hc, comp.socket) == 0, "connect");
	struct wl_display *d = hc.display;
	REQUIRE(sb_wl_client_create(d, -1, 0, &cl) == 0, "client helper");
	{
		struct wl_surface *s3 = wl_compositor_create_surface(hc.compositor);
		struct wl_buffer *b3 = wlt_dmabuf_buffer(&hc, buf.fd, 16, 16, 64);
		REQUIRE(sb_wl_surface_sync_create(cl, s3, &ss) == 0, "surface sync");
		wl_surface_attach(s3, b3, 0, 0);
		REQUIRE(sb_wl_surface_sync_set_acquire_fence(ss, ready.sync_file, buf.fd) == 0, "acquire");
		REQUIRE(sb_wl_release_create(ss, buf.fd, &rel) == 0, "release");
		wl_surface_commit(s3);
		REQUIRE(wl_display_roundtrip(d) >= 0 && wl_display_roundtrip(d) >= 0, "commit");
		/* Waited for, up to 10 s (it comes with the commit's use, within ms). */
		for (int i = 0; i < 500 && !sb_wl_release_is_fenced(rel); i++)
			wlt_dispatch_for(&hc, 20 * WLT_MS);
		ret = sb_wl_release_export_fence(rel, &rel_fd);
		CHECK(ret == 0 && rel_fd >= 0, "the release came with a fence (%s, fd %d)",
		      ret ? strerror(-ret) : "ok", rel_fd);

		plain = dup(pending.sync_file); /* the control: no FD_CLOEXEC, must be inherited */

		/* Every fd that appeared: FD_CLOEXEC, and not inherited. The
		 * compositor thread is held at its gate meanwhile: it would
		 * otherwise close fds (a destroyed buffer's dma-buf) between the
		 * child's list and the snapshot, or while the snapshot fstat()s
		 * them (TSan reported that race). */
		bool inherited[4096] = { false };
		wlt_comp_gate_close(&comp);
		int n = tb_fd_exec_inherited(argv[1], inherited, 4096), checked = 0, expected = 0;
		REQUIRE(tb_fd_snapshot_take(&post) == 0, "snapshot");
		wlt_comp_gate_open(&comp);
		for (int i = 0; i < post.n; i++) {
			const struct tb_fd_entry *e = &post.e[i];
			if (e->fd <= 2 || e->fd >= 4096)
				continue;
			expected += !e->cloexec;
			if (tb_fd_snapshot_find(&pre, e->fd))
				continue;
			if (e->fd == plain) {
				CHECK(!e->cloexec && inherited[e->fd], "control: a plain dup() is inherited");
				continue;
			}
			checked++;
			CHECK(e->cloexec && !inherited[e->fd], "fd %d (%s): FD_CLOEXEC and not inherited",
			      e->fd, e->what);
		}
		CHECK_EQ(n, expected, "the child inherited exactly our fds without FD_CLOEXEC");
		tb_note("%d fds appeared with the helpers' state (compositor thread, sockets, "
			     "helper waits, release fence); the child inherited %d", checked, n);
		CHECK(checked >= 5, "the helpers' fds were live (%d new fds)", checked);
		tb_fd_snapshot_free(&post);
		close(plain);
		close(rel_fd);
		sb_wl_release_destroy(rel);
		sb_wl_surface_sync_destroy(ss);
		wl_buffer_destroy(b3);
		wl_surface_destroy(s3);
		sb_wl_client_destroy(cl);
		wlt_client_disconnect(&hc);
	}

	sbk_fence_signal(&pending);
	if (so) {
		wp_linux_drm_syncobj_timeline_v1_destroy(tl);
		wp_linux_drm_syncobj_surface_v1_destroy(so);
		wl_surface_destroy(s2);
	}
	zwp_linux_surface_synchronization_v1_destroy(sy);
	wl_buffer_destroy(b1);
	wl_surface_destroy(s1);
	wlt_client_disconnect(&raw);
	wlt_comp_stop(&comp);
	tb_fd_snapshot_free(&pre);
	sbk_fence_destroy(&pending);
	sbk_fence_destroy(&ready);
	sbk_buf_destroy(&buf);
	wlt_devices_close(&dev);
	return tb_finish();
}
