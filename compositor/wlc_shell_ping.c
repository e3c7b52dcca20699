/* SPDX-License-Identifier: MIT */
/*
 * xdg_wm_base.ping for the example compositor's xdg-shell
 * (wlc_shell_internal.h; wlc_shell.c says when a client is pinged and what
 * an unanswered ping does): the timer that sends a ping and judges it, and
 * the pong, with the counters wlc_comp_get_ping_stats() reports.
 */
#include <poll.h>
#include <stdio.h>
#include <sys/types.h>

#include <wayland-server-core.h>

#include "clock.h" /* now_ns() */
#include "wlc_shell_internal.h"
#include "xdg-shell-server-protocol.h"

#define DEFAULT_PING_TIMEOUT_MS 5000
/* How often an expired ping timer looks again for a pong the client already sent. */
#define PING_RECHECKS 50

static int
ping_timeout_ms(const struct wlc_shell *shell)
{
	return shell->comp->opt.ping_timeout_ms > 0 ? shell->comp->opt.ping_timeout_ms
						    : DEFAULT_PING_TIMEOUT_MS;
}

static int
client_pid(const struct wm_base *b)
{
	pid_t pid = 0;

	wl_client_get_credentials(wl_resource_get_client(b->resource), &pid, NULL, NULL);
	return (int)pid;
}

void
shell_ping_arm(struct wm_base *b)
{
	int ms = ping_timeout_ms(b->shell) / 2;

	wl_event_source_timer_update(b->ping_timer, ms > 0 ? ms : 1);
}

static void
base_ping(struct wm_base *b)
{
	b->ping_serial = wl_display_next_serial(b->shell->comp->display);
	b->ping_pending = true;
	b->ping_rechecks = 0;
	b->ping_sent_ns = now_ns();
	b->shell->pings.sent++;
	xdg_wm_base_send_ping(b->resource, b->ping_serial);
	/*
	 * The client's time starts when the ping is on its socket: send it now,
	 * not at the loop's next flush. A source dispatched after this timer in
	 * the same loop iteration (a repaint's first draw takes seconds under
	 * llvmpipe in the TCG guest) would otherwise hold the ping back while
	 * its deadline ran, and a client that answered at once could miss it.
	 */
	wl_client_flush(wl_resource_get_client(b->resource));
	wl_event_source_timer_update(b->ping_timer, ping_timeout_ms(b->shell));
}

int
shell_ping_timer(void *data)
{
	struct wm_base *b = data;

	if (b->unresponsive)
		return 0;
	if (b->ping_pending) {
		struct pollfd pfd = { .fd = wl_client_get_fd(wl_resource_get_client(b->resource)),
				      .events = POLLIN };

		/*
		 * The timer and the client's socket can be ready in the same loop
		 * iteration, the timer first: after this compositor was itself
		 * held up (a busy host), the pong may be waiting unread. Read it
		 * first: look again in 1 ms while the client has sent something,
		 * at most PING_RECHECKS times (a client that keeps talking
		 * without answering is not kept forever).
		 */
		if (b->ping_rechecks < PING_RECHECKS && poll(&pfd, 1, 0) == 1 &&
		    (pfd.revents & POLLIN)) {
			b->ping_rechecks++;
			wl_event_source_timer_update(b->ping_timer, 1);
			return 0;
		}
		if (b->shell->comp->opt.ping_disconnect) {
			b->unresponsive = true;
			wl_resource_post_error(b->resource, XDG_WM_BASE_ERROR_UNRESPONSIVE,
					       "ping %u unanswered for %d ms", b->ping_serial,
					       ping_timeout_ms(b->shell));
			return 0;
		}
		/* Marked once; the pong (shell_ping_pong()) clears it and pings on. */
		if (!b->not_responding) {
			b->not_responding = true;
			b->shell->pings.not_responding++;
			fprintf(stderr,
				"compositor: client %d not responding: ping %u unanswered "
				"for %d ms\n",
				client_pid(b), b->ping_serial, ping_timeout_ms(b->shell));
		}
		return 0;
	}
	if (!wl_list_empty(&b->surfaces))
		base_ping(b);
	return 0;
}

void
shell_ping_pong(struct wl_client *client, struct wl_resource *res, uint32_t serial)
{
	struct wm_base *b = wl_resource_get_user_data(res);

	/* A pong for another serial (an old ping, or none): not an answer, not an error. */
	if (!b->ping_pending || serial != b->ping_serial)
		return;
	b->ping_pending = false;
	int64_t waited_ms = (now_ns() - b->ping_sent_ns) / 1000000;
	b->shell->pings.answered++;
	if (waited_ms > b->shell->pings.longest_wait_ms)
		b->shell->pings.longest_wait_ms = waited_ms;
	if (b->not_responding) {
		b->not_responding = false;
		fprintf(stderr,
			"compositor: client %d responding again: ping %u answered after %lld ms\n",
			client_pid(b), serial, (long long)waited_ms);
	}
	if (wl_list_empty(&b->surfaces))
		wl_event_source_timer_update(b->ping_timer, 0);
	else
		shell_ping_arm(b);
}

void
wlc_comp_get_ping_stats(const struct wlc_comp *comp, struct wlc_ping_stats *out)
{
	*out = comp->shell ? comp->shell->pings : (struct wlc_ping_stats){ 0 };
}
