/* SPDX-License-Identifier: MIT */
/*
 * vkQueueSubmit / vkQueueSubmit2: turning recorded ownership transfers into
 * kernel fences (the per-batch work is batch.c's).
 *
 * Both entry points go through one path: the app's submit is read through
 * struct submit_in (either struct version), each batch gets a struct
 * sbl_batch (batch.c), and one builder (build.c) copies the app's batches
 * into the struct version the app used with our semaphores appended.
 *
 * Our acquire semaphores ride with a fence of ours (the submit's own fence
 * slot when the app passed none, else an extra empty submit) and go back to
 * the pool once it signals (pool.c).
 *
 * Once the app has a timeline semaphore, every submit with semaphores is
 * told to resolve.c after the driver accepted it: a release whose batch
 * waits on a signal not yet submitted is exported later, by the call that
 * submits that signal (VUID-VkSemaphoreGetFdInfoKHR-handleType-03254).
 */
#include "submit.h"

#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "resolve.h"
#include "trace.h"

enum submit_kind { SUBMIT_1, SUBMIT_2, SUBMIT_2_KHR };

/* The app's submit, whichever entry point it came through. */
struct submit_in {
	enum submit_kind kind;
	VkQueue queue;
	uint32_t count;
	const void *submits;     /* as the app passed it */
	const VkSubmitInfo *s1;  /* SUBMIT_1, else NULL */
	const VkSubmitInfo2 *s2; /* SUBMIT_2 and SUBMIT_2_KHR, else NULL */
	VkFence fence;
};

static uint32_t
in_cmd_count(const struct submit_in *in, uint32_t batch)
{
	return in->s1 ? in->s1[batch].commandBufferCount : in->s2[batch].commandBufferInfoCount;
}

static VkCommandBuffer
in_cmd(const struct submit_in *in, uint32_t batch, uint32_t i)
{
	return in->s1 ? in->s1[batch].pCommandBuffers[i]
		      : in->s2[batch].pCommandBufferInfos[i].commandBuffer;
}

static VkResult
call_next(struct sbl_device *dev, const struct submit_in *in, const void *submits, VkFence fence)
{
	switch (in->kind) {
	case SUBMIT_1:
		return dev->QueueSubmit(in->queue, in->count, submits, fence);
	case SUBMIT_2:
		return dev->QueueSubmit2(in->queue, in->count, submits, fence);
	case SUBMIT_2_KHR:
		return dev->QueueSubmit2KHR(in->queue, in->count, submits, fence);
	}
	return VK_ERROR_UNKNOWN;
}

/* Whether any batch waits on or signals a semaphore (resolve.c's business). */
static bool
any_semaphore(const struct submit_in *in)
{
	for (uint32_t i = 0; i < in->count; i++) {
		if (in->s1 ? in->s1[i].waitSemaphoreCount || in->s1[i].signalSemaphoreCount
			   : in->s2[i].waitSemaphoreInfoCount || in->s2[i].signalSemaphoreInfoCount)
			return true;
	}
	return false;
}

/*
 * After the driver accepted the submit: its signals count as submitted, and a
 * batch (of batches, which may be NULL) that waits on a signal not yet
 * submitted hands its release half to resolve.c. Releases this submit resolved are
 * added to *ready.
 */
static void
resolve_submitted(struct sbl_device *dev, const struct submit_in *in, struct sbl_batch *batches,
		  uint64_t epoch, struct sbl_ready *ready)
{
	struct sbl_batch_sems one;
	struct sbl_batch_sems *sems = in->count == 1 ? &one : calloc(in->count, sizeof(*sems));

	if (!sems) {
		sbl_device_warn_untracked(dev, "a submit's semaphores");
		return;
	}
	for (uint32_t i = 0; i < in->count; i++) {
		if (in->s1)
			sbl_sems_from_submit(&in->s1[i], &sems[i]);
		else
			sbl_sems_from_submit2(&in->s2[i], &sems[i]);
	}
	sbl_resolve_submitted(dev, in->queue, in->count, sems, batches, epoch, ready);
	if (sems != &one)
		free(sems);
}

/* The driver accepted a submit the layer added nothing to. */
static VkResult
passed_down(struct sbl_device *dev, const struct submit_in *in, bool track, VkResult res)
{
	if (res == VK_SUCCESS && track) {
		struct sbl_ready ready = { 0 };
		resolve_submitted(dev, in, NULL, 0, &ready);
		sbl_resolve_finish(dev, &ready);
	}
	return res;
}

/* ------------------------------------------------------------------------ */
/* The plan                                                                  */

struct submit_plan {
	struct sbl_device *dev;
	const struct submit_in *in;
	struct sbl_batch *batches; /* in->count */
	bool any;                  /* some batch acquires or releases a dma-buf */
	bool cpu_wait;             /* out of memory after the batches were prepared */
	bool track;                /* tell resolve.c about the batches' semaphores */
	uint64_t epoch;            /* sbl_resolve_epoch() before the submit went down */
	uint32_t wait_count;       /* batches with an acquire semaphore */
	const void *built;         /* the batches with ours added (scratch) */
	/* Ours until handed over to the in-flight list (pool.c): */
	VkSemaphore *waits;        /* the batches' acquire semaphores */
	VkFence ours;              /* signals once they have been waited for */
	struct sbl_scratch scratch;
};

/* Drops everything the plan still holds: memory references, the scratch,
 * and our semaphores and fence that no submit carries. */
static void
plan_finish(struct submit_plan *plan)
{
	struct sbl_device *dev = plan->dev;

	for (uint32_t i = 0; plan->batches && i < plan->in->count; i++)
		sbl_batch_finish(dev, &plan->batches[i]);
	if (plan->ours)
		dev->DestroyFence(dev->handle, plan->ours, NULL);
	free(plan->waits);
	sbl_scratch_finish(&plan->scratch);
	free(plan->batches);
}

/*
 * Gather every batch's transfers (plan->any says whether there is anything to
 * do). Returns false only when out of memory.
 */
static bool
plan_gather(struct submit_plan *plan)
{
	struct sbl_device *dev = plan->dev;
	const struct submit_in *in = plan->in;

	plan->batches = calloc(in->count ? in->count : 1, sizeof(*plan->batches));
	if (!plan->batches)
		return false;

	bool ok = true;
	pthread_mutex_lock(&dev->lock);
	for (uint32_t i = 0; i < in->count && ok; i++) {
		struct sbl_batch *b = &plan->batches[i];
		uint32_t n = in_cmd_count(in, i);
		if (n && dev->mode == SBL_MODE_ALL)
			ok = sbl_batch_add_all_locked(dev, b);
		for (uint32_t c = 0; c < n && ok && dev->mode != SBL_MODE_ALL; c++)
			ok = sbl_batch_add_cmd_locked(dev, b, in_cmd(in, i, c));
		if (b->acquire.count || b->release.count)
			plan->any = true;
	}
	if (plan->any)
		sbl_inflight_retire_locked(dev);
	pthread_mutex_unlock(&dev->lock);
	return ok;
}

/* Before the submit: each batch's fences (batch.c). */
static void
plan_prepare(struct submit_plan *plan)
{
	const struct submit_in *in = plan->in;

	for (uint32_t i = 0; i < in->count; i++) {
		struct sbl_batch *b = &plan->batches[i];
		/* Only a VkSubmitInfo's pNext may carry per-semaphore arrays. */
		bool can_add = !in->s1 || sbl_submit_chain_extendable(in->s1[i].pNext);
		if (!can_add && (b->acquire.count || b->release.count))
			sbl_warn_once(plan->dev, SBL_WARN_CHAIN, 0,
				      "submit: a VkSubmitInfo pNext struct unknown to the layer "
				      "next to per-semaphore arrays; waiting on the CPU for that "
				      "batch");
		sbl_batch_prepare(plan->dev, b, can_add);
		if (b->wait)
			plan->wait_count++;
	}
}

/*
 * The app's batches with our semaphores (build.c), the array of acquire
 * semaphores and the fence they will ride with. False when out of memory.
 */
static bool
plan_build(struct submit_plan *plan)
{
	const struct submit_in *in = plan->in;
	uint32_t k = 0;

	plan->built = sbl_submits_build(&plan->scratch, !in->s1, in->submits, in->count,
					plan->batches);
	if (!plan->built)
		return false;
	if (!plan->wait_count)
		return true;

	plan->waits = malloc(plan->wait_count * sizeof(*plan->waits));
	if (!plan->waits)
		return false;
	for (uint32_t i = 0; i < in->count; i++)
		if (plan->batches[i].wait)
			plan->waits[k++] = plan->batches[i].wait;
	plan->ours = sbl_fence_get(plan->dev);
	return plan->ours != VK_NULL_HANDLE;
}

/* ------------------------------------------------------------------------ */
/* The submit                                                                */

/*
 * Whether any command buffer of the submit records an ownership transfer the
 * layer acts on (in mode all: whether any batch has command buffers while
 * the device has dma-buf memory). The common submit — nothing shared — then
 * costs no allocation: building a plan first (a calloc and a free per submit)
 * made vkQueueSubmit 1.35x the driver's alone in figure 1 of
 * docs/performance.md.
 *
 * In mode transfers, while no command buffer of the device holds a transfer
 * (dev->xfer_cmds, track.c), not even the lookups: one atomic load. Reading
 * it without the lock is enough: the transfers of a command buffer being
 * submitted were recorded (and counted, under dev->lock) before its
 * vkEndCommandBuffer, which the app must order before this submit
 * (vkQueueSubmit's valid usage: "Each element of the pCommandBuffers member
 * of each element of pSubmits must be in the pending or executable state"),
 * so the app's own synchronisation makes the count visible here. A count that
 * is stale the other way (a reset on another thread) only takes the slow path.
 */
static bool
any_transfer(struct sbl_device *dev, const struct submit_in *in)
{
	bool any = false;

	if (dev->mode == SBL_MODE_TRANSFERS &&
	    atomic_load_explicit(&dev->xfer_cmds, memory_order_acquire) == 0)
		return false;

	pthread_mutex_lock(&dev->lock);
	for (uint32_t i = 0; i < in->count && !any; i++) {
		uint32_t n = in_cmd_count(in, i);
		if (dev->mode == SBL_MODE_ALL) {
			any = n && dev->memories.count;
			continue;
		}
		for (uint32_t c = 0; c < n && !any; c++) {
			struct sbl_cmd *cmd =
				sbl_map_get(&dev->cmds, (uint64_t)(uintptr_t)in_cmd(in, i, c));
			any = cmd && cmd->count;
		}
	}
	pthread_mutex_unlock(&dev->lock);
	return any;
}

/* What vkQueueSubmit returns once the driver accepted the batches (batch.c,
 * "Errored fences"). */
static VkResult
submit_result(const struct submit_plan *plan, VkResult res)
{
	if (res != VK_SUCCESS || !sbl_fence_errors_device_lost())
		return res;
	for (uint32_t i = 0; i < plan->in->count; i++)
		if (plan->batches[i].fence_error)
			return VK_ERROR_DEVICE_LOST;
	return res;
}

/*
 * With markers on (SYNCBRIDGE_TRACE), one "layer.objects" line after each
 * submit the layer worked on: what it tracks (memories, buffers, images,
 * command buffers, those holding transfers) and what it holds in the driver
 * between submits (submits in flight and their semaphores, the pools). The
 * soak test (tests/layer/layer_soak.c) reads it to show that none of
 * these grows; `syncbridge-info trace` shows it as an instant. Off: one
 * cached check, no lock.
 */
static void
trace_objects(struct sbl_device *dev)
{
	if (!sb_trace_enabled())
		return;
	pthread_mutex_lock(&dev->lock);
	unsigned in_sems = 0;
	for (uint32_t i = 0; i < dev->inflight_count; i++)
		in_sems += dev->inflight[i].count;
	unsigned n[] = {
		dev->memories.count, dev->buffers.count, dev->images.count, dev->cmds.count,
		atomic_load_explicit(&dev->xfer_cmds, memory_order_relaxed),
		dev->inflight_count, in_sems, dev->sem_pool_count, dev->fence_pool_count,
	};
	pthread_mutex_unlock(&dev->lock);
	sb_trace_printf("layer.objects memories=%u buffers=%u images=%u cmds=%u xfer_cmds=%u "
			"inflight=%u inflight_semaphores=%u semaphore_pool=%u fence_pool=%u",
			n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8]);
}

/*
 * Out of memory (ours) once the batches were prepared: keep the guarantee on
 * the CPU and submit the app's batches as they are. Our semaphores are never
 * submitted (plan_finish destroys them); the dma-bufs still hold the
 * producers' fences, so polling them waits for at least as much.
 */
static VkResult
submit_on_cpu(struct submit_plan *plan)
{
	struct sbl_device *dev = plan->dev;
	const struct submit_in *in = plan->in;
	bool any_release = false;

	sbl_warn_once(dev, SBL_WARN_TRACK, 0,
		      "submit: out of memory (ours); waiting on the CPU instead");
	plan->cpu_wait = true;
	for (uint32_t i = 0; i < in->count; i++) {
		sbl_batch_poll_acquires(&plan->batches[i]);
		any_release |= plan->batches[i].release.count > 0;
	}
	VkResult res =
		passed_down(dev, in, plan->track, call_next(dev, in, in->submits, in->fence));
	if (res == VK_SUCCESS && any_release)
		dev->QueueWaitIdle(in->queue);
	return submit_result(plan, res);
}

/*
 * After the driver accepted the built batches: hand our acquire semaphores to
 * our fence (or, failing that, wait for the queue so that plan_finish may
 * destroy them), then fence every released dma-buf whose batch waits on
 * nothing unsubmitted (the others: resolve.c, later).
 */
static void
after_submit(struct submit_plan *plan)
{
	struct sbl_device *dev = plan->dev;
	const struct submit_in *in = plan->in;
	struct sbl_work_wait queue_wait = { .queue = in->queue };
	struct sbl_ready ready = { 0 };

	if (plan->wait_count) {
		/* With the app's fence in the slot, an empty submit signals ours
		 * once everything before it, our waits included, has executed. */
		if (in->fence && dev->QueueSubmit(in->queue, 0, NULL, plan->ours) != VK_SUCCESS)
			sbl_work_wait(dev, &queue_wait);
		if (!queue_wait.done &&
		    sbl_inflight_add(dev, plan->ours, plan->waits, plan->wait_count, false)) {
			plan->waits = NULL;
			plan->ours = VK_NULL_HANDLE;
			for (uint32_t i = 0; i < in->count; i++)
				plan->batches[i].wait = VK_NULL_HANDLE;
		} else {
			sbl_work_wait(dev, &queue_wait);
		}
	}
	if (plan->track)
		resolve_submitted(dev, in, plan->batches, plan->epoch, &ready);
	for (uint32_t i = 0; i < in->count; i++)
		sbl_batch_finish_release(dev, &plan->batches[i], &queue_wait, true);
	sbl_resolve_finish(dev, &ready);
}

/* A submit with a transfer in some command buffer (any_transfer). */
static VkResult
submit(struct sbl_device *dev, const struct submit_in *in, bool track)
{
	struct submit_plan plan = { .dev = dev, .in = in, .track = track };
	VkResult res;

	if (!plan_gather(&plan)) {
		/* Out of memory (ours): we do not know what this submit shares, so
		 * wait on the CPU for every dma-buf of the device before, and for
		 * the queue after. */
		sbl_warn_once(dev, SBL_WARN_TRACK, 0,
			      "submit: out of memory (ours); waiting on the CPU for every "
			      "dma-buf and for the queue instead");
		plan.any = false;
		sbl_wait_all_memories(dev);
		res = passed_down(dev, in, track, call_next(dev, in, in->submits, in->fence));
		if (res == VK_SUCCESS)
			dev->QueueWaitIdle(in->queue);
		goto out_plan;
	}
	if (!plan.any) {
		res = passed_down(dev, in, track, call_next(dev, in, in->submits, in->fence));
		goto out_plan;
	}
	sb_trace("begin layer.submit queue=%p batches=%u", (void *)in->queue, in->count);

	plan_prepare(&plan);
	if (!plan_build(&plan)) {
		res = submit_on_cpu(&plan);
		goto out_plan;
	}
	if (plan.track)
		plan.epoch = sbl_resolve_epoch(dev);
	/* Our fence rides in the app's slot when it is free. */
	res = call_next(dev, in, plan.built, in->fence ? in->fence : plan.ours);
	if (res != VK_SUCCESS)
		goto out_plan; /* the driver took nothing: plan_finish drops what we prepared */
	after_submit(&plan);
	res = submit_result(&plan, VK_SUCCESS);

out_plan:
	plan_finish(&plan);
	if (plan.any) {
		sb_trace("end layer.submit result=%d%s", res,
			 plan.cpu_wait ? " fallback=cpu_wait" : "");
		trace_objects(dev);
	}
	return res;
}

static VkResult
queue_submit(enum submit_kind kind, VkQueue queue, uint32_t count, const void *submits,
	     VkFence fence)
{
	struct sbl_device *dev = sbl_device_lookup(queue);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;

	struct submit_in in = {
		.kind = kind,
		.queue = queue,
		.count = count,
		.submits = submits,
		.s1 = kind == SUBMIT_1 ? submits : NULL,
		.s2 = kind == SUBMIT_1 ? NULL : submits,
		.fence = fence,
	};
	if (dev->mode == SBL_MODE_OFF || count == 0)
		return call_next(dev, &in, submits, fence);
	bool track = sbl_resolve_active(dev) && any_semaphore(&in);
	if (!any_transfer(dev, &in))
		return passed_down(dev, &in, track, call_next(dev, &in, submits, fence));
	return submit(dev, &in, track);
}

static VKAPI_ATTR VkResult VKAPI_CALL
QueueSubmit(VkQueue queue, uint32_t count, const VkSubmitInfo *submits, VkFence fence)
{
	return queue_submit(SUBMIT_1, queue, count, submits, fence);
}

static VKAPI_ATTR VkResult VKAPI_CALL
QueueSubmit2(VkQueue queue, uint32_t count, const VkSubmitInfo2 *submits, VkFence fence)
{
	return queue_submit(SUBMIT_2, queue, count, submits, fence);
}

static VKAPI_ATTR VkResult VKAPI_CALL
QueueSubmit2KHR(VkQueue queue, uint32_t count, const VkSubmitInfo2 *submits, VkFence fence)
{
	return queue_submit(SUBMIT_2_KHR, queue, count, submits, fence);
}

const struct sbl_entry sbl_submit_entries[] = {
	SBL_ENTRY(QueueSubmit),
	SBL_ENTRY(QueueSubmit2),
	SBL_ENTRY(QueueSubmit2KHR),
	{ NULL, NULL },
};
