/* SPDX-License-Identifier: MIT */
/*
 * A release's SYNC_FD export waits until every signal its batch depends on
 * has been submitted.
 *
 * The spec (VUID-VkSemaphoreGetFdInfoKHR-handleType-03254): for a handle type
 * with copy transference (SYNC_FD) "semaphore must have an associated
 * semaphore signal operation that has been submitted for execution and any
 * semaphore signal operations on which it depends must have also been
 * submitted for execution". A release batch that waits on a timeline value
 * nobody has signalled yet (wait-before-signal, legal since timeline
 * semaphores) has a submitted signal that depends on an unsubmitted one, so
 * the layer may not export its semaphore when vkQueueSubmit returns. Drivers
 * take that rule at its word: Mesa's venus turns the export into a host
 * export on its command ring that waits for the dependency to be submitted,
 * and the app's vkSignalSemaphore queued behind it never runs (docs/layer.md,
 * "Mesa's venus"); lavapipe's export waits for the work, which in turn waits
 * for a signal the same thread would submit after vkQueueSubmit returned.
 *
 * The model (the one of native implicit-sync drivers whose submits go through
 * a thread when they wait before a signal, Mesa's vk_queue among them): the
 * batch goes to the driver at once; its release half (our signal semaphore,
 * the dma-bufs it fences) waits here, and is exported and attached by the
 * very call that submits its last missing dependency — the app's
 * vkQueueSubmit(2), vkQueueBindSparse or vkSignalSemaphore, after the driver
 * accepted it and before it returns. So:
 *  - no call blocks on a signal that is not submitted (no same-thread
 *    deadlock, no venus ring stall);
 *  - once any call of the app has submitted the dependency, the fence is on
 *    the dma-buf: a consumer told afterwards, by any means, finds it;
 *  - between the release's vkQueueSubmit and that call the dma-buf carries
 *    no fence of the batch (the window docs/layer.md measures). A consumer
 *    the app tells in that window reads too early, as with a native driver.
 *
 * What the layer knows: per timeline semaphore of the app, the highest value
 * whose signal has been submitted with all its own dependencies (its initial
 * value, vkSignalSemaphore, the signals of resolved batches); per binary
 * semaphore, whether its pending signal belongs to a batch still waiting
 * here. A batch waiting on either is itself deferred, and its signals count
 * only once it resolves (the spec's "any semaphore signal operations on which
 * it depends"). A timeline shared with another process or device (created
 * exportable, or imported) can be signalled where the layer cannot see it:
 * for those it also asks the driver for the counter value, each time it
 * looks. A binary wait's signal, and everything that signal depends on, must
 * be submitted before the wait is (VUID-vkQueueSubmit-pWaitSemaphores-03238),
 * so a valid app never waits on a binary semaphore a deferred batch signals;
 * the layer still tracks that case, so that an invalid app does not make it
 * export early. Unresolved waits thus come only from timeline semaphores:
 * while the app has none, none of this runs (one atomic load per submit).
 */
#include "resolve.h"

#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "util.h"

/* One of the app's timeline semaphores. */
struct sbl_timeline {
	uint64_t submitted; /* highest value signalled with all its dependencies submitted */
	bool external;      /* exportable or imported: others may signal it */
};

struct deferred_wait {
	VkSemaphore sem;
	uint64_t value; /* timeline */
	uint64_t dep;   /* binary: the id of the deferred batch that signals it */
};

struct deferred_signal {
	VkSemaphore sem;
	uint64_t value;
};

/* A batch with an unresolved wait. */
struct sbl_deferred {
	struct sbl_deferred *next;
	uint64_t id;
	struct deferred_wait *waits; /* its unresolved waits */
	uint32_t wait_count;
	struct deferred_signal *signals;
	uint32_t signal_count;
	/* Its release half, if any (batch.h), and our fence submitted after it
	 * (the CPU-wait fallback; any thread may wait on it). */
	bool has_release;
	struct sbl_batch b;
	VkFence fence;
	int64_t deferred_ns;
};

bool
sbl_resolve_active(struct sbl_device *dev)
{
	return atomic_load_explicit(&dev->timeline_count, memory_order_relaxed) != 0;
}

/* ------------------------------------------------------------------------ */
/* Under dev->lock                                                           */

static struct sbl_deferred *
deferred_find_locked(struct sbl_device *dev, uint64_t id)
{
	for (struct sbl_deferred *d = dev->deferred; d; d = d->next)
		if (d->id == id)
			return d;
	return NULL;
}

static bool
wait_resolved_locked(struct sbl_device *dev, const struct deferred_wait *w)
{
	if (w->dep)
		return !deferred_find_locked(dev, w->dep);

	struct sbl_timeline *t = sbl_map_get(&dev->timelines, (uint64_t)w->sem);
	if (!t || t->submitted >= w->value)
		return true;
	/* Signalled where we cannot see it? Reaching the value means the
	 * signal has executed, so it was submitted. */
	uint64_t now = 0;
	if (t->external && dev->GetSemaphoreCounterValue &&
	    dev->GetSemaphoreCounterValue(dev->handle, w->sem, &now) == VK_SUCCESS &&
	    now >= w->value) {
		t->submitted = now;
		return true;
	}
	return false;
}

/*
 * A signal whose dependencies are all submitted: from a batch that waited on
 * nothing unsubmitted or from the host (id 0), or from deferred batch `id`
 * as it resolves.
 */
static void
signal_submitted_locked(struct sbl_device *dev, VkSemaphore sem, uint64_t value, uint64_t id)
{
	struct sbl_timeline *t = sbl_map_get(&dev->timelines, (uint64_t)sem);
	if (t) {
		if (value > t->submitted)
			t->submitted = value;
		atomic_fetch_add_explicit(&dev->timeline_signals, 1, memory_order_relaxed);
		return;
	}
	/* Binary: a new signal replaces any deferred one; a resolving batch
	 * clears only its own (a waiter may have consumed it, and a later
	 * deferred batch signalled the semaphore again). */
	if (!id || (uint64_t)(uintptr_t)sbl_map_get(&dev->binary_pending, (uint64_t)sem) == id)
		sbl_map_remove(&dev->binary_pending, (uint64_t)sem);
}

static void
ready_add(struct sbl_ready *ready, struct sbl_deferred *d)
{
	d->next = NULL;
	if (!ready->tail)
		ready->tail = &ready->head;
	*ready->tail = d;
	ready->tail = &d->next;
}

/* Move every deferred batch whose waits are now all resolved to *ready, its
 * signals counted as submitted (which may resolve more). */
static void
resolve_locked(struct sbl_device *dev, struct sbl_ready *ready)
{
	bool progress = true;

	while (progress) {
		progress = false;
		for (struct sbl_deferred **p = &dev->deferred; *p;) {
			struct sbl_deferred *d = *p;
			uint32_t i = 0;
			while (i < d->wait_count && wait_resolved_locked(dev, &d->waits[i]))
				i++;
			if (i < d->wait_count) {
				p = &d->next;
				continue;
			}
			*p = d->next;
			for (uint32_t s = 0; s < d->signal_count; s++)
				signal_submitted_locked(dev, d->signals[s].sem, d->signals[s].value,
							d->id);
			ready_add(ready, d);
			progress = true;
		}
	}
}

static void
deferred_free(struct sbl_deferred *d)
{
	free(d->waits);
	free(d->signals);
	free(d);
}

/*
 * The batch's waits that are not resolved, into a new deferred batch (NULL
 * when all are resolved, or out of memory: then it is treated as resolved,
 * as before this file existed, and said once). With `force`, a deferred
 * batch even when all are resolved (it resolves at once; see
 * signalled_meanwhile_locked).
 */
static struct sbl_deferred *
defer_if_unresolved_locked(struct sbl_device *dev, const struct sbl_batch_sems *bs, bool force)
{
	struct sbl_deferred *d = NULL;

	for (uint32_t i = 0; i < bs->waits.count; i++) {
		struct deferred_wait w = { 0 };
		sbl_sems_at(&bs->waits, i, &w.sem, &w.value);
		if (!sbl_map_get(&dev->timelines, (uint64_t)w.sem)) {
			/* Binary: a wait consumes the pending signal. */
			w.dep = (uint64_t)(uintptr_t)sbl_map_remove(&dev->binary_pending,
								    (uint64_t)w.sem);
			if (!w.dep)
				continue;
		}
		if (wait_resolved_locked(dev, &w))
			continue;
		if (!d) {
			d = calloc(1, sizeof(*d));
			if (d)
				d->waits = calloc(bs->waits.count, sizeof(*d->waits));
			if (!d || !d->waits)
				goto err_nomem;
		}
		d->waits[d->wait_count++] = w;
	}
	if (!d && force) {
		d = calloc(1, sizeof(*d));
		if (d)
			d->waits = calloc(1, sizeof(*d->waits));
		if (!d || !d->waits)
			goto err_nomem;
	}
	if (!d)
		return NULL;

	d->signals = calloc(bs->signals.count ? bs->signals.count : 1, sizeof(*d->signals));
	if (!d->signals)
		goto err_nomem;
	d->id = ++dev->deferred_next_id;
	for (uint32_t i = 0; i < bs->signals.count; i++) {
		struct deferred_signal *s = &d->signals[d->signal_count++];
		sbl_sems_at(&bs->signals, i, &s->sem, &s->value);
		if (!sbl_map_get(&dev->timelines, (uint64_t)s->sem) &&
		    sbl_map_put(&dev->binary_pending, (uint64_t)s->sem,
				(void *)(uintptr_t)d->id) < 0)
			sbl_device_warn_untracked(dev, "a binary semaphore signalled after a "
						       "wait-before-signal");
	}
	return d;

err_nomem:
	if (d)
		deferred_free(d);
	sbl_device_warn_untracked(dev, "a batch that waits before a signal");
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* The submit's side                                                         */

uint64_t
sbl_resolve_epoch(struct sbl_device *dev)
{
	/* No lock on the submit path: the count only has to have moved by the
	 * time sbl_resolve_submitted compares it, under the lock. */
	return atomic_load_explicit(&dev->timeline_signals, memory_order_relaxed);
}

/*
 * Whether a batch with a release waits on a timeline that some call signalled
 * while this submit was on its way down (since `epoch`). Then a layer below
 * may have seen that signal after the batch, and count the batch as done
 * before our export (sbl_resolve_finish, retire_signal): its release takes
 * the deferred path, whose semaphore is destroyed after the batch instead of
 * pooled.
 */
static bool
signalled_meanwhile_locked(struct sbl_device *dev, const struct sbl_batch_sems *bs,
			   const struct sbl_batch *b, uint64_t epoch)
{
	if (!b || !b->release.count || !b->signal ||
	    atomic_load_explicit(&dev->timeline_signals, memory_order_relaxed) == epoch)
		return false;
	for (uint32_t i = 0; i < bs->waits.count; i++) {
		VkSemaphore sem;
		uint64_t value;
		sbl_sems_at(&bs->waits, i, &sem, &value);
		if (sbl_map_get(&dev->timelines, (uint64_t)sem))
			return true;
	}
	return false;
}

void
sbl_resolve_submitted(struct sbl_device *dev, VkQueue queue, uint32_t count,
		      const struct sbl_batch_sems *sems, struct sbl_batch *batches,
		      uint64_t epoch, struct sbl_ready *ready)
{
	/* At most one fence per batch; without this array (out of memory) a
	 * deferred release has no CPU-wait fallback, only its export. */
	VkFence *fences = calloc(count, sizeof(*fences));
	uint32_t fence_count = 0;

	pthread_mutex_lock(&dev->lock);
	struct sbl_deferred **tail = &dev->deferred;
	while (*tail)
		tail = &(*tail)->next;
	for (uint32_t i = 0; i < count; i++) {
		bool force = signalled_meanwhile_locked(dev, &sems[i], batches ? &batches[i] : NULL,
							 epoch);
		struct sbl_deferred *d = defer_if_unresolved_locked(dev, &sems[i], force);
		if (!d) {
			for (uint32_t s = 0; s < sems[i].signals.count; s++) {
				VkSemaphore sem;
				uint64_t value;
				sbl_sems_at(&sems[i].signals, s, &sem, &value);
				signal_submitted_locked(dev, sem, value, 0);
			}
			continue;
		}
		struct sbl_batch *b = batches ? &batches[i] : NULL;
		if (b && b->release.count && (b->signal || b->cpu_release)) {
			/* Taken over: exported once its waits resolve. */
			d->has_release = true;
			d->b.release = b->release;
			d->b.signal = b->signal;
			d->b.cpu_release = b->cpu_release;
			b->release = (struct sbl_sync_set){ 0 };
			b->signal = VK_NULL_HANDLE;
			b->cpu_release = false;
			d->fence = fences ? sbl_fence_get_locked(dev) : VK_NULL_HANDLE;
			if (d->fence)
				fences[fence_count++] = d->fence;
			d->deferred_ns = sb_now_ns();
			sb_trace("layer.release_deferred id=%llu waits=%u",
				 (unsigned long long)d->id, d->wait_count);
		}
		*tail = d;
		tail = &d->next;
	}
	resolve_locked(dev, ready);
	pthread_mutex_unlock(&dev->lock);

	/* Each deferred release's fence follows its batch on this queue, which
	 * the caller holds. A thread that resolves the batch before this submit
	 * only waits on it in a fallback, and then just a little longer. */
	for (uint32_t i = 0; i < fence_count; i++)
		if (dev->QueueSubmit(queue, 0, NULL, fences[i]) != VK_SUCCESS)
			sb_warn("layer: release: cannot submit our fence after a batch that waits "
				"before a signal (driver); its CPU-wait fallback would not return");
	free(fences);
}

/*
 * A deferred release's semaphore is not pooled after its export: it is
 * destroyed once its batch is done (d->fence). The spec makes the export a
 * wait, so reusing it would be valid; but the export comes after the call
 * that submitted the dependency, and by then a layer below may count the
 * batch as done and its signal as no longer pending. Khronos validation
 * does (its queue model retires a batch once its waits are signalled, and
 * counts a SYNC_FD export as a wait only while the signal is pending): on
 * venus, where a submit takes long enough for another thread's signal to
 * land meanwhile, the next batch that signalled the reused semaphore was
 * reported UNASSIGNED-CoreValidation-DrawState-QueueForwardProgress after 3
 * of 6 rounds whose dependency was signalled after the batch went down.
 * The same holds for a batch resolved by a signal that came while it was
 * going down (signalled_meanwhile_locked sends it here). Without a fence
 * (out of memory) the semaphore goes back to the pool as before.
 */
static void
retire_signal(struct sbl_device *dev, struct sbl_deferred *d)
{
	if (!d->fence)
		return;
	VkSemaphore *sems = NULL;
	if (d->b.signal) {
		sems = malloc(sizeof(*sems));
		if (sems)
			sems[0] = d->b.signal;
	}
	if ((sems || !d->b.signal) && sbl_inflight_add(dev, d->fence, sems, sems ? 1 : 0, true)) {
		if (sems)
			d->b.signal = VK_NULL_HANDLE;
		return;
	}
	free(sems);
	/* Out of memory: wait for the batch here, then nothing is in use. */
	dev->WaitForFences(dev->handle, 1, &d->fence, VK_TRUE, UINT64_MAX);
	dev->DestroyFence(dev->handle, d->fence, NULL);
	/* d->b.signal, if set, is destroyed by sbl_batch_finish. */
}

void
sbl_resolve_finish(struct sbl_device *dev, struct sbl_ready *ready)
{
	struct sbl_deferred *d = ready->head;

	while (d) {
		struct sbl_deferred *next = d->next;
		if (d->has_release) {
			sb_trace("layer.release_resolved id=%llu after_ms=%.3f",
				 (unsigned long long)d->id, (sb_now_ns() - d->deferred_ns) / 1e6);
			struct sbl_work_wait w = { .fence = d->fence };
			if (!d->fence) /* no fence to wait on: the export must do */
				w.done = true;
			sbl_batch_finish_release(dev, &d->b, &w, !d->fence);
			retire_signal(dev, d);
			sbl_batch_finish(dev, &d->b);
		}
		deferred_free(d);
		d = next;
	}
	*ready = (struct sbl_ready){ 0 };
}

void
sbl_resolve_device_finish(struct sbl_device *dev)
{
	struct sbl_deferred *d = dev->deferred;

	/* A valid vkDestroyDevice follows the end of all work, so what is still
	 * here had its dependency signalled where the layer could not see it. */
	while (d) {
		struct sbl_deferred *next = d->next;
		if (d->fence)
			dev->DestroyFence(dev->handle, d->fence, NULL);
		sbl_batch_finish(dev, &d->b);
		deferred_free(d);
		d = next;
	}
	dev->deferred = NULL;
	sbl_map_foreach(&dev->timelines, i)
		free(dev->timelines.values[i]);
	sbl_map_finish(&dev->timelines);
	sbl_map_finish(&dev->binary_pending);
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */

static VKAPI_ATTR VkResult VKAPI_CALL
CreateSemaphore(VkDevice device, const VkSemaphoreCreateInfo *info,
		const VkAllocationCallbacks *alloc, VkSemaphore *out)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	VkResult res = dev->CreateSemaphore(device, info, alloc, out);
	if (res != VK_SUCCESS)
		return res;

	const VkSemaphoreTypeCreateInfo *type = NULL;
	bool exportable = false;
	for (const VkBaseInStructure *s = info->pNext; s; s = s->pNext) {
		if (s->sType == VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO)
			type = (const VkSemaphoreTypeCreateInfo *)s;
		else if (s->sType == VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO)
			exportable = ((const VkExportSemaphoreCreateInfo *)s)->handleTypes != 0;
	}
	if (!type || type->semaphoreType != VK_SEMAPHORE_TYPE_TIMELINE)
		return VK_SUCCESS;

	struct sbl_timeline *t = calloc(1, sizeof(*t));
	if (t) {
		t->submitted = type->initialValue;
		t->external = exportable;
	}
	pthread_mutex_lock(&dev->lock);
	bool ok = t && sbl_map_put(&dev->timelines, (uint64_t)*out, t) == 0;
	if (ok)
		atomic_fetch_add_explicit(&dev->timeline_count, 1, memory_order_relaxed);
	pthread_mutex_unlock(&dev->lock);
	if (!ok) {
		free(t);
		sbl_device_warn_untracked(dev, "a timeline semaphore");
	}
	return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL
DestroySemaphore(VkDevice device, VkSemaphore sem, const VkAllocationCallbacks *alloc)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return;
	if (sem) {
		pthread_mutex_lock(&dev->lock);
		struct sbl_timeline *t = sbl_map_remove(&dev->timelines, (uint64_t)sem);
		if (t)
			atomic_fetch_sub_explicit(&dev->timeline_count, 1, memory_order_relaxed);
		sbl_map_remove(&dev->binary_pending, (uint64_t)sem);
		pthread_mutex_unlock(&dev->lock);
		free(t);
	}
	dev->DestroySemaphore(device, sem, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL
ImportSemaphoreFdKHR(VkDevice device, const VkImportSemaphoreFdInfoKHR *info)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	VkResult res = dev->ImportSemaphoreFdKHR(device, info);
	if (res == VK_SUCCESS) {
		pthread_mutex_lock(&dev->lock);
		struct sbl_timeline *t = sbl_map_get(&dev->timelines, (uint64_t)info->semaphore);
		if (t)
			t->external = true; /* its payload is shared now */
		pthread_mutex_unlock(&dev->lock);
	}
	return res;
}

/* vkSignalSemaphore and its KHR alias (khr). */
static VkResult
signal_semaphore(VkDevice device, const VkSemaphoreSignalInfo *info, bool khr)
{
	struct sbl_device *dev = sbl_device_lookup(device);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	VkResult res = (khr ? dev->SignalSemaphoreKHR : dev->SignalSemaphore)(device, info);
	if (res != VK_SUCCESS || !sbl_resolve_active(dev))
		return res;

	struct sbl_ready ready = { 0 };
	pthread_mutex_lock(&dev->lock);
	signal_submitted_locked(dev, info->semaphore, info->value, 0);
	resolve_locked(dev, &ready);
	pthread_mutex_unlock(&dev->lock);
	sbl_resolve_finish(dev, &ready);
	return res;
}

static VKAPI_ATTR VkResult VKAPI_CALL
SignalSemaphore(VkDevice device, const VkSemaphoreSignalInfo *info)
{
	return signal_semaphore(device, info, false);
}

static VKAPI_ATTR VkResult VKAPI_CALL
SignalSemaphoreKHR(VkDevice device, const VkSemaphoreSignalInfo *info)
{
	return signal_semaphore(device, info, true);
}

/* Sparse binding batches wait and signal too. */
static VKAPI_ATTR VkResult VKAPI_CALL
QueueBindSparse(VkQueue queue, uint32_t count, const VkBindSparseInfo *infos, VkFence fence)
{
	struct sbl_device *dev = sbl_device_lookup(queue);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	VkResult res = dev->QueueBindSparse(queue, count, infos, fence);
	if (res != VK_SUCCESS || !count || !sbl_resolve_active(dev))
		return res;

	struct sbl_batch_sems one, *sems = count == 1 ? &one : calloc(count, sizeof(*sems));
	if (!sems) {
		sbl_device_warn_untracked(dev, "a vkQueueBindSparse's semaphores");
		return res;
	}
	for (uint32_t i = 0; i < count; i++)
		sbl_sems_from_bind_sparse(&infos[i], &sems[i]);
	struct sbl_ready ready = { 0 };
	sbl_resolve_submitted(dev, queue, count, sems, NULL, 0, &ready);
	sbl_resolve_finish(dev, &ready);
	if (sems != &one)
		free(sems);
	return res;
}

const struct sbl_entry sbl_resolve_entries[] = {
	SBL_ENTRY(CreateSemaphore),
	SBL_ENTRY(DestroySemaphore),
	SBL_ENTRY(ImportSemaphoreFdKHR),
	SBL_ENTRY(SignalSemaphore),
	SBL_ENTRY(SignalSemaphoreKHR),
	SBL_ENTRY(QueueBindSparse),
	{ NULL, NULL },
};
