/* SPDX-License-Identifier: MIT */
/*
 * One batch of a submit (a VkSubmitInfo or VkSubmitInfo2): the dma-bufs it
 * acquires and releases, and the kernel fences for them (batch.c). Above
 * track.h and pool.h.
 */
#ifndef SBL_BATCH_H
#define SBL_BATCH_H

#include "pool.h"
#include "track.h"

struct sbl_sync_entry {
	struct sbl_memory *mem; /* referenced */
	int access;             /* enum sb_access */
};

/* Each memory once; a WRITE wins over a READ. */
struct sbl_sync_set {
	struct sbl_sync_entry *e;
	uint32_t count, capacity;
};

struct sbl_batch {
	struct sbl_sync_set acquire, release;
	VkSemaphore wait;   /* ours, with an imported payload; or null */
	VkSemaphore signal; /* ours, to export after the submit; or null */
	bool cpu_release;   /* wait for the queue before returning */
	int fence_error;    /* the first fence error seen for this batch (-errno), or 0 */
};

/*
 * Under dev->lock: add what command buffer cb records (mode transfers), or
 * every dma-buf memory of the device as a writer both ways (mode all). False
 * when out of memory.
 */
bool sbl_batch_add_cmd_locked(struct sbl_device *dev, struct sbl_batch *b, VkCommandBuffer cb);
bool sbl_batch_add_all_locked(struct sbl_device *dev, struct sbl_batch *b);

/*
 * Before the submit: make the batch wait for the fences of what it acquires
 * (b->wait), and get a semaphore to signal for what it releases (b->signal).
 * can_add_semaphore false (or any failure): wait on the CPU for the acquires
 * now, and for the queue after the submit (b->cpu_release).
 */
void sbl_batch_prepare(struct sbl_device *dev, struct sbl_batch *b, bool can_add_semaphore);
/* Wait on the CPU (poll) for every dma-buf the batch acquires. */
void sbl_batch_poll_acquires(const struct sbl_batch *b);
/*
 * How a CPU-wait fallback waits for a batch's work once it was submitted:
 * vkQueueWaitIdle on the queue (only in the thread that submits on it: the
 * queue is externally synchronised), or a fence of ours that was submitted
 * after the batch (any thread). done: waited already.
 */
struct sbl_work_wait {
	VkQueue queue; /* used when fence is VK_NULL_HANDLE */
	VkFence fence;
	bool done;
};
void sbl_work_wait(struct sbl_device *dev, struct sbl_work_wait *w);

/* After the driver accepted the submit and every wait of the batch has its
 * signal submitted (resolve.h): fence every released dma-buf. `pool`: the
 * exported semaphore goes back to the pool; otherwise it stays in b->signal
 * for the caller (still in use by the batch: not to be destroyed yet). */
void sbl_batch_finish_release(struct sbl_device *dev, struct sbl_batch *b,
			      struct sbl_work_wait *w, bool pool);
/* Drop the memory references, and destroy b->wait / b->signal if still set
 * (never submitted, or the driver refused the submit). */
void sbl_batch_finish(struct sbl_device *dev, struct sbl_batch *b);

/* The out-of-memory fallback: poll every dma-buf of the device, as a writer. */
void sbl_wait_all_memories(struct sbl_device *dev);

/* SYNCBRIDGE_FENCE_ERRORS=device-lost: a batch with a fence error makes the
 * submit return VK_ERROR_DEVICE_LOST (batch.c, "Errored fences"). */
bool sbl_fence_errors_device_lost(void);

#endif
