/* SPDX-License-Identifier: MIT */
/*
 * The fenced buffer queue (include/syncbridge/buffer_queue.h,
 * docs/buffer-queue.md).
 *
 * One mutex guards everything. Consumers block on a condition variable
 * (CLOCK_MONOTONIC) until a slot is queued. The producer blocks in ppoll()
 * on the pending release fences plus an eventfd that every release, drop and
 * close writes to — so it wakes for a signalled fence or a new release,
 * whichever comes first, with no helper thread and no thread per fence. The
 * eventfd is drained under the lock before the producer sleeps, and written
 * under the lock, so no wake-up falls between the scan and the sleep.
 */
#include <syncbridge/buffer_queue.h>
#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/eventfd.h>

#include "log.h"
#include "sync_file_internal.h"
#include "util.h"

enum slot_state {
	SLOT_FREE,     /* the producer's, ready to dequeue */
	SLOT_DEQUEUED, /* the producer is filling it */
	SLOT_QUEUED,   /* waiting for a consumer; fence = acquire fence */
	SLOT_ACQUIRED, /* a consumer reads it */
	SLOT_RELEASED, /* fence = release fence, still pending */
};

struct slot {
	enum slot_state state;
	int fence;    /* owned: QUEUED → acquire fence, RELEASED → release fence; else -1 */
	int dmabuf;   /* borrowed, -1: none */
	uint64_t seq; /* when it was queued (QUEUED) or released (FREE/RELEASED) */
};

struct sb_buffer_queue {
	pthread_mutex_t lock;
	pthread_cond_t queued; /* a slot became QUEUED, or the queue closed */
	int wake_fd;           /* eventfd: a slot was released / dropped, or closed */
	unsigned count;
	uint32_t flags;
	bool disabled;         /* SYNCBRIDGE_DISABLE: no release-fence waits */
	bool closed;
	bool dequeuing;        /* a thread is in sb_buffer_queue_dequeue() */
	uint64_t seq;
	struct sb_buffer_queue_stats stats;
	struct slot slots[];
};

static void
wake_producer(struct sb_buffer_queue *q)
{
	uint64_t one = 1;
	/* Cannot fail short of a counter overflow (2^64 - 1 writes). */
	ssize_t n = write(q->wake_fd, &one, sizeof(one));
	(void)n;
}

static void
drain_wake(struct sb_buffer_queue *q)
{
	uint64_t v;
	ssize_t n = read(q->wake_fd, &v, sizeof(v)); /* non-blocking */
	(void)n;
}

/*
 * Whether a fence the queue holds is done: 1 signalled, 0 pending, < 0 the
 * error it completed with. If the kernel will not say (SYNC_IOC_FILE_INFO
 * failed: out of memory), poll() answers "signalled or not" without
 * allocating — never "done" for a pending fence, which would hand a buffer
 * back while it is still read.
 */
static int
fence_state(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int status = 0;

	if (sb_sync_file_get_status(fd, &status) == 0)
		return status;
	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN) ? 1 : 0;
}

/*
 * The queue owns a fence from here on: keep the library's promise that fds
 * it holds or hands out are close-on-exec (the caller's may not have been).
 */
static void
take_fence(int fd)
{
	if (fd >= 0)
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static void
count_fence_error(struct sb_buffer_queue *q, int status)
{
	if (status < 0)
		q->stats.fence_errors++;
}

/*
 * Check a fence the caller hands over. Returns 0 with *status set (1
 * signalled, 0 pending, < 0 error), or -EBADF / -EINVAL.
 */
static int
check_fence(int fd, int32_t *status)
{
	*status = 1;
	if (fd == -1)
		return 0;
	if (fd < 0)
		return -EBADF;
	return sb_sync_file_check(fd, status, NULL);
}

/*
 * The start of a hand-over (queue, release): the slot must be one the caller
 * holds in state `want`, the fence one it may hand over. On success returns 0
 * with q->lock held, *sp the slot and *status the fence's; on failure returns
 * -EINVAL / -EBADF with the lock not held and nothing taken.
 */
static int
slot_lock(struct sb_buffer_queue *q, unsigned slot, enum slot_state want, int fence,
	  int32_t *status, struct slot **sp)
{
	int ret;

	if (!q || slot >= q->count)
		return -EINVAL;
	ret = check_fence(fence, status);
	if (ret < 0)
		return ret;

	pthread_mutex_lock(&q->lock);
	if (q->slots[slot].state != want) {
		pthread_mutex_unlock(&q->lock);
		sb_debug("buffer queue %p: %s of slot %u, which %s (caller's bug)", (void *)q,
			 want == SLOT_DEQUEUED ? "queue" : "release", slot,
			 want == SLOT_DEQUEUED ? "the producer does not hold"
					       : "no consumer holds");
		return -EINVAL;
	}
	*sp = &q->slots[slot];
	return 0;
}

SB_EXPORT int
sb_buffer_queue_create(unsigned slots, uint32_t flags, struct sb_buffer_queue **out)
{
	struct sb_buffer_queue *q;
	pthread_condattr_t attr;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (slots == 0 || slots > SB_BUFFER_QUEUE_MAX_SLOTS || (flags & ~SB_BUFFER_QUEUE_MAILBOX))
		return -EINVAL;

	q = calloc(1, sizeof(*q) + slots * sizeof(q->slots[0]));
	if (!q)
		return -ENOMEM;
	q->count = slots;
	q->flags = flags;
	q->disabled = sb_env_get_bool("SYNCBRIDGE_DISABLE", false);
	for (unsigned i = 0; i < slots; i++)
		q->slots[i] = (struct slot){ .state = SLOT_FREE, .fence = -1, .dmabuf = -1 };

	q->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->wake_fd < 0) {
		ret = -errno;
		goto err_free;
	}
	ret = -pthread_mutex_init(&q->lock, NULL);
	if (ret)
		goto err_fd;
	ret = -pthread_condattr_init(&attr);
	if (ret)
		goto err_mutex;
	ret = -pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!ret)
		ret = -pthread_cond_init(&q->queued, &attr);
	pthread_condattr_destroy(&attr);
	if (ret)
		goto err_mutex;

	if (q->disabled)
		sb_info("buffer queue: SYNCBRIDGE_DISABLE is set: slots are reused without "
			"waiting for their release fences");
	*out = q;
	return 0;

err_mutex:
	pthread_mutex_destroy(&q->lock);
err_fd:
	fd_clear(&q->wake_fd);
err_free:
	free(q);
	return ret;
}

SB_EXPORT void
sb_buffer_queue_destroy(struct sb_buffer_queue *q)
{
	if (!q)
		return;
	for (unsigned i = 0; i < q->count; i++) {
		if (q->slots[i].state == SLOT_RELEASED)
			sb_debug("buffer queue %p: destroyed with slot %u's release fence pending",
				 (void *)q, i);
		fd_clear(&q->slots[i].fence);
	}
	fd_clear(&q->wake_fd);
	pthread_cond_destroy(&q->queued);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

SB_EXPORT int
sb_buffer_queue_close(struct sb_buffer_queue *q)
{
	if (!q)
		return -EINVAL;
	pthread_mutex_lock(&q->lock);
	q->closed = true;
	pthread_cond_broadcast(&q->queued);
	wake_producer(q);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

SB_EXPORT int
sb_buffer_queue_set_dmabuf(struct sb_buffer_queue *q, unsigned slot, int dmabuf_fd)
{
	if (!q || slot >= q->count)
		return -EINVAL;
	if (dmabuf_fd != -1) {
		int ret = sb_fd_check_open(dmabuf_fd);
		if (ret < 0)
			return ret;
		if (!sb_dmabuf_is_valid(dmabuf_fd))
			return -EINVAL;
	}
	pthread_mutex_lock(&q->lock);
	q->slots[slot].dmabuf = dmabuf_fd;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/*
 * A RELEASED slot whose fence has signalled (or any RELEASED slot when the
 * queue is disabled) becomes FREE. Under the lock.
 */
static void
reap_released(struct sb_buffer_queue *q)
{
	for (unsigned i = 0; i < q->count; i++) {
		struct slot *s = &q->slots[i];
		int status = 1;

		if (s->state != SLOT_RELEASED)
			continue;
		if (!q->disabled) {
			status = fence_state(s->fence);
			if (status == 0)
				continue;
		}
		if (status < 0) {
			sb_warn("buffer queue %p: slot %u's release fence completed with an error "
				"(%d, the consumer's driver's): reusing the slot",
				(void *)q, i, status);
			count_fence_error(q, status);
		}
		fd_clear(&s->fence);
		s->state = SLOT_FREE;
	}
}

/* The FREE slot released longest ago, or -1. Lock held. */
static int
oldest_free(const struct sb_buffer_queue *q)
{
	int best = -1;

	for (unsigned i = 0; i < q->count; i++)
		if (q->slots[i].state == SLOT_FREE &&
		    (best < 0 || q->slots[i].seq < q->slots[best].seq))
			best = (int)i;
	return best;
}

/*
 * What a dequeue with no FREE slot sleeps on: fds[0] the wake eventfd, then
 * a duplicate of each pending release fence (a consumer cannot close them
 * under us, but destroy() could, and the lock is dropped during the sleep).
 * Returns how many; *pending: some slot waits for its release fence;
 * *dup_failed: a fence could not be duplicated (out of fds). Lock held.
 */
static int
wait_fds(struct sb_buffer_queue *q, int *fds, bool *pending, bool *dup_failed)
{
	int n = 0;

	fds[n++] = q->wake_fd;
	*dup_failed = false;
	for (unsigned i = 0; i < q->count; i++) {
		if (q->slots[i].state != SLOT_RELEASED)
			continue;
		*pending = true;
		int d = sb_fd_dup(q->slots[i].fence);
		if (d < 0) {
			*dup_failed = true; /* out of fds: rescan often instead (sleep_on) */
			continue;
		}
		fds[n++] = d;
	}
	return n;
}

/*
 * Sleep until one of fds[0..n) is readable, or for left ns (-1: no limit),
 * then close the duplicates fds[1..n). 0 (woken, timed out or interrupted:
 * the caller rescans) or -errno. Lock not held.
 */
static int
sleep_on(int *fds, int n, int64_t left, bool dup_failed)
{
	struct pollfd pfd[1 + SB_BUFFER_QUEUE_MAX_SLOTS];

	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	/* A fence we could not poll signals unseen: look again every 10 ms. */
	int64_t sleep_ns = dup_failed && (left < 0 || left > 10000000) ? 10000000 : left;
	struct timespec ts = { .tv_sec = sleep_ns / 1000000000,
			       .tv_nsec = sleep_ns % 1000000000 };
	int pr = ppoll(pfd, (nfds_t)n, sleep_ns >= 0 ? &ts : NULL, NULL);
	int poll_errno = errno;

	for (int i = 1; i < n; i++)
		fd_clear(&fds[i]);
	return pr < 0 && poll_errno != EINTR ? -poll_errno : 0;
}

SB_EXPORT int
sb_buffer_queue_dequeue(struct sb_buffer_queue *q, int64_t timeout_ns, unsigned *slot)
{
	int fds[1 + SB_BUFFER_QUEUE_MAX_SLOTS];
	bool waited_for_fence = false, dup_failed;
	int64_t deadline;
	int ret;

	if (!q || !slot)
		return -EINVAL;
	deadline = sb_deadline_from_timeout(sb_now_ns(), timeout_ns);

	pthread_mutex_lock(&q->lock);
	if (q->dequeuing) {
		pthread_mutex_unlock(&q->lock);
		return -EBUSY;
	}
	q->dequeuing = true;
	for (;;) {
		if (q->closed) {
			ret = -EPIPE;
			break;
		}
		reap_released(q);

		int best = oldest_free(q);
		if (best >= 0) {
			q->slots[best].state = SLOT_DEQUEUED;
			q->stats.dequeued++;
			if (waited_for_fence)
				q->stats.reuse_waits++;
			*slot = (unsigned)best;
			ret = 0;
			break;
		}

		/* Sleep until a pending release fence signals or something changes. */
		int n = wait_fds(q, fds, &waited_for_fence, &dup_failed);
		int64_t left = sb_deadline_remaining(sb_now_ns(), deadline);
		if (left == 0) {
			for (int i = 1; i < n; i++)
				fd_clear(&fds[i]);
			ret = -ETIME;
			break;
		}
		drain_wake(q);
		pthread_mutex_unlock(&q->lock);
		ret = sleep_on(fds, n, left, dup_failed);
		pthread_mutex_lock(&q->lock);
		if (ret)
			break;
		/* A timeout falls through to the rescan: it reports -ETIME if
		 * nothing became free at the last moment. */
	}
	q->dequeuing = false;
	pthread_mutex_unlock(&q->lock);
	return ret;
}

SB_EXPORT int
sb_buffer_queue_queue(struct sb_buffer_queue *q, unsigned slot, int acquire_fence)
{
	struct slot *s;
	int32_t status;
	int ret;

	ret = slot_lock(q, slot, SLOT_DEQUEUED, acquire_fence, &status, &s);
	if (ret < 0)
		return ret;
	/* Committed: the fence is ours from here on. */
	s->fence = acquire_fence;
	if (status == 1)
		fd_clear(&s->fence); /* signalled already: nothing to hand on */
	take_fence(s->fence);
	/* One completed with an error goes to the consumer all the same: the
	 * frame is bad, and its wait on the fence reports why. */
	count_fence_error(q, status);
	s->state = SLOT_QUEUED;
	s->seq = ++q->seq;
	q->stats.queued++;
	pthread_cond_broadcast(&q->queued);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/* A slot goes back towards the producer with `fence` (owned). Under the lock. */
static void
give_back(struct sb_buffer_queue *q, struct slot *s, int fence, int32_t status)
{
	s->fence = fence;
	if (status != 0) {
		if (status < 0)
			sb_warn("buffer queue %p: a release fence completed with an error (%d)",
				(void *)q, status);
		count_fence_error(q, status);
		fd_clear(&s->fence);
	}
	take_fence(s->fence);
	s->state = s->fence >= 0 ? SLOT_RELEASED : SLOT_FREE;
	s->seq = ++q->seq;
	wake_producer(q);
}

SB_EXPORT int
sb_buffer_queue_acquire(struct sb_buffer_queue *q, int64_t timeout_ns, unsigned *slot,
			int *acquire_fence)
{
	int64_t deadline;
	int ret = 0;

	if (acquire_fence)
		*acquire_fence = -1;
	if (!q || !slot || !acquire_fence)
		return -EINVAL;
	deadline = sb_deadline_from_timeout(sb_now_ns(), timeout_ns);

	pthread_mutex_lock(&q->lock);
	for (;;) {
		bool mailbox = q->flags & SB_BUFFER_QUEUE_MAILBOX;
		int pick = -1;
		for (unsigned i = 0; i < q->count; i++) {
			const struct slot *s = &q->slots[i];
			if (s->state != SLOT_QUEUED)
				continue;
			if (pick < 0 || (mailbox ? s->seq > q->slots[pick].seq
						 : s->seq < q->slots[pick].seq))
				pick = (int)i;
		}
		if (pick >= 0) {
			if (mailbox) {
				/* The older frames are dropped; the producer may still
				 * be writing them, so their acquire fence is what a
				 * new write has to wait for. */
				for (unsigned i = 0; i < q->count; i++) {
					struct slot *s = &q->slots[i];
					if (s->state != SLOT_QUEUED || (int)i == pick)
						continue;
					int fence = fd_move(&s->fence);
					int status = fence >= 0 ? fence_state(fence) : 1;
					give_back(q, s, fence, status);
					q->stats.dropped++;
				}
			}
			struct slot *s = &q->slots[pick];
			s->state = SLOT_ACQUIRED;
			*acquire_fence = fd_move(&s->fence);
			*slot = (unsigned)pick;
			q->stats.acquired++;
			break;
		}
		if (q->closed) {
			ret = -EPIPE;
			break;
		}
		if (deadline == INT64_MAX) {
			pthread_cond_wait(&q->queued, &q->lock);
			continue;
		}
		if (sb_deadline_remaining(sb_now_ns(), deadline) == 0) {
			ret = -ETIME;
			break;
		}
		struct timespec ts = { .tv_sec = deadline / 1000000000,
				       .tv_nsec = deadline % 1000000000 };
		pthread_cond_timedwait(&q->queued, &q->lock, &ts);
	}
	pthread_mutex_unlock(&q->lock);
	return ret;
}

SB_EXPORT int
sb_buffer_queue_release(struct sb_buffer_queue *q, unsigned slot, int release_fence)
{
	struct slot *s;
	int32_t status;
	int ret;

	ret = slot_lock(q, slot, SLOT_ACQUIRED, release_fence, &status, &s);
	if (ret < 0)
		return ret;
	give_back(q, s, release_fence, status);
	q->stats.released++;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

SB_EXPORT int
sb_buffer_queue_release_dmabuf(struct sb_buffer_queue *q, unsigned slot)
{
	int fence = -1;
	int32_t status = 1;
	int ret;

	if (!q || slot >= q->count)
		return -EINVAL;
	pthread_mutex_lock(&q->lock);
	struct slot *s = &q->slots[slot];
	if (s->state != SLOT_ACQUIRED || s->dmabuf < 0) {
		pthread_mutex_unlock(&q->lock);
		return -EINVAL;
	}
	/* Everything a new writer would wait for: the readers and writers now. */
	ret = sb_dmabuf_export_sync_file(s->dmabuf, SB_ACCESS_WRITE, &fence);
	if (ret == 0)
		ret = sb_sync_file_check(fence, &status, NULL);
	if (ret < 0) {
		fd_clear(&fence);
		pthread_mutex_unlock(&q->lock);
		return ret;
	}
	give_back(q, s, fence, status);
	q->stats.released++;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

SB_EXPORT int
sb_buffer_queue_get_stats(struct sb_buffer_queue *q, struct sb_buffer_queue_stats *stats)
{
	if (!q || !stats)
		return -EINVAL;
	pthread_mutex_lock(&q->lock);
	*stats = q->stats;
	pthread_mutex_unlock(&q->lock);
	return 0;
}
