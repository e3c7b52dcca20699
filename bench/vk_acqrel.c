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
	struct vkb vk;
	bool by_hand; /* the floor */
	int vgem;     /* borrowed */
	struct demo_vgem_buf dmabuf;
	struct vkb_buffer shared, host;
	VkCommandBuffer acquire_cb, release_cb;
	VkFence fence;
	VkSemaphore wait_sem, signal_sem; /* the floor's */
	void *host_map;
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
	vkb_import_buffer(&s->vk, s->dmabuf.dmabuf_fd, s->dmabuf.size, &s->shared);
	ret = demo_vgem_buf_map(&s->dmabuf);
	if (ret < 0)
		vkb_die("vgem map: %s", strerror(-ret));
	vkb_host_buffer(&s->vk, s->dmabuf.size, &s->host);
	VKB_CHECK(vkMapMemory(s->vk.device, s->host.memory, 0, VK_WHOLE_SIZE, 0, &s->host_map));
	VkBufferCopy region = { .size = s->dmabuf.size };

	s->acquire_cb = vkb_cmd_begin(&s->vk);
	vkb_transfer(&s->vk, s->acquire_cb, s->shared.buffer, true, VK_ACCESS_TRANSFER_READ_BIT);
	vkCmdCopyBuffer(s->acquire_cb, s->shared.buffer, s->host.buffer, 1, &region);
	VKB_CHECK(vkEndCommandBuffer(s->acquire_cb));

	s->release_cb = vkb_cmd_begin(&s->vk);
	VkMemoryBarrier m = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
		.dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
	};
	/* The copy in follows A's copy out (same queue, same buffer). */
	vkCmdPipelineBarrier(s->release_cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
			     VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &m, 0, NULL, 0, NULL);
	vkCmdCopyBuffer(s->release_cb, s->host.buffer, s->shared.buffer, 1, &region);
	vkb_transfer(&s->vk, s->release_cb, s->shared.buffer, false, VK_ACCESS_TRANSFER_WRITE_BIT);
	VKB_CHECK(vkEndCommandBuffer(s->release_cb));

	s->fence = vkb_fence(&s->vk);
	if (s->by_hand) {
		s->wait_sem = vkb_sync_fd_semaphore(&s->vk);
		s->signal_sem = vkb_sync_fd_semaphore(&s->vk);
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

/* The floor's submit A: what the layer does for an acquire, by hand. */
static void
floor_acquire(struct side *s)
{
	struct dma_buf_export_sync_file exp = { .flags = DMA_BUF_SYNC_READ, .fd = -1 };
	if (xioctl(s->dmabuf.dmabuf_fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &exp) < 0)
		vkb_die("DMA_BUF_IOCTL_EXPORT_SYNC_FILE: %m");
	VkImportSemaphoreFdInfoKHR import = {
		.sType = VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR,
		.semaphore = s->wait_sem,
		.flags = VK_SEMAPHORE_IMPORT_TEMPORARY_BIT,
		.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
		.fd = exp.fd,
	};
	/* On success the driver owns the fd. */
	VKB_CHECK(s->vk.ImportSemaphoreFdKHR(s->vk.device, &import));
	VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.waitSemaphoreCount = 1,
		.pWaitSemaphores = &s->wait_sem,
		.pWaitDstStageMask = &stage,
		.commandBufferCount = 1,
		.pCommandBuffers = &s->acquire_cb,
	};
	VKB_CHECK(vkQueueSubmit(s->vk.queue, 1, &si, VK_NULL_HANDLE));
}

/* The floor's submit B: signal a semaphore, export it, attach it to the dma-buf. */
static void
floor_release(struct side *s)
{
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &s->release_cb,
		.signalSemaphoreCount = 1,
		.pSignalSemaphores = &s->signal_sem,
	};
	VKB_CHECK(vkQueueSubmit(s->vk.queue, 1, &si, s->fence));
	int fd = -1;
	VkSemaphoreGetFdInfoKHR get = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR,
		.semaphore = s->signal_sem,
		.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
	};
	VKB_CHECK(s->vk.GetSemaphoreFdKHR(s->vk.device, &get, &fd));
	struct dma_buf_import_sync_file imp = { .flags = DMA_BUF_SYNC_WRITE, .fd = fd };
	if (xioctl(s->dmabuf.dmabuf_fd, DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &imp) < 0)
		vkb_die("DMA_BUF_IOCTL_IMPORT_SYNC_FILE: %m");
	close(fd);
}

static void
side_iterate(struct side *s, bool record)
{
	uint32_t fence_id;
	int ret = demo_vgem_fence_attach(s->vgem, s->dmabuf.handle, true, &fence_id);
	if (ret < 0)
		vkb_die("vgem fence attach: %s", strerror(-ret));

	int64_t t0 = bench_now_ns();
	if (s->by_hand) {
		floor_acquire(s);
	} else {
		VkSubmitInfo si = {
			.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
			.commandBufferCount = 1,
			.pCommandBuffers = &s->acquire_cb,
		};
		VKB_CHECK(vkQueueSubmit(s->vk.queue, 1, &si, VK_NULL_HANDLE));
	}
	int64_t t1 = bench_now_ns();

	/* The producer's data, written while its fence is pending: copy A must
	 * see it, which it does only if it waited for the fence. */
	uint8_t stamp = (uint8_t)(1 + s->iter++ % 250);
	memset(s->dmabuf.map, stamp, s->dmabuf.size);
	ret = demo_vgem_fence_signal(s->vgem, fence_id);
	if (ret < 0)
		vkb_die("vgem fence signal: %s", strerror(-ret));

	int64_t t2 = bench_now_ns();
	if (s->by_hand) {
		floor_release(s);
	} else {
		VkSubmitInfo si = {
			.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
			.commandBufferCount = 1,
			.pCommandBuffers = &s->release_cb,
		};
		VKB_CHECK(vkQueueSubmit(s->vk.queue, 1, &si, s->fence));
	}
	VKB_CHECK(vkWaitForFences(s->vk.device, 1, &s->fence, VK_TRUE, UINT64_MAX));
	VKB_CHECK(vkResetFences(s->vk.device, 1, &s->fence));
	int64_t t3 = bench_now_ns();
	const uint8_t *seen = s->host_map;
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
	vkb_buffer_destroy(&s->vk, &s->shared);
	vkb_buffer_destroy(&s->vk, &s->host);
	vkb_finish(&s->vk);
	demo_vgem_buf_destroy(&s->dmabuf);
	bench_samples_finish(&s->total);
	bench_samples_finish(&s->acquire);
	bench_samples_finish(&s->release);
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

	const long warmup = 20;
	int64_t t0 = bench_now_ns();
	for (long i = 0; i < iterations + warmup; i++) {
		bool record = i >= warmup;
		if (i % 2) {
			side_iterate(&layer, record);
			side_iterate(&floor, record);
		} else {
			side_iterate(&floor, record);
			side_iterate(&layer, record);
		}
	}
	printf("(%.1f s)\n", (bench_now_ns() - t0) / 1e9);
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
