/* SPDX-License-Identifier: MIT */
/*
 * The headless output (wlc_internal.h): the wl_output global (its size, the
 * repaint clock as its refresh) and what a repaint tells clients: their
 * frame callbacks are done, their presentation feedback is "presented" (with
 * the repaint's CLOCK_MONOTONIC time and counter, and sync_output for the
 * client's wl_output) or "discarded". The surfaces answer through it when
 * there is no clock (wlc_surface.c), the repaint clock at its ticks
 * (wlc_compositor.c).
 */
#include <stdlib.h>

#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include "presentation-time-server-protocol.h"
#include "wlc_internal.h"

#define OUTPUT_VERSION 4

struct wlc_output {
	struct wl_global *global;
	struct wl_list resources; /* wl_output resource links */
	int32_t width, height;
	int repaint_hz;           /* 0: no clock (feedback without the vsync flag) */
};

static const struct wl_output_interface output_impl = {
	.release = wlc_destroy_request,
};

static void
output_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	struct wlc_output *o = data;
	int32_t w = o->width, h = o->height;
	struct wl_resource *res = wlc_resource_new_linked(client, &wl_output_interface,
							  (int)version, id, &output_impl, o,
							  &o->resources);

	if (!res)
		return;
	/* 96 dpi: 25.4 mm per 96 px */
	wl_output_send_geometry(res, 0, 0, w * 254 / 960, h * 254 / 960, WL_OUTPUT_SUBPIXEL_UNKNOWN,
				"syncbridge", "headless", WL_OUTPUT_TRANSFORM_NORMAL);
	wl_output_send_mode(res, WL_OUTPUT_MODE_CURRENT | WL_OUTPUT_MODE_PREFERRED, w, h,
			    o->repaint_hz > 0 ? o->repaint_hz * 1000 : 0);
	if (version >= WL_OUTPUT_SCALE_SINCE_VERSION)
		wl_output_send_scale(res, 1);
	if (version >= WL_OUTPUT_NAME_SINCE_VERSION)
		wl_output_send_name(res, "HEADLESS-1");
	if (version >= WL_OUTPUT_DESCRIPTION_SINCE_VERSION)
		wl_output_send_description(res, "syncbridge headless output");
	if (version >= WL_OUTPUT_DONE_SINCE_VERSION)
		wl_output_send_done(res);
}

struct wlc_output *
wlc_output_create(struct wl_display *display, uint32_t width, uint32_t height, int repaint_hz)
{
	struct wlc_output *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	wl_list_init(&o->resources);
	o->width = width ? (int32_t)width : 640;
	o->height = height ? (int32_t)height : 480;
	o->repaint_hz = repaint_hz > 0 ? repaint_hz : 0;
	o->global = wl_global_create(display, &wl_output_interface, OUTPUT_VERSION, o, output_bind);
	if (!o->global) {
		free(o);
		return NULL;
	}
	return o;
}

void
wlc_output_destroy(struct wlc_output *o)
{
	if (!o)
		return;
	wlc_resource_list_orphan(&o->resources);
	wl_global_destroy(o->global);
	free(o);
}

/* ---- what a repaint answers ------------------------------------------------------ */

void
wlc_frames_done(struct wl_list *frames, int64_t time_ns)
{
	struct wl_resource *cb, *tmp;

	wl_resource_for_each_safe(cb, tmp, frames) {
		wl_callback_send_done(cb, (uint32_t)(time_ns / 1000000));
		wl_resource_destroy(cb);
	}
}

void
wlc_presentation_presented(struct wlc_output *o, struct wl_list *feedbacks, int64_t time_ns,
			    uint64_t msc)
{
	struct wl_resource *fb, *tmp, *out;
	uint64_t sec = (uint64_t)(time_ns / 1000000000);
	uint32_t flags = o->repaint_hz > 0 ? WP_PRESENTATION_FEEDBACK_KIND_VSYNC : 0;
	uint32_t refresh_ns = o->repaint_hz > 0 ? (uint32_t)(1000000000LL / o->repaint_hz) : 0;

	wl_resource_for_each_safe(fb, tmp, feedbacks) {
		struct wl_client *client = wl_resource_get_client(fb);

		wl_resource_for_each(out, &o->resources)
			if (wl_resource_get_client(out) == client)
				wp_presentation_feedback_send_sync_output(fb, out);
		wp_presentation_feedback_send_presented(fb, (uint32_t)(sec >> 32), (uint32_t)sec,
							(uint32_t)(time_ns % 1000000000),
							refresh_ns, (uint32_t)(msc >> 32),
							(uint32_t)msc, flags);
		wl_resource_destroy(fb);
	}
}

static void
send_surface_enter(struct wl_resource *output, void *surface)
{
	wl_surface_send_enter(surface, output);
}

static void
send_surface_leave(struct wl_resource *output, void *surface)
{
	wl_surface_send_leave(surface, output);
}

/*
 * "This is emitted whenever a surface's creation, movement, or resizing
 * results in some part of it being within the scanout region of an output":
 * the one output, whenever the surface is mapped (where on it is not
 * looked at).
 */
void
wlc_output_surface_shown(struct wlc_output *o, struct wl_resource *surface, bool shown)
{
	void (*send)(struct wl_resource *, void *) =
		shown ? send_surface_enter : send_surface_leave;

	if (o)
		wlc_resource_list_send(&o->resources, wl_resource_get_client(surface), send,
				       surface);
}

void
wlc_presentation_discarded(struct wl_list *feedbacks)
{
	struct wl_resource *fb, *tmp;

	wl_resource_for_each_safe(fb, tmp, feedbacks) {
		wp_presentation_feedback_send_discarded(fb);
		wl_resource_destroy(fb);
	}
}
