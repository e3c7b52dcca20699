/* SPDX-License-Identifier: MIT */
/*
 * The syncobj waiter's fallback thread (syncobj_hub.c), for kernels without
 * DRM_IOCTL_SYNCOBJ_EVENTFD: one thread per DRM fd and wait mode serving
 * every point registered on it. Its user (syncobj_waiter.c) embeds a struct
 * syncobj_hub_item and hears back through item->notify, so calls go one way:
 * the waiter calls the hub, the hub knows nothing of the waiter.
 */
#ifndef SB_SYNCOBJ_HUB_H
#define SB_SYNCOBJ_HUB_H

#include <stdint.h>

struct syncobj_hub;

struct syncobj_hub_item {
	/* Set by the user before sb_syncobj_hub_add(), then left alone. */
	int drm_fd; /* borrowed */
	uint32_t handle;
	uint64_t point;
	uint32_t flags; /* SB_SYNCOBJ_WAIT_AVAILABLE or 0 */
	/*
	 * Called once, from the hub's thread with its lock held, when the point
	 * signals (error 0) or its wait fails for good (-errno); the item is no
	 * longer served afterwards. It must not call back into the hub.
	 */
	void (*notify)(struct syncobj_hub_item *item, int error);

	/* The hub's: the thread serving the item (NULL when none) and its registration. */
	struct syncobj_hub *hub;
	uint64_t id; /* a freed item's address may come back: the id tells them apart */
};

/*
 * Serve item (its point not signalled yet) from the fallback thread of its
 * DRM fd and flags, starting that thread if it is the first. 0, -ENOMEM,
 * -EAGAIN (no thread could be started), or an error creating the thread's
 * own syncobj.
 */
int sb_syncobj_hub_add(struct syncobj_hub_item *item);
/*
 * Stop serving item (a no-op when it is not served); once this returns the
 * thread never touches it again and notify is not called any more.
 */
void sb_syncobj_hub_remove(struct syncobj_hub_item *item);

#endif
