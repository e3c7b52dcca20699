/* SPDX-License-Identifier: MIT */
/*
 * The example compositor's wl_seat (wlc_internal.h): a keyboard that never
 * sends a key, a pointer that never moves, and the keyboard focus.
 *
 * The compositor is headless and has no input, but clients need a keyboard
 * to start (a keymap) and the clipboard needs a focused client ("The
 * selection event is sent to a client immediately before receiving keyboard
 * focus"). So:
 *  - keyboard: with libxkbcommon (WLC_HAVE_XKBCOMMON) and a keymap it can
 *    compile from the default names (XKB_DEFAULT_* from the environment,
 *    else evdev "us"), kept in one sealed memfd that every wl_keyboard gets;
 *    without either the seat has no keyboard, as it had none before.
 *  - pointer: always; set_cursor gives the surface the cursor role and
 *    nothing more, no event is ever sent.
 *  - touch: only where the host says so (opt.seat_touch) and injects it
 *    (wlc_embed.c).
 *  - focus: a toplevel that goes on screen takes the keyboard focus; when
 *    the focused surface leaves the screen the focus goes to the most
 *    recently mapped toplevel still there, or nowhere.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#ifdef WLC_HAVE_XKBCOMMON
#include <xkbcommon/xkbcommon.h>
#endif

#include "wlc_internal.h"

#define SEAT_VERSION 7
/* what weston and wlroots default to */
#define REPEAT_RATE 25   /* characters per second */
#define REPEAT_DELAY 600 /* ms */

struct wlc_seat {
	struct wlc_comp *comp;
	struct wl_global *global;
	struct wl_list keyboards;   /* wl_keyboard resource links */
	struct wl_list pointers;    /* wl_pointer resource links (events: wlc_embed.c) */
	struct wl_list touches;     /* wl_touch resource links (opt.seat_touch; wlc_embed.c) */
	struct wl_list focus_order; /* wlc_surface.focus_link: mapped toplevels, newest first */
	struct wlc_surface *focus; /* has the keyboard focus; NULL: none */
	uint32_t focus_serial;      /* of the enter or leave being sent */
	int keymap_fd;              /* sealed memfd: the keymap text and its NUL; -1: no keyboard */
	uint32_t keymap_size;
};

/* ---- the keymap ---------------------------------------------------------------- */

#ifdef WLC_HAVE_XKBCOMMON
/* The default keymap into seat->keymap_fd; 0 or -errno (then no keyboard). */
static int
keymap_create(struct wlc_seat *seat)
{
	struct xkb_context *ctx = xkb_context_new(XKB_CONTEXT_NO_FLAGS);
	struct xkb_keymap *keymap = NULL;
	char *text = NULL;
	size_t size;
	int ret = -ENOMEM;

	if (!ctx)
		goto out;
	/* NULL names: XKB_DEFAULT_RULES, _MODEL, _LAYOUT, _VARIANT, _OPTIONS, else evdev "us" */
	keymap = xkb_keymap_new_from_names(ctx, NULL, XKB_KEYMAP_COMPILE_NO_FLAGS);
	if (!keymap) {
		ret = -ENOENT;
		goto out;
	}
	text = xkb_keymap_get_as_string(keymap, XKB_KEYMAP_FORMAT_TEXT_V1);
	if (!text)
		goto out;
	size = strlen(text) + 1;
	if (size > UINT32_MAX) {
		ret = -EFBIG;
		goto out;
	}
	/* the NUL counted, as weston's and wlroots' do: clients hand the
	 * mapping to xkbcommon as a string */
	ret = wlc_sealed_memfd("sbwl-keymap", text, size);
	if (ret < 0)
		goto out;
	seat->keymap_fd = ret;
	seat->keymap_size = (uint32_t)size;
	ret = 0;
out:
	free(text);
	xkb_keymap_unref(keymap);
	xkb_context_unref(ctx);
	return ret;
}
#else
static int
keymap_create(struct wlc_seat *seat)
{
	return -ENOTSUP;
}
#endif

/* ---- keyboard focus ----------------------------------------------------------- */

static struct wl_client *
surface_client(const struct wlc_surface *surf)
{
	return surf ? wl_resource_get_client(surf->resource) : NULL;
}

/* data: the seat; the focus and the serial are its. */
static void
send_enter_to(struct wl_resource *kb, void *data)
{
	struct wlc_seat *seat = data;
	struct wl_array keys;

	wl_array_init(&keys); /* no key is ever down */
	wl_keyboard_send_enter(kb, seat->focus_serial, seat->focus->resource, &keys);
	wl_keyboard_send_modifiers(kb, seat->focus_serial, 0, 0, 0, 0);
}

static void
send_leave_to(struct wl_resource *kb, void *data)
{
	struct wlc_seat *seat = data;

	wl_keyboard_send_leave(kb, seat->focus_serial, seat->focus->resource);
}

/* send_enter_to or send_leave_to every keyboard of the focused client, under one new serial. */
static void
send_focus(struct wlc_seat *seat, void (*send)(struct wl_resource *kb, void *data))
{
	seat->focus_serial = wl_display_next_serial(seat->comp->display);
	wlc_resource_list_send(&seat->keyboards, surface_client(seat->focus), send, seat);
}

static void
focus_set(struct wlc_seat *seat, struct wlc_surface *surf)
{
	if (surf == seat->focus)
		return;
	if (seat->focus)
		send_focus(seat, send_leave_to);
	seat->focus = surf;
	/* "The selection event is sent to a client immediately before receiving keyboard focus" */
	wlc_data_device_focus_changed(seat->comp->data_device, surface_client(surf));
	if (surf)
		send_focus(seat, send_enter_to);
}

/* A toplevel left the screen (its destroy too): with the focus, the focus moves on. */
static void
focus_surface_unmapped(struct wl_listener *l, void *data)
{
	struct wlc_surface *surf = data, *next = NULL;
	struct wlc_seat *seat = surf->comp->seat;

	wl_list_remove(&surf->focus_link);
	wl_list_init(&surf->focus_link);
	wl_list_remove(&surf->focus_unmap.link);
	wl_list_init(&surf->focus_unmap.link);
	if (!seat || seat->focus != surf)
		return;
	if (!wl_list_empty(&seat->focus_order))
		next = wl_container_of(seat->focus_order.next, next, focus_link);
	focus_set(seat, next);
}

void
wlc_seat_toplevel_mapped(struct wlc_seat *seat, struct wlc_surface *surf)
{
	if (!seat)
		return;
	wl_list_remove(&surf->focus_link);
	wl_list_insert(&seat->focus_order, &surf->focus_link);
	/* heard until it leaves the screen (wlc_surface_unmap()) */
	wl_list_remove(&surf->focus_unmap.link);
	surf->focus_unmap.notify = focus_surface_unmapped;
	wl_signal_add(&surf->unmap_signal, &surf->focus_unmap);
	focus_set(seat, surf);
}


/* ---- wl_keyboard, wl_pointer -------------------------------------------------------- */

static const struct wl_keyboard_interface keyboard_impl = {
	.release = wlc_destroy_request,
};

/* "This request gives the surface the role of a cursor." Kept, never drawn. */
static const struct wlc_role cursor_role = { .name = "wl_pointer cursor" };

static void
pointer_set_cursor(struct wl_client *client, struct wl_resource *resource, uint32_t serial,
		   struct wl_resource *surface, int32_t hotspot_x, int32_t hotspot_y)
{
	/* "If the surface already has another role, it raises a protocol error." */
	if (surface)
		wlc_surface_set_role(wlc_surface_from_resource(surface), &cursor_role, NULL,
				     resource, WL_POINTER_ERROR_ROLE);
}

static const struct wl_pointer_interface pointer_impl = {
	.set_cursor = pointer_set_cursor,
	.release = wlc_destroy_request,
};

/* ---- wl_seat ------------------------------------------------------------------ */

static uint32_t
capabilities(const struct wlc_seat *seat)
{
	uint32_t caps = WL_SEAT_CAPABILITY_POINTER;

	if (seat->keymap_fd >= 0)
		caps |= WL_SEAT_CAPABILITY_KEYBOARD;
	if (seat->comp->opt.seat_touch)
		caps |= WL_SEAT_CAPABILITY_TOUCH;
	return caps;
}

static void
seat_get_pointer(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct wlc_seat *seat = wl_resource_get_user_data(resource);

	wlc_resource_new_linked(client, &wl_pointer_interface, wl_resource_get_version(resource),
				id, &pointer_impl, seat, &seat->pointers);
}

void
wlc_seat_pointer_send(struct wlc_seat *seat, struct wl_client *client,
		      void (*send)(struct wl_resource *res, void *data), void *data)
{
	if (seat)
		wlc_resource_list_send(&seat->pointers, client, send, data);
}

static void
seat_get_keyboard(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct wlc_seat *seat = wl_resource_get_user_data(resource);
	int version = wl_resource_get_version(resource);
	struct wl_resource *kb;

	/*
	 * "It is a protocol violation to issue this request on a seat that has
	 * never had the keyboard capability. The missing_capability error will
	 * be sent in this case."
	 */
	if (seat->keymap_fd < 0) {
		wl_resource_post_error(resource, WL_SEAT_ERROR_MISSING_CAPABILITY,
				       "this seat has no keyboard (no keymap)");
		return;
	}
	kb = wlc_resource_new_linked(client, &wl_keyboard_interface, version, id, &keyboard_impl,
				     seat, &seat->keyboards);
	if (!kb)
		return;
	/* libwayland sends a dup of the fd and closes it once sent: ours stays */
	wl_keyboard_send_keymap(kb, WL_KEYBOARD_KEYMAP_FORMAT_XKB_V1, seat->keymap_fd,
				seat->keymap_size);
	if (version >= WL_KEYBOARD_REPEAT_INFO_SINCE_VERSION)
		wl_keyboard_send_repeat_info(kb, REPEAT_RATE, REPEAT_DELAY);
	if (seat->focus && surface_client(seat->focus) == client) {
		seat->focus_serial = wl_display_next_serial(seat->comp->display);
		send_enter_to(kb, seat);
	}
}

static const struct wl_touch_interface touch_impl = {
	.release = wlc_destroy_request,
};

/* "The missing_capability error will be sent in this case." (without opt.seat_touch) */
static void
seat_get_touch(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct wlc_seat *seat = wl_resource_get_user_data(resource);

	if (!seat->comp->opt.seat_touch) {
		wl_resource_post_error(resource, WL_SEAT_ERROR_MISSING_CAPABILITY,
				       "this seat has no touch device");
		return;
	}
	wlc_resource_new_linked(client, &wl_touch_interface, wl_resource_get_version(resource), id,
				&touch_impl, seat, &seat->touches);
}

void
wlc_seat_touch_send(struct wlc_seat *seat, struct wl_client *client,
		    void (*send)(struct wl_resource *res, void *data), void *data)
{
	if (seat)
		wlc_resource_list_send(&seat->touches, client, send, data);
}

static const struct wl_seat_interface seat_impl = {
	.get_pointer = seat_get_pointer,
	.get_keyboard = seat_get_keyboard,
	.get_touch = seat_get_touch,
	.release = wlc_destroy_request,
};

static void
seat_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	struct wlc_seat *seat = data;
	struct wl_resource *res = wlc_resource_new(client, &wl_seat_interface, (int)version, id,
						   &seat_impl, seat, NULL);

	if (!res)
		return;
	wl_seat_send_capabilities(res, capabilities(seat));
	if (version >= WL_SEAT_NAME_SINCE_VERSION)
		wl_seat_send_name(res, "seat0");
}

/* ---- life cycle ---------------------------------------------------------------- */

struct wlc_seat *
wlc_seat_create(struct wlc_comp *comp)
{
	struct wlc_seat *seat = calloc(1, sizeof(*seat));
	int ret;

	if (!seat)
		return NULL;
	seat->comp = comp;
	seat->keymap_fd = -1;
	wl_list_init(&seat->keyboards);
	wl_list_init(&seat->pointers);
	wl_list_init(&seat->touches);
	wl_list_init(&seat->focus_order);
	ret = keymap_create(seat);
	if (ret < 0 && ret != -ENOTSUP)
		fprintf(stderr, "compositor: no keymap (%s): the seat has no keyboard\n",
			ret == -ENOENT ? "xkbcommon could not compile the default one; xkb-data?" :
					 strerror(-ret));
	seat->global = wl_global_create(comp->display, &wl_seat_interface, SEAT_VERSION, seat,
					seat_bind);
	if (!seat->global) {
		wlc_seat_destroy(seat);
		return NULL;
	}
	return seat;
}

void
wlc_seat_destroy(struct wlc_seat *seat)
{
	struct wlc_surface *surf, *stmp;

	if (!seat)
		return;
	wlc_resource_list_orphan(&seat->keyboards);
	wlc_resource_list_orphan(&seat->pointers);
	wlc_resource_list_orphan(&seat->touches);
	wl_list_for_each_safe(surf, stmp, &seat->focus_order, focus_link) {
		wl_list_remove(&surf->focus_link);
		wl_list_init(&surf->focus_link);
		wl_list_remove(&surf->focus_unmap.link);
		wl_list_init(&surf->focus_unmap.link);
	}
	if (seat->global)
		wl_global_destroy(seat->global);
	if (seat->keymap_fd >= 0)
		close(seat->keymap_fd);
	free(seat);
}
