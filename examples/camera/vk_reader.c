/* SPDX-License-Identifier: MIT */
#include "vk_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vk_common.h"

#define PROG "syncbridge-demo-camera"
#define MAX 16

struct vk_reader {
	struct cube_vk vk;
	unsigned count;
	size_t sizes[MAX];
	VkBuffer buffers[MAX];
	VkDeviceMemory memories[MAX];
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

static int
import_buffer(struct vk_reader *r, unsigned i, int dmabuf_fd)
{
	VkExternalMemoryBufferCreateInfo ext = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
	};
	VkBufferCreateInfo bi = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.pNext = &ext,
		.size = r->sizes[i],
		.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
	};
	TRY(vkCreateBuffer(r->vk.device, &bi, NULL, &r->buffers[i]));
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(r->vk.device, r->buffers[i], &req);
	VkMemoryFdPropertiesKHR props = { .sType = VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR };
	TRY(r->vk.GetMemoryFdPropertiesKHR(r->vk.device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
					   dmabuf_fd, &props));
	int type = cube_vk_memory_type(&r->vk, req.memoryTypeBits & props.memoryTypeBits, 0);
	if (type < 0)
		return -EIO;
	/* Vulkan owns the fd only once the import succeeded: import a duplicate. */
	int fd = fcntl(dmabuf_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	VkImportMemoryFdInfoKHR import = {
		.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
		.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
		.fd = fd,
	};
	VkMemoryAllocateInfo mai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = &import,
		.allocationSize = req.size,
		.memoryTypeIndex = (uint32_t)type,
	};
	VkResult vr = vkAllocateMemory(r->vk.device, &mai, NULL, &r->memories[i]);
	if (vr != VK_SUCCESS)
		close(fd);
	TRY(vr);
	TRY(vkBindBufferMemory(r->vk.device, r->buffers[i], r->memories[i], 0));
	return 0;
}

static int
setup(struct vk_reader *r, const int *fds)
{
	int ret = cube_vk_init(&r->vk, PROG ": consumer");
	if (ret < 0)
		return ret;
	size_t max = 0;
	for (unsigned i = 0; i < r->count; i++) {
		ret = import_buffer(r, i, fds[i]);
		if (ret < 0)
			return ret;
		if (r->sizes[i] > max)
			max = r->sizes[i];
	}
	VkBufferCreateInfo bi = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = max,
		.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
	};
	TRY(vkCreateBuffer(r->vk.device, &bi, NULL, &r->host));
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(r->vk.device, r->host, &req);
	int type = cube_vk_memory_type(&r->vk, req.memoryTypeBits,
				       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
					       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
	if (type < 0)
		return -EIO;
	VkMemoryAllocateInfo mai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.allocationSize = req.size,
		.memoryTypeIndex = (uint32_t)type,
	};
	TRY(vkAllocateMemory(r->vk.device, &mai, NULL, &r->host_memory));
	TRY(vkBindBufferMemory(r->vk.device, r->host, r->host_memory, 0));
	TRY(vkMapMemory(r->vk.device, r->host_memory, 0, VK_WHOLE_SIZE, 0, &r->host_map));
	VkCommandBufferAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = r->vk.pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	TRY(vkAllocateCommandBuffers(r->vk.device, &ai, &r->cb));
	VkFenceCreateInfo fi = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	TRY(vkCreateFence(r->vk.device, &fi, NULL, &r->fence));
	snprintf(r->description, sizeof(r->description),
		 "Vulkan on %s; layer VK_LAYER_SYNCBRIDGE_implicit_sync %s", r->vk.device_name,
		 r->vk.layer_active ? "active" : "not loaded");
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

static void
barrier(struct vk_reader *r, unsigned i, bool acquire)
{
	VkBufferMemoryBarrier b = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
		.srcAccessMask = 0,
		.dstAccessMask = acquire ? VK_ACCESS_TRANSFER_READ_BIT : 0,
		.srcQueueFamilyIndex = acquire ? r->vk.foreign_family : r->vk.family,
		.dstQueueFamilyIndex = acquire ? r->vk.family : r->vk.foreign_family,
		.buffer = r->buffers[i],
		.size = VK_WHOLE_SIZE,
	};
	if (!acquire)
		b.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
	vkCmdPipelineBarrier(r->cb, acquire ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT : VK_PIPELINE_STAGE_TRANSFER_BIT,
			     acquire ? VK_PIPELINE_STAGE_TRANSFER_BIT : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
			     0, 0, NULL, 1, &b, 0, NULL);
}

int
vk_reader_read(struct vk_reader *r, unsigned i, void *dst)
{
	if (i >= r->count)
		return -EINVAL;
	TRY(vkResetCommandBuffer(r->cb, 0));
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	TRY(vkBeginCommandBuffer(r->cb, &bi));
	barrier(r, i, true);
	VkBufferCopy region = { .size = r->sizes[i] };
	vkCmdCopyBuffer(r->cb, r->buffers[i], r->host, 1, &region);
	barrier(r, i, false);
	VkMemoryBarrier host = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
	};
	vkCmdPipelineBarrier(r->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
			     &host, 0, NULL, 0, NULL);
	TRY(vkEndCommandBuffer(r->cb));
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &r->cb,
	};
	TRY(vkQueueSubmit(r->vk.queue, 1, &si, r->fence));
	TRY(vkWaitForFences(r->vk.device, 1, &r->fence, VK_TRUE, UINT64_MAX));
	TRY(vkResetFences(r->vk.device, 1, &r->fence));
	memcpy(dst, r->host_map, r->sizes[i]);
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
	VkDevice dev = r->vk.device;
	if (dev) {
		vkDeviceWaitIdle(dev);
		for (unsigned i = 0; i < MAX; i++) {
			if (r->buffers[i])
				vkDestroyBuffer(dev, r->buffers[i], NULL);
			if (r->memories[i])
				vkFreeMemory(dev, r->memories[i], NULL);
		}
		if (r->host)
			vkDestroyBuffer(dev, r->host, NULL);
		if (r->host_memory)
			vkFreeMemory(dev, r->host_memory, NULL);
		if (r->fence)
			vkDestroyFence(dev, r->fence, NULL);
	}
	cube_vk_finish(&r->vk);
	free(r);
}
