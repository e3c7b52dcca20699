/* SPDX-License-Identifier: MIT */
/*
 * Figure 2 (docs/performance.md): one dma-buf acquire + release through the
 * layer against the same kernel steps written by hand (the floor), on a
 * device without the layer. Both sides run the same scenario on a vgem
 * dma-buf of their own, interleaved (the order swapped every iteration):
 *
 *   a foreign producer (vgem) attaches a WRITE fence          (not timed)
 *   submit A: acquire the buffer from FOREIGN, copy it out    (timed)
 *   the producer signals its fence                            (not timed)
 *   submit B: copy in, release the buffer to FOREIGN, fence;  (timed)
 *             wait for the fence
 *
 * Through the layer the app only submits: the layer exports the dma-buf's
 * fences (DMA_BUF_IOCTL_EXPORT_SYNC_FILE, pending here: the producer is still
 * writing), imports them into a SYNC_FD semaphore the batch waits on, adds a
 * semaphore to B's signals, exports it and attaches it to the dma-buf
 * (DMA_BUF_IOCTL_IMPORT_SYNC_FILE). The floor does exactly those kernel and
 * Vulkan steps itself, with raw ioctls and one semaphore of each kind reused
 * every iteration (it knows the queue is idle at the end of one), and none of
 * the layer's bookkeeping.
 *
 * On lavapipe vkGetSemaphoreFdKHR blocks until the work is done (it exports
 * an already-signalled sync_file): that is why the producer signals before
 * B, and it is in both sides' times.
 *
 *   bench-vk-acqrel [--iterations N]      (default 1000, after 20 warm-up ones)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

#include <sys/ioctl.h>

#include <linux/dma-buf.h>

#include "demo_util.h"
#include "vk_bench.h"
#include "wake_stats.h"

#define WIDTH 1024 /* 1024×1 ARGB: 4 KiB */

struct side {
	struct vkt vk;
	bool by_hand; /* the floor */
	int vgem;     /* borrowed */
	struct demo_vgem_buf dmabuf;
	struct vkt_buffer shared, host;
	VkCommandBuffer acquire_cb, release_cb;
	VkFence fence;
	VkSemaphore wait_sem, signal_sem; /* the floor's */
	long early; /* iterations whose copy saw the producer's old data */
	unsigned iter;
	struct bench_samples total, acquire, release;
};

static void
side_init(struct side *s, bool with_layer, int vgem)
{
	memset(s, 0, sizeof(*s));
	s->by_hand = !with_layer;
	s->vgem = vgem;
	vkb_init(&s->vk, with_layer);
	int ret = demo_vgem_buf_create(vgem, WIDTH, 1, 32, &s->dmabuf);
	if (ret < 0)
		vkb_die("vgem buffer: %s", strerror(-ret));
	vkt_import_buffer(&s->vk, s->dmabuf.dmabuf_fd, s->dmabuf.size, &s->shared);
	ret = demo_vgem_buf_map(&s->dmabuf);
	if (ret < 0)
		vkb_die("vgem map: %s", strerror(-ret));
	vkt_host_buffer(&s->vk, s->dmabuf.size, &s->host);
	VkBufferCopy region = { .size = s->dmabuf.size };

	vkt_cmd_begin(&s->vk, 0, &s->acquire_cb);
	vkt_transfer_buffer(&s->vk, s->acquire_cb, s->shared.buffer, true,
			    VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
	vkCmdCopyBuffer(s->acquire_cb, s->shared.buffer, s->host.buffer, 1, &region);

	vkt_cmd_begin(&s->vk, 0, &s->release_cb);
	VkMemoryBarrier m = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
		.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
	};
	/* The copy in follows A's copy out (same queue, same buffer). */
	vkCmdPipelineBarrier(s->release_cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
			     VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &m, 0, NULL, 0, NULL);
	vkCmdCopyBuffer(s->release_cb, s->host.buffer, s->shared.buffer, 1, &region);
	vkt_transfer_buffer(&s->vk, s->release_cb, s->shared.buffer, false,
			    VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
	if (vkEndCommandBuffer(s->acquire_cb) != VK_SUCCESS ||
	    vkEndCommandBuffer(s->release_cb) != VK_SUCCESS)
		vkb_die("vkEndCommandBuffer");

	s->fence = vkt_fence(&s->vk);
	if (s->by_hand) {
		s->wait_sem = vkt_semaphore(&s->vk, true);
		s->signal_sem = vkt_semaphore(&s->vk, true);
	}
}

static int
xioctl(int fd, unsigned long req, void *arg)
{
	int r;
	do
		r = ioctl(fd, req, arg);
	while (r < 0 && (errno == EINTR || errno == EAGAIN));
	return r;
}

/* Submit A. Through the layer the app only submits; the floor first does
 * what the layer does for an acquire, by hand. */
static void
submit_acquire(struct side *s)
{
	VkSemaphore wait = VK_NULL_HANDLE;
	if (s->by_hand) {
		struct dma_buf_export_sync_file exp = { .flags = DMA_BUF_SYNC_READ, .fd = -1 };
		if (xioctl(s->dmabuf.dmabuf_fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &exp) < 0)
			vkb_die("DMA_BUF_IOCTL_EXPORT_SYNC_FILE: %m");
		/* On success the driver owns the fd (on failure vkb_die). */
		vkt_semaphore_import(&s->vk, s->wait_sem, exp.fd);
		wait = s->wait_sem;
	}
	vkt_submit_one(&s->vk, s->acquire_cb, wait, VK_NULL_HANDLE, VK_NULL_HANDLE);
}

/* Submit B. The floor signals a semaphore (the layer's side has none),
 * exports it and attaches it to the dma-buf, as the layer does. */
static void
submit_release(struct side *s)
{
	vkt_submit_one(&s->vk, s->release_cb, VK_NULL_HANDLE, s->signal_sem, s->fence);
	if (!s->by_hand)
		return;
	int fd = -1;
	vkt_semaphore_export(&s->vk, s->signal_sem, &fd);
	struct dma_buf_import_sync_file imp = { .flags = DMA_BUF_SYNC_WRITE, .fd = fd };
	if (xioctl(s->dmabuf.dmabuf_fd, DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &imp) < 0)
		vkb_die("DMA_BUF_IOCTL_IMPORT_SYNC_FILE: %m");
	close(fd);
}

static void
side_iterate(void *arg, bool record)
{
	struct side *s = arg;
	uint32_t fence_id;
	int ret = demo_vgem_fence_attach(s->vgem, s->dmabuf.handle, true, &fence_id);
	if (ret < 0)
		vkb_die("vgem fence attach: %s", strerror(-ret));

	int64_t t0 = now_ns();
	submit_acquire(s);
	int64_t t1 = now_ns();

	/* The producer's data, written while its fence is pending: copy A must
	 * see it, which it does only if it waited for the fence. */
	uint8_t stamp = (uint8_t)(1 + s->iter++ % 250);
	memset(s->dmabuf.map, stamp, s->dmabuf.size);
	ret = demo_vgem_fence_signal(s->vgem, fence_id);
	if (ret < 0)
		vkb_die("vgem fence signal: %s", strerror(-ret));

	int64_t t2 = now_ns();
	submit_release(s);
	vkt_fence_wait(&s->vk, s->fence);
	int64_t t3 = now_ns();
	const uint8_t *seen = s->host.map;
	if (seen[0] != stamp || seen[s->dmabuf.size - 1] != stamp)
		s->early++;
	if (record) {
		bench_samples_add(&s->total, (t1 - t0) + (t3 - t2));
		bench_samples_add(&s->acquire, t1 - t0);
		bench_samples_add(&s->release, t3 - t2);
	}
}

static void
side_finish(struct side *s)
{
	vkDeviceWaitIdle(s->vk.device);
	if (s->wait_sem)
		vkDestroySemaphore(s->vk.device, s->wait_sem, NULL);
	if (s->signal_sem)
		vkDestroySemaphore(s->vk.device, s->signal_sem, NULL);
	vkDestroyFence(s->vk.device, s->fence, NULL);
	VkCommandBuffer cbs[] = { s->acquire_cb, s->release_cb };
	vkFreeCommandBuffers(s->vk.device, s->vk.pool, 2, cbs);
	vkt_buffer_destroy(&s->vk, &s->shared);
	vkt_buffer_destroy(&s->vk, &s->host);
	vkt_finish(&s->vk);
	demo_vgem_buf_destroy(&s->dmabuf);
	bench_samples_finish(&s->total);
	bench_samples_finish(&s->acquire);
	bench_samples_finish(&s->release);
}

int
main(int argc, char **argv)
{
	long iterations = bench_args(argc, argv, NULL, NULL, NULL);

	int vgem = demo_vgem_open();
	if (vgem < 0) {
		printf("SKIP: no vgem (%s): run it in the test guest (scripts/run-bench.sh)\n",
		       strerror(-vgem));
		return 77;
	}
	vkb_env_setup();
	struct side layer, floor;
	side_init(&layer, true, vgem);
	side_init(&floor, false, vgem);
	printf("figure 2: one dma-buf acquire (pending vgem write fence) + release, %ld "
	       "iterations, layer and hand-written floor interleaved\n", iterations);
	vkb_interleave(iterations, side_iterate, &layer, &floor);
	printf("copies that ran before the producer's fence signalled: layer %ld, floor %ld\n",
	       layer.early, floor.early);
	if (layer.early || floor.early)
		vkb_die("an acquire did not wait for the producer: the figure would be wrong");
	bench_print_us("acquire+release", &layer.total, &floor.total);
	bench_print_us("  acquire (submit A)", &layer.acquire, &floor.acquire);
	bench_print_us("  release (submit B + fence wait)", &layer.release, &floor.release);
	side_finish(&layer);
	side_finish(&floor);
	close(vgem);
	return 0;
}
