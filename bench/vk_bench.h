/* SPDX-License-Identifier: MIT */
/*
 * What the Vulkan benchmarks (figures 1 and 2 of docs/performance.md:
 * bench/vk_submit.c, bench/vk_acqrel.c) share: two Vulkan instances and
 * devices in one process, one with VK_LAYER_SYNCBRIDGE_implicit_sync and one
 * without, so that iterations of the two can be interleaved; a dma-buf
 * imported as a buffer.
 *
 * The loader decides an instance's layers at vkCreateInstance, so the layer
 * is enabled by name (ppEnabledLayerNames, from the build tree's explicit
 * manifest on VK_ADD_LAYER_PATH) in one instance and not named in the other.
 * The build tree's implicit manifest is kept off the loader's path (it is
 * found only through XDG_DATA_DIRS), so it cannot slip the layer into the
 * floor; SYNCBRIDGE_DISABLE is cleared, as it would turn the named layer off
 * from inside. vkb_init() checks both ways that this worked and exits 1
 * otherwise: a floor with the layer in it, or a variant without, would make
 * the figure meaningless.
 */
#ifndef SB_BENCH_VK_BENCH_H
#define SB_BENCH_VK_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#define VKB_LAYER_NAME "VK_LAYER_SYNCBRIDGE_implicit_sync"

/* Print to stderr and exit 1 (a benchmark has no partial result). */
void vkb_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define VKB_CHECK(call)                                                           \
	do {                                                                      \
		VkResult vkb_r_ = (call);                                         \
		if (vkb_r_ != VK_SUCCESS)                                         \
			vkb_die("%s:%d: %s: VkResult %d", __FILE__, __LINE__, #call, \
				(int)vkb_r_);                                     \
	} while (0)

/* Set the loader's environment (before the first vkCreateInstance). */
void vkb_env_setup(void);

struct vkb {
	bool layered; /* created with the layer named */
	VkInstance instance;
	VkPhysicalDevice physical;
	VkDevice device;
	VkQueue queue;
	VkCommandPool pool;
	uint32_t foreign_family;
	VkPhysicalDeviceMemoryProperties mem_props;
	PFN_vkGetMemoryFdPropertiesKHR GetMemoryFdPropertiesKHR;
	PFN_vkImportSemaphoreFdKHR ImportSemaphoreFdKHR;
	PFN_vkGetSemaphoreFdKHR GetSemaphoreFdKHR;
};

/*
 * Instance + device on the CPU (lavapipe) device, with dma-buf memory import,
 * VK_EXT_queue_family_foreign and SYNC_FD semaphores (the floor uses them by
 * hand; the layer would enable them itself). with_layer: name the layer, and
 * check that it is active (its vkQueueSubmit is the one the app gets, and the
 * device lists it); without: check that it is absent. Exits 77 when the
 * driver cannot import dma-bufs or lacks SYNC_FD semaphores (not the guest).
 */
void vkb_init(struct vkb *b, bool with_layer);
void vkb_finish(struct vkb *b);

/* A buffer on an imported dma-buf (a dup of dmabuf_fd; the caller keeps its own). */
struct vkb_buffer {
	VkBuffer buffer;
	VkDeviceMemory memory;
	VkDeviceSize size;
};
void vkb_import_buffer(struct vkb *b, int dmabuf_fd, VkDeviceSize size, struct vkb_buffer *out);
/* Host-visible coherent buffer (not a dma-buf). */
void vkb_host_buffer(struct vkb *b, VkDeviceSize size, struct vkb_buffer *out);
void vkb_buffer_destroy(struct vkb *b, struct vkb_buffer *buf);

VkCommandBuffer vkb_cmd_begin(struct vkb *b);
VkFence vkb_fence(struct vkb *b);
/* A binary semaphore exportable as SYNC_FD. */
VkSemaphore vkb_sync_fd_semaphore(struct vkb *b);

/* Ownership transfer of a whole buffer from (acquire) or to (release) FOREIGN. */
void vkb_transfer(struct vkb *b, VkCommandBuffer cb, VkBuffer buffer, bool acquire,
		  VkAccessFlags our_access);

/* Samples and the figure line: wake_stats.h (bench_samples, bench_print_us, bench_now_ns). */

#endif
