/* SPDX-License-Identifier: MIT */
/*
 * VK_LAYER_SYNCBRIDGE_implicit_sync — private state shared by the layer's
 * files (layer.c: loader interface, instances, devices; track.c: memory,
 * resources and command buffers; submit.c: queue submission).
 *
 * No handle is wrapped. State lives in side tables:
 *  - instances and devices in global maps keyed by the dispatch key (the
 *    loader's dispatch-table pointer stored in the first word of every
 *    dispatchable handle; physical devices share their instance's key,
 *    queues and command buffers their device's);
 *  - per device, maps keyed by handle (memory, buffers, images, command
 *    buffers), all under the device's mutex.
 */
#ifndef SBL_LAYER_H
#define SBL_LAYER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>
#include <vulkan/vk_layer.h>

#include "map.h"

#define SBL_LAYER_NAME "VK_LAYER_SYNCBRIDGE_implicit_sync"

/* Everything in the layer is hidden except the negotiate entry point. */
#define SBL_EXPORT __attribute__((visibility("default")))

enum sbl_mode {
	SBL_MODE_OFF,       /* pure pass-through */
	SBL_MODE_TRANSFERS, /* fences at FOREIGN/EXTERNAL ownership transfers (default) */
	SBL_MODE_ALL,       /* every submit waits on and fences every dma-buf memory */
};

const char *sbl_mode_name(enum sbl_mode mode);

/* What a submit does with a dma-buf. */
enum sbl_xfer_kind {
	SBL_XFER_ACQUIRE, /* from FOREIGN/EXTERNAL: wait for its implicit fences */
	SBL_XFER_RELEASE, /* to FOREIGN/EXTERNAL: attach our fence */
};

struct sbl_instance {
	void *key;
	VkInstance handle;
	PFN_vkGetInstanceProcAddr next_gipa;
	PFN_vkDestroyInstance DestroyInstance;
	PFN_vkEnumerateDeviceExtensionProperties EnumerateDeviceExtensionProperties;
	PFN_vkGetPhysicalDeviceExternalSemaphoreProperties GetPhysicalDeviceExternalSemaphoreProperties;
	PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties;
	uint32_t api_version; /* the app's VkApplicationInfo::apiVersion (1.0 if none) */
	enum sbl_mode mode;   /* from the environment at vkCreateInstance */
};

/* A dma-buf backed VkDeviceMemory. Refcounted: buffers, images and recorded
 * transfers hold references, so the fd stays valid until the last user. */
struct sbl_memory {
	atomic_int refs;
	VkDeviceMemory handle;
	int fd; /* our own dma-buf fd (a dup of the import, or an export) */
};

struct sbl_memory *sbl_memory_ref(struct sbl_memory *mem);
void sbl_memory_unref(struct sbl_memory *mem);

#define SBL_MAX_PLANES 4

struct sbl_image {
	struct sbl_memory *mem[SBL_MAX_PLANES];
};

/* One recorded ownership transfer of a dma-buf memory. */
struct sbl_xfer {
	struct sbl_memory *mem; /* referenced */
	enum sbl_xfer_kind kind;
	int access;             /* enum sb_access */
};

struct sbl_cmd {
	VkCommandPool pool;
	struct sbl_xfer *xfers;
	uint32_t count, capacity;
};

/* Our semaphore pool entry waiting for a submit to finish with it. */
struct sbl_inflight {
	VkFence fence;
	VkSemaphore *semaphores;
	uint32_t count;
};

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

	pthread_mutex_t lock; /* guards everything below */
	struct sbl_map memories; /* VkDeviceMemory → struct sbl_memory */
	struct sbl_map buffers;  /* VkBuffer → struct sbl_memory (referenced) */
	struct sbl_map images;   /* VkImage → struct sbl_image */
	struct sbl_map cmds;     /* VkCommandBuffer → struct sbl_cmd */
	/* How many entries of cmds hold a transfer: changed only under lock,
	 * read without it by the submit's fast path (submit.c, any_transfer). */
	atomic_uint xfer_cmds;
	VkSemaphore *sem_pool;   /* unsignalled, exportable SYNC_FD semaphores */
	uint32_t sem_pool_count, sem_pool_capacity;
	VkFence *fence_pool;     /* unsignalled fences */
	uint32_t fence_pool_count, fence_pool_capacity;
	struct sbl_inflight *inflight;
	uint32_t inflight_count, inflight_capacity;

	atomic_uint warned; /* SBL_WARN_* bits: each fallback is logged once */
	unsigned faults;    /* SBL_FAULT_* bits, for testing the fallbacks */
};

/*
 * Test-only fault injection (SYNCBRIDGE_LAYER_FAULTS=name[,name...]): make the
 * named step fail as if the kernel or driver had refused it, so the tests can
 * prove that each CPU-wait fallback keeps the ordering.
 */
enum sbl_fault {
	SBL_FAULT_ACQUIRE_EXPORT = 1u << 0, /* "acquire-export": DMA_BUF export */
	SBL_FAULT_ACQUIRE_IMPORT = 1u << 1, /* "acquire-import": semaphore import */
	SBL_FAULT_RELEASE_EXPORT = 1u << 2, /* "release-export": semaphore export */
	SBL_FAULT_RELEASE_IMPORT = 1u << 3, /* "release-import": DMA_BUF import */
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

static inline void *
sbl_dispatch_key(const void *dispatchable)
{
	return *(void *const *)dispatchable;
}

/* Lookups by dispatch key; NULL if unknown. */
struct sbl_instance *sbl_instance_lookup(const void *dispatchable);
struct sbl_device *sbl_device_lookup(const void *dispatchable);

/* Whether a recorded access may write (anything not known to be read-only). */
bool sbl_access_writes(VkAccessFlags2 access);

/* track.c: the device's side tables. */
void sbl_device_tables_init(struct sbl_device *dev);
void sbl_device_tables_finish(struct sbl_device *dev);

/* submit.c: the pools. */
void sbl_device_pools_finish(struct sbl_device *dev);

/* Entry points (the names the layer intercepts). */
VKAPI_ATTR VkResult VKAPI_CALL sbl_AllocateMemory(VkDevice device, const VkMemoryAllocateInfo *info,
						  const VkAllocationCallbacks *alloc,
						  VkDeviceMemory *memory);
VKAPI_ATTR void VKAPI_CALL sbl_FreeMemory(VkDevice device, VkDeviceMemory memory,
					  const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL sbl_BindBufferMemory(VkDevice device, VkBuffer buffer,
						    VkDeviceMemory memory, VkDeviceSize offset);
VKAPI_ATTR VkResult VKAPI_CALL sbl_BindBufferMemory2(VkDevice device, uint32_t count,
						     const VkBindBufferMemoryInfo *infos);
VKAPI_ATTR VkResult VKAPI_CALL sbl_BindBufferMemory2KHR(VkDevice device, uint32_t count,
							const VkBindBufferMemoryInfo *infos);
VKAPI_ATTR VkResult VKAPI_CALL sbl_BindImageMemory(VkDevice device, VkImage image,
						   VkDeviceMemory memory, VkDeviceSize offset);
VKAPI_ATTR VkResult VKAPI_CALL sbl_BindImageMemory2(VkDevice device, uint32_t count,
						    const VkBindImageMemoryInfo *infos);
VKAPI_ATTR VkResult VKAPI_CALL sbl_BindImageMemory2KHR(VkDevice device, uint32_t count,
						       const VkBindImageMemoryInfo *infos);
VKAPI_ATTR void VKAPI_CALL sbl_DestroyBuffer(VkDevice device, VkBuffer buffer,
					     const VkAllocationCallbacks *alloc);
VKAPI_ATTR void VKAPI_CALL sbl_DestroyImage(VkDevice device, VkImage image,
					    const VkAllocationCallbacks *alloc);
VKAPI_ATTR VkResult VKAPI_CALL sbl_AllocateCommandBuffers(VkDevice device,
							  const VkCommandBufferAllocateInfo *info,
							  VkCommandBuffer *cmds);
VKAPI_ATTR void VKAPI_CALL sbl_FreeCommandBuffers(VkDevice device, VkCommandPool pool,
						  uint32_t count, const VkCommandBuffer *cmds);
VKAPI_ATTR VkResult VKAPI_CALL sbl_BeginCommandBuffer(VkCommandBuffer cmd,
						      const VkCommandBufferBeginInfo *info);
VKAPI_ATTR VkResult VKAPI_CALL sbl_ResetCommandBuffer(VkCommandBuffer cmd,
						      VkCommandBufferResetFlags flags);
VKAPI_ATTR VkResult VKAPI_CALL sbl_ResetCommandPool(VkDevice device, VkCommandPool pool,
						    VkCommandPoolResetFlags flags);
VKAPI_ATTR void VKAPI_CALL sbl_DestroyCommandPool(VkDevice device, VkCommandPool pool,
						  const VkAllocationCallbacks *alloc);
VKAPI_ATTR void VKAPI_CALL sbl_CmdPipelineBarrier(
	VkCommandBuffer cmd, VkPipelineStageFlags src_stages, VkPipelineStageFlags dst_stages,
	VkDependencyFlags flags, uint32_t memory_barrier_count, const VkMemoryBarrier *memory_barriers,
	uint32_t buffer_barrier_count, const VkBufferMemoryBarrier *buffer_barriers,
	uint32_t image_barrier_count, const VkImageMemoryBarrier *image_barriers);
VKAPI_ATTR void VKAPI_CALL sbl_CmdPipelineBarrier2(VkCommandBuffer cmd,
						   const VkDependencyInfo *dependency);
VKAPI_ATTR void VKAPI_CALL sbl_CmdPipelineBarrier2KHR(VkCommandBuffer cmd,
						      const VkDependencyInfo *dependency);
VKAPI_ATTR void VKAPI_CALL sbl_CmdExecuteCommands(VkCommandBuffer cmd, uint32_t count,
						  const VkCommandBuffer *secondaries);
VKAPI_ATTR VkResult VKAPI_CALL sbl_QueueSubmit(VkQueue queue, uint32_t count,
					       const VkSubmitInfo *submits, VkFence fence);
VKAPI_ATTR VkResult VKAPI_CALL sbl_QueueSubmit2(VkQueue queue, uint32_t count,
						const VkSubmitInfo2 *submits, VkFence fence);
VKAPI_ATTR VkResult VKAPI_CALL sbl_QueueSubmit2KHR(VkQueue queue, uint32_t count,
						   const VkSubmitInfo2 *submits, VkFence fence);

#endif
