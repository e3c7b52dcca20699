/* SPDX-License-Identifier: MIT */
/*
 * VK_LAYER_SYNCBRIDGE_implicit_sync — the bottom of the layer: the instance
 * and device store and the next layer's entry points (dispatch tables).
 *
 * The layer's files, bottom to top (each includes and calls only the ones
 * below it):
 *
 *   map        the side-table hash map
 *   venus      the driver option asked of Mesa's venus (pending fence exports)
 *   device     instances, devices, dispatch tables, the device lock
 *   memory     dma-buf memories, the buffers and images bound to them
 *   track      command buffers: the ownership transfers they record
 *   pool       the device's semaphore and fence pools
 *   batch      one batch's acquires and releases: the kernel fences
 *   sems       a batch's semaphore arrays as the app passed them
 *   resolve    which waits have their signal submitted; releases deferred
 *              until they do (the app's semaphores, vkSignalSemaphore)
 *   build      the one builder: the app's batches with our semaphores added
 *   submit     vkQueueSubmit / vkQueueSubmit2
 *   layer      the loader interface: negotiate, proc addresses, create and
 *              destroy instances and devices
 *
 * No handle is wrapped. State lives in side tables:
 *  - instances and devices in global maps keyed by the dispatch key (the
 *    loader's dispatch-table pointer stored in the first word of every
 *    dispatchable handle; physical devices share their instance's key,
 *    queues and command buffers their device's);
 *  - per device, maps keyed by handle (memory, buffers, images, command
 *    buffers), all under the device's mutex.
 */
#ifndef SBL_DEVICE_H
#define SBL_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vulkan/vulkan.h>
#include <vulkan/vk_layer.h>

#include "log.h"
#include "map.h"

#define SBL_LAYER_NAME "VK_LAYER_SYNCBRIDGE_implicit_sync"

enum sbl_mode {
	SBL_MODE_OFF,       /* pure pass-through */
	SBL_MODE_TRANSFERS, /* fences at FOREIGN/EXTERNAL ownership transfers (default) */
	SBL_MODE_ALL,       /* every submit waits on and fences every dma-buf memory */
};

const char *sbl_mode_name(enum sbl_mode mode);
/* SYNCBRIDGE_DISABLE / SYNCBRIDGE_MODE, read at vkCreateInstance. */
enum sbl_mode sbl_mode_from_env(void);

struct sbl_instance {
	void *key;
	VkInstance handle;
	PFN_vkGetInstanceProcAddr next_gipa;
	PFN_vkDestroyInstance DestroyInstance;
	PFN_vkEnumerateDeviceExtensionProperties EnumerateDeviceExtensionProperties;
	PFN_vkGetPhysicalDeviceExternalSemaphoreProperties
		GetPhysicalDeviceExternalSemaphoreProperties;
	PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties;
	uint32_t api_version; /* the app's VkApplicationInfo::apiVersion (1.0 if none) */
	enum sbl_mode mode;   /* from the environment at vkCreateInstance */
};

struct sbl_inflight; /* pool.h */
struct sbl_deferred; /* resolve.c */

struct sbl_device {
	void *key;
	VkDevice handle;
	VkPhysicalDevice physical;
	enum sbl_mode mode; /* SBL_MODE_OFF when the driver lacks what we need */

	/* The next layer's (or driver's) entry points. */
	PFN_vkGetDeviceProcAddr next_gdpa;
	PFN_vkDestroyDevice DestroyDevice;
	PFN_vkAllocateMemory AllocateMemory;
	PFN_vkFreeMemory FreeMemory;
	PFN_vkGetMemoryFdKHR GetMemoryFdKHR;
	PFN_vkBindBufferMemory BindBufferMemory;
	PFN_vkBindBufferMemory2 BindBufferMemory2;
	PFN_vkBindBufferMemory2 BindBufferMemory2KHR;
	PFN_vkBindImageMemory BindImageMemory;
	PFN_vkBindImageMemory2 BindImageMemory2;
	PFN_vkBindImageMemory2 BindImageMemory2KHR;
	PFN_vkDestroyBuffer DestroyBuffer;
	PFN_vkDestroyImage DestroyImage;
	PFN_vkAllocateCommandBuffers AllocateCommandBuffers;
	PFN_vkFreeCommandBuffers FreeCommandBuffers;
	PFN_vkBeginCommandBuffer BeginCommandBuffer;
	PFN_vkResetCommandBuffer ResetCommandBuffer;
	PFN_vkResetCommandPool ResetCommandPool;
	PFN_vkDestroyCommandPool DestroyCommandPool;
	PFN_vkCmdPipelineBarrier CmdPipelineBarrier;
	PFN_vkCmdPipelineBarrier2 CmdPipelineBarrier2;
	PFN_vkCmdPipelineBarrier2 CmdPipelineBarrier2KHR;
	PFN_vkCmdExecuteCommands CmdExecuteCommands;
	PFN_vkQueueSubmit QueueSubmit;
	PFN_vkQueueSubmit2 QueueSubmit2;
	PFN_vkQueueSubmit2 QueueSubmit2KHR;
	PFN_vkQueueWaitIdle QueueWaitIdle;
	PFN_vkCreateSemaphore CreateSemaphore;
	PFN_vkDestroySemaphore DestroySemaphore;
	PFN_vkImportSemaphoreFdKHR ImportSemaphoreFdKHR;
	PFN_vkGetSemaphoreFdKHR GetSemaphoreFdKHR;
	PFN_vkCreateFence CreateFence;
	PFN_vkDestroyFence DestroyFence;
	PFN_vkGetFenceStatus GetFenceStatus;
	PFN_vkResetFences ResetFences;
	PFN_vkWaitForFences WaitForFences;
	PFN_vkSignalSemaphore SignalSemaphore;
	PFN_vkSignalSemaphore SignalSemaphoreKHR;
	PFN_vkGetSemaphoreCounterValue GetSemaphoreCounterValue; /* or its KHR alias */
	PFN_vkQueueBindSparse QueueBindSparse;

	pthread_mutex_t lock; /* guards everything below */
	/* memory.c */
	struct sbl_map memories; /* VkDeviceMemory → struct sbl_memory */
	struct sbl_map buffers;  /* VkBuffer → struct sbl_memory (referenced) */
	struct sbl_map images;   /* VkImage → struct sbl_image */
	/* track.c */
	struct sbl_map cmds;     /* VkCommandBuffer → struct sbl_cmd */
	/* How many entries of cmds hold a transfer: changed only under lock,
	 * read without it by the submit's fast path (submit.c, any_transfer). */
	atomic_uint xfer_cmds;
	/* pool.c */
	VkSemaphore *sem_pool;   /* unsignalled, exportable SYNC_FD semaphores */
	uint32_t sem_pool_count, sem_pool_capacity;
	VkFence *fence_pool;     /* unsignalled fences */
	uint32_t fence_pool_count, fence_pool_capacity;
	struct sbl_inflight *inflight;
	uint32_t inflight_count, inflight_capacity;
	/* resolve.c */
	struct sbl_map timelines;      /* the app's timeline VkSemaphore → struct sbl_timeline */
	/* binary VkSemaphore → id of the deferred batch signalling it */
	struct sbl_map binary_pending;
	struct sbl_deferred *deferred; /* batches with an unresolved wait, in submission order */
	uint64_t deferred_next_id;
	/* Timeline signals recorded so far (resolve.c, sbl_resolve_epoch):
	 * written under the lock, read without it before a submit goes down. */
	_Atomic uint64_t timeline_signals;
	/* How many entries timelines has: read without the lock by every
	 * submit (resolve.c, sbl_resolve_active). */
	atomic_uint timeline_count;

	atomic_uint warned; /* SBL_WARN_* bits: each fallback is logged once */
};

enum sbl_warn {
	SBL_WARN_ACQUIRE_EXPORT = 1u << 0,
	SBL_WARN_ACQUIRE_IMPORT = 1u << 1,
	SBL_WARN_RELEASE_EXPORT = 1u << 2,
	SBL_WARN_RELEASE_IMPORT = 1u << 3,
	SBL_WARN_CHAIN = 1u << 4,
	SBL_WARN_POOL = 1u << 5,
	SBL_WARN_TRACK = 1u << 6,
};

/* True the first time `bit` is raised on this device (log once). */
bool sbl_device_warn_once(struct sbl_device *dev, enum sbl_warn bit);

/* Once per device: "what: out of memory (ours); that resource is not synchronised". */
void sbl_device_warn_untracked(struct sbl_device *dev, const char *what);

/* Log a fallback once per device and kind, at the call site's file:line;
 * err: a -errno to name, or 0. */
#define sbl_warn_once(dev, bit, err, msg)                                            \
	do {                                                                         \
		if (sbl_device_warn_once((dev), (bit))) {                            \
			if (err)                                                     \
				sb_log_errno(SB_LOG_WARN, (err), "layer: %s", (msg)); \
			else                                                         \
				sb_warn("layer: %s", (msg));                         \
		}                                                                    \
	} while (0)

/* A device command the layer implements: "vkName" → ours. */
struct sbl_entry {
	const char *name;
	PFN_vkVoidFunction func;
};

#define SBL_ENTRY(name) { "vk" #name, (PFN_vkVoidFunction)name }

static inline void *
sbl_dispatch_key(const void *dispatchable)
{
	return *(void *const *)dispatchable;
}

/*
 * The instance store. sbl_instance_add: 0 or -ENOMEM. sbl_instance_remove
 * takes the instance out of the store and returns it (NULL if unknown); the
 * caller frees it.
 */
int sbl_instance_add(struct sbl_instance *inst);
struct sbl_instance *sbl_instance_remove(const void *dispatchable);
/* Lookups by dispatch key; NULL if unknown. */
struct sbl_instance *sbl_instance_lookup(const void *dispatchable);
struct sbl_device *sbl_device_lookup(const void *dispatchable);

/*
 * A device's own state: sbl_device_create allocates it (mode, lock and empty
 * maps; NULL when out of memory); sbl_device_load binds the driver's device
 * (handle, key, dispatch table); sbl_device_add publishes it (0 or -ENOMEM);
 * sbl_device_remove unpublishes it (NULL if unknown); sbl_device_destroy
 * frees the lock and the maps' tables — the values belong to the files above
 * (sbl_memory_device_finish, sbl_track_device_finish, sbl_pool_device_finish)
 * and must be gone by then. sbl_device_destroy(NULL) is a no-op.
 */
struct sbl_device *sbl_device_create(VkPhysicalDevice physical, PFN_vkGetDeviceProcAddr next_gdpa,
				     enum sbl_mode mode);
void sbl_device_load(struct sbl_device *dev, VkDevice handle);
int sbl_device_add(struct sbl_device *dev);
struct sbl_device *sbl_device_remove(const void *dispatchable);
void sbl_device_destroy(struct sbl_device *dev);

/* Grow *array (of elem-sized entries) to hold need; false when out of memory
 * (the array is unchanged). */
bool sbl_array_grow(void **array, uint32_t *capacity, uint32_t need, size_t elem);

#endif
