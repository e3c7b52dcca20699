/* SPDX-License-Identifier: MIT */
/*
 * wl-xdg-shell: the example compositor's xdg-shell (compositor/wlc_shell.c)
 * against raw-protocol clients: the configure → ack → buffer life of
 * toplevels and popups (mapped and placed, seen on the compositor's thread),
 * the version-dependent events, every protocol error of the XML with its
 * interface, code and object, pings (answered, unanswered, wrongly
 * answered), xdg_toplevel.close from wlc_shell_close_all(), and the process's
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
#include "wlc_internal.h"
#include "xdg_shell.h"

/* The raw client side's proxies are left to wl_display_disconnect() after a
 * protocol error (as in wl-protocol-errors): the leak is the script's. */
const char *__lsan_default_suppressions(void);
const char *
__lsan_default_suppressions(void)
{
	return "leak:libwayland-client.so\n";
}

struct wlt_comp *comp; /* the compositor the cases talk to */
uint32_t next_content = 0x1000;
int connect_pong; /* how the next xc_connect()'s client answers pings (the first comes with its first xdg_surface) */
int xdgt_checks, xdgt_failures;

/* ---- a client with xdg_wm_base ------------------------------------------------------ */

static void
base_ping(void *data, struct xdg_wm_base *base, uint32_t serial)
{
	struct xc *x = data;

	x->pings++;
	x->last_ping = serial;
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
void
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

void
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

void
expect_error(struct xc *x, const char *what, const struct wl_interface *iface, uint32_t id, uint32_t code)
{
	const char *got;
	uint32_t gcode, gid;
	int r = wlt_roundtrip_error(&x->c, &got, &gcode, &gid);

	CHECK(r < 0 && strcmp(got, iface->name) == 0 && gcode == code && gid == id,
	      "%s: want %s@%u error %u, got %s@%u error %u", what, iface->name, id, code,
	      r < 0 ? got : "(none)", gid, gcode);
}

bool
expect_ok(struct xc *x, const char *what)
{
	const char *got;
	uint32_t gcode, gid;
	int r = wlt_roundtrip_error(&x->c, &got, &gcode, &gid);

	CHECK(r == 0, "%s: no error (got %s@%u error %u)", what, got, gid, gcode);
	return r == 0;
}

uint32_t
id_of(void *proxy)
{
	return wl_proxy_get_id(proxy);
}

/*
 * A destructor request that keeps our proxy: the error it raises names the
 * object, which libwayland-client reports as "(unknown)@0" once the proxy
 * is gone.
 */
void
destroy_keeping_proxy(void *proxy, uint32_t opcode)
{
	wl_proxy_marshal_flags(proxy, opcode, NULL, wl_proxy_get_version(proxy), 0);
}

/* ---- windows ------------------------------------------------------------------------- */

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

const struct xdg_toplevel_listener tl_listener = {
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

void
win_xdg(struct xc *x, struct win *w)
{
	memset(w, 0, sizeof(*w));
	w->s = wl_compositor_create_surface(x->c.compositor);
	w->xs = xdg_wm_base_get_xdg_surface(x->base, w->s);
	xdg_surface_add_listener(w->xs, &xs_listener, w);
}

/* A toplevel after its initial commit (configure not acked yet). */
void
win_toplevel(struct xc *x, struct win *w)
{
	win_xdg(x, w);
	w->tl = xdg_surface_get_toplevel(w->xs);
	xdg_toplevel_add_listener(w->tl, &tl_listener, w);
	wl_surface_commit(w->s);
	wl_display_roundtrip(x->c.display);
}

/* Ack the last configure and commit a new buffer. */
void
win_ack_commit(struct xc *x, struct win *w)
{
	w->content = next_content++;
	xdg_surface_ack_configure(w->xs, w->serial);
	wl_surface_attach(w->s, wlt_shm_buffer(&x->c, w->content), 0, 0);
	wl_surface_commit(w->s);
}

/* A client (xc_connect at WANT_VERSION) with one toplevel, configured, not acked. */
void
xc_connect_toplevel(struct xc *x, struct win *w)
{
	xc_connect(x, 0);
	win_toplevel(x, w);
}

/* A toplevel whose first configure is acked with a buffer: mapped once the
 * compositor reads the commit (not waited for here: the caller's next
 * expect_ok() is the roundtrip). */
void
win_mapped(struct xc *x, struct win *w)
{
	win_toplevel(x, w);
	win_ack_commit(x, w);
}

/* Role object, then xdg_surface, then wl_surface: the order the XML asks for
 * (an xdg_surface before its role is defunct_role_object). */
void
win_destroy(struct win *w)
{
	if (w->popup)
		xdg_popup_destroy(w->popup);
	if (w->tl)
		xdg_toplevel_destroy(w->tl);
	xdg_surface_destroy(w->xs);
	wl_surface_destroy(w->s);
}

/* xdg_wm_base.destroy; xc_disconnect() then has no proxy of it to drop. */
void
xc_destroy_base(struct xc *x)
{
	xdg_wm_base_destroy(x->base);
	x->base = NULL;
}

struct xdg_positioner *
positioner(struct xc *x, int32_t w, int32_t h, int32_t ax, int32_t ay, int32_t aw, int32_t ah)
{
	struct xdg_positioner *p = xdg_wm_base_create_positioner(x->base);

	if (w)
		xdg_positioner_set_size(p, w, h);
	if (aw)
		xdg_positioner_set_anchor_rect(p, ax, ay, aw, ah);
	return p;
}

void
win_popup(struct xc *x, struct win *w, struct win *parent, struct xdg_positioner *pos)
{
	win_xdg(x, w);
	w->popup = xdg_surface_get_popup(w->xs, parent ? parent->xs : NULL, pos);
	xdg_popup_add_listener(w->popup, &popup_listener, w);
}

/*
 * A client with a mapped toplevel (win_mapped) and a 10x10 popup of it, not
 * committed yet; anchored: a 1x1 anchor rectangle at its corner, else none
 * (an incomplete positioner).
 */
void
xc_connect_popup(struct xc *x, struct win *t, struct win *p, bool anchored)
{
	xc_connect(x, 0);
	win_mapped(x, t);
	win_popup(x, p, t, positioner(x, 10, 10, 0, 0, anchored, anchored));
}

/* ---- what the compositor holds ------------------------------------------------------- */

static void
lookup_on_thread(void *data)
{
	struct lookup *l = data;
	struct wlc_surface *s;

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
bool
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
void
comp_surface_again(struct lookup *l)
{
	wlt_comp_call(comp, lookup_on_thread, l);
}

/* ---- main ------------------------------------------------------------------------------ */

static void
start(struct wlt_comp *w, int ping_ms, bool ping_disconnect)
{
	struct wlt_devices d = { .vgem = -1, .vgem_render = -1, .client_drm = -1, .comp_drm = -1 };
	struct wlc_comp_options opt;
	struct xc probe;
	int r;

	wlt_comp_options_init(&opt, &d, 0);
	opt.ping_timeout_ms = ping_ms;
	opt.ping_disconnect = ping_disconnect;
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
	static struct wlt_comp main_comp, ping_comp, mark_comp; /* large: not on the stack */

	setvbuf(stdout, NULL, _IOLBF, 0);
	start(&main_comp, 0, false);

	xdgt_cases();
	xdgt_errors();

	xdgt_fds();
	wlt_comp_stop(&main_comp);

	start(&ping_comp, PING_MS, true);
	xdgt_pings();
	wlt_comp_stop(&ping_comp);

	/* the default: a late client is marked, not ended */
	start(&mark_comp, PING_MS, false);
	xdgt_ping_marks();
	wlt_comp_stop(&mark_comp);

	tb_checks += xdgt_checks;
	tb_failures += xdgt_failures;
	return tb_finish();
}
