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

/* ---- the sub-surface tree, as the queue sees it (subsurface.c changes it) ---- */

/* Deeper than any client needs; the compositor refuses cycles (bad_parent). */
#define MAX_DEPTH 64

bool
sb_wl_subsurface_is_synchronized(const struct sync_surface *ss)
{
	for (int depth = 0; ss && ss->parent && depth < MAX_DEPTH; depth++) {
		if (ss->sync_mode)
			return true;
		ss = ss->parent;
	}
	return false;
}

static void
take_cached(struct sync_surface *from, struct wl_list *list)
{
	wl_list_insert_list(list->prev, &from->cached);
	wl_list_init(&from->cached);
}

/* Only the commits cached by ss's synchronized children. */
static void
gather_children(struct sync_surface *ss, struct wl_list *list)
{
	struct sync_surface *child;

	wl_list_for_each(child, &ss->children, child_link)
		if (sb_wl_subsurface_is_synchronized(child))
			take_cached(child, list);
}

/*
 * Move what applies with ss's next commit to the end of `list`, in order:
 * ss's own cached commits (from before a set_desync), then those of each
 * synchronized child. The commits keep their flags.
 */
static void
gather(struct sync_surface *ss, struct wl_list *list)
{
	take_cached(ss, list);
	gather_children(ss, list);
}

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
	wl_list_init(&c->riders);
	wl_list_insert(&server->commits, &c->server_link);
	return c;
}

/*
 * Waiting commits (queued, cached or riding) count toward their surface's
 * and client's limits: counted when they start waiting (queued or cached; a
 * cached commit stays counted while it rides), uncounted by commit_unwait().
 * A waiting commit always has its surface and server.
 */
static void
commit_count(struct sb_wl_commit *c)
{
	c->owner->queued++;
	c->owner->client->queued++;
	c->server->stats.commits_queued++;
}

static bool
commit_waits(const struct sb_wl_commit *c)
{
	return c->queued || c->cached || c->riding;
}

/* Take a waiting commit out of its list and out of the counts. */
static void
commit_unwait(struct sb_wl_commit *c)
{
	wl_list_remove(&c->link);
	wl_list_init(&c->link);
	if (c->riding)
		c->owner->riding--;
	c->queued = c->cached = c->riding = false;
	c->carrier = NULL;
	c->owner->queued--;
	c->owner->client->queued--;
	c->server->stats.commits_queued--;
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
	if (commit_waits(c))
		commit_unwait(c);
	sb_wl_buffer_release_send(c->server, &c->release, fence_fd);
	sb_wl_acquire_finish(&c->acquire);
	wl_list_remove(&c->link);
	if (c->server)
		wl_list_remove(&c->server_link);
	free(c);
}

/* ---- the queue ---------------------------------------------------------------- */

static int wait_fired(int fd, uint32_t mask, void *data);

static int
wait_start(struct sync_surface *ss, struct sb_wl_commit *w)
{
	int ret = sb_wl_acquire_wait_start(ss->server, &w->acquire, &ss->wait, wait_fired, ss);

	ss->waiting = ret == 0 ? w : NULL;
	return ret;
}

static void
wait_stop(struct sync_surface *ss)
{
	sb_wl_acquire_wait_finish(ss->server, &ss->wait);
	ss->waiting = NULL;
}

static void
idle_advance(void *data)
{
	struct sync_surface *ss = data;

	ss->idle = NULL;
	sb_wl_commit_queue_advance(ss);
}

/*
 * Advance ss's queue at the end of this dispatch: commit_ready never runs
 * inside the request that made a transaction ready (the header's promise).
 */
static void
schedule_advance(struct sync_surface *ss)
{
	if (ss->idle)
		return;
	ss->idle = wl_event_loop_add_idle(ss->server->loop, idle_advance, ss);
	if (!ss->idle) {
		sb_error("cannot schedule a ready transaction (no memory); "
			 "disconnecting its client, whose surface would wait forever");
		wl_client_post_no_memory(wl_resource_get_client(ss->surface));
	}
}

/*
 * Drop a commit that will never apply, and its riders: released at once
 * (never shown: the client may reuse the buffer). hook: tell the compositor
 * (commit_discard) — not for a commit refused as it is made, whose
 * commit_data the compositor frees itself on the negative return.
 */
static void
commit_drop(struct sb_wl_commit *c, bool hook)
{
	struct sb_wl_server *server = c->server;
	struct sb_wl_commit *r, *tmp;

	wl_list_for_each_safe(r, tmp, &c->riders, link)
		commit_drop(r, true);
	/* A transaction waiting for this rider's acquire waits for the next one. */
	if (c->riding && c->carrier->owner && c->carrier->owner->waiting == c) {
		wait_stop(c->carrier->owner);
		schedule_advance(c->carrier->owner);
	}
	if (hook && server && server->impl.commit_discard)
		server->impl.commit_discard(c->data, server->data);
	commit_release_and_free(c, -1);
}

void
sb_wl_commit_discard(struct sb_wl_commit *c)
{
	commit_drop(c, true);
}

/* Give a commit that no longer waits to the compositor. */
static void
hand_over_one(struct sb_wl_commit *c)
{
	struct sync_surface *owner = c->owner;
	struct sb_wl_server *server = owner->server;
	bool rider = c->riding;

	commit_unwait(c);
	wl_list_insert(owner->held.prev, &c->link);
	sb_trace("wl.commit_ready surface=%u", wl_resource_get_id(owner->surface));
	/* The rider's surface's own commits that waited behind it may go now. */
	if (rider && !owner->riding && !wl_list_empty(&owner->queue))
		schedule_advance(owner);
	server->impl.commit_ready(c, c->data, server->data);
}

/* A ready transaction: its riders (synchronized sub-surfaces), then the commit. */
static void
queue_hand_over(struct sb_wl_commit *c)
{
	struct sb_wl_commit *r;

	while (!wl_list_empty(&c->riders)) {
		r = wl_container_of(c->riders.next, r, link);
		hand_over_one(r);
	}
	hand_over_one(c);
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

/*
 * The first commit of c's transaction (its riders in order, then c) whose
 * acquire has not signalled, or NULL: the whole transaction may apply. Only
 * this one is waited for at a time; a signalled one is remembered (ready).
 */
static struct sb_wl_commit *
transaction_pending(struct sb_wl_server *server, struct sb_wl_commit *c)
{
	struct sb_wl_commit *r;

	wl_list_for_each(r, &c->riders, link) {
		if (!r->ready && !(r->ready = commit_ready_now(server, r)))
			return r;
	}
	if (!c->ready && !(c->ready = commit_ready_now(server, c)))
		return c;
	return NULL;
}

/* Hand every ready transaction at the head of the queue to the compositor, in order. */
void
sb_wl_commit_queue_advance(struct sync_surface *ss)
{
	while (!wl_list_empty(&ss->queue)) {
		struct sb_wl_commit *c = wl_container_of(ss->queue.next, c, link), *w;

		/* Its own earlier commits ride in an ancestor's transaction: after those. */
		if (ss->wait.source || ss->riding)
			return;
		w = transaction_pending(ss->server, c);
		if (w) {
			int ret = wait_start(ss, w);
			if (ret == 0)
				return;
			sb_log_errno(SB_LOG_ERROR, ret, "cannot wait for an acquire fence "
				     "(ours/kernel); disconnecting the client");
			wl_client_post_no_memory(wl_resource_get_client(ss->surface));
			return;
		}
		queue_hand_over(c);
	}
}

static int
wait_fired(int fd, uint32_t mask, void *data)
{
	struct sync_surface *ss = data;
	struct sb_wl_commit *w = ss->waiting, *head;

	sb_trace("wl.acquire_signalled surface=%u", wl_resource_get_id(ss->surface));
	ss->server->stats.wakeups++;
	if (w) {
		sb_wl_acquire_wait_fired(ss->server, &w->acquire, &ss->wait);
		w->ready = true;
		ss->waiting = NULL;
	}
	if (!wl_list_empty(&ss->queue) && !ss->riding) {
		head = wl_container_of(ss->queue.next, head, link);
		/*
		 * Hand the head over before tearing the wait down: removing the
		 * source (epoll_ctl + close of its duplicate) is two system calls
		 * that need not stand between the signal and the compositor
		 * (bench-wake, docs/performance.md figure 3), and nothing else
		 * makes one before it: the acquire status is read only if the
		 * compositor asks (sb_wl_acquire_wait_fired()); a transaction
		 * checks its other acquires only when it has some. A commit_ready()
		 * that re-enters the queue finds ss->wait.source still set and
		 * leaves the next wait to the advance below.
		 */
		if (!transaction_pending(ss->server, head))
			queue_hand_over(head);
	}
	wait_stop(ss);
	sb_wl_commit_queue_advance(ss);
	return 0;
}

void
sb_wl_commit_queue_discard(struct sync_surface *ss)
{
	struct sb_wl_commit *c, *tmp;

	wait_stop(ss);
	if (ss->idle) {
		wl_event_source_remove(ss->idle);
		ss->idle = NULL;
	}
	wl_list_for_each_safe(c, tmp, &ss->queue, link)
		sb_wl_commit_discard(c);
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
		wl_client_post_implementation_error(client,
						    "wl_surface@%u has %u commits waiting for "
						    "acquire fences that have not signalled or for "
						    "their parent's commit (limit %u)",
						    wl_resource_get_id(ss->surface), ss->queued,
						    server->max_pending);
		return false;
	}
	if (ss->client->queued >= server->max_client_pending) {
		server->stats.clients_over_limit++;
		wl_client_post_implementation_error(client, "%u commits of this client wait "
						    "for acquire fences that have not signalled "
						    "(limit %u per client)", ss->client->queued,
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
	struct sb_wl_commit *w;
	int ret;

	if (!check_limits(ss)) {
		commit_drop(c, false);
		return -EPROTO;
	}
	wl_list_insert(ss->queue.prev, &c->link);
	c->queued = true;
	commit_count(c);
	server->stats.commits_deferred++;
	trace_commit(c, "deferred");
	if (ss->queue.next != &c->link || ss->riding)
		return SB_WL_COMMIT_DEFERRED;
	/* The head: wait for its transaction's first pending acquire. */
	w = transaction_pending(server, c);
	if (!w) { /* a transaction whose fences have all signalled */
		schedule_advance(ss);
		return SB_WL_COMMIT_DEFERRED;
	}
	ret = wait_start(ss, w);
	if (ret < 0) {
		sb_log_errno(SB_LOG_ERROR, ret, "cannot wait for an acquire fence (ours/kernel)");
		commit_drop(c, false);
		wl_resource_post_no_memory(ss->surface);
		return -ENOMEM;
	}
	return SB_WL_COMMIT_DEFERRED;
}

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

/* A new commit of ss with its pending acquire / release (or `implicit`, moved in). */
static struct sb_wl_commit *
commit_take_pending(struct sb_wl_server *server, struct sync_surface *ss,
		    struct acquire *implicit, bool buffer, void *commit_data)
{
	/*
	 * A release goes with a commit that attaches a buffer. With the sync
	 * object alive check_commit() made that an error; a v1 release object
	 * whose sync object is gone waits for the next such commit.
	 */
	struct buffer_release none = { 0 }, *release = buffer ? &ss->release : &none;
	struct sb_wl_commit *c = commit_create(server, ss, commit_data);

	if (!c) {
		sb_wl_acquire_finish(implicit);
		return NULL;
	}
	c->protocol = carried_protocol(&ss->acquire, release);
	/* An implicit snapshot is only taken when the client set no acquire. */
	sb_wl_acquire_move(&c->acquire, sb_wl_acquire_is_set(implicit) ? implicit : &ss->acquire);
	sb_wl_buffer_release_move(&c->release, release);
	return c;
}

static void
discard_list(struct wl_list *list)
{
	struct sb_wl_commit *c, *tmp;

	wl_list_for_each_safe(c, tmp, list, link)
		sb_wl_commit_discard(c);
}

int
sb_wl_commit_queue_cache(struct sb_wl_server *server, struct sync_surface *ss,
			 struct acquire *implicit, bool buffer, void *commit_data)
{
	struct sb_wl_commit *c;

	if (!check_limits(ss)) {
		sb_wl_acquire_finish(implicit);
		return -EPROTO;
	}
	c = commit_take_pending(server, ss, implicit, buffer, commit_data);
	if (!c)
		return -ENOMEM;
	/* Its synchronized children's cached state is now part of its own. */
	gather_children(ss, &ss->cached);
	wl_list_insert(ss->cached.prev, &c->link);
	c->cached = true;
	commit_count(c);
	trace_commit(c, "cached");
	return SB_WL_COMMIT_DEFERRED;
}

/*
 * Queue or hand out a commit of ss (the surface's pending acquire / release,
 * or `implicit`, a snapshot of the buffer's fences, which moves in), with
 * what its synchronized sub-surfaces cached for it. Returns
 * SB_WL_COMMIT_APPLY (*out set when the helper keeps the commit),
 * SB_WL_COMMIT_DEFERRED, -EPROTO or -ENOMEM (nothing queued, implicit
 * finished).
 */
int
sb_wl_commit_queue_submit(struct sb_wl_server *server, struct sync_surface *ss,
			  struct acquire *implicit, bool buffer, void *commit_data,
			  struct sb_wl_commit **out)
{
	struct sb_wl_commit *c, *r;
	struct wl_list riders;
	bool carries;

	wl_list_init(&riders);
	gather(ss, &riders);
	carries = sb_wl_acquire_is_set(&ss->acquire) ||
		  (buffer && sb_wl_buffer_release_is_set(&ss->release));
	if (!carries && !sb_wl_acquire_is_set(implicit) && wl_list_empty(&ss->queue) &&
	    wl_list_empty(&riders) && !ss->riding)
		return SB_WL_COMMIT_APPLY;

	c = commit_take_pending(server, ss, implicit, buffer, commit_data);
	if (!c) {
		discard_list(&riders);
		return -ENOMEM;
	}
	wl_list_for_each(r, &riders, link) {
		r->cached = false;
		r->riding = true;
		r->carrier = c;
		r->owner->riding++;
	}
	wl_list_insert_list(&c->riders, &riders);

	if (!wl_list_empty(&ss->queue) || ss->riding || !wl_list_empty(&c->riders) ||
	    !commit_ready_now(server, c))
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
