/* SPDX-License-Identifier: MIT */
/*
 * Threads: 4 threads record and submit concurrently for a few seconds
 * (--seconds, default 3). Threads 0 and 1 share device A, threads 2 and 3
 * device B, so the layer sees concurrent recording on one device (its maps
 * and pools under one lock) and concurrent submits on different queues. Each
 * thread has its own vgem dma-buf, command pool and buffers; a queue is used
 * by one thread at a time (the app's mutex, as Vulkan requires).
 *
 * Per iteration, in each thread:
 *   acquire: attach a vgem WRITE fence; submit(acquire + copy dma-buf → dst);
 *            write pattern A on the CPU; signal; wait; dst must hold A;
 *   release: submit(copy src(B) → dma-buf + release); poll the dma-buf;
 *            the CPU must read B.
 * With --control (SYNCBRIDGE_DISABLE=1) some iteration must see a race.
 * With --signal same-thread the release batch also waits before a signal,
 * which the thread submits right after the release (vkSignalSemaphore):
 * in even iterations the batch waits on the thread's timeline T at a value
 * not yet signalled; in odd ones on a second timeline T2, whose signal an
 * empty batch submitted just before it carries — a batch that itself waits
 * on T (the release depends on an unsubmitted signal through a submitted
 * one). Not through a binary semaphore: a binary wait whose signal depends
 * on an unsubmitted one is invalid (VUID-vkQueueSubmit-pWaitSemaphores-03238),
 * and lavapipe's vkQueueSubmit then blocks until that signal is submitted —
 * which deadlocked this test under ASan when it tried. The layer defers each export to the vkSignalSemaphore
 * (layer/resolve.c) while the other threads submit on the same device. (The
 * signal cannot be a later submit on the same queue: a queue runs its
 * batches in order, so that would deadlock with or without the layer.)
 *
 * Timing: the run lasts --seconds, but every thread makes at least
 * MIN_ITERATIONS whatever the clock says (a thread that got no CPU before the
 * deadline would otherwise fail "made progress"; typically 370-940 each in
 * 3 s). In the control the acquire waits for the app's fence before the CPU
 * writes (without the layer nothing holds the copy back, so it completes
 * within ms), which makes every acquire iteration a race, not only the ones
 * where lavapipe happened to be fast: the control cannot pass by chance
 * (idle it saw 2,194 races in 2,197 iterations, nearly all releases).
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "harness.h"
#include "kernel.h"
#include "tbvk.h"

#define SIZE 4096
#define THREADS 4
#define MIN_ITERATIONS 5

struct shared_device {
	struct vkt *t;
	pthread_mutex_t queue_lock;
};

struct worker {
	int index;
	struct shared_device *dev;
	const struct tbvk_options *opt;
	int vgem;
	int64_t deadline;
	long iterations, acquire_races, release_races, errors;
	/* Its objects, destroyed by main once every thread is done (below);
	 * mine.pool is its own pool, null until made, and the cycle exists
	 * with it (tbvk_cycle_create succeeds or ends the test). */
	struct vkt mine;
	struct tbvk_cycle c;
	VkFence fence;
	VkSemaphore timeline, chained;
};

static VkResult
locked_submit(struct worker *w, VkCommandBuffer cb, VkFence fence)
{
	pthread_mutex_lock(&w->dev->queue_lock);
	VkResult r = tbvk_submit(w->dev->t, w->opt, cb, VK_NULL_HANDLE, 0, fence);
	pthread_mutex_unlock(&w->dev->queue_lock);
	return r;
}

static VkResult
locked_submit_wait(struct worker *w, VkCommandBuffer cb, VkSemaphore timeline, uint64_t value,
		   VkFence fence)
{
	pthread_mutex_lock(&w->dev->queue_lock);
	VkResult r = tbvk_submit(w->dev->t, w->opt, cb, timeline, value, fence);
	pthread_mutex_unlock(&w->dev->queue_lock);
	return r;
}

static VkResult
signal_timeline(struct worker *w, VkSemaphore timeline, uint64_t value)
{
	VkSemaphoreSignalInfo info = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
		.semaphore = timeline,
		.value = value,
	};
	return vkSignalSemaphore(w->dev->t->device, &info);
}

/* An empty batch: wait for `wait` = value, then signal `signal` = value. */
static VkResult
locked_submit_chain(struct worker *w, VkSemaphore wait, VkSemaphore signal, uint64_t value)
{
	VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
	VkTimelineSemaphoreSubmitInfo tl = {
		.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
		.waitSemaphoreValueCount = 1,
		.pWaitSemaphoreValues = &value,
		.signalSemaphoreValueCount = 1,
		.pSignalSemaphoreValues = &value,
	};
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.pNext = &tl,
		.waitSemaphoreCount = 1,
		.pWaitSemaphores = &wait,
		.pWaitDstStageMask = &stage,
		.signalSemaphoreCount = 1,
		.pSignalSemaphores = &signal,
	};
	pthread_mutex_lock(&w->dev->queue_lock);
	VkResult r = vkQueueSubmit(w->dev->t->queue, 1, &si, VK_NULL_HANDLE);
	pthread_mutex_unlock(&w->dev->queue_lock);
	return r;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct vkt *t = w->dev->t;
	/* Each thread: its own pool, so recording is truly concurrent. */
	w->mine = *t;
	w->mine.pool = VK_NULL_HANDLE;
	struct vkt *mine = &w->mine;
	VkCommandPoolCreateInfo pci = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = t->family,
	};
	if (vkCreateCommandPool(t->device, &pci, NULL, &mine->pool) != VK_SUCCESS) {
		mine->pool = VK_NULL_HANDLE;
		w->errors++;
		return NULL;
	}

	struct tbvk_cycle *c = &w->c;
	tbvk_cycle_create(mine, w->vgem, SIZE, c);
	VkFence fence = w->fence = vkt_fence(mine);
	bool wbs = w->opt->signal == TBVK_SIGNAL_SAME_THREAD;
	VkSemaphore timeline = w->timeline = wbs ? vkt_timeline(mine, 0) : VK_NULL_HANDLE;
	VkSemaphore chained = w->chained = wbs ? vkt_timeline(mine, 0) : VK_NULL_HANDLE;

	while ((w->iterations < MIN_ITERATIONS || now_ns() < w->deadline) && !w->errors) {
		uint8_t a = (uint8_t)(w->index * 64 + (w->iterations * 2) % 60 + 1);
		uint8_t b = (uint8_t)(a + 1);

		/* acquire */
		uint32_t fence_id;
		if (sbk_vgem_fence_attach(w->vgem, c->buf.handle, true, &fence_id) < 0) {
			w->errors++;
			break;
		}
		struct tbvk_rec rec;
		tbvk_begin(mine, w->opt, true, &rec);
		tbvk_acquire(mine, w->opt, tbvk_cmd(&rec), &c->sh, VK_ACCESS_TRANSFER_READ_BIT);
		tbvk_copy_from_shared(tbvk_cmd(&rec), &c->sh, &c->dst);
		vkt_host_read_barrier(tbvk_cmd(&rec));
		tbvk_end(mine, &rec);
		if (locked_submit(w, rec.primary, fence) != VK_SUCCESS)
			w->errors++;
		/* The control: let the unsynchronised copy finish first (header). */
		if (w->opt->control &&
		    vkWaitForFences(t->device, 1, &fence, VK_TRUE, 20ull * 1000000000) != VK_SUCCESS)
			w->errors++;
		memset(c->buf.map, a, SIZE);
		sbk_vgem_fence_signal(w->vgem, fence_id);
		if (vkWaitForFences(t->device, 1, &fence, VK_TRUE, 20ull * 1000000000) != VK_SUCCESS)
			w->errors++;
		vkResetFences(t->device, 1, &fence);
		if (vkt_count_bytes(c->dst.map, SIZE, a) != SIZE)
			w->acquire_races++;
		tbvk_rec_free(mine, &rec);

		/* release */
		memset(c->src.map, b, SIZE);
		tbvk_begin(mine, w->opt, true, &rec);
		tbvk_copy_to_shared(tbvk_cmd(&rec), &c->src, &c->sh);
		tbvk_release(mine, w->opt, tbvk_cmd(&rec), &c->sh, VK_ACCESS_TRANSFER_WRITE_BIT);
		tbvk_end(mine, &rec);
		uint64_t value = (uint64_t)w->iterations + 1;
		bool chain = wbs && w->iterations % 2;
		if (chain && locked_submit_chain(w, timeline, chained, value) != VK_SUCCESS)
			w->errors++;
		if (locked_submit_wait(w, rec.primary, chain ? chained : timeline, value, fence) !=
		    VK_SUCCESS)
			w->errors++;
		if (wbs && signal_timeline(w, timeline, value) != VK_SUCCESS)
			w->errors++;
		struct pollfd pfd = { .fd = c->buf.fd, .events = POLLIN };
		poll(&pfd, 1, 10000);
		if (vkt_count_bytes(c->buf.map, SIZE, b) != SIZE)
			w->release_races++;
		if (vkWaitForFences(t->device, 1, &fence, VK_TRUE, 20ull * 1000000000) != VK_SUCCESS)
			w->errors++;
		vkResetFences(t->device, 1, &fence);
		tbvk_rec_free(mine, &rec);
		w->iterations++;
	}

	/* Nothing is destroyed here: main does it after every thread has
	 * ended and the queues are idle (worker_finish). A vkQueueWaitIdle here
	 * (with the app's queue mutex held, as Vulkan requires) deadlocked
	 * once under ASan in CI: the other thread of the device had just
	 * submitted its chain batch, which waits on that thread's timeline,
	 * and was blocked on the mutex to submit the release it signals the
	 * timeline after; the wait-idle waited for that signal for ever. The
	 * fence alone is not enough either: it covers the release, and the
	 * chain batch before it may still be referenced by the driver's
	 * submit thread (the control crashed in libc, inside lavapipe,
	 * destroying the semaphores right after the fence). */
	return NULL;
}

/* A worker's objects, once no thread submits any more and its queue is idle. */
static void
worker_finish(struct worker *w)
{
	VkDevice device = w->dev->t->device;

	if (w->fence)
		vkDestroyFence(device, w->fence, NULL);
	if (w->timeline)
		vkDestroySemaphore(device, w->timeline, NULL);
	if (w->chained)
		vkDestroySemaphore(device, w->chained, NULL);
	if (w->mine.pool) {
		tbvk_cycle_destroy(&w->mine, &w->c);
		vkDestroyCommandPool(device, w->mine.pool, NULL);
	}
}

int
main(int argc, char **argv)
{
	struct tbvk_options opt;
	int vgem = tbvk_start(argc, argv, &opt);
	double seconds = opt.seconds > 0 ? opt.seconds : 3.0;

	struct vkt a, b;
	tbvk_init(&a, &opt, true);
	vkt_create_device(&b, &a);
	struct shared_device devs[2] = { { .t = &a }, { .t = &b } };
	pthread_mutex_init(&devs[0].queue_lock, NULL);
	pthread_mutex_init(&devs[1].queue_lock, NULL);

	struct worker w[THREADS];
	pthread_t th[THREADS];
	int64_t deadline = now_ns() + (int64_t)(seconds * 1e9);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){
			.index = i, .dev = &devs[i / 2], .opt = &opt, .vgem = vgem,
			.deadline = deadline,
		};
		REQUIRE(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0, "pthread_create");
	}
	long total = 0, races = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		tb_note("thread %d (device %c): %ld iterations, %ld acquire races, %ld release "
			     "races, %ld errors", i, i < 2 ? 'A' : 'B', w[i].iterations,
			     w[i].acquire_races, w[i].release_races, w[i].errors);
		CHECK_EQ(w[i].errors, 0, "Vulkan / vgem errors in a thread");
		CHECK(w[i].iterations >= MIN_ITERATIONS, "thread %d made progress", i);
		total += w[i].iterations;
		races += w[i].acquire_races + w[i].release_races;
	}
	tb_note("%ld iterations in %.1f s, %ld races", total, seconds, races);
	for (int i = 0; i < 2; i++)
		vkQueueWaitIdle(devs[i].t->queue);
	for (int i = 0; i < THREADS; i++)
		worker_finish(&w[i]);
	if (!opt.control)
		CHECK_EQ(races, 0, "no thread ever saw unsynchronised data");
	else
		CHECK(races > 0, "control: without the layer the threads see races");

	vkt_finish_device(&b);
	vkt_finish(&a);
	close(vgem);
	return tb_finish();
}
