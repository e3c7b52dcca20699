/* SPDX-License-Identifier: MIT */
/*
 * xdg-shell for the example compositor (wlc_shell_internal.h): xdg_toplevel.
 * Every configure says "activated"; maximized and fullscreen are granted as
 * asked, sized to the output and placed at its corner (fullscreen: centred);
 * otherwise the size is 0x0 and a new toplevel is placed on a cascade
 * (wlc_shell.c says more).
 */
#include <stdlib.h>
#include <string.h>

#include <wayland-server-core.h>

#include "wlc_shell_internal.h"
#include "xdg-shell-server-protocol.h"

#define CASCADE_STEP 32
#define CASCADE_STEPS 10

static uint32_t
output_width(const struct wlc_shell *shell)
{
	return shell->comp->opt.output_width ? shell->comp->opt.output_width : 640;
}

static uint32_t
output_height(const struct wlc_shell *shell)
{
	return shell->comp->opt.output_height ? shell->comp->opt.output_height : 480;
}

/* ---- configure sequences ------------------------------------------------------- */

static void
toplevel_send_configure(struct toplevel *tl, uint32_t states)
{
	struct wlc_shell *shell = tl->xs->shell;
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
void
shell_toplevel_configure(struct toplevel *tl)
{
	struct configure *c = shell_configure_begin(tl->xs);

	if (!c)
		return;
	c->states = tl->requested;
	toplevel_send_configure(tl, c->states);
	shell_configure_end(tl->xs, c);
}

/* ---- mapping -------------------------------------------------------------------- */

void
shell_toplevel_place(struct toplevel *tl)
{
	struct xdg_surface *xs = tl->xs;
	struct wlc_shell *shell = xs->shell;
	struct wlc_surface *surf = xs->surf;

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
}

/*
 * A toplevel leaves the screen: "its children's parent is set to the parent
 * of the now-unmapped surface".
 */
static void
toplevel_orphan_children(struct toplevel *tl)
{
	struct toplevel *t;

	wl_list_for_each(t, &tl->shell->toplevels, link)
		if (t->parent == tl)
			t->parent = tl->parent;
}

void
shell_toplevel_reset(struct toplevel *tl)
{
	toplevel_orphan_children(tl);
	/* "all attributes (e.g. title, state, stacking, ...) are discarded" */
	tl->parent = NULL;
	tl->requested = 0;
	tl->placed = false;
	free(tl->title);
	free(tl->app_id);
	tl->title = tl->app_id = NULL;
}

/* ---- requests ----------------------------------------------------------------------- */

static struct toplevel *
toplevel_from(struct wl_resource *res)
{
	return wl_resource_get_user_data(res);
}

static void
toplevel_set_parent(struct wl_client *client, struct wl_resource *res,
		    struct wl_resource *parent_res)
{
	struct toplevel *tl = toplevel_from(res);
	struct toplevel *parent = parent_res ? toplevel_from(parent_res) : NULL;

	/* "The parent toplevel must not be one of the child toplevel's descendants,
	 * and the parent must be different from the child toplevel, otherwise the
	 * invalid_parent protocol error is raised." */
	for (struct toplevel *p = parent; p; p = p->parent) {
		if (p == tl) {
			const char *why = parent == tl ? "a toplevel cannot be its own parent" :
					  "the parent is a descendant of this toplevel";

			wl_resource_post_error(res, XDG_TOPLEVEL_ERROR_INVALID_PARENT, "%s", why);
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
toplevel_show_window_menu(struct wl_client *client, struct wl_resource *res,
			  struct wl_resource *seat, uint32_t serial, int32_t x, int32_t y)
{
}

static void
toplevel_move(struct wl_client *client, struct wl_resource *res, struct wl_resource *seat,
	      uint32_t serial)
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
		wl_resource_post_error(res, XDG_TOPLEVEL_ERROR_INVALID_SIZE, "negative size %dx%d",
				       w, h);
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
		shell_toplevel_configure(tl);
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
toplevel_set_fullscreen(struct wl_client *client, struct wl_resource *res,
			struct wl_resource *output)
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
	.destroy = wlc_destroy_request,
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
		shell_configure_reset(tl->xs);
		shell_toplevel_reset(tl);
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

void
shell_toplevel_create(struct xdg_surface *xs, struct wl_client *client, int version, uint32_t id)
{
	struct toplevel *tl = wlc_client_zalloc(client, sizeof(*tl));

	if (!tl)
		return;
	tl->shell = xs->shell;
	tl->resource = wlc_resource_new(client, &xdg_toplevel_interface, version, id,
					&toplevel_impl, tl, toplevel_res_destroy);
	if (!tl->resource) {
		free(tl);
		return;
	}
	tl->xs = xs;
	xs->toplevel = tl;
	wl_list_insert(xs->shell->toplevels.prev, &tl->link);
}
