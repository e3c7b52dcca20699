/* SPDX-License-Identifier: MIT */
/*
 * A batch's semaphore arrays as the app passed them (sems.c): the submit
 * paths (submit.c, vkQueueBindSparse in resolve.c) fill them, the resolver
 * reads them. Below resolve.h; includes nothing of the layer.
 */
#ifndef SBL_SEMS_H
#define SBL_SEMS_H

#include <stdint.h>

#include <vulkan/vulkan.h>

/*
 * One semaphore array of a batch as the app passed it: handles with their
 * timeline values (VkSubmitInfo and VkBindSparseInfo, values from
 * VkTimelineSemaphoreSubmitInfo, or none), or VkSemaphoreSubmitInfo entries
 * (VkSubmitInfo2).
 */
struct sbl_sems {
	uint32_t count;
	const VkSemaphore *handles;
	const uint64_t *values; /* NULL, or value_count of them */
	uint32_t value_count;
	const VkSemaphoreSubmitInfo *infos; /* VkSubmitInfo2; handles is then NULL */
};

struct sbl_batch_sems {
	struct sbl_sems waits, signals;
};

/* From one VkSubmitInfo / VkSubmitInfo2 / VkBindSparseInfo. */
void sbl_sems_from_submit(const VkSubmitInfo *s, struct sbl_batch_sems *out);
void sbl_sems_from_submit2(const VkSubmitInfo2 *s, struct sbl_batch_sems *out);
void sbl_sems_from_bind_sparse(const VkBindSparseInfo *s, struct sbl_batch_sems *out);

/* Entry i of s: its semaphore and timeline value (0 when it has none). */
void sbl_sems_at(const struct sbl_sems *s, uint32_t i, VkSemaphore *sem, uint64_t *value);

#endif
