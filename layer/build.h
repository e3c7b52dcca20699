/* SPDX-License-Identifier: MIT */
/*
 * The one submit builder, for vkQueueSubmit and vkQueueSubmit2 alike
 * (build.c). Above batch.h.
 */
#ifndef SBL_BUILD_H
#define SBL_BUILD_H

#include "batch.h"

/* Allocations that live until the submit returns. */
struct sbl_scratch {
	void **p;
	uint32_t count, capacity;
};

/* Zeroed, or NULL when out of memory. */
void *sbl_scratch_alloc(struct sbl_scratch *scratch, size_t size);
/* Frees them all. */
void sbl_scratch_finish(struct sbl_scratch *scratch);

/* Whether semaphores can be appended to a VkSubmitInfo with this pNext chain:
 * no struct with per-semaphore arrays next to one the layer does not know. */
bool sbl_submit_chain_extendable(const void *chain);

/*
 * The count batches at submits (VkSubmitInfo, or VkSubmitInfo2 when info2),
 * copied into scratch with batches[i].wait / .signal appended where set.
 * NULL when out of memory.
 */
const void *sbl_submits_build(struct sbl_scratch *scratch, bool info2, const void *submits,
			      uint32_t count, const struct sbl_batch *batches);

#endif
