/* SPDX-License-Identifier: MIT */
/*
 * xdg-shell for the example compositor (wlc_shell_internal.h):
 * xdg_positioner and xdg_popup. Popups are placed by the positioner's anchor,
 * gravity and offset, never constrained; a grab is denied (no seat input),
 * so a grabbing popup is dismissed at once (wlc_shell.c says more).
 */
#include <stdlib.h>

#include <wayland-server-core.h>

#include "wlc_shell_internal.h"
#include "xdg-shell-server-protocol.h"

/* ---- configure sequences ------------------------------------------------------- */

/* Where a popup goes, relative to its parent's window geometry (the positioner's rules). */
static void
popup_position(const struct positioner_rules *r, int32_t *x, int32_t *y)
{
	int32_t px = r->anchor_x + r->anchor_w / 2, py = r->anchor_y + r->anchor_h / 2;

	switch (r->anchor) {
	case XDG_POSITIONER_ANCHOR_TOP:
	case XDG_POSITIONER_ANCHOR_TOP_LEFT:
	case XDG_POSITIONER_ANCHOR_TOP_RIGHT:
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

void
shell_popup_configure(struct popup *popup)
{
	struct configure *c = shell_configure_begin(popup->xs);
	int32_t x, y;

	if (!c)
		return;
	popup_position(&popup->rules, &x, &y);
	xdg_popup_send_configure(popup->resource, x, y, popup->rules.width, popup->rules.height);
	shell_configure_end(popup->xs, c);
}

/* ---- mapping -------------------------------------------------------------------- */

void
shell_popup_place(struct popup *popup)
{
	struct xdg_surface *xs = popup->xs;
	struct xdg_surface *parent = popup->parent;
	int32_t x, y;

	popup_position(&popup->rules, &x, &y);
	if (parent && parent->surf) {
		x += parent->surf->x + (parent->geom.set ? parent->geom.x : 0);
		y += parent->surf->y + (parent->geom.set ? parent->geom.y : 0);
	}
	xs->surf->x = x - (xs->geom.set ? xs->geom.x : 0);
	xs->surf->y = y - (xs->geom.set ? xs->geom.y : 0);
}

void
shell_popup_parent_gone(struct wlc_shell *shell, struct xdg_surface *parent)
{
	struct popup *p;

	wl_list_for_each(p, &shell->popups, link) {
		if (p->parent != parent)
			continue;
		p->parent = NULL;
		if (p->xs && p->xs->surf)
			wlc_surface_unmap(p->xs->surf);
	}
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
		wl_resource_post_error(res, XDG_POSITIONER_ERROR_INVALID_INPUT,
				       "anchor rect size %dx%d", w, h);
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
		wl_resource_post_error(res, XDG_POSITIONER_ERROR_INVALID_INPUT,
				       "%u is not an anchor", anchor);
		return;
	}
	r->anchor = anchor;
}

static void
positioner_set_gravity(struct wl_client *client, struct wl_resource *res, uint32_t gravity)
{
	struct positioner_rules *r = wl_resource_get_user_data(res);

	if (!xdg_positioner_gravity_is_valid(gravity, wl_resource_get_version(res))) {
		wl_resource_post_error(res, XDG_POSITIONER_ERROR_INVALID_INPUT,
				       "%u is not a gravity", gravity);
		return;
	}
	r->gravity = gravity;
}

/* Kept, not used: popups are never constrained here. */
static void
positioner_set_constraint_adjustment(struct wl_client *client, struct wl_resource *res,
				     uint32_t adj)
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
	.destroy = wlc_destroy_request,
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

void
shell_positioner_create(struct wl_client *client, struct wl_resource *res, uint32_t id)
{
	struct positioner_rules *r = wlc_client_zalloc(client, sizeof(*r));

	if (!r)
		return;
	if (!wlc_resource_new(client, &xdg_positioner_interface, wl_resource_get_version(res), id,
			       &positioner_impl, r, positioner_res_destroy))
		free(r);
}

/*
 * The rules of a complete positioner: "it must have a non-zero size set by
 * set_size, and a non-zero anchor rectangle set by set_anchor_rect. Passing an
 * incomplete xdg_positioner object when positioning a surface raises an
 * invalid_positioner error." Returns false after posting it.
 */
bool
shell_positioner_take(struct xdg_surface *xs, struct wl_resource *res, struct positioner_rules *out)
{
	const struct positioner_rules *r = wl_resource_get_user_data(res);

	if (!r->has_size || !r->has_anchor_rect || r->anchor_w <= 0 || r->anchor_h <= 0) {
		shell_post_base_error(xs, XDG_WM_BASE_ERROR_INVALID_POSITIONER,
				      "incomplete xdg_positioner: a size and a non-zero anchor "
				      "rectangle are needed");
		return false;
	}
	*out = *r;
	return true;
}

/* ---- xdg_popup ---------------------------------------------------------------------- */

/* Whether any live popup has xs as its parent: then xs's popup is not the topmost. */
static bool
has_child_popup(struct wlc_shell *shell, struct xdg_surface *xs)
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
		shell_post_base_error(popup->xs, XDG_WM_BASE_ERROR_NOT_THE_TOPMOST_POPUP,
				      "xdg_popup destroyed before the popups above it");
		return;
	}
	wl_resource_destroy(res);
}

static void
popup_grab(struct wl_client *client, struct wl_resource *res, struct wl_resource *seat,
	   uint32_t serial)
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
	if (!shell_positioner_take(popup->xs, positioner, &rules))
		return;
	popup->rules = rules;
	/* "a xdg_popup.repositioned followed by xdg_popup.configure and
	 * xdg_surface.configure will be emitted in response" (once configures flow) */
	if (popup->xs->initial_committed) {
		xdg_popup_send_repositioned(res, token);
		shell_popup_configure(popup);
	}
}

static const struct xdg_popup_interface popup_impl = {
	.destroy = popup_destroy_request,
	.grab = popup_grab,
	.reposition = popup_reposition,
};

/*
 * "Explicitly destroying the xdg_popup object will also dismiss the popup,
 * and unmap the surface."
 */
static void
popup_res_destroy(struct wl_resource *res)
{
	struct popup *popup = wl_resource_get_user_data(res);

	if (popup->xs) {
		shell_configure_reset(popup->xs);
		popup->xs->popup = NULL;
	}
	wl_list_remove(&popup->link);
	free(popup);
}

void
shell_popup_create(struct xdg_surface *xs, struct wl_client *client, int version, uint32_t id,
		   struct xdg_surface *parent, const struct positioner_rules *rules)
{
	struct popup *popup = wlc_client_zalloc(client, sizeof(*popup));

	if (!popup)
		return;
	popup->shell = xs->shell;
	popup->rules = *rules;
	popup->parent = parent;
	popup->parent_given = parent != NULL;
	popup->resource = wlc_resource_new(client, &xdg_popup_interface, version, id, &popup_impl,
					   popup, popup_res_destroy);
	if (!popup->resource) {
		free(popup);
		return;
	}
	popup->xs = xs;
	xs->popup = popup;
	wl_list_insert(xs->shell->popups.prev, &popup->link);
}
