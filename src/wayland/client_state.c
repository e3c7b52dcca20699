/* SPDX-License-Identifier: MIT */
/*
 * Below every protocol object: what the helper keeps per wl_client (the
 * per-client bound on waiting commits, and the quiescing that keeps a cut-off
 * client's error deliverable), the shared "destroy" request, and the helper
 * behind a manager resource.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "server_internal.h"

/* ---- per-client accounting ------------------------------------------------- */

void
sb_wl_client_state_unref(struct client_state *cs)
{
	if (cs && --cs->refs == 0)
		free(cs);
}

/*
 * Keep the client's last events deliverable: stop it sending, then drop
 * what it sent that nobody will read.
 *
 * libwayland-server emits the client's destroy signal, then flushes the
 * client's events (a protocol error we posted among them), then closes the
 * socket. If requests the client sent in the meantime are still unread in
 * the socket then, the kernel marks the client's end ECONNRESET (af_unix
 * close with a non-empty receive queue), and libwayland-client 1.23 reads
 * until EAGAIN: its read after the error event's bytes fails ECONNRESET, and
 * it drops the bytes it already has. The client sees "Connection reset by
 * peer" instead of our error. shutdown(SHUT_RD) makes the client's further
 * sends fail with EPIPE (which libwayland-client tolerates) and lets nothing
 * more into our receive queue; draining it leaves the close nothing to reset.
 * Fds in the drained messages are released by the kernel (no control buffer).
 * This changes the socket's state, which wl_client_get_fd() warns about; the
 * connection is being destroyed, and only the flush and the close follow.
 */
static void
client_quiesce(struct wl_client *client)
{
	int fd = wl_client_get_fd(client);
	char sink[4096];
	ssize_t n;

	if (shutdown(fd, SHUT_RD) < 0)
		return; /* not connected any more: nothing can be reset */
	do {
		n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
	} while (n > 0 || (n < 0 && errno == EINTR));
}

static void
client_destroy_notify(struct wl_listener *listener, void *data)
{
	struct client_state *cs = wl_container_of(listener, cs, client_destroy);

	client_quiesce(data);
	cs->client = NULL;
	wl_list_remove(&cs->client_destroy.link);
	sb_wl_client_state_unref(cs);
}

/* The client's state, created on first use; returns a new reference or NULL. */
struct client_state *
sb_wl_client_state_get(struct wl_client *client)
{
	struct wl_listener *l = wl_client_get_destroy_listener(client, client_destroy_notify);
	struct client_state *cs;

	if (l) {
		cs = wl_container_of(l, cs, client_destroy);
	} else {
		cs = calloc(1, sizeof(*cs));
		if (!cs)
			return NULL;
		cs->refs = 1; /* the listener's */
		cs->client = client;
		cs->client_destroy.notify = client_destroy_notify;
		wl_client_add_destroy_listener(client, &cs->client_destroy);
	}
	cs->refs++;
	return cs;
}

void
sb_wl_resource_destroy_request(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

struct sb_wl_server *
sb_wl_manager_get_server(struct wl_resource *manager)
{
	struct sync_global *g = wl_resource_get_user_data(manager);

	return g ? g->server : NULL;
}
