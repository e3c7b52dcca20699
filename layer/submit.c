/* SPDX-License-Identifier: MIT */
/*
 * vkQueueSubmit / vkQueueSubmit2: turning recorded ownership transfers into
 * kernel fences.
 *
 * Per batch (VkSubmitInfo / VkSubmitInfo2):
 *
 *   acquire (from FOREIGN/EXTERNAL)          release (to FOREIGN/EXTERNAL)
 *   ───────────────────────────────          ─────────────────────────────
 *   dma-buf ──EXPORT_SYNC_FILE(access)─┐     pooled semaphore added as a signal
 *   dma-buf ──EXPORT_SYNC_FILE(access)─┤              │ vkQueueSubmit returns
 *                                 merge│              ▼
 *   pooled semaphore ◄─import TEMPORARY┘     vkGetSemaphoreFdKHR(SYNC_FD)
 *   added as a wait (ALL_COMMANDS)                    │
 *                                                     ▼
 *                                  IMPORT_SYNC_FILE into each dma-buf
 *                                  (WRITE fence if we wrote, READ otherwise)
 *
 * The app's semaphores, fences and pNext chains are passed on as they are;
 * the batch arrays are copied with ours appended (and the two pNext structs
 * that carry per-semaphore arrays, VkTimelineSemaphoreSubmitInfo and
 * VkDeviceGroupSubmitInfo, copied and extended to match).
 *
 * Semaphore life cycle: a release semaphore goes back to the pool right after
 * its SYNC_FD export ("exporting ... has the same side effects on the source
 * semaphore's payload as executing a semaphore wait operation", so it is
 * unsignalled again). An acquire semaphore is in use until its wait has
 * executed: it rides with a fence of ours (the submit's own fence slot when
 * the app passed none, else an extra empty submit) and returns to the pool
 * once that fence signals.
 *
 * Failures never drop the guarantee: a failed fence export/import turns into
 * a CPU wait (poll the dma-buf before submitting; wait for the work before
 * returning), logged once per device and kind.
 */
#include "layer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>

#include "log.h"
#include "trace.h"
#include "util.h"

/* ------------------------------------------------------------------------ */
/* Pools                                                                     */

static bool
grow_array(void **array, uint32_t *capacity, uint32_t need, size_t elem)
{
	if (need <= *capacity)
		return true;
	uint32_t cap = *capacity ? *capacity : 8;
	while (cap < need)
		cap *= 2;
	void *p = realloc(*array, cap * elem);
	if (!p)
		return false;
	*array = p;
	*capacity = cap;
	return true;
}

static VkSemaphore
semaphore_get(struct sbl_device *dev)
{
	VkSemaphore sem = VK_NULL_HANDLE;

	pthread_mutex_lock(&dev->lock);
	if (dev->sem_pool_count)
		sem = dev->sem_pool[--dev->sem_pool_count];
	pthread_mutex_unlock(&dev->lock);
	if (sem)
		return sem;

	VkExportSemaphoreCreateInfo export = {
		.sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
	};
	VkSemaphoreCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
		.pNext = &export,
	};
	if (dev->CreateSemaphore(dev->handle, &info, NULL, &sem) != VK_SUCCESS)
		return VK_NULL_HANDLE;
	return sem;
}

/* Return an unsignalled semaphore with no pending operation to the pool. */
static void
semaphore_put(struct sbl_device *dev, VkSemaphore sem)
{
	if (!sem)
		return;
	pthread_mutex_lock(&dev->lock);
	bool ok = grow_array((void **)&dev->sem_pool, &dev->sem_pool_capacity,
			     dev->sem_pool_count + 1, sizeof(VkSemaphore));
	if (ok)
		dev->sem_pool[dev->sem_pool_count++] = sem;
	pthread_mutex_unlock(&dev->lock);
	if (!ok)
		dev->DestroySemaphore(dev->handle, sem, NULL);
}

static VkFence
fence_get(struct sbl_device *dev)
{
	VkFence fence = VK_NULL_HANDLE;

	pthread_mutex_lock(&dev->lock);
	if (dev->fence_pool_count)
		fence = dev->fence_pool[--dev->fence_pool_count];
	pthread_mutex_unlock(&dev->lock);
	if (fence)
		return fence;

	VkFenceCreateInfo info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	if (dev->CreateFence(dev->handle, &info, NULL, &fence) != VK_SUCCESS)
		return VK_NULL_HANDLE;
	return fence;
}

/* Under dev->lock: move finished in-flight acquire semaphores back to the pools. */
static void
retire_locked(struct sbl_device *dev)
{
	for (uint32_t i = 0; i < dev->inflight_count;) {
		struct sbl_inflight *f = &dev->inflight[i];
		if (dev->GetFenceStatus(dev->handle, f->fence) != VK_SUCCESS) {
			i++;
			continue;
		}
		bool ok = grow_array((void **)&dev->sem_pool, &dev->sem_pool_capacity,
				     dev->sem_pool_count + f->count, sizeof(VkSemaphore));
		for (uint32_t s = 0; s < f->count; s++) {
			if (ok)
				dev->sem_pool[dev->sem_pool_count++] = f->semaphores[s];
			else
				dev->DestroySemaphore(dev->handle, f->semaphores[s], NULL);
		}
		free(f->semaphores);
		if (dev->ResetFences(dev->handle, 1, &f->fence) == VK_SUCCESS &&
		    grow_array((void **)&dev->fence_pool, &dev->fence_pool_capacity,
			       dev->fence_pool_count + 1, sizeof(VkFence)))
			dev->fence_pool[dev->fence_pool_count++] = f->fence;
		else
			dev->DestroyFence(dev->handle, f->fence, NULL);
		*f = dev->inflight[--dev->inflight_count];
	}
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

/* Hand `count` semaphores (the array is taken over) to `fence`. */
static bool
inflight_add(struct sbl_device *dev, VkFence fence, VkSemaphore *sems, uint32_t count)
{
	pthread_mutex_lock(&dev->lock);
	bool ok = grow_array((void **)&dev->inflight, &dev->inflight_capacity,
			     dev->inflight_count + 1, sizeof(struct sbl_inflight));
	if (ok)
		dev->inflight[dev->inflight_count++] = (struct sbl_inflight){
			.fence = fence, .semaphores = sems, .count = count,
		};
	pthread_mutex_unlock(&dev->lock);
	return ok;
}

void
sbl_device_pools_finish(struct sbl_device *dev)
{
	for (uint32_t i = 0; i < dev->inflight_count; i++) {
		struct sbl_inflight *f = &dev->inflight[i];
		for (uint32_t s = 0; s < f->count; s++)
			dev->DestroySemaphore(dev->handle, f->semaphores[s], NULL);
		free(f->semaphores);
		dev->DestroyFence(dev->handle, f->fence, NULL);
	}
	for (uint32_t i = 0; i < dev->sem_pool_count; i++)
		dev->DestroySemaphore(dev->handle, dev->sem_pool[i], NULL);
	for (uint32_t i = 0; i < dev->fence_pool_count; i++)
		dev->DestroyFence(dev->handle, dev->fence_pool[i], NULL);
	free(dev->inflight);
	free(dev->sem_pool);
	free(dev->fence_pool);
	dev->inflight = NULL;
	dev->sem_pool = NULL;
	dev->fence_pool = NULL;
	dev->inflight_count = dev->sem_pool_count = dev->fence_pool_count = 0;
}

/* ------------------------------------------------------------------------ */
/* Per-batch plans                                                           */

struct set_entry {
	struct sbl_memory *mem; /* referenced */
	int access;
};

struct sync_set {
	struct set_entry *e;
	uint32_t count, capacity;
};

/* Add mem once; a later WRITE upgrades an earlier READ. */
static bool
set_add(struct sync_set *set, struct sbl_memory *mem, int access)
{
	for (uint32_t i = 0; i < set->count; i++) {
		if (set->e[i].mem == mem) {
			if (access == SB_ACCESS_WRITE)
				set->e[i].access = SB_ACCESS_WRITE;
			return true;
		}
	}
	if (!grow_array((void **)&set->e, &set->capacity, set->count + 1, sizeof(*set->e)))
		return false;
	set->e[set->count++] = (struct set_entry){ sbl_memory_ref(mem), access };
	return true;
}

static void
set_finish(struct sync_set *set)
{
	for (uint32_t i = 0; i < set->count; i++)
		sbl_memory_unref(set->e[i].mem);
	free(set->e);
	*set = (struct sync_set){ 0 };
}

struct batch_plan {
	struct sync_set acquire, release;
	VkSemaphore wait;   /* ours, with an imported payload; or null */
	VkSemaphore signal; /* ours, to export after the submit; or null */
	bool cpu_release;   /* wait for the queue before returning */
	int fence_error;    /* the first fence error seen for this batch (-errno), or 0 */
};

struct submit_plan {
	struct sbl_device *dev;
	VkQueue queue;
	uint32_t count;
	struct batch_plan *batches;
	bool any;
	void **scratch; /* allocations to free after the submit */
	uint32_t scratch_count, scratch_capacity;
};

static void *
scratch_alloc(struct submit_plan *plan, size_t size)
{
	if (!grow_array((void **)&plan->scratch, &plan->scratch_capacity,
			plan->scratch_count + 1, sizeof(void *)))
		return NULL;
	void *p = calloc(1, size ? size : 1);
	if (p)
		plan->scratch[plan->scratch_count++] = p;
	return p;
}

static void
plan_finish(struct submit_plan *plan)
{
	for (uint32_t i = 0; i < plan->count; i++) {
		set_finish(&plan->batches[i].acquire);
		set_finish(&plan->batches[i].release);
	}
	for (uint32_t i = 0; i < plan->scratch_count; i++)
		free(plan->scratch[i]);
	free(plan->scratch);
	free(plan->batches);
}

/* Log a fallback once per device and kind, at the call site's file:line. */
#define warn_once(dev, bit, err, msg)                                       \
	do {                                                                \
		if (sbl_device_warn_once((dev), (bit))) {                   \
			if (err)                                            \
				sb_log_errno(SB_LOG_WARN, (err), "layer: %s", (msg)); \
			else                                                \
				sb_warn("layer: %s", (msg));                \
		}                                                           \
	} while (0)

/*
 * Errored fences. A fence that "completed with an error" (the kernel's
 * sync_file status < 0: dma_fence_set_error() before signalling) has
 * completed: what it guarded is over, so waiting for it keeps the ordering
 * and the batch goes ahead. But the data it guarded came from work that
 * failed, and an app that wants to know must be able to. So:
 *  - always: a warning naming the error (SYNCBRIDGE_DEBUG=warn or more, like
 *    every message of the project; at most one line a second per process,
 *    with a count of the ones left out);
 *  - SYNCBRIDGE_FENCE_ERRORS=device-lost: vkQueueSubmit returns
 *    VK_ERROR_DEVICE_LOST (after submitting the batch, so the app's fences
 *    and semaphores still signal). Vulkan lists OUT_OF_HOST_MEMORY,
 *    OUT_OF_DEVICE_MEMORY and DEVICE_LOST for vkQueueSubmit, and "if
 *    vkQueueSubmit fails in such a way that the implementation is unable to
 *    make that guarantee [that the state and contents of any resources or
 *    synchronization primitives referenced ... is unaffected by the call],
 *    the implementation must return VK_ERROR_DEVICE_LOST": the work did run,
 *    on contents a failed producer left undefined, so DEVICE_LOST is the one
 *    code that fits.
 * The layer sees only errors present when it looks (before the submit, or in
 * a CPU wait); a fence it hands to the driver as a semaphore wait and that
 * fails later is the driver's to report.
 */
enum fence_errors { FENCE_ERRORS_REPORT, FENCE_ERRORS_DEVICE_LOST };

static enum fence_errors fence_errors_mode;
static pthread_once_t fence_errors_once = PTHREAD_ONCE_INIT;

static void
fence_errors_read_env(void)
{
	const char *v = getenv("SYNCBRIDGE_FENCE_ERRORS");

	if (v && strcmp(v, "device-lost") == 0)
		fence_errors_mode = FENCE_ERRORS_DEVICE_LOST;
	else if (v && *v && strcmp(v, "report") != 0)
		sb_warn("layer: SYNCBRIDGE_FENCE_ERRORS=%s is not report|device-lost (caller); "
			"using report", v);
}

static enum fence_errors
fence_errors(void)
{
	pthread_once(&fence_errors_once, fence_errors_read_env);
	return fence_errors_mode;
}

static void
note_fence_error(struct batch_plan *b, int err, const char *what)
{
	static _Atomic int64_t last_ns = INT64_MIN / 2;
	static atomic_uint left_out;
	int64_t now = sb_now_ns(), last = atomic_load(&last_ns);

	if (!b->fence_error)
		b->fence_error = err;
	if (now - last >= 1000000000 && atomic_compare_exchange_strong(&last_ns, &last, now)) {
		unsigned n = atomic_exchange(&left_out, 0);
		char more[64] = "";

		if (n)
			snprintf(more, sizeof(more), " (and %u more since the last such line)", n);
		sb_log_errno(SB_LOG_WARN, err,
			     "layer: %s completed with an error (producer/driver); the ordering is "
			     "kept, the contents are the failed work's%s%s",
			     what,
			     fence_errors() == FENCE_ERRORS_DEVICE_LOST
				     ? "; vkQueueSubmit returns VK_ERROR_DEVICE_LOST"
				     : "",
			     more);
	} else {
		atomic_fetch_add(&left_out, 1);
	}
}

/*
 * Wait on the CPU for a sync_file. A fence error is noted (the wait is over
 * all the same). Returns 0, or the wait's own failure (the fence may still
 * be pending: the caller falls back to something else).
 */
static int
cpu_wait_sync_file(struct batch_plan *b, int fd, const char *what)
{
	int ret = sb_sync_file_wait(fd, SB_TIMEOUT_INFINITE);
	int status = 0;

	if (ret == 0)
		return 0;
	if (sb_sync_file_get_status(fd, &status) == 0 && status < 0) {
		note_fence_error(b, status, what);
		return 0;
	}
	return ret;
}

/* Under dev->lock: what the batch's command buffers acquire and release. */
static bool
gather_locked(struct sbl_device *dev, struct batch_plan *b, uint32_t cmd_count,
	      const VkCommandBuffer *cmds, const VkCommandBufferSubmitInfo *cmd_infos)
{
	if (cmd_count == 0)
		return true;

	if (dev->mode == SBL_MODE_ALL) {
		/* Over-synchronise: everything waits and is fenced as a writer. */
		sbl_map_foreach(&dev->memories, i) {
			struct sbl_memory *mem = dev->memories.values[i];
			if (!set_add(&b->acquire, mem, SB_ACCESS_WRITE) ||
			    !set_add(&b->release, mem, SB_ACCESS_WRITE))
				return false;
		}
		return true;
	}

	for (uint32_t c = 0; c < cmd_count; c++) {
		VkCommandBuffer cb = cmds ? cmds[c] : cmd_infos[c].commandBuffer;
		struct sbl_cmd *cmd = sbl_map_get(&dev->cmds, (uint64_t)(uintptr_t)cb);
		for (uint32_t i = 0; cmd && i < cmd->count; i++) {
			struct sbl_xfer *x = &cmd->xfers[i];
			struct sync_set *set =
				x->kind == SBL_XFER_ACQUIRE ? &b->acquire : &b->release;
			if (!set_add(set, x->mem, x->access))
				return false;
		}
	}
	return true;
}

/*
 * Make the batch wait for the fences of every dma-buf it acquires: export,
 * merge, import into one of our semaphores. Falls back to waiting on the CPU.
 */
static void
prepare_acquire(struct sbl_device *dev, struct batch_plan *b, bool can_add_semaphore)
{
	if (!can_add_semaphore) {
		for (uint32_t i = 0; i < b->acquire.count; i++)
			sb_dmabuf_wait(b->acquire.e[i].mem->fd, b->acquire.e[i].access,
				       SB_TIMEOUT_INFINITE);
		return;
	}

	int merged = -1;
	for (uint32_t i = 0; i < b->acquire.count; i++) {
		struct set_entry *e = &b->acquire.e[i];
		int fence = -1;
		int ret = (dev->faults & SBL_FAULT_ACQUIRE_EXPORT)
				  ? -EOPNOTSUPP
				  : sb_dmabuf_export_sync_file(e->mem->fd, e->access, &fence);
		sb_trace("layer.acquire_export buf_ino=%lu access=%s ret=%d %s", sb_trace_ino(e->mem->fd),
			 e->access == SB_ACCESS_WRITE ? "write" : "read", ret, sb_trace_sync_file(fence).s);
		if (ret == 0 && merged < 0) {
			/* The kernel just made this sync_file: the first one is taken as
			 * it is (accumulating would check it and dup it: three system
			 * calls, a third of the layer's extra cost per acquire in
			 * figure 2 of docs/performance.md). */
			merged = fence;
			fence = -1;
		} else if (ret == 0) {
			ret = sb_sync_file_accumulate(&merged, fence);
		}
		if (ret < 0) {
			warn_once(dev, SBL_WARN_ACQUIRE_EXPORT, ret,
				  "acquire: cannot export the dma-buf's fences (kernel); "
				  "waiting on the CPU instead");
			/* poll() cannot see fence errors (docs/core.md); the sync_file can. */
			if (fence < 0 || cpu_wait_sync_file(b, fence, "acquire: a producer's fence"))
				sb_dmabuf_wait(e->mem->fd, e->access, SB_TIMEOUT_INFINITE);
		}
		fd_clear(&fence);
	}
	if (merged < 0)
		return;

	/* Nothing pending: no wait needed (the common case once a producer is done). */
	int status = 0;
	if (sb_sync_file_get_status(merged, &status) == 0 && status != 0) {
		if (status < 0)
			note_fence_error(b, status, "acquire: a producer's fence");
		sb_trace("layer.acquire_skip reason=signalled %s", sb_trace_sync_file(merged).s);
		fd_clear(&merged);
		return;
	}

	VkSemaphore sem = semaphore_get(dev);
	if (sem) {
		VkImportSemaphoreFdInfoKHR import = {
			.sType = VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR,
			.semaphore = sem,
			.flags = VK_SEMAPHORE_IMPORT_TEMPORARY_BIT,
			.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
			.fd = merged,
		};
		sb_trace("layer.acquire_import sem=%#llx %s", (unsigned long long)(uint64_t)sem, sb_trace_sync_file(merged).s);
		/* On success the driver owns the fd; on failure we still do. */
		if (!(dev->faults & SBL_FAULT_ACQUIRE_IMPORT) &&
		    dev->ImportSemaphoreFdKHR(dev->handle, &import) == VK_SUCCESS) {
			merged = -1;
			b->wait = sem;
			return;
		}
		semaphore_put(dev, sem);
		warn_once(dev, SBL_WARN_ACQUIRE_IMPORT, 0,
			  "acquire: vkImportSemaphoreFdKHR(SYNC_FD) failed (driver); "
			  "waiting on the CPU instead");
	} else {
		warn_once(dev, SBL_WARN_POOL, 0,
			  "cannot create a SYNC_FD semaphore (driver); waiting on the CPU instead");
	}
	sb_trace("begin layer.acquire_cpu_wait %s", sb_trace_sync_file(merged).s);
	if (cpu_wait_sync_file(b, merged, "acquire: a producer's fence"))
		for (uint32_t i = 0; i < b->acquire.count; i++)
			sb_dmabuf_wait(b->acquire.e[i].mem->fd, b->acquire.e[i].access,
				       SB_TIMEOUT_INFINITE);
	sb_trace("end layer.acquire_cpu_wait");
	fd_clear(&merged);
}

static void
prepare_release(struct sbl_device *dev, struct batch_plan *b, bool can_add_semaphore)
{
	if (!b->release.count)
		return;
	if (can_add_semaphore)
		b->signal = semaphore_get(dev);
	if (!b->signal) {
		if (can_add_semaphore)
			warn_once(dev, SBL_WARN_POOL, 0,
				  "cannot create a SYNC_FD semaphore (driver); waiting on the "
				  "CPU instead");
		b->cpu_release = true;
	}
}

/* After the driver accepted the submit: fence every released dma-buf. */
static void
finish_release(struct sbl_device *dev, VkQueue queue, struct batch_plan *b, bool *queue_idle)
{
	if (!b->signal) {
		if (b->cpu_release && !*queue_idle) {
			dev->QueueWaitIdle(queue);
			*queue_idle = true;
		}
		return;
	}

	int fd = -1;
	VkSemaphoreGetFdInfoKHR get = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR,
		.semaphore = b->signal,
		.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
	};
	sb_trace("begin layer.release_export sem=%#llx", (unsigned long long)(uint64_t)b->signal);
	if ((dev->faults & SBL_FAULT_RELEASE_EXPORT) ||
	    dev->GetSemaphoreFdKHR(dev->handle, &get, &fd) != VK_SUCCESS) {
		sb_trace("end layer.release_export result=failed");
		warn_once(dev, SBL_WARN_RELEASE_EXPORT, 0,
			  "release: vkGetSemaphoreFdKHR(SYNC_FD) failed (driver); waiting for "
			  "the queue on the CPU instead");
		if (!*queue_idle) {
			dev->QueueWaitIdle(queue);
			*queue_idle = true;
		}
		/* Signalled now, so not fit for the pool. */
		dev->DestroySemaphore(dev->handle, b->signal, NULL);
		b->signal = VK_NULL_HANDLE;
		return;
	}
	sb_trace("end layer.release_export %s", sb_trace_sync_file(fd).s);
	/* The export reset the payload: the semaphore is reusable at once. */
	semaphore_put(dev, b->signal);
	b->signal = VK_NULL_HANDLE;

	bool waited = false;
	for (uint32_t i = 0; i < b->release.count; i++) {
		struct set_entry *e = &b->release.e[i];
		int ret = (dev->faults & SBL_FAULT_RELEASE_IMPORT)
				  ? -EOPNOTSUPP
				  : sb_dmabuf_import_sync_file(e->mem->fd, e->access, fd);
		sb_trace("layer.release_import buf_ino=%lu access=%s ret=%d %s", sb_trace_ino(e->mem->fd),
			 e->access == SB_ACCESS_WRITE ? "write" : "read", ret, sb_trace_sync_file(fd).s);
		if (ret < 0 && !waited) {
			warn_once(dev, SBL_WARN_RELEASE_IMPORT, ret,
				  "release: cannot attach our fence to the dma-buf (kernel); "
				  "waiting for the work on the CPU instead");
			if (cpu_wait_sync_file(b, fd, "release: our own work's fence") &&
			    !*queue_idle) {
				dev->QueueWaitIdle(queue);
				*queue_idle = true;
			}
			waited = true;
		}
	}
	fd_clear(&fd);
}

/* The out-of-memory fallback: poll every dma-buf of the device as a writer
 * would, without holding the lock while waiting (no allocation: a fixed batch
 * of references at a time). */
static void
wait_all_memories(struct sbl_device *dev)
{
	struct sbl_memory *batch[64];
	uint32_t start = 0;

	for (;;) {
		uint32_t n = 0, slot;
		pthread_mutex_lock(&dev->lock);
		for (slot = start; slot < dev->memories.capacity && n < 64; slot++)
			if (dev->memories.keys[slot])
				batch[n++] = sbl_memory_ref(dev->memories.values[slot]);
		bool done = slot >= dev->memories.capacity;
		pthread_mutex_unlock(&dev->lock);

		for (uint32_t i = 0; i < n; i++) {
			sb_dmabuf_wait(batch[i]->fd, SB_ACCESS_WRITE, SB_TIMEOUT_INFINITE);
			sbl_memory_unref(batch[i]);
		}
		if (done)
			return;
		start = slot;
	}
}

/*
 * Gather every batch's transfers (plan->any says whether there is anything to
 * do). Returns false only when out of memory.
 */
static bool
plan_gather(struct submit_plan *plan, uint32_t count, const VkSubmitInfo *s1,
	    const VkSubmitInfo2 *s2)
{
	struct sbl_device *dev = plan->dev;

	plan->count = count;
	plan->batches = calloc(count ? count : 1, sizeof(*plan->batches));
	if (!plan->batches)
		return false;

	bool ok = true;
	pthread_mutex_lock(&dev->lock);
	for (uint32_t i = 0; i < count && ok; i++) {
		struct batch_plan *b = &plan->batches[i];
		if (s1)
			ok = gather_locked(dev, b, s1[i].commandBufferCount, s1[i].pCommandBuffers,
					   NULL);
		else
			ok = gather_locked(dev, b, s2[i].commandBufferInfoCount, NULL,
					   s2[i].pCommandBufferInfos);
		if (b->acquire.count || b->release.count)
			plan->any = true;
	}
	if (plan->any)
		retire_locked(dev);
	pthread_mutex_unlock(&dev->lock);
	return ok;
}

/* ------------------------------------------------------------------------ */
/* Rebuilding VkSubmitInfo                                                   */

/* Sizes of the structs that may extend VkSubmitInfo, for copying a chain. */
static size_t
submit_ext_size(VkStructureType type)
{
	switch (type) {
	case VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO:
		return sizeof(VkTimelineSemaphoreSubmitInfo);
	case VK_STRUCTURE_TYPE_DEVICE_GROUP_SUBMIT_INFO:
		return sizeof(VkDeviceGroupSubmitInfo);
	case VK_STRUCTURE_TYPE_PROTECTED_SUBMIT_INFO:
		return sizeof(VkProtectedSubmitInfo);
	case VK_STRUCTURE_TYPE_PERFORMANCE_QUERY_SUBMIT_INFO_KHR:
		return sizeof(VkPerformanceQuerySubmitInfoKHR);
	default:
		return 0;
	}
}

static bool
chain_has_counts(const void *chain)
{
	for (const VkBaseInStructure *s = chain; s; s = s->pNext)
		if (s->sType == VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO ||
		    s->sType == VK_STRUCTURE_TYPE_DEVICE_GROUP_SUBMIT_INFO)
			return true;
	return false;
}

/* Whether we can append semaphores to this VkSubmitInfo. */
static bool
chain_extendable(const void *chain)
{
	if (!chain_has_counts(chain))
		return true; /* passed on untouched */
	for (const VkBaseInStructure *s = chain; s; s = s->pNext)
		if (!submit_ext_size(s->sType))
			return false;
	return true;
}

static const uint64_t *
extend_u64(struct submit_plan *plan, const uint64_t *src, uint32_t n)
{
	uint64_t *dst = scratch_alloc(plan, (n + 1) * sizeof(uint64_t));
	if (dst && n)
		memcpy(dst, src, n * sizeof(uint64_t));
	return dst;
}

static const uint32_t *
extend_u32(struct submit_plan *plan, const uint32_t *src, uint32_t n)
{
	uint32_t *dst = scratch_alloc(plan, (n + 1) * sizeof(uint32_t));
	if (dst && n)
		memcpy(dst, src, n * sizeof(uint32_t));
	return dst;
}

/*
 * Copy the pNext chain of a VkSubmitInfo whose semaphore arrays grow by
 * add_wait / add_signal, extending the per-semaphore arrays to match.
 * Returns false when out of memory.
 */
static bool
copy_chain(struct submit_plan *plan, const VkSubmitInfo *orig, VkSubmitInfo *copy, bool add_wait,
	   bool add_signal)
{
	VkBaseOutStructure *prev = (VkBaseOutStructure *)copy;

	for (const VkBaseInStructure *s = orig->pNext; s; s = s->pNext) {
		size_t size = submit_ext_size(s->sType);
		VkBaseOutStructure *c = scratch_alloc(plan, size);
		if (!c)
			return false;
		memcpy(c, s, size);
		c->pNext = NULL;
		prev->pNext = c;
		prev = c;

		if (s->sType == VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO) {
			VkTimelineSemaphoreSubmitInfo *t = (VkTimelineSemaphoreSubmitInfo *)c;
			/* Values are ignored for binary semaphores, but the counts must
			 * match when the app gave values. */
			if (add_wait && t->pWaitSemaphoreValues &&
			    t->waitSemaphoreValueCount == orig->waitSemaphoreCount) {
				t->pWaitSemaphoreValues = extend_u64(plan, t->pWaitSemaphoreValues,
								     t->waitSemaphoreValueCount);
				t->waitSemaphoreValueCount++;
			}
			if (add_signal && t->pSignalSemaphoreValues &&
			    t->signalSemaphoreValueCount == orig->signalSemaphoreCount) {
				t->pSignalSemaphoreValues = extend_u64(
					plan, t->pSignalSemaphoreValues, t->signalSemaphoreValueCount);
				t->signalSemaphoreValueCount++;
			}
			if (!t->pWaitSemaphoreValues && t->waitSemaphoreValueCount)
				return false;
			if (!t->pSignalSemaphoreValues && t->signalSemaphoreValueCount)
				return false;
		} else if (s->sType == VK_STRUCTURE_TYPE_DEVICE_GROUP_SUBMIT_INFO) {
			VkDeviceGroupSubmitInfo *g = (VkDeviceGroupSubmitInfo *)c;
			if (add_wait) {
				g->pWaitSemaphoreDeviceIndices = extend_u32(
					plan, g->pWaitSemaphoreDeviceIndices, g->waitSemaphoreCount);
				if (!g->pWaitSemaphoreDeviceIndices)
					return false;
				g->waitSemaphoreCount++;
			}
			if (add_signal) {
				g->pSignalSemaphoreDeviceIndices =
					extend_u32(plan, g->pSignalSemaphoreDeviceIndices,
						   g->signalSemaphoreCount);
				if (!g->pSignalSemaphoreDeviceIndices)
					return false;
				g->signalSemaphoreCount++;
			}
		}
	}
	return true;
}

static VkSubmitInfo *
build_submits(struct submit_plan *plan, const VkSubmitInfo *submits)
{
	VkSubmitInfo *out = scratch_alloc(plan, plan->count * sizeof(*out));
	if (!out)
		return NULL;

	for (uint32_t i = 0; i < plan->count; i++) {
		const VkSubmitInfo *s = &submits[i];
		struct batch_plan *b = &plan->batches[i];
		out[i] = *s;

		if (b->wait) {
			uint32_t n = s->waitSemaphoreCount;
			VkSemaphore *sems = scratch_alloc(plan, (n + 1) * sizeof(*sems));
			VkPipelineStageFlags *stages = scratch_alloc(plan, (n + 1) * sizeof(*stages));
			if (!sems || !stages)
				return NULL;
			if (n) {
				memcpy(sems, s->pWaitSemaphores, n * sizeof(*sems));
				memcpy(stages, s->pWaitDstStageMask, n * sizeof(*stages));
			}
			sems[n] = b->wait;
			stages[n] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
			out[i].waitSemaphoreCount = n + 1;
			out[i].pWaitSemaphores = sems;
			out[i].pWaitDstStageMask = stages;
		}
		if (b->signal) {
			uint32_t n = s->signalSemaphoreCount;
			VkSemaphore *sems = scratch_alloc(plan, (n + 1) * sizeof(*sems));
			if (!sems)
				return NULL;
			if (n)
				memcpy(sems, s->pSignalSemaphores, n * sizeof(*sems));
			sems[n] = b->signal;
			out[i].signalSemaphoreCount = n + 1;
			out[i].pSignalSemaphores = sems;
		}
		if ((b->wait || b->signal) && chain_has_counts(s->pNext)) {
			out[i].pNext = NULL;
			if (!copy_chain(plan, s, &out[i], b->wait, b->signal))
				return NULL;
		}
	}
	return out;
}

static VkSubmitInfo2 *
build_submits2(struct submit_plan *plan, const VkSubmitInfo2 *submits)
{
	VkSubmitInfo2 *out = scratch_alloc(plan, plan->count * sizeof(*out));
	if (!out)
		return NULL;

	for (uint32_t i = 0; i < plan->count; i++) {
		const VkSubmitInfo2 *s = &submits[i];
		struct batch_plan *b = &plan->batches[i];
		out[i] = *s;

		if (b->wait) {
			uint32_t n = s->waitSemaphoreInfoCount;
			VkSemaphoreSubmitInfo *w = scratch_alloc(plan, (n + 1) * sizeof(*w));
			if (!w)
				return NULL;
			if (n)
				memcpy(w, s->pWaitSemaphoreInfos, n * sizeof(*w));
			w[n] = (VkSemaphoreSubmitInfo){
				.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
				.semaphore = b->wait,
				.stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
			};
			out[i].waitSemaphoreInfoCount = n + 1;
			out[i].pWaitSemaphoreInfos = w;
		}
		if (b->signal) {
			uint32_t n = s->signalSemaphoreInfoCount;
			VkSemaphoreSubmitInfo *sig = scratch_alloc(plan, (n + 1) * sizeof(*sig));
			if (!sig)
				return NULL;
			if (n)
				memcpy(sig, s->pSignalSemaphoreInfos, n * sizeof(*sig));
			sig[n] = (VkSemaphoreSubmitInfo){
				.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
				.semaphore = b->signal,
				.stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
			};
			out[i].signalSemaphoreInfoCount = n + 1;
			out[i].pSignalSemaphoreInfos = sig;
		}
	}
	return out;
}

/* ------------------------------------------------------------------------ */
/* The submit                                                                */

enum submit_kind { SUBMIT_1, SUBMIT_2, SUBMIT_2_KHR };

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
any_transfer(struct sbl_device *dev, uint32_t count, const VkSubmitInfo *s1,
	     const VkSubmitInfo2 *s2)
{
	bool any = false;

	if (dev->mode == SBL_MODE_TRANSFERS &&
	    atomic_load_explicit(&dev->xfer_cmds, memory_order_acquire) == 0)
		return false;

	pthread_mutex_lock(&dev->lock);
	for (uint32_t i = 0; i < count && !any; i++) {
		uint32_t n = s1 ? s1[i].commandBufferCount : s2[i].commandBufferInfoCount;
		if (dev->mode == SBL_MODE_ALL) {
			any = n && dev->memories.count;
			continue;
		}
		for (uint32_t c = 0; c < n && !any; c++) {
			VkCommandBuffer cb = s1 ? s1[i].pCommandBuffers[c]
						: s2[i].pCommandBufferInfos[c].commandBuffer;
			struct sbl_cmd *cmd = sbl_map_get(&dev->cmds, (uint64_t)(uintptr_t)cb);
			any = cmd && cmd->count;
		}
	}
	pthread_mutex_unlock(&dev->lock);
	return any;
}

/* What vkQueueSubmit returns once the driver accepted the batches (see
 * "Errored fences" above). */
static VkResult
submit_result(const struct submit_plan *plan, VkResult res)
{
	if (res != VK_SUCCESS || fence_errors() != FENCE_ERRORS_DEVICE_LOST)
		return res;
	for (uint32_t i = 0; i < plan->count; i++)
		if (plan->batches[i].fence_error)
			return VK_ERROR_DEVICE_LOST;
	return res;
}

static VkResult
call_next(struct sbl_device *dev, enum submit_kind kind, VkQueue queue, uint32_t count,
	  const void *submits, VkFence fence)
{
	switch (kind) {
	case SUBMIT_1:
		return dev->QueueSubmit(queue, count, submits, fence);
	case SUBMIT_2:
		return dev->QueueSubmit2(queue, count, submits, fence);
	case SUBMIT_2_KHR:
		return dev->QueueSubmit2KHR(queue, count, submits, fence);
	}
	return VK_ERROR_UNKNOWN;
}

static VkResult
submit(enum submit_kind kind, VkQueue queue, uint32_t count, const void *submits, VkFence fence)
{
	struct sbl_device *dev = sbl_device_lookup(queue);
	if (!dev)
		return VK_ERROR_DEVICE_LOST;
	if (dev->mode == SBL_MODE_OFF || count == 0)
		return call_next(dev, kind, queue, count, submits, fence);

	const VkSubmitInfo *s1 = kind == SUBMIT_1 ? submits : NULL;
	const VkSubmitInfo2 *s2 = kind == SUBMIT_1 ? NULL : submits;
	if (!any_transfer(dev, count, s1, s2))
		return call_next(dev, kind, queue, count, submits, fence);
	struct submit_plan plan = { .dev = dev, .queue = queue };

	if (!plan_gather(&plan, count, s1, s2)) {
		/* Out of memory (ours): we do not know what this submit shares, so
		 * wait on the CPU for every dma-buf of the device before, and for
		 * the queue after. */
		warn_once(dev, SBL_WARN_TRACK, 0, "submit: out of memory (ours); waiting on the "
			  "CPU for every dma-buf and for the queue instead");
		plan_finish(&plan);
		wait_all_memories(dev);
		VkResult res = call_next(dev, kind, queue, count, submits, fence);
		if (res == VK_SUCCESS)
			dev->QueueWaitIdle(queue);
		return res;
	}
	if (!plan.any) {
		plan_finish(&plan);
		return call_next(dev, kind, queue, count, submits, fence);
	}
	sb_trace("begin layer.submit queue=%p batches=%u", (void *)queue, count);

	uint32_t wait_count = 0;
	for (uint32_t i = 0; i < count; i++) {
		struct batch_plan *b = &plan.batches[i];
		bool can_add = !s1 || chain_extendable(s1[i].pNext);
		if (!can_add && (b->acquire.count || b->release.count))
			warn_once(dev, SBL_WARN_CHAIN, 0,
				  "submit: a VkSubmitInfo pNext struct unknown to the layer next "
				  "to per-semaphore arrays; waiting on the CPU for that batch");
		prepare_acquire(dev, b, can_add);
		prepare_release(dev, b, can_add);
		if (b->wait)
			wait_count++;
	}

	const void *built = s1 ? (const void *)build_submits(&plan, s1)
			       : (const void *)build_submits2(&plan, s2);
	VkSemaphore *waits = wait_count ? malloc(wait_count * sizeof(*waits)) : NULL;
	VkFence ours = VK_NULL_HANDLE;
	if (wait_count && waits)
		ours = fence_get(dev);

	if (!built || (wait_count && (!waits || !ours))) {
		/* Out of memory (ours): keep the guarantee on the CPU. Our semaphores
		 * were never submitted, so they can go; the dma-bufs still hold the
		 * producers' fences, so polling them waits for at least as much. */
		warn_once(dev, SBL_WARN_TRACK, 0, "submit: out of memory (ours); waiting on the "
			  "CPU instead");
		bool any_release = false;
		for (uint32_t i = 0; i < count; i++) {
			struct batch_plan *b = &plan.batches[i];
			if (b->wait)
				dev->DestroySemaphore(dev->handle, b->wait, NULL);
			if (b->signal)
				dev->DestroySemaphore(dev->handle, b->signal, NULL);
			for (uint32_t k = 0; k < b->acquire.count; k++)
				sb_dmabuf_wait(b->acquire.e[k].mem->fd, b->acquire.e[k].access,
					       SB_TIMEOUT_INFINITE);
			any_release |= b->release.count > 0;
		}
		if (ours)
			dev->DestroyFence(dev->handle, ours, NULL);
		free(waits);
		VkResult res = call_next(dev, kind, queue, count, submits, fence);
		if (res == VK_SUCCESS && any_release)
			dev->QueueWaitIdle(queue);
		res = submit_result(&plan, res);
		plan_finish(&plan);
		sb_trace("end layer.submit result=%d fallback=cpu_wait", res);
		trace_objects(dev);
		return res;
	}

	/* Our fence rides in the app's slot when it is free. */
	VkResult res = call_next(dev, kind, queue, count, built, fence ? fence : ours);
	if (res != VK_SUCCESS) {
		/* The driver took nothing: drop what we prepared. */
		for (uint32_t i = 0; i < count; i++) {
			struct batch_plan *b = &plan.batches[i];
			if (b->wait)
				dev->DestroySemaphore(dev->handle, b->wait, NULL);
			if (b->signal)
				dev->DestroySemaphore(dev->handle, b->signal, NULL);
		}
		if (ours)
			dev->DestroyFence(dev->handle, ours, NULL);
		free(waits);
		plan_finish(&plan);
		sb_trace("end layer.submit result=%d", res);
		trace_objects(dev);
		return res;
	}

	bool queue_idle = false;
	if (wait_count) {
		uint32_t k = 0;
		for (uint32_t i = 0; i < count; i++)
			if (plan.batches[i].wait)
				waits[k++] = plan.batches[i].wait;
		/* With the app's fence in the slot, an empty submit signals ours
		 * once everything before it, our waits included, has executed. */
		if (fence && dev->QueueSubmit(queue, 0, NULL, ours) != VK_SUCCESS) {
			dev->QueueWaitIdle(queue);
			queue_idle = true;
		}
		if (queue_idle || !inflight_add(dev, ours, waits, wait_count)) {
			if (!queue_idle)
				dev->QueueWaitIdle(queue);
			queue_idle = true;
			for (uint32_t i = 0; i < wait_count; i++)
				dev->DestroySemaphore(dev->handle, waits[i], NULL);
			dev->DestroyFence(dev->handle, ours, NULL);
			free(waits);
		}
	}

	for (uint32_t i = 0; i < count; i++)
		finish_release(dev, queue, &plan.batches[i], &queue_idle);

	res = submit_result(&plan, VK_SUCCESS);
	plan_finish(&plan);
	sb_trace("end layer.submit result=%d", res);
	trace_objects(dev);
	return res;
}

VKAPI_ATTR VkResult VKAPI_CALL
sbl_QueueSubmit(VkQueue queue, uint32_t count, const VkSubmitInfo *submits, VkFence fence)
{
	return submit(SUBMIT_1, queue, count, submits, fence);
}

VKAPI_ATTR VkResult VKAPI_CALL
sbl_QueueSubmit2(VkQueue queue, uint32_t count, const VkSubmitInfo2 *submits, VkFence fence)
{
	return submit(SUBMIT_2, queue, count, submits, fence);
}

VKAPI_ATTR VkResult VKAPI_CALL
sbl_QueueSubmit2KHR(VkQueue queue, uint32_t count, const VkSubmitInfo2 *submits, VkFence fence)
{
	return submit(SUBMIT_2_KHR, queue, count, submits, fence);
}
