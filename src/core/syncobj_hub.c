/* SPDX-License-Identifier: MIT */
/*
 * The syncobj waiter's fallback for kernels without DRM_IOCTL_SYNCOBJ_EVENTFD
 * (< 6.6): one thread ("hub") serves up to HUB_MAX_WAITERS waiters of one DRM
 * fd and wait mode, in one DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT over all their
 * points that returns when any of them signals (no WAIT_ALL; point 0 is a
 * binary wait). It used to be one thread per waiter: 1,000 pending waits
 * were 1,000 threads; now 16.
 *
 * Why not one thread for all: the kernel's wait over n points costs O(n) at
 * every wake (it arms and then removes a callback on each fence), and so
 * does re-arming. Measured in the test guest with 999 other waiters pending
 * (bench-waiters, docs/performance.md figure 3b): one thread for all woke
 * 3.5 ms after the signal (median), the kernel's eventfd path 14 us.
 *
 * The set changes while the thread sleeps in the kernel, so the wait also
 * holds a binary syncobj of the hub's own ("wake"): adding or removing a
 * waiter signals it, the wait returns with it as the first signalled, and
 * the thread resets it and waits again over the new set. Each wait also ends
 * after HUB_SLICE_NS, a bound, not a poll: nothing depends on it.
 *
 * What each waiter sees is what its own thread gave it before: its item's
 * notify called exactly once, when its point signals (materialises, with
 * SB_SYNCOBJ_WAIT_AVAILABLE), or when its wait fails for good, with that
 * error (syncobj_waiter.c keeps it for sb_syncobj_waiter_get_error() and
 * writes the eventfd). A failed wait of the whole set (a handle destroyed,
 * the DRM fd closed) names no culprit, so every item is then asked alone
 * (blame()). The hub sees only struct syncobj_hub_item (syncobj_hub.h): it
 * never calls into the waiter's file, which calls it.
 *
 * fork(): a child has none of the parent's threads, so a hub belongs to the
 * process that made it (pid); the child's waiters get hubs of their own, and
 * a waiter inherited from the parent is left alone by its destroy (its hub
 * has no thread here; the child's copy of it is not freed). hubs_lock is held
 * across fork() (pthread_atfork) so that the child does not inherit it locked.
 *
 * Locking: hubs_lock guards the list of hubs and each hub's refs; a hub's
 * lock guards its items and stop. The thread holds its hub's lock except
 * in the kernel wait; an item is notified only under that lock and only while
 * registered, so sb_syncobj_hub_remove() returning means the thread is done
 * with it.
 */
#include <syncbridge/syncobj.h>

#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "syncobj_internal.h"
#include "syncobj_hub.h"
#include "util.h"

/* Waiters per thread: bounds the O(n) kernel work of each wake (see above). */
#define HUB_MAX_WAITERS 64
/* The longest single kernel wait (a bound only: changes wake the thread). */
#define HUB_SLICE_NS (1000 * 1000 * 1000)
/* After a failed wait that blame() could pin on nobody, or ENOMEM. */
#define HUB_RETRY_NS (5 * 1000 * 1000)

struct hub_entry {
	struct syncobj_hub_item *w;
	uint64_t id;
};

struct syncobj_hub {
	pid_t pid;        /* the process whose thread serves it */
	int drm_fd;       /* borrowed from its waiters, who all use it */
	uint32_t flags;   /* their SB_SYNCOBJ_WAIT_AVAILABLE, the same for all */
	uint32_t wake;    /* our binary syncobj on drm_fd */
	pthread_t thread;
	unsigned refs;    /* waiters not yet destroyed (under hubs_lock) */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a waiter was added, or stop */
	struct hub_entry *entries; /* the waiters still waiting */
	size_t n, cap;
	bool stop;
	struct syncobj_hub *next;
};

static pthread_mutex_t hubs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct syncobj_hub *hubs;
static uint64_t next_id = 1; /* under hubs_lock */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void
fork_prepare(void)
{
	pthread_mutex_lock(&hubs_lock);
}

static void
fork_parent(void)
{
	pthread_mutex_unlock(&hubs_lock);
}

static void
fork_child(void)
{
	pthread_mutex_unlock(&hubs_lock);
}

static void
atfork_register(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Let go of the hub for HUB_RETRY_NS (waiters can come and go meanwhile). Lock held. */
static void
pause_unlocked(struct syncobj_hub *h)
{
	pthread_mutex_unlock(&h->lock);
	nanosleep(&(struct timespec){ .tv_nsec = HUB_RETRY_NS }, NULL);
	pthread_mutex_lock(&h->lock);
}

/* Signal (or reset) the wake syncobj. */
static void
wake_op(struct syncobj_hub *h, unsigned long request)
{
	struct drm_syncobj_array args;

	memset(&args, 0, sizeof(args));
	args.handles = (uint64_t)(uintptr_t)&h->wake;
	args.count_handles = 1;
	sb_drm_call(h->drm_fd, request, &args);
}

/* Any of the points, until deadline_ns; *first is its index. 0, -ETIME or -errno. */
static int
wait_any(struct syncobj_hub *h, uint32_t *handles, uint64_t *points, size_t n,
	 int64_t deadline_ns, uint32_t *first)
{
	struct drm_syncobj_timeline_wait args;
	int ret;

	memset(&args, 0, sizeof(args));
	args.handles = (uint64_t)(uintptr_t)handles;
	args.points = (uint64_t)(uintptr_t)points;
	args.count_handles = (uint32_t)n;
	args.timeout_nsec = deadline_ns;
	args.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
	if (h->flags & SB_SYNCOBJ_WAIT_AVAILABLE)
		args.flags |= DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE;
	/* Not validated again: every waiter's create checked the fd (sb_drm_check_fd()). */
	ret = sb_drm_call(h->drm_fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &args);
	if (ret == 0)
		*first = args.first_signaled;
	return ret;
}

/* The index of entry (w, id) in the hub now, or -1 (fired or removed). Lock held. */
static long
find(const struct syncobj_hub *h, const struct syncobj_hub_item *w, uint64_t id)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->entries[i].w == w && h->entries[i].id == id)
			return (long)i;
	return -1;
}

static void
drop(struct syncobj_hub *h, size_t i)
{
	h->entries[i] = h->entries[--h->n];
}

/* Notify the item at i (with an error, or none) and stop serving it. Lock held. */
static void
fire_at(struct syncobj_hub *h, size_t i, int error)
{
	struct syncobj_hub_item *w = h->entries[i].w;

	drop(h, i);
	w->notify(w, error);
}

/*
 * The wait over the snapshot snap[1..n) returned first (>= 1): fire it, then
 * every other one already signalled, found by waits that only look (each
 * removes the one it found from the snapshot). Lock held.
 */
static void
collect(struct syncobj_hub *h, struct hub_entry *snap, uint32_t *handles, uint64_t *points,
	size_t n, uint32_t first)
{
	while (first >= 1 && first < n) {
		long i = find(h, snap[first].w, snap[first].id);

		if (i >= 0)
			fire_at(h, (size_t)i, 0);
		/* Out of the snapshot: move the last one into its place. */
		n--;
		snap[first] = snap[n];
		handles[first] = handles[n];
		points[first] = points[n];
		if (n <= 1 || wait_any(h, handles + 1, points + 1, n - 1, 0, &first) != 0)
			break;
		first++; /* the look skipped the wake syncobj at 0 */
	}
}

/*
 * The wait over the whole set failed with ret: ask each waiter alone, fire
 * the ones whose wait fails for good (with that error) and the ones that
 * signalled meanwhile. Returns how many were fired. Lock held.
 */
static size_t
blame(struct syncobj_hub *h, int ret)
{
	size_t fired = 0;

	for (size_t i = 0; i < h->n;) {
		struct syncobj_hub_item *w = h->entries[i].w;
		int r = sb_syncobj_wait_until(h->drm_fd, w->handle, w->point, 0, h->flags);

		if (r == -ETIME || r == -ENOMEM) {
			i++;
			continue;
		}
		if (r) /* ENOENT: the syncobj is gone; EBADF/EINVAL: the DRM fd (the caller's) */
			sb_log_errno(SB_LOG_ERROR, r,
				     "syncobj waiter: DRM wait on handle %u point %llu "
				     "failed for good; firing with that error",
				     w->handle, (unsigned long long)w->point);
		fire_at(h, i, r);
		fired++;
	}
	if (!fired)
		sb_log_errno(SB_LOG_DEBUG, ret,
			     "syncobj waiter thread: wait over %zu failed; again", h->n);
	return fired;
}

static void *
hub_thread(void *data)
{
	struct syncobj_hub *h = data;
	struct hub_entry *snap = NULL;
	uint32_t *handles = NULL;
	uint64_t *points = NULL;
	size_t cap = 0;

	pthread_mutex_lock(&h->lock);
	while (!h->stop) {
		size_t n = h->n + 1;
		uint32_t first = 0;
		int ret;

		if (n > cap) {
			size_t ncap = n * 2;
			struct hub_entry *s = realloc(snap, ncap * sizeof(*s));
			uint32_t *hs = s ? realloc(handles, ncap * sizeof(*hs)) : NULL;
			uint64_t *ps = hs ? realloc(points, ncap * sizeof(*ps)) : NULL;

			snap = s ? s : snap;
			handles = hs ? hs : handles;
			points = ps ? ps : points;
			if (!ps) {
				pause_unlocked(h);
				continue;
			}
			cap = ncap;
		}
		handles[0] = h->wake;
		points[0] = 0;
		snap[0] = (struct hub_entry){ NULL, 0 };
		for (size_t i = 0; i < h->n; i++) {
			snap[i + 1] = h->entries[i];
			handles[i + 1] = h->entries[i].w->handle;
			points[i + 1] = h->entries[i].w->point;
		}
		pthread_mutex_unlock(&h->lock);
		ret = wait_any(h, handles, points, n, sb_now_ns() + HUB_SLICE_NS, &first);
		pthread_mutex_lock(&h->lock);

		if (ret == 0 && first == 0) {
			/* The set changed (or stop): look again. */
			wake_op(h, DRM_IOCTL_SYNCOBJ_RESET);
		} else if (ret == 0) {
			collect(h, snap, handles, points, n, first);
		} else if (ret == -ENOMEM) {
			/* The kernel's allocation for this wait failed; the points can
			 * still signal. */
			sb_log_errno(SB_LOG_WARN, ret,
				     "syncobj waiter thread: DRM wait (kernel); retrying");
			pause_unlocked(h);
		} else if (ret != -ETIME && !blame(h, ret)) {
			/* Nobody to blame: the set changed under the wait, or our own
			 * syncobj failed (the DRM fd is gone). With nobody waiting,
			 * sleep until a waiter comes or the hub stops. */
			if (h->n == 0 && !h->stop)
				pthread_cond_wait(&h->cond, &h->lock);
			else
				pause_unlocked(h);
		}
	}
	pthread_mutex_unlock(&h->lock);
	free(snap);
	free(handles);
	free(points);
	return NULL;
}

static void
hub_free(struct syncobj_hub *h)
{
	if (h->wake)
		sb_syncobj_destroy(h->drm_fd, h->wake);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
	free(h->entries);
	free(h);
}

/*
 * Take a hub with no waiter left out of the list and tell its thread to stop.
 * hubs_lock held; the caller then joins the thread and frees the hub (with
 * or without hubs_lock: the thread never takes it).
 */
static void
hub_retire(struct syncobj_hub *h)
{
	struct syncobj_hub **p;

	for (p = &hubs; *p != h; p = &(*p)->next)
		;
	*p = h->next;
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	wake_op(h, DRM_IOCTL_SYNCOBJ_SIGNAL);
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

/* A new hub with its thread, linked. hubs_lock held. */
static int
hub_create(int drm_fd, uint32_t flags, struct syncobj_hub **out)
{
	struct syncobj_hub *h = calloc(1, sizeof(*h));
	int ret;

	if (!h)
		return -ENOMEM;
	h->pid = getpid();
	h->drm_fd = drm_fd;
	h->flags = flags;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	ret = sb_syncobj_create(drm_fd, &h->wake);
	if (ret)
		goto err_free;
	ret = pthread_create(&h->thread, NULL, hub_thread, h);
	if (ret) {
		ret = -EAGAIN;
		goto err_free;
	}
	h->next = hubs;
	hubs = h;
	*out = h;
	return 0;

err_free:
	hub_free(h);
	return ret;
}

int
sb_syncobj_hub_add(struct syncobj_hub_item *w)
{
	struct syncobj_hub *h;
	pid_t pid = getpid();
	int ret = 0;

	pthread_once(&atfork_once, atfork_register);
	pthread_mutex_lock(&hubs_lock);
	for (h = hubs; h; h = h->next)
		if (h->pid == pid && h->drm_fd == w->drm_fd && h->flags == w->flags &&
		    h->refs < HUB_MAX_WAITERS)
			break;
	if (!h)
		ret = hub_create(w->drm_fd, w->flags, &h);
	if (ret)
		goto out;
	pthread_mutex_lock(&h->lock);
	if (h->n == h->cap) {
		size_t ncap = h->cap ? h->cap * 2 : 16;
		struct hub_entry *e = realloc(h->entries, ncap * sizeof(*e));

		if (!e) {
			pthread_mutex_unlock(&h->lock);
			ret = -ENOMEM;
			goto out_maybe_stop;
		}
		h->entries = e;
		h->cap = ncap;
	}
	w->hub = h;
	w->id = next_id++;
	h->entries[h->n++] = (struct hub_entry){ w, w->id };
	h->refs++;
	wake_op(h, DRM_IOCTL_SYNCOBJ_SIGNAL);
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	goto out;

out_maybe_stop:
	/* A hub made for this waiter alone, which it cannot use: take it down. */
	if (h->refs == 0) {
		hub_retire(h);
		pthread_join(h->thread, NULL);
		hub_free(h);
	}
out:
	pthread_mutex_unlock(&hubs_lock);
	return ret;
}

void
sb_syncobj_hub_remove(struct syncobj_hub_item *w)
{
	struct syncobj_hub *h = w->hub;
	long i;

	if (!h)
		return;
	w->hub = NULL;
	/* Inherited across fork(): no thread serves it here, and its lock may
	 * have been taken when the parent forked. Let it be. */
	if (h->pid != getpid())
		return;
	pthread_mutex_lock(&hubs_lock);
	if (--h->refs == 0) {
		hub_retire(h);
		pthread_mutex_unlock(&hubs_lock);
		pthread_join(h->thread, NULL);
		hub_free(h);
		return;
	}
	pthread_mutex_lock(&h->lock);
	i = find(h, w, w->id);
	if (i >= 0) {
		drop(h, (size_t)i);
		/* Waiting on a handle the caller may destroy next: look again without it. */
		wake_op(h, DRM_IOCTL_SYNCOBJ_SIGNAL);
	}
	pthread_mutex_unlock(&h->lock);
	pthread_mutex_unlock(&hubs_lock);
}
