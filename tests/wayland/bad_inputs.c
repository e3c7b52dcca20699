/* SPDX-License-Identifier: MIT */
/*
 * wl-bad-inputs: the bad-input contract of both Wayland helpers, on any
 * machine (no sync_file, dma-buf or DRM device needed): NULL and invalid
 * arguments give the documented -errno, fds of the wrong kind are refused and
 * never closed, NULL destroys are no-ops, and the client helper binds what
 * the example compositor (on a thread) offers. Finally the process's fd count
 * is back where it started.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wayland-server-core.h>

#include <syncbridge/wayland-client.h>
#include <syncbridge/wayland-server.h>

#include "harness.h"
#include "wlt.h"

static void
ready(struct sb_wl_commit *c, void *commit_data, void *data)
{
}

static const struct sb_wl_server_impl impl = { .commit_ready = ready };

static void
server_side(void)
{
	struct wl_display *d = wl_display_create();
	struct sb_wl_server_options o = { .drm_fd = -1, .impl = &impl };
	struct sb_wl_server *s = (struct sb_wl_server *)&o;
	struct sb_wl_server_stats st;
	int p[2], fd = -1;

	REQUIRE(d, "wl_display_create");
	CHECK_EQ(sb_wl_server_create(NULL, &o, &s), -EINVAL, "create(NULL display)");
	CHECK(s == NULL, "*out is NULL after a failure");
	CHECK_EQ(sb_wl_server_create(d, NULL, &s), -EINVAL, "create(NULL options)");
	CHECK_EQ(sb_wl_server_create(d, &o, NULL), -EINVAL, "create(NULL out)");
	o.impl = NULL;
	CHECK_EQ(sb_wl_server_create(d, &o, &s), -EINVAL, "create(no impl)");
	o.impl = &impl;
	o.flags = SB_WL_SERVER_NO_EXPLICIT_V1 | SB_WL_SERVER_NO_DRM_SYNCOBJ;
	CHECK_EQ(sb_wl_server_create(d, &o, &s), -EINVAL, "create(both globals off)");
	REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe");
	o.flags = SB_WL_SERVER_NO_EXPLICIT_V1;
	o.drm_fd = p[0];
	CHECK_EQ(sb_wl_server_create(d, &o, &s), -ENODEV, "create(v1 off, a pipe as the DRM fd)");
	CHECK(fcntl(p[0], F_GETFD) >= 0, "the DRM fd stays open after a failure");
	o.drm_fd = 1000;
	CHECK_EQ(sb_wl_server_create(d, &o, &s), -EBADF, "create(closed DRM fd)");
	o.flags = 0;
	o.drm_fd = p[0];
	CHECK_EQ(sb_wl_server_create(d, &o, &s), 0, "create(a pipe as the DRM fd): v1 only");
	CHECK_EQ(sb_wl_server_get_protocols(s), 1u << SB_WL_SYNC_EXPLICIT_V1, "advertised protocols");

	CHECK_EQ(sb_wl_server_surface_commit(NULL, NULL, NULL, NULL, NULL), -EINVAL, "surface_commit(NULLs)");
	CHECK_EQ(sb_wl_commit_release(NULL, -1), 0, "commit_release(NULL)");
	CHECK_EQ(sb_wl_commit_export_acquire_fence(NULL, &fd), -EINVAL, "export_acquire_fence(NULL)");
	CHECK_EQ(fd, -1, "*out_fd is -1 after a failure");
	CHECK_EQ(sb_wl_commit_get_protocol(NULL), SB_WL_SYNC_IMPLICIT, "get_protocol(NULL)");
	CHECK(sb_wl_commit_get_surface(NULL) == NULL, "get_surface(NULL)");
	CHECK_EQ(sb_wl_server_surface_get_protocol(NULL, NULL), SB_WL_SYNC_IMPLICIT, "surface_get_protocol(NULL)");
	memset(&st, 0xff, sizeof(st));
	CHECK_EQ(sb_wl_server_get_stats(NULL, &st), -EINVAL, "get_stats(NULL, stats)");
	CHECK(st.wakeups == 0 && st.commits_queued == 0, "stats of NULL are zero");
	CHECK_EQ(sb_wl_server_get_stats(s, NULL), -EINVAL, "get_stats(server, NULL)");
	int status = 1;
	CHECK_EQ(sb_wl_commit_get_acquire_status(NULL, &status), -EINVAL, "get_acquire_status(NULL, status)");
	CHECK_EQ(status, 0, "*status is 0 after a failure");
	CHECK_EQ(sb_wl_commit_get_acquire_status(NULL, NULL), -EINVAL, "get_acquire_status(NULL, NULL)");
	sb_wl_server_destroy(NULL);
	sb_wl_server_destroy(s);
	/* Created again and left to die with the display. */
	CHECK_EQ(sb_wl_server_create(d, &o, &s), 0, "create again");
	wl_display_destroy(d);
	close(p[0]);
	close(p[1]);
}

static void
client_side(void)
{
	struct wlc_comp_options opt = { .drm_fd = -1, .vgem_fd = -1 };
	struct wlt_comp comp;
	struct wl_display *d;
	struct sb_wl_client *c = (struct sb_wl_client *)&opt;
	struct sb_wl_surface_sync *ss;
	struct sb_wl_release *rel;
	struct wl_compositor *wc;
	int p[2], fd = 5;

	CHECK_EQ(sb_wl_client_create(NULL, -1, 0, &c), -EINVAL, "client_create(NULL display)");
	CHECK(c == NULL, "*out is NULL after a failure");
	REQUIRE(wlt_comp_start(&comp, &opt) == 0, "start the example compositor");
	d = wl_display_connect(comp.socket);
	REQUIRE(d, "connect");
	CHECK_EQ(sb_wl_client_create(d, -1, 1u << 7, &c), -EINVAL, "client_create(unknown flag)");
	CHECK_EQ(sb_wl_client_create(d, 1000, 0, &c), -EBADF, "client_create(closed DRM fd)");
	CHECK_EQ(sb_wl_client_create(d, -1, 0, NULL), -EINVAL, "client_create(NULL out)");
	REQUIRE(sb_wl_client_create(d, -1, 0, &c) == 0, "client_create");
	CHECK_EQ(sb_wl_client_get_protocol(c), SB_WL_SYNC_EXPLICIT_V1,
		 "without a DRM fd the helper picks explicit-sync v1");

	/* A second connection whose globals the raw client bound (for a wl_surface). */
	struct wlt_client raw;
	REQUIRE(wlt_client_connect(&raw, comp.socket) == 0, "raw connect");
	wc = raw.compositor;
	struct sb_wl_client *c2;
	REQUIRE(sb_wl_client_create(raw.display, -1, 0, &c2) == 0, "client_create on the raw connection");
	struct wl_surface *surf = wl_compositor_create_surface(wc);
	CHECK_EQ(sb_wl_surface_sync_create(NULL, surf, &ss), -EINVAL, "surface_sync_create(NULL)");
	CHECK_EQ(sb_wl_surface_sync_create(c2, NULL, &ss), -EINVAL, "surface_sync_create(NULL surface)");
	REQUIRE(sb_wl_surface_sync_create(c2, surf, &ss) == 0, "surface_sync_create");
	REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe");
	CHECK_EQ(sb_wl_surface_sync_set_acquire_fence(ss, p[0], -1), -EINVAL, "acquire fence: a pipe");
	CHECK(fcntl(p[0], F_GETFD) >= 0, "the refused fd stays open");
	CHECK_EQ(sb_wl_surface_sync_set_acquire_fence(ss, 1000, -1), -EBADF, "acquire fence: closed fd");
	CHECK_EQ(sb_wl_surface_sync_set_acquire_fence(ss, -1, -1), 0, "acquire fence -1 (signalled)");
	CHECK_EQ(sb_wl_surface_sync_set_acquire_point(ss, 1, 1, -1), -ENODEV, "acquire point without a DRM fd");
	CHECK_EQ(sb_wl_surface_sync_set_acquire_point(ss, 0, 1, -1), -EINVAL, "acquire point, handle 0");
	CHECK_EQ(sb_wl_release_create(NULL, -1, &rel), -EINVAL, "release_create(NULL)");
	REQUIRE(sb_wl_release_create(ss, -1, &rel) == 0, "release_create (v1)");
	CHECK_EQ(sb_wl_release_export_fence(rel, &fd), -EAGAIN, "release before any commit: not yet");
	CHECK_EQ(fd, -1, "*out_fd is -1");
	CHECK_EQ(sb_wl_release_wait(rel, 0), -ETIME, "release wait, timeout 0");
	CHECK(sb_wl_release_is_fenced(rel) == false, "not fenced before it arrived");
	CHECK_EQ(sb_wl_release_export_fence(NULL, &fd), -EINVAL, "release_export_fence(NULL)");
	CHECK_EQ(sb_wl_release_wait(NULL, 0), -EINVAL, "wait(NULL)");
	sb_wl_release_destroy(rel);
	sb_wl_release_destroy(NULL);
	sb_wl_surface_sync_destroy(ss);
	sb_wl_surface_sync_destroy(NULL);
	CHECK(wl_display_roundtrip(raw.display) >= 0, "no protocol error from any of that");

	/* Implicit sync: needs the dma-buf. */
	struct sb_wl_client *ci;
	REQUIRE(sb_wl_client_create(raw.display, -1, SB_WL_CLIENT_NO_DRM_SYNCOBJ | SB_WL_CLIENT_NO_EXPLICIT_V1,
				    &ci) == 0, "client_create(implicit)");
	CHECK_EQ(sb_wl_client_get_protocol(ci), SB_WL_SYNC_IMPLICIT, "flags force implicit sync");
	REQUIRE(sb_wl_surface_sync_create(ci, surf, &ss) == 0, "get_surface_sync(implicit)");
	CHECK_EQ(sb_wl_surface_sync_set_acquire_fence(ss, -1, -1), 0, "implicit: fence -1");
	CHECK_EQ(sb_wl_release_create(ss, -1, &rel), -EINVAL, "implicit: release without a dma-buf");
	CHECK_EQ(sb_wl_release_create(ss, p[0], &rel), -EINVAL, "implicit: release on a pipe");
	sb_wl_surface_sync_destroy(ss);
	sb_wl_client_destroy(ci);
	sb_wl_client_destroy(c2);
	sb_wl_client_destroy(c);
	sb_wl_client_destroy(NULL);
	close(p[0]);
	close(p[1]);
	wl_surface_destroy(surf);
	wlt_client_disconnect(&raw);
	wl_display_disconnect(d);
	wlt_comp_stop(&comp);
}

int
main(void)
{
	int fds0 = tb_count_fds();

	setvbuf(stdout, NULL, _IOLBF, 0);
	server_side();
	client_side();
	CHECK_EQ(tb_count_fds(), fds0, "open fds at the end");
	return tb_finish();
}
