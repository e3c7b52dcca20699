/* SPDX-License-Identifier: MIT */
/*
 * What a commit waits for before the compositor may read its buffer: a
 * sync_file (explicit-sync v1's acquire fence, or an implicit snapshot of
 * the dma-buf's write fences) or a point on an imported timeline
 * (linux-drm-syncobj-v1). Nothing here blocks: the queue head's wait is an
 * event-loop fd source on the sync_file itself, on a materialised point
 * exported as a sync_file, or on a sb_syncobj_waiter's eventfd.
 */
#include <errno.h>
#include <string.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>
#include <syncbridge/syncobj.h>

#include "log.h"
#include "server_internal.h"
#include "syncobj_internal.h"
#include "util.h"

void
sb_wl_acquire_init(struct acquire *a)
{
	memset(a, 0, sizeof(*a));
	a->fd = -1;
}

void
sb_wl_acquire_finish(struct acquire *a)
{
	fd_clear(&a->fd);
	sb_wl_point_clear(&a->point);
}

/* Moves what dst waits for (not the status: dst has not been waited for). */
void
sb_wl_acquire_move(struct acquire *dst, struct acquire *src)
{
	fd_replace(&dst->fd, fd_move(&src->fd));
	sb_wl_point_move(&dst->point, &src->point);
}

bool
sb_wl_acquire_is_set(const struct acquire *a)
{
	return a->fd >= 0 || a->point.timeline;
}

bool
sb_wl_acquire_snapshot(struct acquire *a, int dmabuf_fd)
{
	int st = 1;
	int ret = sb_dmabuf_export_sync_file(dmabuf_fd, SB_ACCESS_READ, &a->fd);

	if (ret)
		sb_log_errno(SB_LOG_DEBUG, ret, "no implicit fence snapshot of the buffer");
	else if (sb_sync_file_get_status(a->fd, &st) != 0 || st != 0)
		fd_clear(&a->fd); /* idle already */
	return a->fd >= 0;
}

/*
 * A fence that completed with an error still completed (the kernel signals
 * it; dma_fence_set_error() only annotates it), and neither protocol XML
 * defines an answer for it: the commit is applied, and the error is recorded
 * for the compositor (sb_wl_commit_get_acquire_status()), which may choose
 * not to show the buffer.
 */
static void
record_status(struct sb_wl_server *server, struct acquire *a, int status)
{
	if (status >= 0)
		return;
	a->status = status;
	if (!server)
		return;
	server->stats.acquire_errors++;
	if (!server->warned_acquire_error) {
		server->warned_acquire_error = true;
		sb_warn("a client's acquire fence completed with error %d (the client's or its "
			"driver's problem); its commit is applied all the same, and "
			"sb_wl_commit_get_acquire_status() reports it (further ones are logged at "
			"debug level)",
			status);
	} else {
		sb_debug("client acquire fence completed with error %d; applying anyway", status);
	}
}

static int
export_point(const struct point *p, int *out_fd)
{
	return sb_syncobj_export_point(p->timeline->drm_fd, p->timeline->handle, p->value,
				       out_fd);
}

/*
 * Record the status of a completed acquire: fd is a sync_file of it, or -1
 * for a timeline point (exported now: DRM syncobj waits report no error).
 */
static void
check_status(struct sb_wl_server *server, struct acquire *a, int fd)
{
	int status = 1, own = -1;

	if (fd < 0 && server && sb_wl_point_usable(&a->point) &&
	    !sb_wl_point_is_origin(&a->point) && export_point(&a->point, &own) == 0)
		fd = own;
	if (fd >= 0 && sb_sync_file_get_status(fd, &status) == 0)
		record_status(server, a, status);
	fd_clear(&own);
}

/*
 * A fence that completed with an error has signalled (record_status()). When
 * the kernel will not answer (the status query or the zero-timeout wait
 * fails), the answer is "not yet": applying would show the buffer before its
 * fence (fault-wl caught that). The event-loop wait (wait_start) then decides
 * — poll() on the sync_file needs no ioctl; a point gets exported or a waiter
 * — and if it cannot be set up either, the client is disconnected: never
 * held forever.
 */
int
sb_wl_acquire_is_signalled(struct sb_wl_server *server, struct acquire *a)
{
	int status = 1, ret;

	if (a->fd >= 0) {
		/* The fd answered SYNC_IOC_FILE_INFO when the client sent it. */
		ret = sb_sync_file_get_status(a->fd, &status);
		if (ret) {
			sb_log_errno(SB_LOG_DEBUG, ret, "acquire fence status unknown (kernel); "
				     "waiting for it in the event loop");
			return 0;
		}
		record_status(server, a, status);
		return status != 0;
	}
	if (sb_wl_point_is_origin(&a->point))
		return 1; /* reached when the timeline was made (struct point) */
	if (sb_wl_point_usable(&a->point)) {
		ret = sb_syncobj_wait(a->point.timeline->drm_fd, a->point.timeline->handle,
				      a->point.value, 0, 0);
		if (ret == -ETIME)
			return 0;
		if (ret) {
			sb_log_errno(SB_LOG_DEBUG, ret,
				     "acquire point %llu: zero-timeout wait failed "
				     "(kernel); waiting for it in the event loop",
				     (unsigned long long)a->point.value);
			return 0;
		}
		check_status(server, a, -1);
		return 1;
	}
	return 1;
}

int
sb_wl_acquire_is_materialized(struct acquire *a)
{
	int ret;

	if (a->fd >= 0 || sb_wl_point_is_origin(&a->point) || !sb_wl_point_usable(&a->point))
		return 1;
	ret = sb_syncobj_wait(a->point.timeline->drm_fd, a->point.timeline->handle, a->point.value,
			      0, SB_SYNCOBJ_WAIT_AVAILABLE);
	if (ret && ret != -ETIME)
		sb_log_errno(SB_LOG_DEBUG, ret,
			     "acquire point %llu: zero-timeout availability wait "
			     "failed (kernel); waiting for it in the event loop",
			     (unsigned long long)a->point.value);
	return ret == 0;
}

int
sb_wl_acquire_export(const struct acquire *a, int *out_fd)
{
	int ret;

	/* A fence the helper waited for is kept for its status only: -1, as documented. */
	if (a->fd >= 0 && a->status != ACQUIRE_STATUS_UNREAD) {
		ret = sb_fd_dup(a->fd);
		if (ret < 0)
			return ret;
		*out_fd = ret;
		return 0;
	}
	if (!sb_wl_point_usable(&a->point) || sb_wl_point_is_origin(&a->point))
		return 0;
	return export_point(&a->point, out_fd);
}

/* ---- the queue head's wait -------------------------------------------------- */

void
sb_wl_acquire_wait_init(struct acquire_wait *w)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
}

/* The wait no longer counts as pending (it fired, or it is being torn down). */
static void
wait_uncount(struct sb_wl_server *server, struct acquire_wait *w)
{
	if (w->counted && server) {
		server->stats.waits_pending--;
		if (w->threaded)
			server->stats.waits_threaded--;
	}
	w->counted = false;
}

void
sb_wl_acquire_wait_finish(struct sb_wl_server *server, struct acquire_wait *w)
{
	if (w->source)
		wl_event_source_remove(w->source);
	wait_uncount(server, w);
	sb_syncobj_waiter_destroy(w->waiter);
	fd_clear(&w->fd);
	sb_wl_acquire_wait_init(w);
}

int
sb_wl_acquire_wait_start(struct sb_wl_server *server, struct acquire *a,
			 struct acquire_wait *w, wl_event_loop_fd_func_t fired, void *data)
{
	int fd, ret;

	if (a->fd >= 0) {
		fd = a->fd; /* the source polls a duplicate; ours is closed below */
	} else {
		uint32_t handle = a->point.timeline->handle;
		bool available = server->flags & SB_WL_SERVER_WAIT_MATERIALIZED;

		/* A materialised point: its fence as a sync_file (no thread on any
		 * kernel); with WAIT_MATERIALIZED it is ready then already. */
		ret = available ? -EINVAL :
		      sb_syncobj_export_sync_file(server->drm_fd, handle, a->point.value, &w->fd);
		if (ret == 0) {
			fd = w->fd;
		} else if (ret == -EINVAL) {
			/* Not materialised yet: the kernel's eventfd, or the waiter's thread. */
			ret = sb_syncobj_waiter_create(server->drm_fd, handle, a->point.value,
						       available ? SB_SYNCOBJ_WAIT_AVAILABLE : 0,
						       &w->waiter);
			if (ret)
				return ret;
			w->threaded = !sb_syncobj_waiter_uses_eventfd(w->waiter);
			fd = sb_syncobj_waiter_get_fd(w->waiter);
		} else {
			return ret;
		}
	}
	w->source = wl_event_loop_add_fd(server->loop, fd, WL_EVENT_READABLE, fired, data);
	if (!w->source) {
		sb_wl_acquire_wait_finish(server, w);
		return -ENOMEM;
	}
	/*
	 * wl_event_loop_add_fd() polls a duplicate of fd (and hands its callback
	 * the number it was given, not the duplicate). Keep as few fds as the
	 * wait needs: the client's sync_file stays with the wait and goes back
	 * to the commit when it fires, so that its completion status can be
	 * read if the compositor asks (a fence may complete with an error:
	 * sb_wl_acquire_read_status()); an exported point's sync_file is
	 * dropped (the point is exported again then). The kernel's eventfd
	 * registration holds its own reference to the eventfd, so the kernel
	 * path needs no waiter object any more; the waiter's thread fallback
	 * keeps its fd, since the thread writes to it.
	 */
	fd_clear(&w->fd);
	if (a->fd >= 0)
		w->fd = fd_move(&a->fd);
	if (w->waiter && !w->threaded) {
		sb_syncobj_waiter_destroy(w->waiter);
		w->waiter = NULL;
	}
	server->stats.waits_pending++;
	if (w->threaded)
		server->stats.waits_threaded++;
	w->counted = true;
	return 0;
}

void
sb_wl_acquire_wait_fired(struct sb_wl_server *server, struct acquire *a, struct acquire_wait *w)
{
	int err;

	if (w->waiter && (err = sb_syncobj_waiter_get_error(w->waiter)) != 0)
		sb_log_errno(SB_LOG_DEBUG, err, "acquire point wait ended without the point "
			     "signalling; applying (errors count as signalled)");
	/*
	 * Nothing more happens between the wake-up and the compositor: no
	 * status query here (for a point it would be two system calls, an
	 * export and SYNC_IOC_FILE_INFO; for a sync_file one). Neither protocol
	 * gives a fence that completed with an error a meaning (record_status()),
	 * so a compositor may never ask; one that does pays the query in
	 * sb_wl_commit_get_acquire_status().
	 * The client's sync_file (v1, implicit) moves back to the commit for
	 * it; a point is exported again then.
	 */
	fd_replace(&a->fd, fd_move(&w->fd));
	a->status = ACQUIRE_STATUS_UNREAD;
	wait_uncount(server, w);
}

int
sb_wl_acquire_read_status(struct sb_wl_server *server, struct acquire *a)
{
	if (a->status == ACQUIRE_STATUS_UNREAD) {
		a->status = 0;
		check_status(server, a, a->fd);
		fd_clear(&a->fd);
	}
	return a->status;
}
