/* SPDX-License-Identifier: MIT */
/*
 * The cube demo's Vulkan consumer (--consumer vulkan): every ring buffer is
 * imported once as a LINEAR image; each frame is copied into a host-visible
 * buffer of the consumer's own between two ownership transfers,
 *
 *   acquire FOREIGN → us (TRANSFER_READ)   the layer waits for the writers
 *   copy image → buffer                    the read
 *   release us → FOREIGN                   the layer attaches a READ fence
 *
 * exactly as an app that follows the spec's rules for external memory does.
 * With SYNCBRIDGE_DISABLE=1 the loader does not load the layer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cube.h"
#include "demo_util.h"
#include "vk_common.h"

#define PROG "syncbridge-demo-cube"

struct cube_consumer {
	struct cube_vk vk;
	struct cube_buffers bufs;
	VkImage images[CUBE_MAX_BUFFERS];
	VkDeviceMemory memories[CUBE_MAX_BUFFERS];
	VkBuffer host;
	VkDeviceMemory host_memory;
	void *host_map;
	VkCommandBuffer cb;
	VkFence fence;
	char description[400];
};

#define TRY(call)                                                                           \
	do {                                                                                \
		VkResult r_ = (call);                                                       \
		if (r_ != VK_SUCCESS) {                                                     \
			fprintf(stderr, PROG ": consumer: %s: %s\n", #call, cube_vk_result(r_)); \
			return -EIO;                                                        \
		}                                                                           \
	} while (0)

static void
consumer_destroy(struct cube_consumer *c)
{
	if (!c)
		return;
	VkDevice dev = c->vk.device;
	if (dev) {
		vkDeviceWaitIdle(dev);
		for (unsigned i = 0; i < CUBE_MAX_BUFFERS; i++) {
			if (c->images[i])
				vkDestroyImage(dev, c->images[i], NULL);
			if (c->memories[i])
				vkFreeMemory(dev, c->memories[i], NULL);
		}
		if (c->host)
			vkDestroyBuffer(dev, c->host, NULL);
		if (c->host_memory)
			vkFreeMemory(dev, c->host_memory, NULL);
		if (c->fence)
			vkDestroyFence(dev, c->fence, NULL);
	}
	cube_vk_finish(&c->vk);
	for (unsigned i = 0; i < c->bufs.count; i++)
		demo_fd_clear(&c->bufs.fds[i]);
	free(c);
}

static int
setup(struct cube_consumer *c)
{
	int ret = cube_vk_init(&c->vk, PROG ": consumer");
	if (ret < 0)
		return ret;
	for (unsigned i = 0; i < c->bufs.count; i++) {
		ret = cube_vk_import_image(&c->vk, c->bufs.fds[i], c->bufs.width, c->bufs.height,
					   c->bufs.pitch, c->bufs.offset,
					   VK_IMAGE_USAGE_TRANSFER_SRC_BIT, &c->images[i],
					   &c->memories[i]);
		if (ret < 0)
			return ret;
	}
	ret = cube_vk_images_to_general(&c->vk, c->images, c->bufs.count);
	if (ret < 0)
		return ret;

	VkDeviceSize size = (VkDeviceSize)c->bufs.width * c->bufs.height * 4;
	VkBufferCreateInfo bi = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = size,
		.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
	};
	TRY(vkCreateBuffer(c->vk.device, &bi, NULL, &c->host));
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(c->vk.device, c->host, &req);
	int type = cube_vk_memory_type(&c->vk, req.memoryTypeBits,
				       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
					       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
	if (type < 0)
		return -EIO;
	VkMemoryAllocateInfo mai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.allocationSize = req.size,
		.memoryTypeIndex = (uint32_t)type,
	};
	TRY(vkAllocateMemory(c->vk.device, &mai, NULL, &c->host_memory));
	TRY(vkBindBufferMemory(c->vk.device, c->host, c->host_memory, 0));
	TRY(vkMapMemory(c->vk.device, c->host_memory, 0, VK_WHOLE_SIZE, 0, &c->host_map));

	VkCommandBufferAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = c->vk.pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	TRY(vkAllocateCommandBuffers(c->vk.device, &ai, &c->cb));
	VkFenceCreateInfo fi = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	TRY(vkCreateFence(c->vk.device, &fi, NULL, &c->fence));

	snprintf(c->description, sizeof(c->description),
		 "Vulkan on %s; layer VK_LAYER_SYNCBRIDGE_implicit_sync %s", c->vk.device_name,
		 c->vk.layer_active ? "active" : "not loaded");
	return 0;
}

static int
consumer_init(struct cube_consumer **out, struct cube_buffers *bufs, bool verbose)
{
	struct cube_consumer *c = calloc(1, sizeof(*c));

	(void)verbose;
	*out = NULL;
	if (!c) {
		for (unsigned i = 0; i < bufs->count; i++)
			demo_fd_clear(&bufs->fds[i]);
		return -ENOMEM;
	}
	c->bufs = *bufs;
	for (unsigned i = 0; i < bufs->count; i++)
		bufs->fds[i] = -1;
	int ret = setup(c);
	if (ret < 0) {
		consumer_destroy(c);
		return ret;
	}
	*out = c;
	return 0;
}

static int
consumer_composite(struct cube_consumer *c, unsigned index)
{
	VkCommandBuffer cb = c->cb;
	VkImage image = c->images[index];

	TRY(vkResetCommandBuffer(cb, 0));
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	TRY(vkBeginCommandBuffer(cb, &bi));
	cube_vk_transfer(&c->vk, cb, image, true, VK_PIPELINE_STAGE_TRANSFER_BIT,
			 VK_ACCESS_TRANSFER_READ_BIT, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
	VkBufferImageCopy region = {
		.imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
		.imageExtent = { c->bufs.width, c->bufs.height, 1 },
	};
	vkCmdCopyImageToBuffer(cb, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, c->host, 1, &region);
	cube_vk_transfer(&c->vk, cb, image, false, VK_PIPELINE_STAGE_TRANSFER_BIT,
			 VK_ACCESS_TRANSFER_READ_BIT, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
	VkMemoryBarrier host = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
	};
	vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
			     &host, 0, NULL, 0, NULL);
	TRY(vkEndCommandBuffer(cb));
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &cb,
	};
	TRY(vkQueueSubmit(c->vk.queue, 1, &si, c->fence));
	TRY(vkWaitForFences(c->vk.device, 1, &c->fence, VK_TRUE, UINT64_MAX));
	TRY(vkResetFences(c->vk.device, 1, &c->fence));
	return 0;
}

/* composite() already waited for its fence; the queue is idle. */
static int
consumer_finish(struct cube_consumer *c)
{
	return vkQueueWaitIdle(c->vk.queue) == VK_SUCCESS ? 0 : -EIO;
}

static int
consumer_read_back(struct cube_consumer *c, uint8_t *rgba)
{
	const uint8_t *bgra = c->host_map;
	size_t n = (size_t)c->bufs.width * c->bufs.height;

	for (size_t i = 0; i < n; i++) {
		rgba[4 * i + 0] = bgra[4 * i + 2];
		rgba[4 * i + 1] = bgra[4 * i + 1];
		rgba[4 * i + 2] = bgra[4 * i + 0];
		rgba[4 * i + 3] = bgra[4 * i + 3];
	}
	return 0;
}

static const char *
consumer_describe(struct cube_consumer *c)
{
	return c->description;
}

const struct cube_backend cube_backend_vulkan = {
	.name = "vulkan",
	.init = consumer_init,
	.composite = consumer_composite,
	.finish = consumer_finish,
	.read_back = consumer_read_back,
	.describe = consumer_describe,
	.destroy = consumer_destroy,
};
