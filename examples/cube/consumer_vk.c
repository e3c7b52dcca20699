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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cube.h"
#include "demo_util.h"
#include "vk_common.h"

#define PROG "syncbridge-demo-cube"

struct cube_consumer {
	struct vkt vk;
	struct cube_buffers bufs;
	struct vkt_image images[CUBE_MAX_BUFFERS];
	struct vkt_buffer host;
	VkCommandBuffer cb;
	VkFence fence;
	char description[400];
};

static void
consumer_destroy(struct cube_consumer *c)
{
	if (!c)
		return;
	if (c->vk.device) {
		vkDeviceWaitIdle(c->vk.device);
		for (unsigned i = 0; i < CUBE_MAX_BUFFERS; i++)
			vkt_image_destroy(&c->vk, &c->images[i]);
		vkt_buffer_destroy(&c->vk, &c->host);
		if (c->fence)
			vkDestroyFence(c->vk.device, c->fence, NULL);
	}
	vkt_finish(&c->vk);
	cube_buffers_close(&c->bufs);
	free(c);
}

static int
consumer_open(struct cube_consumer **out, const struct cube_options *opt)
{
	struct cube_consumer *c = calloc(1, sizeof(*c));

	(void)opt;
	*out = NULL;
	if (!c)
		return -ENOMEM;
	int ret = cube_vk_init(&c->vk, PROG ": consumer");
	if (ret < 0) {
		consumer_destroy(c);
		return ret;
	}
	*out = c;
	return 0;
}

static int
consumer_import(struct cube_consumer *c, struct cube_buffers *bufs)
{
	cube_buffers_take(&c->bufs, bufs); /* the fds are ours now */

	VkImage images[CUBE_MAX_BUFFERS];
	for (unsigned i = 0; i < c->bufs.count; i++) {
		int ret = cube_vk_import_image(&c->vk, c->bufs.fds[i], c->bufs.width,
					       c->bufs.height, c->bufs.pitch, c->bufs.offset,
					       VK_IMAGE_USAGE_TRANSFER_SRC_BIT, &c->images[i]);
		if (ret < 0)
			return ret;
		images[i] = c->images[i].image;
	}
	if (vkt_images_to_general(&c->vk, images, c->bufs.count) != VK_SUCCESS ||
	    vkt_host_buffer(&c->vk, (VkDeviceSize)c->bufs.width * c->bufs.height * 4, &c->host) !=
		    VK_SUCCESS ||
	    vkt_cmd_alloc(&c->vk, &c->cb) != VK_SUCCESS || !(c->fence = vkt_fence(&c->vk)))
		return -EIO;

	snprintf(c->description, sizeof(c->description),
		 "Vulkan on %s; layer " VKT_LAYER_NAME " %s", c->vk.device_name,
		 c->vk.layer_active ? "active" : "not in the call chain");
	return 0;
}

static int
consumer_composite(struct cube_consumer *c, unsigned index)
{
	VkCommandBuffer cb = c->cb;
	VkImage image = c->images[index].image;

	if (vkt_cmd_reset_begin(&c->vk, cb) != VK_SUCCESS)
		return -EIO;
	vkt_transfer_image(&c->vk, cb, image, true, VK_PIPELINE_STAGE_TRANSFER_BIT,
			   VK_ACCESS_TRANSFER_READ_BIT, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
	VkBufferImageCopy region = {
		.imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
		.imageExtent = { c->bufs.width, c->bufs.height, 1 },
	};
	vkCmdCopyImageToBuffer(cb, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, c->host.buffer, 1,
			       &region);
	vkt_transfer_image(&c->vk, cb, image, false, VK_PIPELINE_STAGE_TRANSFER_BIT,
			   VK_ACCESS_TRANSFER_READ_BIT, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL);
	vkt_host_read_barrier(cb);
	VKT_TRY(&c->vk, vkEndCommandBuffer(cb));
	return vkt_submit_wait(&c->vk, cb, c->fence) == VK_SUCCESS ? 0 : -EIO;
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
	const uint8_t *bgra = c->host.map;
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

static bool
consumer_on_venus(const struct cube_consumer *c)
{
	return c->vk.driver_id == VK_DRIVER_ID_MESA_VENUS;
}

const struct cube_backend cube_backend_vulkan = CUBE_BACKEND("vulkan");
