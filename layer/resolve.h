/* SPDX-License-Identifier: MIT */
/*
 * Which of a batch's semaphore waits have their signal submitted, and the
 * releases that must wait for that before their SYNC_FD export (resolve.c).
 * Above batch.h: a deferred release is a batch's release half.
 */
#ifndef SBL_RESOLVE_H
#define SBL_RESOLVE_H

#include "batch.h"
#include "sems.h"

/*
 * Whether submits on this device must be told to the resolver: only once the
 * app has a timeline semaphore (a binary wait always has its signal
 * submitted first, so without timelines every wait is resolved). One atomic
 * load.
 */
bool sbl_resolve_active(struct sbl_device *dev);

/* Releases whose waits resolved: to be exported by the caller, outside the
 * lock, with sbl_resolve_finish(). */
struct sbl_deferred;
struct sbl_ready {
	struct sbl_deferred *head, **tail;
};

/*
 * After the driver accepted `count` batches on `queue`: record their signals
 * as submitted, those of a batch with an unresolved wait only once that wait
 * resolves. batches (may be NULL) are the layer's per-batch plans: the
 * release half of a batch with an unresolved wait (b->signal, b->release,
 * b->cpu_release) is taken over and exported once its waits resolve, so
 * the caller's sbl_batch_finish_release() then does nothing for it.
 * Releases that this submit resolved (its own or older ones) are added to
 * *ready. The caller still holds `queue` (it is inside a submit on it): a
 * deferred release gets a fence of ours submitted there for its CPU-wait
 * fallback. `epoch`: sbl_resolve_epoch() before the submit went down; a
 * release batch that waits on a timeline signalled since is deferred too,
 * and resolves at once.
 */
void sbl_resolve_submitted(struct sbl_device *dev, VkQueue queue, uint32_t count,
			   const struct sbl_batch_sems *sems, struct sbl_batch *batches,
			   uint64_t epoch, struct sbl_ready *ready);
/* The count of timeline signals recorded so far: taken before a submit goes
 * down, handed to sbl_resolve_submitted() as `epoch`. */
uint64_t sbl_resolve_epoch(struct sbl_device *dev);

/* Export and attach the fences of every release in *ready, then free them. */
void sbl_resolve_finish(struct sbl_device *dev, struct sbl_ready *ready);

/* With the device gone from the store: drop what is still deferred. */
void sbl_resolve_device_finish(struct sbl_device *dev);

/* vkCreateSemaphore, vkDestroySemaphore, vkSignalSemaphore(KHR),
 * vkImportSemaphoreFdKHR, vkQueueBindSparse. */
extern const struct sbl_entry sbl_resolve_entries[];

#endif
