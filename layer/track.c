/* SPDX-License-Identifier: MIT */
/*
 * What the layer remembers of command buffers between recording and
 * submission: per command buffer, the queue family ownership transfers from
 * or to VK_QUEUE_FAMILY_FOREIGN_EXT / VK_QUEUE_FAMILY_EXTERNAL that name a
 * dma-buf resource (memory.c), with the access the acquiring (dstAccessMask)
 * or releasing (srcAccessMask) side declared. Secondary command buffers'
 * transfers are copied into the primary by vkCmdExecuteCommands. Begin,
 * reset and free forget them.
 *
 * dev->xfer_cmds counts the entries of dev->cmds that hold at least one
 * transfer, so that a submit can skip every command buffer lookup while it is
 * zero (docs/performance.md, figure 1). It changes only in cmd_append (0 → 1
 * transfers) and cmd_clear (n → 0; cmd_destroy clears before an entry leaves
 * the map), all under dev->lock, so at every unlock it equals what a scan of
 * the map would count.
 */
#include "track.h"

#include <stdlib.h>

#include <syncbridge/dmabuf.h>

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

static bool
access_writes(VkAccessFlags2 access)
{
	return access == 0 || (access & ~read_only_access) != 0;
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

void
sbl_track_device_finish(struct sbl_device *dev)
{
	sbl_map_foreach(&dev->cmds, i)
		cmd_destroy(dev, dev->cmds.values[i]);
}

/* ------------------------------------------------------------------------ */
/* Command buffers                                                           */

static VKAPI_ATTR VkResult VKAPI_CALL
AllocateCommandBuffers(VkDevice device, const VkCommandBufferAllocateInfo *info,
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
			sbl_device_warn_untracked(dev, "vkAllocateCommandBuffers");
		}
	}
	pthread_mutex_unlock(&dev->lock);
	return res;
}

static VKAPI_ATTR void VKAPI_CALL
FreeCommandBuffers(VkDevice device, VkCommandPool pool, uint32_t count,
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

static VKAPI_ATTR VkResult VKAPI_CALL
BeginCommandBuffer(VkCommandBuffer cb, const VkCommandBufferBeginInfo *info)
{
	struct sbl_device *dev = sbl_device_lookup(cb);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	if (dev->mode == SBL_MODE_TRANSFERS)
		cmd_forget(dev, cb); /* begin implicitly resets */
	return dev->BeginCommandBuffer(cb, info);
}

static VKAPI_ATTR VkResult VKAPI_CALL
ResetCommandBuffer(VkCommandBuffer cb, VkCommandBufferResetFlags flags)
{
	struct sbl_device *dev = sbl_device_lookup(cb);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	if (dev->mode == SBL_MODE_TRANSFERS)
		cmd_forget(dev, cb);
	return dev->ResetCommandBuffer(cb, flags);
}

static VKAPI_ATTR VkResult VKAPI_CALL
ResetCommandPool(VkDevice device, VkCommandPool pool, VkCommandPoolResetFlags flags)
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

static VKAPI_ATTR void VKAPI_CALL
DestroyCommandPool(VkDevice device, VkCommandPool pool, const VkAllocationCallbacks *alloc)
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

/* The fields of a barrier that matter here, from either struct version. */
struct barrier {
	uint32_t src_family, dst_family;
	VkAccessFlags2 src_access, dst_access;
	bool is_image;
	VkBuffer buffer; /* a buffer barrier's */
	VkImage image;   /* an image barrier's */
};

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
classify(const struct barrier *b, enum sbl_xfer_kind *kind, int *access)
{
	bool from_outside = is_external_family(b->src_family);
	bool to_outside = is_external_family(b->dst_family);

	if (from_outside == to_outside)
		return false;
	if (from_outside) {
		*kind = SBL_XFER_ACQUIRE;
		*access = access_writes(b->dst_access) ? SB_ACCESS_WRITE : SB_ACCESS_READ;
	} else {
		*kind = SBL_XFER_RELEASE;
		*access = access_writes(b->src_access) ? SB_ACCESS_WRITE : SB_ACCESS_READ;
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
		sbl_device_warn_untracked(dev, "vkCmdPipelineBarrier");
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
			sbl_device_warn_untracked(dev, "vkCmdPipelineBarrier");
}

/*
 * The buffer and image barriers of one vkCmdPipelineBarrier (the *1 arrays)
 * or vkCmdPipelineBarrier2 (the *2 arrays) call, read through barrier_at():
 * the two versions share the names of the fields that matter here.
 */
struct barriers {
	uint32_t buffer_count, image_count;
	const VkBufferMemoryBarrier *buffer1;
	const VkImageMemoryBarrier *image1;
	const VkBufferMemoryBarrier2 *buffer2;
	const VkImageMemoryBarrier2 *image2;
};

#define BARRIER(b, is_img, buf, img) \
	((struct barrier){ (b)->srcQueueFamilyIndex, (b)->dstQueueFamilyIndex, \
			   (b)->srcAccessMask, (b)->dstAccessMask, (is_img), (buf), (img) })
#define BUFFER_BARRIER(b) BARRIER(b, false, (b)->buffer, VK_NULL_HANDLE)
#define IMAGE_BARRIER(b) BARRIER(b, true, VK_NULL_HANDLE, (b)->image)

/* Barrier i: the buffer barriers first, then the image barriers. */
static struct barrier
barrier_at(const struct barriers *s, uint32_t i)
{
	if (i < s->buffer_count)
		return s->buffer1 ? BUFFER_BARRIER(&s->buffer1[i]) : BUFFER_BARRIER(&s->buffer2[i]);
	i -= s->buffer_count;
	return s->image1 ? IMAGE_BARRIER(&s->image1[i]) : IMAGE_BARRIER(&s->image2[i]);
}

/* Record the barriers that transfer ownership with the outside world. */
static void
record_barriers(struct sbl_device *dev, VkCommandBuffer cb, const struct barriers *s)
{
	uint32_t n = s->buffer_count + s->image_count, first = 0;
	enum sbl_xfer_kind kind;
	int access;

	/* The common case takes no lock: no barrier is such a transfer. */
	for (; first < n; first++) {
		struct barrier b = barrier_at(s, first);
		if (classify(&b, &kind, &access))
			break;
	}
	if (first == n)
		return;

	pthread_mutex_lock(&dev->lock);
	struct sbl_cmd *cmd = sbl_map_get(&dev->cmds, (uint64_t)(uintptr_t)cb);
	for (uint32_t i = first; cmd && i < n; i++) {
		struct barrier b = barrier_at(s, i);
		if (!classify(&b, &kind, &access))
			continue;
		if (b.is_image)
			record_image(dev, cmd, b.image, kind, access);
		else
			record_buffer(dev, cmd, b.buffer, kind, access);
	}
	pthread_mutex_unlock(&dev->lock);
}

static VKAPI_ATTR void VKAPI_CALL
CmdPipelineBarrier(VkCommandBuffer cb, VkPipelineStageFlags src_stages,
		   VkPipelineStageFlags dst_stages, VkDependencyFlags flags,
		   uint32_t memory_barrier_count, const VkMemoryBarrier *memory_barriers,
		   uint32_t buffer_barrier_count, const VkBufferMemoryBarrier *buffer_barriers,
		   uint32_t image_barrier_count, const VkImageMemoryBarrier *image_barriers)
{
	struct sbl_device *dev = sbl_device_lookup(cb);
	if (!dev)
		return;
	if (dev->mode == SBL_MODE_TRANSFERS) {
		struct barriers s = {
			.buffer_count = buffer_barrier_count,
			.image_count = image_barrier_count,
			.buffer1 = buffer_barriers,
			.image1 = image_barriers,
		};
		record_barriers(dev, cb, &s);
	}
	dev->CmdPipelineBarrier(cb, src_stages, dst_stages, flags, memory_barrier_count,
				memory_barriers, buffer_barrier_count, buffer_barriers,
				image_barrier_count, image_barriers);
}

static void
pipeline_barrier2(VkCommandBuffer cb, const VkDependencyInfo *dep, bool khr)
{
	struct sbl_device *dev = sbl_device_lookup(cb);
	if (!dev)
		return;
	if (dev->mode == SBL_MODE_TRANSFERS) {
		struct barriers s = {
			.buffer_count = dep->bufferMemoryBarrierCount,
			.image_count = dep->imageMemoryBarrierCount,
			.buffer2 = dep->pBufferMemoryBarriers,
			.image2 = dep->pImageMemoryBarriers,
		};
		record_barriers(dev, cb, &s);
	}
	(khr ? dev->CmdPipelineBarrier2KHR : dev->CmdPipelineBarrier2)(cb, dep);
}

static VKAPI_ATTR void VKAPI_CALL
CmdPipelineBarrier2(VkCommandBuffer cb, const VkDependencyInfo *dep)
{
	pipeline_barrier2(cb, dep, false);
}

static VKAPI_ATTR void VKAPI_CALL
CmdPipelineBarrier2KHR(VkCommandBuffer cb, const VkDependencyInfo *dep)
{
	pipeline_barrier2(cb, dep, true);
}

static VKAPI_ATTR void VKAPI_CALL
CmdExecuteCommands(VkCommandBuffer cb, uint32_t count, const VkCommandBuffer *secondaries)
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
					sbl_device_warn_untracked(dev, "vkCmdExecuteCommands");
		}
		pthread_mutex_unlock(&dev->lock);
	}
	dev->CmdExecuteCommands(cb, count, secondaries);
}

const struct sbl_entry sbl_track_entries[] = {
	SBL_ENTRY(AllocateCommandBuffers),
	SBL_ENTRY(FreeCommandBuffers),
	SBL_ENTRY(BeginCommandBuffer),
	SBL_ENTRY(ResetCommandBuffer),
	SBL_ENTRY(ResetCommandPool),
	SBL_ENTRY(DestroyCommandPool),
	SBL_ENTRY(CmdPipelineBarrier),
	SBL_ENTRY(CmdPipelineBarrier2),
	SBL_ENTRY(CmdPipelineBarrier2KHR),
	SBL_ENTRY(CmdExecuteCommands),
	{ NULL, NULL },
};
