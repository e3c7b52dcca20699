/* SPDX-License-Identifier: MIT */
/*
 * Which VkDeviceMemory objects are dma-bufs, with our own fd for each
 * (imports: a F_DUPFD_CLOEXEC copy taken before the driver consumes the
 * app's fd; exports: one vkGetMemoryFdKHR export), and which buffers and
 * images are bound to them.
 */
#include "memory.h"

#include <stdlib.h>
#include <unistd.h>

#include <syncbridge/dmabuf.h>

#include "log.h"
#include "util.h"

struct sbl_memory *
sbl_memory_ref(struct sbl_memory *mem)
{
	if (mem)
		atomic_fetch_add(&mem->refs, 1);
	return mem;
}

void
sbl_memory_unref(struct sbl_memory *mem)
{
	if (mem && atomic_fetch_sub(&mem->refs, 1) == 1) {
		fd_clear(&mem->fd);
		free(mem);
	}
}

static void
image_destroy(struct sbl_image *img)
{
	if (!img)
		return;
	for (int i = 0; i < SBL_MAX_PLANES; i++)
		sbl_memory_unref(img->mem[i]);
	free(img);
}

void
sbl_memory_device_finish(struct sbl_device *dev)
{
	sbl_map_foreach(&dev->images, i)
		image_destroy(dev->images.values[i]);
	sbl_map_foreach(&dev->buffers, i)
		sbl_memory_unref(dev->buffers.values[i]);
	sbl_map_foreach(&dev->memories, i)
		sbl_memory_unref(dev->memories.values[i]);
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */

static const void *
find_in_chain(const void *chain, VkStructureType type)
{
	for (const VkBaseInStructure *s = chain; s; s = s->pNext)
		if (s->sType == type)
			return s;
	return NULL;
}

/*
 * Track the new memory as the dma-buf fd (ours: owned by the struct
 * sbl_memory on success, closed on failure), which it was imported from or
 * exported as. A failure leaves that memory unsynchronised, never fails
 * the app's call.
 */
static void
track_memory(struct sbl_device *dev, VkDeviceMemory memory, int fd, bool imported)
{
	if (!sb_dmabuf_is_valid(fd)) {
		sb_warn("layer: DMA_BUF memory whose fd is not a dma-buf (driver/caller); "
			"not synchronised");
		fd_clear(&fd);
		return;
	}

	struct sbl_memory *mem = calloc(1, sizeof(*mem));
	if (!mem) {
		fd_clear(&fd);
		sbl_device_warn_untracked(dev, "vkAllocateMemory");
		return;
	}
	atomic_init(&mem->refs, 1);
	mem->handle = memory;
	mem->fd = fd_move(&fd);

	pthread_mutex_lock(&dev->lock);
	int ret = sbl_map_put(&dev->memories, (uint64_t)memory, mem);
	pthread_mutex_unlock(&dev->lock);
	if (ret < 0) {
		sbl_memory_unref(mem);
		sbl_device_warn_untracked(dev, "vkAllocateMemory");
	} else {
		sb_debug("layer: memory 0x%llx is dma-buf fd %d (%s)", (unsigned long long)memory,
			 mem->fd, imported ? "imported" : "exported");
	}
}

static VKAPI_ATTR VkResult VKAPI_CALL
AllocateMemory(VkDevice device, const VkMemoryAllocateInfo *info,
	       const VkAllocationCallbacks *alloc, VkDeviceMemory *memory)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	if (dev->mode == SBL_MODE_OFF)
		return dev->AllocateMemory(device, info, alloc, memory);

	const VkImportMemoryFdInfoKHR *import =
		find_in_chain(info->pNext, VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR);
	const VkExportMemoryAllocateInfo *export =
		find_in_chain(info->pNext, VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO);
	if (import && import->handleType != VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT)
		import = NULL;
	if (export && !(export->handleTypes & VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT))
		export = NULL;

	/*
	 * "Importing memory from a file descriptor transfers ownership of the
	 * file descriptor from the application to the Vulkan implementation":
	 * take our own reference to the dma-buf first. If the import fails the
	 * app keeps its fd, and we drop our copy.
	 */
	int fd = -1;
	if (import && import->fd >= 0) {
		fd = sb_fd_dup(import->fd);
		if (fd < 0)
			sb_log_errno(SB_LOG_WARN, fd,
				     "layer: cannot dup the imported dma-buf (process "
				     "fd limit?); that memory is not synchronised");
	}

	VkResult res = dev->AllocateMemory(device, info, alloc, memory);
	if (res != VK_SUCCESS) {
		fd_clear(&fd);
		return res;
	}

	if (!import && export) {
		VkMemoryGetFdInfoKHR get = {
			.sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
			.memory = *memory,
			.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
		};
		if (dev->GetMemoryFdKHR(device, &get, &fd) != VK_SUCCESS) {
			sb_warn("layer: vkGetMemoryFdKHR(DMA_BUF) failed on exportable memory "
				"(driver); that memory is not synchronised");
			fd = -1;
		}
	}
	if (fd >= 0)
		track_memory(dev, *memory, fd, import != NULL);
	return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL
FreeMemory(VkDevice device, VkDeviceMemory memory, const VkAllocationCallbacks *alloc)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return;
	if (memory && dev->mode != SBL_MODE_OFF) {
		pthread_mutex_lock(&dev->lock);
		struct sbl_memory *mem = sbl_map_remove(&dev->memories, (uint64_t)memory);
		pthread_mutex_unlock(&dev->lock);
		sbl_memory_unref(mem);
	}
	dev->FreeMemory(device, memory, alloc);
}

/* ------------------------------------------------------------------------ */
/* Buffers and images                                                        */

/* Under dev->lock. */
static void
bind_buffer(struct sbl_device *dev, VkBuffer buffer, VkDeviceMemory memory)
{
	struct sbl_memory *mem = sbl_map_get(&dev->memories, (uint64_t)memory);
	if (!mem)
		return;
	sbl_memory_ref(mem);
	struct sbl_memory *old = sbl_map_get(&dev->buffers, (uint64_t)buffer);
	if (sbl_map_put(&dev->buffers, (uint64_t)buffer, mem) < 0) {
		sbl_memory_unref(mem);
		sbl_device_warn_untracked(dev, "vkBindBufferMemory");
		return;
	}
	sbl_memory_unref(old);
}

/* Under dev->lock. */
static void
bind_image(struct sbl_device *dev, VkImage image, VkDeviceMemory memory, unsigned plane)
{
	struct sbl_memory *mem = sbl_map_get(&dev->memories, (uint64_t)memory);
	if (!mem || plane >= SBL_MAX_PLANES)
		return;
	struct sbl_image *img = sbl_map_get(&dev->images, (uint64_t)image);
	if (!img) {
		img = calloc(1, sizeof(*img));
		if (!img || sbl_map_put(&dev->images, (uint64_t)image, img) < 0) {
			free(img);
			sbl_device_warn_untracked(dev, "vkBindImageMemory");
			return;
		}
	}
	sbl_memory_unref(img->mem[plane]);
	img->mem[plane] = sbl_memory_ref(mem);
}

static unsigned
plane_index(const VkBindImageMemoryInfo *info)
{
	const VkBindImagePlaneMemoryInfo *plane =
		find_in_chain(info->pNext, VK_STRUCTURE_TYPE_BIND_IMAGE_PLANE_MEMORY_INFO);
	if (!plane)
		return 0;
	switch (plane->planeAspect) {
	case VK_IMAGE_ASPECT_PLANE_1_BIT:
	case VK_IMAGE_ASPECT_MEMORY_PLANE_1_BIT_EXT:
		return 1;
	case VK_IMAGE_ASPECT_PLANE_2_BIT:
	case VK_IMAGE_ASPECT_MEMORY_PLANE_2_BIT_EXT:
		return 2;
	case VK_IMAGE_ASPECT_MEMORY_PLANE_3_BIT_EXT:
		return 3;
	default:
		return 0;
	}
}

static VKAPI_ATTR VkResult VKAPI_CALL
BindBufferMemory(VkDevice device, VkBuffer buffer, VkDeviceMemory memory, VkDeviceSize offset)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	VkResult res = dev->BindBufferMemory(device, buffer, memory, offset);
	if (res == VK_SUCCESS && dev->mode != SBL_MODE_OFF) {
		pthread_mutex_lock(&dev->lock);
		bind_buffer(dev, buffer, memory);
		pthread_mutex_unlock(&dev->lock);
	}
	return res;
}

static VkResult
bind_buffers2(VkDevice device, uint32_t count, const VkBindBufferMemoryInfo *infos, bool khr)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	PFN_vkBindBufferMemory2 next = khr ? dev->BindBufferMemory2KHR : dev->BindBufferMemory2;
	VkResult res = next(device, count, infos);
	if (res == VK_SUCCESS && dev->mode != SBL_MODE_OFF) {
		pthread_mutex_lock(&dev->lock);
		for (uint32_t i = 0; i < count; i++)
			bind_buffer(dev, infos[i].buffer, infos[i].memory);
		pthread_mutex_unlock(&dev->lock);
	}
	return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL
BindBufferMemory2(VkDevice device, uint32_t count, const VkBindBufferMemoryInfo *infos)
{
	return bind_buffers2(device, count, infos, false);
}

static VKAPI_ATTR VkResult VKAPI_CALL
BindBufferMemory2KHR(VkDevice device, uint32_t count, const VkBindBufferMemoryInfo *infos)
{
	return bind_buffers2(device, count, infos, true);
}

static VKAPI_ATTR VkResult VKAPI_CALL
BindImageMemory(VkDevice device, VkImage image, VkDeviceMemory memory, VkDeviceSize offset)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	VkResult res = dev->BindImageMemory(device, image, memory, offset);
	if (res == VK_SUCCESS && dev->mode != SBL_MODE_OFF) {
		pthread_mutex_lock(&dev->lock);
		bind_image(dev, image, memory, 0);
		pthread_mutex_unlock(&dev->lock);
	}
	return res;
}

static VkResult
bind_images2(VkDevice device, uint32_t count, const VkBindImageMemoryInfo *infos, bool khr)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	PFN_vkBindImageMemory2 next = khr ? dev->BindImageMemory2KHR : dev->BindImageMemory2;
	VkResult res = next(device, count, infos);
	if (res == VK_SUCCESS && dev->mode != SBL_MODE_OFF) {
		pthread_mutex_lock(&dev->lock);
		for (uint32_t i = 0; i < count; i++)
			bind_image(dev, infos[i].image, infos[i].memory, plane_index(&infos[i]));
		pthread_mutex_unlock(&dev->lock);
	}
	return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL
BindImageMemory2(VkDevice device, uint32_t count, const VkBindImageMemoryInfo *infos)
{
	return bind_images2(device, count, infos, false);
}

static VKAPI_ATTR VkResult VKAPI_CALL
BindImageMemory2KHR(VkDevice device, uint32_t count, const VkBindImageMemoryInfo *infos)
{
	return bind_images2(device, count, infos, true);
}

static VKAPI_ATTR void VKAPI_CALL
DestroyBuffer(VkDevice device, VkBuffer buffer, const VkAllocationCallbacks *alloc)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return;
	if (buffer && dev->mode != SBL_MODE_OFF) {
		pthread_mutex_lock(&dev->lock);
		struct sbl_memory *mem = sbl_map_remove(&dev->buffers, (uint64_t)buffer);
		pthread_mutex_unlock(&dev->lock);
		sbl_memory_unref(mem);
	}
	dev->DestroyBuffer(device, buffer, alloc);
}

static VKAPI_ATTR void VKAPI_CALL
DestroyImage(VkDevice device, VkImage image, const VkAllocationCallbacks *alloc)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return;
	if (image && dev->mode != SBL_MODE_OFF) {
		pthread_mutex_lock(&dev->lock);
		struct sbl_image *img = sbl_map_remove(&dev->images, (uint64_t)image);
		pthread_mutex_unlock(&dev->lock);
		image_destroy(img);
	}
	dev->DestroyImage(device, image, alloc);
}

const struct sbl_entry sbl_memory_entries[] = {
	SBL_ENTRY(AllocateMemory),
	SBL_ENTRY(FreeMemory),
	SBL_ENTRY(BindBufferMemory),
	SBL_ENTRY(BindBufferMemory2),
	SBL_ENTRY(BindBufferMemory2KHR),
	SBL_ENTRY(BindImageMemory),
	SBL_ENTRY(BindImageMemory2),
	SBL_ENTRY(BindImageMemory2KHR),
	SBL_ENTRY(DestroyBuffer),
	SBL_ENTRY(DestroyImage),
	{ NULL, NULL },
};
