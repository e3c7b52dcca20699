/* SPDX-License-Identifier: MIT */
/*
 * Commits: checked against the surface's protocol, queued in commit order
 * while their acquire has not signalled (only the queue head waits: one event
 * source per waiting surface), handed to the compositor in order, and
 * released when the compositor is done with the buffer.
 */
#include <errno.h>
#include <stdlib.h>

#include <syncbridge/sync_file.h>

#include "log.h"
#include "server_internal.h"
#include "sync_file_internal.h"
#include "trace.h"

/* ---- commits ------------------------------------------------------------------ */

static struct sb_wl_commit *
commit_create(struct sb_wl_server *server, struct sync_surface *owner, void *data)
{
	struct sb_wl_commit *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->server = server;
	c->owner = owner;
	c->data = data;
	sb_wl_acquire_init(&c->acquire);
	wl_list_init(&c->link);
	wl_list_insert(&server->commits, &c->server_link);
	return c;
}

/* Take a waiting commit off its surface's queue (and out of the counts). */
static void
queue_remove(struct sync_surface *ss, struct sb_wl_commit *c)
{
	wl_list_remove(&c->link);
	wl_list_init(&c->link);
	c->queued = false;
	ss->queued--;
	ss->client->queued--;
	ss->server->stats.commits_queued--;
}

/* The wl.commit marker: what became of a commit, and what it waits for. */
static void
trace_commit(const struct sb_wl_commit *c, const char *result)
{
	sb_trace("wl.commit surface=%u result=%s acquire_point=%llu %s",
		 wl_resource_get_id(c->owner->surface), result,
		 (unsigned long long)c->acquire.point.value, sb_trace_sync_file(c->acquire.fd).s);
}

/* Release the commit's buffer (fence_fd: borrowed, -1 = now) and free it. */
static void
commit_release_and_free(struct sb_wl_commit *c, int fence_fd)
{
	if (c->queued) /* a queued commit always has its surface and server */
		queue_remove(c->owner, c);
	sb_wl_buffer_release_send(c->server, &c->release, fence_fd);
	sb_wl_acquire_finish(&c->acquire);
	wl_list_remove(&c->link);
	if (c->server)
		wl_list_remove(&c->server_link);
	free(c);
}

/* ---- the queue ---------------------------------------------------------------- */

/* Move a ready commit from the queue to the held list and give it to the compositor. */
static void
queue_hand_over(struct sync_surface *ss, struct sb_wl_commit *c)
{
	struct sb_wl_server *server = ss->server;

	queue_remove(ss, c);
	wl_list_insert(ss->held.prev, &c->link);
	sb_trace("wl.commit_ready surface=%u", wl_resource_get_id(ss->surface));
	server->impl.commit_ready(c, c->data, server->data);
}

static int wait_fired(int fd, uint32_t mask, void *data);

static int
wait_start(struct sync_surface *ss, struct sb_wl_commit *c)
{
	return sb_wl_acquire_wait_start(ss->server, &c->acquire, &ss->wait, wait_fired, ss);
}

/*
 * The commit may be applied now: nothing to wait for, or it has signalled
 * (with SB_WL_SERVER_WAIT_MATERIALIZED: its fence exists).
 */
static bool
commit_ready_now(struct sb_wl_server *server, struct sb_wl_commit *c)
{
	if (server->flags & SB_WL_SERVER_NO_WAIT)
		return true;
	if (server->flags & SB_WL_SERVER_WAIT_MATERIALIZED)
		return sb_wl_acquire_is_materialized(&c->acquire);
	return sb_wl_acquire_is_signalled(server, &c->acquire);
}

/* Hand every ready commit at the head of the queue to the compositor, in order. */
static void
queue_advance(struct sync_surface *ss)
{
	while (!wl_list_empty(&ss->queue)) {
		struct sb_wl_commit *c = wl_container_of(ss->queue.next, c, link);

		if (!c->ready) {
			if (ss->wait.source)
				return;
			if (!commit_ready_now(ss->server, c)) {
				int ret = wait_start(ss, c);
				if (ret == 0)
					return;
				sb_log_errno(SB_LOG_ERROR, ret, "cannot wait for an acquire fence "
					     "(ours/kernel); disconnecting the client");
				wl_client_post_no_memory(wl_resource_get_client(ss->surface));
				return;
			}
			c->ready = true;
		}
		queue_hand_over(ss, c);
	}
}

static int
wait_fired(int fd, uint32_t mask, void *data)
{
	struct sync_surface *ss = data;
	struct sb_wl_commit *head;

	sb_trace("wl.acquire_signalled surface=%u", wl_resource_get_id(ss->surface));
	ss->server->stats.wakeups++;
	if (!wl_list_empty(&ss->queue)) {
		head = wl_container_of(ss->queue.next, head, link);
		sb_wl_acquire_wait_fired(ss->server, &head->acquire, &ss->wait);
		head->ready = true;
		/*
		 * Hand the head over before tearing the wait down: removing the
		 * source (epoll_ctl + close of its duplicate) is two system calls
		 * that need not stand between the signal and the compositor
		 * (bench-wake, docs/performance.md figure 3), and nothing else
		 * makes one before it: the acquire status is read only if the
		 * compositor asks (sb_wl_acquire_wait_fired()). A commit_ready()
		 * that re-enters the queue finds ss->wait.source still set and
		 * leaves the next wait to the queue_advance() below.
		 */
		queue_hand_over(ss, head);
	}
	sb_wl_acquire_wait_finish(ss->server, &ss->wait);
	queue_advance(ss);
	return 0;
}

void
sb_wl_commit_queue_discard(struct sync_surface *ss)
{
	struct sb_wl_server *server = ss->server;
	struct sb_wl_commit *c, *tmp;

	sb_wl_acquire_wait_finish(server, &ss->wait);
	wl_list_for_each_safe(c, tmp, &ss->queue, link) {
		queue_remove(ss, c);
		if (server->impl.commit_discard)
			server->impl.commit_discard(c->data, server->data);
		/* Never shown: the client may reuse the buffer at once. */
		commit_release_and_free(c, -1);
	}
}

/*
 * A client may not have more than the configured number of commits waiting,
 * per surface and in all (each may pin a fence). Returns false after posting
 * the error.
 */
static bool
check_limits(struct sync_surface *ss)
{
	struct sb_wl_server *server = ss->server;
	struct wl_client *client = wl_resource_get_client(ss->surface);

	if (ss->queued >= server->max_pending) {
		server->stats.clients_over_limit++;
		wl_client_post_implementation_error(client, "wl_surface@%u has %u commits waiting for "
						    "acquire fences that have not signalled (limit %u)",
						    wl_resource_get_id(ss->surface), ss->queued,
						    server->max_pending);
		return false;
	}
	if (ss->client->queued >= server->max_client_pending) {
		server->stats.clients_over_limit++;
		wl_client_post_implementation_error(client, "%u commits of this client wait for "
						    "acquire fences that have not signalled (limit %u "
						    "per client)", ss->client->queued,
						    server->max_client_pending);
		return false;
	}
	return true;
}

/* Queue a commit that must wait; the head starts waiting. Frees c on failure. */
static int
queue_commit(struct sync_surface *ss, struct sb_wl_commit *c)
{
	struct sb_wl_server *server = ss->server;
	int ret;

	if (!check_limits(ss)) {
		commit_release_and_free(c, -1);
		return -EPROTO;
	}
	wl_list_insert(ss->queue.prev, &c->link);
	c->queued = true;
	ss->queued++;
	ss->client->queued++;
	server->stats.commits_queued++;
	server->stats.commits_deferred++;
	trace_commit(c, "deferred");
	if (ss->queue.next != &c->link)
		return SB_WL_COMMIT_DEFERRED;
	/* The head: start waiting (it is not signalled, checked by the caller). */
	ret = wait_start(ss, c);
	if (ret < 0) {
		sb_log_errno(SB_LOG_ERROR, ret, "cannot wait for an acquire fence (ours/kernel)");
		commit_release_and_free(c, -1);
		wl_resource_post_no_memory(ss->surface);
		return -ENOMEM;
	}
	return SB_WL_COMMIT_DEFERRED;
}

/*
 * Queue or hand out a commit of ss (the surface's pending acquire / release,
 * or `implicit`, a snapshot of the buffer's fences, which moves in). Returns
 * SB_WL_COMMIT_APPLY (*out set when the helper keeps the commit),
 * SB_WL_COMMIT_DEFERRED, or -ENOMEM (nothing queued, implicit finished).
 */
/* Which protocol set what a commit carries (not the sync object's: it may be gone). */
static enum sb_wl_sync_protocol
carried_protocol(const struct acquire *a, const struct buffer_release *r)
{
	if (a->point.timeline || r->point.timeline)
		return SB_WL_SYNC_DRM_SYNCOBJ;
	if (a->fd >= 0 || r->res)
		return SB_WL_SYNC_EXPLICIT_V1;
	return SB_WL_SYNC_IMPLICIT;
}

int
sb_wl_commit_queue_submit(struct sb_wl_server *server, struct sync_surface *ss,
			  struct acquire *implicit, bool buffer, void *commit_data,
			  struct sb_wl_commit **out)
{
	/*
	 * A release goes with a commit that attaches a buffer. With the sync
	 * object alive check_commit() made that an error; a v1 release object
	 * whose sync object is gone waits for the next such commit.
	 */
	struct buffer_release none = { 0 }, *release = buffer ? &ss->release : &none;
	struct sb_wl_commit *c;
	bool carries;

	carries = sb_wl_acquire_is_set(&ss->acquire) || sb_wl_buffer_release_is_set(release);
	if (!carries && !sb_wl_acquire_is_set(implicit) && wl_list_empty(&ss->queue))
		return SB_WL_COMMIT_APPLY;

	c = commit_create(server, ss, commit_data);
	if (!c) {
		sb_wl_acquire_finish(implicit);
		return -ENOMEM;
	}
	c->protocol = carried_protocol(&ss->acquire, release);
	/* An implicit snapshot is only taken when the client set no acquire. */
	sb_wl_acquire_move(&c->acquire, sb_wl_acquire_is_set(implicit) ? implicit : &ss->acquire);
	sb_wl_buffer_release_move(&c->release, release);

	if (!wl_list_empty(&ss->queue) || !commit_ready_now(server, c))
		return queue_commit(ss, c);
	c->ready = true;
	trace_commit(c, "apply");
	wl_list_insert(ss->held.prev, &c->link);
	*out = c;
	return SB_WL_COMMIT_APPLY;
}

/* ---- the compositor's side of a commit ------------------------------------------ */

enum sb_wl_sync_protocol
sb_wl_commit_get_protocol(const struct sb_wl_commit *commit)
{
	return commit ? commit->protocol : SB_WL_SYNC_IMPLICIT;
}

int
sb_wl_commit_get_acquire_status(const struct sb_wl_commit *commit, int *status)
{
	if (!status)
		return -EINVAL;
	*status = 0;
	if (!commit)
		return -EINVAL;
	/*
	 * The first call reads what the helper did not read when the wait
	 * fired (sb_wl_acquire_wait_fired()); the answer never changes, so the
	 * commit caches it — logically const, the caller sees the same value.
	 */
	*status = sb_wl_acquire_read_status(commit->server,
					    &((struct sb_wl_commit *)commit)->acquire);
	return 0;
}

struct wl_resource *
sb_wl_commit_get_surface(const struct sb_wl_commit *commit)
{
	return commit && commit->owner ? commit->owner->surface : NULL;
}

int
sb_wl_commit_export_acquire_fence(const struct sb_wl_commit *commit, int *out_fd)
{
	if (!out_fd)
		return -EINVAL;
	*out_fd = -1;
	if (!commit)
		return -EINVAL;
	return sb_wl_acquire_export(&commit->acquire, out_fd);
}

int
sb_wl_commit_release(struct sb_wl_commit *commit, int fence_fd)
{
	int ret;

	if (!commit)
		return 0;
	if (fence_fd != -1) {
		ret = sb_sync_file_check(fence_fd, NULL, NULL);
		if (ret)
			return ret;
	}
	sb_trace("wl.release surface=%u %s",
		 commit->owner ? wl_resource_get_id(commit->owner->surface) : 0,
		 sb_trace_sync_file(fence_fd).s);
	commit_release_and_free(commit, fence_fd);
	return 0;
}
