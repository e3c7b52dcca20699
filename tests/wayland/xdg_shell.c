/* SPDX-License-Identifier: MIT */
/*
 * wl-xdg-shell: the example compositor's xdg-shell (testbed/sbwl_shell.c)
 * against raw-protocol clients: the configure → ack → buffer life of
 * toplevels and popups (mapped and placed, seen on the compositor's thread),
 * the version-dependent events, every protocol error of the XML with its
 * interface, code and object, pings (answered, unanswered, wrongly
 * answered), xdg_toplevel.close from sbwl_shell_close_all(), and the process's
 * fds back where they were after 50 clients came and went.
 *
 *   wl-xdg-shell
 *
 * The compositor runs on a thread (wlt_comp_start); ping cases get their own
 * with a 200 ms ping timeout. Host tier: shm buffers only.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "sbwl_internal.h"
#include "wlt.h"
#include "xdg-shell-client-protocol.h"

#define WANT_VERSION 6
#define PING_MS 200

/* The raw client side's proxies are left to wl_display_disconnect() after a
 * protocol error (as in wl-protocol-errors): the leak is the script's. */
const char *__lsan_default_suppressions(void);
const char *
__lsan_default_suppressions(void)
{
	return "leak:libwayland-client.so\n";
}

static struct wlt_comp *comp; /* the compositor the cases talk to */
static uint32_t next_content = 0x1000;
static int connect_pong; /* how the next xc_connect()'s client answers pings (the first comes at bind) */

/* ---- a client with xdg_wm_base ------------------------------------------------------ */

struct xc {
	struct wlt_client c;
	struct wl_registry *registry;
	struct xdg_wm_base *base;
	uint32_t base_version, advertised;
	struct wl_seat *seat;
	enum { PONG, NO_PONG, WRONG_PONG } pong;
	int pings;
};

static void
base_ping(void *data, struct xdg_wm_base *base, uint32_t serial)
{
	struct xc *x = data;

	x->pings++;
	if (x->pong == PONG)
		xdg_wm_base_pong(base, serial);
	else if (x->pong == WRONG_PONG)
		xdg_wm_base_pong(base, serial + 1);
}

static const struct xdg_wm_base_listener base_listener = { .ping = base_ping };

static void
reg_global(void *data, struct wl_registry *reg, uint32_t name, const char *iface, uint32_t version)
{
	struct xc *x = data;

	if (strcmp(iface, xdg_wm_base_interface.name) == 0 && !x->base) {
		x->advertised = version;
		if (x->base_version == 0 || x->base_version > version)
			x->base_version = version;
		x->base = wl_registry_bind(reg, name, &xdg_wm_base_interface, x->base_version);
		xdg_wm_base_add_listener(x->base, &base_listener, x);
	} else if (strcmp(iface, wl_seat_interface.name) == 0 && !x->seat) {
		x->seat = wl_registry_bind(reg, name, &wl_seat_interface, 1);
	}
}

static void
reg_global_remove(void *data, struct wl_registry *reg, uint32_t name)
{
}

static const struct wl_registry_listener reg_listener = { reg_global, reg_global_remove };

/* Connect and bind xdg_wm_base at `version` (0: WANT_VERSION) and a wl_seat. */
static void
xc_connect(struct xc *x, uint32_t version)
{
	memset(x, 0, sizeof(*x));
	x->pong = connect_pong;
	REQUIRE(wlt_client_connect(&x->c, NULL) == 0, "connect");
	x->base_version = version ? version : WANT_VERSION;
	x->registry = wl_display_get_registry(x->c.display);
	wl_registry_add_listener(x->registry, &reg_listener, x);
	REQUIRE(wl_display_roundtrip(x->c.display) >= 0, "registry roundtrip");
	REQUIRE(x->base, "the compositor offers xdg_wm_base");
	/* the binds went out after the first: this one brings the ping of the bind */
	REQUIRE(wl_display_roundtrip(x->c.display) >= 0, "bind roundtrip");
}

static void
xc_disconnect(struct xc *x)
{
	/* proxies only: no request (a destroy now could raise defunct_surfaces) */
	if (x->seat)
		wl_proxy_destroy((struct wl_proxy *)x->seat);
	if (x->base)
		wl_proxy_destroy((struct wl_proxy *)x->base);
	wl_registry_destroy(x->registry);
	wlt_client_disconnect(&x->c);
}

static void
expect_error(struct xc *x, const char *what, const struct wl_interface *iface, uint32_t id, uint32_t code)
{
	const char *got;
	uint32_t gcode, gid;
	int r = wlt_roundtrip_error(&x->c, &got, &gcode, &gid);

	CHECK(r < 0 && strcmp(got, iface->name) == 0 && gcode == code && gid == id,
	      "%s: want %s@%u error %u, got %s@%u error %u", what, iface->name, id, code,
	      r < 0 ? got : "(none)", gid, gcode);
}

static bool
expect_ok(struct xc *x, const char *what)
{
	const char *got;
	uint32_t gcode, gid;
	int r = wlt_roundtrip_error(&x->c, &got, &gcode, &gid);

	CHECK(r == 0, "%s: no error (got %s@%u error %u)", what, got, gid, gcode);
	return r == 0;
}

static uint32_t
id_of(void *proxy)
{
	return wl_proxy_get_id(proxy);
}

/*
 * A destructor request that keeps our proxy: the error it raises names the
 * object, which libwayland-client reports as "(unknown)@0" once the proxy
 * is gone.
 */
static void
destroy_keeping_proxy(void *proxy, uint32_t opcode)
{
	wl_proxy_marshal_flags(proxy, opcode, NULL, wl_proxy_get_version(proxy), 0);
}

/* ---- windows ------------------------------------------------------------------------- */

struct win {
	struct wl_surface *s;
	struct xdg_surface *xs;
	struct xdg_toplevel *tl;
	struct xdg_popup *popup;
	int configures;              /* xdg_surface.configure events */
	uint32_t serial;             /* the last one's */
	int32_t width, height;       /* the last role configure's */
	bool activated, maximized, fullscreen;
	int caps, bounds;            /* wm_capabilities, configure_bounds events */
	bool role_event_first;       /* the role's events came before xdg_surface.configure */
	int role_events;             /* since the last xdg_surface.configure */
	bool closed, popup_done;
	int32_t px, py;              /* xdg_popup.configure */
	uint32_t repositioned;       /* its token, 0: none */
	uint32_t content;            /* the last buffer's first word */
};

static void
xs_configure(void *data, struct xdg_surface *xs, uint32_t serial)
{
	struct win *w = data;

	w->configures++;
	w->serial = serial;
	w->role_event_first = w->role_events > 0;
	w->role_events = 0;
}

static const struct xdg_surface_listener xs_listener = { .configure = xs_configure };

static void
tl_configure(void *data, struct xdg_toplevel *tl, int32_t width, int32_t height, struct wl_array *states)
{
	struct win *w = data;
	uint32_t *s;

	w->role_events++;
	w->width = width;
	w->height = height;
	w->activated = w->maximized = w->fullscreen = false;
	wl_array_for_each(s, states) {
		w->activated |= *s == XDG_TOPLEVEL_STATE_ACTIVATED;
		w->maximized |= *s == XDG_TOPLEVEL_STATE_MAXIMIZED;
		w->fullscreen |= *s == XDG_TOPLEVEL_STATE_FULLSCREEN;
	}
}

static void
tl_close(void *data, struct xdg_toplevel *tl)
{
	((struct win *)data)->closed = true;
}

static void
tl_bounds(void *data, struct xdg_toplevel *tl, int32_t w, int32_t h)
{
	((struct win *)data)->bounds++;
}

static void
tl_caps(void *data, struct xdg_toplevel *tl, struct wl_array *caps)
{
	((struct win *)data)->caps++;
}

static const struct xdg_toplevel_listener tl_listener = {
	.configure = tl_configure, .close = tl_close,
	.configure_bounds = tl_bounds, .wm_capabilities = tl_caps,
};

static void
popup_configure(void *data, struct xdg_popup *p, int32_t x, int32_t y, int32_t w, int32_t h)
{
	struct win *win = data;

	win->role_events++;
	win->px = x;
	win->py = y;
	win->width = w;
	win->height = h;
}

static void
popup_done(void *data, struct xdg_popup *p)
{
	((struct win *)data)->popup_done = true;
}

static void
popup_repositioned(void *data, struct xdg_popup *p, uint32_t token)
{
	((struct win *)data)->repositioned = token;
}

static const struct xdg_popup_listener popup_listener = {
	.configure = popup_configure, .popup_done = popup_done, .repositioned = popup_repositioned,
};

static void
win_xdg(struct xc *x, struct win *w)
{
	memset(w, 0, sizeof(*w));
	w->s = wl_compositor_create_surface(x->c.compositor);
	w->xs = xdg_wm_base_get_xdg_surface(x->base, w->s);
	xdg_surface_add_listener(w->xs, &xs_listener, w);
}

/* A toplevel after its initial commit (configure not acked yet). */
static void
win_toplevel(struct xc *x, struct win *w)
{
	win_xdg(x, w);
	w->tl = xdg_surface_get_toplevel(w->xs);
	xdg_toplevel_add_listener(w->tl, &tl_listener, w);
	wl_surface_commit(w->s);
	wl_display_roundtrip(x->c.display);
}

/* Ack the last configure and commit a new buffer. */
static void
win_ack_commit(struct xc *x, struct win *w)
{
	w->content = next_content++;
	xdg_surface_ack_configure(w->xs, w->serial);
	wl_surface_attach(w->s, wlt_shm_buffer(&x->c, w->content), 0, 0);
	wl_surface_commit(w->s);
}

static struct xdg_positioner *
positioner(struct xc *x, int32_t w, int32_t h, int32_t ax, int32_t ay, int32_t aw, int32_t ah)
{
	struct xdg_positioner *p = xdg_wm_base_create_positioner(x->base);

	if (w)
		xdg_positioner_set_size(p, w, h);
	if (aw)
		xdg_positioner_set_anchor_rect(p, ax, ay, aw, ah);
	return p;
}

static void
win_popup(struct xc *x, struct win *w, struct win *parent, struct xdg_positioner *pos)
{
	win_xdg(x, w);
	w->popup = xdg_surface_get_popup(w->xs, parent ? parent->xs : NULL, pos);
	xdg_popup_add_listener(w->popup, &popup_listener, w);
}

/* ---- what the compositor holds ------------------------------------------------------- */

struct lookup {
	struct wl_client *client;
	uint32_t id;
	bool found, mapped;
	int32_t x, y;
};

static void
lookup_on_thread(void *data)
{
	struct lookup *l = data;
	struct sbwl_surface *s;

	l->found = l->mapped = false;
	wl_list_for_each(s, &comp->comp->all_surfaces, all_link) {
		if (wl_resource_get_client(s->resource) == l->client && wl_resource_get_id(s->resource) == l->id) {
			l->found = true;
			l->mapped = s->mapped;
			l->x = s->x;
			l->y = s->y;
		}
	}
}

/* The compositor's surface that used the buffer `content` (its client and id from
 * the buffer_used hook), looked at on its thread; false: no such use, or surface. */
static bool
comp_surface(uint32_t content, struct lookup *l)
{
	memset(l, 0, sizeof(*l));
	for (int tries = 0; tries < 200 && !l->client; tries++) {
		pthread_mutex_lock(&comp->lock);
		for (int i = comp->n_used - 1; i >= 0 && !l->client; i--) {
			if (comp->used[i].content == content) {
				l->client = comp->used[i].client;
				l->id = comp->used[i].surface_id;
			}
		}
		pthread_mutex_unlock(&comp->lock);
		if (!l->client)
			usleep(5000);
	}
	if (!l->client)
		return false;
	wlt_comp_call(comp, lookup_on_thread, l);
	return l->found;
}

/* Look again at a surface found before. */
static void
comp_surface_again(struct lookup *l)
{
	wlt_comp_call(comp, lookup_on_thread, l);
}

/* ---- the life of a toplevel ----------------------------------------------------------- */

static void
case_map(void)
{
	struct xc x;
	struct win w;
	struct lookup l;

	xc_connect(&x, 0);
	CHECK_EQ(x.advertised, 6, "xdg_wm_base version advertised");
	win_xdg(&x, &w);
	w.tl = xdg_surface_get_toplevel(w.xs);
	xdg_toplevel_add_listener(w.tl, &tl_listener, &w);
	wl_display_roundtrip(x.c.display);
	CHECK_EQ(w.configures, 0, "map: no configure before the initial commit");
	wl_surface_commit(w.s);
	expect_ok(&x, "map: initial commit");
	CHECK_EQ(w.configures, 1, "map: one configure after the initial commit");
	CHECK(w.activated && !w.maximized && !w.fullscreen && w.width == 0 && w.height == 0,
	      "map: toplevel.configure(0, 0, [activated]) (got %dx%d act=%d max=%d fs=%d)", w.width,
	      w.height, w.activated, w.maximized, w.fullscreen);
	CHECK(w.role_event_first, "map: xdg_toplevel.configure before xdg_surface.configure");
	CHECK(w.caps == 1 && w.bounds == 1, "map: v6: wm_capabilities (%d) and configure_bounds (%d) once",
	      w.caps, w.bounds);
	win_ack_commit(&x, &w);
	expect_ok(&x, "map: ack and buffer commit");
	CHECK(comp_surface(w.content, &l), "map: the compositor used the buffer");
	CHECK(l.mapped, "map: ack + buffer commit maps the surface");
	/* a mapped surface may commit without a new ack */
	wl_surface_attach(w.s, wlt_shm_buffer(&x.c, next_content++), 0, 0);
	wl_surface_commit(w.s);
	expect_ok(&x, "map: a later commit without ack");
	/* "Attaching a null buffer to a toplevel unmaps the surface." */
	wl_surface_attach(w.s, NULL, 0, 0);
	wl_surface_commit(w.s);
	expect_ok(&x, "map: NULL buffer commit");
	comp_surface_again(&l);
	CHECK(l.found && !l.mapped, "map: a NULL buffer unmaps");
	/* ... and the next commit is an initial commit again */
	int before = w.configures;
	wl_surface_commit(w.s);
	expect_ok(&x, "map: initial commit after the unmap");
	CHECK_EQ(w.configures, before + 1, "map: a configure after the new initial commit");
	win_ack_commit(&x, &w);
	expect_ok(&x, "map: remap");
	CHECK(comp_surface(w.content, &l) && l.mapped, "map: mapped again");
	/* destroying the role object unmaps */
	xdg_toplevel_destroy(w.tl);
	expect_ok(&x, "map: toplevel destroy");
	comp_surface_again(&l);
	CHECK(l.found && !l.mapped, "map: xdg_toplevel.destroy unmaps");
	xdg_surface_destroy(w.xs);
	wl_surface_destroy(w.s);
	xdg_wm_base_destroy(x.base);
	x.base = NULL;
	expect_ok(&x, "map: xdg_wm_base.destroy after its surfaces");
	xc_disconnect(&x);
}

static void
case_cascade(void)
{
	struct xc x;
	struct win a, b;
	struct lookup la, lb;

	xc_connect(&x, 0);
	win_toplevel(&x, &a);
	win_toplevel(&x, &b);
	win_ack_commit(&x, &a);
	win_ack_commit(&x, &b);
	expect_ok(&x, "cascade: two toplevels");
	CHECK(comp_surface(a.content, &la) && comp_surface(b.content, &lb) && la.mapped && lb.mapped,
	      "cascade: both mapped");
	CHECK(lb.x == la.x + 32 && lb.y == la.y + 32, "cascade: the second 32 px down and right (%d,%d → %d,%d)",
	      la.x, la.y, lb.x, lb.y);
	xc_disconnect(&x);
}

static void
case_states(void)
{
	struct xc x;
	struct win w;
	struct lookup l;
	int n;

	xc_connect(&x, 0);
	win_toplevel(&x, &w);
	win_ack_commit(&x, &w);
	expect_ok(&x, "states: mapped");
	xdg_toplevel_set_maximized(w.tl);
	n = w.configures;
	expect_ok(&x, "states: set_maximized");
	CHECK(w.configures == n + 1 && w.maximized && w.activated && w.width == 640 && w.height == 480,
	      "states: maximized configure at the output size (got %dx%d max=%d)", w.width, w.height,
	      w.maximized);
	/* a commit without acking it is fine; the acked one moves the window */
	wl_surface_commit(w.s);
	expect_ok(&x, "states: commit without ack");
	win_ack_commit(&x, &w);
	expect_ok(&x, "states: ack maximized");
	CHECK(comp_surface(w.content, &l) && l.mapped && l.x == 0 && l.y == 0,
	      "states: maximized at the output's corner (%d,%d)", l.x, l.y);
	xdg_toplevel_unset_maximized(w.tl);
	expect_ok(&x, "states: unset_maximized");
	CHECK(!w.maximized && w.width == 0, "states: unmaximized configure");
	xdg_toplevel_set_fullscreen(w.tl, NULL);
	expect_ok(&x, "states: set_fullscreen");
	CHECK(w.fullscreen && w.width == 640 && w.height == 480, "states: fullscreen configure");
	win_ack_commit(&x, &w);
	expect_ok(&x, "states: ack fullscreen");
	CHECK(comp_surface(w.content, &l) && l.x == (640 - 16) / 2 && l.y == (480 - 16) / 2,
	      "states: a 16x16 fullscreen buffer centred (%d,%d)", l.x, l.y);
	n = w.configures;
	xdg_toplevel_unset_fullscreen(w.tl);
	xdg_toplevel_set_minimized(w.tl);
	xdg_toplevel_set_title(w.tl, "title");
	xdg_toplevel_set_app_id(w.tl, "org.example.test");
	xdg_toplevel_move(w.tl, x.seat, 0);
	xdg_toplevel_resize(w.tl, x.seat, 0, XDG_TOPLEVEL_RESIZE_EDGE_BOTTOM_RIGHT);
	xdg_toplevel_show_window_menu(w.tl, x.seat, 0, 0, 0);
	expect_ok(&x, "states: minimize, title, app_id, move, resize (valid edge), window menu");
	CHECK_EQ(w.configures, n + 1, "states: set_minimized sends nothing (not advertised)");
	xc_disconnect(&x);
}

/* Events only a version has: configure_bounds (v4), wm_capabilities (v5). */
static void
case_versions(void)
{
	for (uint32_t v = 3; v <= 5; v++) {
		struct xc x;
		struct win w;

		xc_connect(&x, v);
		win_toplevel(&x, &w);
		CHECK(w.configures == 1 && w.bounds == (v >= 4) && w.caps == (v >= 5),
		      "versions: bound at v%u: configure_bounds %d, wm_capabilities %d", v, w.bounds, w.caps);
		win_ack_commit(&x, &w);
		expect_ok(&x, "versions: map");
		xc_disconnect(&x);
	}
}

static void
case_ack_serials(void)
{
	struct xc x;
	struct win w;
	uint32_t first;

	/* acking an older serial, then the newer: both were sent, both fine */
	xc_connect(&x, 0);
	win_toplevel(&x, &w);
	first = w.serial;
	xdg_toplevel_set_maximized(w.tl);
	wl_display_roundtrip(x.c.display);
	CHECK(w.serial != first, "ack: a second configure has a new serial");
	xdg_surface_ack_configure(w.xs, first);
	xdg_surface_ack_configure(w.xs, w.serial);
	expect_ok(&x, "ack: older then newer");
	xc_disconnect(&x);

	/* "... or to issue an ack_configure request referencing a serial from a
	 * configure event issued before the event identified by the last
	 * ack_configure request" */
	xc_connect(&x, 0);
	win_toplevel(&x, &w);
	first = w.serial;
	xdg_toplevel_set_maximized(w.tl);
	wl_display_roundtrip(x.c.display);
	xdg_surface_ack_configure(w.xs, w.serial);
	xdg_surface_ack_configure(w.xs, first);
	expect_error(&x, "ack: newer then older", &xdg_surface_interface, id_of(w.xs),
		     XDG_SURFACE_ERROR_INVALID_SERIAL);
	xc_disconnect(&x);

	/* the same serial twice */
	xc_connect(&x, 0);
	win_toplevel(&x, &w);
	xdg_surface_ack_configure(w.xs, w.serial);
	xdg_surface_ack_configure(w.xs, w.serial);
	expect_error(&x, "ack: twice", &xdg_surface_interface, id_of(w.xs), XDG_SURFACE_ERROR_INVALID_SERIAL);
	xc_disconnect(&x);

	/* one never sent */
	xc_connect(&x, 0);
	win_toplevel(&x, &w);
	xdg_surface_ack_configure(w.xs, w.serial + 1000);
	expect_error(&x, "ack: never sent", &xdg_surface_interface, id_of(w.xs), XDG_SURFACE_ERROR_INVALID_SERIAL);
	xc_disconnect(&x);
}

static void
case_close_all_fn(void *data)
{
	sbwl_shell_close_all(comp->comp->shell);
}

static void
case_close_all(void)
{
	struct xc x;
	struct win a, b;

	xc_connect(&x, 0);
	win_toplevel(&x, &a);
	win_toplevel(&x, &b);
	win_ack_commit(&x, &a);
	expect_ok(&x, "close: set up");
	CHECK(!a.closed && !b.closed, "close: not before it is asked");
	wlt_comp_call(comp, case_close_all_fn, NULL);
	expect_ok(&x, "close: after sbwl_shell_close_all");
	CHECK(a.closed && b.closed, "close: every toplevel (mapped or not) got xdg_toplevel.close");
	xc_disconnect(&x);
}

/* ---- popups ------------------------------------------------------------------------ */

static void
case_popup(void)
{
	struct xc x;
	struct win t, p, q;
	struct lookup lt, lp;
	struct xdg_positioner *pos;

	xc_connect(&x, 0);
	win_toplevel(&x, &t);
	win_ack_commit(&x, &t);
	pos = positioner(&x, 50, 40, 10, 10, 20, 20);
	xdg_positioner_set_anchor(pos, XDG_POSITIONER_ANCHOR_BOTTOM_RIGHT);
	xdg_positioner_set_gravity(pos, XDG_POSITIONER_GRAVITY_BOTTOM_RIGHT);
	xdg_positioner_set_offset(pos, 3, 4);
	xdg_positioner_set_constraint_adjustment(pos, XDG_POSITIONER_CONSTRAINT_ADJUSTMENT_FLIP_X);
	win_popup(&x, &p, &t, pos);
	xdg_positioner_destroy(pos); /* the popup keeps a copy */
	wl_surface_commit(p.s);
	expect_ok(&x, "popup: initial commit");
	CHECK(p.configures == 1 && p.role_event_first && p.px == 33 && p.py == 34 && p.width == 50 &&
	      p.height == 40, "popup: configure(33, 34, 50, 40) (got %d,%d %dx%d)", p.px, p.py, p.width, p.height);
	win_ack_commit(&x, &p);
	expect_ok(&x, "popup: ack and buffer");
	CHECK(comp_surface(t.content, &lt) && comp_surface(p.content, &lp) && lp.mapped,
	      "popup: mapped");
	CHECK(lp.x == lt.x + 33 && lp.y == lt.y + 34, "popup: at parent (%d,%d) + (33,34): (%d,%d)",
	      lt.x, lt.y, lp.x, lp.y);
	/* reposition (v3): repositioned, then a configure sequence */
	pos = positioner(&x, 20, 20, 0, 0, 1, 1);
	xdg_popup_reposition(p.popup, pos, 77);
	int n = p.configures;
	expect_ok(&x, "popup: reposition");
	CHECK(p.repositioned == 77 && p.configures == n + 1 && p.width == 20,
	      "popup: repositioned(77) and a new configure (token %u)", p.repositioned);
	/* a nested popup; destroyed top first is fine */
	win_popup(&x, &q, &p, pos);
	wl_surface_commit(q.s);
	expect_ok(&x, "popup: nested");
	xdg_popup_destroy(q.popup);
	xdg_surface_destroy(q.xs);
	xdg_popup_destroy(p.popup);
	expect_ok(&x, "popup: destroyed topmost first");
	comp_surface_again(&lp);
	CHECK(lp.found && !lp.mapped, "popup: xdg_popup.destroy unmaps");
	xc_disconnect(&x);
}

static void
case_popup_grab(void)
{
	struct xc x;
	struct win t, p;

	xc_connect(&x, 0);
	win_toplevel(&x, &t);
	win_ack_commit(&x, &t);
	win_popup(&x, &p, &t, positioner(&x, 10, 10, 0, 0, 1, 1));
	xdg_popup_grab(p.popup, x.seat, 0);
	wl_surface_commit(p.s);
	expect_ok(&x, "grab: grab and commit");
	CHECK(p.popup_done, "grab: denied (no seat input): popup_done at once");
	xc_disconnect(&x);
}

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
	win_toplevel(&x, &t);
	win_ack_commit(&x, &t);
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

	xc_connect(&x, 0);
	win_toplevel(&x, &w);
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

	xc_connect(&x, 0);
	win_toplevel(&x, &w);
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
	win_toplevel(&x, &a);
	win_ack_commit(&x, &a);
	if (!loop) {
		xdg_toplevel_set_parent(a.tl, a.tl);
		expect_error(&x, "invalid_parent: itself", &xdg_toplevel_interface, id_of(a.tl),
			     XDG_TOPLEVEL_ERROR_INVALID_PARENT);
		xc_disconnect(&x);
		return;
	}
	win_toplevel(&x, &b);
	win_ack_commit(&x, &b);
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

	xc_connect(&x, 0);
	win_toplevel(&x, &w);
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

	xc_connect(&x, 0);
	win_toplevel(&x, &w);
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

	xc_connect(&x, 0);
	win_toplevel(&x, &t);
	win_ack_commit(&x, &t);
	win_popup(&x, &p, &t, positioner(&x, 10, 10, 0, 0, 0, 0)); /* no anchor rect */
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

	xc_connect(&x, 0);
	win_toplevel(&x, &t);
	win_ack_commit(&x, &t);
	win_popup(&x, &p, &t, positioner(&x, 10, 10, 0, 0, 1, 1));
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

	xc_connect(&x, 0);
	win_toplevel(&x, &t);
	win_ack_commit(&x, &t);
	win_popup(&x, &p, &t, positioner(&x, 10, 10, 0, 0, 1, 1));
	wl_surface_commit(p.s);
	wl_display_roundtrip(x.c.display);
	win_ack_commit(&x, &p);
	expect_ok(&x, "invalid_grab: popup mapped");
	xdg_popup_grab(p.popup, x.seat, 0);
	expect_error(&x, "invalid_grab: grab after the map", &xdg_popup_interface, id_of(p.popup),
		     XDG_POPUP_ERROR_INVALID_GRAB);
	xc_disconnect(&x);
}

/* ---- pings (a compositor with a PING_MS timeout) ----------------------------------------- */

static void
case_ping_unanswered(int mode)
{
	struct xc x;
	const char *what = mode == NO_PONG ? "unresponsive: no pong" : "unresponsive: a pong with the wrong serial";
	int64_t t0 = sbk_now_ns();

	connect_pong = mode;
	xc_connect(&x, 0);
	connect_pong = PONG;
	CHECK(x.pings >= 1, "%s: a ping at bind", what);
	/* let the timeout pass; dispatching answers nothing */
	wlt_dispatch_for(&x.c, 3 * PING_MS * WLT_MS);
	expect_error(&x, what, &xdg_wm_base_interface, id_of(x.base), XDG_WM_BASE_ERROR_UNRESPONSIVE);
	CHECK(sbk_now_ns() - t0 >= PING_MS * WLT_MS, "%s: not before the timeout", what);
	xc_disconnect(&x);
}

static void
case_ping_answered(void)
{
	struct xc x;
	struct win w;

	xc_connect(&x, 0);
	win_toplevel(&x, &w);
	win_ack_commit(&x, &w);
	wlt_dispatch_for(&x.c, 6 * PING_MS * WLT_MS);
	CHECK(x.pings >= 4, "ping: pinged at bind and every %d ms while it has surfaces (%d pings in %d ms)",
	      PING_MS / 2, x.pings, 6 * PING_MS);
	expect_ok(&x, "ping: a client answering pings stays connected");
	xc_disconnect(&x);
}

/* ---- fds ----------------------------------------------------------------------------- */

/* This process's fds once the compositor thread has closed what went (unchanged for 50 ms). */
static int
settled_fds(void)
{
	int prev = -1, n = -1;

	for (int i = 0; i < 100; i++) {
		n = wlt_count_fds();
		if (n == prev)
			break;
		prev = n;
		usleep(50000);
	}
	return n;
}

static void
case_fds(void)
{
	int fds0, fds1 = -1;

	fds0 = settled_fds();
	for (int i = 0; i < 50; i++) {
		struct xc x;
		struct win t, p;

		xc_connect(&x, 0);
		win_toplevel(&x, &t);
		win_ack_commit(&x, &t);
		win_popup(&x, &p, &t, positioner(&x, 10, 10, 0, 0, 1, 1));
		wl_surface_commit(p.s);
		wl_display_roundtrip(x.c.display);
		if (i % 2) { /* half tidy, half left to the disconnect */
			xdg_popup_destroy(p.popup);
			xdg_surface_destroy(p.xs);
			xdg_toplevel_destroy(t.tl);
			xdg_surface_destroy(t.xs);
			wl_surface_destroy(t.s);
			wl_surface_destroy(p.s);
			xdg_wm_base_destroy(x.base);
			x.base = NULL;
		}
		expect_ok(&x, "fds: a cycle");
		xc_disconnect(&x);
	}
	/* the compositor thread sees the hang-ups in its own time */
	for (int i = 0; i < 200 && (fds1 = wlt_count_fds()) > fds0; i++)
		usleep(10000);
	CHECK_EQ(fds1, fds0, "fds: open fds after 50 clients came and went");
}

/* ---- main ------------------------------------------------------------------------------ */

static void
start(struct wlt_comp *w, int ping_ms)
{
	struct wlt_devices d = { .vgem = -1, .vgem_render = -1, .client_drm = -1, .comp_drm = -1 };
	struct sbwl_comp_options opt;
	struct xc probe;
	int r;

	wlt_comp_options_init(&opt, &d, 0);
	opt.ping_timeout_ms = ping_ms;
	r = wlt_comp_start(w, &opt);
	REQUIRE(r == 0, "compositor: %s", strerror(-r));
	comp = w;
	/* resize and grab take a wl_seat: the compositor's, without devices */
	xc_connect(&probe, 0);
	REQUIRE(probe.seat != NULL, "the compositor offers no wl_seat");
	xc_disconnect(&probe);
}

int
main(int argc, char **argv)
{
	static struct wlt_comp main_comp, ping_comp; /* large: not on the stack */

	setvbuf(stdout, NULL, _IOLBF, 0);
	start(&main_comp, 0);

	case_map();
	case_cascade();
	case_states();
	case_versions();
	case_ack_serials();
	case_close_all();
	case_popup();
	case_popup_grab();

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

	case_fds();
	wlt_comp_stop(&main_comp);

	start(&ping_comp, PING_MS);
	case_ping_unanswered(NO_PONG);
	case_ping_unanswered(WRONG_PONG);
	case_ping_answered();
	wlt_comp_stop(&ping_comp);

	return sb_test_finish();
}
