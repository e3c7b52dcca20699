/* SPDX-License-Identifier: MIT */
/*
 * The demos' Vulkan app (the cube's producer and Vulkan consumer, the
 * camera's reader), on common/'s (common/vk.h): an instance and device
 * that import dma-bufs as LINEAR images with an explicit layout
 * (VK_EXT_image_drm_format_modifier) or as buffers, with dynamic rendering,
 * FOREIGN when the driver has it, and a check whether
 * VK_LAYER_SYNCBRIDGE_implicit_sync sits in the device's call chain
 * (vk->layer_active). Failures are printed to stderr, prefixed with who.
 */
#ifndef SB_DEMO_CUBE_VK_H
#define SB_DEMO_CUBE_VK_H

#include "vk.h"

/* Returns 0; -ENODEV when no device can import dma-bufs (the caller skips);
 * -EIO otherwise. vkt_finish() cleans up, after a failure too. */
int cube_vk_init(struct vkt *vk, const char *who);

/*
 * Import a dma-buf as a width×height B8G8R8A8 (DRM ARGB8888) image with the
 * given row pitch and offset, bound to its own dedicated memory.
 * dmabuf_fd: borrowed (Vulkan gets a duplicate, which it owns on success).
 * Returns 0 or -EIO.
 */
int cube_vk_import_image(struct vkt *vk, int dmabuf_fd, uint32_t width, uint32_t height,
			 uint32_t pitch, uint32_t offset, VkImageUsageFlags usage,
			 struct vkt_image *img);

#endif
