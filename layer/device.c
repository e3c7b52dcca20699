/* SPDX-License-Identifier: MIT */
/*
 * The instance and device store (global maps keyed by dispatch key, under
 * one lock, with a lock-free one-entry cache for the device lookup on every
 * call) and each device's own state: its dispatch table, lock and maps.
 */
#include "device.h"

#include <errno.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include <syncbridge/common.h>

#include "util.h"

static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sbl_map instances; /* dispatch key → struct sbl_instance */
static struct sbl_map devices;   /* dispatch key → struct sbl_device */

const char *
sbl_mode_name(enum sbl_mode mode)
{
	switch (mode) {
	case SBL_MODE_OFF:
		return "off";
	case SBL_MODE_TRANSFERS:
		return "transfers";
	case SBL_MODE_ALL:
		return "all";
	}
	return "?";
}

/*
 * SYNCBRIDGE_DISABLE has a value, unlike the manifest's disable_environment
 * (NO_SYNCBRIDGE), which the loader tests for presence only: 1|true|yes|on
 * turn the layer into pure pass-through, 0|false|no|off|empty do not (so
 * SYNCBRIDGE_DISABLE=0 can turn it back on for one app). Anything else still
 * disables, as any value did before the variable had values, and warns once
 * per process: a typo should not silently switch the bridge on. The same
 * reader as the EGL and PipeWire bridges and the buffer queue
 * (sb_env_get_bool(), docs/core.md "Environment").
 */
static bool
disabled_from_env(void)
{
	return sb_env_get_bool("SYNCBRIDGE_DISABLE", false);
}

/* SYNCBRIDGE_MODE: transfers (default) | all | off. */
enum sbl_mode
sbl_mode_from_env(void)
{
	if (disabled_from_env())
		return SBL_MODE_OFF;

	const char *m = getenv("SYNCBRIDGE_MODE");
	if (!m || !*m || strcmp(m, "transfers") == 0)
		return SBL_MODE_TRANSFERS;
	if (strcmp(m, "all") == 0)
		return SBL_MODE_ALL;
	if (strcmp(m, "off") == 0)
		return SBL_MODE_OFF;
	sb_warn("layer: SYNCBRIDGE_MODE=%s is not transfers|all|off (caller); using transfers", m);
	return SBL_MODE_TRANSFERS;
}

bool
sbl_device_warn_once(struct sbl_device *dev, enum sbl_warn bit)
{
	return !(atomic_fetch_or(&dev->warned, (unsigned)bit) & (unsigned)bit);
}

void
sbl_device_warn_untracked(struct sbl_device *dev, const char *what)
{
	if (sbl_device_warn_once(dev, SBL_WARN_TRACK))
		sb_warn("layer: %s: out of memory (ours); that resource is not synchronised", what);
}

bool
sbl_array_grow(void **array, uint32_t *capacity, uint32_t need, size_t elem)
{
	if (need <= *capacity)
		return true;
	uint32_t cap = *capacity ? *capacity : 8;
	while (cap < need)
		cap *= 2;
	void *p = realloc(*array, cap * elem);
	if (!p)
		return false;
	*array = p;
	*capacity = cap;
	return true;
}

/* ------------------------------------------------------------------------ */
/* Instances                                                                 */

/* obj in map (instances or devices) under its dispatch key. */
static int
map_add(struct sbl_map *map, void *key, void *obj)
{
	pthread_mutex_lock(&global_lock);
	int ret = sbl_map_put(map, (uint64_t)(uintptr_t)key, obj);
	pthread_mutex_unlock(&global_lock);
	return ret;
}

/*
 * Under global_lock: the object of dispatchable's key, taken out of map; the
 * map's storage goes with its last object (nothing left behind at unload).
 */
static void *
map_take_locked(struct sbl_map *map, const void *dispatchable)
{
	void *obj = sbl_map_remove(map, (uint64_t)(uintptr_t)sbl_dispatch_key(dispatchable));

	if (map->count == 0)
		sbl_map_finish(map);
	return obj;
}

int
sbl_instance_add(struct sbl_instance *inst)
{
	return map_add(&instances, inst->key, inst);
}

struct sbl_instance *
sbl_instance_remove(const void *dispatchable)
{
	pthread_mutex_lock(&global_lock);
	struct sbl_instance *inst = map_take_locked(&instances, dispatchable);
	pthread_mutex_unlock(&global_lock);
	return inst;
}

struct sbl_instance *
sbl_instance_lookup(const void *dispatchable)
{
	pthread_mutex_lock(&global_lock);
	struct sbl_instance *inst =
		sbl_map_get(&instances, (uint64_t)(uintptr_t)sbl_dispatch_key(dispatchable));
	pthread_mutex_unlock(&global_lock);
	return inst;
}

/* ------------------------------------------------------------------------ */
/* The device lookup                                                         */

/*
 * The last device looked up, so that the common case (one device, every call
 * from its queues and command buffers) takes no lock: a seqlock-protected
 * pair (key, device), written only under global_lock. A reader returns the
 * device only when the pair it read was consistent and its key is the
 * caller's. That pointer is valid to use without the lock because the caller
 * holds a child of that very device, and vkDestroyDevice's valid usage says
 * "All child objects created on device must have been destroyed prior to
 * destroying device" and "Host access to device must be externally
 * synchronized": the app may not destroy the device while it calls us with
 * one of its children. sbl_device_remove clears the pair (under global_lock)
 * before the device is freed, so a device created later at the same address
 * or with the same key is never confused with it. The key is compared from
 * the pair, never read through the (possibly freed) device pointer: another
 * thread may be destroying a different device that is still in the cache.
 */
static atomic_uint cache_seq; /* odd while a writer changes the pair */
static _Atomic(uintptr_t) cache_key;
static _Atomic(struct sbl_device *) cache_dev;

/* Under global_lock. */
static void
cache_set(uintptr_t key, struct sbl_device *dev)
{
	unsigned seq = atomic_load_explicit(&cache_seq, memory_order_relaxed);
	/* No fences (ThreadSanitizer does not model them, and GCC refuses them
	 * under -fsanitize=thread): the pair is stored with release, so a reader
	 * that acquires the new key or device also sees the odd count before it.
	 * On x86 these are plain moves. */
	atomic_store_explicit(&cache_seq, seq + 1, memory_order_relaxed);
	atomic_store_explicit(&cache_key, key, memory_order_release);
	atomic_store_explicit(&cache_dev, dev, memory_order_release);
	atomic_store_explicit(&cache_seq, seq + 2, memory_order_release);
}

static struct sbl_device *
cache_get(uintptr_t key)
{
	unsigned seq = atomic_load_explicit(&cache_seq, memory_order_acquire);
	if (seq & 1)
		return NULL;
	/* Acquire loads: the count's second read cannot move above them. */
	uintptr_t k = atomic_load_explicit(&cache_key, memory_order_acquire);
	struct sbl_device *dev = atomic_load_explicit(&cache_dev, memory_order_acquire);
	if (atomic_load_explicit(&cache_seq, memory_order_relaxed) != seq || k != key)
		return NULL;
	return dev;
}

struct sbl_device *
sbl_device_lookup(const void *dispatchable)
{
	uintptr_t key = (uintptr_t)sbl_dispatch_key(dispatchable);
	struct sbl_device *dev = cache_get(key);
	if (dev)
		return dev;

	pthread_mutex_lock(&global_lock);
	dev = sbl_map_get(&devices, (uint64_t)key);
	if (dev)
		cache_set(key, dev);
	pthread_mutex_unlock(&global_lock);
	return dev;
}

int
sbl_device_add(struct sbl_device *dev)
{
	return map_add(&devices, dev->key, dev);
}

struct sbl_device *
sbl_device_remove(const void *dispatchable)
{
	pthread_mutex_lock(&global_lock);
	struct sbl_device *dev = map_take_locked(&devices, dispatchable);
	if (dev && atomic_load_explicit(&cache_dev, memory_order_relaxed) == dev)
		cache_set(0, NULL); /* see sbl_device_lookup */
	pthread_mutex_unlock(&global_lock);
	return dev;
}

/* ------------------------------------------------------------------------ */
/* A device's own state                                                      */

struct sbl_device *
sbl_device_create(VkPhysicalDevice physical, PFN_vkGetDeviceProcAddr next_gdpa, enum sbl_mode mode)
{
	struct sbl_device *dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->physical = physical;
	dev->next_gdpa = next_gdpa;
	dev->mode = mode;
	pthread_mutex_init(&dev->lock, NULL);
	sbl_map_init(&dev->memories);
	sbl_map_init(&dev->buffers);
	sbl_map_init(&dev->images);
	sbl_map_init(&dev->cmds);
	sbl_map_init(&dev->timelines);
	sbl_map_init(&dev->binary_pending);
	atomic_init(&dev->xfer_cmds, 0);
	atomic_init(&dev->timeline_count, 0);
	return dev;
}

void
sbl_device_load(struct sbl_device *dev, VkDevice handle)
{
	PFN_vkGetDeviceProcAddr gdpa = dev->next_gdpa;

	dev->handle = handle;
	dev->key = sbl_dispatch_key(handle);
#define GET(name) dev->name = (PFN_vk##name)gdpa(handle, "vk" #name)
#define GET_ALIAS(field, type, name) dev->field = (type)gdpa(handle, name)
	GET(DestroyDevice);
	GET(AllocateMemory);
	GET(FreeMemory);
	GET(GetMemoryFdKHR);
	GET(BindBufferMemory);
	GET(BindBufferMemory2);
	GET_ALIAS(BindBufferMemory2KHR, PFN_vkBindBufferMemory2, "vkBindBufferMemory2KHR");
	GET(BindImageMemory);
	GET(BindImageMemory2);
	GET_ALIAS(BindImageMemory2KHR, PFN_vkBindImageMemory2, "vkBindImageMemory2KHR");
	GET(DestroyBuffer);
	GET(DestroyImage);
	GET(AllocateCommandBuffers);
	GET(FreeCommandBuffers);
	GET(BeginCommandBuffer);
	GET(ResetCommandBuffer);
	GET(ResetCommandPool);
	GET(DestroyCommandPool);
	GET(CmdPipelineBarrier);
	GET(CmdPipelineBarrier2);
	GET_ALIAS(CmdPipelineBarrier2KHR, PFN_vkCmdPipelineBarrier2, "vkCmdPipelineBarrier2KHR");
	GET(CmdExecuteCommands);
	GET(QueueSubmit);
	GET(QueueSubmit2);
	GET_ALIAS(QueueSubmit2KHR, PFN_vkQueueSubmit2, "vkQueueSubmit2KHR");
	GET(QueueWaitIdle);
	GET(CreateSemaphore);
	GET(DestroySemaphore);
	GET(ImportSemaphoreFdKHR);
	GET(GetSemaphoreFdKHR);
	GET(CreateFence);
	GET(DestroyFence);
	GET(GetFenceStatus);
	GET(ResetFences);
	GET(WaitForFences);
	GET(SignalSemaphore);
	GET_ALIAS(SignalSemaphoreKHR, PFN_vkSignalSemaphore, "vkSignalSemaphoreKHR");
	GET(GetSemaphoreCounterValue);
	if (!dev->GetSemaphoreCounterValue)
		GET_ALIAS(GetSemaphoreCounterValue, PFN_vkGetSemaphoreCounterValue,
			  "vkGetSemaphoreCounterValueKHR");
	GET(QueueBindSparse);
#undef GET
#undef GET_ALIAS
}

void
sbl_device_destroy(struct sbl_device *dev)
{
	if (!dev)
		return;
	sbl_map_finish(&dev->cmds);
	sbl_map_finish(&dev->images);
	sbl_map_finish(&dev->buffers);
	sbl_map_finish(&dev->memories);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}
