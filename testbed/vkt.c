/* SPDX-License-Identifier: MIT */
/* The layer tests' side of the testbed's Vulkan app (see vkt.h). */
#include "vkt.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "kernel.h"

/* Build-tree locations, from meson (tests/layer/meson.build). */
#ifndef SBL_TEST_XDG_DIR
#error "SBL_TEST_XDG_DIR must be defined"
#endif
#ifndef SBL_TEST_IMPLICIT_DIR
#error "SBL_TEST_IMPLICIT_DIR must be defined"
#endif
#ifndef SBL_TEST_EXPLICIT_DIR
#error "SBL_TEST_EXPLICIT_DIR must be defined"
#endif
#ifndef SBL_TEST_LAYER_PATH
#error "SBL_TEST_LAYER_PATH must be defined"
#endif

/* The options that take no value, and the field each one sets. */
static const struct {
	const char *name;
	size_t field;
} bool_options[] = {
	{ "--control", offsetof(struct vkt_options, control) },
	{ "--image", offsetof(struct vkt_options, image) },
	{ "--sync2", offsetof(struct vkt_options, sync2) },
	{ "--secondary", offsetof(struct vkt_options, secondary) },
	{ "--no-barriers", offsetof(struct vkt_options, no_barriers) },
	{ "--validation", offsetof(struct vkt_options, validation) },
	{ "--by-name", offsetof(struct vkt_options, by_name) },
};

static bool
parse_flag(const char *a, struct vkt_options *opt)
{
	for (size_t k = 0; k < sizeof(bool_options) / sizeof(bool_options[0]); k++) {
		if (strcmp(a, bool_options[k].name) == 0) {
			*(bool *)((char *)opt + bool_options[k].field) = true;
			return true;
		}
	}
	return false;
}

void
vkt_parse_args(int argc, char **argv, struct vkt_options *opt)
{
	memset(opt, 0, sizeof(*opt));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool value = i + 1 < argc;
		if (parse_flag(a, opt))
			continue;
		if (strcmp(a, "--fault") == 0 && value)
			opt->fault = argv[++i];
		else if (strcmp(a, "--iterations") == 0 && value)
			opt->iterations = strtol(argv[++i], NULL, 0);
		else if (strcmp(a, "--seconds") == 0 && value)
			opt->seconds = strtod(argv[++i], NULL);
		else {
			fprintf(stderr, "unknown argument %s\n", a);
			exit(2);
		}
	}
}

static void
prepend_path(const char *var, const char *dir, const char *fallback)
{
	const char *old = getenv(var);
	char buf[4096];

	if (old && *old)
		snprintf(buf, sizeof(buf), "%s:%s", dir, old);
	else if (fallback)
		snprintf(buf, sizeof(buf), "%s:%s", dir, fallback);
	else
		snprintf(buf, sizeof(buf), "%s", dir);
	setenv(var, buf, 1);
}

void
vkt_env_activate(enum vkt_activation how, const char *extra_layers)
{
	char layers[512] = "";

	unsetenv("VK_INSTANCE_LAYERS");
	unsetenv("VK_LAYER_PATH");
	unsetenv("VK_LOADER_LAYERS_ENABLE");
	unsetenv("VK_LOADER_LAYERS_DISABLE");
	unsetenv("VK_ADD_IMPLICIT_LAYER_PATH");
	unsetenv("VK_ADD_LAYER_PATH");

	if (how == VKT_ACTIVATE_IMPLICIT || how == VKT_ACTIVATE_BOTH) {
		/* Keep the XDG default after ours: the drivers' manifests live there. */
		prepend_path("XDG_DATA_DIRS", SBL_TEST_XDG_DIR, "/usr/local/share:/usr/share");
		prepend_path("VK_ADD_IMPLICIT_LAYER_PATH", SBL_TEST_IMPLICIT_DIR, NULL);
	}
	if (how == VKT_ACTIVATE_BY_NAME || how == VKT_ACTIVATE_BOTH) {
		prepend_path("VK_ADD_LAYER_PATH", SBL_TEST_EXPLICIT_DIR, NULL);
		snprintf(layers, sizeof(layers), "%s", VKT_LAYER_NAME);
	}
	if (how == VKT_ACTIVATE_APP) {
		setenv("VK_ADD_LAYER_PATH", SBL_TEST_EXPLICIT_DIR, 1);
		const char *xdg = getenv("XDG_DATA_DIRS");
		if (xdg && strstr(xdg, "manifest"))
			setenv("XDG_DATA_DIRS", "/usr/local/share:/usr/share", 1);
	}
	if (extra_layers && *extra_layers) {
		size_t len = strlen(layers);
		snprintf(layers + len, sizeof(layers) - len, "%s%s", len ? ":" : "", extra_layers);
	}
	if (*layers)
		setenv("VK_INSTANCE_LAYERS", layers, 1);
}

void
vkt_env_from_options(const struct vkt_options *opt)
{
	vkt_env_activate(opt->by_name ? VKT_ACTIVATE_BY_NAME : VKT_ACTIVATE_IMPLICIT,
			 opt->validation ? VKT_VALIDATION_LAYER : NULL);
	unsetenv("SYNCBRIDGE_DISABLE");
	unsetenv("SYNCBRIDGE_MODE");
	if (opt->control)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);
	if (opt->no_barriers)
		setenv("SYNCBRIDGE_MODE", "all", 1);
	unsetenv("SYNCBRIDGE_LAYER_FAULTS");
	if (opt->fault) {
		setenv("SYNCBRIDGE_LAYER_FAULTS", opt->fault, 1);
		setenv("SYNCBRIDGE_DEBUG", "warn", 1);
	}
}

void
vkt_fault_begin(const struct vkt_options *opt)
{
	if (opt->fault)
		vkt_capture_begin();
}

void
vkt_fault_check(const struct vkt_options *opt, int *failures)
{
	if (!opt->fault)
		return;
	char *log = vkt_capture_end();
	int n = vkt_count(log, "on the CPU instead");
	printf("# fault %s: %d fallback warning(s)\n", opt->fault, n);
	if (n != 1) {
		printf("not ok - the layer should warn exactly once about its fallback\n");
		(*failures)++;
	}
	free(log);
}

int
vkt_start(int argc, char **argv, struct vkt_options *opt)
{
	vkt_parse_args(argc, argv, opt);
	vkt_env_from_options(opt);
	int vgem = sbk_vgem_open();
	if (vgem == -ENODEV)
		sb_test_skip("no vgem (run in the test guest)");
	REQUIRE(vgem >= 0, "open vgem: %s", strerror(-vgem));
	return vgem;
}

static int capture_saved_fd = -1;
static FILE *capture_file;

void
vkt_capture_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	REQUIRE(capture_file, "tmpfile");
	capture_saved_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	REQUIRE(capture_saved_fd >= 0, "dup stderr");
	REQUIRE(dup2(fileno(capture_file), 2) == 2, "dup2");
}

char *
vkt_capture_end(void)
{
	fflush(stderr);
	REQUIRE(dup2(capture_saved_fd, 2) == 2, "restore stderr");
	close(capture_saved_fd);
	capture_saved_fd = -1;

	long len = ftell(capture_file);
	if (len < 0)
		len = 0;
	char *text = calloc(1, (size_t)len + 1);
	REQUIRE(text, "calloc");
	rewind(capture_file);
	size_t got = fread(text, 1, (size_t)len, capture_file);
	text[got] = 0;
	fclose(capture_file);
	capture_file = NULL;
	/* Show what was captured, for the test log. */
	fputs(text, stderr);
	return text;
}

int
vkt_count(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

void
vkt_test_fail(struct vkt *t, int err)
{
	if (err == -ENODEV)
		sb_test_skip("%s", t->why);
	REQUIRE(0, "%s", t->why);
}

void
vkt_init(struct vkt *t, const struct vkt_options *opt, bool require_dmabuf)
{
	struct vkt_config cfg = {
		.app_name = "syncbridge-layer-test",
		.validation = opt && opt->validation,
		.require = require_dmabuf ? VKT_DMABUF : 0,
		.want = VKT_DMABUF | VKT_FOREIGN,
		.features = VKT_TIMELINE | VKT_SYNC2,
		.fail = vkt_test_fail,
	};
	vkt_create(t, &cfg);
}

void
vkt_shared_create(struct vkt *t, const struct vkt_options *opt, int vgem, size_t size,
		  uint8_t fill, struct sbk_buf *buf, struct vkt_shared *s)
{
	int ret = sbk_buf_create(SBK_BUF_VGEM, vgem, opt->image ? 2 * size : size, buf);
	REQUIRE(ret == 0, "vgem buffer: %s", strerror(-ret));
	memset(buf->map, fill, buf->size);

	memset(s, 0, sizeof(*s));
	s->is_image = opt->image;
	if (!opt->image) {
		vkt_import_buffer(t, buf->fd, size, &s->buf);
		return;
	}
	struct vkt_image_desc desc = {
		.format = VK_FORMAT_R8G8B8A8_UNORM,
		.width = 64,
		.height = 64,
		.usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
		/* Bound through vkBindImageMemory2, the other entry point the layer tracks. */
		.bind2 = true,
		.dmabuf_size = buf->size,
	};
	vkt_import_image(t, buf->fd, &desc, &s->img);
	/* UNDEFINED → GENERAL once (lavapipe keeps a LINEAR image's bytes), then
	 * the tests move it between families in GENERAL. */
	vkt_images_to_general(t, &s->img.image, 1);
}

void
vkt_shared_destroy(struct vkt *t, struct vkt_shared *s, struct sbk_buf *buf)
{
	vkt_image_destroy(t, &s->img);
	vkt_buffer_destroy(t, &s->buf);
	sbk_buf_destroy(buf);
}

void
vkt_begin(struct vkt *t, const struct vkt_options *opt, bool one_time, struct vkt_rec *rec)
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
vkt_cmd(const struct vkt_rec *rec)
{
	return rec->secondary ? rec->secondary : rec->primary;
}

void
vkt_end(struct vkt *t, struct vkt_rec *rec)
{
	(void)t;
	if (rec->secondary) {
		VK_CHECK(vkEndCommandBuffer(rec->secondary));
		vkCmdExecuteCommands(rec->primary, 1, &rec->secondary);
	}
	VK_CHECK(vkEndCommandBuffer(rec->primary));
}

void
vkt_rec_free(struct vkt *t, struct vkt_rec *rec)
{
	if (rec->secondary)
		vkFreeCommandBuffers(t->device, t->pool, 1, &rec->secondary);
	vkFreeCommandBuffers(t->device, t->pool, 1, &rec->primary);
	memset(rec, 0, sizeof(*rec));
}

/* vkCmdPipelineBarrier2's form of vkt_transfer_buffer() / vkt_transfer_image(). */
static void
transfer2(struct vkt *t, VkCommandBuffer cb, const struct vkt_shared *s, bool acquire,
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
transfer(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
	 const struct vkt_shared *s, bool acquire, VkAccessFlags access)
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
vkt_acquire(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
	    const struct vkt_shared *s, VkAccessFlags dst_access)
{
	transfer(t, opt, cb, s, true, dst_access);
}

void
vkt_release(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
	    const struct vkt_shared *s, VkAccessFlags src_access)
{
	transfer(t, opt, cb, s, false, src_access);
}

/* Copy between the shared resource and a host buffer, either way. */
static void
copy_shared(VkCommandBuffer cb, const struct vkt_shared *s, struct vkt_buffer *host, bool out)
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
vkt_copy_from_shared(VkCommandBuffer cb, const struct vkt_shared *s, struct vkt_buffer *dst)
{
	copy_shared(cb, s, dst, true);
}

void
vkt_copy_to_shared(VkCommandBuffer cb, struct vkt_buffer *src, const struct vkt_shared *s)
{
	copy_shared(cb, s, src, false);
}

void
vkt_cycle_create(struct vkt *t, int vgem, size_t size, struct vkt_cycle *c)
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
vkt_cycle_destroy(struct vkt *t, struct vkt_cycle *c)
{
	vkt_buffer_destroy(t, &c->src);
	vkt_buffer_destroy(t, &c->dst);
	vkt_shared_destroy(t, &c->sh, &c->buf);
}

void
vkt_record_cycle(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
		 struct vkt_cycle *c)
{
	const struct vkt_shared *s = &c->sh;

	vkt_acquire(t, opt, cb, s, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
	vkt_copy_from_shared(cb, s, &c->dst);
	/* The copy in follows the copy out (the same resource). */
	VkMemoryBarrier m = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
		.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
	};
	vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
			     1, &m, 0, NULL, 0, NULL);
	vkt_copy_to_shared(cb, &c->src, s);
	vkt_release(t, opt, cb, s, VK_ACCESS_TRANSFER_WRITE_BIT);
}

VkResult
vkt_submit(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
	   VkSemaphore wait_timeline, uint64_t wait_value, VkFence fence)
{
	if (opt->sync2) {
		VkSemaphoreSubmitInfo wait = {
			.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
			.semaphore = wait_timeline,
			.value = wait_value,
			.stageMask = VK_PIPELINE_STAGE_2_TRANSFER_BIT,
		};
		VkCommandBufferSubmitInfo cbi = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
			.commandBuffer = cb,
		};
		VkSubmitInfo2 si = {
			.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
			.waitSemaphoreInfoCount = wait_timeline ? 1 : 0,
			.pWaitSemaphoreInfos = &wait,
			.commandBufferInfoCount = 1,
			.pCommandBufferInfos = &cbi,
		};
		return vkQueueSubmit2(t->queue, 1, &si, fence);
	}

	/* A timeline wait through VkTimelineSemaphoreSubmitInfo: the layer must
	 * extend its value array when it appends its own semaphores. */
	VkTimelineSemaphoreSubmitInfo tl = {
		.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
		.waitSemaphoreValueCount = 1,
		.pWaitSemaphoreValues = &wait_value,
	};
	VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.pNext = wait_timeline ? &tl : NULL,
		.waitSemaphoreCount = wait_timeline ? 1 : 0,
		.pWaitSemaphores = &wait_timeline,
		.pWaitDstStageMask = &stage,
		.commandBufferCount = 1,
		.pCommandBuffers = &cb,
	};
	return vkQueueSubmit(t->queue, 1, &si, fence);
}

static void *
deferred_main(void *arg)
{
	struct vkt_deferred *d = arg;

	if (d->when_told) {
		pthread_mutex_lock(&d->lock);
		while (!d->told)
			pthread_cond_wait(&d->cond, &d->lock);
		pthread_mutex_unlock(&d->lock);
	} else {
		sbk_sleep_ns(d->delay_ns);
	}
	d->fn(d->arg);
	return NULL;
}

void
vkt_deferred_start(struct vkt_deferred *d)
{
	d->told = false;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	REQUIRE(pthread_create(&d->thread, NULL, deferred_main, d) == 0, "pthread_create");
}

void
vkt_deferred_tell(struct vkt_deferred *d)
{
	pthread_mutex_lock(&d->lock);
	d->told = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

void
vkt_deferred_join(struct vkt_deferred *d)
{
	pthread_join(d->thread, NULL);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
}
