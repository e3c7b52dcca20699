/* SPDX-License-Identifier: MIT */
/*
 * xdg-shell for the example compositor (wlc_internal.h): xdg_wm_base
 * version 6 with xdg_positioner, xdg_surface, xdg_toplevel and xdg_popup.
 *
 * What it does with the protocol's freedom:
 *  - ping: while the client has xdg_surfaces, one every ping_timeout_ms / 2
 *    after its first xdg_surface and after the last pong (opt.ping_timeout_ms,
 *    0: 5000). Not at bind: a client that binds xdg_wm_base and never has a
 *    window for long (wl-copy serves the clipboard for as long as it owns it,
 *    with a short-lived surface only to get the focus, and has no ping
 *    listener then) is not a window that can hang, and was ended 5 s in.
 *    A ping unanswered for ping_timeout_ms marks the client not responding
 *    (a line on stderr; no new ping until it answers, and a line when it
 *    does), as mutter, KWin and Weston do: they tell the user and leave the
 *    ending to them. A client's main loop can be held up that long by work
 *    that ends: gtk4-widget-factory, before its first frame in the TCG guest
 *    on a slow host, was ended in the middle (CI, 2026-12-07). Only with
 *    opt.ping_disconnect (the --ping-timeout-ms option) is it ended, with
 *    xdg_wm_base.error.unresponsive ("The “unresponsive” error is provided
 *    for compositors that wish to disconnect unresponsive clients").
 *  - toplevels: every configure says "activated"; maximized and fullscreen
 *    are granted as asked, sized to the output and placed at its corner
 *    (fullscreen: centred); otherwise the size is 0x0 ("the client should
 *    decide its own window dimension") and a new toplevel is placed on a
 *    cascade of CASCADE_STEP px steps. wm_capabilities (v5) offers maximize
 *    and fullscreen; set_minimized, show_window_menu, move and resize are
 *    ignored (no minimized state, no seat input). configure_bounds (v4) is
 *    the output size. A toplevel that goes on screen takes the keyboard
 *    focus (wlc_seat.c).
 *  - popups: placed by the positioner's anchor, gravity and offset, never
 *    constrained. There is no seat input to grab with, so a grab is denied:
 *    "If the compositor denies the grab, the popup will be immediately
 *    dismissed" — popup_done at once, and the popup is never mapped.
 *
 * An xdg_surface installs the wlc role at get_xdg_surface (its precommit
 * enforces not_constructed and unconfigured_buffer); get_toplevel and
 * get_popup refine it to the role proper, which the wl_surface keeps for
 * life. Every pointer between the objects is cleared by the destroy of the
 * object it points to, in whatever order a disconnecting client's resources
 * go; errors are posted only from requests, never from a destroy.
 *
 * This file has the global, xdg_wm_base, xdg_surface and the role hooks; the
 * role objects are wlc_shell_toplevel.c and wlc_shell_popup.c, what they
 * share with it wlc_shell_configure.c, and the ping wlc_shell_ping.c
 * (wlc_shell_internal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include "wlc_shell_internal.h"
#include "xdg-shell-server-protocol.h"

/* 6 (the "suspended" state) costs nothing: we never suspend. 7's
 * constrained_* states need constraint adjustment, which we do not do. */
#define WM_BASE_VERSION 6

static const struct wlc_role xdg_surface_role, toplevel_role, popup_role;

static bool
is_xdg_role(const struct wlc_role *role)
{
	return role == &xdg_surface_role || role == &toplevel_role || role == &popup_role;
}

/* ---- configure sequences ------------------------------------------------------- */

/*
 * A configure sequence (wlc_shell_configure.c), with the role's events. Only
 * after the initial commit ("The compositor will reply with ... an
 * xdg_surface.configure event").
 */
static void
send_configure(struct xdg_surface *xs)
{
	if (xs->toplevel)
		shell_toplevel_configure(xs->toplevel);
	else if (xs->popup)
		shell_popup_configure(xs->popup);
}

/* ---- mapping -------------------------------------------------------------------- */

/* Where the surface goes on the output, on each applied commit with a buffer. */
static void
place(struct xdg_surface *xs)
{
	if (xs->toplevel)
		shell_toplevel_place(xs->toplevel);
	else if (xs->popup)
		shell_popup_place(xs->popup);
}

/*
 * Back to the state right after get_toplevel / get_popup (a NULL buffer, or
 * the role object went): "the client must perform the initial commit again
 * before attaching a buffer".
 */
static void
role_reset(struct xdg_surface *xs)
{
	shell_configure_reset(xs);
	if (xs->toplevel)
		shell_toplevel_reset(xs->toplevel);
}

/* ---- the role hooks -------------------------------------------------------------- */

static bool
xdg_precommit(struct wlc_surface *surf, const struct wlc_state *pending)
{
	struct xdg_surface *xs = surf->role_data;
	bool buffer = pending->attached && pending->buffer;

	if (!xs)
		return true; /* its xdg_surface went: a wl_surface with a role and nothing more */
	if (!xs->toplevel && !xs->popup) {
		/*
		 * "A role must be assigned before any other requests are made
		 * to the xdg_surface object."
		 */
		wl_resource_post_error(xs->resource, XDG_SURFACE_ERROR_NOT_CONSTRUCTED,
				       "commit of an xdg_surface without a role object");
		return false;
	}
	if (buffer && !xs->configured && xs->shell->comp->opt.accept_unacked_buffer) {
		/* the harness's leniency (wlc_compositor.h): initial commit, configure, ack */
		if (!xs->initial_committed) {
			xs->initial_committed = true;
			send_configure(xs);
		}
		xs->configured = true;
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
				wl_resource_post_error(tl->resource,
						       XDG_TOPLEVEL_ERROR_INVALID_SIZE,
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
		shell_post_base_error(xs, XDG_WM_BASE_ERROR_INVALID_POPUP_PARENT,
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
xdg_applied(struct wlc_surface *surf, bool has_buffer)
{
	struct xdg_surface *xs = surf->role_data;
	bool was_mapped;

	if (!xs || (!xs->toplevel && !xs->popup))
		return;
	if (!has_buffer) {
		wlc_surface_unmap(surf);
		return;
	}
	/* a commit applied late (its acquire fence) after a reset: not mapped */
	if (!xs->configured || (xs->popup && xs->popup->dismissed))
		return;
	was_mapped = surf->mapped;
	place(xs);
	wlc_surface_map(surf);
	if (xs->toplevel && !was_mapped)
		wlc_seat_toplevel_mapped(surf->comp->seat, surf);
}

static const struct wlc_role xdg_surface_role = {
	.name = "xdg_surface", .precommit = xdg_precommit, .applied = xdg_applied,
};
static const struct wlc_role toplevel_role = {
	.name = "xdg_toplevel", .precommit = xdg_precommit, .applied = xdg_applied,
};
static const struct wlc_role popup_role = {
	.name = "xdg_popup", .precommit = xdg_precommit, .applied = xdg_applied,
};

/*
 * Give xs's wl_surface the role proper. xdg_surface "does not set the role";
 * the wlc role it installed for the precommit checks is refined in place
 * here, once; after that the wl_surface keeps it for life and a role object
 * of the other kind is a role error.
 */
static bool
role_assign(struct xdg_surface *xs, const struct wlc_role *role)
{
	struct wlc_surface *surf = xs->surf;

	if (!surf)
		return true;
	if (surf->role == &xdg_surface_role) {
		surf->role = role;
		return true;
	}
	return wlc_surface_set_role(surf, role, xs, xs->base ? xs->base->resource : xs->resource,
				     XDG_WM_BASE_ERROR_ROLE);
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

	if (!constructable(xs) || !role_assign(xs, &toplevel_role))
		return;
	shell_toplevel_create(xs, client, wl_resource_get_version(res), id);
}

static void
xdg_surface_get_popup(struct wl_client *client, struct wl_resource *res, uint32_t id,
		      struct wl_resource *parent_res, struct wl_resource *positioner)
{
	struct xdg_surface *xs = wl_resource_get_user_data(res);
	struct xdg_surface *parent = parent_res ? wl_resource_get_user_data(parent_res) : NULL;
	struct positioner_rules rules;

	if (!constructable(xs))
		return;
	/* "the client specified an invalid popup parent surface": one without a
	 * role object (not mapped-able), itself, or one whose wl_surface went */
	if (parent && (parent == xs || (!parent->toplevel && !parent->popup) || !parent->surf)) {
		shell_post_base_error(xs, XDG_WM_BASE_ERROR_INVALID_POPUP_PARENT,
				      "invalid xdg_popup parent");
		return;
	}
	if (!shell_positioner_take(xs, positioner, &rules) || !role_assign(xs, &popup_role))
		return;
	shell_popup_create(xs, client, wl_resource_get_version(res), id, parent, &rules);
}

static void
xdg_surface_set_window_geometry(struct wl_client *client, struct wl_resource *res, int32_t x,
				int32_t y, int32_t w, int32_t h)
{
	struct xdg_surface *xs = wl_resource_get_user_data(res);

	/* "The width and height of the effective window geometry must be greater
	 * than zero. Setting an invalid size will raise an invalid_size error." */
	if (w <= 0 || h <= 0) {
		wl_resource_post_error(res, XDG_SURFACE_ERROR_INVALID_SIZE, "window geometry %dx%d",
				       w, h);
		return;
	}
	xs->pending_geom =
		(struct geometry){ .x = x, .y = y, .width = w, .height = h, .set = true };
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
		wl_resource_post_error(res, XDG_SURFACE_ERROR_INVALID_SERIAL,
				       "no configure %u to ack", serial);
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

	/* A disconnecting client's role object may outlive us for a moment. */
	if (xs->toplevel || xs->popup)
		role_reset(xs);
	if (xs->toplevel)
		xs->toplevel->xs = NULL;
	if (xs->popup)
		xs->popup->xs = NULL;
	/* Popups on top of this one lose their parent, and the screen. */
	shell_popup_parent_gone(xs->shell, xs);
	if (xs->surf) {
		wlc_surface_unmap(xs->surf);
		xs->surf->role_data = NULL;
	}
	wl_list_remove(&xs->surface_destroy.link);
	wl_list_remove(&xs->link);
	shell_configure_clear(xs);
	free(xs);
}

/* ---- xdg_wm_base ------------------------------------------------------------------ */

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
base_get_xdg_surface(struct wl_client *client, struct wl_resource *res, uint32_t id,
		     struct wl_resource *surface_res)
{
	struct wm_base *b = wl_resource_get_user_data(res);
	struct wlc_surface *surf = wlc_surface_from_resource(surface_res);
	const struct wlc_role *role;
	struct xdg_surface *xs;

	if (!surf) {
		wl_resource_post_error(res, XDG_WM_BASE_ERROR_ROLE,
				       "not a wl_surface of this compositor");
		return;
	}
	/* "It is illegal to create an xdg_surface for a wl_surface which already has
	 * an assigned role and this will result in a role error." An xdg role of
	 * an earlier xdg_surface may be taken up again; a live one may not. */
	if (surf->role && (!is_xdg_role(surf->role) || surf->role_data)) {
		wl_resource_post_error(res, XDG_WM_BASE_ERROR_ROLE,
				       "wl_surface@%u already has the role %s%s",
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
	xs = wlc_client_zalloc(client, sizeof(*xs));
	if (!xs)
		return;
	xs->shell = b->shell;
	wl_list_init(&xs->configures);
	wl_list_init(&xs->surface_destroy.link);
	wl_list_init(&xs->link);
	xs->resource = wlc_resource_new(client, &xdg_surface_interface,
					wl_resource_get_version(res), id, &xdg_surface_impl, xs,
					xdg_surface_res_destroy);
	if (!xs->resource) {
		free(xs);
		return;
	}
	role = surf->role ? surf->role : &xdg_surface_role;
	wlc_surface_set_role(surf, role, xs, res,
			     XDG_WM_BASE_ERROR_ROLE); /* cannot fail: checked above */
	xs->surf = surf;
	xs->surface_destroy.notify = xdg_surface_surface_destroyed;
	wl_signal_add(&surf->destroy_signal, &xs->surface_destroy);
	if (wl_list_empty(&b->surfaces) && !b->ping_pending && !b->unresponsive)
		shell_ping_arm(b);
	xs->base = b;
	wl_list_insert(b->surfaces.prev, &xs->link);
}

static const struct xdg_wm_base_interface base_impl = {
	.destroy = base_destroy_request,
	.create_positioner = shell_positioner_create,
	.get_xdg_surface = base_get_xdg_surface,
	.pong = shell_ping_pong,
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
	struct wlc_shell *shell = data;
	struct wm_base *b = wlc_client_zalloc(client, sizeof(*b));

	if (!b)
		return;
	b->shell = shell;
	wl_list_init(&b->surfaces);
	b->ping_timer = wl_event_loop_add_timer(shell->comp->loop, shell_ping_timer, b);
	if (!b->ping_timer) {
		free(b);
		wl_client_post_no_memory(client);
		return;
	}
	b->resource = wlc_resource_new(client, &xdg_wm_base_interface, (int)version, id, &base_impl,
				       b, base_res_destroy);
	if (!b->resource) {
		wl_event_source_remove(b->ping_timer);
		free(b);
		return;
	}
}

/* ---- the global --------------------------------------------------------------------- */

struct wlc_shell *
wlc_shell_create(struct wlc_comp *comp)
{
	struct wlc_shell *shell = calloc(1, sizeof(*shell));

	if (!shell)
		return NULL;
	shell->comp = comp;
	wl_list_init(&shell->toplevels);
	wl_list_init(&shell->popups);
	shell->global = wl_global_create(comp->display, &xdg_wm_base_interface, WM_BASE_VERSION,
					 shell, base_bind);
	if (!shell->global) {
		free(shell);
		return NULL;
	}
	return shell;
}

void
wlc_shell_destroy(struct wlc_shell *shell)
{
	if (!shell)
		return;
	/* the clients went first (wlc_comp_destroy): no object of ours is left */
	wl_global_destroy(shell->global);
	free(shell);
}

int
wlc_shell_close_all(struct wlc_shell *shell)
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
