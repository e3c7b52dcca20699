/* SPDX-License-Identifier: MIT */
/*
 * The device's pools of the layer's own semaphores (unsignalled, exportable
 * SYNC_FD) and fences, and the acquire semaphores still in flight with a
 * fence of the layer's (pool.c). Above device.h.
 */
#ifndef SBL_POOL_H
#define SBL_POOL_H

#include "device.h"

/* Our acquire semaphores waiting for a submit to finish with them. */
struct sbl_inflight {
	VkFence fence;
	VkSemaphore *semaphores;
	uint32_t count;
	bool destroy; /* destroy the semaphores once the fence signals, not pool them */
};

/* A pooled (or new) semaphore, or VK_NULL_HANDLE when the driver refuses one. */
VkSemaphore sbl_semaphore_get(struct sbl_device *dev);
/* Return an unsignalled semaphore with no pending operation to the pool
 * (VK_NULL_HANDLE: no-op). */
void sbl_semaphore_put(struct sbl_device *dev, VkSemaphore sem);
/* A pooled (or new) unsignalled fence, or VK_NULL_HANDLE. _locked: under
 * dev->lock (a new fence is then created under it). */
VkFence sbl_fence_get(struct sbl_device *dev);
VkFence sbl_fence_get_locked(struct sbl_device *dev);
/* Hand `count` semaphores (the array is taken over on success) to `fence`,
 * which returns them to the pool once it signals (or, with `destroy`,
 * destroys them); false when out of memory. */
bool sbl_inflight_add(struct sbl_device *dev, VkFence fence, VkSemaphore *sems, uint32_t count,
		      bool destroy);
/* Under dev->lock: move finished in-flight semaphores and fences back to the pools. */
void sbl_inflight_retire_locked(struct sbl_device *dev);
/* With the device gone from the store (and idle): destroy everything pooled
 * or in flight. */
void sbl_pool_device_finish(struct sbl_device *dev);

#endif
