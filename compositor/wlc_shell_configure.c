/* SPDX-License-Identifier: MIT */
/*
 * xdg-shell for the example compositor (wlc_shell_internal.h): an
 * xdg_surface's configure sequence and its reset, what wlc_shell.c and the
 * role objects (wlc_shell_toplevel.c, wlc_shell_popup.c) share. It calls
 * none of them: the role's own events are sent by the role's file, between
 * shell_configure_begin() and shell_configure_end().
 */
#include <stdlib.h>

#include <wayland-server-core.h>

#include "wlc_shell_internal.h"
#include "xdg-shell-server-protocol.h"

/* Configures sent and not acked, per xdg_surface: a client that never acks
 * but keeps asking for states would otherwise grow the list without bound.
 * The oldest go first (a client acks the latest it has seen). */
#define MAX_CONFIGURES 64

void
shell_configure_clear(struct xdg_surface *xs)
{
	struct configure *c, *tmp;

	wl_list_for_each_safe(c, tmp, &xs->configures, link) {
		wl_list_remove(&c->link);
		free(c);
	}
	xs->n_configures = 0;
}

/*
 * A configure sequence: the role's events, then xdg_surface.configure with a
 * new serial, remembered until acked. Only after the initial commit ("The
 * compositor will reply with ... an xdg_surface.configure event").
 */
struct configure *
shell_configure_begin(struct xdg_surface *xs)
{
	struct configure *c;

	if (!xs->initial_committed || (!xs->toplevel && !xs->popup))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		wl_client_post_no_memory(wl_resource_get_client(xs->resource));
		return NULL;
	}
	c->serial = wl_display_next_serial(xs->shell->comp->display);
	return c;
}

void
shell_configure_end(struct xdg_surface *xs, struct configure *c)
{
	if (xs->n_configures == MAX_CONFIGURES) {
		struct configure *old = wl_container_of(xs->configures.next, old, link);
		wl_list_remove(&old->link);
		free(old);
		xs->n_configures--;
	}
	wl_list_insert(xs->configures.prev, &c->link);
	xs->n_configures++;
	xdg_surface_send_configure(xs->resource, c->serial);
}

/*
 * Back to the state right after get_toplevel / get_popup (a NULL buffer, or
 * the role object went): "the client must perform the initial commit again
 * before attaching a buffer".
 */
void
shell_configure_reset(struct xdg_surface *xs)
{
	if (xs->surf)
		wlc_surface_unmap(xs->surf);
	xs->initial_committed = false;
	xs->configured = false;
	xs->states = xs->acked_states = 0;
	shell_configure_clear(xs);
}

void
shell_post_base_error(struct xdg_surface *xs, uint32_t code, const char *msg)
{
	wl_resource_post_error(xs->base ? xs->base->resource : xs->resource, code, "%s", msg);
}
