/* SPDX-License-Identifier: MIT */
/*
 * The cube demo's producer: renders a rotating, lit cube with Vulkan into a
 * ring of dma-bufs, one frame per buffer: vgem dumb buffers imported as
 * LINEAR images (--ring vgem, the default), or the driver's own LINEAR images
 * exported as dma-bufs (--ring device: for drivers that cannot import other
 * drivers' buffers, such as venus — docs/demo.md),
 * each frame's render pass bracketed by ownership transfers with FOREIGN:
 *
 *   acquire  FOREIGN → us   (the layer: wait for the buffer's readers)
 *   render   clear, cube (heavy fragment shader), stamp pass (alpha = stamp)
 *   release  us → FOREIGN   (the layer: attach our work's fence to the dma-buf)
 *
 * and tells the consumer "frame N is in buffer I" right after vkQueueSubmit
 * returns — the moment an implicit-sync consumer may start using it. Without
 * the layer nothing on the dma-buf says the GPU is still writing.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm_fourcc.h>

#include "cube.h"
#include "demo_util.h"
#include "vk_common.h"

#include "cube.frag.h"
#include "cube.vert.h"
#include "stamp.frag.h"
#include "stamp.vert.h"

#define PROG "syncbridge-demo-cube"
#define COLOR_FORMAT VK_FORMAT_B8G8R8A8_UNORM
#define DEPTH_FORMAT VK_FORMAT_D32_SFLOAT
/* How the frame writes its colour image: the ownership transfers' stage and access. */
#define COLOR_STAGE VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT
#define COLOR_WRITE VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT

struct params {
	float angle, aspect, stamp, work;
};

struct slot {
	struct demo_vgem_buf buf; /* --ring vgem */
	int dmabuf_fd;            /* --ring device: the exported image's, owned; else -1 */
	struct vkt_image img;
	VkImageView view;
	VkCommandBuffer cb;
	VkFence fence;
};

struct producer {
	const struct cube_options *opt;
	int vgem_fd;
	struct vkt vk;
	struct slot slots[CUBE_MAX_BUFFERS];
	bool free[CUBE_MAX_BUFFERS]; /* the consumer has released it (or never had it) */
	VkImage depth;
	VkDeviceMemory depth_memory;
	VkImageView depth_view;
	VkPipelineLayout layout;
	VkPipeline cube_pipeline, stamp_pipeline;
};

static int
create_shader(struct producer *p, const uint32_t *code, size_t size, VkShaderModule *out)
{
	VkShaderModuleCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
		.codeSize = size,
		.pCode = code,
	};
	VKT_TRY(&p->vk, vkCreateShaderModule(p->vk.device, &info, NULL, out));
	return 0;
}

/*
 * The fixed-function state both pipelines (cube and stamp) share: no vertex buffers (the
 * shaders make the cube), one viewport and scissor set when recording, no culling, one sample.
 */
static const VkPipelineVertexInputStateCreateInfo vertex_input_state = {
	.sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO,
};
static const VkPipelineInputAssemblyStateCreateInfo input_assembly_state = {
	.sType = VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO,
	.topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST,
};
static const VkPipelineViewportStateCreateInfo viewport_state = {
	.sType = VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO,
	.viewportCount = 1,
	.scissorCount = 1,
};
static const VkPipelineRasterizationStateCreateInfo rasterization_state = {
	.sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO,
	.polygonMode = VK_POLYGON_MODE_FILL,
	.cullMode = VK_CULL_MODE_NONE,
	.frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE,
	.lineWidth = 1.0f,
};
static const VkPipelineMultisampleStateCreateInfo multisample_state = {
	.sType = VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO,
	.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT,
};
static const VkDynamicState dynamic_states[] = {
	VK_DYNAMIC_STATE_VIEWPORT,
	VK_DYNAMIC_STATE_SCISSOR,
};
static const VkPipelineDynamicStateCreateInfo dynamic_state = {
	.sType = VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO,
	.dynamicStateCount = 2,
	.pDynamicStates = dynamic_states,
};

static int
create_pipeline(struct producer *p, VkShaderModule vs, VkShaderModule fs, bool stamp,
		VkPipeline *out)
{
	VkPipelineShaderStageCreateInfo stages[2] = {
		{ .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
		  .stage = VK_SHADER_STAGE_VERTEX_BIT, .module = vs, .pName = "main" },
		{ .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
		  .stage = VK_SHADER_STAGE_FRAGMENT_BIT, .module = fs, .pName = "main" },
	};
	VkPipelineDepthStencilStateCreateInfo ds = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO,
		.depthTestEnable = !stamp,
		.depthWriteEnable = !stamp,
		.depthCompareOp = VK_COMPARE_OP_LESS,
	};
	VkPipelineColorBlendAttachmentState att = {
		/* The stamp pass writes alpha only, over everything the frame drew. */
		.colorWriteMask = stamp ? VK_COLOR_COMPONENT_A_BIT
					: VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT |
						  VK_COLOR_COMPONENT_B_BIT |
						  VK_COLOR_COMPONENT_A_BIT,
	};
	VkPipelineColorBlendStateCreateInfo cb = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO,
		.attachmentCount = 1,
		.pAttachments = &att,
	};
	VkFormat color = COLOR_FORMAT;
	VkPipelineRenderingCreateInfo rendering = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO,
		.colorAttachmentCount = 1,
		.pColorAttachmentFormats = &color,
		.depthAttachmentFormat = DEPTH_FORMAT,
	};
	VkGraphicsPipelineCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO,
		.pNext = &rendering,
		.stageCount = 2,
		.pStages = stages,
		.pVertexInputState = &vertex_input_state,
		.pInputAssemblyState = &input_assembly_state,
		.pViewportState = &viewport_state,
		.pRasterizationState = &rasterization_state,
		.pMultisampleState = &multisample_state,
		.pDepthStencilState = &ds,
		.pColorBlendState = &cb,
		.pDynamicState = &dynamic_state,
		.layout = p->layout,
	};
	VKT_TRY(&p->vk,
		vkCreateGraphicsPipelines(p->vk.device, VK_NULL_HANDLE, 1, &info, NULL, out));
	return 0;
}

static int
create_pipelines(struct producer *p)
{
	VkPushConstantRange range = {
		.stageFlags = VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT,
		.size = sizeof(struct params),
	};
	VkPipelineLayoutCreateInfo li = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.pushConstantRangeCount = 1,
		.pPushConstantRanges = &range,
	};
	VKT_TRY(&p->vk, vkCreatePipelineLayout(p->vk.device, &li, NULL, &p->layout));

	VkShaderModule m[4] = { VK_NULL_HANDLE };
	int ret = create_shader(p, cube_vert_spv, sizeof(cube_vert_spv), &m[0]);
	if (!ret)
		ret = create_shader(p, cube_frag_spv, sizeof(cube_frag_spv), &m[1]);
	if (!ret)
		ret = create_shader(p, stamp_vert_spv, sizeof(stamp_vert_spv), &m[2]);
	if (!ret)
		ret = create_shader(p, stamp_frag_spv, sizeof(stamp_frag_spv), &m[3]);
	if (!ret)
		ret = create_pipeline(p, m[0], m[1], false, &p->cube_pipeline);
	if (!ret)
		ret = create_pipeline(p, m[2], m[3], true, &p->stamp_pipeline);
	for (int i = 0; i < 4; i++)
		if (m[i])
			vkDestroyShaderModule(p->vk.device, m[i], NULL);
	return ret;
}

static int
create_view(struct producer *p, VkImage image, VkFormat format, VkImageAspectFlags aspect,
	    VkImageView *out)
{
	VkImageViewCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
		.image = image,
		.viewType = VK_IMAGE_VIEW_TYPE_2D,
		.format = format,
		.subresourceRange = { aspect, 0, 1, 0, 1 },
	};
	VKT_TRY(&p->vk, vkCreateImageView(p->vk.device, &info, NULL, out));
	return 0;
}

static int
create_depth(struct producer *p)
{
	VkImageCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
		.imageType = VK_IMAGE_TYPE_2D,
		.format = DEPTH_FORMAT,
		.extent = { p->opt->width, p->opt->height, 1 },
		.mipLevels = 1,
		.arrayLayers = 1,
		.samples = VK_SAMPLE_COUNT_1_BIT,
		.tiling = VK_IMAGE_TILING_OPTIMAL,
		.usage = VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
	};
	VKT_TRY(&p->vk, vkCreateImage(p->vk.device, &info, NULL, &p->depth));
	VkMemoryRequirements req;
	vkGetImageMemoryRequirements(p->vk.device, p->depth, &req);
	int type = vkt_memory_type(&p->vk, req.memoryTypeBits, 0);
	if (type < 0)
		return -EIO;
	VkMemoryAllocateInfo mai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.allocationSize = req.size,
		.memoryTypeIndex = (uint32_t)type,
	};
	VKT_TRY(&p->vk, vkAllocateMemory(p->vk.device, &mai, NULL, &p->depth_memory));
	VKT_TRY(&p->vk, vkBindImageMemory(p->vk.device, p->depth, p->depth_memory, 0));
	return create_view(p, p->depth, DEPTH_FORMAT, VK_IMAGE_ASPECT_DEPTH_BIT, &p->depth_view);
}

/* Every pixel black, alpha CUBE_ALPHA_INITIAL: "no frame yet". */
static void
fill_initial(void *map, uint32_t width, uint32_t height, size_t pitch)
{
	for (uint32_t y = 0; y < height; y++) {
		uint32_t *row = (uint32_t *)((uint8_t *)map + (size_t)y * pitch);
		for (uint32_t x = 0; x < width; x++)
			row[x] = (uint32_t)CUBE_ALPHA_INITIAL << 24;
	}
}

/* --ring vgem: a vgem dumb buffer, imported with its pitch. */
static int
slot_from_vgem(struct producer *p, struct slot *s)
{
	int ret = demo_vgem_buf_create(p->vgem_fd, p->opt->width, p->opt->height, 32, &s->buf);
	if (ret < 0) {
		fprintf(stderr, PROG ": producer: vgem dumb buffer: %s\n", strerror(-ret));
		return ret;
	}
	ret = demo_vgem_buf_map(&s->buf);
	if (ret < 0) {
		fprintf(stderr, PROG ": producer: mmap of a vgem buffer: %s\n", strerror(-ret));
		return ret;
	}
	fill_initial(s->buf.map, s->buf.width, s->buf.height, s->buf.pitch);
	return cube_vk_import_image(&p->vk, s->buf.dmabuf_fd, p->opt->width, p->opt->height,
				    s->buf.pitch, 0, VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT, &s->img);
}

/* --ring device: the driver's own LINEAR-modifier image, exported. */
static int
slot_from_device(struct producer *p, struct slot *s)
{
	struct vkt_image_desc desc = {
		.format = COLOR_FORMAT,
		.width = p->opt->width,
		.height = p->opt->height,
		.usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT,
	};
	if (vkt_export_image(&p->vk, &desc, &s->img, &s->dmabuf_fd) != VK_SUCCESS)
		return -EIO; /* said by vkt_fail_print */
	fill_initial(s->img.map, p->opt->width, p->opt->height, (size_t)s->img.row_pitch);
	return 0;
}

static int
create_ring(struct producer *p)
{
	VkImage images[CUBE_MAX_BUFFERS];

	for (unsigned i = 0; i < p->opt->buffers; i++) {
		struct slot *s = &p->slots[i];
		int ret = p->opt->ring_device ? slot_from_device(p, s) : slot_from_vgem(p, s);
		if (ret < 0)
			return ret;
		ret = create_view(p, s->img.image, COLOR_FORMAT, VK_IMAGE_ASPECT_COLOR_BIT,
				  &s->view);
		if (ret < 0)
			return ret;
		if (vkt_cmd_alloc(&p->vk, &s->cb) != VK_SUCCESS)
			return -EIO;
		VkFenceCreateInfo fi = {
			.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
			.flags = VK_FENCE_CREATE_SIGNALED_BIT,
		};
		VKT_TRY(&p->vk, vkCreateFence(p->vk.device, &fi, NULL, &s->fence));
		p->free[i] = true;
		images[i] = s->img.image;
	}
	/* Once: UNDEFINED → GENERAL, the layout the buffers have "outside". */
	return vkt_images_to_general(&p->vk, images, p->opt->buffers) == VK_SUCCESS ? 0 : -EIO;
}

static int
record(struct producer *p, struct slot *s, unsigned frame)
{
	const struct cube_options *opt = p->opt;
	VkCommandBuffer cb = s->cb;

	if (vkt_cmd_reset_begin(&p->vk, cb) != VK_SUCCESS)
		return -EIO;

	/* Take the buffer from the outside world (the consumer). */
	vkt_transfer_image(&p->vk, cb, s->img.image, true, COLOR_STAGE, COLOR_WRITE,
			   VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
	VkImageMemoryBarrier depth = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT |
				 VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT,
		.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
		.newLayout = VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL,
		.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
		.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
		.image = p->depth,
		.subresourceRange = { VK_IMAGE_ASPECT_DEPTH_BIT, 0, 1, 0, 1 },
	};
	vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT,
			     VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT, 0, 0, NULL, 0, NULL, 1,
			     &depth);

	VkRenderingAttachmentInfo color = {
		.sType = VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO,
		.imageView = s->view,
		.imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
		.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
		.storeOp = VK_ATTACHMENT_STORE_OP_STORE,
		/* Alpha CUBE_ALPHA_CLEAR: "frame in progress". */
		.clearValue.color.float32 = { 0.06f, 0.07f, 0.12f, CUBE_ALPHA_CLEAR / 255.0f },
	};
	VkRenderingAttachmentInfo depth_att = {
		.sType = VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO,
		.imageView = p->depth_view,
		.imageLayout = VK_IMAGE_LAYOUT_DEPTH_ATTACHMENT_OPTIMAL,
		.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
		.storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
		.clearValue.depthStencil = { 1.0f, 0 },
	};
	VkRenderingInfo ri = {
		.sType = VK_STRUCTURE_TYPE_RENDERING_INFO,
		.renderArea = { { 0, 0 }, { opt->width, opt->height } },
		.layerCount = 1,
		.colorAttachmentCount = 1,
		.pColorAttachments = &color,
		.pDepthAttachment = &depth_att,
	};
	vkCmdBeginRendering(cb, &ri);
	VkViewport viewport = { 0, 0, (float)opt->width, (float)opt->height, 0, 1 };
	VkRect2D scissor = { { 0, 0 }, { opt->width, opt->height } };
	vkCmdSetViewport(cb, 0, 1, &viewport);
	vkCmdSetScissor(cb, 0, 1, &scissor);
	struct params pc = {
		.angle = (float)frame * 0.05f,
		.aspect = (float)opt->width / (float)opt->height,
		.stamp = (float)cube_stamp(frame),
		.work = (float)opt->work,
	};
	vkCmdPushConstants(cb, p->layout, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT,
			   0, sizeof(pc), &pc);
	vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_GRAPHICS, p->cube_pipeline);
	vkCmdDraw(cb, 36, 1, 0, 0);
	vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_GRAPHICS, p->stamp_pipeline);
	vkCmdDraw(cb, 3, 1, 0, 0);
	vkCmdEndRendering(cb);

	/* Hand it back to the outside world: the layer fences the dma-buf here. */
	vkt_transfer_image(&p->vk, cb, s->img.image, false, COLOR_STAGE, COLOR_WRITE,
			   VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
	VKT_TRY(&p->vk, vkEndCommandBuffer(cb));
	return 0;
}

static void
producer_finish(struct producer *p)
{
	VkDevice dev = p->vk.device;

	if (dev) {
		vkDeviceWaitIdle(dev);
		for (unsigned i = 0; i < CUBE_MAX_BUFFERS; i++) {
			struct slot *s = &p->slots[i];
			if (s->fence)
				vkDestroyFence(dev, s->fence, NULL);
			if (s->view)
				vkDestroyImageView(dev, s->view, NULL);
			vkt_image_destroy(&p->vk, &s->img);
		}
		if (p->cube_pipeline)
			vkDestroyPipeline(dev, p->cube_pipeline, NULL);
		if (p->stamp_pipeline)
			vkDestroyPipeline(dev, p->stamp_pipeline, NULL);
		if (p->layout)
			vkDestroyPipelineLayout(dev, p->layout, NULL);
		if (p->depth_view)
			vkDestroyImageView(dev, p->depth_view, NULL);
		if (p->depth)
			vkDestroyImage(dev, p->depth, NULL);
		if (p->depth_memory)
			vkFreeMemory(dev, p->depth_memory, NULL);
	}
	vkt_finish(&p->vk);
	for (unsigned i = 0; i < CUBE_MAX_BUFFERS; i++) {
		demo_vgem_buf_destroy(&p->slots[i].buf);
		demo_fd_clear(&p->slots[i].dmabuf_fd);
	}
	demo_fd_clear(&p->vgem_fd);
}

/* vgem (unless --ring device), the Vulkan device, and the layer in its call chain. */
static int
producer_start(struct producer *p)
{
	const struct cube_options *opt = p->opt;
	int ret;

	if (!opt->ring_device) {
		ret = demo_vgem_open();
		if (ret < 0) {
			fprintf(stderr, PROG ": producer: no vgem card node (%s): run it in the "
				"test guest (scripts/vm/vm-run.sh) or after `modprobe vgem`, as "
				"root; or --ring device\n",
				strerror(-ret));
			return ret == -EACCES ? ret : -ENODEV;
		}
		p->vgem_fd = ret;
	}

	ret = cube_vk_init(&p->vk, PROG ": producer");
	if (ret < 0)
		return ret;
	printf("producer: Vulkan on %s; layer VK_LAYER_SYNCBRIDGE_implicit_sync %s\n",
	       p->vk.device_name, p->vk.layer_active ? "active" :
	       opt->no_bridge ? "pass-through (SYNCBRIDGE_DISABLE=1)" : "NOT active");
	fflush(stdout);
	if (!p->vk.layer_active && !opt->no_bridge) {
		fprintf(stderr, PROG ": producer: the syncbridge layer is not in the Vulkan call "
			"chain (is the build-tree manifest visible? see docs/layer.md), so the "
			"bridged run would prove nothing\n");
		return -ENOENT;
	}
	return 0;
}

/* The ring, once: every buffer's fd, and their shared layout. */
static int
send_ring(struct producer *p, int sock)
{
	const struct cube_options *opt = p->opt;
	struct cube_msg m = {
		.pitch = p->slots[0].buf.pitch,
		.offset = 0,
		.drm_format = DRM_FORMAT_ARGB8888,
		.size = p->slots[0].buf.size,
		.modifier = DRM_FORMAT_MOD_INVALID,
	};
	if (opt->ring_device) {
		/* The driver chose the layout: every image of the ring has the same. */
		m.pitch = (uint32_t)p->slots[0].img.row_pitch;
		m.offset = (uint32_t)p->slots[0].img.offset;
		m.size = p->slots[0].img.map_size;
		m.modifier = DRM_FORMAT_MOD_LINEAR;
	}
	int fds[CUBE_MAX_BUFFERS];
	for (unsigned i = 0; i < opt->buffers; i++)
		fds[i] = opt->ring_device ? p->slots[i].dmabuf_fd : p->slots[i].buf.dmabuf_fd;
	return cube_send_ring(sock, opt, &m, fds);
}

/* vkWaitForFences on fence (then reset it), said on stderr when it fails: 0 or -EIO. */
static int
wait_fence(struct producer *p, VkFence fence, bool reset)
{
	VkResult r = vkWaitForFences(p->vk.device, 1, &fence, VK_TRUE, UINT64_MAX);

	if (r == VK_SUCCESS && reset)
		r = vkResetFences(p->vk.device, 1, &fence);
	if (r != VK_SUCCESS) {
		fprintf(stderr, PROG ": producer: fence: %s\n", vkt_result_name(r));
		return -EIO;
	}
	return 0;
}

/*
 * One frame into buffer frame % ring once the consumer released it: record,
 * submit (adding how long vkQueueSubmit took to *submit_ms), hand it over.
 */
static int
produce_frame(struct producer *p, int sock, unsigned frame, double *submit_ms)
{
	const struct cube_options *opt = p->opt;
	unsigned i = frame % opt->buffers;
	struct slot *s = &p->slots[i];
	int ret;

	ret = cube_wait_free(sock, opt, p->free, i);
	if (ret < 0)
		return ret;
	/* Our own previous use of the slot's command buffer. */
	ret = wait_fence(p, s->fence, true);
	if (ret < 0)
		return ret;
	ret = record(p, s, frame);
	if (ret < 0)
		return ret;
	/*
	 * Like vkcube, keep the GPU queue short: at most one frame in flight, so
	 * this frame starts rendering as soon as it is submitted (without this,
	 * frames queue up behind each other and an early reader sees an older
	 * frame rather than a half-drawn one).
	 */
	if (frame > 0 &&
	    (ret = wait_fence(p, p->slots[(frame - 1) % opt->buffers].fence, false)) < 0)
		return ret;
	int64_t t0 = now_ns();
	VkResult r = vkt_submit_one(&p->vk, s->cb, VK_NULL_HANDLE, VK_NULL_HANDLE, s->fence);
	int64_t t1 = now_ns();
	if (r != VK_SUCCESS)
		return -EIO; /* said by vkt_fail_print */
	/* --cpu-sync: no fence on the dma-buf says the frame is being
	 * drawn, so hand it over only once the GPU is done. */
	if (opt->cpu_sync && (r = vkQueueWaitIdle(p->vk.queue)) != VK_SUCCESS) {
		fprintf(stderr, PROG ": producer: vkQueueWaitIdle: %s\n", vkt_result_name(r));
		return -EIO;
	}
	*submit_ms += (double)(t1 - t0) / 1e6;
	if (opt->verbose)
		printf("producer: frame %u → buffer %u, vkQueueSubmit took %.1f ms\n", frame, i,
		       (double)(t1 - t0) / 1e6);
	p->free[i] = false;
	return cube_send_frame(sock, frame, i, t1);
}

int
cube_producer_run(int sock, const struct cube_options *opt)
{
	struct producer p = { .opt = opt, .vgem_fd = -1 };
	int ret;

	for (unsigned i = 0; i < CUBE_MAX_BUFFERS; i++)
		p.slots[i].dmabuf_fd = -1;
	ret = producer_start(&p);
	if (!ret)
		ret = create_ring(&p);
	if (!ret)
		ret = create_depth(&p);
	if (!ret)
		ret = create_pipelines(&p);
	if (!ret)
		ret = send_ring(&p, sock);
	if (ret < 0)
		goto out;

	double submit_ms = 0;
	for (unsigned frame = 0; frame < opt->frames; frame++) {
		ret = produce_frame(&p, sock, frame, &submit_ms);
		if (ret < 0)
			goto out;
	}
	printf("producer: %u frames submitted, vkQueueSubmit %.1f ms on average%s\n", opt->frames,
	       opt->frames ? submit_ms / opt->frames : 0.0,
	       p.vk.layer_active && strstr(p.vk.device_name, "llvmpipe") &&
			       !strstr(p.vk.device_name, "Venus")
		       ? " (lavapipe's SYNC_FD export waits for the frame)"
		       : "");
	fflush(stdout);
	ret = cube_send_end(sock, opt);
out:
	producer_finish(&p);
	return ret;
}
