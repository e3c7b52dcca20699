/* SPDX-License-Identifier: MIT */
/*
 * The example compositor's small globals (wlc_internal.h): wl_subcompositor
 * (the role, its requests and synchronized mode through the helper;
 * sub-surfaces are drawn above everything, at their offset) and
 * wp_presentation (its feedback objects wait on the surface for the repaint
 * that shows the content: wlc_output.c answers them). wl_output is
 * wlc_output.c, wl_seat wlc_seat.c, wl_data_device_manager
 * wlc_data_device.c.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include "presentation-time-server-protocol.h"
#include "wlc_internal.h"

#define SUBCOMPOSITOR_VERSION 1
#define PRESENTATION_VERSION 1

struct wlc_globals {
	struct wlc_comp *comp;
	struct wl_global *subcompositor, *presentation;
	struct wl_listener surface_placed; /* comp->surface_placed */
};

/* ---- wl_subcompositor ------------------------------------------------------------- */

struct subsurface {
	struct wl_resource *resource;
	struct wlc_surface *surface, *parent;
	struct wl_listener surface_destroy, parent_destroy;
	int32_t x, y;                 /* the offset from the parent in effect */
	int32_t pending_x, pending_y; /* set_position's, in effect at the parent's next apply */
	bool sync;
};

static void subsurface_applied(struct wlc_surface *surf, bool has_buffer);

static const struct wlc_role subsurface_role = { .name = "wl_subsurface",
						 .applied = subsurface_applied };

/*
 * Commits reach here as the helper hands them out: a synchronized child's
 * with its parent's next commit (sb_wl_server_surface_set_parent()). Shown
 * above everything, at its offset from the parent, while the parent is
 * mapped (the stacking requests are checked, not followed); the parent's
 * side is subsurfaces_follow().
 */
static void
subsurface_applied(struct wlc_surface *surf, bool has_buffer)
{
	struct subsurface *sub = surf->role_data;

	if (!sub || !has_buffer || !sub->parent->mapped) {
		wlc_surface_unmap(surf);
		return;
	}
	surf->x = sub->parent->x + sub->x;
	surf->y = sub->parent->y + sub->y;
	wlc_surface_map(surf);
}

/* Tell the helper (if the compositor still has one) how commits of surf go. */
static void
subsurface_tell_helper(struct subsurface *sub, bool linked)
{
	struct sb_wl_server *helper = sub->surface->comp->helper;

	if (helper && !sub->surface->comp->opt.subsurfaces_unsynced)
		sb_wl_server_surface_set_parent(helper, sub->surface->resource,
						linked ? sub->parent->resource : NULL, sub->sync);
}

static void
subsurface_set_position(struct wl_client *client, struct wl_resource *resource, int32_t x,
			int32_t y)
{
	struct subsurface *sub = wl_resource_get_user_data(resource);

	/* "The new sub-surface position is applied when the parent surface's state is applied" */
	if (sub) {
		sub->pending_x = x;
		sub->pending_y = y;
	}
}

/*
 * "A sub-surface becomes mapped, when a non-NULL wl_buffer is applied and
 * the parent surface is mapped", and it is hidden while the parent is not:
 * parent's children follow it each time it is mapped, unmapped or moved,
 * and take their set_position when its state is applied (`applied`). The
 * map and unmap of a child come back here for its own children.
 */
static void
subsurfaces_follow(struct wlc_surface *parent, bool applied)
{
	struct wlc_surface *s;

	wl_list_for_each(s, &parent->comp->all_surfaces, all_link) {
		struct subsurface *sub = s->role == &subsurface_role ? s->role_data : NULL;

		if (!sub || sub->parent != parent)
			continue;
		if (applied) {
			sub->x = sub->pending_x;
			sub->y = sub->pending_y;
		}
		if (!parent->mapped || s->width == 0) {
			wlc_surface_unmap(s);
			continue;
		}
		s->x = parent->x + sub->x;
		s->y = parent->y + sub->y;
		if (s->mapped)
			subsurfaces_follow(s, false);
		else
			wlc_surface_map(s);
	}
}

/* comp->surface_placed: a surface was mapped, unmapped or applied. */
static void
on_surface_placed(struct wl_listener *l, void *data)
{
	const struct wlc_surface_placed *p = data;

	(void)l;
	subsurfaces_follow(p->surface, p->applied);
}

/* "The sub-surface must be a sibling or the parent": checked, the order is not used. */
static void
subsurface_place(struct wl_client *client, struct wl_resource *resource,
		 struct wl_resource *sibling_res)
{
	struct subsurface *sub = wl_resource_get_user_data(resource);
	struct wlc_surface *sibling = wlc_surface_from_resource(sibling_res);
	struct subsurface *other;

	if (!sub || !sibling || sibling == sub->parent)
		return;
	other = sibling->role == &subsurface_role ? sibling->role_data : NULL;
	if (!other || other->parent != sub->parent)
		wl_resource_post_error(resource, WL_SUBSURFACE_ERROR_BAD_SURFACE,
				       "wl_surface@%u is not a sibling or the parent",
				       wl_resource_get_id(sibling_res));
}

/* set_sync and set_desync: the mode, and the helper told (an inert sub-surface: nothing). */
static void
subsurface_set_mode(struct wl_resource *resource, bool sync)
{
	struct subsurface *sub = wl_resource_get_user_data(resource);

	if (sub) {
		sub->sync = sync;
		subsurface_tell_helper(sub, true);
	}
}

static void
subsurface_set_sync(struct wl_client *client, struct wl_resource *resource)
{
	subsurface_set_mode(resource, true);
}

static void
subsurface_set_desync(struct wl_client *client, struct wl_resource *resource)
{
	subsurface_set_mode(resource, false);
}

static const struct wl_subsurface_interface subsurface_impl = {
	.destroy = wlc_destroy_request,
	.set_position = subsurface_set_position,
	.place_above = subsurface_place,
	.place_below = subsurface_place,
	.set_sync = subsurface_set_sync,
	.set_desync = subsurface_set_desync,
};

/* The sub-surface object goes inert when either surface goes (the spec's "inert"). */
static void
subsurface_unlink(struct subsurface *sub)
{
	/* "The wl_surface is unmapped immediately"; what it cached is dropped. */
	subsurface_tell_helper(sub, false);
	wlc_surface_unmap(sub->surface);
	wl_list_remove(&sub->surface_destroy.link);
	wl_list_remove(&sub->parent_destroy.link);
	if (sub->surface->role_data == sub)
		sub->surface->role_data = NULL;
	wl_resource_set_user_data(sub->resource, NULL);
	free(sub);
}

static void
subsurface_surface_destroyed(struct wl_listener *l, void *data)
{
	struct subsurface *sub = wl_container_of(l, sub, surface_destroy);

	subsurface_unlink(sub);
}

static void
subsurface_parent_destroyed(struct wl_listener *l, void *data)
{
	struct subsurface *sub = wl_container_of(l, sub, parent_destroy);

	subsurface_unlink(sub);
}

static void
subsurface_res_destroy(struct wl_resource *resource)
{
	struct subsurface *sub = wl_resource_get_user_data(resource);

	if (sub)
		subsurface_unlink(sub);
}

/* Is `ancestor` the surface itself or above it in the sub-surface tree? */
static bool
is_ancestor(struct wlc_surface *ancestor, struct wlc_surface *surf)
{
	for (int depth = 0; surf && depth < 64; depth++) {
		if (surf == ancestor)
			return true;
		struct subsurface *sub = surf->role == &subsurface_role ? surf->role_data : NULL;
		surf = sub ? sub->parent : NULL;
	}
	return false;
}

static void
subcompositor_get_subsurface(struct wl_client *client, struct wl_resource *resource, uint32_t id,
			     struct wl_resource *surface_res, struct wl_resource *parent_res)
{
	struct wlc_surface *surf = wlc_surface_from_resource(surface_res);
	struct wlc_surface *parent = wlc_surface_from_resource(parent_res);
	struct subsurface *sub;

	if (surf->role == &subsurface_role && surf->role_data) {
		wl_resource_post_error(resource, WL_SUBCOMPOSITOR_ERROR_BAD_SURFACE,
				       "wl_surface@%u is already a sub-surface",
				       wl_resource_get_id(surface_res));
		return;
	}
	/* "the parent must not be the surface itself or one of its descendants" */
	if (is_ancestor(surf, parent)) {
		wl_resource_post_error(resource, WL_SUBCOMPOSITOR_ERROR_BAD_PARENT,
				       "wl_surface@%u cannot be a parent of wl_surface@%u",
				       wl_resource_get_id(parent_res),
				       wl_resource_get_id(surface_res));
		return;
	}
	if (!wlc_surface_set_role(surf, &subsurface_role, NULL, resource,
				  WL_SUBCOMPOSITOR_ERROR_BAD_SURFACE))
		return;
	sub = wlc_client_zalloc(client, sizeof(*sub));
	if (!sub)
		return;
	sub->surface = surf;
	sub->parent = parent;
	sub->sync = true; /* "a sub-surface is initially in the synchronized mode" */
	sub->resource = wlc_resource_new(client, &wl_subsurface_interface,
					 wl_resource_get_version(resource), id, &subsurface_impl,
					 sub, subsurface_res_destroy);
	if (!sub->resource) {
		free(sub);
		return;
	}
	sub->surface_destroy.notify = subsurface_surface_destroyed;
	wl_signal_add(&surf->destroy_signal, &sub->surface_destroy);
	sub->parent_destroy.notify = subsurface_parent_destroyed;
	wl_signal_add(&parent->destroy_signal, &sub->parent_destroy);
	surf->role_data = sub;
	subsurface_tell_helper(sub, true);
}

static const struct wl_subcompositor_interface subcompositor_impl = {
	.destroy = wlc_destroy_request,
	.get_subsurface = subcompositor_get_subsurface,
};

static void
subcompositor_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	wlc_resource_new(client, &wl_subcompositor_interface, (int)version, id, &subcompositor_impl,
			 data, NULL);
}

/* ---- wp_presentation ------------------------------------------------------------- */

static void
presentation_feedback(struct wl_client *client, struct wl_resource *resource,
		      struct wl_resource *surface, uint32_t callback)
{
	struct wlc_surface *surf = wlc_surface_from_resource(surface);

	/* last: presented in the order asked for */
	wlc_resource_new_linked(client, &wp_presentation_feedback_interface, 1, callback, NULL,
				NULL, surf->pending.feedbacks.prev);
}

static const struct wp_presentation_interface presentation_impl = {
	.destroy = wlc_destroy_request,
	.feedback = presentation_feedback,
};

static void
presentation_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	struct wl_resource *res = wlc_resource_new(client, &wp_presentation_interface, (int)version,
						   id, &presentation_impl, data, NULL);

	if (res)
		wp_presentation_send_clock_id(res, CLOCK_MONOTONIC);
}

/* ---- life cycle ---------------------------------------------------------------- */

struct wlc_globals *
wlc_globals_create(struct wlc_comp *comp)
{
	struct wlc_globals *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->comp = comp;
	g->subcompositor = wl_global_create(comp->display, &wl_subcompositor_interface,
					    SUBCOMPOSITOR_VERSION, g, subcompositor_bind);
	g->presentation = wl_global_create(comp->display, &wp_presentation_interface,
					   PRESENTATION_VERSION, g, presentation_bind);
	if (!g->subcompositor || !g->presentation) {
		wlc_globals_destroy(g);
		return NULL;
	}
	g->surface_placed.notify = on_surface_placed;
	wl_signal_add(&comp->surface_placed, &g->surface_placed);
	return g;
}

void
wlc_globals_destroy(struct wlc_globals *g)
{
	if (!g)
		return;
	if (g->surface_placed.notify)
		wl_list_remove(&g->surface_placed.link);
	if (g->subcompositor)
		wl_global_destroy(g->subcompositor);
	if (g->presentation)
		wl_global_destroy(g->presentation);
	free(g);
}
