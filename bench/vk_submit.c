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
	struct vkt vk;
	struct vkt_buffer src, dst;
	VkCommandBuffer cb;
	VkFence fence;
	struct bench_samples submit, round_trip;
};

static void
side_init(struct side *s, bool with_layer)
{
	memset(s, 0, sizeof(*s));
	vkb_init(&s->vk, with_layer);
	vkt_host_buffer(&s->vk, SIZE, &s->src);
	vkt_host_buffer(&s->vk, SIZE, &s->dst);
	vkt_cmd_begin(&s->vk, 0, &s->cb);
	VkBufferCopy region = { .size = SIZE };
	vkCmdCopyBuffer(s->cb, s->src.buffer, s->dst.buffer, 1, &region);
	if (vkEndCommandBuffer(s->cb) != VK_SUCCESS)
		vkb_die("vkEndCommandBuffer");
	s->fence = vkt_fence(&s->vk);
}

static void
side_iterate(void *arg, bool record)
{
	struct side *s = arg;
	int64_t t0 = now_ns();
	vkt_submit_one(&s->vk, s->cb, VK_NULL_HANDLE, VK_NULL_HANDLE, s->fence);
	int64_t t1 = now_ns();
	vkt_fence_wait(&s->vk, s->fence);
	int64_t t2 = now_ns();
	if (record) {
		bench_samples_add(&s->submit, t1 - t0);
		bench_samples_add(&s->round_trip, t2 - t0);
	}
}

static void
side_finish(struct side *s)
{
	vkb_side_idle_release(&s->vk, s->fence, s->cb);
	vkt_buffer_destroy(&s->vk, &s->src);
	vkt_buffer_destroy(&s->vk, &s->dst);
	vkt_finish(&s->vk);
	bench_samples_finish(&s->submit);
	bench_samples_finish(&s->round_trip);
}

int
main(int argc, char **argv)
{
	long iterations = bench_args(argc, argv, NULL, NULL, NULL);

	vkb_env_setup();
	struct side layer, floor;
	side_init(&layer, true);
	side_init(&floor, false);
	printf("figure 1: vkQueueSubmit of a command buffer that touches no dma-buf, %ld "
	       "iterations, layer and floor interleaved\n", iterations);
	vkb_interleave(iterations, side_iterate, &layer, &floor);
	bench_print_us("submit-no-dmabuf", &layer.submit, &floor.submit);
	bench_print_us("submit-no-dmabuf-round-trip", &layer.round_trip, &floor.round_trip);
	side_finish(&layer);
	side_finish(&floor);
	return 0;
}
