/* SPDX-License-Identifier: MIT */
/*
 * xdg-shell for the example compositor (sbwl_internal.h): xdg_wm_base
 * version 6 with xdg_positioner, xdg_surface, xdg_toplevel and xdg_popup.
 *
 * What it does with the protocol's freedom:
 *  - ping: at bind, then while the client has xdg_surfaces one every
 *    ping_timeout_ms / 2 after the last pong (opt.ping_timeout_ms, 0: 5000).
 *    A ping unanswered for ping_timeout_ms ends the client with
 *    xdg_wm_base.error.unresponsive ("The “unresponsive” error is provided
 *    for compositors that wish to disconnect unresponsive clients").
 *  - toplevels: every configure says "activated"; maximized and fullscreen
 *    are granted as asked, sized to the output and placed at its corner
 *    (fullscreen: centred); otherwise the size is 0x0 ("the client should
 *    decide its own window dimension") and a new toplevel is placed on a
 *    cascade of CASCADE_STEP px steps. wm_capabilities (v5) offers maximize
 *    and fullscreen; set_minimized, show_window_menu, move and resize are
 *    ignored (no minimized state, no seat input). configure_bounds (v4) is
 *    the output size.
 *  - popups: placed by the positioner's anchor, gravity and offset, never
 *    constrained. There is no seat input to grab with, so a grab is denied:
 *    "If the compositor denies the grab, the popup will be immediately
 *    dismissed" — popup_done at once, and the popup is never mapped.
 *
 * An xdg_surface installs the sbwl role at get_xdg_surface (its precommit
 * enforces not_constructed and unconfigured_buffer); get_toplevel and
 * get_popup refine it to the role proper, which the wl_surface keeps for
 * life. Every pointer between the objects is cleared by the destroy of the
 * object it points to, in whatever order a disconnecting client's resources
 * go; errors are posted only from requests, never from a destroy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include "sbwl_internal.h"
#include "xdg-shell-server-protocol.h"

/* 6 (the "suspended" state) costs nothing: we never suspend. 7's
 * constrained_* states need constraint adjustment, which we do not do. */
#define WM_BASE_VERSION 6
#define DEFAULT_PING_TIMEOUT_MS 5000
#define CASCADE_STEP 32
#define CASCADE_STEPS 10
/* Configures sent and not acked, per xdg_surface: a client that never acks
 * but keeps asking for states would otherwise grow the list without bound.
 * The oldest go first (a client acks the latest it has seen). */
#define MAX_CONFIGURES 64

enum {
	STATE_MAXIMIZED = 1u << 0,
	STATE_FULLSCREEN = 1u << 1,
};

struct sbwl_shell {
	struct sbwl_comp *comp;
	struct wl_global *global;
	struct wl_list toplevels; /* toplevel.link */
	struct wl_list popups;    /* popup.link */
	unsigned placed;          /* toplevels placed so far: the cascade */
};

/* One bound xdg_wm_base. */
struct wm_base {
	struct sbwl_shell *shell;
	struct wl_resource *resource;
	struct wl_list surfaces; /* xdg_surface.link */
	struct wl_event_source *ping_timer;
	uint32_t ping_serial;
	bool ping_pending;
	bool unresponsive;
};

struct positioner_rules {
	int32_t width, height;
	int32_t anchor_x, anchor_y, anchor_w, anchor_h;
	bool has_size, has_anchor_rect;
	uint32_t anchor, gravity, constraint_adjustment;
	int32_t offset_x, offset_y;
	bool reactive;
	int32_t parent_w, parent_h;
	uint32_t parent_configure;
};

struct configure {
	struct wl_list link;
	uint32_t serial;
	uint32_t states; /* STATE_* */
};

struct geometry {
	int32_t x, y, width, height;
	bool set;
};

struct xdg_surface {
	struct sbwl_shell *shell;
	struct wm_base *base;       /* NULL once the xdg_wm_base is gone */
	struct wl_list link;        /* base->surfaces */
	struct wl_resource *resource;
	struct sbwl_surface *surf;  /* NULL once the wl_surface is gone */
	struct wl_listener surface_destroy;
	struct toplevel *toplevel;  /* the role object, NULL: none (yet) */
	struct popup *popup;
	bool initial_committed;     /* the initial commit came: configures flow */
	bool configured;            /* a configure was acked since */
	struct wl_list configures;  /* struct configure, oldest first: sent, not acked */
	unsigned n_configures;
	uint32_t acked_states;      /* what the last ack answered, latched at commit */
	uint32_t states;            /* the committed ones */
	struct geometry pending_geom, geom;
};

struct toplevel {
	struct sbwl_shell *shell;
	struct xdg_surface *xs;     /* NULL once the xdg_surface is gone */
	struct wl_resource *resource;
	struct wl_list link;        /* shell->toplevels */
	struct toplevel *parent;
	char *title, *app_id;
	uint32_t requested;         /* STATE_* the client asked for */
	int32_t pending_min[2], pending_max[2], min[2], max[2];
	bool placed;                /* x, y: its place when neither maximized nor fullscreen */
	int32_t x, y;
	bool caps_sent;
};

struct popup {
	struct sbwl_shell *shell;
	struct xdg_surface *xs;     /* NULL once the xdg_surface is gone */
	struct wl_resource *resource;
	struct wl_list link;        /* shell->popups */
	struct xdg_surface *parent; /* NULL: none, or it went */
	bool parent_given;          /* at get_popup */
	struct positioner_rules rules;
	bool dismissed;             /* popup_done sent: never mapped again */
};

static const struct sbwl_role xdg_surface_role, toplevel_role, popup_role;

static uint32_t
output_width(const struct sbwl_shell *shell)
{
	return shell->comp->opt.output_width ? shell->comp->opt.output_width : 640;
}

static uint32_t
output_height(const struct sbwl_shell *shell)
{
	return shell->comp->opt.output_height ? shell->comp->opt.output_height : 480;
}

static bool
is_xdg_role(const struct sbwl_role *role)
{
	return role == &xdg_surface_role || role == &toplevel_role || role == &popup_role;
}

/* An xdg_wm_base error about xs: on its xdg_wm_base, or where that went on xs itself. */
static void
post_base_error(struct xdg_surface *xs, uint32_t code, const char *msg)
{
	wl_resource_post_error(xs->base ? xs->base->resource : xs->resource, code, "%s", msg);
}

/* ---- configure sequences ------------------------------------------------------- */

static void
configures_clear(struct xdg_surface *xs)
{
	struct configure *c, *tmp;

	wl_list_for_each_safe(c, tmp, &xs->configures, link) {
		wl_list_remove(&c->link);
		free(c);
	}
	xs->n_configures = 0;
}

/* Where a popup goes, relative to its parent's window geometry (the positioner's rules). */
static void
popup_position(const struct positioner_rules *r, int32_t *x, int32_t *y)
{
	int32_t px = r->anchor_x + r->anchor_w / 2, py = r->anchor_y + r->anchor_h / 2;

	switch (r->anchor) {
	case XDG_POSITIONER_ANCHOR_TOP: case XDG_POSITIONER_ANCHOR_TOP_LEFT: case XDG_POSITIONER_ANCHOR_TOP_RIGHT:
		py = r->anchor_y;
		break;
	case XDG_POSITIONER_ANCHOR_BOTTOM: case XDG_POSITIONER_ANCHOR_BOTTOM_LEFT:
	case XDG_POSITIONER_ANCHOR_BOTTOM_RIGHT:
		py = r->anchor_y + r->anchor_h;
		break;
	}
	switch (r->anchor) {
	case XDG_POSITIONER_ANCHOR_LEFT: case XDG_POSITIONER_ANCHOR_TOP_LEFT:
	case XDG_POSITIONER_ANCHOR_BOTTOM_LEFT:
		px = r->anchor_x;
		break;
	case XDG_POSITIONER_ANCHOR_RIGHT: case XDG_POSITIONER_ANCHOR_TOP_RIGHT:
	case XDG_POSITIONER_ANCHOR_BOTTOM_RIGHT:
		px = r->anchor_x + r->anchor_w;
		break;
	}
	/* gravity: the direction the popup extends from the anchor point (none: centred on it) */
	*x = px - r->width / 2;
	*y = py - r->height / 2;
	switch (r->gravity) {
	case XDG_POSITIONER_GRAVITY_TOP: case XDG_POSITIONER_GRAVITY_TOP_LEFT:
	case XDG_POSITIONER_GRAVITY_TOP_RIGHT:
		*y = py - r->height;
		break;
	case XDG_POSITIONER_GRAVITY_BOTTOM: case XDG_POSITIONER_GRAVITY_BOTTOM_LEFT:
	case XDG_POSITIONER_GRAVITY_BOTTOM_RIGHT:
		*y = py;
		break;
	}
	switch (r->gravity) {
	case XDG_POSITIONER_GRAVITY_LEFT: case XDG_POSITIONER_GRAVITY_TOP_LEFT:
	case XDG_POSITIONER_GRAVITY_BOTTOM_LEFT:
		*x = px - r->width;
		break;
	case XDG_POSITIONER_GRAVITY_RIGHT: case XDG_POSITIONER_GRAVITY_TOP_RIGHT:
	case XDG_POSITIONER_GRAVITY_BOTTOM_RIGHT:
		*x = px;
		break;
	}
	*x += r->offset_x;
	*y += r->offset_y;
}

static void
toplevel_send_configure(struct toplevel *tl, uint32_t states)
{
	struct sbwl_shell *shell = tl->xs->shell;
	int version = wl_resource_get_version(tl->resource);
	int32_t w = 0, h = 0;
	struct wl_array arr;
	uint32_t *s;

	if (version >= XDG_TOPLEVEL_CONFIGURE_BOUNDS_SINCE_VERSION)
		xdg_toplevel_send_configure_bounds(tl->resource, (int32_t)output_width(shell),
						   (int32_t)output_height(shell));
	/* "Compositors must send this event once before the first xdg_surface.configure event." */
	if (version >= XDG_TOPLEVEL_WM_CAPABILITIES_SINCE_VERSION && !tl->caps_sent) {
		wl_array_init(&arr);
		if ((s = wl_array_add(&arr, 2 * sizeof(*s)))) {
			s[0] = XDG_TOPLEVEL_WM_CAPABILITIES_MAXIMIZE;
			s[1] = XDG_TOPLEVEL_WM_CAPABILITIES_FULLSCREEN;
		}
		xdg_toplevel_send_wm_capabilities(tl->resource, &arr);
		wl_array_release(&arr);
		tl->caps_sent = true;
	}
	wl_array_init(&arr);
	if ((s = wl_array_add(&arr, sizeof(*s))))
		*s = XDG_TOPLEVEL_STATE_ACTIVATED;
	if ((states & STATE_MAXIMIZED) && (s = wl_array_add(&arr, sizeof(*s))))
		*s = XDG_TOPLEVEL_STATE_MAXIMIZED;
	if ((states & STATE_FULLSCREEN) && (s = wl_array_add(&arr, sizeof(*s))))
		*s = XDG_TOPLEVEL_STATE_FULLSCREEN;
	if (states & (STATE_MAXIMIZED | STATE_FULLSCREEN)) {
		w = (int32_t)output_width(shell);
		h = (int32_t)output_height(shell);
	}
	xdg_toplevel_send_configure(tl->resource, w, h, &arr);
	wl_array_release(&arr);
}

/*
 * A configure sequence: the role's events, then xdg_surface.configure with a
 * new serial, remembered until acked. Only after the initial commit ("The
 * compositor will reply with ... an xdg_surface.configure event").
 */
static void
send_configure(struct xdg_surface *xs)
{
	struct configure *c;
	int32_t x, y;

	if (!xs->initial_committed || (!xs->toplevel && !xs->popup))
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		wl_client_post_no_memory(wl_resource_get_client(xs->resource));
		return;
	}
	c->serial = wl_display_next_serial(xs->shell->comp->display);
	if (xs->toplevel) {
		c->states = xs->toplevel->requested;
		toplevel_send_configure(xs->toplevel, c->states);
	} else {
		popup_position(&xs->popup->rules, &x, &y);
		xdg_popup_send_configure(xs->popup->resource, x, y, xs->popup->rules.width,
					 xs->popup->rules.height);
	}
	if (xs->n_configures == MAX_CONFIGURES) {
		struct configure *old = wl_container_of(xs->configures.next, old, link);
		wl_list_remove(&old->link);
		free(old);
		xs->n_configures--;
	}
	wl_list_insert(xs->configures.prev, &c->link);
	xs->n_configures++;
	xdg_surface_send_configure(xs->resource, c->serial);
}

/* ---- mapping -------------------------------------------------------------------- */

/* Where the surface goes on the output, on each applied commit with a buffer. */
static void
place(struct xdg_surface *xs)
{
	struct sbwl_shell *shell = xs->shell;
	struct sbwl_surface *surf = xs->surf;

	if (xs->toplevel) {
		struct toplevel *tl = xs->toplevel;

		if (!tl->placed) {
			unsigned k = shell->placed++ % CASCADE_STEPS;
			tl->x = (int32_t)((k * CASCADE_STEP) % output_width(shell));
			tl->y = (int32_t)((k * CASCADE_STEP) % output_height(shell));
			tl->placed = true;
		}
		surf->x = tl->x;
		surf->y = tl->y;
		if (xs->states & STATE_FULLSCREEN) {
			surf->x = ((int32_t)output_width(shell) - (int32_t)surf->width) / 2;
			surf->y = ((int32_t)output_height(shell) - (int32_t)surf->height) / 2;
		} else if (xs->states & STATE_MAXIMIZED) {
			surf->x = surf->y = 0;
		}
		surf->x -= xs->geom.set ? xs->geom.x : 0;
		surf->y -= xs->geom.set ? xs->geom.y : 0;
	} else if (xs->popup) {
		struct xdg_surface *parent = xs->popup->parent;
		int32_t x, y;

		popup_position(&xs->popup->rules, &x, &y);
		if (parent && parent->surf) {
			x += parent->surf->x + (parent->geom.set ? parent->geom.x : 0);
			y += parent->surf->y + (parent->geom.set ? parent->geom.y : 0);
		}
		surf->x = x - (xs->geom.set ? xs->geom.x : 0);
		surf->y = y - (xs->geom.set ? xs->geom.y : 0);
	}
}

/* A toplevel leaves the screen: "its children's parent is set to the parent of the now-unmapped surface". */
static void
toplevel_orphan_children(struct toplevel *tl)
{
	struct toplevel *t;

	wl_list_for_each(t, &tl->shell->toplevels, link)
		if (t->parent == tl)
			t->parent = tl->parent;
}

/*
 * Back to the state right after get_toplevel / get_popup (a NULL buffer, or
 * the role object went): "the client must perform the initial commit again
 * before attaching a buffer".
 */
static void
role_reset(struct xdg_surface *xs)
{
	if (xs->surf)
		sbwl_surface_unmap(xs->surf);
	xs->initial_committed = false;
	xs->configured = false;
	xs->states = xs->acked_states = 0;
	configures_clear(xs);
	if (xs->toplevel) {
		struct toplevel *tl = xs->toplevel;

		toplevel_orphan_children(tl);
		/* "all attributes (e.g. title, state, stacking, ...) are discarded" */
		tl->parent = NULL;
		tl->requested = 0;
		tl->placed = false;
		free(tl->title);
		free(tl->app_id);
		tl->title = tl->app_id = NULL;
	}
}

/* ---- the role hooks -------------------------------------------------------------- */

static bool
xdg_precommit(struct sbwl_surface *surf, const struct sbwl_state *pending)
{
	struct xdg_surface *xs = surf->role_data;
	bool buffer = pending->attached && pending->buffer;

	if (!xs)
		return true; /* its xdg_surface went: a wl_surface with a role and nothing more */
	if (!xs->toplevel && !xs->popup) {
		/* "A role must be assigned before any other requests are made to the xdg_surface object." */
		wl_resource_post_error(xs->resource, XDG_SURFACE_ERROR_NOT_CONSTRUCTED,
				       "commit of an xdg_surface without a role object");
		return false;
	}
	if (buffer && !xs->configured) {
		/* "any attempts by a client to attach or manipulate a buffer prior to the
		 * first xdg_surface.configure call must also be treated as errors" */
		wl_resource_post_error(xs->resource, XDG_SURFACE_ERROR_UNCONFIGURED_BUFFER,
				       "buffer attached before the first configure was acked");
		return false;
	}
	if (xs->toplevel) {
		struct toplevel *tl = xs->toplevel;

		for (int i = 0; i < 2; i++) {
			/* "Requesting a maximum size to be smaller than the minimum size of a
			 * surface is illegal and will result in an invalid_size error." */
			if (tl->pending_max[i] && tl->pending_min[i] > tl->pending_max[i]) {
				wl_resource_post_error(tl->resource, XDG_TOPLEVEL_ERROR_INVALID_SIZE,
						       "minimum size %dx%d above maximum %dx%d",
						       tl->pending_min[0], tl->pending_min[1],
						       tl->pending_max[0], tl->pending_max[1]);
				return false;
			}
		}
		memcpy(tl->min, tl->pending_min, sizeof(tl->min));
		memcpy(tl->max, tl->pending_max, sizeof(tl->max));
	} else if (!xs->popup->parent_given) {
		/* "If null is passed as a parent, a parent surface must be specified using
		 * some other protocol, before committing the initial state." None here does. */
		post_base_error(xs, XDG_WM_BASE_ERROR_INVALID_POPUP_PARENT,
				"xdg_popup committed without a parent");
		return false;
	}
	if (pending->attached && !pending->buffer && xs->initial_committed) {
		/* "Attaching a null buffer to a toplevel unmaps the surface." (the unmap
		 * itself when applied); the next commit is an initial commit again. */
		role_reset(xs);
		return true;
	}
	xs->geom = xs->pending_geom;
	if (xs->configured)
		xs->states = xs->acked_states;
	if (!xs->initial_committed) {
		xs->initial_committed = true;
		send_configure(xs);
	}
	return true;
}

static void
xdg_applied(struct sbwl_surface *surf, bool has_buffer)
{
	struct xdg_surface *xs = surf->role_data;

	if (!xs || (!xs->toplevel && !xs->popup))
		return;
	if (!has_buffer) {
		sbwl_surface_unmap(surf);
		return;
	}
	/* a commit applied late (its acquire fence) after a reset: not mapped */
	if (!xs->configured || (xs->popup && xs->popup->dismissed))
		return;
	place(xs);
	sbwl_surface_map(surf);
}

static const struct sbwl_role xdg_surface_role = {
	.name = "xdg_surface", .precommit = xdg_precommit, .applied = xdg_applied,
};
static const struct sbwl_role toplevel_role = {
	.name = "xdg_toplevel", .precommit = xdg_precommit, .applied = xdg_applied,
};
static const struct sbwl_role popup_role = {
	.name = "xdg_popup", .precommit = xdg_precommit, .applied = xdg_applied,
};

/*
 * Give xs's wl_surface the role proper. xdg_surface "does not set the role";
 * the sbwl role it installed for the precommit checks is refined in place
 * here, once; after that the wl_surface keeps it for life and a role object
 * of the other kind is a role error.
 */
static bool
role_assign(struct xdg_surface *xs, const struct sbwl_role *role)
{
	struct sbwl_surface *surf = xs->surf;

	if (!surf)
		return true;
	if (surf->role == &xdg_surface_role) {
		surf->role = role;
		return true;
	}
	return sbwl_surface_set_role(surf, role, xs, xs->base ? xs->base->resource : xs->resource,
				     XDG_WM_BASE_ERROR_ROLE);
}

/* ---- xdg_toplevel ----------------------------------------------------------------- */

static struct toplevel *
toplevel_from(struct wl_resource *res)
{
	return wl_resource_get_user_data(res);
}

static void
toplevel_set_parent(struct wl_client *client, struct wl_resource *res, struct wl_resource *parent_res)
{
	struct toplevel *tl = toplevel_from(res);
	struct toplevel *parent = parent_res ? toplevel_from(parent_res) : NULL;

	/* "The parent toplevel must not be one of the child toplevel's descendants,
	 * and the parent must be different from the child toplevel, otherwise the
	 * invalid_parent protocol error is raised." */
	for (struct toplevel *p = parent; p; p = p->parent) {
		if (p == tl) {
			wl_resource_post_error(res, XDG_TOPLEVEL_ERROR_INVALID_PARENT,
					       parent == tl ? "a toplevel cannot be its own parent"
							    : "the parent is a descendant of this toplevel");
			return;
		}
	}
	/* "Setting a parent which is not mapped is equivalent to setting a null parent." */
	if (parent && !(parent->xs && parent->xs->surf && parent->xs->surf->mapped))
		parent = NULL;
	tl->parent = parent;
}

static void
toplevel_set_string(char **field, const char *value, struct wl_resource *res)
{
	char *copy = strdup(value);

	if (!copy) {
		wl_client_post_no_memory(wl_resource_get_client(res));
		return;
	}
	free(*field);
	*field = copy;
}

static void
toplevel_set_title(struct wl_client *client, struct wl_resource *res, const char *title)
{
	toplevel_set_string(&toplevel_from(res)->title, title, res);
}

static void
toplevel_set_app_id(struct wl_client *client, struct wl_resource *res, const char *app_id)
{
	toplevel_set_string(&toplevel_from(res)->app_id, app_id, res);
}

/* No seat input: nothing to show a menu for, or to move with. */
static void
toplevel_show_window_menu(struct wl_client *client, struct wl_resource *res, struct wl_resource *seat,
			  uint32_t serial, int32_t x, int32_t y)
{
}

static void
toplevel_move(struct wl_client *client, struct wl_resource *res, struct wl_resource *seat, uint32_t serial)
{
}

static void
toplevel_resize(struct wl_client *client, struct wl_resource *res, struct wl_resource *seat,
		uint32_t serial, uint32_t edges)
{
	/* "Values not matching a variant of the enum will cause the
	 * invalid_resize_edge protocol error." Valid ones are ignored (no seat input). */
	if (!xdg_toplevel_resize_edge_is_valid(edges, wl_resource_get_version(res)))
		wl_resource_post_error(res, XDG_TOPLEVEL_ERROR_INVALID_RESIZE_EDGE,
				       "%u is not a resize_edge", edges);
}

static void
toplevel_set_size(struct wl_resource *res, int32_t *field, int32_t w, int32_t h)
{
	/* "Using strictly negative values for width or height will result in a
	 * invalid_size error." (min > max is checked at commit: double-buffered.) */
	if (w < 0 || h < 0) {
		wl_resource_post_error(res, XDG_TOPLEVEL_ERROR_INVALID_SIZE, "negative size %dx%d", w, h);
		return;
	}
	field[0] = w;
	field[1] = h;
}

static void
toplevel_set_max_size(struct wl_client *client, struct wl_resource *res, int32_t w, int32_t h)
{
	toplevel_set_size(res, toplevel_from(res)->pending_max, w, h);
}

static void
toplevel_set_min_size(struct wl_client *client, struct wl_resource *res, int32_t w, int32_t h)
{
	toplevel_set_size(res, toplevel_from(res)->pending_min, w, h);
}

/* Grant the state as asked; a configure says so ("If the surface was already
 * maximized, the compositor will still emit a configure event"). */
static void
toplevel_request(struct wl_resource *res, uint32_t state, bool on)
{
	struct toplevel *tl = toplevel_from(res);

	if (on)
		tl->requested |= state;
	else
		tl->requested &= ~state;
	if (tl->xs)
		send_configure(tl->xs);
}

static void
toplevel_set_maximized(struct wl_client *client, struct wl_resource *res)
{
	toplevel_request(res, STATE_MAXIMIZED, true);
}

static void
toplevel_unset_maximized(struct wl_client *client, struct wl_resource *res)
{
	toplevel_request(res, STATE_MAXIMIZED, false);
}

static void
toplevel_set_fullscreen(struct wl_client *client, struct wl_resource *res, struct wl_resource *output)
{
	toplevel_request(res, STATE_FULLSCREEN, true);
}

static void
toplevel_unset_fullscreen(struct wl_client *client, struct wl_resource *res)
{
	toplevel_request(res, STATE_FULLSCREEN, false);
}

/* Not advertised in wm_capabilities: "a compositor which doesn't advertise
 * support for minimized will ignore set_minimized requests". */
static void
toplevel_set_minimized(struct wl_client *client, struct wl_resource *res)
{
}

static const struct xdg_toplevel_interface toplevel_impl = {
	.destroy = sbwl_destroy_request,
	.set_parent = toplevel_set_parent,
	.set_title = toplevel_set_title,
	.set_app_id = toplevel_set_app_id,
	.show_window_menu = toplevel_show_window_menu,
	.move = toplevel_move,
	.resize = toplevel_resize,
	.set_max_size = toplevel_set_max_size,
	.set_min_size = toplevel_set_min_size,
	.set_maximized = toplevel_set_maximized,
	.unset_maximized = toplevel_unset_maximized,
	.set_fullscreen = toplevel_set_fullscreen,
	.unset_fullscreen = toplevel_unset_fullscreen,
	.set_minimized = toplevel_set_minimized,
};

/* "This request destroys the role surface and unmaps the surface." */
static void
toplevel_res_destroy(struct wl_resource *res)
{
	struct toplevel *tl = toplevel_from(res);
	struct toplevel *t;

	if (tl->xs) {
		role_reset(tl->xs);
		tl->xs->toplevel = NULL;
	}
	wl_list_for_each(t, &tl->shell->toplevels, link)
		if (t->parent == tl)
			t->parent = tl->parent;
	wl_list_remove(&tl->link);
	free(tl->title);
	free(tl->app_id);
	free(tl);
}

/* ---- xdg_positioner ----------------------------------------------------------------- */

static void
positioner_set_size(struct wl_client *client, struct wl_resource *res, int32_t w, int32_t h)
{
	struct positioner_rules *r = wl_resource_get_user_data(res);

	/* "If a zero or negative size is set the invalid_input error is raised." */
	if (w <= 0 || h <= 0) {
		wl_resource_post_error(res, XDG_POSITIONER_ERROR_INVALID_INPUT, "size %dx%d", w, h);
		return;
	}
	r->width = w;
	r->height = h;
	r->has_size = true;
}

static void
positioner_set_anchor_rect(struct wl_client *client, struct wl_resource *res, int32_t x, int32_t y,
			   int32_t w, int32_t h)
{
	struct positioner_rules *r = wl_resource_get_user_data(res);

	/* "If a negative size is set the invalid_input error is raised." */
	if (w < 0 || h < 0) {
		wl_resource_post_error(res, XDG_POSITIONER_ERROR_INVALID_INPUT, "anchor rect size %dx%d", w, h);
		return;
	}
	r->anchor_x = x;
	r->anchor_y = y;
	r->anchor_w = w;
	r->anchor_h = h;
	r->has_anchor_rect = true;
}

static void
positioner_set_anchor(struct wl_client *client, struct wl_resource *res, uint32_t anchor)
{
	struct positioner_rules *r = wl_resource_get_user_data(res);

	if (!xdg_positioner_anchor_is_valid(anchor, wl_resource_get_version(res))) {
		wl_resource_post_error(res, XDG_POSITIONER_ERROR_INVALID_INPUT, "%u is not an anchor", anchor);
		return;
	}
	r->anchor = anchor;
}

static void
positioner_set_gravity(struct wl_client *client, struct wl_resource *res, uint32_t gravity)
{
	struct positioner_rules *r = wl_resource_get_user_data(res);

	if (!xdg_positioner_gravity_is_valid(gravity, wl_resource_get_version(res))) {
		wl_resource_post_error(res, XDG_POSITIONER_ERROR_INVALID_INPUT, "%u is not a gravity", gravity);
		return;
	}
	r->gravity = gravity;
}

/* Kept, not used: popups are never constrained here. */
static void
positioner_set_constraint_adjustment(struct wl_client *client, struct wl_resource *res, uint32_t adj)
{
	((struct positioner_rules *)wl_resource_get_user_data(res))->constraint_adjustment = adj;
}

static void
positioner_set_offset(struct wl_client *client, struct wl_resource *res, int32_t x, int32_t y)
{
	struct positioner_rules *r = wl_resource_get_user_data(res);

	r->offset_x = x;
	r->offset_y = y;
}

static void
positioner_set_reactive(struct wl_client *client, struct wl_resource *res)
{
	((struct positioner_rules *)wl_resource_get_user_data(res))->reactive = true;
}

static void
positioner_set_parent_size(struct wl_client *client, struct wl_resource *res, int32_t w, int32_t h)
{
	struct positioner_rules *r = wl_resource_get_user_data(res);

	r->parent_w = w;
	r->parent_h = h;
}

static void
positioner_set_parent_configure(struct wl_client *client, struct wl_resource *res, uint32_t serial)
{
	((struct positioner_rules *)wl_resource_get_user_data(res))->parent_configure = serial;
}

static const struct xdg_positioner_interface positioner_impl = {
	.destroy = sbwl_destroy_request,
	.set_size = positioner_set_size,
	.set_anchor_rect = positioner_set_anchor_rect,
	.set_anchor = positioner_set_anchor,
	.set_gravity = positioner_set_gravity,
	.set_constraint_adjustment = positioner_set_constraint_adjustment,
	.set_offset = positioner_set_offset,
	.set_reactive = positioner_set_reactive,
	.set_parent_size = positioner_set_parent_size,
	.set_parent_configure = positioner_set_parent_configure,
};

static void
positioner_res_destroy(struct wl_resource *res)
{
	free(wl_resource_get_user_data(res));
}

/*
 * The rules of a complete positioner: "it must have a non-zero size set by
 * set_size, and a non-zero anchor rectangle set by set_anchor_rect. Passing an
 * incomplete xdg_positioner object when positioning a surface raises an
 * invalid_positioner error." Returns false after posting it.
 */
static bool
positioner_take(struct xdg_surface *xs, struct wl_resource *res, struct positioner_rules *out)
{
	const struct positioner_rules *r = wl_resource_get_user_data(res);

	if (!r->has_size || !r->has_anchor_rect || r->anchor_w <= 0 || r->anchor_h <= 0) {
		post_base_error(xs, XDG_WM_BASE_ERROR_INVALID_POSITIONER,
				"incomplete xdg_positioner: a size and a non-zero anchor rectangle are needed");
		return false;
	}
	*out = *r;
	return true;
}

/* ---- xdg_popup ---------------------------------------------------------------------- */

/* Whether any live popup has xs as its parent: then xs's popup is not the topmost. */
static bool
has_child_popup(struct sbwl_shell *shell, struct xdg_surface *xs)
{
	struct popup *p;

	wl_list_for_each(p, &shell->popups, link)
		if (p->parent == xs)
			return true;
	return false;
}

static void
popup_destroy_request(struct wl_client *client, struct wl_resource *res)
{
	struct popup *popup = wl_resource_get_user_data(res);

	/* "If this xdg_popup is not the "topmost" popup, the
	 * xdg_wm_base.not_the_topmost_popup protocol error will be sent." */
	if (popup->xs && has_child_popup(popup->shell, popup->xs)) {
		post_base_error(popup->xs, XDG_WM_BASE_ERROR_NOT_THE_TOPMOST_POPUP,
				"xdg_popup destroyed before the popups above it");
		return;
	}
	wl_resource_destroy(res);
}

static void
popup_grab(struct wl_client *client, struct wl_resource *res, struct wl_resource *seat, uint32_t serial)
{
	struct popup *popup = wl_resource_get_user_data(res);

	/* invalid_grab: "tried to grab after being mapped" */
	if (popup->xs && popup->xs->surf && popup->xs->surf->mapped) {
		wl_resource_post_error(res, XDG_POPUP_ERROR_INVALID_GRAB, "grab of a mapped popup");
		return;
	}
	/* No seat input to grab: "If the compositor denies the grab, the popup will
	 * be immediately dismissed." */
	if (!popup->dismissed) {
		popup->dismissed = true;
		xdg_popup_send_popup_done(res);
	}
}

static void
popup_reposition(struct wl_client *client, struct wl_resource *res, struct wl_resource *positioner,
		 uint32_t token)
{
	struct popup *popup = wl_resource_get_user_data(res);
	struct positioner_rules rules;

	if (!popup->xs)
		return;
	if (!positioner_take(popup->xs, positioner, &rules))
		return;
	popup->rules = rules;
	/* "a xdg_popup.repositioned followed by xdg_popup.configure and
	 * xdg_surface.configure will be emitted in response" (once configures flow) */
	if (popup->xs->initial_committed) {
		xdg_popup_send_repositioned(res, token);
		send_configure(popup->xs);
	}
}

static const struct xdg_popup_interface popup_impl = {
	.destroy = popup_destroy_request,
	.grab = popup_grab,
	.reposition = popup_reposition,
};

/* "Explicitly destroying the xdg_popup object will also dismiss the popup, and unmap the surface." */
static void
popup_res_destroy(struct wl_resource *res)
{
	struct popup *popup = wl_resource_get_user_data(res);

	if (popup->xs) {
		role_reset(popup->xs);
		popup->xs->popup = NULL;
	}
	wl_list_remove(&popup->link);
	free(popup);
}

/* ---- xdg_surface -------------------------------------------------------------------- */

static void
xdg_surface_destroy_request(struct wl_client *client, struct wl_resource *res)
{
	struct xdg_surface *xs = wl_resource_get_user_data(res);

	/* "An xdg_surface must only be destroyed after its role object has been
	 * destroyed, otherwise a defunct_role_object error is raised." */
	if (xs->toplevel || xs->popup) {
		wl_resource_post_error(res, XDG_SURFACE_ERROR_DEFUNCT_ROLE_OBJECT,
				       "xdg_surface destroyed before its role object");
		return;
	}
	wl_resource_destroy(res);
}

static bool
constructable(struct xdg_surface *xs)
{
	if (xs->toplevel || xs->popup) {
		wl_resource_post_error(xs->resource, XDG_SURFACE_ERROR_ALREADY_CONSTRUCTED,
				       "xdg_surface already has a role object");
		return false;
	}
	return true;
}

static void
xdg_surface_get_toplevel(struct wl_client *client, struct wl_resource *res, uint32_t id)
{
	struct xdg_surface *xs = wl_resource_get_user_data(res);
	struct toplevel *tl;

	if (!constructable(xs) || !role_assign(xs, &toplevel_role))
		return;
	tl = calloc(1, sizeof(*tl));
	if (!tl) {
		wl_client_post_no_memory(client);
		return;
	}
	tl->shell = xs->shell;
	tl->resource = sbwl_resource_new(client, &xdg_toplevel_interface, wl_resource_get_version(res), id,
					 &toplevel_impl, tl, toplevel_res_destroy);
	if (!tl->resource) {
		free(tl);
		return;
	}
	tl->xs = xs;
	xs->toplevel = tl;
	wl_list_insert(xs->shell->toplevels.prev, &tl->link);
}

static void
xdg_surface_get_popup(struct wl_client *client, struct wl_resource *res, uint32_t id,
		      struct wl_resource *parent_res, struct wl_resource *positioner)
{
	struct xdg_surface *xs = wl_resource_get_user_data(res);
	struct xdg_surface *parent = parent_res ? wl_resource_get_user_data(parent_res) : NULL;
	struct positioner_rules rules;
	struct popup *popup;

	if (!constructable(xs))
		return;
	/* "the client specified an invalid popup parent surface": one without a
	 * role object (not mapped-able), itself, or one whose wl_surface went */
	if (parent && (parent == xs || (!parent->toplevel && !parent->popup) || !parent->surf)) {
		post_base_error(xs, XDG_WM_BASE_ERROR_INVALID_POPUP_PARENT, "invalid xdg_popup parent");
		return;
	}
	if (!positioner_take(xs, positioner, &rules) || !role_assign(xs, &popup_role))
		return;
	popup = calloc(1, sizeof(*popup));
	if (!popup) {
		wl_client_post_no_memory(client);
		return;
	}
	popup->shell = xs->shell;
	popup->rules = rules;
	popup->parent = parent;
	popup->parent_given = parent != NULL;
	popup->resource = sbwl_resource_new(client, &xdg_popup_interface, wl_resource_get_version(res), id,
					    &popup_impl, popup, popup_res_destroy);
	if (!popup->resource) {
		free(popup);
		return;
	}
	popup->xs = xs;
	xs->popup = popup;
	wl_list_insert(xs->shell->popups.prev, &popup->link);
}

static void
xdg_surface_set_window_geometry(struct wl_client *client, struct wl_resource *res, int32_t x, int32_t y,
				int32_t w, int32_t h)
{
	struct xdg_surface *xs = wl_resource_get_user_data(res);

	/* "The width and height of the effective window geometry must be greater
	 * than zero. Setting an invalid size will raise an invalid_size error." */
	if (w <= 0 || h <= 0) {
		wl_resource_post_error(res, XDG_SURFACE_ERROR_INVALID_SIZE, "window geometry %dx%d", w, h);
		return;
	}
	xs->pending_geom = (struct geometry){ .x = x, .y = y, .width = w, .height = h, .set = true };
}

static void
xdg_surface_ack_configure(struct wl_client *client, struct wl_resource *res, uint32_t serial)
{
	struct xdg_surface *xs = wl_resource_get_user_data(res);
	struct configure *c, *tmp, *found = NULL;

	wl_list_for_each(c, &xs->configures, link) {
		if (c->serial == serial) {
			found = c;
			break;
		}
	}
	/* "Acking a configure event that was never sent raises an invalid_serial
	 * error." Acked and older ones are gone from the list, so acking one of
	 * them again ("a configure event issued before the event identified by
	 * the last ack_configure") lands here too. */
	if (!found) {
		wl_resource_post_error(res, XDG_SURFACE_ERROR_INVALID_SERIAL, "no configure %u to ack", serial);
		return;
	}
	xs->acked_states = found->states;
	xs->configured = true;
	/* "Sending an ack_configure request consumes the serial number sent with
	 * the request, as well as serial numbers sent by all configure events sent
	 * on this xdg_surface prior to the configure event referenced by the
	 * committed serial." */
	wl_list_for_each_safe(c, tmp, &xs->configures, link) {
		wl_list_remove(&c->link);
		xs->n_configures--;
		bool last = c == found;
		free(c);
		if (last)
			break;
	}
}

static const struct xdg_surface_interface xdg_surface_impl = {
	.destroy = xdg_surface_destroy_request,
	.get_toplevel = xdg_surface_get_toplevel,
	.get_popup = xdg_surface_get_popup,
	.set_window_geometry = xdg_surface_set_window_geometry,
	.ack_configure = xdg_surface_ack_configure,
};

static void
xdg_surface_surface_destroyed(struct wl_listener *l, void *data)
{
	struct xdg_surface *xs = wl_container_of(l, xs, surface_destroy);

	/* the wl_surface unmaps itself */
	wl_list_remove(&xs->surface_destroy.link);
	wl_list_init(&xs->surface_destroy.link);
	xs->surf = NULL;
}

static void
xdg_surface_res_destroy(struct wl_resource *res)
{
	struct xdg_surface *xs = wl_resource_get_user_data(res);
	struct popup *p;

	/* A disconnecting client's role object may outlive us for a moment. */
	if (xs->toplevel || xs->popup)
		role_reset(xs);
	if (xs->toplevel)
		xs->toplevel->xs = NULL;
	if (xs->popup)
		xs->popup->xs = NULL;
	/* Popups on top of this one lose their parent, and the screen. */
	wl_list_for_each(p, &xs->shell->popups, link) {
		if (p->parent != xs)
			continue;
		p->parent = NULL;
		if (p->xs && p->xs->surf)
			sbwl_surface_unmap(p->xs->surf);
	}
	if (xs->surf) {
		sbwl_surface_unmap(xs->surf);
		xs->surf->role_data = NULL;
	}
	wl_list_remove(&xs->surface_destroy.link);
	wl_list_remove(&xs->link);
	configures_clear(xs);
	free(xs);
}

/* ---- xdg_wm_base ------------------------------------------------------------------ */

static int
ping_timeout_ms(const struct sbwl_shell *shell)
{
	return shell->comp->opt.ping_timeout_ms > 0 ? shell->comp->opt.ping_timeout_ms : DEFAULT_PING_TIMEOUT_MS;
}

/* The next ping, ping_timeout_ms / 2 after the last pong. */
static void
base_arm_next_ping(struct wm_base *b)
{
	int ms = ping_timeout_ms(b->shell) / 2;

	wl_event_source_timer_update(b->ping_timer, ms > 0 ? ms : 1);
}

static void
base_ping(struct wm_base *b)
{
	b->ping_serial = wl_display_next_serial(b->shell->comp->display);
	b->ping_pending = true;
	xdg_wm_base_send_ping(b->resource, b->ping_serial);
	wl_event_source_timer_update(b->ping_timer, ping_timeout_ms(b->shell));
}

static int
base_ping_timer(void *data)
{
	struct wm_base *b = data;

	if (b->unresponsive)
		return 0;
	if (b->ping_pending) {
		b->unresponsive = true;
		wl_resource_post_error(b->resource, XDG_WM_BASE_ERROR_UNRESPONSIVE,
				       "ping %u unanswered for %d ms", b->ping_serial, ping_timeout_ms(b->shell));
		return 0;
	}
	if (!wl_list_empty(&b->surfaces))
		base_ping(b);
	return 0;
}

static void
base_pong(struct wl_client *client, struct wl_resource *res, uint32_t serial)
{
	struct wm_base *b = wl_resource_get_user_data(res);

	/* A pong for another serial (an old ping, or none): not an answer, not an error. */
	if (!b->ping_pending || serial != b->ping_serial)
		return;
	b->ping_pending = false;
	if (wl_list_empty(&b->surfaces))
		wl_event_source_timer_update(b->ping_timer, 0);
	else
		base_arm_next_ping(b);
}

static void
base_destroy_request(struct wl_client *client, struct wl_resource *res)
{
	struct wm_base *b = wl_resource_get_user_data(res);

	/* "Destroying a bound xdg_wm_base object while there are surfaces still
	 * alive created by this xdg_wm_base object instance is illegal and will
	 * result in a defunct_surfaces error." */
	if (!wl_list_empty(&b->surfaces)) {
		wl_resource_post_error(res, XDG_WM_BASE_ERROR_DEFUNCT_SURFACES,
				       "xdg_wm_base destroyed before its xdg_surfaces");
		return;
	}
	wl_resource_destroy(res);
}

static void
base_create_positioner(struct wl_client *client, struct wl_resource *res, uint32_t id)
{
	struct positioner_rules *r = calloc(1, sizeof(*r));

	if (!r) {
		wl_client_post_no_memory(client);
		return;
	}
	if (!sbwl_resource_new(client, &xdg_positioner_interface, wl_resource_get_version(res), id,
			       &positioner_impl, r, positioner_res_destroy))
		free(r);
}

static void
base_get_xdg_surface(struct wl_client *client, struct wl_resource *res, uint32_t id,
		     struct wl_resource *surface_res)
{
	struct wm_base *b = wl_resource_get_user_data(res);
	struct sbwl_surface *surf = sbwl_surface_from_resource(surface_res);
	const struct sbwl_role *role;
	struct xdg_surface *xs;

	if (!surf) {
		wl_resource_post_error(res, XDG_WM_BASE_ERROR_ROLE, "not a wl_surface of this compositor");
		return;
	}
	/* "It is illegal to create an xdg_surface for a wl_surface which already has
	 * an assigned role and this will result in a role error." An xdg role of
	 * an earlier xdg_surface may be taken up again; a live one may not. */
	if (surf->role && (!is_xdg_role(surf->role) || surf->role_data)) {
		wl_resource_post_error(res, XDG_WM_BASE_ERROR_ROLE, "wl_surface@%u already has the role %s%s",
				       wl_resource_get_id(surface_res), surf->role->name,
				       surf->role_data ? " and an xdg_surface" : "");
		return;
	}
	/* "Creating an xdg_surface from a wl_surface which has a buffer attached or
	 * committed is a client error" */
	if ((surf->pending.attached && surf->pending.buffer) || surf->width > 0) {
		wl_resource_post_error(res, XDG_WM_BASE_ERROR_INVALID_SURFACE_STATE,
				       "wl_surface@%u has a buffer attached or committed",
				       wl_resource_get_id(surface_res));
		return;
	}
	xs = calloc(1, sizeof(*xs));
	if (!xs) {
		wl_client_post_no_memory(client);
		return;
	}
	xs->shell = b->shell;
	wl_list_init(&xs->configures);
	wl_list_init(&xs->surface_destroy.link);
	wl_list_init(&xs->link);
	xs->resource = sbwl_resource_new(client, &xdg_surface_interface, wl_resource_get_version(res), id,
					 &xdg_surface_impl, xs, xdg_surface_res_destroy);
	if (!xs->resource) {
		free(xs);
		return;
	}
	role = surf->role ? surf->role : &xdg_surface_role;
	sbwl_surface_set_role(surf, role, xs, res, XDG_WM_BASE_ERROR_ROLE); /* cannot fail: checked above */
	xs->surf = surf;
	xs->surface_destroy.notify = xdg_surface_surface_destroyed;
	wl_signal_add(&surf->destroy_signal, &xs->surface_destroy);
	if (wl_list_empty(&b->surfaces) && !b->ping_pending && !b->unresponsive)
		base_arm_next_ping(b);
	xs->base = b;
	wl_list_insert(b->surfaces.prev, &xs->link);
}

static const struct xdg_wm_base_interface base_impl = {
	.destroy = base_destroy_request,
	.create_positioner = base_create_positioner,
	.get_xdg_surface = base_get_xdg_surface,
	.pong = base_pong,
};

static void
base_res_destroy(struct wl_resource *res)
{
	struct wm_base *b = wl_resource_get_user_data(res);
	struct xdg_surface *xs, *tmp;

	/* a disconnecting client's xdg_surfaces may go after us */
	wl_list_for_each_safe(xs, tmp, &b->surfaces, link) {
		xs->base = NULL;
		wl_list_remove(&xs->link);
		wl_list_init(&xs->link);
	}
	wl_event_source_remove(b->ping_timer);
	free(b);
}

static void
base_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	struct sbwl_shell *shell = data;
	struct wm_base *b = calloc(1, sizeof(*b));

	if (!b) {
		wl_client_post_no_memory(client);
		return;
	}
	b->shell = shell;
	wl_list_init(&b->surfaces);
	b->ping_timer = wl_event_loop_add_timer(shell->comp->loop, base_ping_timer, b);
	if (!b->ping_timer) {
		free(b);
		wl_client_post_no_memory(client);
		return;
	}
	b->resource = sbwl_resource_new(client, &xdg_wm_base_interface, (int)version, id, &base_impl, b,
					base_res_destroy);
	if (!b->resource) {
		wl_event_source_remove(b->ping_timer);
		free(b);
		return;
	}
	base_ping(b);
}

/* ---- the global --------------------------------------------------------------------- */

struct sbwl_shell *
sbwl_shell_create(struct sbwl_comp *comp)
{
	struct sbwl_shell *shell = calloc(1, sizeof(*shell));

	if (!shell)
		return NULL;
	shell->comp = comp;
	wl_list_init(&shell->toplevels);
	wl_list_init(&shell->popups);
	shell->global = wl_global_create(comp->display, &xdg_wm_base_interface, WM_BASE_VERSION, shell,
					 base_bind);
	if (!shell->global) {
		free(shell);
		return NULL;
	}
	return shell;
}

void
sbwl_shell_destroy(struct sbwl_shell *shell)
{
	if (!shell)
		return;
	/* the clients went first (sbwl_comp_destroy): no object of ours is left */
	wl_global_destroy(shell->global);
	free(shell);
}

int
sbwl_shell_close_all(struct sbwl_shell *shell)
{
	struct toplevel *tl;
	int n = 0;

	if (!shell)
		return 0;
	wl_list_for_each(tl, &shell->toplevels, link) {
		xdg_toplevel_send_close(tl->resource);
		n++;
	}
	return n;
}
