/* SPDX-License-Identifier: MIT */
/*
 * Figure 8 (docs/performance.md): does a release stall the app's
 * vkQueueSubmit on its own GPU work? On a driver whose SYNC_FD export waits
 * for the work on the CPU (Mesa's venus unless venus_implicit_fencing is set;
 * layer/venus.c) it would; by default the layer asks venus for pending
 * exports (SYNCBRIDGE_VENUS_FENCING=0 turns that off).
 *
 * Four instances and devices in this process, interleaved (the order
 * rotated every iteration), each on the driver's own exported dma-buf:
 *   layer-sync:    the layer with SYNCBRIDGE_VENUS_FENCING=0 (venus's
 *                  option unset: its export waits for the work)
 *   layer:         VK_LAYER_SYNCBRIDGE_implicit_sync as it comes (it sets
 *                  venus_implicit_fencing=true before venus reads it)
 *   floor:         no layer (no fence on the dma-buf at all)
 *   by-hand:       no layer; the app itself does the least any implicit-sync
 *                  bridge must do before the submit returns: a SYNC_FD
 *                  signal semaphore in the batch, vkGetSemaphoreFdKHR after
 *                  the submit, DMA_BUF_IOCTL_IMPORT_SYNC_FILE on the dma-buf
 *                  (timed together as its "submit"; venus's option set)
 * Each iteration submits real GPU work — N fills of a 16 MiB device buffer
 * (--fills, default 4) — then a copy into the dma-buf and its release to
 * FOREIGN. Timed:
 *   submit:   the vkQueueSubmit call
 *   consumer: from the submit's return until poll(POLLIN) on the dma-buf
 *             returns — an implicit-sync reader's wait: about the work's
 *             length when the buffer carries a pending fence, ~0 when it
 *             has none (floor) or when the submit already waited for the
 *             work (layer-sync)
 * The ratios print against the floor: layer's submit ratio is what the
 * default costs, layer-sync's the stall that the option avoids, by-hand's
 * what any bridge costs on this driver (release-submit-vs-hand: the layer
 * against it).
 *
 * Fills, not a timeline wait that a thread signals later (what the
 * layer-release test does): work the host just does, so the consumer's wait
 * is the work's length. Wait-before-signal on venus is layer-release's
 * (venus-layer-release-*, 20 rounds each).
 *
 *   bench-vk-release [--iterations N] [--fills N]   (default 1000 / 4; 5 warm-up first)
 *
 * Runs on venus (the venus guest: scripts/run-bench.sh vk-release-venus);
 * any Vulkan driver with dma-buf export and SYNC_FD semaphores will do.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include "vk_bench.h"
#include "kernel_raw.h"
#include "tbvk.h"
#include "wake_stats.h"

#define SIZE (1 << 20)
#define BUSY_SIZE (16u << 20)

struct side {
	const char *name;
	bool by_hand;
	VkSemaphore signal; /* by_hand */
	struct vkt vk;
	struct vkt_buffer shared, src, busy;
	int dmabuf;
	VkCommandBuffer cb;
	VkFence fence;
	struct bench_samples submit, consumer;
};

/* A device-local buffer for the busy work. */
static void
busy_buffer(struct vkt *t, struct vkt_buffer *b)
{
	memset(b, 0, sizeof(*b));
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = BUSY_SIZE,
		.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
	};
	if (vkCreateBuffer(t->device, &info, NULL, &b->buffer) != VK_SUCCESS)
		vkb_die("vkCreateBuffer (busy)");
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(t->device, b->buffer, &req);
	int type = vkt_memory_type(t, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
	if (type < 0)
		type = vkt_memory_type(t, req.memoryTypeBits, 0);
	VkMemoryAllocateInfo alloc = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.allocationSize = req.size,
		.memoryTypeIndex = (uint32_t)type,
	};
	if (vkAllocateMemory(t->device, &alloc, NULL, &b->memory) != VK_SUCCESS ||
	    vkBindBufferMemory(t->device, b->buffer, b->memory, 0) != VK_SUCCESS)
		vkb_die("busy buffer memory");
	b->size = BUSY_SIZE;
}

static void
side_init(struct side *s, const char *name, bool with_layer, bool by_hand, long fills)
{
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->by_hand = by_hand;
	vkb_init_with(&s->vk, with_layer, VKT_DMABUF | (by_hand ? VKT_SEMAPHORE_FD : 0),
		      VKT_TIMELINE);
	if (by_hand)
		s->signal = vkt_semaphore(&s->vk, true);
	vkt_export_buffer(&s->vk, SIZE, &s->shared, &s->dmabuf);
	vkt_host_buffer(&s->vk, SIZE, &s->src);
	memset(s->src.map, 0x5a, SIZE);
	busy_buffer(&s->vk, &s->busy);
	s->fence = vkt_fence(&s->vk);
	vkt_cmd_begin(&s->vk, 0, &s->cb);
	for (long i = 0; i < fills; i++)
		vkCmdFillBuffer(s->cb, s->busy.buffer, 0, VK_WHOLE_SIZE, (uint32_t)i);
	/* The copy after the fills: the dma-buf is written last. */
	VkMemoryBarrier m = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
	};
	vkCmdPipelineBarrier(s->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
			     0, 1, &m, 0, NULL, 0, NULL);
	VkBufferCopy region = { .size = SIZE };
	vkCmdCopyBuffer(s->cb, s->src.buffer, s->shared.buffer, 1, &region);
	vkt_transfer_buffer(&s->vk, s->cb, s->shared.buffer, false, VK_PIPELINE_STAGE_TRANSFER_BIT,
			    VK_ACCESS_TRANSFER_WRITE_BIT);
	if (vkEndCommandBuffer(s->cb) != VK_SUCCESS)
		vkb_die("%s: vkEndCommandBuffer", name);
}

static void
side_iterate(struct side *s, bool record)
{
	int64_t t0 = now_ns();
	VkResult r = vkt_submit_one(&s->vk, s->cb, VK_NULL_HANDLE, s->signal, s->fence);
	if (r != VK_SUCCESS)
		vkb_die("%s: vkQueueSubmit: %s", s->name, vkt_result_name(r));
	if (s->by_hand) {
		int fd = -1;
		r = vkt_semaphore_export(&s->vk, s->signal, &fd);
		if (r != VK_SUCCESS)
			vkb_die("%s: vkGetSemaphoreFdKHR: %s", s->name, vkt_result_name(r));
		if (fd >= 0 && tb_dmabuf_import_raw(s->dmabuf, DMA_BUF_SYNC_WRITE, fd) != 0)
			vkb_die("%s: DMA_BUF_IOCTL_IMPORT_SYNC_FILE failed", s->name);
		if (fd >= 0)
			close(fd);
	}
	int64_t t1 = now_ns();
	struct pollfd pfd = { .fd = s->dmabuf, .events = POLLIN };
	if (poll(&pfd, 1, 10000) != 1)
		vkb_die("%s: the dma-buf did not become readable in 10 s", s->name);
	int64_t t2 = now_ns();
	vkt_fence_wait(&s->vk, s->fence);
	if (record) {
		bench_samples_add(&s->submit, t1 - t0);
		bench_samples_add(&s->consumer, t2 - t1);
	}
}

static void
side_finish(struct side *s)
{
	vkb_side_idle_release(&s->vk, s->fence, s->cb);
	if (s->signal)
		vkDestroySemaphore(s->vk.device, s->signal, NULL);
	vkt_buffer_destroy(&s->vk, &s->src);
	vkt_buffer_destroy(&s->vk, &s->busy);
	vkt_buffer_destroy(&s->vk, &s->shared);
	close(s->dmabuf);
	vkt_finish(&s->vk);
	bench_samples_finish(&s->submit);
	bench_samples_finish(&s->consumer);
}

int
main(int argc, char **argv)
{
	const char *fills_arg = "4";
	long iterations = bench_args(argc, argv, "--fills", "N", &fills_arg);
	long fills = strtol(fills_arg, NULL, 10);
	if (fills < 1 || fills > 1000)
		vkb_die("--fills wants 1..1000, got '%s'", fills_arg);

	vkb_env_setup();
	/* venus reads its option at vkCreateInstance: the variants that must not
	 * have it come first (the layer sets it for the process). */
	if (getenv("venus_implicit_fencing"))
		vkb_die("venus_implicit_fencing is set in the environment: unset it (the "
			"layer variant needs it unset)");
	struct side sides[4];
	unsetenv("SYNCBRIDGE_VENUS_FENCING");
	side_init(&sides[2], "floor", false, false, fills);
	setenv("SYNCBRIDGE_VENUS_FENCING", "0", 1);
	side_init(&sides[1], "layer-sync", true, false, fills);
	unsetenv("SYNCBRIDGE_VENUS_FENCING");
	side_init(&sides[0], "layer", true, false, fills);
	/* After the layer set venus's option for the process: pending exports. */
	side_init(&sides[3], "by-hand", false, true, fills);
	printf("figure 8: a release submit after %ld fills of %u MiB, %ld iterations, on %s; "
	       "venus_implicit_fencing now %s\n", fills, BUSY_SIZE >> 20, iterations,
	       sides[0].vk.device_name, getenv("venus_implicit_fencing") ?: "unset");

	const long warmup = 5;
	int64_t t0 = now_ns();
	for (long i = 0; i < iterations + warmup; i++)
		for (int k = 0; k < 4; k++)
			side_iterate(&sides[(i + k) % 4], i >= warmup);
	printf("(%.1f s)\n", (now_ns() - t0) / 1e9);
	bench_print_us("release-submit", &sides[0].submit, &sides[2].submit);
	bench_print_us("release-submit-sync", &sides[1].submit, &sides[2].submit);
	bench_print_us("release-submit-by-hand", &sides[3].submit, &sides[2].submit);
	bench_print_us("release-submit-vs-hand", &sides[0].submit, &sides[3].submit);
	bench_print_us("release-consumer-wait", &sides[0].consumer, &sides[2].consumer);
	bench_print_us("release-consumer-wait-sync", &sides[1].consumer, &sides[2].consumer);
	bench_print_us("release-consumer-wait-by-hand", &sides[3].consumer, &sides[2].consumer);
	for (int k = 0; k < 4; k++)
		side_finish(&sides[k]);
	return 0;
}
