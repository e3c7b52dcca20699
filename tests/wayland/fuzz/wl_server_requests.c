/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the compositor helper's request handling (src/wayland/: the protocol files and commit_queue.c),
 * both protocols, driven in-process. The example compositor (wlc_comp:
 * wl_compositor, wl_shm, linux-dmabuf, the helper) runs on a wl_display of
 * this process; a libwayland-client connection over a socketpair sends what
 * the input says, in any order: surfaces, get_synchronization /
 * set_acquire_fence / get_release, get_surface / import_timeline /
 * set_acquire_point / set_release_point, attach (dma-buf, shm or NULL),
 * commit, frame, destroys of every object, fences and timeline points
 * signalled (or errored) at any moment, and fds of every kind where an fd is
 * expected: fake sync_files (pending, signalled, errored), the same fence
 * again, pipes, memfds, eventfds, /dev/null, fake syncobjs, fake dma-bufs.
 * The kernel objects are fake_kernel.c's (this host has no DRM, sw_sync or
 * dma-buf exporter); closed fd numbers are not sent: libwayland-client
 * refuses to marshal them, so they never reach the compositor.
 *
 * Byte 0 picks the compositor: the helper holding commits (with
 * SB_WL_SERVER_WAIT_IMPLICIT, max_pending_commits 4) or SB_WL_SERVER_NO_WAIT.
 * Then one op per 1-3 bytes (see run_op). A protocol error ends that client
 * and a fresh one goes on with the rest of the input (4 clients at most).
 *
 * Invariants (abort = a finding; ASan/UBSan/LSan check the rest):
 *  - a protocol error is one docs/wayland.md lists for the interface that got
 *    it, or the compositor's own (wl_surface, linux-dmabuf, wl_shm), or
 *    wl_display.implementation exactly when clients_over_limit went up;
 *    never no_memory, invalid_object or invalid_method;
 *  - with the holding helper, no buffer is used before the acquire fence,
 *    point or implicit (dma-buf) fence its commit carried has signalled, and
 *    sb_wl_commit_get_acquire_status() says -EIO exactly when that fence
 *    completed with an error;
 *  - after the client is gone: no wait, queued commit or waiter thread left
 *    (sb_wl_server_get_stats) and this process has the fds it had before.
 *
 * This file is the client and the input's ops; the compositor and the
 * checks of the second and third invariant are wl_fuzz_server.c's (wl_fuzz.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <drm_fourcc.h>
#include <wayland-client.h>
#include <wayland-server-core.h>

#include "linux-dmabuf-v1-client-protocol.h"
#include "linux-drm-syncobj-v1-client-protocol.h"
#include "linux-explicit-synchronization-unstable-v1-client-protocol.h"
#include "wlc_compositor.h"

#include "fake_kernel.h"
#include "wl_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


/* ---- the input ---------------------------------------------------------------- */

static const uint8_t *in;
static size_t in_len, in_pos;

static uint8_t
byte(void)
{
	return in_pos < in_len ? in[in_pos++] : 0;
}

/* ---- the client ------------------------------------------------------------------ */

struct pending {      /* the client's idea of a surface's pending state */
	bool attached;
	int buffer;       /* slot, or -1 for attach(NULL) */
	int v1_fence;     /* fake sync_file id, or -1 */
	int tl_obj;       /* acquire point's fake syncobj, or -1 */
	uint64_t point;
};

struct client {
	struct wl_client *sclient;
	struct wl_listener sclient_destroy;
	bool sclient_gone;

	struct wl_display *d;
	struct wl_registry *reg;
	struct wl_compositor *compositor;
	struct wl_shm *shm;
	struct zwp_linux_dmabuf_v1 *dmabuf;
	struct zwp_linux_explicit_synchronization_v1 *ex;
	struct wp_linux_drm_syncobj_manager_v1 *so;

	struct wl_surface *surf[NS];
	struct zwp_linux_surface_synchronization_v1 *v1[NS];
	struct wp_linux_drm_syncobj_surface_v1 *sos[NS];
	struct pending pend[NS];
	/* The slot's sync objects outlived their wl_surface (requests: NO_SURFACE);
	 * a new surface in the slot has none. */
	bool orphan[NS];
	struct wp_linux_drm_syncobj_timeline_v1 *tl[NT];
	int tl_obj[NT];
	struct wl_buffer *buf[NB];
	int buf_dmabuf[NB]; /* fake dma-buf id, or -1 (shm) */
	struct zwp_linux_buffer_release_v1 *rel[NR];
	struct wl_callback *cb[NC];
	uint64_t over_limit_before;
};

static int fences[NF], n_fences;
static int syncobjs[NF], n_syncobjs;

static void
registry_global(void *data, struct wl_registry *r, uint32_t name, const char *iface, uint32_t version)
{
	struct client *c = data;

	if (!strcmp(iface, wl_compositor_interface.name))
		c->compositor = wl_registry_bind(r, name, &wl_compositor_interface, 4);
	else if (!strcmp(iface, wl_shm_interface.name))
		c->shm = wl_registry_bind(r, name, &wl_shm_interface, 1);
	else if (!strcmp(iface, zwp_linux_dmabuf_v1_interface.name))
		c->dmabuf = wl_registry_bind(r, name, &zwp_linux_dmabuf_v1_interface, 3);
	else if (!strcmp(iface, zwp_linux_explicit_synchronization_v1_interface.name))
		c->ex = wl_registry_bind(r, name, &zwp_linux_explicit_synchronization_v1_interface, 2);
	else if (!strcmp(iface, wp_linux_drm_syncobj_manager_v1_interface.name))
		c->so = wl_registry_bind(r, name, &wp_linux_drm_syncobj_manager_v1_interface, 1);
}

static void
registry_remove(void *data, struct wl_registry *r, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = { registry_global, registry_remove };

static void
sclient_destroyed(struct wl_listener *l, void *data)
{
	struct client *c = wl_container_of(l, c, sclient_destroy);

	c->sclient_gone = true;
}

/* One round: client → server → client, never blocking. */
static void
pump(struct client *c)
{
	if (c->d)
		wl_display_flush(c->d);
	wl_event_loop_dispatch(srv->loop, 0);
	wl_display_flush_clients(srv->display);
	if (!c->d || wl_display_get_error(c->d))
		return;
	while (wl_display_prepare_read(c->d) != 0)
		if (wl_display_dispatch_pending(c->d) < 0)
			return;
	struct pollfd p = { .fd = wl_display_get_fd(c->d), .events = POLLIN };
	if (poll(&p, 1, 0) > 0)
		wl_display_read_events(c->d);
	else
		wl_display_cancel_read(c->d);
	wl_display_dispatch_pending(c->d);
}

static void
release_fenced(void *data, struct zwp_linux_buffer_release_v1 *r, int32_t fd)
{
	struct zwp_linux_buffer_release_v1 **slot = data;

	close(fd);
	zwp_linux_buffer_release_v1_destroy(r);
	*slot = NULL;
}

static void
release_immediate(void *data, struct zwp_linux_buffer_release_v1 *r)
{
	struct zwp_linux_buffer_release_v1 **slot = data;

	zwp_linux_buffer_release_v1_destroy(r);
	*slot = NULL;
}

static const struct zwp_linux_buffer_release_v1_listener release_listener = {
	release_fenced, release_immediate,
};

static void
frame_done(void *data, struct wl_callback *cb, uint32_t t)
{
	struct wl_callback **slot = data;

	wl_callback_destroy(cb);
	*slot = NULL;
}

static const struct wl_callback_listener frame_listener = { frame_done };

static int
client_connect(struct client *c)
{
	int sv[2];

	memset(c, 0, sizeof(*c));
	for (int i = 0; i < NT; i++)
		c->tl_obj[i] = -1;
	for (int i = 0; i < NB; i++)
		c->buf_dmabuf[i] = -1;
	for (int i = 0; i < NS; i++)
		c->pend[i] = (struct pending){ false, -1, -1, -1, 0 };
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	c->sclient = wl_client_create(srv->display, sv[0]);
	if (!c->sclient)
		abort();
	c->sclient_destroy.notify = sclient_destroyed;
	wl_client_add_destroy_listener(c->sclient, &c->sclient_destroy);
	c->d = wl_display_connect_to_fd(sv[1]);
	if (!c->d)
		abort();
	c->reg = wl_display_get_registry(c->d);
	wl_registry_add_listener(c->reg, &registry_listener, c);
	for (int i = 0; i < 3; i++)
		pump(c);
	if (!c->compositor || !c->ex || !c->so || !c->dmabuf || !c->shm)
		fail("globals missing");
	struct sb_wl_server_stats st;
	sb_wl_server_get_stats(srv->helper, &st);
	c->over_limit_before = st.clients_over_limit;
	return 0;
}

#define DESTROY(p, fn) do { if (p) { fn(p); (p) = NULL; } } while (0)

static void
forget_surface_queue(struct client *c, int s)
{
	struct surf_queue *q;

	if (c->surf[s] && (q = queue_of(c->sclient, wl_proxy_get_id((struct wl_proxy *)c->surf[s]), false)))
		memset(q, 0, sizeof(*q));
}

static void
client_disconnect(struct client *c)
{
	if (!c->d)
		return;
	for (int i = 0; i < NS; i++) {
		DESTROY(c->v1[i], zwp_linux_surface_synchronization_v1_destroy);
		DESTROY(c->sos[i], wp_linux_drm_syncobj_surface_v1_destroy);
	}
	for (int i = 0; i < NT; i++)
		DESTROY(c->tl[i], wp_linux_drm_syncobj_timeline_v1_destroy);
	for (int i = 0; i < NR; i++)
		DESTROY(c->rel[i], zwp_linux_buffer_release_v1_destroy);
	for (int i = 0; i < NC; i++)
		DESTROY(c->cb[i], wl_callback_destroy);
	for (int i = 0; i < NB; i++)
		DESTROY(c->buf[i], wl_buffer_destroy);
	for (int i = 0; i < NS; i++) {
		forget_surface_queue(c, i);
		DESTROY(c->surf[i], wl_surface_destroy);
	}
	DESTROY(c->so, wp_linux_drm_syncobj_manager_v1_destroy);
	DESTROY(c->ex, zwp_linux_explicit_synchronization_v1_destroy);
	DESTROY(c->dmabuf, zwp_linux_dmabuf_v1_destroy);
	DESTROY(c->shm, wl_shm_destroy);
	DESTROY(c->compositor, wl_compositor_destroy);
	DESTROY(c->reg, wl_registry_destroy);
	wl_display_disconnect(c->d);
	c->d = NULL;
	for (int i = 0; i < 8 && !c->sclient_gone; i++) {
		wl_event_loop_dispatch(srv->loop, 0);
		wl_display_flush_clients(srv->display);
	}
	if (!c->sclient_gone)
		wl_client_destroy(c->sclient);
	queues_forget(c->sclient);
}

/* After a protocol error: was it one the docs list? */
static void
check_error(struct client *c)
{
	const struct wl_interface *iface = NULL;
	uint32_t id, code;
	struct sb_wl_server_stats st;
	const char *n;
	int err = wl_display_get_error(c->d);

	if (err != EPROTO)
		fail("connection error %d (%s) without a protocol error", err, strerror(err));
	code = wl_display_get_protocol_error(c->d, &iface, &id);
	n = iface ? iface->name : "";
	sb_wl_server_get_stats(srv->helper, &st);
	if (!strcmp(n, "wl_display")) {
		if (code == WL_DISPLAY_ERROR_IMPLEMENTATION && st.clients_over_limit > c->over_limit_before)
			return;
		fail("wl_display error %u (over-limit count %llu → %llu)", code,
		     (unsigned long long)c->over_limit_before, (unsigned long long)st.clients_over_limit);
	}
	if (!strcmp(n, "wp_linux_drm_syncobj_manager_v1") && code <= 1)
		return;
	if (!strcmp(n, "wp_linux_drm_syncobj_surface_v1") && code >= 1 && code <= 6)
		return;
	if (!strcmp(n, "zwp_linux_explicit_synchronization_v1") && code == 0)
		return;
	if (!strcmp(n, "zwp_linux_surface_synchronization_v1") && code <= 5)
		return;
	if (!strcmp(n, "wl_surface") || !strcmp(n, "zwp_linux_buffer_params_v1") ||
	    !strcmp(n, "wl_shm") || !strcmp(n, "wl_shm_pool") || !strcmp(n, "zwp_linux_dmabuf_v1"))
		return; /* the example compositor's and libwayland's, not the helper's */
	fail("undocumented protocol error: %s@%u code %u", n, id, code);
}

/* An fd of the kind the input picks; the caller closes it. *fence: its fake sync_file id. */
static int
make_fd(uint8_t kind, int *fence, int *syncobj)
{
	int id = -1, fd = -1;

	*fence = -1;
	*syncobj = -1;
	switch (kind % 11) {
	case 0: case 1: case 2:
		if (n_fences >= NF)
			return open("/dev/null", O_RDONLY | O_CLOEXEC);
		fd = fk_sync_file(kind % 11 == 1, kind % 11 == 2 || (kind & 0x80), &id);
		if (fd >= 0)
			fences[n_fences++] = *fence = id;
		return fd;
	case 3: /* the same fence again */
		if (!n_fences)
			return open("/dev/null", O_RDONLY | O_CLOEXEC);
		id = fences[(kind >> 4) % n_fences];
		fd = fk_sync_file_dup(id);
		*fence = id;
		return fd;
	case 4: {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0)
			return -1;
		close(p[1]);
		return p[0];
	}
	case 5:
		fd = memfd_create("not-a-fence", MFD_CLOEXEC);
		return fd;
	case 6:
		return eventfd(0, EFD_CLOEXEC);
	case 7:
		return open("/dev/null", O_RDONLY | O_CLOEXEC);
	case 8:
		if (n_syncobjs >= NF)
			return open("/dev/null", O_RDONLY | O_CLOEXEC);
		fd = fk_syncobj(&id);
		if (fd >= 0)
			syncobjs[n_syncobjs++] = *syncobj = id;
		return fd;
	case 9:
		return fk_dmabuf(&id);
	default: /* an existing syncobj again */
		if (!n_syncobjs)
			return open("/dev/null", O_RDONLY | O_CLOEXEC);
		id = syncobjs[(kind >> 4) % n_syncobjs];
		fd = fk_syncobj_dup(id);
		*syncobj = id;
		return fd;
	}
}

static uint64_t
point_value(void)
{
	uint8_t b = byte();

	if (b & 0x80) /* large values: the 64-bit split and comparisons */
		return ((uint64_t)(b & 0x7f) << 32) | (uint64_t)(b & 3);
	return b % 8;
}

static void
commit_track(struct client *c, int s)
{
	struct pending *p = &c->pend[s];

	if (p->attached && p->buffer >= 0 && c->buf[p->buffer]) {
		struct surf_queue *q = queue_of(c->sclient, wl_proxy_get_id((struct wl_proxy *)c->surf[s]), true);
		struct acq a = { p->v1_fence, false, p->tl_obj, p->point };

		if ((c->v1[s] == NULL && c->sos[s] == NULL) || c->orphan[s]) {
			a.sync_file = -1; /* the server has no sync object: nothing carried */
			a.syncobj = -1;
		}
		if (a.sync_file < 0 && a.syncobj < 0 && c->buf_dmabuf[p->buffer] >= 0) {
			/* Implicit: the dma-buf's write fence at commit time. */
			a.sync_file = fk_dmabuf_fence(c->buf_dmabuf[p->buffer]);
			/* The helper drops a snapshot that is complete at commit (nothing to
			 * wait for), error or not: docs/wayland.md. */
			a.implicit_done = fk_sync_file_is_signalled(a.sync_file);
		}
		if (q && q->n < NQ) {
			q->q[(q->head + q->n) % NQ] = a;
			q->n++;
		} else if (q) {
			fail("test: too many commits tracked");
		}
	}
	*p = (struct pending){ false, -1, -1, -1, 0 };
}

static void
run_op(struct client *c, uint8_t op)
{
	uint8_t a = byte();
	int s = a % NS, fence, syncobj, fd;

	switch (op % 21) {
	case 0: /* create surface */
		if (!c->surf[s])
			c->surf[s] = wl_compositor_create_surface(c->compositor);
		break;
	case 1: /* destroy surface (its sync objects stay: NO_SURFACE afterwards) */
		if (!c->surf[s])
			break;
		forget_surface_queue(c, s);
		DESTROY(c->surf[s], wl_surface_destroy);
		c->pend[s] = (struct pending){ false, -1, -1, -1, 0 };
		c->orphan[s] = c->v1[s] || c->sos[s];
		break;
	case 2:
		if (c->surf[s] && !c->v1[s] && c->ex)
			c->v1[s] = zwp_linux_explicit_synchronization_v1_get_synchronization(c->ex, c->surf[s]);
		break;
	case 3:
		if (c->surf[s] && !c->sos[s] && c->so)
			c->sos[s] = wp_linux_drm_syncobj_manager_v1_get_surface(c->so, c->surf[s]);
		break;
	case 4: /* destroy the sync objects: the pending state goes with them */
		DESTROY(c->v1[s], zwp_linux_surface_synchronization_v1_destroy);
		DESTROY(c->sos[s], wp_linux_drm_syncobj_surface_v1_destroy);
		c->pend[s].v1_fence = c->pend[s].tl_obj = -1;
		c->orphan[s] = false;
		break;
	case 5:
		if (!c->v1[s])
			break;
		fd = make_fd(byte(), &fence, &syncobj);
		if (fd < 0)
			break;
		zwp_linux_surface_synchronization_v1_set_acquire_fence(c->v1[s], fd);
		close(fd);
		c->pend[s].v1_fence = fence;
		break;
	case 6:
		if (!c->v1[s])
			break;
		for (int i = 0; i < NR; i++) {
			if (!c->rel[i]) {
				c->rel[i] = zwp_linux_surface_synchronization_v1_get_release(c->v1[s]);
				zwp_linux_buffer_release_v1_add_listener(c->rel[i], &release_listener, &c->rel[i]);
				break;
			}
		}
		break;
	case 7: {
		int t = (a >> 2) % NT;
		if (c->tl[t] || !c->so)
			break;
		fd = make_fd(byte(), &fence, &syncobj);
		if (fd < 0)
			break;
		c->tl[t] = wp_linux_drm_syncobj_manager_v1_import_timeline(c->so, fd);
		c->tl_obj[t] = syncobj;
		close(fd);
		break;
	}
	case 8: { /* destroying a timeline does not unset points (the XML) */
		int t = (a >> 2) % NT;
		DESTROY(c->tl[t], wp_linux_drm_syncobj_timeline_v1_destroy);
		break;
	}
	case 9:
	case 10: {
		int t = (a >> 2) % NT;
		uint64_t v = point_value();
		if (!c->sos[s] || !c->tl[t])
			break;
		if (op % 21 == 9) {
			wp_linux_drm_syncobj_surface_v1_set_acquire_point(c->sos[s], c->tl[t], (uint32_t)(v >> 32), (uint32_t)v);
			c->pend[s].tl_obj = c->tl_obj[t];
			c->pend[s].point = v;
		} else {
			wp_linux_drm_syncobj_surface_v1_set_release_point(c->sos[s], c->tl[t], (uint32_t)(v >> 32), (uint32_t)v);
		}
		break;
	}
	case 11: {
		int b = (a >> 2) % (NB + 1);
		if (!c->surf[s])
			break;
		if (b == NB) {
			wl_surface_attach(c->surf[s], NULL, 0, 0);
			c->pend[s].attached = true;
			c->pend[s].buffer = -1;
		} else if (c->buf[b]) {
			wl_surface_attach(c->surf[s], c->buf[b], 0, 0);
			c->pend[s].attached = true;
			c->pend[s].buffer = b;
		}
		break;
	}
	case 12:
		if (!c->surf[s])
			break;
		wl_surface_commit(c->surf[s]);
		commit_track(c, s);
		break;
	case 13: { /* a buffer: dma-buf (fake) or shm */
		int b = (a >> 2) % NB;
		if (c->buf[b])
			break;
		if (a & 0x40) {
			int fd2 = memfd_create("shm", MFD_CLOEXEC);
			if (fd2 < 0 || ftruncate(fd2, 1024) < 0) {
				if (fd2 >= 0)
					close(fd2);
				break;
			}
			struct wl_shm_pool *pool = wl_shm_create_pool(c->shm, fd2, 1024);
			c->buf[b] = wl_shm_pool_create_buffer(pool, 0, 16, 16, 64, WL_SHM_FORMAT_XRGB8888);
			wl_shm_pool_destroy(pool);
			close(fd2);
			c->buf_dmabuf[b] = -1;
		} else {
			int id, fd2 = fk_dmabuf(&id);
			if (fd2 < 0)
				break;
			struct zwp_linux_buffer_params_v1 *params = zwp_linux_dmabuf_v1_create_params(c->dmabuf);
			zwp_linux_buffer_params_v1_add(params, fd2, 0, 0, 64, (uint32_t)(DRM_FORMAT_MOD_LINEAR >> 32),
						       (uint32_t)DRM_FORMAT_MOD_LINEAR);
			c->buf[b] = zwp_linux_buffer_params_v1_create_immed(params, 16, 16, DRM_FORMAT_XRGB8888, 0);
			zwp_linux_buffer_params_v1_destroy(params);
			close(fd2);
			c->buf_dmabuf[b] = id;
		}
		break;
	}
	case 14: {
		int b = (a >> 2) % NB;
		DESTROY(c->buf[b], wl_buffer_destroy);
		break;
	}
	case 15: /* a fence or a timeline moves on */
		if ((a & 1) && n_fences)
			fk_sync_file_signal(fences[(a >> 1) % n_fences]);
		else if (n_syncobjs) {
			uint8_t v = byte();
			int id = syncobjs[(a >> 1) % n_syncobjs];
			uint64_t cur = fk_syncobj_signalled(id);
			fk_syncobj_advance(id, cur + (v & 7), cur + ((v >> 3) & 3));
		}
		break;
	case 16:
		pump(c);
		pump(c);
		break;
	case 17:
		if (!c->surf[s])
			break;
		for (int i = 0; i < NC; i++) {
			if (!c->cb[i]) {
				c->cb[i] = wl_surface_frame(c->surf[s]);
				wl_callback_add_listener(c->cb[i], &frame_listener, &c->cb[i]);
				break;
			}
		}
		break;
	case 18: { /* a dma-buf gets a pending write fence (implicit sync) */
		int b = (a >> 2) % NB;
		if (c->buf_dmabuf[b] < 0 || n_fences >= NF)
			break;
		int id, fd2 = fk_sync_file(false, a & 0x40, &id);
		if (fd2 < 0)
			break;
		close(fd2);
		fences[n_fences++] = id;
		fk_dmabuf_set_fence(c->buf_dmabuf[b], id);
		break;
	}
	case 19: /* the managers go; the objects made through them stay */
		if (a & 1)
			DESTROY(c->ex, zwp_linux_explicit_synchronization_v1_destroy);
		else
			DESTROY(c->so, wp_linux_drm_syncobj_manager_v1_destroy);
		break;
	case 20: /* leave with everything pending */
		client_disconnect(c);
		client_connect(c);
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct client c;
	int clients = 1;

	in = data;
	in_len = size;
	in_pos = 0;
	n_fences = n_syncobjs = 0;
	srv = server_get(byte() & 1);
	fds_baseline();

	client_connect(&c);
	while (in_pos < in_len) {
		run_op(&c, byte());
		pump(&c);
		if (c.d && wl_display_get_error(c.d)) {
			check_error(&c);
			client_disconnect(&c);
			if (++clients > 4)
				break;
			client_connect(&c);
		}
	}
	/* Let whatever can settle settle, then leave. */
	for (int i = 0; i < 4; i++)
		pump(&c);
	if (c.d && wl_display_get_error(c.d))
		check_error(&c);
	client_disconnect(&c);
	check_clean();
	return 0;
}
