/* SPDX-License-Identifier: MIT */
/*
 * The example compositor's wl_data_device_manager, version 3
 * (wlc_internal.h): the clipboard of its one seat. Drag-and-drop needs a
 * pointer that moves, which a headless compositor does not have.
 *
 *  - selection: set_selection makes a source the seat's selection (the one
 *    it replaces is cancelled). The client with the keyboard focus
 *    (wlc_seat.c) gets it as a fresh wl_data_offer on each of its
 *    wl_data_devices when it is set, when the client takes the focus and
 *    when it gets a data device while focused; receive on that offer is the
 *    source's send. A request whose serial is older than the selection's is
 *    refused (its source cancelled), as in weston.
 *  - drag-and-drop: start_drag is accepted and the drag ends at once, its
 *    source cancelled ("The compositor cancelled the drag-and-drop
 *    operation"); the icon gets its role.
 *
 * An offer goes inert (receive closes the fd, nothing more) when its source
 * goes or stops being the selection; every offer is a selection offer, so
 * the drag-and-drop requests on it are the errors the XML names.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include "wlc_internal.h"

#define DATA_DEVICE_MANAGER_VERSION 3

#define ALL_DND_ACTIONS                                                                  \
	(WL_DATA_DEVICE_MANAGER_DND_ACTION_COPY | WL_DATA_DEVICE_MANAGER_DND_ACTION_MOVE | \
	 WL_DATA_DEVICE_MANAGER_DND_ACTION_ASK)

struct wlc_data_device {
	struct wlc_comp *comp;
	struct wl_global *global;
	struct wl_list devices;          /* wl_data_device resource links */
	struct wl_list sources;          /* data_source.link */
	struct data_source *selection;   /* NULL: none */
	uint32_t selection_serial;
	struct wl_client *focus;         /* the client the selection goes to (the seat's focus) */
};

struct data_source {
	struct wlc_data_device *dd;     /* NULL once it went */
	struct wl_list link;             /* dd->sources */
	struct wl_resource *resource;
	struct wl_array mime_types;      /* char *, strdup'd */
	struct wl_list offers;           /* data_offer.link: offers of it as the selection */
	bool actions_set;                /* set_actions: for drag-and-drop only */
	bool used;                       /* given to set_selection or start_drag once */
};

struct data_offer {
	struct wl_resource *resource;
	struct data_source *source;      /* NULL: inert */
	struct wl_list link;             /* source->offers, or empty */
};

/*
 * "The dnd_actions argument must contain only values expressed in the
 * wl_data_device_manager.dnd_actions enum" (wl_data_offer and
 * wl_data_source set_actions): false, after posting `code` (the interface's
 * invalid_action_mask) on res, when it holds others.
 */
static bool
dnd_actions_valid(struct wl_resource *res, uint32_t code, uint32_t dnd_actions)
{
	if (dnd_actions & ~ALL_DND_ACTIONS) {
		wl_resource_post_error(res, code, "invalid actions 0x%x", dnd_actions);
		return false;
	}
	return true;
}

/* ---- wl_data_offer ---------------------------------------------------------- */

static void
offer_unlink(struct data_offer *offer)
{
	wl_list_remove(&offer->link);
	wl_list_init(&offer->link);
	offer->source = NULL;
}

/* Drag-and-drop feedback: a selection offer has none to give. */
static void
offer_accept(struct wl_client *client, struct wl_resource *resource, uint32_t serial,
	     const char *mime_type)
{
}

/* fd: ours; the source's client gets a dup (libwayland's), ours is closed. */
static void
offer_receive(struct wl_client *client, struct wl_resource *resource, const char *mime_type,
	      int32_t fd)
{
	struct data_offer *offer = wl_resource_get_user_data(resource);

	if (offer->source)
		wl_data_source_send_send(offer->source->resource, mime_type, fd);
	close(fd);
}

/*
 * "If wl_data_offer.finish request is received for a non drag and drop
 * operation, the invalid_finish protocol error is raised."
 */
static void
offer_finish(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_post_error(resource, WL_DATA_OFFER_ERROR_INVALID_FINISH,
			       "finish on a selection offer (not drag-and-drop)");
}

static void
offer_set_actions(struct wl_client *client, struct wl_resource *resource, uint32_t dnd_actions,
		  uint32_t preferred_action)
{
	if (!dnd_actions_valid(resource, WL_DATA_OFFER_ERROR_INVALID_ACTION_MASK, dnd_actions))
		return;
	/* "... and the preferred_action argument must only contain one of those
	 * values set" */
	if (preferred_action & (preferred_action - 1) || preferred_action & ~ALL_DND_ACTIONS) {
		wl_resource_post_error(resource, WL_DATA_OFFER_ERROR_INVALID_ACTION,
				       "invalid preferred action 0x%x", preferred_action);
		return;
	}
	/* "This request can only be made on drag-and-drop offers, a protocol
	 * error will be raised otherwise." */
	wl_resource_post_error(resource, WL_DATA_OFFER_ERROR_INVALID_OFFER,
			       "set_actions on a selection offer (not drag-and-drop)");
}

static const struct wl_data_offer_interface offer_impl = {
	.accept = offer_accept,
	.receive = offer_receive,
	.destroy = wlc_destroy_request,
	.finish = offer_finish,
	.set_actions = offer_set_actions,
};

static void
offer_res_destroy(struct wl_resource *resource)
{
	struct data_offer *offer = wl_resource_get_user_data(resource);

	wl_list_remove(&offer->link);
	free(offer);
}

/*
 * The selection as a new offer on `device` (data_offer, then its mime types;
 * the caller sends selection). NULL once the client was told it is out of
 * memory.
 */
static struct wl_resource *
offer_create(struct data_source *source, struct wl_resource *device)
{
	struct wl_client *client = wl_resource_get_client(device);
	struct data_offer *offer = wlc_client_zalloc(client, sizeof(*offer));
	char **mime;

	if (!offer)
		return NULL;
	/* id 0: a server-created object, introduced by data_offer */
	offer->resource = wlc_resource_new(client, &wl_data_offer_interface,
					   wl_resource_get_version(device), 0, &offer_impl, offer,
					   offer_res_destroy);
	if (!offer->resource) {
		free(offer);
		return NULL;
	}
	offer->source = source;
	wl_list_insert(&source->offers, &offer->link);
	wl_data_device_send_data_offer(device, offer->resource);
	wl_array_for_each(mime, &source->mime_types)
		wl_data_offer_send_offer(offer->resource, *mime);
	/* no source_actions / action: those describe a drag-and-drop, and a
	 * selection source cannot have actions (set_actions) */
	return offer->resource;
}

/* ---- the selection ------------------------------------------------------------ */

/*
 * "The data_device.data_offer and the data_offer.offer events are sent out
 * immediately before this event to introduce the data offer object."
 */
static void
send_selection_to(struct wl_resource *device, void *data)
{
	struct wlc_data_device *dd = data;
	struct wl_resource *offer = NULL;

	if (dd->selection) {
		offer = offer_create(dd->selection, device);
		if (!offer)
			return;
	}
	wl_data_device_send_selection(device, offer);
}

static void
send_selection(struct wlc_data_device *dd)
{
	if (dd->focus)
		wlc_resource_list_send(&dd->devices, dd->focus, send_selection_to, dd);
}

/* The source is no longer the selection (or goes): its offers go inert. */
static void
source_drop_offers(struct data_source *source)
{
	struct data_offer *offer, *tmp;

	wl_list_for_each_safe(offer, tmp, &source->offers, link)
		offer_unlink(offer);
}

/* "This data source is no longer valid" */
static void
source_cancel(struct data_source *source)
{
	source_drop_offers(source);
	wl_data_source_send_cancelled(source->resource);
}

/* source (NULL: clear) becomes the selection; the one it replaces is cancelled. */
static void
selection_set(struct wlc_data_device *dd, struct data_source *source, uint32_t serial)
{
	if (dd->selection)
		source_cancel(dd->selection);
	dd->selection = source;
	dd->selection_serial = serial;
	send_selection(dd);
}

void
wlc_data_device_focus_changed(struct wlc_data_device *dd, struct wl_client *client)
{
	/* "Switching surface with keyboard focus within the same client doesn't
	 * mean a new selection will be sent." */
	if (!dd || client == dd->focus)
		return;
	dd->focus = client;
	send_selection(dd);
}

/* ---- wl_data_source --------------------------------------------------------- */

static void
source_offer(struct wl_client *client, struct wl_resource *resource, const char *mime_type)
{
	struct data_source *source = wl_resource_get_user_data(resource);
	char **slot = wl_array_add(&source->mime_types, sizeof(*slot));

	if (!slot) {
		wl_client_post_no_memory(client);
		return;
	}
	*slot = strdup(mime_type);
	if (!*slot) {
		source->mime_types.size -= sizeof(*slot);
		wl_client_post_no_memory(client);
	}
}

static void
source_set_actions(struct wl_client *client, struct wl_resource *resource, uint32_t dnd_actions)
{
	struct data_source *source = wl_resource_get_user_data(resource);

	if (!dnd_actions_valid(resource, WL_DATA_SOURCE_ERROR_INVALID_ACTION_MASK, dnd_actions))
		return;
	/* "This request must be made once only, and can only be made on sources
	 * used in drag-and-drop, so it must be performed before
	 * wl_data_device.start_drag." */
	if (source->actions_set || source->used) {
		wl_resource_post_error(resource, WL_DATA_SOURCE_ERROR_INVALID_ACTION_MASK,
				       source->used ? "set_actions after the source was used" :
						      "set_actions more than once");
		return;
	}
	source->actions_set = true;
}

static const struct wl_data_source_interface source_impl = {
	.offer = source_offer,
	.destroy = wlc_destroy_request,
	.set_actions = source_set_actions,
};

static void
source_res_destroy(struct wl_resource *resource)
{
	struct data_source *source = wl_resource_get_user_data(resource);
	char **mime;

	source_drop_offers(source);
	/* the selection goes with its source: selection(NULL) to the focused client */
	if (source->dd && source->dd->selection == source) {
		source->dd->selection = NULL;
		send_selection(source->dd);
	}
	wl_list_remove(&source->link);
	wl_array_for_each(mime, &source->mime_types)
		free(*mime);
	wl_array_release(&source->mime_types);
	free(source);
}

/*
 * A source given to set_selection or start_drag (NULL: none): false, after
 * the error, when it cannot be. "The given source may not be used in any
 * further set_selection or start_drag requests. Attempting to reuse a
 * previously-used source may send a used_source error."
 */
static bool
source_use(struct wl_resource *device, struct data_source *source)
{
	if (!source)
		return true;
	if (source->used) {
		wl_resource_post_error(device, WL_DATA_DEVICE_ERROR_USED_SOURCE,
				       "wl_data_source@%u was used already",
				       wl_resource_get_id(source->resource));
		return false;
	}
	source->used = true;
	return true;
}

/* ---- wl_data_device --------------------------------------------------------- */

static const struct wlc_role dnd_icon_role = { .name = "wl_data_device icon" };

static void
device_start_drag(struct wl_client *client, struct wl_resource *resource,
		  struct wl_resource *source_res, struct wl_resource *origin,
		  struct wl_resource *icon, uint32_t serial)
{
	struct data_source *source = source_res ? wl_resource_get_user_data(source_res) : NULL;

	/* "The icon surface is given the role of a drag-and-drop icon. If the
	 * icon surface already has another role, it raises a protocol error." */
	if (icon && !wlc_surface_set_role(wlc_surface_from_resource(icon), &dnd_icon_role, NULL,
					  resource, WL_DATA_DEVICE_ERROR_ROLE))
		return;
	if (!source_use(resource, source))
		return;
	/* No pointer, no drop: the drag ends as it starts. "For objects of
	 * version 2 or older, wl_data_source.cancelled will only be emitted if
	 * the data source was replaced by another data source." */
	if (source && wl_resource_get_version(source->resource) >= 3)
		source_cancel(source);
}

static void
device_set_selection(struct wl_client *client, struct wl_resource *resource,
		     struct wl_resource *source_res, uint32_t serial)
{
	struct wlc_data_device *dd = wl_resource_get_user_data(resource);
	struct data_source *source = source_res ? wl_resource_get_user_data(source_res) : NULL;

	if (!dd)
		return;
	/* set_actions "can only be made on sources used in drag-and-drop" */
	if (source && source->actions_set) {
		wl_resource_post_error(source_res, WL_DATA_SOURCE_ERROR_INVALID_SOURCE,
				       "a drag-and-drop source (set_actions) cannot be "
				       "the selection");
		return;
	}
	if (!source_use(resource, source))
		return;
	/* the serial "of the event that triggered this request": one older than
	 * the selection's lost the race */
	if (dd->selection && (int32_t)(serial - dd->selection_serial) < 0) {
		if (source)
			source_cancel(source);
		return;
	}
	selection_set(dd, source, serial);
}

static const struct wl_data_device_interface device_impl = {
	.start_drag = device_start_drag,
	.set_selection = device_set_selection,
	.release = wlc_destroy_request,
};

/* ---- wl_data_device_manager --------------------------------------------------- */

static void
manager_create_data_source(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct data_source *source = wlc_client_zalloc(client, sizeof(*source));

	if (!source)
		return;
	source->dd = wl_resource_get_user_data(resource);
	wl_array_init(&source->mime_types);
	wl_list_init(&source->offers);
	source->resource = wlc_resource_new(client, &wl_data_source_interface,
					    wl_resource_get_version(resource), id, &source_impl,
					    source, source_res_destroy);
	if (!source->resource) {
		free(source);
		return;
	}
	wl_list_insert(&source->dd->sources, &source->link);
}

/* The seat: the compositor has one (wlc_seat.c), every wl_seat resource is it. */
static void
manager_get_data_device(struct wl_client *client, struct wl_resource *resource, uint32_t id,
			struct wl_resource *seat)
{
	struct wlc_data_device *dd = wl_resource_get_user_data(resource);
	struct wl_resource *device = wlc_resource_new_linked(client, &wl_data_device_interface,
							      wl_resource_get_version(resource), id,
							      &device_impl, dd, &dd->devices);

	/* a focused client's new device needs the selection it would have had */
	if (device && client == dd->focus)
		send_selection_to(device, dd);
}

static const struct wl_data_device_manager_interface manager_impl = {
	.create_data_source = manager_create_data_source,
	.get_data_device = manager_get_data_device,
};

static void
manager_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	wlc_resource_new(client, &wl_data_device_manager_interface, (int)version, id, &manager_impl,
			 data, NULL);
}

/* ---- life cycle ---------------------------------------------------------------- */

struct wlc_data_device *
wlc_data_device_create(struct wlc_comp *comp)
{
	struct wlc_data_device *dd = calloc(1, sizeof(*dd));

	if (!dd)
		return NULL;
	dd->comp = comp;
	wl_list_init(&dd->devices);
	wl_list_init(&dd->sources);
	dd->global = wl_global_create(comp->display, &wl_data_device_manager_interface,
				      DATA_DEVICE_MANAGER_VERSION, dd, manager_bind);
	if (!dd->global) {
		wlc_data_device_destroy(dd);
		return NULL;
	}
	return dd;
}

void
wlc_data_device_destroy(struct wlc_data_device *dd)
{
	struct data_source *source, *stmp;

	if (!dd)
		return;
	/* what outlives us until its client goes: unlinked, and inert */
	wlc_resource_list_orphan(&dd->devices);
	wl_list_for_each_safe(source, stmp, &dd->sources, link) {
		wl_list_remove(&source->link);
		wl_list_init(&source->link);
		source->dd = NULL;
	}
	if (dd->global)
		wl_global_destroy(dd->global);
	free(dd);
}
