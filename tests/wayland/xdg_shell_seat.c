/* SPDX-License-Identifier: MIT */
/*
 * wl-xdg-shell's wl_seat: xdg_toplevel.resize and xdg_popup.grab take a
 * wl_seat, which the example compositor does not offer yet. A bare one
 * (no capabilities, no devices) on the compositor's display, made on its
 * thread. Its own file: the server protocol header does not mix with the
 * client one of the test.
 */
#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include "xdg_shell_seat.h"

static void
seat_get_device(struct wl_client *client, struct wl_resource *res, uint32_t id)
{
	/* no capabilities: a client has no business asking */
	wl_resource_post_error(res, WL_SEAT_ERROR_MISSING_CAPABILITY, "the test seat has no devices");
}

static void
seat_release(struct wl_client *client, struct wl_resource *res)
{
	wl_resource_destroy(res);
}

static const struct wl_seat_interface seat_impl = {
	.get_pointer = seat_get_device,
	.get_keyboard = seat_get_device,
	.get_touch = seat_get_device,
	.release = seat_release,
};

static void
seat_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	struct wl_resource *res = wl_resource_create(client, &wl_seat_interface, (int)version, id);

	if (!res) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(res, &seat_impl, NULL, NULL);
	wl_seat_send_capabilities(res, 0);
}

void
xdgt_seat_add(void *display)
{
	/* lives as long as the display (wl_display_destroy frees its globals) */
	wl_global_create(display, &wl_seat_interface, 5, NULL, seat_bind);
}
