/* SPDX-License-Identifier: MIT */
/*
 * One client between its socket and the compositor: every message read,
 * checked against its interface's signature and forwarded with its fds.
 *
 * Object ids (docs/wl-proxy.md): the proxy keeps the client's ids as they
 * are on its connection to the compositor, and one map serves both sides.
 * An object the proxy implements itself (linux-drm-syncobj-v1, sync.c)
 * exists only on the client's side, but a libwayland server rejects a new id
 * that skips one ("invalid new id"), so the proxy fills the id at the
 * compositor with a placeholder: wl_display.sync with that id, a wl_callback
 * the compositor answers with done and deletes at once (delete_id). The proxy
 * swallows both (ph_done, ph_delete count them per id), so the id is free at
 * the compositor and taken at the client — the same state libwayland
 * expects after any destroyed object, and the client's next new id is the
 * compositor's next one. The counters outlive the object: an id the client
 * reuses before the placeholder's events come back is still answered right,
 * because the compositor sends them before it reads the reuse. Nothing is
 * rewritten on the way, so a message costs a parse and a copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <syncbridge/syncobj.h>

#include "conn.h"

/* How much a side may have buffered: a held client fills cin, then its socket. */
#define IN_LIMIT (256 * 1024)
#define OUT_LIMIT (4 * 1024 * 1024)
#define IN_FD_LIMIT 256
/* Pongs passed ahead of one held commit, at most (pass_pongs). */
#define MAX_PONGS_AHEAD 64
/* Ids beyond this many objects are refused (libwayland allocates from 1 up). */
#define MAX_IDS (1u << 20)

/* wl_display's error codes (wayland.xml). */
#define ERR_INVALID_OBJECT 0
#define ERR_INVALID_METHOD 1
#define ERR_IMPLEMENTATION 3

static int
op(const struct pxy_iface *i, bool event, const char *name)
{
	if (!i)
		return -1;
	return event ? pxy_msg_index(i->events, i->n_events, name)
		     : pxy_msg_index(i->requests, i->n_requests, name);
}

int
pxy_ctx_init(struct pxy_ctx *ctx)
{
	const struct pxy_protocols *p = &ctx->protocols;

	ctx->display = pxy_protocols_find(p, "wl_display");
	ctx->registry = pxy_protocols_find(p, "wl_registry");
	ctx->callback = pxy_protocols_find(p, "wl_callback");
	ctx->surface = pxy_protocols_find(p, "wl_surface");
	ctx->buffer = pxy_protocols_find(p, "wl_buffer");
	ctx->params = pxy_protocols_find(p, "zwp_linux_buffer_params_v1");
	ctx->sync_manager = pxy_protocols_find(p, "wp_linux_drm_syncobj_manager_v1");
	ctx->sync_timeline = pxy_protocols_find(p, "wp_linux_drm_syncobj_timeline_v1");
	ctx->sync_surface = pxy_protocols_find(p, "wp_linux_drm_syncobj_surface_v1");
	if (!ctx->display || !ctx->registry || !ctx->callback || !ctx->surface || !ctx->buffer)
		return -ENOENT;
	ctx->op_bind = op(ctx->registry, false, "bind");
	ctx->op_global = op(ctx->registry, true, "global");
	ctx->op_attach = op(ctx->surface, false, "attach");
	ctx->op_commit = op(ctx->surface, false, "commit");
	ctx->op_surface_destroy = op(ctx->surface, false, "destroy");
	ctx->op_buffer_release = op(ctx->buffer, true, "release");
	ctx->op_params_add = op(ctx->params, false, "add");
	ctx->op_params_create_immed = op(ctx->params, false, "create_immed");
	ctx->op_params_created = op(ctx->params, true, "created");
	return 0;
}

/*
 * May id be a new object? A free id below the highest so far, or the next
 * one: libwayland servers and clients allocate so (wl_map), and refuse a gap.
 * Checked here too, so that no id makes the map grow more than one step.
 */
static bool
id_in_sequence(struct pxy_conn *c, uint32_t id)
{
	bool server = id >= PXY_SERVER_ID_START;
	uint32_t *next = server ? &c->snext : &c->cnext;
	uint32_t k = server ? id - PXY_SERVER_ID_START : id;

	if (k > *next)
		return false;
	if (k == *next)
		(*next)++;
	return true;
}

/* The map's slot for id, grown when create; NULL when out of range. */
static struct pxy_obj *
slot(struct pxy_conn *c, uint32_t id, bool create)
{
	bool server = id >= PXY_SERVER_ID_START;
	struct pxy_obj **map = server ? &c->smap : &c->cmap;
	size_t *n = server ? &c->n_smap : &c->n_cmap;
	size_t k = server ? id - PXY_SERVER_ID_START : id;

	if (id == 0 || k >= MAX_IDS)
		return NULL;
	if (k >= *n) {
		size_t cap = *n ? *n : 64;
		struct pxy_obj *grown;

		if (!create)
			return NULL;
		while (cap <= k)
			cap *= 2;
		grown = realloc(*map, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		memset(grown + *n, 0, (cap - *n) * sizeof(*grown));
		*map = grown;
		*n = cap;
	}
	return &(*map)[k];
}

struct pxy_obj *
pxy_conn_obj(struct pxy_conn *c, uint32_t id)
{
	struct pxy_obj *o = slot(c, id, false);

	return o && o->iface ? o : NULL;
}

void
pxy_conn_obj_clear(struct pxy_conn *c, struct pxy_obj *o)
{
	pxy_sync_obj_gone(c, o);
	o->iface = NULL;
	o->local = false;
	o->data = NULL;
	o->version = 0;
}

void
pxy_conn_send_client(struct pxy_conn *c, const uint8_t *msg, size_t n)
{
	/* Past the limit only for the proxy's few own messages: never dropped. */
	if (pxy_buf_append(&c->cout, msg, n, NULL, 0, (size_t)-1) != 0 && !c->closing) {
		pxy_log("client %u: out of memory for a message", c->serial);
		c->dead = true;
	}
}

void
pxy_conn_fatal(struct pxy_conn *c, uint32_t object, uint32_t code, const char *fmt, ...)
{
	uint8_t msg[PXY_MAX_MSG];
	char text[512];
	va_list ap;

	if (c->closing)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	pxy_log("client %u: protocol error on object %u, code %u: %s", c->serial, object, code,
		text);
	pxy_conn_send_client(c, msg, pxy_wire_error(msg, object, code, text));
	c->closing = true;
	/* The compositor sees the client leave, nothing of what it sent last. */
	if (c->sfd >= 0)
		close(c->sfd);
	c->sfd = -1;
}

int
pxy_conn_add_local(struct pxy_conn *c, uint32_t id, const struct pxy_iface *iface, void *data)
{
	struct pxy_obj *o = id_in_sequence(c, id) ? slot(c, id, true) : NULL;
	uint8_t msg[16];

	if (!o || o->iface || id >= PXY_SERVER_ID_START || o->ph_delete == UINT16_MAX)
		return -EINVAL;
	if (pxy_buf_append(&c->sout, msg, pxy_wire_sync(msg, id), NULL, 0, OUT_LIMIT) != 0)
		return -ENOBUFS;
	o->iface = iface;
	o->version = 1;
	o->local = true;
	o->data = data;
	o->ph_done++;
	o->ph_delete++;
	return 0;
}

void
pxy_conn_remove_local(struct pxy_conn *c, uint32_t id)
{
	struct pxy_obj *o = pxy_conn_obj(c, id);
	uint8_t msg[16];

	if (!o)
		return;
	pxy_conn_obj_clear(c, o);
	pxy_conn_send_client(c, msg, pxy_wire_delete_id(msg, id));
}

int
pxy_conn_add_new_ids(struct pxy_conn *c, const struct pxy_obj *parent, const struct pxy_msg *m,
	    const struct pxy_parsed *p, bool from_client)
{
	/* slot() may move the map, parent with it: its version read first. */
	uint32_t parent_version = parent->version;

	for (uint32_t k = 0; k < p->nargs; k++) {
		const struct pxy_arg *a = &p->args[k];
		const struct pxy_iface *iface = m->ifaces[k];
		uint32_t version = parent_version;
		struct pxy_obj *o;

		if (a->kind != PXY_ARG_NEW_ID && a->kind != PXY_ARG_NEW_ID_ANY)
			continue;
		if (a->kind == PXY_ARG_NEW_ID_ANY) {
			iface = pxy_protocols_find(&c->ctx->protocols, a->str);
			version = a->len;
		}
		o = id_in_sequence(c, a->u) ? slot(c, a->u, true) : NULL;
		/* A server id comes back without delete_id once its object is gone. */
		if (o && o->iface && !from_client)
			pxy_conn_obj_clear(c, o);
		if (!o || o->iface || o->local || (a->u >= PXY_SERVER_ID_START) == from_client) {
			pxy_conn_fatal(c, 1, ERR_INVALID_OBJECT, "invalid new id %u", a->u);
			return -EPROTO;
		}
		/* A typed new id has its parent's version, whatever its own XML says. */
		if (!iface || version == 0 ||
		    (a->kind == PXY_ARG_NEW_ID_ANY && version > iface->version)) {
			pxy_conn_fatal(c, 1, ERR_INVALID_OBJECT, "interface %s version %u unknown "
				       "to the proxy", iface ? iface->name : a->str ? a->str : "?",
				       version);
			return -EPROTO;
		}
		o->iface = iface;
		o->version = version;
	}
	return 0;
}

/* Check the request at cin's front; its object, or NULL after pxy_conn_fatal. */
static struct pxy_obj *
parse_request(struct pxy_conn *c, struct pxy_parsed *p, const struct pxy_msg **m)
{
	struct pxy_obj *o = pxy_conn_obj(c, p->id);
	int ret;

	if (!o) {
		pxy_conn_fatal(c, 1, ERR_INVALID_OBJECT, "invalid object %u", p->id);
		return NULL;
	}
	if (p->opcode >= o->iface->n_requests) {
		pxy_conn_fatal(c, p->id, ERR_INVALID_METHOD, "invalid method %u of %s@%u",
			       p->opcode, o->iface->name, p->id);
		return NULL;
	}
	*m = &o->iface->requests[p->opcode];
	ret = pxy_wire_args(*m, c->cin.data, c->cin.fds, c->cin.nfds, p);
	if (ret) {
		pxy_conn_fatal(c, p->id, ERR_INVALID_METHOD, "%s@%u.%s: %s", o->iface->name,
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
		pxy_conn_fatal(c, 1, ERR_INVALID_METHOD, "message of %u bytes", p.size);
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
				       OUT_LIMIT) != 0) {
		pxy_conn_fatal(c, 1, ERR_IMPLEMENTATION, "the compositor does not read");
		return false;
	}
	pxy_buf_consume(&c->cin, p.size, p.nfds, true);
	return true;
}

/* Forward the request at off (no fds, no new id) now and take it out of cin. */
static bool
pass_now(struct pxy_conn *c, size_t off, size_t size)
{
	if (pxy_buf_append(&c->sout, c->cin.data + off, size, NULL, 0, OUT_LIMIT) != 0)
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
		pxy_conn_fatal(c, 1, ERR_INVALID_METHOD, "%zu file descriptors no message "
			       "asked for", c->cin.nfds);
}
