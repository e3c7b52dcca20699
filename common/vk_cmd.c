/* SPDX-License-Identifier: MIT */
/*
 * A plain Vulkan application's commands, submissions, fences, semaphores
 * (SYNC_FD import and export) and queue family ownership transfers (see vk.h;
 * memory and dma-bufs are in vk.c).
 */
#include "vk.h"

#include <errno.h>

VkResult
vkt_cmd_alloc(struct vkt *t, VkCommandBuffer *cb)
{
	VkCommandBufferAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = t->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VKT_TRY_VK(t, vkAllocateCommandBuffers(t->device, &ai, cb));
	return VK_SUCCESS;
}

static VkResult
begin(struct vkt *t, VkCommandBuffer cb, VkCommandBufferUsageFlags flags)
{
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = flags,
	};
	VKT_TRY_VK(t, vkBeginCommandBuffer(cb, &bi));
	return VK_SUCCESS;
}

VkResult
vkt_cmd_begin(struct vkt *t, VkCommandBufferUsageFlags flags, VkCommandBuffer *cb)
{
	VkResult r = vkt_cmd_alloc(t, cb);
	return r == VK_SUCCESS ? begin(t, *cb, flags) : r;
}

VkResult
vkt_cmd_reset_begin(struct vkt *t, VkCommandBuffer cb)
{
	VKT_TRY_VK(t, vkResetCommandBuffer(cb, 0));
	return begin(t, cb, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT);
}

VkResult
vkt_submit_one(struct vkt *t, VkCommandBuffer cb, VkSemaphore wait, VkSemaphore signal,
	       VkFence fence)
{
	VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.waitSemaphoreCount = wait ? 1 : 0,
		.pWaitSemaphores = &wait,
		.pWaitDstStageMask = &stage,
		.commandBufferCount = 1,
		.pCommandBuffers = &cb,
		.signalSemaphoreCount = signal ? 1 : 0,
		.pSignalSemaphores = &signal,
	};
	VKT_TRY_VK(t, vkQueueSubmit(t->queue, 1, &si, fence));
	return VK_SUCCESS;
}

VkResult
vkt_fence_wait(struct vkt *t, VkFence fence)
{
	VKT_TRY_VK(t, vkWaitForFences(t->device, 1, &fence, VK_TRUE, UINT64_MAX));
	VKT_TRY_VK(t, vkResetFences(t->device, 1, &fence));
	return VK_SUCCESS;
}

VkResult
vkt_submit_wait(struct vkt *t, VkCommandBuffer cb, VkFence fence)
{
	VkResult r = vkt_submit_one(t, cb, VK_NULL_HANDLE, VK_NULL_HANDLE, fence);
	return r == VK_SUCCESS ? vkt_fence_wait(t, fence) : r;
}

VkResult
vkt_images_to_general(struct vkt *t, const VkImage *images, unsigned count)
{
	VkCommandBuffer cb;
	VkResult r = vkt_cmd_begin(t, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, &cb);
	if (r != VK_SUCCESS)
		return r;
	/* LINEAR images keep their bytes through UNDEFINED (lavapipe). */
	for (unsigned i = 0; i < count; i++) {
		VkImageMemoryBarrier b = {
			.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
			.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
			.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
			.newLayout = VK_IMAGE_LAYOUT_GENERAL,
			.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
			.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
			.image = images[i],
			.subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
		};
		vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
				     VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 0, NULL, 1, &b);
	}
	r = vkEndCommandBuffer(cb);
	if (r == VK_SUCCESS)
		r = vkt_submit_one(t, cb, VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE);
	else
		vkt_fail_vk(t, "vkEndCommandBuffer", r);
	if (r == VK_SUCCESS && (r = vkQueueWaitIdle(t->queue)) != VK_SUCCESS)
		vkt_fail_vk(t, "vkQueueWaitIdle", r);
	vkFreeCommandBuffers(t->device, t->pool, 1, &cb);
	return r;
}

VkFence
vkt_fence(struct vkt *t)
{
	VkFenceCreateInfo info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	VkFence f = VK_NULL_HANDLE;
	VkResult r = vkCreateFence(t->device, &info, NULL, &f);
	if (r != VK_SUCCESS)
		vkt_fail_vk(t, "vkCreateFence", r);
	return f;
}

static VkSemaphore
semaphore(struct vkt *t, const void *next)
{
	VkSemaphoreCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
		.pNext = next,
	};
	VkSemaphore s = VK_NULL_HANDLE;
	VkResult r = vkCreateSemaphore(t->device, &info, NULL, &s);
	if (r != VK_SUCCESS)
		vkt_fail_vk(t, "vkCreateSemaphore", r);
	return s;
}

VkSemaphore
vkt_timeline(struct vkt *t, uint64_t initial)
{
	VkSemaphoreTypeCreateInfo type = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
		.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
		.initialValue = initial,
	};
	return semaphore(t, &type);
}

VkSemaphore
vkt_semaphore(struct vkt *t, bool exportable)
{
	VkExportSemaphoreCreateInfo export = {
		.sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
	};
	return semaphore(t, exportable ? &export : NULL);
}

VkResult
vkt_semaphore_import(struct vkt *t, VkSemaphore s, int fd)
{
	VkImportSemaphoreFdInfoKHR info = {
		.sType = VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR,
		.semaphore = s,
		.flags = VK_SEMAPHORE_IMPORT_TEMPORARY_BIT,
		.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
		.fd = fd,
	};
	if (!t->ImportSemaphoreFdKHR)
		return vkt_fail(t, -EIO, "SYNC_FD semaphores are not enabled"),
		       VK_ERROR_EXTENSION_NOT_PRESENT;
	VKT_TRY_VK(t, t->ImportSemaphoreFdKHR(t->device, &info));
	return VK_SUCCESS;
}

VkResult
vkt_semaphore_export(struct vkt *t, VkSemaphore s, int *fd)
{
	VkSemaphoreGetFdInfoKHR info = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR,
		.semaphore = s,
		.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
	};
	*fd = -1;
	if (!t->GetSemaphoreFdKHR)
		return vkt_fail(t, -EIO, "SYNC_FD semaphores are not enabled"),
		       VK_ERROR_EXTENSION_NOT_PRESENT;
	VKT_TRY_VK(t, t->GetSemaphoreFdKHR(t->device, &info, fd));
	return VK_SUCCESS;
}

/* Source and destination stages of a transfer: the outside's side is TOP / BOTTOM. */
#define SRC_STAGE(acquire, stage) ((acquire) ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT : (stage))
#define DST_STAGE(acquire, stage) ((acquire) ? (stage) : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT)

void
vkt_transfer_buffer(const struct vkt *t, VkCommandBuffer cb, VkBuffer buffer, bool acquire,
		    VkPipelineStageFlags stage, VkAccessFlags access)
{
	VkBufferMemoryBarrier b = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
		.srcAccessMask = acquire ? 0 : access,
		.dstAccessMask = acquire ? access : 0,
		.srcQueueFamilyIndex = acquire ? t->outside_family : t->family,
		.dstQueueFamilyIndex = acquire ? t->family : t->outside_family,
		.buffer = buffer,
		.size = VK_WHOLE_SIZE,
	};
	vkCmdPipelineBarrier(cb, SRC_STAGE(acquire, stage), DST_STAGE(acquire, stage), 0, 0, NULL,
			     1, &b, 0, NULL);
}

void
vkt_transfer_image(const struct vkt *t, VkCommandBuffer cb, VkImage image, bool acquire,
		   VkPipelineStageFlags stage, VkAccessFlags access, VkImageLayout our_layout)
{
	VkImageMemoryBarrier b = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
		.srcAccessMask = acquire ? 0 : access,
		.dstAccessMask = acquire ? access : 0,
		.oldLayout = acquire ? VK_IMAGE_LAYOUT_GENERAL : our_layout,
		.newLayout = acquire ? our_layout : VK_IMAGE_LAYOUT_GENERAL,
		.srcQueueFamilyIndex = acquire ? t->outside_family : t->family,
		.dstQueueFamilyIndex = acquire ? t->family : t->outside_family,
		.image = image,
		.subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
	};
	vkCmdPipelineBarrier(cb, SRC_STAGE(acquire, stage), DST_STAGE(acquire, stage), 0, 0, NULL,
			     0, NULL, 1, &b);
}

void
vkt_host_read_barrier(VkCommandBuffer cb)
{
	VkMemoryBarrier m = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
	};
	vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
			     &m, 0, NULL, 0, NULL);
}
