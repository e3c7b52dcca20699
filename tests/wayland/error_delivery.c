/* SPDX-License-Identifier: MIT */
/*
 * wl-error-delivery: a client the compositor helper cuts off receives the
 * exact protocol error on every cut-off path, also while its connection is
 * busy.
 *
 *   wl-error-delivery [--control]
 *
 * "Busy" is made deterministic: a destroy listener that this test adds to
 * every client before the helper can (at connection time) writes one more
 * request (wl_display.sync) into the client's socket at the moment the
 * compositor starts destroying it, and checks that the bytes sit unread in
 * the compositor's end. That is what a busy client's next request does when
 * it arrives between libwayland-server reading the offending request and
 * closing the socket. The kernel then resets the client's end (ECONNRESET:
 * af_unix close with unread data), and libwayland-client 1.23, which reads
 * until EAGAIN, drops the error event it had already read. The helper must
 * keep the error deliverable (src/wayland/wayland-server.c, client_quiesce). The client
 * reads only after the compositor closed its end (it waits for POLLHUP), so
 * each case has one outcome, not a race.
 *
 * Cases, each once quiet and once busy: the per-surface limit (v1 and
 * syncobj), the per-client limit, a bad fd (v1 acquire fence; syncobj
 * timeline), a bad point (conflicting acquire/release), and libwayland's own
 * error (a bad wl_registry.bind) for a client that uses the helper.
 *
 * Timing: nothing waits on a clock but the 10 s bound on the compositor's
 * close. The stuck acquire fence is a vgem fence (it signals itself after
 * ~10 s); the limits are checked when the commits are handled, within the
 * program's ~1 s.
 *
 * --control: the same busy cut-off for a client that binds none of the
 * helper's globals (libwayland-server on its own): it must lose the error
 * (the connection fails ECONNRESET). That is the race this test guards.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/ioctl.h>
#include <sys/socket.h>
#include <wayland-server-core.h>

#include <syncbridge/syncbridge.h>

#include "harness.h"
#include "kernel.h"
#include "wlt.h"

#define MAX_PENDING 2
#define MAX_CLIENT_PENDING 3

/* Set by the client thread before the offending request; taken by the
 * compositor thread's destroy listener (stuff_notify). */
static atomic_int stuff_fd = -1;
/* Bytes unread in the compositor's end right after stuffing (-1: not stuffed). */
static atomic_int unread_at_destroy = -1;

struct env {
	struct wlt_comp comp;
	struct wlt_devices dev; /* vgem; virtio_gpu render nodes: timelines */
	struct sbk_buf buf;    /* a vgem dma-buf for wl_buffers */
	struct sbk_fence stuck; /* a vgem fence nobody signals */
	struct wl_listener created;
};

/* ---- the compositor side: a destroy listener ahead of the helper's ------- */

struct stuffer {
	struct wl_listener destroy;
};

static void
stuff_notify(struct wl_listener *l, void *data)
{
	struct stuffer *st = wl_container_of(l, st, destroy);
	struct wl_client *client = data;
	int fd = atomic_exchange(&stuff_fd, -1);

	if (fd >= 0) {
		/* wl_display@1.sync(new id): object 1, opcode 0, 12 bytes. */
		uint32_t msg[3] = { 1, (12u << 16) | 0, 0xff00 };
		int unread = -1;

		if (send(fd, msg, sizeof(msg), MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(msg) &&
		    ioctl(wl_client_get_fd(client), FIONREAD, &unread) < 0)
			unread = -1;
		atomic_store(&unread_at_destroy, unread);
	}
	wl_list_remove(&st->destroy.link);
	free(st);
}

static void
client_created(struct wl_listener *l, void *data)
{
	struct stuffer *st = calloc(1, sizeof(*st));

	if (!st)
		return; /* the case's premise check reports it */
	st->destroy.notify = stuff_notify;
	wl_client_add_destroy_listener(data, &st->destroy);
}

static void
install_created_listener(void *data)
{
	struct env *e = data;

	e->created.notify = client_created;
	wl_display_add_client_created_listener(wlc_comp_get_display(e->comp.comp), &e->created);
}

static void
remove_created_listener(void *data)
{
	struct env *e = data;

	wl_list_remove(&e->created.link);
}

/* ---- the client side ------------------------------------------------------ */

/* Wait until the compositor has closed its end of c's connection. */
static int
wait_closed(struct wlt_client *c, int64_t timeout_ns)
{
	int64_t deadline = now_ns() + timeout_ns;
	struct pollfd p = { .fd = wl_display_get_fd(c->display), .events = 0 };

	for (;;) {
		int64_t left = deadline - now_ns();
		if (left <= 0)
			return -ETIME;
		p.revents = 0;
		if (poll(&p, 1, (int)(left / WLT_MS) + 1) > 0 && (p.revents & POLLHUP))
			return 0;
	}
}

/*
 * The offending request(s) are queued on c: send them (stuffing the socket
 * at destroy when `busy`), wait for the compositor to close, then read: the
 * client must see exactly iface/code.
 */
static void
expect_error(struct wlt_client *c, bool busy, const char *what, const char *iface, uint32_t code)
{
	const char *got_iface;
	uint32_t got_code, id;
	int ret;

	atomic_store(&unread_at_destroy, -1);
	atomic_store(&stuff_fd, busy ? wl_display_get_fd(c->display) : -1);
	wl_display_flush(c->display);
	ret = wait_closed(c, 10000 * WLT_MS);
	atomic_store(&stuff_fd, -1);
	CHECK(ret == 0, "%s%s: the compositor closed the connection", what, busy ? " (busy)" : "");
	if (busy)
		CHECK(atomic_load(&unread_at_destroy) > 0,
		      "%s (busy): a request was unread in the compositor's end when it cut the client off "
		      "(%d bytes)", what, atomic_load(&unread_at_destroy));
	ret = wlt_roundtrip_error(c, &got_iface, &got_code, &id);
	CHECK(ret < 0 && strcmp(got_iface, iface) == 0 && got_code == code,
	      "%s%s: the client received %s error %u (got %s %u)", what, busy ? " (busy)" : "", iface,
	      code, ret < 0 ? got_iface : "none", got_code);
}

/* Proxies a case made, destroyed (client side only) before it disconnects. */
struct made {
	struct wl_proxy *p[16];
	int n;
};

static void *
keep(struct made *m, void *proxy)
{
	REQUIRE(proxy && m->n < 16, "proxy");
	m->p[m->n++] = proxy;
	return proxy;
}

static void
drop_all(struct made *m)
{
	while (m->n > 0)
		wl_proxy_destroy(m->p[--m->n]);
}

/* A surface with a v1 sync object and a buffer to attach. */
struct v1s {
	struct wl_surface *s;
	struct wl_buffer *b;
	struct zwp_linux_surface_synchronization_v1 *sync;
};

static void
v1s_init(struct env *e, struct wlt_client *c, struct made *m, struct v1s *v)
{
	v->s = keep(m, wl_compositor_create_surface(c->compositor));
	v->b = keep(m, wlt_dmabuf_buffer(c, e->buf.fd, 16, 16, 64));
	v->sync = keep(m, zwp_linux_explicit_synchronization_v1_get_synchronization(c->explicit_sync, v->s));
}

/* A commit whose acquire fence never signals (attached anew: an acquire
 * fence needs a buffer in the same commit). */
static void
v1s_commit_stuck(struct env *e, struct v1s *v)
{
	wl_surface_attach(v->s, v->b, 0, 0);
	zwp_linux_surface_synchronization_v1_set_acquire_fence(v->sync, e->stuck.sync_file);
	wl_surface_commit(v->s);
}

enum kase {
	SURFACE_LIMIT_V1,
	SURFACE_LIMIT_SYNCOBJ,
	CLIENT_LIMIT,
	BAD_FENCE_FD,
	BAD_TIMELINE_FD,
	BAD_POINT,
	BAD_BIND,
	N_CASES
};

static const char *const case_names[N_CASES] = {
	"per-surface limit (v1)", "per-surface limit (syncobj)", "per-client limit",
	"bad fd (v1 acquire fence)", "bad fd (syncobj timeline)", "bad point (conflicting points)",
	"libwayland's own error (bad wl_registry.bind)",
};

static void
run_case(struct env *e, enum kase k, bool busy)
{
	struct wlt_client c;
	struct made m = { .n = 0 };
	struct v1s v, v2;
	struct wl_surface *s;
	struct zwp_linux_surface_synchronization_v1 *sync;
	const char *what = case_names[k];

	REQUIRE(wlt_client_connect(&c, e->comp.socket) == 0, "connect");
	REQUIRE(wl_display_roundtrip(c.display) >= 0, "%s: setup", what);

	switch (k) {
	case SURFACE_LIMIT_V1:
		/* MAX_PENDING commits wait behind the stuck fence; one more is too many. */
		v1s_init(e, &c, &m, &v);
		for (int i = 0; i <= MAX_PENDING; i++)
			v1s_commit_stuck(e, &v);
		expect_error(&c, busy, what, "wl_display", WL_DISPLAY_ERROR_IMPLEMENTATION);
		break;
	case SURFACE_LIMIT_SYNCOBJ: {
		uint32_t h;
		struct wp_linux_drm_syncobj_timeline_v1 *tl = keep(&m, wlt_timeline_new(&c, e->dev.client_drm, &h));
		struct wp_linux_drm_syncobj_surface_v1 *so;

		s = keep(&m, wl_compositor_create_surface(c.compositor));
		so = keep(&m, wp_linux_drm_syncobj_manager_v1_get_surface(c.syncobj, s));
		struct wl_buffer *b = keep(&m, wlt_dmabuf_buffer(&c, e->buf.fd, 16, 16, 64));
		for (uint32_t i = 0; i <= MAX_PENDING; i++) {
			/* Acquire at odd points nobody signals, release above them. */
			wl_surface_attach(s, b, 0, 0);
			wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, tl, 0, 2 * i + 1);
			wp_linux_drm_syncobj_surface_v1_set_release_point(so, tl, 0, 2 * i + 2);
			wl_surface_commit(s);
		}
		expect_error(&c, busy, what, "wl_display", WL_DISPLAY_ERROR_IMPLEMENTATION);
		drop_all(&m);
		wlt_client_disconnect(&c);
		wlt_syncobj_destroy(e->dev.client_drm, h);
		return;
	}
	case CLIENT_LIMIT:
		/* MAX_PENDING on one surface, then the client's total runs over on a second. */
		v1s_init(e, &c, &m, &v);
		for (int i = 0; i < MAX_PENDING; i++)
			v1s_commit_stuck(e, &v);
		v1s_init(e, &c, &m, &v2);
		for (int i = MAX_PENDING; i <= MAX_CLIENT_PENDING; i++)
			v1s_commit_stuck(e, &v2);
		expect_error(&c, busy, what, "wl_display", WL_DISPLAY_ERROR_IMPLEMENTATION);
		break;
	case BAD_FENCE_FD:
	case BAD_TIMELINE_FD: { /* a pipe where a sync_file / a syncobj belongs */
		int p[2];

		REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe");
		if (k == BAD_FENCE_FD) {
			s = keep(&m, wl_compositor_create_surface(c.compositor));
			sync = keep(&m, zwp_linux_explicit_synchronization_v1_get_synchronization(c.explicit_sync, s));
			zwp_linux_surface_synchronization_v1_set_acquire_fence(sync, p[0]);
			expect_error(&c, busy, what, "zwp_linux_surface_synchronization_v1",
				     ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_INVALID_FENCE);
		} else {
			keep(&m, wp_linux_drm_syncobj_manager_v1_import_timeline(c.syncobj, p[0]));
			expect_error(&c, busy, what, "wp_linux_drm_syncobj_manager_v1",
				     WP_LINUX_DRM_SYNCOBJ_MANAGER_V1_ERROR_INVALID_TIMELINE);
		}
		close(p[0]);
		close(p[1]);
		break;
	}
	case BAD_POINT: {
		uint32_t h;
		struct wp_linux_drm_syncobj_timeline_v1 *tl = keep(&m, wlt_timeline_new(&c, e->dev.client_drm, &h));
		struct wp_linux_drm_syncobj_surface_v1 *so;
		struct wl_buffer *b;

		s = keep(&m, wl_compositor_create_surface(c.compositor));
		so = keep(&m, wp_linux_drm_syncobj_manager_v1_get_surface(c.syncobj, s));
		b = keep(&m, wlt_dmabuf_buffer(&c, e->buf.fd, 16, 16, 64));
		wl_surface_attach(s, b, 0, 0);
		wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, tl, 0, 5);
		wp_linux_drm_syncobj_surface_v1_set_release_point(so, tl, 0, 5);
		wl_surface_commit(s);
		expect_error(&c, busy, what, "wp_linux_drm_syncobj_surface_v1",
			     WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_CONFLICTING_POINTS);
		drop_all(&m);
		wlt_client_disconnect(&c);
		wlt_syncobj_destroy(e->dev.client_drm, h);
		return;
	}
	case BAD_BIND:
		/* A global name that does not exist: libwayland-server's error, not ours. */
		keep(&m, wl_registry_bind(c.registry, 0xfff0, &wl_compositor_interface, 1));
		expect_error(&c, busy, what, "wl_registry", WL_DISPLAY_ERROR_INVALID_OBJECT);
		break;
	case N_CASES:
		break;
	}
	drop_all(&m);
	wlt_client_disconnect(&c);
}

/*
 * The control: a client that binds nothing of the helper's, cut off by
 * libwayland-server for a bad bind while busy, loses the error.
 */
static void
run_control(struct env *e)
{
	struct wl_display *d = wl_display_connect(e->comp.socket);
	struct wl_registry *reg;
	struct wl_callback *cb;
	int err;

	REQUIRE(d, "connect");
	reg = wl_display_get_registry(d);
	REQUIRE(wl_display_roundtrip(d) >= 0, "control: setup");
	cb = wl_registry_bind(reg, 0xfff0, &wl_compositor_interface, 1);
	atomic_store(&unread_at_destroy, -1);
	atomic_store(&stuff_fd, wl_display_get_fd(d));
	wl_display_flush(d);
	{
		struct wlt_client tmp = { .display = d };
		CHECK(wait_closed(&tmp, 10000 * WLT_MS) == 0, "control: the compositor closed the connection");
	}
	atomic_store(&stuff_fd, -1);
	CHECK(atomic_load(&unread_at_destroy) > 0,
	      "control: a request was unread in the compositor's end when it cut the client off (%d bytes)",
	      atomic_load(&unread_at_destroy));
	CHECK(wl_display_roundtrip(d) < 0, "control: the connection failed");
	err = wl_display_get_error(d);
	CHECK(err == ECONNRESET,
	      "control: without the helper the client lost the protocol error (connection failed %s, "
	      "want ECONNRESET)", strerrorname_np(err) ? strerrorname_np(err) : "?");
	wl_proxy_destroy((struct wl_proxy *)cb);
	wl_registry_destroy(reg);
	wl_display_disconnect(d);
}

int
main(int argc, char **argv)
{
	bool control = argc > 1 && strcmp(argv[1], "--control") == 0;
	struct wlc_comp_options opt;
	struct env e;
	int fds_before, ret;

	REQUIRE(argc == 1 || control, "usage: wl-error-delivery [--control]");
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&e, 0, sizeof(e));
	wlt_devices_open(&e.dev, WLT_DEV_DRM_REQUIRED);
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, e.dev.vgem, 16 * 64, &e.buf) == 0, "vgem buffer");
	REQUIRE(sbk_fence_create(e.dev.vgem, true, &e.stuck) == 0, "vgem fence");

	wlt_comp_options_init(&opt, &e.dev, 0);
	opt.max_pending = MAX_PENDING;
	opt.max_client_pending = MAX_CLIENT_PENDING;
	ret = wlt_comp_start(&e.comp, &opt);
	REQUIRE(ret == 0, "start the compositor: %s", strerror(-ret));
	wlt_comp_call(&e.comp, install_created_listener, &e);
	fds_before = wlt_count_fds();

	if (control) {
		run_control(&e);
	} else {
		for (int k = 0; k < N_CASES; k++) {
			run_case(&e, k, false);
			run_case(&e, k, true);
		}
		struct wlt_comp_sample smp;
		wlt_comp_sample(&e.comp, &smp);
		CHECK_EQ(smp.stats.commits_queued, 0, "commits left queued after every client is gone");
		CHECK_EQ(smp.stats.waits_pending, 0, "waits left after every client is gone");
	}
	/* Every case waited for the compositor's close, and closed its own end. */
	CHECK_EQ(wlt_count_fds(), fds_before, "open fds after the cases");

	wlt_comp_call(&e.comp, remove_created_listener, &e);
	wlt_comp_stop(&e.comp);
	sbk_fence_signal(&e.stuck);
	sbk_fence_destroy(&e.stuck);
	sbk_buf_destroy(&e.buf);
	wlt_devices_close(&e.dev);
	return tb_finish();
}
