/* SPDX-License-Identifier: MIT */
/*
 * What the layer remembers between recording and submission:
 *  - which VkDeviceMemory objects are dma-bufs, with our own fd for each
 *    (imports: a F_DUPFD_CLOEXEC copy taken before the driver consumes the
 *    app's fd; exports: one vkGetMemoryFdKHR export);
 *  - which buffers and images are bound to them;
 *  - per command buffer, the queue family ownership transfers from or to
 *    VK_QUEUE_FAMILY_FOREIGN_EXT / VK_QUEUE_FAMILY_EXTERNAL that name such a
 *    resource, with the access the acquiring (dstAccessMask) or releasing
 *    (srcAccessMask) side declared. Secondary command buffers' transfers are
 *    copied into the primary by vkCmdExecuteCommands. Begin, reset and free
 *    forget them.
 *
 * dev->xfer_cmds counts the entries of dev->cmds that hold at least one
 * transfer, so that a submit can skip every command buffer lookup while it is
 * zero (docs/performance.md, figure 1). It changes only in cmd_append (0 → 1
 * transfers) and cmd_clear (n → 0; cmd_destroy clears before an entry leaves
 * the map), all under dev->lock, so at every unlock it equals what a scan of
 * the map would count.
 */
#include "layer.h"

#include <stdlib.h>
#include <unistd.h>

#include <syncbridge/dmabuf.h>

#include "log.h"
#include "util.h"

/*
 * Access bits known to be read-only (the same positions in VkAccessFlags and
 * VkAccessFlags2). Anything else — including bits newer than this list and an
 * empty mask — counts as a write: over-synchronising is safe, missing a
 * writer is not.
 */
static const VkAccessFlags2 read_only_access =
	0x00000001ull |    /* INDIRECT_COMMAND_READ */
	0x00000002ull |    /* INDEX_READ */
	0x00000004ull |    /* VERTEX_ATTRIBUTE_READ */
	0x00000008ull |    /* UNIFORM_READ */
	0x00000010ull |    /* INPUT_ATTACHMENT_READ */
	0x00000020ull |    /* SHADER_READ */
	0x00000080ull |    /* COLOR_ATTACHMENT_READ */
	0x00000200ull |    /* DEPTH_STENCIL_ATTACHMENT_READ */
	0x00000800ull |    /* TRANSFER_READ */
	0x00002000ull |    /* HOST_READ */
	0x00008000ull |    /* MEMORY_READ */
	0x00020000ull |    /* COMMAND_PREPROCESS_READ_NV */
	0x00080000ull |    /* COLOR_ATTACHMENT_READ_NONCOHERENT_EXT */
	0x00100000ull |    /* CONDITIONAL_RENDERING_READ_EXT */
	0x00200000ull |    /* ACCELERATION_STRUCTURE_READ_KHR */
	0x00800000ull |    /* FRAGMENT_SHADING_RATE_ATTACHMENT_READ_KHR */
	0x01000000ull |    /* FRAGMENT_DENSITY_MAP_READ_EXT */
	0x04000000ull |    /* TRANSFORM_FEEDBACK_COUNTER_READ_EXT */
	0x100000000ull |   /* SHADER_SAMPLED_READ */
	0x200000000ull |   /* SHADER_STORAGE_READ */
	0x800000000ull |   /* VIDEO_DECODE_READ_KHR */
	0x2000000000ull |  /* VIDEO_ENCODE_READ_KHR */
	0x8000000000ull |  /* INVOCATION_MASK_READ_HUAWEI */
	0x10000000000ull | /* SHADER_BINDING_TABLE_READ_KHR */
	0x20000000000ull | /* DESCRIPTOR_BUFFER_READ_EXT */
	0x40000000000ull | /* OPTICAL_FLOW_READ_NV */
	0x100000000000ull; /* MICROMAP_READ_EXT */

bool
sbl_access_writes(VkAccessFlags2 access)
{
	return access == 0 || (access & ~read_only_access) != 0;
}

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

/* Under dev->lock (or with the device gone): forget the recorded transfers. */
static void
cmd_clear(struct sbl_device *dev, struct sbl_cmd *cmd)
{
	if (cmd->count == 0)
		return;
	for (uint32_t i = 0; i < cmd->count; i++)
		sbl_memory_unref(cmd->xfers[i].mem);
	cmd->count = 0;
	atomic_fetch_sub_explicit(&dev->xfer_cmds, 1, memory_order_relaxed);
}

static void
cmd_destroy(struct sbl_device *dev, struct sbl_cmd *cmd)
{
	if (!cmd)
		return;
	cmd_clear(dev, cmd);
	free(cmd->xfers);
	free(cmd);
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
sbl_device_tables_init(struct sbl_device *dev)
{
	sbl_map_init(&dev->memories);
	sbl_map_init(&dev->buffers);
	sbl_map_init(&dev->images);
	sbl_map_init(&dev->cmds);
	atomic_init(&dev->xfer_cmds, 0);
}

void
sbl_device_tables_finish(struct sbl_device *dev)
{
	sbl_map_foreach(&dev->cmds, i)
		cmd_destroy(dev, dev->cmds.values[i]);
	sbl_map_foreach(&dev->images, i)
		image_destroy(dev->images.values[i]);
	sbl_map_foreach(&dev->buffers, i)
		sbl_memory_unref(dev->buffers.values[i]);
	sbl_map_foreach(&dev->memories, i)
		sbl_memory_unref(dev->memories.values[i]);
	sbl_map_finish(&dev->cmds);
	sbl_map_finish(&dev->images);
	sbl_map_finish(&dev->buffers);
	sbl_map_finish(&dev->memories);
}

static void
warn_untracked(struct sbl_device *dev, const char *what)
{
	if (sbl_device_warn_once(dev, SBL_WARN_TRACK))
		sb_warn("layer: %s: out of memory (ours); that resource is not synchronised", what);
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

VKAPI_ATTR VkResult VKAPI_CALL
sbl_AllocateMemory(VkDevice device, const VkMemoryAllocateInfo *info,
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
			sb_log_errno(SB_LOG_WARN, fd, "layer: cannot dup the imported dma-buf (process "
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
	if (fd < 0)
		return VK_SUCCESS;
	if (!sb_dmabuf_is_dmabuf(fd)) {
		sb_warn("layer: DMA_BUF memory whose fd is not a dma-buf (driver/caller); "
			"not synchronised");
		fd_clear(&fd);
		return VK_SUCCESS;
	}

	struct sbl_memory *mem = calloc(1, sizeof(*mem));
	if (!mem) {
		fd_clear(&fd);
		warn_untracked(dev, "vkAllocateMemory");
		return VK_SUCCESS;
	}
	atomic_init(&mem->refs, 1);
	mem->handle = *memory;
	mem->fd = fd_move(&fd);

	pthread_mutex_lock(&dev->lock);
	int ret = sbl_map_put(&dev->memories, (uint64_t)*memory, mem);
	pthread_mutex_unlock(&dev->lock);
	if (ret < 0) {
		sbl_memory_unref(mem);
		warn_untracked(dev, "vkAllocateMemory");
	} else {
		sb_debug("layer: memory 0x%llx is dma-buf fd %d (%s)", (unsigned long long)*memory,
			 mem->fd, import ? "imported" : "exported");
	}
	return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL
sbl_FreeMemory(VkDevice device, VkDeviceMemory memory, const VkAllocationCallbacks *alloc)
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
		warn_untracked(dev, "vkBindBufferMemory");
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
			warn_untracked(dev, "vkBindImageMemory");
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

VKAPI_ATTR VkResult VKAPI_CALL
sbl_BindBufferMemory(VkDevice device, VkBuffer buffer, VkDeviceMemory memory, VkDeviceSize offset)
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

VKAPI_ATTR VkResult VKAPI_CALL
sbl_BindBufferMemory2(VkDevice device, uint32_t count, const VkBindBufferMemoryInfo *infos)
{
	return bind_buffers2(device, count, infos, false);
}

VKAPI_ATTR VkResult VKAPI_CALL
sbl_BindBufferMemory2KHR(VkDevice device, uint32_t count, const VkBindBufferMemoryInfo *infos)
{
	return bind_buffers2(device, count, infos, true);
}

VKAPI_ATTR VkResult VKAPI_CALL
sbl_BindImageMemory(VkDevice device, VkImage image, VkDeviceMemory memory, VkDeviceSize offset)
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

VKAPI_ATTR VkResult VKAPI_CALL
sbl_BindImageMemory2(VkDevice device, uint32_t count, const VkBindImageMemoryInfo *infos)
{
	return bind_images2(device, count, infos, false);
}

VKAPI_ATTR VkResult VKAPI_CALL
sbl_BindImageMemory2KHR(VkDevice device, uint32_t count, const VkBindImageMemoryInfo *infos)
{
	return bind_images2(device, count, infos, true);
}

VKAPI_ATTR void VKAPI_CALL
sbl_DestroyBuffer(VkDevice device, VkBuffer buffer, const VkAllocationCallbacks *alloc)
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

VKAPI_ATTR void VKAPI_CALL
sbl_DestroyImage(VkDevice device, VkImage image, const VkAllocationCallbacks *alloc)
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

/* ------------------------------------------------------------------------ */
/* Command buffers                                                           */

VKAPI_ATTR VkResult VKAPI_CALL
sbl_AllocateCommandBuffers(VkDevice device, const VkCommandBufferAllocateInfo *info,
			   VkCommandBuffer *cmds)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	VkResult res = dev->AllocateCommandBuffers(device, info, cmds);
	if (res != VK_SUCCESS || dev->mode != SBL_MODE_TRANSFERS)
		return res;

	pthread_mutex_lock(&dev->lock);
	for (uint32_t i = 0; i < info->commandBufferCount; i++) {
		struct sbl_cmd *cmd = calloc(1, sizeof(*cmd));
		if (cmd)
			cmd->pool = info->commandPool;
		if (!cmd || sbl_map_put(&dev->cmds, (uint64_t)(uintptr_t)cmds[i], cmd) < 0) {
			free(cmd);
			warn_untracked(dev, "vkAllocateCommandBuffers");
		}
	}
	pthread_mutex_unlock(&dev->lock);
	return res;
}

VKAPI_ATTR void VKAPI_CALL
sbl_FreeCommandBuffers(VkDevice device, VkCommandPool pool, uint32_t count,
		       const VkCommandBuffer *cmds)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return;
	if (dev->mode == SBL_MODE_TRANSFERS) {
		pthread_mutex_lock(&dev->lock);
		for (uint32_t i = 0; i < count; i++)
			if (cmds[i])
				cmd_destroy(dev, sbl_map_remove(&dev->cmds,
								(uint64_t)(uintptr_t)cmds[i]));
		pthread_mutex_unlock(&dev->lock);
	}
	dev->FreeCommandBuffers(device, pool, count, cmds);
}

/* Forget what the command buffer recorded. The app synchronises access to
 * the command buffer itself; the map and dev->xfer_cmds need our lock. */
static void
cmd_forget(struct sbl_device *dev, VkCommandBuffer cb)
{
	pthread_mutex_lock(&dev->lock);
	struct sbl_cmd *cmd = sbl_map_get(&dev->cmds, (uint64_t)(uintptr_t)cb);
	if (cmd)
		cmd_clear(dev, cmd);
	pthread_mutex_unlock(&dev->lock);
}

VKAPI_ATTR VkResult VKAPI_CALL
sbl_BeginCommandBuffer(VkCommandBuffer cb, const VkCommandBufferBeginInfo *info)
{
	struct sbl_device *dev = sbl_device_lookup(cb);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	if (dev->mode == SBL_MODE_TRANSFERS)
		cmd_forget(dev, cb); /* begin implicitly resets */
	return dev->BeginCommandBuffer(cb, info);
}

VKAPI_ATTR VkResult VKAPI_CALL
sbl_ResetCommandBuffer(VkCommandBuffer cb, VkCommandBufferResetFlags flags)
{
	struct sbl_device *dev = sbl_device_lookup(cb);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	if (dev->mode == SBL_MODE_TRANSFERS)
		cmd_forget(dev, cb);
	return dev->ResetCommandBuffer(cb, flags);
}

VKAPI_ATTR VkResult VKAPI_CALL
sbl_ResetCommandPool(VkDevice device, VkCommandPool pool, VkCommandPoolResetFlags flags)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	if (dev->mode == SBL_MODE_TRANSFERS) {
		pthread_mutex_lock(&dev->lock);
		sbl_map_foreach(&dev->cmds, i) {
			struct sbl_cmd *cmd = dev->cmds.values[i];
			if (cmd->pool == pool)
				cmd_clear(dev, cmd);
		}
		pthread_mutex_unlock(&dev->lock);
	}
	return dev->ResetCommandPool(device, pool, flags);
}

VKAPI_ATTR void VKAPI_CALL
sbl_DestroyCommandPool(VkDevice device, VkCommandPool pool, const VkAllocationCallbacks *alloc)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return;
	if (pool && dev->mode == SBL_MODE_TRANSFERS) {
		pthread_mutex_lock(&dev->lock);
		/* Removing shifts entries backwards: rescan a slot after a removal. */
		for (uint32_t i = 0; i < dev->cmds.capacity;) {
			struct sbl_cmd *cmd = dev->cmds.keys[i] ? dev->cmds.values[i] : NULL;
			if (cmd && cmd->pool == pool) {
				sbl_map_remove(&dev->cmds, dev->cmds.keys[i]);
				cmd_destroy(dev, cmd);
			} else {
				i++;
			}
		}
		pthread_mutex_unlock(&dev->lock);
	}
	dev->DestroyCommandPool(device, pool, alloc);
}

/* Under dev->lock. */
static bool
cmd_append(struct sbl_device *dev, struct sbl_cmd *cmd, struct sbl_memory *mem,
	   enum sbl_xfer_kind kind, int access)
{
	if (cmd->count == cmd->capacity) {
		uint32_t cap = cmd->capacity ? cmd->capacity * 2 : 4;
		struct sbl_xfer *x = realloc(cmd->xfers, cap * sizeof(*x));
		if (!x)
			return false;
		cmd->xfers = x;
		cmd->capacity = cap;
	}
	cmd->xfers[cmd->count++] = (struct sbl_xfer){
		.mem = sbl_memory_ref(mem),
		.kind = kind,
		.access = access,
	};
	if (cmd->count == 1)
		atomic_fetch_add_explicit(&dev->xfer_cmds, 1, memory_order_relaxed);
	return true;
}

static bool
is_external_family(uint32_t family)
{
	return family == VK_QUEUE_FAMILY_FOREIGN_EXT || family == VK_QUEUE_FAMILY_EXTERNAL;
}

/*
 * Whether a barrier is an ownership transfer with the outside world, and
 * which side. The access that matters is the one on our side: the acquiring
 * barrier's dstAccessMask, the releasing barrier's srcAccessMask.
 */
static bool
classify(uint32_t src_family, uint32_t dst_family, VkAccessFlags2 src_access,
	 VkAccessFlags2 dst_access, enum sbl_xfer_kind *kind, int *access)
{
	bool from_outside = is_external_family(src_family);
	bool to_outside = is_external_family(dst_family);

	if (from_outside == to_outside)
		return false;
	if (from_outside) {
		*kind = SBL_XFER_ACQUIRE;
		*access = sbl_access_writes(dst_access) ? SB_ACCESS_WRITE : SB_ACCESS_READ;
	} else {
		*kind = SBL_XFER_RELEASE;
		*access = sbl_access_writes(src_access) ? SB_ACCESS_WRITE : SB_ACCESS_READ;
	}
	return true;
}

/* One transfer barrier, resolved to memory. Under dev->lock. */
static void
record_buffer(struct sbl_device *dev, struct sbl_cmd *cmd, VkBuffer buffer,
	      enum sbl_xfer_kind kind, int access)
{
	struct sbl_memory *mem = sbl_map_get(&dev->buffers, (uint64_t)buffer);
	if (mem && !cmd_append(dev, cmd, mem, kind, access))
		warn_untracked(dev, "vkCmdPipelineBarrier");
}

static void
record_image(struct sbl_device *dev, struct sbl_cmd *cmd, VkImage image,
	     enum sbl_xfer_kind kind, int access)
{
	struct sbl_image *img = sbl_map_get(&dev->images, (uint64_t)image);
	if (!img)
		return;
	for (int p = 0; p < SBL_MAX_PLANES; p++)
		if (img->mem[p] && !cmd_append(dev, cmd, img->mem[p], kind, access))
			warn_untracked(dev, "vkCmdPipelineBarrier");
}

VKAPI_ATTR void VKAPI_CALL
sbl_CmdPipelineBarrier(VkCommandBuffer cb, VkPipelineStageFlags src_stages,
		       VkPipelineStageFlags dst_stages, VkDependencyFlags flags,
		       uint32_t memory_barrier_count, const VkMemoryBarrier *memory_barriers,
		       uint32_t buffer_barrier_count, const VkBufferMemoryBarrier *buffer_barriers,
		       uint32_t image_barrier_count, const VkImageMemoryBarrier *image_barriers)
{
	struct sbl_device *dev = sbl_device_lookup(cb);
	if (!dev)
		return;

	if (dev->mode == SBL_MODE_TRANSFERS) {
		enum sbl_xfer_kind kind;
		int access;
		bool any = false;
		for (uint32_t i = 0; i < buffer_barrier_count && !any; i++) {
			const VkBufferMemoryBarrier *b = &buffer_barriers[i];
			any = classify(b->srcQueueFamilyIndex, b->dstQueueFamilyIndex,
				       b->srcAccessMask, b->dstAccessMask, &kind, &access);
		}
		for (uint32_t i = 0; i < image_barrier_count && !any; i++) {
			const VkImageMemoryBarrier *b = &image_barriers[i];
			any = classify(b->srcQueueFamilyIndex, b->dstQueueFamilyIndex,
				       b->srcAccessMask, b->dstAccessMask, &kind, &access);
		}
		if (any) {
			pthread_mutex_lock(&dev->lock);
			struct sbl_cmd *cmd = sbl_map_get(&dev->cmds, (uint64_t)(uintptr_t)cb);
			for (uint32_t i = 0; cmd && i < buffer_barrier_count; i++) {
				const VkBufferMemoryBarrier *b = &buffer_barriers[i];
				if (classify(b->srcQueueFamilyIndex, b->dstQueueFamilyIndex,
					     b->srcAccessMask, b->dstAccessMask, &kind, &access))
					record_buffer(dev, cmd, b->buffer, kind, access);
			}
			for (uint32_t i = 0; cmd && i < image_barrier_count; i++) {
				const VkImageMemoryBarrier *b = &image_barriers[i];
				if (classify(b->srcQueueFamilyIndex, b->dstQueueFamilyIndex,
					     b->srcAccessMask, b->dstAccessMask, &kind, &access))
					record_image(dev, cmd, b->image, kind, access);
			}
			pthread_mutex_unlock(&dev->lock);
		}
	}

	dev->CmdPipelineBarrier(cb, src_stages, dst_stages, flags, memory_barrier_count,
				memory_barriers, buffer_barrier_count, buffer_barriers,
				image_barrier_count, image_barriers);
}

static void
record_dependency(struct sbl_device *dev, VkCommandBuffer cb, const VkDependencyInfo *dep)
{
	enum sbl_xfer_kind kind;
	int access;
	bool any = false;

	for (uint32_t i = 0; i < dep->bufferMemoryBarrierCount && !any; i++) {
		const VkBufferMemoryBarrier2 *b = &dep->pBufferMemoryBarriers[i];
		any = classify(b->srcQueueFamilyIndex, b->dstQueueFamilyIndex, b->srcAccessMask,
			       b->dstAccessMask, &kind, &access);
	}
	for (uint32_t i = 0; i < dep->imageMemoryBarrierCount && !any; i++) {
		const VkImageMemoryBarrier2 *b = &dep->pImageMemoryBarriers[i];
		any = classify(b->srcQueueFamilyIndex, b->dstQueueFamilyIndex, b->srcAccessMask,
			       b->dstAccessMask, &kind, &access);
	}
	if (!any)
		return;

	pthread_mutex_lock(&dev->lock);
	struct sbl_cmd *cmd = sbl_map_get(&dev->cmds, (uint64_t)(uintptr_t)cb);
	for (uint32_t i = 0; cmd && i < dep->bufferMemoryBarrierCount; i++) {
		const VkBufferMemoryBarrier2 *b = &dep->pBufferMemoryBarriers[i];
		if (classify(b->srcQueueFamilyIndex, b->dstQueueFamilyIndex, b->srcAccessMask,
			     b->dstAccessMask, &kind, &access))
			record_buffer(dev, cmd, b->buffer, kind, access);
	}
	for (uint32_t i = 0; cmd && i < dep->imageMemoryBarrierCount; i++) {
		const VkImageMemoryBarrier2 *b = &dep->pImageMemoryBarriers[i];
		if (classify(b->srcQueueFamilyIndex, b->dstQueueFamilyIndex, b->srcAccessMask,
			     b->dstAccessMask, &kind, &access))
			record_image(dev, cmd, b->image, kind, access);
	}
	pthread_mutex_unlock(&dev->lock);
}

VKAPI_ATTR void VKAPI_CALL
sbl_CmdPipelineBarrier2(VkCommandBuffer cb, const VkDependencyInfo *dep)
{
	struct sbl_device *dev = sbl_device_lookup(cb);
	if (!dev)
		return;
	if (dev->mode == SBL_MODE_TRANSFERS)
		record_dependency(dev, cb, dep);
	dev->CmdPipelineBarrier2(cb, dep);
}

VKAPI_ATTR void VKAPI_CALL
sbl_CmdPipelineBarrier2KHR(VkCommandBuffer cb, const VkDependencyInfo *dep)
{
	struct sbl_device *dev = sbl_device_lookup(cb);
	if (!dev)
		return;
	if (dev->mode == SBL_MODE_TRANSFERS)
		record_dependency(dev, cb, dep);
	dev->CmdPipelineBarrier2KHR(cb, dep);
}

VKAPI_ATTR void VKAPI_CALL
sbl_CmdExecuteCommands(VkCommandBuffer cb, uint32_t count, const VkCommandBuffer *secondaries)
{
	struct sbl_device *dev = sbl_device_lookup(cb);
	if (!dev)
		return;

	if (dev->mode == SBL_MODE_TRANSFERS) {
		pthread_mutex_lock(&dev->lock);
		struct sbl_cmd *primary = sbl_map_get(&dev->cmds, (uint64_t)(uintptr_t)cb);
		for (uint32_t i = 0; primary && i < count; i++) {
			struct sbl_cmd *sec =
				sbl_map_get(&dev->cmds, (uint64_t)(uintptr_t)secondaries[i]);
			/* A secondary is executable (fully recorded) by now: copy its
			 * transfers, as re-recording it invalidates this primary. */
			for (uint32_t j = 0; sec && j < sec->count; j++)
				if (!cmd_append(dev, primary, sec->xfers[j].mem,
						sec->xfers[j].kind, sec->xfers[j].access))
					warn_untracked(dev, "vkCmdExecuteCommands");
		}
		pthread_mutex_unlock(&dev->lock);
	}
	dev->CmdExecuteCommands(cb, count, secondaries);
}
