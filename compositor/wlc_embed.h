/* SPDX-License-Identifier: MIT */
/*
 * The example compositor embedded in another program's process: what a host
 * that drives it in-process needs beyond wlc_compositor.h. The one host is
 * the Wayland conformance suite's integration module (tests/wlcs/), which
 * hands the compositor clients by fd, places their windows and moves a
 * pointer and a touch point that have no device behind them.
 *
 * Every call runs on the compositor's thread (the event loop's: wlcs calls
 * from its own thread, so the module forwards each call there).
 */
#ifndef WLC_EMBED_H
#define WLC_EMBED_H

#include <stdbool.h>
#include <stdint.h>

struct wl_client;
struct wlc_comp;

/*
 * A client on `fd`, one end of a connected socket (the fd becomes the
 * client's on success; the caller's to close on failure). NULL on failure.
 */
struct wl_client *wlc_embed_client_create(struct wlc_comp *comp, int fd);

/*
 * Put the window of `client`'s wl_surface `surface_id` (a protocol id) with
 * its top left corner at (x, y) of the output, and keep it there. A
 * toplevel keeps the place across commits (as a window the user moved
 * would); any other surface is moved as it is now. Returns 0, or -ENOENT
 * where the client has no such surface.
 */
int wlc_embed_place_window(struct wlc_comp *comp, struct wl_client *client, uint32_t surface_id,
			   int32_t x, int32_t y);

/*
 * An injected pointer: the seat's wl_pointer events as a device would make
 * them. The focus is the topmost mapped surface under the pointer (its
 * whole buffer: input regions are not kept), held while a button is down
 * (the implicit grab). Positions are wl_fixed_t in output coordinates.
 */
struct wlc_embed_pointer;
struct wlc_embed_pointer *wlc_embed_pointer_create(struct wlc_comp *comp);
void wlc_embed_pointer_destroy(struct wlc_embed_pointer *p);
void wlc_embed_pointer_move_to(struct wlc_embed_pointer *p, int32_t x, int32_t y);
void wlc_embed_pointer_move_by(struct wlc_embed_pointer *p, int32_t dx, int32_t dy);
/* `button`: a linux/input-event-codes.h code (BTN_LEFT...). */
void wlc_embed_pointer_button(struct wlc_embed_pointer *p, uint32_t button, bool pressed);
/*
 * Windows moved, mapped, resized or went under a pointer that stayed: the
 * focus follows (leave, enter) and a focus that stayed gets motion where the
 * surface moved under it. The host calls it after each dispatch of the
 * event loop (the compositor has no signal for a changed stack).
 */
void wlc_embed_pointer_repick(struct wlc_embed_pointer *p);

/*
 * An injected touch device with one touch point (id 0), for a compositor
 * made with opt.seat_touch: down on the topmost mapped surface under it
 * (none: the touch goes nowhere), motion relative to that surface wherever
 * it goes, up. Positions are wl_fixed_t in output coordinates.
 */
struct wlc_embed_touch;
struct wlc_embed_touch *wlc_embed_touch_create(struct wlc_comp *comp);
void wlc_embed_touch_destroy(struct wlc_embed_touch *t);
void wlc_embed_touch_down(struct wlc_embed_touch *t, int32_t x, int32_t y);
void wlc_embed_touch_move(struct wlc_embed_touch *t, int32_t x, int32_t y);
void wlc_embed_touch_up(struct wlc_embed_touch *t);

#endif
