/* SPDX-License-Identifier: MIT */
/*
 * Figure 1 (docs/performance.md): what the layer adds to a vkQueueSubmit that
 * touches no dma-buf. Two instances and devices in this process, one with
 * VK_LAYER_SYNCBRIDGE_implicit_sync and one without (the floor); each records
 * one command buffer (a 4 KiB copy between two host buffers, no ownership
 * transfer) and submits it again and again, the two interleaved (the order
 * swapped every iteration):
 *
 *   submit:     the vkQueueSubmit call alone — where the layer works (it looks
 *               the command buffer up and finds no transfer)
 *   round trip: vkQueueSubmit + vkWaitForFences + vkResetFences
 *
 *   bench-vk-submit [--iterations N]      (default 1000, after 20 warm-up ones)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_bench.h"
#include "wake_stats.h"

#define SIZE 4096

struct side {
	struct vkb vk;
	struct vkb_buffer src, dst;
	VkCommandBuffer cb;
	VkFence fence;
	struct bench_samples submit, round_trip;
};

static void
side_init(struct side *s, bool with_layer)
{
	memset(s, 0, sizeof(*s));
	vkb_init(&s->vk, with_layer);
	vkb_host_buffer(&s->vk, SIZE, &s->src);
	vkb_host_buffer(&s->vk, SIZE, &s->dst);
	s->cb = vkb_cmd_begin(&s->vk);
	VkBufferCopy region = { .size = SIZE };
	vkCmdCopyBuffer(s->cb, s->src.buffer, s->dst.buffer, 1, &region);
	VKB_CHECK(vkEndCommandBuffer(s->cb));
	s->fence = vkb_fence(&s->vk);
}

static void
side_iterate(struct side *s, bool record)
{
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &s->cb,
	};
	int64_t t0 = bench_now_ns();
	VKB_CHECK(vkQueueSubmit(s->vk.queue, 1, &si, s->fence));
	int64_t t1 = bench_now_ns();
	VKB_CHECK(vkWaitForFences(s->vk.device, 1, &s->fence, VK_TRUE, UINT64_MAX));
	VKB_CHECK(vkResetFences(s->vk.device, 1, &s->fence));
	int64_t t2 = bench_now_ns();
	if (record) {
		bench_samples_add(&s->submit, t1 - t0);
		bench_samples_add(&s->round_trip, t2 - t0);
	}
}

static void
side_finish(struct side *s)
{
	vkDeviceWaitIdle(s->vk.device);
	vkDestroyFence(s->vk.device, s->fence, NULL);
	vkFreeCommandBuffers(s->vk.device, s->vk.pool, 1, &s->cb);
	vkb_buffer_destroy(&s->vk, &s->src);
	vkb_buffer_destroy(&s->vk, &s->dst);
	vkb_finish(&s->vk);
	bench_samples_finish(&s->submit);
	bench_samples_finish(&s->round_trip);
}

int
main(int argc, char **argv)
{
	long iterations = 1000;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
			iterations = strtol(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: %s [--iterations N]\n", argv[0]);
			return 2;
		}
	}
	if (iterations < 1)
		iterations = 1;

	vkb_env_setup();
	struct side layer, floor;
	side_init(&layer, true);
	side_init(&floor, false);
	printf("figure 1: vkQueueSubmit of a command buffer that touches no dma-buf, %ld "
	       "iterations, layer and floor interleaved\n", iterations);

	const long warmup = 20;
	int64_t t0 = bench_now_ns();
	for (long i = 0; i < iterations + warmup; i++) {
		bool record = i >= warmup;
		/* Swap the order every iteration: neither side always goes first. */
		if (i % 2) {
			side_iterate(&layer, record);
			side_iterate(&floor, record);
		} else {
			side_iterate(&floor, record);
			side_iterate(&layer, record);
		}
	}
	printf("(%.1f s)\n", (bench_now_ns() - t0) / 1e9);
	bench_print_us("submit-no-dmabuf", &layer.submit, &floor.submit);
	bench_print_us("submit-no-dmabuf-round-trip", &layer.round_trip, &floor.round_trip);
	side_finish(&layer);
	side_finish(&floor);
	return 0;
}
