/* SPDX-License-Identifier: MIT */
/*
 * A batch's semaphore arrays as the app passed them (sems.h): what the
 * submit paths hand the resolver, read without copying.
 */
#include "sems.h"

#include <stddef.h>

void
sbl_sems_at(const struct sbl_sems *s, uint32_t i, VkSemaphore *sem, uint64_t *value)
{
	if (s->infos) {
		*sem = s->infos[i].semaphore;
		*value = s->infos[i].value;
		return;
	}
	*sem = s->handles[i];
	*value = s->values && i < s->value_count ? s->values[i] : 0;
}

static const VkTimelineSemaphoreSubmitInfo *
find_timeline_info(const void *chain)
{
	for (const VkBaseInStructure *s = chain; s; s = s->pNext)
		if (s->sType == VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO)
			return (const VkTimelineSemaphoreSubmitInfo *)s;
	return NULL;
}

static void
sems_from_arrays(const void *chain, uint32_t wait_count, const VkSemaphore *waits,
		 uint32_t signal_count, const VkSemaphore *signals, struct sbl_batch_sems *out)
{
	const VkTimelineSemaphoreSubmitInfo *tl = find_timeline_info(chain);

	*out = (struct sbl_batch_sems){
		.waits = { .count = wait_count, .handles = waits },
		.signals = { .count = signal_count, .handles = signals },
	};
	if (tl) {
		out->waits.values = tl->pWaitSemaphoreValues;
		out->waits.value_count = tl->waitSemaphoreValueCount;
		out->signals.values = tl->pSignalSemaphoreValues;
		out->signals.value_count = tl->signalSemaphoreValueCount;
	}
}

void
sbl_sems_from_submit(const VkSubmitInfo *s, struct sbl_batch_sems *out)
{
	sems_from_arrays(s->pNext, s->waitSemaphoreCount, s->pWaitSemaphores,
			 s->signalSemaphoreCount, s->pSignalSemaphores, out);
}

void
sbl_sems_from_bind_sparse(const VkBindSparseInfo *s, struct sbl_batch_sems *out)
{
	sems_from_arrays(s->pNext, s->waitSemaphoreCount, s->pWaitSemaphores,
			 s->signalSemaphoreCount, s->pSignalSemaphores, out);
}

void
sbl_sems_from_submit2(const VkSubmitInfo2 *s, struct sbl_batch_sems *out)
{
	*out = (struct sbl_batch_sems){
		.waits = { .count = s->waitSemaphoreInfoCount, .infos = s->pWaitSemaphoreInfos },
		.signals = { .count = s->signalSemaphoreInfoCount,
			     .infos = s->pSignalSemaphoreInfos },
	};
}
