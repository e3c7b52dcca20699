/* SPDX-License-Identifier: MIT */
#include "vk_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_common.h"

#define PROG "syncbridge-demo-camera"
#define MAX 16

struct vk_reader {
	struct vkt vk;
	unsigned count;
	size_t sizes[MAX];
	struct vkt_buffer buffers[MAX];
	struct vkt_buffer host;
	VkCommandBuffer cb;
	VkFence fence;
	char description[400];
};

static int
setup(struct vk_reader *r, const int *fds)
{
	int ret = cube_vk_init(&r->vk, PROG ": consumer");
	if (ret < 0)
		return ret;
	size_t max = 0;
	for (unsigned i = 0; i < r->count; i++) {
		if (vkt_import_buffer(&r->vk, fds[i], r->sizes[i], &r->buffers[i]) != VK_SUCCESS)
			return -EIO;
		if (r->sizes[i] > max)
			max = r->sizes[i];
	}
	if (vkt_host_buffer(&r->vk, max, &r->host) != VK_SUCCESS ||
	    vkt_cmd_alloc(&r->vk, &r->cb) != VK_SUCCESS || !(r->fence = vkt_fence(&r->vk)))
		return -EIO;
	snprintf(r->description, sizeof(r->description),
		 "Vulkan on %s; layer " VKT_LAYER_NAME " %s", r->vk.device_name,
		 r->vk.layer_active ? "active" : "not in the call chain");
	return 0;
}

int
vk_reader_create(const int *fds, const size_t *sizes, unsigned count, struct vk_reader **out)
{
	struct vk_reader *r;

	*out = NULL;
	if (count > MAX)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->count = count;
	memcpy(r->sizes, sizes, count * sizeof(sizes[0]));
	int ret = setup(r, fds);
	if (ret < 0) {
		vk_reader_destroy(r);
		return ret;
	}
	*out = r;
	return 0;
}

int
vk_reader_read(struct vk_reader *r, unsigned i, void *dst)
{
	if (i >= r->count)
		return -EINVAL;
	if (vkt_cmd_reset_begin(&r->vk, r->cb) != VK_SUCCESS)
		return -EIO;
	VkBuffer buffer = r->buffers[i].buffer;
	vkt_transfer_buffer(&r->vk, r->cb, buffer, true, VK_PIPELINE_STAGE_TRANSFER_BIT,
			    VK_ACCESS_TRANSFER_READ_BIT);
	VkBufferCopy region = { .size = r->sizes[i] };
	vkCmdCopyBuffer(r->cb, buffer, r->host.buffer, 1, &region);
	vkt_transfer_buffer(&r->vk, r->cb, buffer, false, VK_PIPELINE_STAGE_TRANSFER_BIT,
			    VK_ACCESS_TRANSFER_READ_BIT);
	vkt_host_read_barrier(r->cb);
	VKT_TRY(&r->vk, vkEndCommandBuffer(r->cb));
	if (vkt_submit_wait(&r->vk, r->cb, r->fence) != VK_SUCCESS)
		return -EIO;
	memcpy(dst, r->host.map, r->sizes[i]);
	return 0;
}

const char *
vk_reader_describe(const struct vk_reader *r)
{
	return r->description;
}

bool
vk_reader_layer_active(const struct vk_reader *r)
{
	return r->vk.layer_active;
}

void
vk_reader_destroy(struct vk_reader *r)
{
	if (!r)
		return;
	if (r->vk.device) {
		vkDeviceWaitIdle(r->vk.device);
		for (unsigned i = 0; i < MAX; i++)
			vkt_buffer_destroy(&r->vk, &r->buffers[i]);
		vkt_buffer_destroy(&r->vk, &r->host);
		if (r->fence)
			vkDestroyFence(r->vk.device, r->fence, NULL);
	}
	vkt_finish(&r->vk);
	free(r);
}
