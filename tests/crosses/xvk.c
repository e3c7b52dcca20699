/* SPDX-License-Identifier: MIT */
/*
 * lavapipe as exporter and importer of dma-bufs (VK_EXT_external_memory_dma_buf)
 * and fences (SYNC_FD semaphores), on common/'s Vulkan app (vk.h) with no
 * layer. Its fail callback is unset: a failed call comes back as a VkResult
 * that the cell records.
 */
#include "crosses.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <drm_fourcc.h>

#include "kernel.h"

int
xvk_open(struct xenv *e, char *why, size_t size)
{
	const struct vkt_config cfg = {
		.who = "crosses",
		.app_name = "crosses",
		.require = VKT_DMABUF | VKT_SEMAPHORE_FD,
	};
	int ret = vkt_create(&e->vk, &cfg);

	if (ret == 0) {
		e->GetMemoryFdKHR =
			(PFN_vkGetMemoryFdKHR)vkGetDeviceProcAddr(e->vk.device, "vkGetMemoryFdKHR");
		/* Mesa's venus, by its driverID (as the cube demo tells it). */
		if (e->vk.driver_id == VK_DRIVER_ID_MESA_VENUS) {
			xdrv_set_vulkan_name("venus");
			e->vk_isolate = true;
		}
		printf("# %s: %s\n", xdrv_name(XD_LAVAPIPE), e->vk.device_name);
		return 0;
	}
	snprintf(why, size, "%s", e->vk.why[0] ? e->vk.why : "no Vulkan device");
	vkt_finish(&e->vk);
	return ret;
}

void
xvk_close(struct xenv *e)
{
	vkt_finish(&e->vk);
}

void
xres_vk(struct xres *r, const char *step, VkResult vr)
{
	const char *name = vkt_result_name(vr);

	if (strcmp(name, "VkResult?") == 0)
		xres_set(r, "ERR %s VkResult %d", step, (int)vr);
	else
		xres_set(r, "ERR %s %s", step, name);
}

/* Submit cb (may be NULL: no commands) with an optional wait; *fence to wait for. */
static VkResult
submit(struct xenv *e, VkCommandBuffer cb, VkSemaphore wait, VkSemaphore signal, VkFence fence)
{
	const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
	VkSubmitInfo info = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.waitSemaphoreCount = wait ? 1 : 0,
		.pWaitSemaphores = &wait,
		.pWaitDstStageMask = &stage,
		.commandBufferCount = cb ? 1 : 0,
		.pCommandBuffers = &cb,
		.signalSemaphoreCount = signal ? 1 : 0,
		.pSignalSemaphores = &signal,
	};

	return vkQueueSubmit(e->vk.queue, 1, &info, fence);
}

void
xvk_export(struct xenv *e, struct xbuf *b, struct xres *implicit)
{
	struct vkt *t = &e->vk;
	VkMemoryRequirements req;
	VkCommandBuffer cb = VK_NULL_HANDLE;
	VkFence fence = VK_NULL_HANDLE;
	VkResult vr;
	int type, fd = -1;

	vr = vkt_dmabuf_buffer(t, (VkDeviceSize)XROW * XH, &b->vk_buffer, &req);
	if (vr != VK_SUCCESS) {
		xres_vk(&b->export, "vkCreateBuffer", vr);
		return;
	}
	type = vkt_memory_type(t, req.memoryTypeBits, 0);
	vr = vkt_dmabuf_memory_export(t, &req, (uint32_t)(type < 0 ? 0 : type), VK_NULL_HANDLE,
				      &b->vk_memory);
	if (vr != VK_SUCCESS) {
		xres_vk(&b->export, "vkAllocateMemory(export)", vr);
		return;
	}
	vr = vkBindBufferMemory(t->device, b->vk_buffer, b->vk_memory, 0);
	if (vr != VK_SUCCESS) {
		xres_vk(&b->export, "vkBindBufferMemory", vr);
		return;
	}
	VkMemoryGetFdInfoKHR get = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
		.memory = b->vk_memory,
		.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
	};
	if (!e->GetMemoryFdKHR) {
		xres_set(&b->export, "ERR vkGetMemoryFdKHR absent");
		return;
	}
	vr = e->GetMemoryFdKHR(t->device, &get, &fd);
	if (vr != VK_SUCCESS) {
		xres_vk(&b->export, "vkGetMemoryFdKHR", vr);
		return;
	}
	b->fd = fd;
	b->stride = XROW;
	b->fourcc = DRM_FORMAT_ARGB8888;
	xres_set(&b->export, "ok");
	xres_cloexec(&b->export, fd, "vkGetMemoryFdKHR's fd");

	/* The exporter's write: a fill, submitted; the implicit cell looks before it is waited for. */
	fence = vkt_fence(t);
	if (vkt_cmd_begin(t, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, &cb) != VK_SUCCESS ||
	    fence == VK_NULL_HANDLE) {
		xres_set(&b->export, "ERR command buffer: %s", t->why);
		goto out;
	}
	vkCmdFillBuffer(cb, b->vk_buffer, 0, VK_WHOLE_SIZE, b->value * 0x01010101u);
	vkEndCommandBuffer(cb);
	vr = submit(e, cb, VK_NULL_HANDLE, VK_NULL_HANDLE, fence);
	if (vr != VK_SUCCESS) {
		xres_vk(&b->export, "vkQueueSubmit(fill)", vr);
	} else {
		if (implicit)
			ximplicit_judge(b, implicit);
		vr = vkWaitForFences(t->device, 1, &fence, VK_TRUE, UINT64_C(20000000000));
		if (vr != VK_SUCCESS)
			xres_vk(&b->export, "vkWaitForFences(fill)", vr);
	}
out:
	if (cb)
		vkFreeCommandBuffers(t->device, t->pool, 1, &cb);
	if (fence)
		vkDestroyFence(t->device, fence, NULL);
}

/* Import b's dma-buf as a buffer's memory; copy the image rows into rgba. */
void
xvk_import_read(struct xenv *e, const struct xbuf *b, uint8_t *rgba, struct xres *r)
{
	struct vkt *t = &e->vk;
	VkMemoryFdPropertiesKHR props = { .sType = VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR };
	VkMemoryRequirements req;
	VkBuffer buffer = VK_NULL_HANDLE;
	VkDeviceMemory memory = VK_NULL_HANDLE;
	struct vkt_buffer host = { 0 };
	VkCommandBuffer cb = VK_NULL_HANDLE;
	VkFence fence = VK_NULL_HANDLE;
	VkBufferCopy rows[XH];
	VkResult vr;
	int type, fd;

	vr = vkt_dmabuf_buffer(t, b->size, &buffer, &req);
	if (vr != VK_SUCCESS) {
		xres_vk(r, "vkCreateBuffer", vr);
		return;
	}
	vr = t->GetMemoryFdPropertiesKHR(t->device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
					 b->fd, &props);
	if (vr != VK_SUCCESS) {
		xres_vk(r, "vkGetMemoryFdPropertiesKHR", vr);
		goto out;
	}
	type = vkt_memory_type(t, req.memoryTypeBits & props.memoryTypeBits, 0);
	if (type < 0) {
		xres_set(r, "ERR memoryTypeBits 0x%x", props.memoryTypeBits);
		goto out;
	}
	/* Vulkan owns the fd once the import succeeded; on failure it is still ours. */
	fd = fcntl(b->fd, F_DUPFD_CLOEXEC, 3);
	vr = vkt_dmabuf_memory_import(t, &req, (uint32_t)type, VK_NULL_HANDLE, fd, &memory);
	if (vr != VK_SUCCESS) {
		close(fd);
		xres_vk(r, "vkAllocateMemory(import)", vr);
		goto out;
	}
	vr = vkBindBufferMemory(t->device, buffer, memory, 0);
	if (vr != VK_SUCCESS) {
		xres_vk(r, "vkBindBufferMemory", vr);
		goto out;
	}
	if (vkt_host_buffer(t, (VkDeviceSize)XROW * XH, &host) != VK_SUCCESS ||
	    vkt_cmd_begin(t, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, &cb) != VK_SUCCESS ||
	    (fence = vkt_fence(t)) == VK_NULL_HANDLE) {
		xres_set(r, "ERR setup (%s)", t->why);
		goto out;
	}
	for (int y = 0; y < XH; y++)
		rows[y] = (VkBufferCopy){ .srcOffset = (VkDeviceSize)b->offset + (VkDeviceSize)y * b->stride,
					  .dstOffset = (VkDeviceSize)y * XROW, .size = XROW };
	vkCmdCopyBuffer(cb, buffer, host.buffer, XH, rows);
	vkt_host_read_barrier(cb);
	vkEndCommandBuffer(cb);
	vr = vkt_submit_wait(t, cb, fence);
	if (vr != VK_SUCCESS) {
		xres_vk(r, "vkQueueSubmit(copy)", vr);
		goto out;
	}
	memcpy(rgba, host.map, (size_t)XROW * XH);
	xres_set(r, "ok");
out:
	if (cb)
		vkFreeCommandBuffers(t->device, t->pool, 1, &cb);
	if (fence)
		vkDestroyFence(t->device, fence, NULL);
	vkt_buffer_destroy(t, &host);
	vkDestroyBuffer(t->device, buffer, NULL);
	if (memory)
		vkFreeMemory(t->device, memory, NULL);
}

int
xvk_fence_export(struct xenv *e, struct xres *r)
{
	struct vkt *t = &e->vk;
	VkSemaphore s = vkt_semaphore(t, true);
	VkResult vr;
	int fd = -1;

	if (!s) {
		xres_set(r, "ERR vkCreateSemaphore (%s)", t->why);
		return -1;
	}
	vr = submit(e, VK_NULL_HANDLE, VK_NULL_HANDLE, s, VK_NULL_HANDLE);
	if (vr != VK_SUCCESS) {
		xres_vk(r, "vkQueueSubmit", vr);
	} else {
		/* SYNC_FD export has wait semantics: the payload is reset. */
		vr = vkt_semaphore_export(t, s, &fd);
		if (vr != VK_SUCCESS)
			xres_vk(r, "vkGetSemaphoreFdKHR", vr);
		else if (fd < 0)
			/* The spec allows -1 for a payload that has already signalled. */
			xres_set(r, "ERR vkGetSemaphoreFdKHR fd -1");
		else
			xres_set(r, "ok");
	}
	vkQueueWaitIdle(t->queue);
	vkDestroySemaphore(t->device, s, NULL);
	xres_cloexec(r, fd, "vkGetSemaphoreFdKHR's fd");
	return fd;
}

void
xvk_fence_wait(struct xenv *e, int sync_file, struct xres *r)
{
	struct vkt *t = &e->vk;
	VkSemaphore s = vkt_semaphore(t, false);
	VkFence fence = vkt_fence(t);
	VkResult vr;
	int fd;

	if (!s || !fence) {
		xres_set(r, "ERR setup (%s)", t->why);
		goto out;
	}
	/* A temporary SYNC_FD import owns the fd on success only: pass a duplicate. */
	fd = fcntl(sync_file, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		/* -1 would import as "already signalled": a false "ok" */
		xres_errno(r, "F_DUPFD_CLOEXEC", -errno);
		goto out;
	}
	vr = vkt_semaphore_import(t, s, fd);
	if (vr != VK_SUCCESS) {
		close(fd);
		xres_vk(r, "vkImportSemaphoreFdKHR", vr);
		goto out;
	}
	vr = submit(e, VK_NULL_HANDLE, s, VK_NULL_HANDLE, fence);
	if (vr != VK_SUCCESS) {
		xres_vk(r, "vkQueueSubmit(wait)", vr);
		goto out;
	}
	vr = vkWaitForFences(t->device, 1, &fence, VK_TRUE, UINT64_C(20000000000));
	if (vr != VK_SUCCESS)
		xres_vk(r, "vkWaitForFences", vr);
	else
		xres_set(r, "ok");
out:
	vkQueueWaitIdle(t->queue);
	if (fence)
		vkDestroyFence(t->device, fence, NULL);
	if (s)
		vkDestroySemaphore(t->device, s, NULL);
}

void
xvk_buffer_free(struct xenv *e, struct xbuf *b)
{
	if (!e->vk.device)
		return;
	if (b->vk_buffer)
		vkDestroyBuffer(e->vk.device, b->vk_buffer, NULL);
	if (b->vk_memory)
		vkFreeMemory(e->vk.device, b->vk_memory, NULL);
	b->vk_buffer = VK_NULL_HANDLE;
	b->vk_memory = VK_NULL_HANDLE;
}
