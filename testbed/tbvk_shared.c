/* SPDX-License-Identifier: MIT */
/* The layer tests' shared resource, recordings, ownership transfers as the
 * options say, and submits (see tbvk.h). */
#include "tbvk.h"
#include "kernel_raw.h"

#include <string.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include "harness.h"

static const struct vkt_image_desc shared_image = {
	.format = VK_FORMAT_R8G8B8A8_UNORM,
	.width = 64,
	.height = 64,
	.usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
	/* Bound through vkBindImageMemory2, the other entry point the layer tracks. */
	.bind2 = true,
};

/* --exported: the driver's memory, described by buf (tbvk.h). */
static void
shared_export(struct vkt *t, const struct tbvk_options *opt, size_t size, uint8_t fill,
	      struct sbk_buf *buf, struct tbvk_shared *s)
{
	memset(buf, 0, sizeof(*buf));
	buf->fd = -1;
	buf->vgem_fd = -1;
	s->exported = true;
	if (!opt->image) {
		vkt_export_buffer(t, size, &s->buf, &buf->fd);
		buf->map = s->buf.map;
		buf->size = size;
	} else {
		vkt_export_image(t, &shared_image, &s->img, &buf->fd);
		buf->map = s->img.map;
		buf->size = s->img.map_size;
		/* The transition may discard the contents: fill after it. */
		vkt_images_to_general(t, &s->img.image, 1);
	}
	memset(buf->map, fill, buf->size);
}

void
tbvk_shared_create(struct vkt *t, const struct tbvk_options *opt, int vgem, size_t size,
		  uint8_t fill, struct sbk_buf *buf, struct tbvk_shared *s)
{
	memset(s, 0, sizeof(*s));
	if (opt->exported) {
		s->is_image = opt->image;
		shared_export(t, opt, size, fill, buf, s);
		return;
	}
	int ret = sbk_buf_create(SBK_BUF_VGEM, vgem, opt->image ? 2 * size : size, buf);
	REQUIRE(ret == 0, "vgem buffer: %s", strerror(-ret));
	memset(buf->map, fill, buf->size);

	s->is_image = opt->image;
	if (!opt->image) {
		vkt_import_buffer(t, buf->fd, size, &s->buf);
		return;
	}
	struct vkt_image_desc desc = shared_image;
	desc.dmabuf_size = buf->size;
	vkt_import_image(t, buf->fd, &desc, &s->img);
	/* UNDEFINED → GENERAL once (lavapipe keeps a LINEAR image's bytes), then
	 * the tests move it between families in GENERAL. */
	vkt_images_to_general(t, &s->img.image, 1);
}

void
tbvk_shared_destroy(struct vkt *t, struct tbvk_shared *s, struct sbk_buf *buf)
{
	vkt_image_destroy(t, &s->img);
	vkt_buffer_destroy(t, &s->buf);
	if (s->exported)
		buf->map = NULL; /* Vulkan's mapping, gone with the memory */
	sbk_buf_destroy(buf);
}

void
tbvk_producer_fence(const struct tbvk_shared *s, int vgem, struct sbk_buf *buf, uint32_t *fence_id)
{
	if (!s->exported) {
		int ret = sbk_vgem_fence_attach(vgem, buf->handle, true, fence_id);
		REQUIRE(ret == 0, "vgem fence attach: %s", strerror(-ret));
		return;
	}
	struct sbk_buf carrier;
	int ret = sbk_buf_create(SBK_BUF_VGEM, vgem, 4096, &carrier);
	REQUIRE(ret == 0, "vgem buffer: %s", strerror(-ret));
	ret = sbk_vgem_fence_attach(vgem, carrier.handle, true, fence_id);
	REQUIRE(ret == 0, "vgem fence attach: %s", strerror(-ret));
	int sync_file = -1;
	ret = tb_dmabuf_export_raw(carrier.fd, DMA_BUF_SYNC_WRITE, &sync_file);
	REQUIRE(ret == 0, "export the vgem fence: %s", strerror(-ret));
	ret = tb_dmabuf_import_raw(buf->fd, DMA_BUF_SYNC_WRITE, sync_file);
	REQUIRE(ret == 0, "import the vgem fence into the exported dma-buf: %s", strerror(-ret));
	close(sync_file);
	/* The fence lives on in the shared dma-buf and in vgem's fence table. */
	sbk_buf_destroy(&carrier);
}

void
tbvk_begin(struct vkt *t, const struct tbvk_options *opt, bool one_time, struct tbvk_rec *rec)
{
	VkCommandBufferUsageFlags flags = one_time ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT : 0;

	memset(rec, 0, sizeof(*rec));
	rec->one_time = one_time;
	vkt_cmd_begin(t, flags, &rec->primary);
	if (opt->secondary) {
		VkCommandBufferAllocateInfo ai = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
			.commandPool = t->pool,
			.level = VK_COMMAND_BUFFER_LEVEL_SECONDARY,
			.commandBufferCount = 1,
		};
		VK_CHECK(vkAllocateCommandBuffers(t->device, &ai, &rec->secondary));
		VkCommandBufferInheritanceInfo inherit = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO,
		};
		VkCommandBufferBeginInfo sbi = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
			.flags = flags,
			.pInheritanceInfo = &inherit,
		};
		VK_CHECK(vkBeginCommandBuffer(rec->secondary, &sbi));
	}
}

VkCommandBuffer
tbvk_cmd(const struct tbvk_rec *rec)
{
	return rec->secondary ? rec->secondary : rec->primary;
}

void
tbvk_end(struct vkt *t, struct tbvk_rec *rec)
{
	(void)t;
	if (rec->secondary) {
		VK_CHECK(vkEndCommandBuffer(rec->secondary));
		vkCmdExecuteCommands(rec->primary, 1, &rec->secondary);
	}
	VK_CHECK(vkEndCommandBuffer(rec->primary));
}

void
tbvk_rec_free(struct vkt *t, struct tbvk_rec *rec)
{
	if (rec->secondary)
		vkFreeCommandBuffers(t->device, t->pool, 1, &rec->secondary);
	vkFreeCommandBuffers(t->device, t->pool, 1, &rec->primary);
	memset(rec, 0, sizeof(*rec));
}

/* vkCmdPipelineBarrier2's form of vkt_transfer_buffer() / vkt_transfer_image(). */
static void
transfer2(struct vkt *t, VkCommandBuffer cb, const struct tbvk_shared *s, bool acquire,
	  VkAccessFlags access)
{
	VkImageMemoryBarrier2 ib = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2,
		.srcStageMask = acquire ? VK_PIPELINE_STAGE_2_NONE : VK_PIPELINE_STAGE_2_TRANSFER_BIT,
		.srcAccessMask = acquire ? 0 : access,
		.dstStageMask = acquire ? VK_PIPELINE_STAGE_2_TRANSFER_BIT : VK_PIPELINE_STAGE_2_NONE,
		.dstAccessMask = acquire ? access : 0,
		.oldLayout = VK_IMAGE_LAYOUT_GENERAL,
		.newLayout = VK_IMAGE_LAYOUT_GENERAL,
		.srcQueueFamilyIndex = acquire ? t->outside_family : t->family,
		.dstQueueFamilyIndex = acquire ? t->family : t->outside_family,
		.image = s->img.image,
		.subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
	};
	/* The same fields, in the same places, up to the layouts. */
	VkBufferMemoryBarrier2 bb = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2,
		.srcStageMask = ib.srcStageMask,
		.srcAccessMask = ib.srcAccessMask,
		.dstStageMask = ib.dstStageMask,
		.dstAccessMask = ib.dstAccessMask,
		.srcQueueFamilyIndex = ib.srcQueueFamilyIndex,
		.dstQueueFamilyIndex = ib.dstQueueFamilyIndex,
		.buffer = s->buf.buffer,
		.size = VK_WHOLE_SIZE,
	};
	VkDependencyInfo dep = {
		.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
		.bufferMemoryBarrierCount = s->is_image ? 0 : 1,
		.pBufferMemoryBarriers = &bb,
		.imageMemoryBarrierCount = s->is_image ? 1 : 0,
		.pImageMemoryBarriers = &ib,
	};
	vkCmdPipelineBarrier2(cb, &dep);
}

static void
transfer(struct vkt *t, const struct tbvk_options *opt, VkCommandBuffer cb,
	 const struct tbvk_shared *s, bool acquire, VkAccessFlags access)
{
	if (opt->no_barriers) {
		/* No ownership transfer at all: what apps that ignore the rules do. */
		VkMemoryBarrier m = {
			.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
			.srcAccessMask = acquire ? 0 : access,
			.dstAccessMask = acquire ? access : 0,
		};
		vkCmdPipelineBarrier(cb,
				     acquire ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
					     : VK_PIPELINE_STAGE_TRANSFER_BIT,
				     acquire ? VK_PIPELINE_STAGE_TRANSFER_BIT
					     : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
				     0, 1, &m, 0, NULL, 0, NULL);
	} else if (opt->sync2) {
		transfer2(t, cb, s, acquire, access);
	} else if (s->is_image) {
		vkt_transfer_image(t, cb, s->img.image, acquire, VK_PIPELINE_STAGE_TRANSFER_BIT,
				   access, VK_IMAGE_LAYOUT_GENERAL);
	} else {
		vkt_transfer_buffer(t, cb, s->buf.buffer, acquire, VK_PIPELINE_STAGE_TRANSFER_BIT,
				    access);
	}
}

void
tbvk_acquire(struct vkt *t, const struct tbvk_options *opt, VkCommandBuffer cb,
	    const struct tbvk_shared *s, VkAccessFlags dst_access)
{
	transfer(t, opt, cb, s, true, dst_access);
}

void
tbvk_release(struct vkt *t, const struct tbvk_options *opt, VkCommandBuffer cb,
	    const struct tbvk_shared *s, VkAccessFlags src_access)
{
	transfer(t, opt, cb, s, false, src_access);
}

/* Copy between the shared resource and a host buffer, either way. */
static void
copy_shared(VkCommandBuffer cb, const struct tbvk_shared *s, struct vkt_buffer *host, bool out)
{
	if (s->is_image) {
		VkBufferImageCopy region = {
			.imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
			.imageExtent = { s->img.width, s->img.height, 1 },
		};
		if (out)
			vkCmdCopyImageToBuffer(cb, s->img.image, VK_IMAGE_LAYOUT_GENERAL, host->buffer,
					       1, &region);
		else
			vkCmdCopyBufferToImage(cb, host->buffer, s->img.image, VK_IMAGE_LAYOUT_GENERAL,
					       1, &region);
	} else {
		VkBufferCopy region = { .size = s->buf.size < host->size ? s->buf.size : host->size };
		if (out)
			vkCmdCopyBuffer(cb, s->buf.buffer, host->buffer, 1, &region);
		else
			vkCmdCopyBuffer(cb, host->buffer, s->buf.buffer, 1, &region);
	}
}

void
tbvk_copy_from_shared(VkCommandBuffer cb, const struct tbvk_shared *s, struct vkt_buffer *dst)
{
	copy_shared(cb, s, dst, true);
}

void
tbvk_copy_to_shared(VkCommandBuffer cb, struct vkt_buffer *src, const struct tbvk_shared *s)
{
	copy_shared(cb, s, src, false);
}

void
tbvk_cycle_create(struct vkt *t, int vgem, size_t size, struct tbvk_cycle *c)
{
	memset(c, 0, sizeof(*c));
	int ret = sbk_buf_create(SBK_BUF_VGEM, vgem, size, &c->buf);
	REQUIRE(ret == 0, "vgem buffer: %s", strerror(-ret));
	memset(c->buf.map, 0, size);
	vkt_import_buffer(t, c->buf.fd, size, &c->sh.buf);
	vkt_host_buffer(t, size, &c->src);
	vkt_host_buffer(t, size, &c->dst);
}

void
tbvk_cycle_destroy(struct vkt *t, struct tbvk_cycle *c)
{
	vkt_buffer_destroy(t, &c->src);
	vkt_buffer_destroy(t, &c->dst);
	tbvk_shared_destroy(t, &c->sh, &c->buf);
}

void
tbvk_record_cycle(struct vkt *t, const struct tbvk_options *opt, VkCommandBuffer cb,
		 struct tbvk_cycle *c)
{
	const struct tbvk_shared *s = &c->sh;

	tbvk_acquire(t, opt, cb, s, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
	tbvk_copy_from_shared(cb, s, &c->dst);
	/* The copy in follows the copy out (the same resource). */
	VkMemoryBarrier m = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
		.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
	};
	vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
			     1, &m, 0, NULL, 0, NULL);
	tbvk_copy_to_shared(cb, &c->src, s);
	tbvk_release(t, opt, cb, s, VK_ACCESS_TRANSFER_WRITE_BIT);
}

int
tbvk_setup_shared(int argc, char **argv, size_t size, uint8_t fill, struct tbvk_options *opt,
		 struct vkt *t, struct sbk_buf *buf, struct tbvk_shared *s)
{
	int vgem = tbvk_start(argc, argv, opt);

	tbvk_fault_begin(opt);
	tbvk_init(t, opt, true);
	tbvk_shared_create(t, opt, vgem, size, fill, buf, s);
	return vgem;
}
