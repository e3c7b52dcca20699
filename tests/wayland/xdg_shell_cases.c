/* SPDX-License-Identifier: MIT */
/* wl-xdg-shell (xdg_shell.c): the life of toplevels and popups, pings, fds. */
#include <pthread.h>
#include <unistd.h>

#include "harness.h"
#include "wlc_internal.h"
#include "xdg_shell.h"

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
	w.tl = NULL;
	expect_ok(&x, "map: toplevel destroy");
	comp_surface_again(&l);
	CHECK(l.found && !l.mapped, "map: xdg_toplevel.destroy unmaps");
	win_destroy(&w);
	xc_destroy_base(&x);
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
	win_mapped(&x, &w);
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
	xc_connect_toplevel(&x, &w);
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
	xc_connect_toplevel(&x, &w);
	first = w.serial;
	xdg_toplevel_set_maximized(w.tl);
	wl_display_roundtrip(x.c.display);
	xdg_surface_ack_configure(w.xs, w.serial);
	xdg_surface_ack_configure(w.xs, first);
	expect_error(&x, "ack: newer then older", &xdg_surface_interface, id_of(w.xs),
		     XDG_SURFACE_ERROR_INVALID_SERIAL);
	xc_disconnect(&x);

	/* the same serial twice */
	xc_connect_toplevel(&x, &w);
	xdg_surface_ack_configure(w.xs, w.serial);
	xdg_surface_ack_configure(w.xs, w.serial);
	expect_error(&x, "ack: twice", &xdg_surface_interface, id_of(w.xs), XDG_SURFACE_ERROR_INVALID_SERIAL);
	xc_disconnect(&x);

	/* one never sent */
	xc_connect_toplevel(&x, &w);
	xdg_surface_ack_configure(w.xs, w.serial + 1000);
	expect_error(&x, "ack: never sent", &xdg_surface_interface, id_of(w.xs), XDG_SURFACE_ERROR_INVALID_SERIAL);
	xc_disconnect(&x);
}

static void
case_close_all_fn(void *data)
{
	wlc_shell_close_all(comp->comp->shell);
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
	expect_ok(&x, "close: after wlc_shell_close_all");
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
	win_mapped(&x, &t);
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

	xc_connect_popup(&x, &t, &p, true);
	xdg_popup_grab(p.popup, x.seat, 0);
	wl_surface_commit(p.s);
	expect_ok(&x, "grab: grab and commit");
	CHECK(p.popup_done, "grab: denied (no seat input): popup_done at once");
	xc_disconnect(&x);
}

/* ---- pings (a compositor with a PING_MS timeout) ----------------------------------------- */

static void
case_ping_unanswered(int mode)
{
	struct xc x;
	struct win w;
	const char *what = mode == NO_PONG ? "unresponsive: no pong" : "unresponsive: a pong with the wrong serial";
	int64_t t0;

	connect_pong = mode;
	xc_connect(&x, 0);
	connect_pong = PONG;
	/* no window, no ping: a client that only binds is left alone */
	wlt_dispatch_for(&x.c, 2 * PING_MS * WLT_MS);
	CHECK(x.pings == 0, "%s: no ping without an xdg_surface (%d in %d ms)", what, x.pings, 2 * PING_MS);
	expect_ok(&x, "ping: a client without windows stays connected");
	t0 = now_ns();
	win_xdg(&x, &w);
	/* let the timeout pass; dispatching answers nothing */
	wlt_dispatch_for(&x.c, 3 * PING_MS * WLT_MS);
	CHECK(x.pings >= 1, "%s: a ping once it has an xdg_surface", what);
	expect_error(&x, what, &xdg_wm_base_interface, id_of(x.base), XDG_WM_BASE_ERROR_UNRESPONSIVE);
	CHECK(now_ns() - t0 >= PING_MS * WLT_MS, "%s: not before the timeout", what);
	win_destroy(&w);
	xc_disconnect(&x);
}

static void
case_ping_answered(void)
{
	struct xc x;
	struct win w;

	xc_connect(&x, 0);
	win_mapped(&x, &w);
	wlt_dispatch_for(&x.c, 6 * PING_MS * WLT_MS);
	CHECK(x.pings >= 4, "ping: pinged every %d ms while it has surfaces (%d pings in %d ms)",
	      PING_MS / 2, x.pings, 6 * PING_MS);
	expect_ok(&x, "ping: a client answering pings stays connected");
	xc_disconnect(&x);
}


/*
 * The compositor itself held up past the timeout (a busy host): the client's
 * pong, sent after the timeout but before the compositor ran again, waits
 * unread when the timer fires, and the timer's fd became ready first. The
 * pong is read first (wlc_shell_ping.c, shell_ping_timer()): the client stays.
 * Without that the client was disconnected ("ping N unanswered"), as
 * wl-client-v1-control once was on a host with load 7.5 on 2 cores.
 */
static void
stall_compositor(void *data)
{
	sbk_sleep_ns(*(const int64_t *)data);
}

static void *
stall_thread(void *data)
{
	wlt_comp_call(comp, stall_compositor, data);
	return NULL;
}

static void
case_ping_compositor_stalled(void)
{
	static int64_t stall_ns = 3 * PING_MS * WLT_MS;
	struct xc x;
	struct win w;
	pthread_t th;

	connect_pong = NO_PONG;
	xc_connect(&x, 0);
	connect_pong = PONG;
	win_xdg(&x, &w); /* the first ping comes PING_MS / 2 after it */
	for (int i = 0; i < 4 && x.pings == 0; i++)
		wlt_dispatch_for(&x.c, PING_MS / 2 * WLT_MS);
	REQUIRE(x.pings >= 1, "stalled: a ping once it has an xdg_surface");
	REQUIRE(pthread_create(&th, NULL, stall_thread, &stall_ns) == 0, "stall thread");
	/* After the timeout, while the compositor is still held up. */
	sbk_sleep_ns(3 * PING_MS / 2 * WLT_MS);
	xdg_wm_base_pong(x.base, x.last_ping);
	wl_display_flush(x.c.display);
	pthread_join(th, NULL);
	x.pong = PONG;
	wlt_dispatch_for(&x.c, 2 * PING_MS * WLT_MS);
	expect_ok(&x, "stalled: a pong sent in time for a compositor held up is read before the "
		  "timer's verdict");
	win_destroy(&w);
	xc_disconnect(&x);
}

/*
 * The compositor's default (no ping_disconnect, as mutter, KWin and Weston):
 * a client that leaves a ping unanswered past the timeout is marked not
 * responding and stays; no new ping while that one waits; its late pong
 * clears the mark and the pings go on. gtk4-widget-factory, before its
 * first frame in the TCG guest, was ended for a 5 s late pong (CI, 2026-12-07).
 */
static void
read_ping_stats(void *data)
{
	wlc_comp_get_ping_stats(comp->comp, data);
}

static void
case_ping_late(void)
{
	struct wlc_ping_stats st0, st1, st2;
	struct xc x;
	struct win w;
	int pings;

	wlt_comp_call(comp, read_ping_stats, &st0);
	connect_pong = NO_PONG;
	xc_connect(&x, 0);
	connect_pong = PONG;
	win_xdg(&x, &w);
	wlt_dispatch_for(&x.c, 4 * PING_MS * WLT_MS);
	REQUIRE(x.pings >= 1, "late: a ping once it has an xdg_surface");
	expect_ok(&x, "late: a client past the ping timeout stays connected");
	CHECK(x.pings == 1, "late: no new ping while one waits (%d in %d ms)", x.pings, 4 * PING_MS);
	wlt_comp_call(comp, read_ping_stats, &st1);
	CHECK(st1.not_responding == st0.not_responding + 1, "late: marked not responding once (%llu times)",
	      (unsigned long long)(st1.not_responding - st0.not_responding));
	CHECK(st1.answered == st0.answered, "late: no pong counted");

	xdg_wm_base_pong(x.base, x.last_ping);
	x.pong = PONG;
	pings = x.pings;
	wlt_dispatch_for(&x.c, 3 * PING_MS * WLT_MS);
	expect_ok(&x, "late: still connected after its late pong");
	CHECK(x.pings >= pings + 2, "late: pinged again after its pong (%d more in %d ms)", x.pings - pings,
	      3 * PING_MS);
	wlt_comp_call(comp, read_ping_stats, &st2);
	CHECK(st2.not_responding == st1.not_responding, "late: answering pings, not marked again");
	CHECK(st2.longest_wait_ms >= 3 * PING_MS, "late: its wait counted (the longest: %lld ms)",
	      (long long)st2.longest_wait_ms);
	win_destroy(&w);
	xc_disconnect(&x);
}

void
xdgt_ping_marks(void)
{
	case_ping_late();
	case_ping_answered();
	XDGT_FLUSH();
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

		xc_connect_popup(&x, &t, &p, true);
		wl_surface_commit(p.s);
		wl_display_roundtrip(x.c.display);
		if (i % 2) { /* half tidy, half left to the disconnect */
			win_destroy(&p);
			win_destroy(&t);
			xc_destroy_base(&x);
		}
		expect_ok(&x, "fds: a cycle");
		xc_disconnect(&x);
	}
	/* the compositor thread sees the hang-ups in its own time */
	for (int i = 0; i < 200 && (fds1 = wlt_count_fds()) > fds0; i++)
		usleep(10000);
	CHECK_EQ(fds1, fds0, "fds: open fds after 50 clients came and went");
}

void
xdgt_cases(void)
{
	case_map();
	case_cascade();
	case_states();
	case_versions();
	case_ack_serials();
	case_close_all();
	case_popup();
	case_popup_grab();
	XDGT_FLUSH();
}

void
xdgt_pings(void)
{
	case_ping_unanswered(NO_PONG);
	case_ping_unanswered(WRONG_PONG);
	case_ping_answered();
	case_ping_compositor_stalled();
	XDGT_FLUSH();
}

void
xdgt_fds(void)
{
	case_fds();
	XDGT_FLUSH();
}
