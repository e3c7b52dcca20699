/* SPDX-License-Identifier: MIT */
/*
 * The example compositor embedded in a host's process (wlc_embed.h): clients
 * by fd, windows placed by the host, and a pointer the host moves.
 *
 * The compositor has no input device, so the seat's wl_pointer never had an
 * event; the pointer here makes them as a device's would: enter, leave,
 * motion and button, each group closed by wl_pointer.frame (version 5 on).
 * Its focus follows the position over the mapped surfaces (comp->stack, top
 * first), except while a button is down: "the surface that received the
 * button press keeps the pointer focus" until every button is up (the
 * implicit grab every compositor has; wlcs checks it). The touch point is
 * the same for wl_touch: down on the surface under it, which keeps it until
 * up.
 */
#include "wlc_embed.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include "clock.h" /* now_ns() */
#include "wlc_internal.h"
#include "wlc_shell_internal.h"

struct wl_client *
wlc_embed_client_create(struct wlc_comp *comp, int fd)
{
	return wl_client_create(comp->display, fd);
}

/* ---- placing windows ------------------------------------------------------------ */

int
wlc_embed_place_window(struct wlc_comp *comp, struct wl_client *client, uint32_t surface_id,
		       int32_t x, int32_t y)
{
	struct wl_resource *res = wl_client_get_object(client, surface_id);
	struct wlc_surface *surf = res ? wlc_surface_from_resource(res) : NULL;
	struct xdg_surface *xs;

	if (!surf)
		return -ENOENT;
	xs = surf->role && strcmp(surf->role->name, "xdg_toplevel") == 0 ? surf->role_data : NULL;
	if (xs && xs->toplevel) {
		/* the toplevel's own place, which each applied commit puts it at */
		xs->toplevel->x = x;
		xs->toplevel->y = y;
		xs->toplevel->placed = true;
		if (surf->mapped)
			shell_toplevel_place(xs->toplevel);
	} else {
		surf->x = x;
		surf->y = y;
	}
	/* its sub-surfaces move with it, then a repaint */
	wlc_surface_tell_placed(surf, false);
	wl_signal_emit(&comp->needs_repaint, NULL);
	return 0;
}

/* ---- the pointer ---------------------------------------------------------------- */

struct wlc_embed_pointer {
	struct wlc_comp *comp;
	wl_fixed_t x, y;               /* on the output */
	bool moved;                    /* x, y are known: it has moved since it was made */
	struct wlc_surface *focus;     /* NULL: over nothing */
	struct wl_listener focus_destroy;
	wl_fixed_t sx, sy;             /* the position on the focus last sent */
	unsigned buttons_down;
};

/* What one send puts on every wl_pointer of the focused client. */
struct pointer_event {
	struct wlc_embed_pointer *p;
	uint32_t serial, time_ms;
	uint32_t button, state;
	wl_fixed_t sx, sy;
};

static uint32_t
time_ms(void)
{
	return (uint32_t)(now_ns() / 1000000);
}

static void
send_frame(struct wl_resource *res)
{
	if (wl_resource_get_version(res) >= WL_POINTER_FRAME_SINCE_VERSION)
		wl_pointer_send_frame(res);
}

static void
send_enter(struct wl_resource *res, void *data)
{
	struct pointer_event *e = data;

	wl_pointer_send_enter(res, e->serial, e->p->focus->resource, e->sx, e->sy);
	send_frame(res);
}

static void
send_leave(struct wl_resource *res, void *data)
{
	struct pointer_event *e = data;

	wl_pointer_send_leave(res, e->serial, e->p->focus->resource);
	send_frame(res);
}

static void
send_motion(struct wl_resource *res, void *data)
{
	struct pointer_event *e = data;

	wl_pointer_send_motion(res, e->time_ms, e->sx, e->sy);
	send_frame(res);
}

static void
send_button(struct wl_resource *res, void *data)
{
	struct pointer_event *e = data;

	wl_pointer_send_button(res, e->serial, e->time_ms, e->button, e->state);
	send_frame(res);
}

/* Send to the focused client's pointers; fills in the focus-local position. */
static void
pointer_send(struct wlc_embed_pointer *p, struct pointer_event *e,
	     void (*send)(struct wl_resource *res, void *data))
{
	e->p = p;
	e->time_ms = time_ms();
	e->sx = p->sx = p->x - wl_fixed_from_int(p->focus->x);
	e->sy = p->sy = p->y - wl_fixed_from_int(p->focus->y);
	wlc_seat_pointer_send(p->comp->seat, wl_resource_get_client(p->focus->resource), send, e);
}

/* The topmost mapped surface whose buffer holds (x, y), or NULL. */
static struct wlc_surface *
surface_at(struct wlc_comp *comp, wl_fixed_t x, wl_fixed_t y)
{
	struct wlc_surface *s;

	wl_list_for_each_reverse(s, &comp->stack, link) {
		wl_fixed_t left = wl_fixed_from_int(s->x), top = wl_fixed_from_int(s->y);

		if (x >= left && y >= top && x < left + wl_fixed_from_int((int)s->width) &&
		    y < top + wl_fixed_from_int((int)s->height))
			return s;
	}
	return NULL;
}

static void focus_set(struct wlc_embed_pointer *p, struct wlc_surface *surf);

static void
focus_destroyed(struct wl_listener *l, void *data)
{
	struct wlc_embed_pointer *p = wl_container_of(l, p, focus_destroy);

	/*
	 * A leave all the same (its resource is still there, in its destroy):
	 * the client's pointer is on nothing now, and an enter elsewhere must
	 * not come before a leave (wlcs checks the pair; the client sees the
	 * surface of a request it destroyed as NULL).
	 */
	p->buttons_down = 0;
	focus_set(p, NULL);
}

static void
focus_set(struct wlc_embed_pointer *p, struct wlc_surface *surf)
{
	struct pointer_event e = { 0 };

	if (surf == p->focus)
		return;
	if (p->focus) {
		e.serial = wl_display_next_serial(p->comp->display);
		pointer_send(p, &e, send_leave);
		wl_list_remove(&p->focus_destroy.link);
		wl_list_init(&p->focus_destroy.link);
	}
	p->focus = surf;
	if (!surf)
		return;
	wl_signal_add(&surf->destroy_signal, &p->focus_destroy);
	e.serial = wl_display_next_serial(p->comp->display);
	pointer_send(p, &e, send_enter);
}

struct wlc_embed_pointer *
wlc_embed_pointer_create(struct wlc_comp *comp)
{
	struct wlc_embed_pointer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->comp = comp;
	p->focus_destroy.notify = focus_destroyed;
	wl_list_init(&p->focus_destroy.link);
	return p;
}

void
wlc_embed_pointer_destroy(struct wlc_embed_pointer *p)
{
	if (!p)
		return;
	focus_set(p, NULL);
	free(p);
}

void
wlc_embed_pointer_repick(struct wlc_embed_pointer *p)
{
	struct pointer_event e = { 0 };
	struct wlc_surface *old = p->focus;
	wl_fixed_t sx, sy;

	/* a new device is nowhere until it moves (not at 0,0: over a window there) */
	if (!p->moved)
		return;
	if (!p->buttons_down)
		focus_set(p, surface_at(p->comp, p->x, p->y));
	/* an enter carries the position: motion only where the focus stayed */
	if (!p->focus || p->focus != old)
		return;
	sx = p->x - wl_fixed_from_int(p->focus->x);
	sy = p->y - wl_fixed_from_int(p->focus->y);
	if (sx != p->sx || sy != p->sy)
		pointer_send(p, &e, send_motion);
}

void
wlc_embed_pointer_move_to(struct wlc_embed_pointer *p, int32_t x, int32_t y)
{
	p->x = x;
	p->y = y;
	p->moved = true;
	wlc_embed_pointer_repick(p);
}

void
wlc_embed_pointer_move_by(struct wlc_embed_pointer *p, int32_t dx, int32_t dy)
{
	wlc_embed_pointer_move_to(p, p->x + dx, p->y + dy);
}

void
wlc_embed_pointer_button(struct wlc_embed_pointer *p, uint32_t button, bool pressed)
{
	struct pointer_event e = { 0 };

	if (pressed) {
		p->buttons_down++;
	} else if (p->buttons_down) {
		p->buttons_down--;
	}
	if (p->focus) {
		e.serial = wl_display_next_serial(p->comp->display);
		e.button = button;
		e.state = pressed ? WL_POINTER_BUTTON_STATE_PRESSED :
				    WL_POINTER_BUTTON_STATE_RELEASED;
		pointer_send(p, &e, send_button);
	}
	/* the grab ends: the focus goes back to what is under the pointer */
	if (!pressed && !p->buttons_down)
		focus_set(p, surface_at(p->comp, p->x, p->y));
}

/* ---- the touch point ------------------------------------------------------------ */

struct wlc_embed_touch {
	struct wlc_comp *comp;
	wl_fixed_t x, y;               /* on the output */
	struct wlc_surface *focus;     /* the surface the point went down on; NULL: none */
	struct wl_listener focus_destroy;
};

struct touch_event {
	struct wlc_embed_touch *t;
	uint32_t serial, time_ms;
	wl_fixed_t sx, sy;
};

static void
send_touch_down(struct wl_resource *res, void *data)
{
	struct touch_event *e = data;

	wl_touch_send_down(res, e->serial, e->time_ms, e->t->focus->resource, 0, e->sx, e->sy);
	wl_touch_send_frame(res);
}

static void
send_touch_motion(struct wl_resource *res, void *data)
{
	struct touch_event *e = data;

	wl_touch_send_motion(res, e->time_ms, 0, e->sx, e->sy);
	wl_touch_send_frame(res);
}

static void
send_touch_up(struct wl_resource *res, void *data)
{
	struct touch_event *e = data;

	wl_touch_send_up(res, e->serial, e->time_ms, 0);
	wl_touch_send_frame(res);
}

static void
touch_send(struct wlc_embed_touch *t, void (*send)(struct wl_resource *res, void *data))
{
	struct touch_event e = { .t = t, .time_ms = time_ms() };

	e.serial = wl_display_next_serial(t->comp->display);
	e.sx = t->x - wl_fixed_from_int(t->focus->x);
	e.sy = t->y - wl_fixed_from_int(t->focus->y);
	wlc_seat_touch_send(t->comp->seat, wl_resource_get_client(t->focus->resource), send, &e);
}

static void
touch_focus_clear(struct wlc_embed_touch *t)
{
	wl_list_remove(&t->focus_destroy.link);
	wl_list_init(&t->focus_destroy.link);
	t->focus = NULL;
}

/* Its surface went: the point is up as far as anyone can tell. */
static void
touch_focus_destroyed(struct wl_listener *l, void *data)
{
	struct wlc_embed_touch *t = wl_container_of(l, t, focus_destroy);

	touch_send(t, send_touch_up);
	touch_focus_clear(t);
}

struct wlc_embed_touch *
wlc_embed_touch_create(struct wlc_comp *comp)
{
	struct wlc_embed_touch *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->comp = comp;
	t->focus_destroy.notify = touch_focus_destroyed;
	wl_list_init(&t->focus_destroy.link);
	return t;
}

void
wlc_embed_touch_destroy(struct wlc_embed_touch *t)
{
	if (!t)
		return;
	wlc_embed_touch_up(t);
	free(t);
}

void
wlc_embed_touch_down(struct wlc_embed_touch *t, int32_t x, int32_t y)
{
	wlc_embed_touch_up(t); /* one point: a second down lifts the first */
	t->x = x;
	t->y = y;
	t->focus = surface_at(t->comp, x, y);
	if (!t->focus)
		return;
	wl_signal_add(&t->focus->destroy_signal, &t->focus_destroy);
	touch_send(t, send_touch_down);
}

void
wlc_embed_touch_move(struct wlc_embed_touch *t, int32_t x, int32_t y)
{
	t->x = x;
	t->y = y;
	/* relative to the surface it went down on, wherever it is now */
	if (t->focus)
		touch_send(t, send_touch_motion);
}

void
wlc_embed_touch_up(struct wlc_embed_touch *t)
{
	if (!t->focus)
		return;
	touch_send(t, send_touch_up);
	touch_focus_clear(t);
}
