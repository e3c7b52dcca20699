/* SPDX-License-Identifier: MIT */
/*
 * A plain Vulkan application's memory: host buffers, dma-buf exports and
 * imports of buffers and images (see vk.h; commands, semaphores and
 * transfers are in vk_cmd.c).
 */
#include "vk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <drm_fourcc.h>

size_t
vkt_count_bytes(const void *p, size_t n, uint8_t v)
{
	const uint8_t *b = p;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += b[i] == v;
	return k;
}

int
vkt_memory_type(const struct vkt *t, uint32_t bits, VkMemoryPropertyFlags flags)
{
	for (uint32_t i = 0; i < t->mem_props.memoryTypeCount; i++)
		if ((bits & (1u << i)) &&
		    (t->mem_props.memoryTypes[i].propertyFlags & flags) == flags)
			return (int)i;
	return -1;
}

VkResult
vkt_host_buffer(struct vkt *t, VkDeviceSize size, struct vkt_buffer *b)
{
	memset(b, 0, sizeof(*b));
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = size,
		.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
	};
	VKT_TRY_VK(t, vkCreateBuffer(t->device, &info, NULL, &b->buffer));
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(t->device, b->buffer, &req);
	int type = vkt_memory_type(t, req.memoryTypeBits,
				   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
					   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
	if (type < 0)
		return vkt_fail(t, -EIO, "no host-visible coherent memory (bits 0x%x)",
				req.memoryTypeBits),
		       VK_ERROR_OUT_OF_DEVICE_MEMORY;
	VkMemoryAllocateInfo alloc = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.allocationSize = req.size,
		.memoryTypeIndex = (uint32_t)type,
	};
	VKT_TRY_VK(t, vkAllocateMemory(t->device, &alloc, NULL, &b->memory));
	VKT_TRY_VK(t, vkBindBufferMemory(t->device, b->buffer, b->memory, 0));
	VKT_TRY_VK(t, vkMapMemory(t->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->map));
	memset(b->map, 0, size);
	b->size = size;
	return VK_SUCCESS;
}

/* vkAllocateMemory of req's size and memory type `type`, with external (an
 * import or export info, its pNext set here) chained first and, for an image,
 * its dedicated-allocation info after it. The raw result, nothing logged. */
static VkResult
allocate_dmabuf(struct vkt *t, const VkMemoryRequirements *req, uint32_t type,
		VkImage dedicated_image, VkBaseOutStructure *external, VkDeviceMemory *mem)
{
	VkMemoryDedicatedAllocateInfo dedicated = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
		.image = dedicated_image,
	};
	external->pNext = dedicated_image ? (VkBaseOutStructure *)&dedicated : NULL;
	VkMemoryAllocateInfo alloc = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = external,
		.allocationSize = req->size,
		.memoryTypeIndex = type,
	};
	return vkAllocateMemory(t->device, &alloc, NULL, mem);
}

VkResult
vkt_dmabuf_memory_export(struct vkt *t, const VkMemoryRequirements *req, uint32_t type,
			 VkImage dedicated_image, VkDeviceMemory *mem)
{
	VkExportMemoryAllocateInfo export = {
		.sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
	};

	return allocate_dmabuf(t, req, type, dedicated_image, (VkBaseOutStructure *)&export, mem);
}

VkResult
vkt_dmabuf_memory_import(struct vkt *t, const VkMemoryRequirements *req, uint32_t type,
			 VkImage dedicated_image, int fd, VkDeviceMemory *mem)
{
	VkImportMemoryFdInfoKHR import = {
		.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
		.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
		.fd = fd,
	};

	return allocate_dmabuf(t, req, type, dedicated_image, (VkBaseOutStructure *)&import, mem);
}

/* Memory on a duplicate of dmabuf_fd (see vkt_import_buffer()). */
static VkResult
import_memory(struct vkt *t, int dmabuf_fd, const VkMemoryRequirements *req,
	      VkImage dedicated_image, VkDeviceMemory *mem)
{
	if (!t->GetMemoryFdPropertiesKHR)
		return vkt_fail(t, -EIO, "dma-buf import is not enabled"),
		       VK_ERROR_EXTENSION_NOT_PRESENT;
	VkMemoryFdPropertiesKHR fd_props = { .sType = VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR };
	VKT_TRY_VK(t, t->GetMemoryFdPropertiesKHR(t->device,
					   VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
					   dmabuf_fd, &fd_props));
	int type = vkt_memory_type(t, req->memoryTypeBits & fd_props.memoryTypeBits, 0);
	if (type < 0)
		return vkt_fail(t, -EIO, "no memory type for the dma-buf (bits 0x%x & 0x%x)",
			    req->memoryTypeBits, fd_props.memoryTypeBits),
		       VK_ERROR_INVALID_EXTERNAL_HANDLE;
	int fd = fcntl(dmabuf_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return vkt_fail(t, -EIO, "dup the dma-buf: %s", strerror(errno)),
		       VK_ERROR_OUT_OF_HOST_MEMORY;
	VkResult r = vkt_dmabuf_memory_import(t, req, (uint32_t)type, dedicated_image, fd, mem);
	if (r != VK_SUCCESS) {
		close(fd); /* the import failed: the duplicate is still ours */
		return vkt_fail_vk(t, "vkAllocateMemory (import the dma-buf)", r);
	}
	return VK_SUCCESS;
}

VkResult
vkt_dmabuf_buffer(struct vkt *t, VkDeviceSize size, VkBuffer *buffer, VkMemoryRequirements *req)
{
	VkExternalMemoryBufferCreateInfo ext = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
	};
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.pNext = &ext,
		.size = size,
		.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
	};
	VkResult r = vkCreateBuffer(t->device, &info, NULL, buffer);

	if (r == VK_SUCCESS)
		vkGetBufferMemoryRequirements(t->device, *buffer, req);
	return r;
}

VkResult
vkt_import_buffer(struct vkt *t, int dmabuf_fd, VkDeviceSize size, struct vkt_buffer *b)
{
	memset(b, 0, sizeof(*b));
	VkMemoryRequirements req;
	VkResult r = vkt_dmabuf_buffer(t, size, &b->buffer, &req);
	if (r != VK_SUCCESS)
		return vkt_fail_vk(t, "vkCreateBuffer (a dma-buf buffer)", r);
	r = import_memory(t, dmabuf_fd, &req, VK_NULL_HANDLE, &b->memory);
	if (r != VK_SUCCESS)
		return r;
	VKT_TRY_VK(t, vkBindBufferMemory(t->device, b->buffer, b->memory, 0));
	b->size = size;
	return VK_SUCCESS;
}

/* A 2D single-sample image of d's format, size and usage, UNDEFINED (as
 * external memory requires), with pNext's external memory info. */
static VkResult
create_image(struct vkt *t, const struct vkt_image_desc *d, VkImageTiling tiling,
	     const void *pnext, VkImage *image)
{
	VkImageCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
		.pNext = pnext,
		.imageType = VK_IMAGE_TYPE_2D,
		.format = d->format,
		.extent = { d->width, d->height, 1 },
		.mipLevels = 1,
		.arrayLayers = 1,
		.samples = VK_SAMPLE_COUNT_1_BIT,
		.tiling = tiling,
		.usage = d->usage,
		.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
	};
	return vkCreateImage(t->device, &info, NULL, image);
}

/* The image's one subresource layout (aspect: COLOR, or MEMORY_PLANE_0 for a
 * DRM-modifier image) into img->offset / row_pitch. */
static void
read_layout(struct vkt *t, struct vkt_image *img, VkImageAspectFlags aspect)
{
	VkImageSubresource sub = { aspect, 0, 0 };
	VkSubresourceLayout layout;
	vkGetImageSubresourceLayout(t->device, img->image, &sub, &layout);
	img->offset = layout.offset;
	img->row_pitch = layout.rowPitch;
}

/* Bind img->memory to img->image: vkBindImageMemory2 or (bind2 false) vkBindImageMemory. */
static VkResult
bind_image(struct vkt *t, struct vkt_image *img, bool bind2)
{
	if (bind2) {
		VkBindImageMemoryInfo bind = {
			.sType = VK_STRUCTURE_TYPE_BIND_IMAGE_MEMORY_INFO,
			.image = img->image,
			.memory = img->memory,
		};
		VKT_TRY_VK(t, vkBindImageMemory2(t->device, 1, &bind));
	} else {
		VKT_TRY_VK(t, vkBindImageMemory(t->device, img->image, img->memory, 0));
	}
	return VK_SUCCESS;
}

/*
 * Memory the driver allocates itself and exports as a dma-buf: host-visible
 * and coherent, mapped into *map; *fd is the caller's. For drivers that
 * cannot import other drivers' dma-bufs (venus: virtio_gpu refuses vgem and
 * udmabuf buffers) the shared resource must come from them.
 */
static VkResult
export_memory(struct vkt *t, const VkMemoryRequirements *req, VkImage dedicated_image,
	      VkDeviceMemory *mem, void **map, int *fd)
{
	*fd = -1;
	PFN_vkGetMemoryFdKHR get_fd =
		(PFN_vkGetMemoryFdKHR)vkGetDeviceProcAddr(t->device, "vkGetMemoryFdKHR");
	if (!get_fd || !t->has_dmabuf)
		return vkt_fail(t, -ENODEV, "dma-buf export is not enabled"),
		       VK_ERROR_EXTENSION_NOT_PRESENT;
	int type = vkt_memory_type(t, req->memoryTypeBits,
				   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
					   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
	if (type < 0)
		return vkt_fail(t, -ENODEV, "no host-visible coherent memory type for an exported "
				"dma-buf (bits 0x%x)", req->memoryTypeBits),
		       VK_ERROR_FEATURE_NOT_PRESENT;
	VKT_TRY_VK(t, vkt_dmabuf_memory_export(t, req, (uint32_t)type, dedicated_image, mem));
	VKT_TRY_VK(t, vkMapMemory(t->device, *mem, 0, VK_WHOLE_SIZE, 0, map));
	VkMemoryGetFdInfoKHR get = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
		.memory = *mem,
		.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
	};
	VKT_TRY_VK(t, get_fd(t->device, &get, fd));
	return VK_SUCCESS;
}

VkResult
vkt_export_buffer(struct vkt *t, VkDeviceSize size, struct vkt_buffer *b, int *dmabuf_fd)
{
	memset(b, 0, sizeof(*b));
	*dmabuf_fd = -1;
	VkMemoryRequirements req;
	VkResult r = vkt_dmabuf_buffer(t, size, &b->buffer, &req);
	if (r != VK_SUCCESS)
		return vkt_fail_vk(t, "vkCreateBuffer (a dma-buf buffer)", r);
	r = export_memory(t, &req, VK_NULL_HANDLE, &b->memory, &b->map, dmabuf_fd);
	if (r != VK_SUCCESS)
		return r;
	VKT_TRY_VK(t, vkBindBufferMemory(t->device, b->buffer, b->memory, 0));
	b->size = size;
	return VK_SUCCESS;
}

VkResult
vkt_export_image(struct vkt *t, const struct vkt_image_desc *d, struct vkt_image *img,
		 int *dmabuf_fd)
{
	memset(img, 0, sizeof(*img));
	*dmabuf_fd = -1;
	/* venus exports images only with the LINEAR DRM modifier (facts: OPTIMAL
	 * or LINEAR tiling with a DMA_BUF handle is not supported). */
	uint64_t linear = DRM_FORMAT_MOD_LINEAR;
	VkImageDrmFormatModifierListCreateInfoEXT modifiers = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_DRM_FORMAT_MODIFIER_LIST_CREATE_INFO_EXT,
		.drmFormatModifierCount = 1,
		.pDrmFormatModifiers = &linear,
	};
	VkExternalMemoryImageCreateInfo ext = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO,
		.pNext = &modifiers,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
	};
	VKT_TRY_VK(t, create_image(t, d, VK_IMAGE_TILING_DRM_FORMAT_MODIFIER_EXT, &ext,
				   &img->image));
	VkMemoryRequirements req;
	vkGetImageMemoryRequirements(t->device, img->image, &req);
	VkResult r = export_memory(t, &req, img->image, &img->memory, &img->map, dmabuf_fd);
	if (r != VK_SUCCESS)
		return r;
	img->map_size = req.size;
	r = bind_image(t, img, d->bind2);
	if (r != VK_SUCCESS)
		return r;
	img->width = d->width;
	img->height = d->height;
	/* A DRM-modifier image's layout is per memory plane. */
	read_layout(t, img, VK_IMAGE_ASPECT_MEMORY_PLANE_0_BIT_EXT);
	return VK_SUCCESS;
}

void
vkt_buffer_destroy(struct vkt *t, struct vkt_buffer *b)
{
	if (b->map)
		vkUnmapMemory(t->device, b->memory);
	if (b->buffer)
		vkDestroyBuffer(t->device, b->buffer, NULL);
	if (b->memory)
		vkFreeMemory(t->device, b->memory, NULL);
	memset(b, 0, sizeof(*b));
}

VkResult
vkt_import_image(struct vkt *t, int dmabuf_fd, const struct vkt_image_desc *d,
		 struct vkt_image *img)
{
	memset(img, 0, sizeof(*img));
	VkSubresourceLayout plane = { .offset = d->offset, .rowPitch = d->pitch };
	VkImageDrmFormatModifierExplicitCreateInfoEXT modifier = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_DRM_FORMAT_MODIFIER_EXPLICIT_CREATE_INFO_EXT,
		.drmFormatModifier = DRM_FORMAT_MOD_LINEAR,
		.drmFormatModifierPlaneCount = 1,
		.pPlaneLayouts = &plane,
	};
	VkExternalMemoryImageCreateInfo ext = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO,
		.pNext = d->explicit_layout ? &modifier : NULL,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
	};
	VKT_TRY_VK(t, create_image(t, d,
			    d->explicit_layout ? VK_IMAGE_TILING_DRM_FORMAT_MODIFIER_EXT
					       : VK_IMAGE_TILING_LINEAR,
			    &ext, &img->image));
	VkMemoryRequirements req;
	vkGetImageMemoryRequirements(t->device, img->image, &req);
	if (d->dmabuf_size && req.size > d->dmabuf_size)
		return vkt_fail(t, -EIO, "the image needs %llu bytes, the dma-buf has %llu",
			    (unsigned long long)req.size, (unsigned long long)d->dmabuf_size),
		       VK_ERROR_INVALID_EXTERNAL_HANDLE;
	VkResult r = import_memory(t, dmabuf_fd, &req, img->image, &img->memory);
	if (r != VK_SUCCESS)
		return r;
	r = bind_image(t, img, d->bind2);
	if (r != VK_SUCCESS)
		return r;
	img->width = d->width;
	img->height = d->height;
	img->offset = d->offset;
	img->row_pitch = d->pitch;
	if (!d->explicit_layout)
		read_layout(t, img, VK_IMAGE_ASPECT_COLOR_BIT);
	return VK_SUCCESS;
}

void
vkt_image_destroy(struct vkt *t, struct vkt_image *img)
{
	if (img->map)
		vkUnmapMemory(t->device, img->memory);
	if (img->image)
		vkDestroyImage(t->device, img->image, NULL);
	if (img->memory)
		vkFreeMemory(t->device, img->memory, NULL);
	memset(img, 0, sizeof(*img));
}
