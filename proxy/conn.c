/* SPDX-License-Identifier: MIT */
/*
 * One client's object map, the bottom of the proxy's connection code: the
 * ids both sides share, the proxy's own objects and their placeholders, and
 * cutting a client off with a protocol error. client.c (requests) and
 * relay.c (events, the connection's life) call down into it; what an
 * object's data needs when it leaves the map is c->obj_gone, set by relay.c.
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

/* Ids beyond this many objects are refused (libwayland allocates from 1 up). */
#define MAX_IDS (1u << 20)

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
	if (o->data && c->obj_gone)
		c->obj_gone(c, o);
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
	if (pxy_buf_append(&c->sout, msg, pxy_wire_sync(msg, id), NULL, 0, PXY_OUT_LIMIT) != 0)
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
			pxy_conn_fatal(c, 1, PXY_ERR_INVALID_OBJECT, "invalid new id %u", a->u);
			return -EPROTO;
		}
		/* A typed new id has its parent's version, whatever its own XML says. */
		if (!iface || version == 0 ||
		    (a->kind == PXY_ARG_NEW_ID_ANY && version > iface->version)) {
			pxy_conn_fatal(c, 1, PXY_ERR_INVALID_OBJECT,
				       "interface %s version %u unknown to the proxy",
				       iface ? iface->name : a->str ? a->str : "?",
				       version);
			return -EPROTO;
		}
		o->iface = iface;
		o->version = version;
	}
	return 0;
}
