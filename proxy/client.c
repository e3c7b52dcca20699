/* SPDX-License-Identifier: MIT */
/*
 * One client's requests on their way to the compositor: each read from cin,
 * checked against its interface's signature, given to sync.c where it
 * concerns linux-drm-syncobj-v1, and forwarded with its fds; a commit that
 * sync.c holds keeps everything after it in cin, but for the pongs and
 * round trips passed ahead (pass_pongs). Calls down into sync.c and conn.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"

/* Pongs passed ahead of one held commit, at most (pass_pongs). */
#define MAX_PONGS_AHEAD 64

/* Check the request at cin's front; its object, or NULL after pxy_conn_fatal. */
static struct pxy_obj *
parse_request(struct pxy_conn *c, struct pxy_parsed *p, const struct pxy_msg **m)
{
	struct pxy_obj *o = pxy_conn_obj(c, p->id);
	int ret;

	if (!o) {
		pxy_conn_fatal(c, 1, PXY_ERR_INVALID_OBJECT, "invalid object %u", p->id);
		return NULL;
	}
	if (p->opcode >= o->iface->n_requests) {
		pxy_conn_fatal(c, p->id, PXY_ERR_INVALID_METHOD, "invalid method %u of %s@%u",
			       p->opcode, o->iface->name, p->id);
		return NULL;
	}
	*m = &o->iface->requests[p->opcode];
	ret = pxy_wire_args(*m, c->cin.data, c->cin.fds, c->cin.nfds, p);
	if (ret) {
		pxy_conn_fatal(c, p->id, PXY_ERR_INVALID_METHOD, "%s@%u.%s: %s", o->iface->name,
			       p->id, (*m)->name, ret == -EMFILE ? "file descriptor expected"
							       : "malformed arguments");
		return NULL;
	}
	return o;
}

/* What the proxy does with one request it forwards. 0 forward, 1 hold, 2 consumed, <0 cut. */
static int
hook_request(struct pxy_conn *c, struct pxy_obj *o, const struct pxy_msg *m,
	     const struct pxy_parsed *p)
{
	const struct pxy_ctx *ctx = c->ctx;

	if (o->local)
		return pxy_sync_local_request(c, p->id, o, p) < 0 ? -1 : 2;
	if (ctx->emulate && o->iface == ctx->registry && (int)p->opcode == ctx->op_bind &&
	    p->args[0].u == PXY_SYNCOBJ_GLOBAL_NAME)
		return pxy_sync_bind(c, p) < 0 ? -1 : 2;
	if (pxy_conn_add_new_ids(c, o, m, p, true))
		return -1;
	o = pxy_conn_obj(c, p->id); /* the map may have moved */
	if (ctx->emulate && o->iface == ctx->display && p->opcode == 1) {
		/* wl_display.get_registry: the proxy's global after the compositor's. */
		uint8_t msg[PXY_MAX_MSG];

		pxy_conn_send_client(c, msg, pxy_wire_global(msg, p->args[0].u,
			PXY_SYNCOBJ_GLOBAL_NAME, ctx->sync_manager->name, 1));
		return 0;
	}
	return ctx->emulate ? pxy_sync_client_msg(c, o, p) : 0;
}

/* One request at cin's front: false when processing has to stop. */
static bool
client_message(struct pxy_conn *c)
{
	struct pxy_parsed p;
	const struct pxy_msg *m = NULL;
	struct pxy_obj *o;
	int ret = pxy_wire_header(c->cin.data, c->cin.len, &p);

	if (ret < 0)
		pxy_conn_fatal(c, 1, PXY_ERR_INVALID_METHOD, "message of %u bytes", p.size);
	if (ret <= 0)
		return false;
	o = parse_request(c, &p, &m);
	if (!o)
		return false;
	if (c->resume) {
		c->resume = false; /* the held commit, checked when it arrived */
		ret = 0;
	} else {
		ret = hook_request(c, o, m, &p);
	}
	if (ret < 0 || ret == 1)
		return false;
	if (ret == 0 && pxy_buf_append(&c->sout, c->cin.data, p.size, c->cin.fds, p.nfds,
				       PXY_OUT_LIMIT) != 0) {
		pxy_conn_fatal(c, 1, PXY_ERR_IMPLEMENTATION, "the compositor does not read");
		return false;
	}
	pxy_buf_consume(&c->cin, p.size, p.nfds, true);
	return true;
}

/* Forward the request at off (no fds, no new id) now and take it out of cin. */
static bool
pass_now(struct pxy_conn *c, size_t off, size_t size)
{
	if (pxy_buf_append(&c->sout, c->cin.data + off, size, NULL, 0, PXY_OUT_LIMIT) != 0)
		return false;
	memmove(c->cin.data + off, c->cin.data + off + size, c->cin.len - off - size);
	c->cin.len -= size;
	return true;
}

/*
 * A wl_display.sync that follows the held commit with nothing but pongs
 * between them goes ahead too, new id and all: a compositor that implements
 * linux-drm-syncobj-v1 takes the commit in (its state waits, the request is
 * done) and answers the round trip at once, and a client that signals its
 * point only after a round trip (commit, wl_display_roundtrip, signal) would
 * otherwise wait for ever on the proxy. Its id is the next one the
 * compositor expects: the commit and pongs make none. The compositor
 * answers it after every request before the commit, as a round trip
 * promises; a request of any other kind after the commit ends this (its
 * effects the client may be waiting for could not have happened yet).
 */
static bool
pass_sync_now(struct pxy_conn *c, struct pxy_obj *display, const struct pxy_msg *m,
	      const struct pxy_parsed *p, size_t off)
{
	if (pxy_conn_add_new_ids(c, display, m, p, true) != 0)
		return false; /* said again, as an error, when the request's turn comes */
	return pass_now(c, off, p->size);
}

/*
 * While a commit is held, a pong the client sent after it goes ahead: it
 * answers the compositor's ping, which a compositor holding only the
 * surface would get at once (else a client whose point is late is taken for
 * hung, and some compositors end it). A pong creates no id, so no new id
 * reaches the compositor out of order, and carries no fd. The look ahead
 * stops for good at a request on an object made after the commit (its
 * signature, hence its fds, is not known yet); scan_off keeps it linear.
 * A round trip right after the commit goes ahead too (pass_sync_now).
 */
static void
pass_pongs(struct pxy_conn *c)
{
	struct pxy_parsed p;
	size_t held_size;

	if (pxy_wire_header(c->cin.data, c->cin.len, &p) <= 0)
		return;
	held_size = p.size;
	if (c->scan_off == 0)
		c->scan_off = held_size; /* past the held commit (it has no fd) */
	while (c->scan_off < c->cin.len) {
		size_t off = c->scan_off;
		const struct pxy_msg *m;
		struct pxy_obj *o;

		if (pxy_wire_header(c->cin.data + off, c->cin.len - off, &p) <= 0)
			return;
		o = pxy_conn_obj(c, p.id);
		if (!o || p.opcode >= o->iface->n_requests)
			break;
		m = &o->iface->requests[p.opcode];
		if (pxy_wire_args(m, c->cin.data + off, c->cin.fds + c->scan_fds,
				  c->cin.nfds - c->scan_fds, &p) != 0)
			break;
		if (!o->local && strcmp(m->name, "pong") == 0 && !strpbrk(m->sig, "nNh")) {
			/* A few per hold: a client answers pings, it does not flood
			 * them (each one taken out moves the rest of cin). */
			if (++c->pongs_passed > MAX_PONGS_AHEAD || !pass_now(c, off, p.size))
				break;
			continue;
		}
		/* Nothing passed over yet: what went ahead left cin, so the look
		 * ahead is still at the held commit's end. */
		if (c->scan_off == held_size && o->iface == c->ctx->display && p.opcode == 0) {
			if (++c->pongs_passed > MAX_PONGS_AHEAD || !pass_sync_now(c, o, m, &p, off))
				break;
			continue;
		}
		c->scan_off += p.size;
		c->scan_fds += p.nfds;
	}
	if (c->scan_off < c->cin.len)
		c->scan_off = SIZE_MAX; /* stopped for good (until the hold ends) */
}

void
pxy_conn_process_client(struct pxy_conn *c)
{
	while (!c->closing && !c->held && client_message(c))
		;
	if (c->held && !c->closing && c->scan_off != SIZE_MAX)
		pass_pongs(c);
	if (!c->closing && !c->held && c->cin.len == 0 && c->cin.nfds > 0)
		pxy_conn_fatal(c, 1, PXY_ERR_INVALID_METHOD, "%zu file descriptors no message "
			       "asked for", c->cin.nfds);
}
