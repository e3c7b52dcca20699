/* SPDX-License-Identifier: MIT */
/* wl-xdg-shell (xdg_shell.c): every protocol error of the XML, with its interface, code and object. */
#include "harness.h"
#include "xdg_shell.h"

/* ---- protocol errors --------------------------------------------------------------- */

static void
err_role_second_xdg_surface(void)
{
	struct xc x;
	struct wl_surface *s;

	xc_connect(&x, 0);
	s = wl_compositor_create_surface(x.c.compositor);
	xdg_wm_base_get_xdg_surface(x.base, s);
	xdg_wm_base_get_xdg_surface(x.base, s);
	expect_error(&x, "role: a second xdg_surface", &xdg_wm_base_interface, id_of(x.base), XDG_WM_BASE_ERROR_ROLE);
	xc_disconnect(&x);
}

static void
err_role_toplevel_then_popup(void)
{
	struct xc x;
	struct win t, w;
	struct xdg_surface *xs2;

	xc_connect(&x, 0);
	win_mapped(&x, &t);
	win_toplevel(&x, &w);
	xdg_toplevel_destroy(w.tl);
	xdg_surface_destroy(w.xs);
	xs2 = xdg_wm_base_get_xdg_surface(x.base, w.s);
	expect_ok(&x, "role: an xdg_surface again after the first went");
	xdg_surface_get_popup(xs2, t.xs, positioner(&x, 10, 10, 0, 0, 1, 1));
	expect_error(&x, "role: xdg_toplevel's wl_surface as a popup", &xdg_wm_base_interface, id_of(x.base),
		     XDG_WM_BASE_ERROR_ROLE);
	xc_disconnect(&x);
}

static void
err_invalid_surface_state(bool commit)
{
	struct xc x;
	struct wl_surface *s;

	xc_connect(&x, 0);
	s = wl_compositor_create_surface(x.c.compositor);
	wl_surface_attach(s, wlt_shm_buffer(&x.c, 1), 0, 0);
	if (commit)
		wl_surface_commit(s);
	xdg_wm_base_get_xdg_surface(x.base, s);
	expect_error(&x, commit ? "invalid_surface_state: a committed buffer" : "invalid_surface_state: an attached buffer",
		     &xdg_wm_base_interface, id_of(x.base), XDG_WM_BASE_ERROR_INVALID_SURFACE_STATE);
	xc_disconnect(&x);
}

static void
err_defunct_surfaces(void)
{
	struct xc x;
	struct wl_surface *s;
	uint32_t id;

	xc_connect(&x, 0);
	s = wl_compositor_create_surface(x.c.compositor);
	xdg_wm_base_get_xdg_surface(x.base, s);
	id = id_of(x.base);
	destroy_keeping_proxy(x.base, XDG_WM_BASE_DESTROY);
	expect_error(&x, "defunct_surfaces", &xdg_wm_base_interface, id, XDG_WM_BASE_ERROR_DEFUNCT_SURFACES);
	xc_disconnect(&x);
}

static void
err_not_constructed(void)
{
	struct xc x;
	struct win w;

	xc_connect(&x, 0);
	win_xdg(&x, &w);
	wl_surface_commit(w.s);
	expect_error(&x, "not_constructed", &xdg_surface_interface, id_of(w.xs), XDG_SURFACE_ERROR_NOT_CONSTRUCTED);
	xc_disconnect(&x);
}

static void
err_already_constructed(bool popup)
{
	struct xc x;
	struct win w;

	xc_connect(&x, 0);
	win_xdg(&x, &w);
	xdg_surface_get_toplevel(w.xs);
	if (popup)
		xdg_surface_get_popup(w.xs, NULL, positioner(&x, 10, 10, 0, 0, 1, 1));
	else
		xdg_surface_get_toplevel(w.xs);
	expect_error(&x, popup ? "already_constructed: toplevel then popup" : "already_constructed: toplevel twice",
		     &xdg_surface_interface, id_of(w.xs), XDG_SURFACE_ERROR_ALREADY_CONSTRUCTED);
	xc_disconnect(&x);
}

static void
err_unconfigured_buffer(bool initial_commit)
{
	struct xc x;
	struct win w;

	xc_connect(&x, 0);
	win_xdg(&x, &w);
	w.tl = xdg_surface_get_toplevel(w.xs);
	if (initial_commit) {
		wl_surface_commit(w.s);
		expect_ok(&x, "unconfigured_buffer: initial commit");
		CHECK_EQ(w.configures, 1, "unconfigured_buffer: configured, not acked");
	}
	wl_surface_attach(w.s, wlt_shm_buffer(&x.c, 2), 0, 0);
	wl_surface_commit(w.s);
	expect_error(&x, initial_commit ? "unconfigured_buffer: after the configure, before the ack"
					: "unconfigured_buffer: at the first commit",
		     &xdg_surface_interface, id_of(w.xs), XDG_SURFACE_ERROR_UNCONFIGURED_BUFFER);
	xc_disconnect(&x);
}

static void
err_geometry(void)
{
	struct xc x;
	struct win w;

	xc_connect_toplevel(&x, &w);
	xdg_surface_set_window_geometry(w.xs, 0, 0, 10, 10);
	expect_ok(&x, "invalid_size: a valid window geometry");
	xdg_surface_set_window_geometry(w.xs, 0, 0, 0, 10);
	expect_error(&x, "invalid_size: window geometry 0x10", &xdg_surface_interface, id_of(w.xs),
		     XDG_SURFACE_ERROR_INVALID_SIZE);
	xc_disconnect(&x);
}

static void
err_defunct_role_object(void)
{
	struct xc x;
	struct win w;
	uint32_t id;

	xc_connect_toplevel(&x, &w);
	id = id_of(w.xs);
	destroy_keeping_proxy(w.xs, XDG_SURFACE_DESTROY);
	expect_error(&x, "defunct_role_object", &xdg_surface_interface, id, XDG_SURFACE_ERROR_DEFUNCT_ROLE_OBJECT);
	xc_disconnect(&x);
}

static void
err_invalid_parent(bool loop)
{
	struct xc x;
	struct win a, b;

	xc_connect(&x, 0);
	win_mapped(&x, &a);
	if (!loop) {
		xdg_toplevel_set_parent(a.tl, a.tl);
		expect_error(&x, "invalid_parent: itself", &xdg_toplevel_interface, id_of(a.tl),
			     XDG_TOPLEVEL_ERROR_INVALID_PARENT);
		xc_disconnect(&x);
		return;
	}
	win_mapped(&x, &b);
	xdg_toplevel_set_parent(b.tl, a.tl);
	expect_ok(&x, "invalid_parent: b's parent a");
	xdg_toplevel_set_parent(a.tl, b.tl);
	expect_error(&x, "invalid_parent: a's parent b, its child", &xdg_toplevel_interface, id_of(a.tl),
		     XDG_TOPLEVEL_ERROR_INVALID_PARENT);
	xc_disconnect(&x);
}

static void
err_resize_edge(void)
{
	struct xc x;
	struct win w;

	xc_connect_toplevel(&x, &w);
	xdg_toplevel_resize(w.tl, x.seat, 0, 3); /* top|bottom: not a variant */
	expect_error(&x, "invalid_resize_edge", &xdg_toplevel_interface, id_of(w.tl),
		     XDG_TOPLEVEL_ERROR_INVALID_RESIZE_EDGE);
	xc_disconnect(&x);
}

static void
err_min_max(int which)
{
	struct xc x;
	struct win w;
	const char *what[] = { "invalid_size: negative max", "invalid_size: negative min",
			       "invalid_size: min > max at commit" };

	xc_connect_toplevel(&x, &w);
	if (which == 0) {
		xdg_toplevel_set_max_size(w.tl, -1, 10);
	} else if (which == 1) {
		xdg_toplevel_set_min_size(w.tl, 10, -1);
	} else {
		xdg_toplevel_set_min_size(w.tl, 100, 100);
		xdg_toplevel_set_max_size(w.tl, 50, 0);
		expect_ok(&x, "invalid_size: min > max is not an error before the commit");
		wl_surface_commit(w.s);
	}
	expect_error(&x, what[which], &xdg_toplevel_interface, id_of(w.tl), XDG_TOPLEVEL_ERROR_INVALID_SIZE);
	xc_disconnect(&x);
}

static void
err_positioner(bool anchor)
{
	struct xc x;
	struct xdg_positioner *p;

	xc_connect(&x, 0);
	p = xdg_wm_base_create_positioner(x.base);
	if (anchor)
		xdg_positioner_set_anchor_rect(p, 0, 0, -1, 1);
	else
		xdg_positioner_set_size(p, 0, 10);
	expect_error(&x, anchor ? "invalid_input: anchor rect -1x1" : "invalid_input: size 0x10",
		     &xdg_positioner_interface, id_of(p), XDG_POSITIONER_ERROR_INVALID_INPUT);
	xc_disconnect(&x);
}

static void
err_invalid_positioner(void)
{
	struct xc x;
	struct win t, p;

	xc_connect_popup(&x, &t, &p, false); /* no anchor rect */
	expect_error(&x, "invalid_positioner", &xdg_wm_base_interface, id_of(x.base),
		     XDG_WM_BASE_ERROR_INVALID_POSITIONER);
	xc_disconnect(&x);
}

static void
err_popup_parent(bool null_parent)
{
	struct xc x;
	struct win parent, p;

	xc_connect(&x, 0);
	if (null_parent) {
		/* "a parent surface must be specified using some other protocol,
		 * before committing the initial state": there is none here */
		win_popup(&x, &p, NULL, positioner(&x, 10, 10, 0, 0, 1, 1));
		expect_ok(&x, "invalid_popup_parent: a NULL parent at get_popup");
		wl_surface_commit(p.s);
	} else {
		win_xdg(&x, &parent); /* no role object */
		win_popup(&x, &p, &parent, positioner(&x, 10, 10, 0, 0, 1, 1));
	}
	expect_error(&x, null_parent ? "invalid_popup_parent: committed without one"
				     : "invalid_popup_parent: an xdg_surface without a role",
		     &xdg_wm_base_interface, id_of(x.base), XDG_WM_BASE_ERROR_INVALID_POPUP_PARENT);
	xc_disconnect(&x);
}

static void
err_not_topmost(void)
{
	struct xc x;
	struct win t, p, q;

	xc_connect_popup(&x, &t, &p, true);
	wl_surface_commit(p.s);
	win_popup(&x, &q, &p, positioner(&x, 10, 10, 0, 0, 1, 1));
	wl_surface_commit(q.s);
	expect_ok(&x, "not_the_topmost_popup: two popups");
	xdg_popup_destroy(p.popup);
	expect_error(&x, "not_the_topmost_popup", &xdg_wm_base_interface, id_of(x.base),
		     XDG_WM_BASE_ERROR_NOT_THE_TOPMOST_POPUP);
	xc_disconnect(&x);
}

static void
err_invalid_grab(void)
{
	struct xc x;
	struct win t, p;

	xc_connect_popup(&x, &t, &p, true);
	wl_surface_commit(p.s);
	wl_display_roundtrip(x.c.display);
	win_ack_commit(&x, &p);
	expect_ok(&x, "invalid_grab: popup mapped");
	xdg_popup_grab(p.popup, x.seat, 0);
	expect_error(&x, "invalid_grab: grab after the map", &xdg_popup_interface, id_of(p.popup),
		     XDG_POPUP_ERROR_INVALID_GRAB);
	xc_disconnect(&x);
}

void
xdgt_errors(void)
{
	err_role_second_xdg_surface();
	err_role_toplevel_then_popup();
	err_invalid_surface_state(false);
	err_invalid_surface_state(true);
	err_defunct_surfaces();
	err_not_constructed();
	err_already_constructed(false);
	err_already_constructed(true);
	err_unconfigured_buffer(false);
	err_unconfigured_buffer(true);
	err_geometry();
	err_defunct_role_object();
	err_invalid_parent(false);
	err_invalid_parent(true);
	err_resize_edge();
	for (int i = 0; i < 3; i++)
		err_min_max(i);
	err_positioner(false);
	err_positioner(true);
	err_invalid_positioner();
	err_popup_parent(false);
	err_popup_parent(true);
	err_not_topmost();
	err_invalid_grab();
	XDGT_FLUSH();
}
