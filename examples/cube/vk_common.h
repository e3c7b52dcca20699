/* SPDX-License-Identifier: MIT */
/*
 * The cube demo's Vulkan plumbing, shared by the producer and the Vulkan
 * consumer: an instance and device that can import dma-bufs, LINEAR images
 * on imported dma-bufs (VK_EXT_image_drm_format_modifier, explicit layout),
 * and a check whether VK_LAYER_SYNCBRIDGE_implicit_sync sits in the device's
 * call chain.
 */
#ifndef SB_DEMO_CUBE_VK_H
#define SB_DEMO_CUBE_VK_H

#include <stdbool.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

struct cube_vk {
	const char *who; /* prefix of its messages, e.g. "syncbridge-demo-cube: producer" */
	VkInstance instance;
	VkPhysicalDevice physical;
	VkDevice device;
	VkQueue queue;
	uint32_t family;
	VkCommandPool pool;
	VkPhysicalDeviceMemoryProperties mem_props;
	PFN_vkGetMemoryFdPropertiesKHR GetMemoryFdPropertiesKHR;
	uint32_t foreign_family; /* VK_QUEUE_FAMILY_FOREIGN_EXT (or _EXTERNAL) */
	char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
	bool layer_active; /* the syncbridge layer intercepts vkQueueSubmit */
};

/*
 * Instance + device on the CPU (lavapipe) device if there is one, with the
 * dma-buf import extensions and dynamic rendering. Returns 0; -ENODEV when
 * no device can import dma-bufs (the caller skips); -EIO otherwise.
 * Messages go to stderr, prefixed with vk->who.
 */
int cube_vk_init(struct cube_vk *vk, const char *who);
void cube_vk_finish(struct cube_vk *vk);

/* A memory type in `bits` with all of `flags`, or -1. */
int cube_vk_memory_type(const struct cube_vk *vk, uint32_t bits, VkMemoryPropertyFlags flags);

/*
 * Import a dma-buf as a width×height B8G8R8A8 (DRM ARGB8888) LINEAR image
 * with the given row pitch and offset, bound to its own dedicated memory.
 * dmabuf_fd: borrowed (Vulkan gets a duplicate, which it owns on success).
 * Returns 0 or -EIO.
 */
int cube_vk_import_image(struct cube_vk *vk, int dmabuf_fd, uint32_t width, uint32_t height,
			 uint32_t pitch, uint32_t offset, VkImageUsageFlags usage, VkImage *image,
			 VkDeviceMemory *memory);

/* Run one command buffer that moves the images UNDEFINED → GENERAL, and wait. */
int cube_vk_images_to_general(struct cube_vk *vk, const VkImage *images, unsigned count);

/*
 * An ownership transfer of `image` between FOREIGN and our family: acquire
 * (dst side: stage/access/layout) or release (src side). The layer turns
 * these into kernel fences on the image's dma-buf.
 */
void cube_vk_transfer(const struct cube_vk *vk, VkCommandBuffer cb, VkImage image, bool acquire,
		      VkPipelineStageFlags stage, VkAccessFlags access, VkImageLayout our_layout);

const char *cube_vk_result(VkResult r);

#endif
