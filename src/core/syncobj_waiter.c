/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous syncobj waiter (include/syncbridge/syncobj.h): an eventfd
 * the kernel writes when the point signals (DRM_IOCTL_SYNCOBJ_EVENTFD, Linux
 * 6.6), or, before that, the shared fallback thread of syncobj_hub.c, which
 * tells us through the notify callback of the item we embed.
 */
#include <syncbridge/syncobj.h>

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "syncobj_internal.h"
#include "syncobj_hub.h"
#include "util.h"

struct sb_syncobj_waiter {
	struct syncobj_hub_item item; /* the DRM fd (borrowed), handle, point, flags */
	int event_fd; /* owned; what the caller polls */
	bool uses_eventfd;
	atomic_int error; /* 0, or why the wait failed (fallback path) */
};

/* Write the waiter's eventfd (once: the callers make sure). */
static void
fire(struct sb_syncobj_waiter *w)
{
	uint64_t one = 1;

	if (write(w->event_fd, &one, sizeof(one)) != sizeof(one))
		sb_log_errno(SB_LOG_ERROR, errno, "syncobj waiter: eventfd write failed (ours)");
}

/* The hub's word (syncobj_hub.h): the error is published before the eventfd is written. */
static void
hub_notify(struct syncobj_hub_item *item, int error)
{
	struct sb_syncobj_waiter *w =
		(void *)((char *)item - offsetof(struct sb_syncobj_waiter, item));

	if (error)
		atomic_store(&w->error, error);
	fire(w);
}

static bool
eventfd_ioctl_allowed(void)
{
	const char *v = getenv("SYNCBRIDGE_SYNCOBJ_EVENTFD");
	return !(v && strcmp(v, "0") == 0);
}

int
sb_syncobj_waiter_create(int drm_fd, uint32_t handle, uint64_t point, uint32_t flags,
			 struct sb_syncobj_waiter **out)
{
	struct sb_syncobj_waiter *w;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (flags & ~(uint32_t)SB_SYNCOBJ_WAIT_AVAILABLE)
		return -EINVAL;
	ret = sb_drm_check_fd(drm_fd);
	if (ret)
		return ret;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->item.drm_fd = drm_fd;
	w->item.handle = handle;
	w->item.point = point;
	w->item.flags = flags;
	w->item.notify = hub_notify;
	atomic_init(&w->error, 0);

	w->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->event_fd < 0) {
		ret = -errno;
		goto err_free;
	}

	if (eventfd_ioctl_allowed()) {
		struct drm_syncobj_eventfd args;

		memset(&args, 0, sizeof(args));
		args.handle = handle;
		args.point = point;
		args.fd = w->event_fd;
		if (flags & SB_SYNCOBJ_WAIT_AVAILABLE)
			args.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE;
		ret = sb_drm_call(drm_fd, DRM_IOCTL_SYNCOBJ_EVENTFD, &args); /* fd checked above */
		if (ret == 0) {
			w->uses_eventfd = true;
			*out = w;
			return 0;
		}
		/*
		 * Before 6.6 the core DRM ioctl table ends earlier and an unknown
		 * core ioctl is EINVAL (ENOTTY mapped to EINVAL): fall back. A
		 * missing handle or a driver without syncobjs is final.
		 */
		if (ret != -EINVAL)
			goto err_close_eventfd;
		sb_debug("DRM_IOCTL_SYNCOBJ_EVENTFD unavailable; using the shared waiter thread");
	}

	/* Validate the handle (and catch an already signalled point) first. */
	ret = sb_syncobj_wait_until(drm_fd, handle, point, 0, flags);
	if (ret == 0) {
		fire(w);
		*out = w;
		return 0;
	}
	if (ret != -ETIME)
		goto err_close_eventfd;
	ret = sb_syncobj_hub_add(&w->item);
	if (ret)
		goto err_close_eventfd;
	*out = w;
	return 0;

err_close_eventfd:
	fd_clear(&w->event_fd);
err_free:
	free(w);
	return ret;
}

int
sb_syncobj_waiter_get_fd(const struct sb_syncobj_waiter *waiter)
{
	return waiter->event_fd;
}

bool
sb_syncobj_waiter_uses_eventfd(const struct sb_syncobj_waiter *waiter)
{
	return waiter && waiter->uses_eventfd;
}

int
sb_syncobj_waiter_get_error(const struct sb_syncobj_waiter *waiter)
{
	return atomic_load(&((struct sb_syncobj_waiter *)waiter)->error);
}

void
sb_syncobj_waiter_destroy(struct sb_syncobj_waiter *waiter)
{
	if (!waiter)
		return;
	sb_syncobj_hub_remove(&waiter->item);
	/*
	 * With the kernel eventfd path, closing our fd is enough: the kernel
	 * holds its own eventfd_ctx reference until the point fires or the
	 * syncobj is destroyed, and signalling an unreferenced-by-us eventfd is
	 * harmless.
	 */
	fd_clear(&waiter->event_fd);
	free(waiter);
}
