/* SPDX-License-Identifier: MIT */
/*
 * Explicit sync for pw_stream buffers (include/syncbridge/pipewire.h,
 * docs/pipewire.md): each buffer's acquire and release timelines, the points
 * in its SPA_META_SyncTimeline meta, and the fallback for buffers negotiated
 * without them (the dma-buf's implicit fences).
 *
 * Points: the producer's n-th frame on a buffer uses point n on both of the
 * buffer's timelines (they are two syncobjs); a buffer goes out again only
 * once its release point n has signalled, so points only grow and "signaling
 * a timeline point also signals every previous point" holds by construction.
 */
#include <syncbridge/pipewire.h>

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <spa/buffer/buffer.h>
#include <spa/buffer/meta.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>
#include <syncbridge/syncobj.h>

#include "log.h"
#include "pw_internal.h"
#include "sync_file_internal.h"
#include "syncobj_internal.h"
#include "util.h"

/*
 * PipeWire >= 1.4.8 (spa/buffer/meta.h): "this flag is set by the producer
 * and cleared by the consumer when it promises to signal the release
 * point". A buffer that comes back to the producer with it still set was
 * never taken by the consumer (not dequeued: killed, timed out, or the graph
 * recycled it unseen), so nobody will signal its release point and it is
 * free at once. The flag lives in the meta, in memory both sides share, so
 * it works the same between two sides built against older headers (1.4.2).
 */
#ifndef SPA_META_SYNC_TIMELINE_UNSCHEDULED_RELEASE
#define SPA_META_SYNC_TIMELINE_UNSCHEDULED_RELEASE (1 << 0)
#endif

/* What the library knows of one buffer. */
struct pw_buf {
	struct pw_buf *next;
	struct spa_buffer *buf;
	bool synced;
	bool producer;
	uint32_t acquire, release;   /* handles on sync->drm_fd; 0: none */
	int acquire_fd, release_fd;  /* producer: the planes' fds (ours) */
	uint64_t seq;                /* producer: the last point set (0: never out) */
	uint64_t read;               /* consumer: the acquire point of the last frame released */
	struct sb_syncobj_waiter *waiter; /* producer: watching release point `seq` */
};

struct sb_pw_sync {
	int drm_fd;
	bool disabled; /* SYNCBRIDGE_DISABLE */
	struct pw_buf *bufs;
};

bool
sb_pw_sync_disabled(const struct sb_pw_sync *sync)
{
	return sync->disabled;
}

int
sb_pw_sync_create(int drm_fd, struct sb_pw_sync **out)
{
	struct sb_pw_sync *sync;
	int ret;

	if (out)
		*out = NULL;
	if (!out)
		return -EINVAL;
	ret = sb_drm_check_fd(drm_fd);
	if (ret)
		return ret;
	if (!sb_drm_has_timelines(drm_fd))
		return -EOPNOTSUPP;
	sync = calloc(1, sizeof(*sync));
	if (!sync)
		return -ENOMEM;
	sync->drm_fd = drm_fd;
	sync->disabled = sb_env_get_bool("SYNCBRIDGE_DISABLE", false);
	if (sync->disabled)
		sb_info("pipewire: SYNCBRIDGE_DISABLE is set: plain buffers only, fences ignored");
	*out = sync;
	return 0;
}

static void
pw_buf_free(struct sb_pw_sync *sync, struct pw_buf *b)
{
	sb_syncobj_waiter_destroy(b->waiter);
	if (b->acquire)
		sb_syncobj_destroy(sync->drm_fd, b->acquire);
	if (b->release)
		sb_syncobj_destroy(sync->drm_fd, b->release);
	fd_clear(&b->acquire_fd);
	fd_clear(&b->release_fd);
	free(b);
}

void
sb_pw_sync_destroy(struct sb_pw_sync *sync)
{
	if (!sync)
		return;
	while (sync->bufs) {
		struct pw_buf *b = sync->bufs;

		sync->bufs = b->next;
		pw_buf_free(sync, b);
	}
	free(sync);
}

static struct pw_buf *
find(const struct sb_pw_sync *sync, const struct spa_buffer *buf)
{
	for (struct pw_buf *b = sync ? sync->bufs : NULL; b; b = b->next)
		if (b->buf == buf)
			return b;
	return NULL;
}

static struct spa_meta_sync_timeline *
meta_of(struct spa_buffer *buf)
{
	return spa_buffer_find_meta_data(buf, SPA_META_SyncTimeline,
					 sizeof(struct spa_meta_sync_timeline));
}

/* Producer: a new timeline syncobj and its fd for a SyncObj plane. */
static int
timeline_new(int drm_fd, uint32_t *handle, int *fd)
{
	int ret = sb_syncobj_create(drm_fd, handle);

	if (ret)
		return ret;
	ret = sb_syncobj_handle_to_fd(drm_fd, *handle, fd);
	if (ret) {
		sb_syncobj_destroy(drm_fd, *handle);
		*handle = 0;
	}
	return ret;
}

static void
plane_set(struct spa_data *d, int fd)
{
	d->type = SPA_DATA_SyncObj;
	d->flags = SPA_DATA_FLAG_READWRITE;
	d->fd = fd;
	d->mapoffset = 0;
	d->maxsize = 0;
	d->data = NULL;
}

int
sb_pw_buffer_add(struct sb_pw_sync *sync, struct spa_buffer *buf, bool producer)
{
	struct pw_buf *b;
	struct spa_data *acq, *rel;
	int ret;

	if (!sync || !buf)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->buf = buf;
	b->producer = producer;
	b->acquire_fd = b->release_fd = -1;
	/*
	 * Explicit sync was negotiated when the buffer has the meta: the
	 * Buffers param that asked for it has the two extra planes
	 * (sb_pw_sync_build_params()); without it PipeWire picked the fallback.
	 */
	if (meta_of(buf)) {
		if (buf->n_datas < 3) {
			sb_warn("a pw_stream buffer with the SyncTimeline meta but %u data planes "
				"(needs the image and two SyncObj planes); not using it",
				buf->n_datas);
			free(b);
			return -EINVAL;
		}
		acq = &buf->datas[buf->n_datas - 2];
		rel = &buf->datas[buf->n_datas - 1];
		if (producer) {
			ret = timeline_new(sync->drm_fd, &b->acquire, &b->acquire_fd);
			if (ret == 0)
				ret = timeline_new(sync->drm_fd, &b->release, &b->release_fd);
			if (ret)
				goto err_free;
			plane_set(acq, b->acquire_fd);
			plane_set(rel, b->release_fd);
		} else {
			if (acq->type != SPA_DATA_SyncObj || rel->type != SPA_DATA_SyncObj) {
				ret = -EINVAL;
				goto err_free;
			}
			/* The kernel checks that each fd is a syncobj (drmSyncobjFDToHandle). */
			ret = sb_syncobj_fd_to_handle(sync->drm_fd, (int)acq->fd, &b->acquire);
			if (ret == 0)
				ret = sb_syncobj_fd_to_handle(sync->drm_fd, (int)rel->fd,
							      &b->release);
			if (ret) {
				sb_log_errno(SB_LOG_WARN, ret,
					     "a pw_stream buffer's SyncObj planes do not "
					     "import as DRM syncobjs");
				goto err_free;
			}
		}
		b->synced = true;
	}
	b->next = sync->bufs;
	sync->bufs = b;
	return b->synced ? 1 : 0;

err_free:
	pw_buf_free(sync, b);
	return ret;
}

void
sb_pw_buffer_remove(struct sb_pw_sync *sync, struct spa_buffer *buf)
{
	for (struct pw_buf **p = sync ? &sync->bufs : NULL; p && *p; p = &(*p)->next) {
		if ((*p)->buf == buf) {
			struct pw_buf *b = *p;

			*p = b->next;
			pw_buf_free(sync, b);
			return;
		}
	}
}

bool
sb_pw_buffer_is_synced(const struct sb_pw_sync *sync, const struct spa_buffer *buf)
{
	const struct pw_buf *b = find(sync, buf);

	return b && b->synced;
}

/*
 * The start of the two calls that take the caller's fence: the buffer, and
 * the fence (-1: none, or a sync_file the kernel describes). Returns 1 to go
 * on with *out, 0 when the bridge is off (SYNCBRIDGE_DISABLE: nothing to
 * do), or -errno.
 */
static int
begin_fence_call(struct sb_pw_sync *sync, const struct spa_buffer *buf, int fence_fd,
		 struct pw_buf **out)
{
	int ret;

	*out = find(sync, buf);
	if (!*out)
		return -ENOENT;
	ret = fence_fd == -1 ? 0 : sb_sync_file_check(fence_fd, NULL, NULL);
	if (ret)
		return ret;
	return sync->disabled ? 0 : 1;
}

/* ---- producer ------------------------------------------------------------------ */

int
sb_pw_producer_wait_release(struct sb_pw_sync *sync, struct spa_buffer *buf, int64_t timeout_ns)
{
	struct pw_buf *b = find(sync, buf);
	struct spa_meta_sync_timeline *m;
	int ret;

	if (!b)
		return -ENOENT;
	if (!b->synced || b->seq == 0)
		return 1;
	m = meta_of(buf);
	if (m->flags & SPA_META_SYNC_TIMELINE_UNSCHEDULED_RELEASE)
		return 1; /* the consumer never took it: nobody will signal point seq */
	ret = sb_syncobj_wait(sync->drm_fd, b->release, b->seq, timeout_ns, 0);
	if (ret == -ETIME)
		return 0;
	return ret ? ret : 1;
}

int
sb_pw_producer_watch_release(struct sb_pw_sync *sync, struct spa_buffer *buf, int *out_fd)
{
	struct pw_buf *b = find(sync, buf);
	int ret;

	if (out_fd)
		*out_fd = -1;
	if (!b || !out_fd)
		return -ENOENT;
	ret = sb_pw_producer_wait_release(sync, buf, 0);
	if (ret != 0)
		return ret;
	sb_syncobj_waiter_destroy(b->waiter);
	b->waiter = NULL;
	ret = sb_syncobj_waiter_create(sync->drm_fd, b->release, b->seq, 0, &b->waiter);
	if (ret)
		return ret;
	*out_fd = sb_syncobj_waiter_get_fd(b->waiter);
	return 0;
}

int
sb_pw_producer_set_acquire(struct sb_pw_sync *sync, struct spa_buffer *buf, int fence_fd)
{
	struct spa_meta_sync_timeline *m;
	struct pw_buf *b;
	uint64_t point;
	int ret;

	ret = begin_fence_call(sync, buf, fence_fd, &b);
	if (ret <= 0)
		return ret;
	if (!b->synced) {
		/* The fallback: a reader with implicit sync waits for the fence. */
		struct spa_data *d = &buf->datas[0];

		if (fence_fd < 0)
			return 0;
		if (buf->n_datas >= 1 && d->type == SPA_DATA_DmaBuf &&
		    sb_dmabuf_import_sync_file((int)d->fd, SB_ACCESS_WRITE, fence_fd) == 0)
			return 0;
		/* No dma-buf (or no import before Linux 6.0): the frame goes out done. */
		return sb_sync_file_wait(fence_fd, SB_TIMEOUT_INFINITE);
	}
	/* Never a second frame on a buffer the consumer still reads. */
	ret = sb_pw_producer_wait_release(sync, buf, 0);
	if (ret < 0)
		return ret;
	if (ret == 0)
		return -EBUSY;
	m = meta_of(buf);
	point = b->seq + 1;
	ret = fence_fd >= 0 ? sb_syncobj_import_sync_file(sync->drm_fd, b->acquire, point, fence_fd)
			    : sb_syncobj_signal(sync->drm_fd, b->acquire, point);
	if (ret)
		return ret;
	/* Publish last: the meta names the points once the acquire point exists. */
	b->seq = point;
	m->flags = SPA_META_SYNC_TIMELINE_UNSCHEDULED_RELEASE; /* until the consumer takes it */
	m->acquire_point = point;
	m->release_point = point;
	return 0;
}

/* ---- consumer ------------------------------------------------------------------ */

int
sb_pw_consumer_acquire(struct sb_pw_sync *sync, struct spa_buffer *buf, int *out_fd)
{
	struct pw_buf *b = find(sync, buf);
	struct spa_meta_sync_timeline *m;
	int ret;

	if (out_fd)
		*out_fd = -1;
	if (!b || !out_fd)
		return -ENOENT;
	if (!b->synced)
		return 0;
	m = meta_of(buf);
	if (!m->acquire_point)
		return 0; /* nothing was set: the producer wrote before queueing */
	/*
	 * Points only grow (the timeline contract): an acquire point at or
	 * behind the last frame read from this buffer has signalled already,
	 * so waiting for it would let the read start before the producer's
	 * write is done. The producer broke the contract; say so, read nothing.
	 */
	if (m->acquire_point <= b->read) {
		sb_warn("pipewire: a buffer's acquire point %llu is not after the last frame "
			"read from it (%llu): the producer's SyncTimeline meta is wrong",
			(unsigned long long)m->acquire_point, (unsigned long long)b->read);
		return -EPROTO;
	}
	ret = sb_syncobj_export_sync_file(sync->drm_fd, b->acquire, m->acquire_point, out_fd);
	/* For a syncobj fd we imported ourselves, EINVAL can only mean "no fence yet". */
	if (ret)
		return ret == -EINVAL ? -EAGAIN : ret;
	/* The promise: this consumer signals the release point (sb_pw_consumer_release()). */
	m->flags &= ~(uint32_t)SPA_META_SYNC_TIMELINE_UNSCHEDULED_RELEASE;
	return 0;
}

int
sb_pw_consumer_release(struct sb_pw_sync *sync, struct spa_buffer *buf, int fence_fd)
{
	struct spa_meta_sync_timeline *m;
	struct pw_buf *b;
	uint64_t now;
	int ret;

	ret = begin_fence_call(sync, buf, fence_fd, &b);
	if (ret <= 0)
		return ret;
	if (!b->synced)
		return fence_fd >= 0 ? sb_sync_file_wait(fence_fd, SB_TIMEOUT_INFINITE) : 0;
	m = meta_of(buf);
	if (!m->release_point && !m->acquire_point)
		return 0; /* nothing was set: the producer waits for nothing */
	/*
	 * A release point at or behind the release timeline's value has
	 * signalled already: the producer would take the buffer back while
	 * this read is still going, and the kernel's timeline would go
	 * backwards. Refused, like the XML refuses it for linux-drm-syncobj.
	 */
	ret = sb_syncobj_query(sync->drm_fd, b->release, &now);
	if (ret)
		return ret;
	if (m->release_point <= now) {
		sb_warn("pipewire: a buffer's release point %llu is not after its release "
			"timeline's value %llu: the producer's SyncTimeline meta is wrong",
			(unsigned long long)m->release_point, (unsigned long long)now);
		return -EPROTO;
	}
	ret = fence_fd >= 0 ? sb_syncobj_import_sync_file(sync->drm_fd, b->release,
							  m->release_point, fence_fd)
			    : sb_syncobj_signal(sync->drm_fd, b->release, m->release_point);
	if (ret == 0)
		b->read = m->acquire_point;
	return ret;
}
