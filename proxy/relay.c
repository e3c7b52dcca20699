/* SPDX-License-Identifier: MIT */
/*
 * A connection's life: the compositor's socket opened for each client, the
 * events read, checked and forwarded (conn.c does the requests), poll()
 * interest and dispatch, and the teardown that closes every fd it owns.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <poll.h>

#include <syncbridge/syncobj.h>

#include "conn.h"

/* A blocking connect to the compositor's socket, then non-blocking. fd or -errno. */
static int
connect_display(const char *display)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char *dir = getenv("XDG_RUNTIME_DIR");
	int fd, n;

	if (display[0] == '/')
		n = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", display);
	else if (dir)
		n = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", dir, display);
	else
		return -ENOENT;
	if (n < 0 || (size_t)n >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		n = -errno;
		close(fd);
		return n;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

struct pxy_conn *
pxy_conn_create(struct pxy_ctx *ctx, int cfd, const char *display, unsigned serial)
{
	int sfd = connect_display(display);

	if (sfd < 0) {
		pxy_log("client %u: cannot reach the compositor at %s: %s", serial, display,
			strerror(-sfd));
		close(cfd);
		return NULL;
	}
	return pxy_conn_create_fds(ctx, cfd, sfd, serial);
}

struct pxy_conn *
pxy_conn_create_fds(struct pxy_ctx *ctx, int cfd, int sfd, unsigned serial)
{
	struct pxy_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		close(cfd);
		close(sfd);
		return NULL;
	}
	c->ctx = ctx;
	c->serial = serial;
	c->cfd = cfd;
	c->sfd = sfd;
	fcntl(cfd, F_SETFL, fcntl(cfd, F_GETFL) | O_NONBLOCK);
	c->n_cmap = 64;
	c->cmap = calloc(c->n_cmap, sizeof(*c->cmap));
	if (!c->cmap || pxy_sync_init(c) != 0)
		goto err;
	c->obj_gone = pxy_sync_obj_gone;
	c->cmap[1].iface = ctx->display;
	c->cmap[1].version = 1;
	c->cnext = 2;
	c->snext = 0;
	return c;
err:
	pxy_conn_destroy(c);
	return NULL;
}

void
pxy_conn_destroy(struct pxy_conn *c)
{
	if (!c)
		return;
	sb_syncobj_waiter_destroy(c->held);
	for (size_t k = 0; k < c->n_cmap; k++)
		if (c->cmap[k].data)
			pxy_sync_obj_gone(c, &c->cmap[k]);
	for (size_t k = 0; k < c->n_smap; k++)
		if (c->smap[k].data)
			pxy_sync_obj_gone(c, &c->smap[k]);
	pxy_sync_finish(c);
	free(c->cmap);
	free(c->smap);
	pxy_buf_finish(&c->cin);
	pxy_buf_finish(&c->cout);
	pxy_buf_finish(&c->sin);
	pxy_buf_finish(&c->sout);
	if (c->cfd >= 0)
		close(c->cfd);
	if (c->sfd >= 0)
		close(c->sfd);
	free(c);
}

/* wl_registry.global: 0 forward (version clamped in place), 1 drop. */
static int
filter_global(struct pxy_conn *c, struct pxy_parsed *p)
{
	const char *name = p->args[1].str;
	const struct pxy_iface *i = pxy_protocols_find(&c->ctx->protocols, name);
	uint32_t version = p->args[2].u;

	if (!i) {
		pxy_log("client %u: global %s (v%u) not offered: no XML for it", c->serial, name,
			version);
		return 1;
	}
	if (c->ctx->emulate && i == c->ctx->sync_manager)
		return 1; /* ours is offered: never two */
	if (version > i->version) {
		pxy_log("client %u: global %s offered at v%u, the XML's, not v%u", c->serial,
			name, i->version, version);
		memcpy(c->sin.data + 4 * p->args[2].word, &i->version, 4);
	}
	return 0;
}

/* Events of wl_display, wl_callback placeholders and wl_registry: 0 forward, 1 swallow. */
static int
core_event(struct pxy_conn *c, struct pxy_obj *o, struct pxy_parsed *p)
{
	const struct pxy_ctx *ctx = c->ctx;

	if (o->iface == ctx->display && p->opcode == 1) { /* delete_id */
		struct pxy_obj *d = pxy_conn_obj(c, p->args[0].u);
		struct pxy_obj *any = d;

		if (!any && p->args[0].u < c->n_cmap)
			any = &c->cmap[p->args[0].u];
		if (any && any->ph_delete) {
			any->ph_delete--;
			return 1;
		}
		if (d)
			pxy_conn_obj_clear(c, d);
		return 0;
	}
	if (o->iface == ctx->registry && (int)p->opcode == ctx->op_global)
		return filter_global(c, p);
	return 0;
}

/* One event at sin's front: false when processing has to stop. */
static bool
server_message(struct pxy_conn *c)
{
	struct pxy_parsed p;
	struct pxy_obj *o, *any;
	const struct pxy_msg *m;
	int ret = pxy_wire_header(c->sin.data, c->sin.len, &p);

	if (ret <= 0) {
		if (ret < 0)
			pxy_conn_fatal(c, 1, PXY_ERR_IMPLEMENTATION,
				       "the compositor sent a message of %u bytes", p.size);
		return false;
	}
	any = p.id < c->n_cmap ? &c->cmap[p.id] : NULL;
	if (any && any->ph_done && p.size == 12) { /* a placeholder's wl_callback.done */
		any->ph_done--;
		pxy_buf_consume(&c->sin, p.size, 0, true);
		return true;
	}
	o = pxy_conn_obj(c, p.id);
	if (!o || o->local || p.opcode >= o->iface->n_events) {
		pxy_conn_fatal(c, 1, PXY_ERR_IMPLEMENTATION, "the compositor sent event %u to "
			       "object %u the proxy cannot follow", p.opcode, p.id);
		return false;
	}
	m = &o->iface->events[p.opcode];
	ret = pxy_wire_args(m, c->sin.data, c->sin.fds, c->sin.nfds, &p);
	if (ret == 0)
		ret = pxy_conn_add_new_ids(c, o, m, &p, false);
	o = pxy_conn_obj(c, p.id); /* the map may have moved */
	if (ret) {
		pxy_conn_fatal(c, 1, PXY_ERR_IMPLEMENTATION,
			       "the compositor's %s.%s does not parse", o->iface->name, m->name);
		return false;
	}
	ret = core_event(c, o, &p);
	if (ret == 0 && c->ctx->emulate)
		ret = pxy_sync_server_msg(c, o, &p);
	if (ret < 0)
		return false;
	if (ret == 0 && pxy_buf_append(&c->cout, c->sin.data, p.size, c->sin.fds, p.nfds,
				       PXY_OUT_LIMIT) != 0) {
		pxy_conn_fatal(c, 1, PXY_ERR_IMPLEMENTATION, "the client does not read its events");
		return false;
	}
	pxy_buf_consume(&c->sin, p.size, p.nfds, true);
	return true;
}

void
pxy_conn_process_server(struct pxy_conn *c)
{
	while (!c->closing && server_message(c))
		;
}

void
pxy_conn_poll_events(const struct pxy_conn *c, short *cev, short *sev, int *waiter_fd)
{
	*cev = c->cout.len ? POLLOUT : 0;
	if (!c->closing && c->cin.len < PXY_IN_LIMIT)
		*cev |= POLLIN;
	*sev = c->sout.len ? POLLOUT : 0;
	if (!c->closing && c->cout.len < PXY_OUT_LIMIT / 2)
		*sev |= POLLIN;
	*waiter_fd = c->held ? sb_syncobj_waiter_get_fd(c->held) : -1;
}

/* Read one side; false when that side is gone. */
static bool
read_side(struct pxy_conn *c, bool client)
{
	struct pxy_buf *b = client ? &c->cin : &c->sin;
	int ret = pxy_buf_recv(b, client ? c->cfd : c->sfd, PXY_IN_LIMIT, PXY_IN_FD_LIMIT);

	if (ret == -EMFILE && client) {
		pxy_conn_fatal(c, 1, 1, "too many file descriptors");
		return true;
	}
	if (ret == -EAGAIN || ret == -ENOBUFS || ret > 0)
		return true;
	pxy_log("client %u: the %s %s", c->serial, client ? "client" : "compositor",
		ret == 0 ? "closed its connection" : strerror(-ret));
	return false;
}

/* The compositor closed: what it said last still reaches the client, then it goes. */
static void
compositor_gone(struct pxy_conn *c)
{
	pxy_conn_process_server(c);
	c->closing = true;
	if (c->sfd >= 0) /* closed now: a hung-up socket would wake poll() for ever */
		close(c->sfd);
	c->sfd = -1;
}

void
pxy_conn_dispatch(struct pxy_conn *c, short crev, short srev, bool waiter_ready)
{
	if (waiter_ready && c->held)
		pxy_sync_unhold(c);
	/* Hung up with its input full (POLLIN not asked for): nothing more to read. */
	if ((crev & POLLHUP) && !(crev & POLLIN) && !c->closing) {
		c->dead = true;
		return;
	}
	if (!c->closing && (crev & (POLLIN | POLLHUP | POLLERR)) && !read_side(c, true)) {
		c->dead = true;
		return;
	}
	if (!c->closing && c->sfd >= 0 && (srev & (POLLIN | POLLHUP | POLLERR)) &&
	    !read_side(c, false))
		compositor_gone(c);
	pxy_conn_process_server(c);
	pxy_conn_process_client(c);
	if (c->sfd >= 0 && c->sout.len && pxy_buf_flush(&c->sout, c->sfd) == -EPIPE)
		compositor_gone(c);
	if (c->cout.len) {
		int ret = pxy_buf_flush(&c->cout, c->cfd);

		if (ret && ret != -EAGAIN)
			c->dead = true;
	}
	if (c->closing && c->cout.len == 0)
		c->dead = true;
}
