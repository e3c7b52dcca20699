/* SPDX-License-Identifier: MIT */
/*
 * One batch's kernel fences:
 *
 *   acquire (from FOREIGN/EXTERNAL)          release (to FOREIGN/EXTERNAL)
 *   -------------------------------          -----------------------------
 *   dma-buf ──EXPORT_SYNC_FILE(access)─┐     pooled semaphore added as a signal
 *   dma-buf ──EXPORT_SYNC_FILE(access)─┤              │ vkQueueSubmit returns
 *                                 merge│              ▼
 *   pooled semaphore ◄─import TEMPORARY┘     vkGetSemaphoreFdKHR(SYNC_FD)
 *   added as a wait (ALL_COMMANDS)                    │
 *                                                     ▼
 *                                  IMPORT_SYNC_FILE into each dma-buf
 *                                  (WRITE fence if we wrote, READ otherwise)
 *
 * Failures never drop the guarantee: a failed fence export/import turns into
 * a CPU wait (poll the dma-buf before submitting; wait for the work before
 * returning), logged once per device and kind.
 */
#include "batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>

#include "trace.h"
#include "util.h"

/* Add mem once; a later WRITE upgrades an earlier READ. */
static bool
set_add(struct sbl_sync_set *set, struct sbl_memory *mem, int access)
{
	for (uint32_t i = 0; i < set->count; i++) {
		if (set->e[i].mem == mem) {
			if (access == SB_ACCESS_WRITE)
				set->e[i].access = SB_ACCESS_WRITE;
			return true;
		}
	}
	if (!sbl_array_grow((void **)&set->e, &set->capacity, set->count + 1, sizeof(*set->e)))
		return false;
	set->e[set->count++] = (struct sbl_sync_entry){ sbl_memory_ref(mem), access };
	return true;
}

static void
set_finish(struct sbl_sync_set *set)
{
	for (uint32_t i = 0; i < set->count; i++)
		sbl_memory_unref(set->e[i].mem);
	free(set->e);
	*set = (struct sbl_sync_set){ 0 };
}

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

bool
sbl_fence_errors_device_lost(void)
{
	return fence_errors() == FENCE_ERRORS_DEVICE_LOST;
}

static void
note_fence_error(struct sbl_batch *b, int err, const char *what)
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
cpu_wait_sync_file(struct sbl_batch *b, int fd, const char *what)
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

/* Under dev->lock. */
bool
sbl_batch_add_all_locked(struct sbl_device *dev, struct sbl_batch *b)
{
	/* Over-synchronise: everything waits and is fenced as a writer. */
	sbl_map_foreach(&dev->memories, i) {
		struct sbl_memory *mem = dev->memories.values[i];
		if (!set_add(&b->acquire, mem, SB_ACCESS_WRITE) ||
		    !set_add(&b->release, mem, SB_ACCESS_WRITE))
			return false;
	}
	return true;
}

/* Under dev->lock. */
bool
sbl_batch_add_cmd_locked(struct sbl_device *dev, struct sbl_batch *b, VkCommandBuffer cb)
{
	struct sbl_cmd *cmd = sbl_map_get(&dev->cmds, (uint64_t)(uintptr_t)cb);
	for (uint32_t i = 0; cmd && i < cmd->count; i++) {
		struct sbl_xfer *x = &cmd->xfers[i];
		struct sbl_sync_set *set = x->kind == SBL_XFER_ACQUIRE ? &b->acquire : &b->release;
		if (!set_add(set, x->mem, x->access))
			return false;
	}
	return true;
}

void
sbl_batch_poll_acquires(const struct sbl_batch *b)
{
	for (uint32_t i = 0; i < b->acquire.count; i++)
		sb_dmabuf_wait(b->acquire.e[i].mem->fd, b->acquire.e[i].access,
			       SB_TIMEOUT_INFINITE);
}

/*
 * Make the batch wait for the fences of every dma-buf it acquires: export,
 * merge, import into one of our semaphores. Falls back to waiting on the CPU.
 */
static void
prepare_acquire(struct sbl_device *dev, struct sbl_batch *b, bool can_add_semaphore)
{
	if (!can_add_semaphore) {
		sbl_batch_poll_acquires(b);
		return;
	}

	int merged = -1;
	for (uint32_t i = 0; i < b->acquire.count; i++) {
		struct sbl_sync_entry *e = &b->acquire.e[i];
		int fence = -1;
		int ret = sb_dmabuf_export_sync_file(e->mem->fd, e->access, &fence);
		sb_trace("layer.acquire_export buf_ino=%lu access=%s ret=%d %s",
			 sb_trace_ino(e->mem->fd), e->access == SB_ACCESS_WRITE ? "write" : "read",
			 ret, sb_trace_sync_file(fence).s);
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
			sbl_warn_once(dev, SBL_WARN_ACQUIRE_EXPORT, ret,
				  "acquire: cannot export the dma-buf's fences (kernel); "
				  "waiting on the CPU instead");
			/* poll() cannot see fence errors (docs/core.md); the sync_file can. */
			if (fence < 0 ||
			    cpu_wait_sync_file(b, fence, "acquire: a producer's fence"))
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

	VkSemaphore sem = sbl_semaphore_get(dev);
	if (sem) {
		VkImportSemaphoreFdInfoKHR import = {
			.sType = VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR,
			.semaphore = sem,
			.flags = VK_SEMAPHORE_IMPORT_TEMPORARY_BIT,
			.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
			.fd = merged,
		};
		sb_trace("layer.acquire_import sem=%#llx %s", (unsigned long long)(uint64_t)sem,
			 sb_trace_sync_file(merged).s);
		/* On success the driver owns the fd; on failure we still do. */
		if (dev->ImportSemaphoreFdKHR(dev->handle, &import) == VK_SUCCESS) {
			merged = -1;
			b->wait = sem;
			return;
		}
		sbl_semaphore_put(dev, sem);
		sbl_warn_once(dev, SBL_WARN_ACQUIRE_IMPORT, 0,
			  "acquire: vkImportSemaphoreFdKHR(SYNC_FD) failed (driver); "
			  "waiting on the CPU instead");
	} else {
		sbl_warn_once(dev, SBL_WARN_POOL, 0,
			  "cannot create a SYNC_FD semaphore (driver); waiting on the CPU instead");
	}
	sb_trace("begin layer.acquire_cpu_wait %s", sb_trace_sync_file(merged).s);
	if (cpu_wait_sync_file(b, merged, "acquire: a producer's fence"))
		sbl_batch_poll_acquires(b);
	sb_trace("end layer.acquire_cpu_wait");
	fd_clear(&merged);
}

static void
prepare_release(struct sbl_device *dev, struct sbl_batch *b, bool can_add_semaphore)
{
	if (!b->release.count)
		return;
	if (can_add_semaphore)
		b->signal = sbl_semaphore_get(dev);
	if (!b->signal) {
		if (can_add_semaphore)
			sbl_warn_once(dev, SBL_WARN_POOL, 0,
				  "cannot create a SYNC_FD semaphore (driver); waiting on the "
				  "CPU instead");
		b->cpu_release = true;
	}
}

void
sbl_batch_prepare(struct sbl_device *dev, struct sbl_batch *b, bool can_add_semaphore)
{
	prepare_acquire(dev, b, can_add_semaphore);
	prepare_release(dev, b, can_add_semaphore);
}

void
sbl_work_wait(struct sbl_device *dev, struct sbl_work_wait *w)
{
	if (w->done)
		return;
	if (w->fence)
		dev->WaitForFences(dev->handle, 1, &w->fence, VK_TRUE, UINT64_MAX);
	else
		dev->QueueWaitIdle(w->queue);
	w->done = true;
}

void
sbl_batch_finish_release(struct sbl_device *dev, struct sbl_batch *b, struct sbl_work_wait *w,
			 bool pool)
{
	if (!b->signal) {
		if (b->cpu_release)
			sbl_work_wait(dev, w);
		return;
	}

	int fd = -1;
	VkSemaphoreGetFdInfoKHR get = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR,
		.semaphore = b->signal,
		.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
	};
	sb_trace("begin layer.release_export sem=%#llx", (unsigned long long)(uint64_t)b->signal);
	if (dev->GetSemaphoreFdKHR(dev->handle, &get, &fd) != VK_SUCCESS) {
		sb_trace("end layer.release_export result=failed");
		sbl_warn_once(dev, SBL_WARN_RELEASE_EXPORT, 0,
			  "release: vkGetSemaphoreFdKHR(SYNC_FD) failed (driver); waiting for "
			  "the work on the CPU instead");
		sbl_work_wait(dev, w);
		/* Signalled now, so not fit for the pool. */
		dev->DestroySemaphore(dev->handle, b->signal, NULL);
		b->signal = VK_NULL_HANDLE;
		return;
	}
	sb_trace("end layer.release_export %s", sb_trace_sync_file(fd).s);
	/* The export reset the payload: the semaphore is reusable at once. */
	if (pool) {
		sbl_semaphore_put(dev, b->signal);
		b->signal = VK_NULL_HANDLE;
	}

	bool waited = false;
	for (uint32_t i = 0; i < b->release.count; i++) {
		struct sbl_sync_entry *e = &b->release.e[i];
		int ret = sb_dmabuf_import_sync_file(e->mem->fd, e->access, fd);
		sb_trace("layer.release_import buf_ino=%lu access=%s ret=%d %s",
			 sb_trace_ino(e->mem->fd), e->access == SB_ACCESS_WRITE ? "write" : "read",
			 ret, sb_trace_sync_file(fd).s);
		if (ret < 0 && !waited) {
			sbl_warn_once(dev, SBL_WARN_RELEASE_IMPORT, ret,
				  "release: cannot attach our fence to the dma-buf (kernel); "
				  "waiting for the work on the CPU instead");
			if (cpu_wait_sync_file(b, fd, "release: our own work's fence"))
				sbl_work_wait(dev, w);
			waited = true;
		}
	}
	fd_clear(&fd);
}

void
sbl_batch_finish(struct sbl_device *dev, struct sbl_batch *b)
{
	if (b->wait)
		dev->DestroySemaphore(dev->handle, b->wait, NULL);
	if (b->signal)
		dev->DestroySemaphore(dev->handle, b->signal, NULL);
	b->wait = b->signal = VK_NULL_HANDLE;
	set_finish(&b->acquire);
	set_finish(&b->release);
}

/* Without holding the lock while waiting (no allocation: a fixed batch of
 * references at a time). */
void
sbl_wait_all_memories(struct sbl_device *dev)
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
