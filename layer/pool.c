/* SPDX-License-Identifier: MIT */
/*
 * The layer's own semaphores and fences, pooled per device.
 *
 * Semaphore life cycle: a release semaphore goes back to the pool right after
 * its SYNC_FD export ("exporting ... has the same side effects on the source
 * semaphore's payload as executing a semaphore wait operation", so it is
 * unsignalled again). Not one exported after the signal its batch waited
 * for (a deferred release, or one whose timeline was signalled while its
 * submit went down): that one is destroyed once its batch is done
 * (resolve.c, retire_signal says why). An acquire semaphore is in use until its wait has
 * executed: it rides with a fence of ours (the submit's own fence slot when
 * the app passed none, else an extra empty submit) and returns to the pool
 * once that fence signals (sbl_inflight_retire_locked).
 */
#include "pool.h"

#include <stdlib.h>

/* Ours: binary semaphores whose payload can be exported and imported as SYNC_FD. */
static const VkExportSemaphoreCreateInfo export_sync_fd = {
	.sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
	.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
};
static const VkSemaphoreCreateInfo semaphore_info = {
	.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
	.pNext = &export_sync_fd,
};

VkSemaphore
sbl_semaphore_get(struct sbl_device *dev)
{
	VkSemaphore sem = VK_NULL_HANDLE;

	pthread_mutex_lock(&dev->lock);
	if (dev->sem_pool_count)
		sem = dev->sem_pool[--dev->sem_pool_count];
	pthread_mutex_unlock(&dev->lock);
	if (sem)
		return sem;

	if (dev->CreateSemaphore(dev->handle, &semaphore_info, NULL, &sem) != VK_SUCCESS)
		return VK_NULL_HANDLE;
	return sem;
}

void
sbl_semaphore_put(struct sbl_device *dev, VkSemaphore sem)
{
	if (!sem)
		return;
	pthread_mutex_lock(&dev->lock);
	bool ok = sbl_array_grow((void **)&dev->sem_pool, &dev->sem_pool_capacity,
				 dev->sem_pool_count + 1, sizeof(VkSemaphore));
	if (ok)
		dev->sem_pool[dev->sem_pool_count++] = sem;
	pthread_mutex_unlock(&dev->lock);
	if (!ok)
		dev->DestroySemaphore(dev->handle, sem, NULL);
}

static VkFence
fence_create(struct sbl_device *dev)
{
	VkFenceCreateInfo info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	VkFence fence = VK_NULL_HANDLE;

	if (dev->CreateFence(dev->handle, &info, NULL, &fence) != VK_SUCCESS)
		return VK_NULL_HANDLE;
	return fence;
}

VkFence
sbl_fence_get(struct sbl_device *dev)
{
	VkFence fence = VK_NULL_HANDLE;

	pthread_mutex_lock(&dev->lock);
	if (dev->fence_pool_count)
		fence = dev->fence_pool[--dev->fence_pool_count];
	pthread_mutex_unlock(&dev->lock);
	return fence ? fence : fence_create(dev);
}

VkFence
sbl_fence_get_locked(struct sbl_device *dev)
{
	if (dev->fence_pool_count)
		return dev->fence_pool[--dev->fence_pool_count];
	return fence_create(dev);
}

void
sbl_inflight_retire_locked(struct sbl_device *dev)
{
	for (uint32_t i = 0; i < dev->inflight_count;) {
		struct sbl_inflight *f = &dev->inflight[i];
		if (dev->GetFenceStatus(dev->handle, f->fence) != VK_SUCCESS) {
			i++;
			continue;
		}
		bool ok = sbl_array_grow((void **)&dev->sem_pool, &dev->sem_pool_capacity,
					 dev->sem_pool_count + f->count, sizeof(VkSemaphore));
		for (uint32_t s = 0; s < f->count; s++) {
			if (ok && !f->destroy)
				dev->sem_pool[dev->sem_pool_count++] = f->semaphores[s];
			else
				dev->DestroySemaphore(dev->handle, f->semaphores[s], NULL);
		}
		free(f->semaphores);
		if (dev->ResetFences(dev->handle, 1, &f->fence) == VK_SUCCESS &&
		    sbl_array_grow((void **)&dev->fence_pool, &dev->fence_pool_capacity,
				   dev->fence_pool_count + 1, sizeof(VkFence)))
			dev->fence_pool[dev->fence_pool_count++] = f->fence;
		else
			dev->DestroyFence(dev->handle, f->fence, NULL);
		*f = dev->inflight[--dev->inflight_count];
	}
}

bool
sbl_inflight_add(struct sbl_device *dev, VkFence fence, VkSemaphore *sems, uint32_t count,
		 bool destroy)
{
	pthread_mutex_lock(&dev->lock);
	bool ok = sbl_array_grow((void **)&dev->inflight, &dev->inflight_capacity,
				 dev->inflight_count + 1, sizeof(struct sbl_inflight));
	if (ok)
		dev->inflight[dev->inflight_count++] = (struct sbl_inflight){
			.fence = fence, .semaphores = sems, .count = count, .destroy = destroy,
		};
	pthread_mutex_unlock(&dev->lock);
	return ok;
}

void
sbl_pool_device_finish(struct sbl_device *dev)
{
	for (uint32_t i = 0; i < dev->inflight_count; i++) {
		struct sbl_inflight *f = &dev->inflight[i];
		for (uint32_t s = 0; s < f->count; s++)
			dev->DestroySemaphore(dev->handle, f->semaphores[s], NULL);
		free(f->semaphores);
		dev->DestroyFence(dev->handle, f->fence, NULL);
	}
	for (uint32_t i = 0; i < dev->sem_pool_count; i++)
		dev->DestroySemaphore(dev->handle, dev->sem_pool[i], NULL);
	for (uint32_t i = 0; i < dev->fence_pool_count; i++)
		dev->DestroyFence(dev->handle, dev->fence_pool[i], NULL);
	free(dev->inflight);
	free(dev->sem_pool);
	free(dev->fence_pool);
	dev->inflight = NULL;
	dev->sem_pool = NULL;
	dev->fence_pool = NULL;
	dev->inflight_count = dev->sem_pool_count = dev->fence_pool_count = 0;
}
