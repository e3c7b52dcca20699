/* SPDX-License-Identifier: MIT */
/*
 * The one submit builder (build.c): the app's batches copied, in the struct
 * version the app used (VkSubmitInfo or VkSubmitInfo2), with each batch's
 * semaphores of ours appended — a wait at ALL_COMMANDS for what it acquires,
 * a signal for what it releases (struct sbl_batch, batch.h).
 *
 * The app's semaphores, fences and pNext chains are passed on as they are;
 * the arrays are copied with ours appended, and the two pNext structs that
 * carry per-semaphore arrays next to a VkSubmitInfo
 * (VkTimelineSemaphoreSubmitInfo, VkDeviceGroupSubmitInfo) are copied and
 * extended to match. VkSubmitInfo2 keeps those values in its
 * VkSemaphoreSubmitInfo entries.
 */
#include "build.h"

#include <stdlib.h>
#include <string.h>

void *
sbl_scratch_alloc(struct sbl_scratch *scratch, size_t size)
{
	if (!sbl_array_grow((void **)&scratch->p, &scratch->capacity, scratch->count + 1,
			    sizeof(void *)))
		return NULL;
	void *p = calloc(1, size ? size : 1);
	if (p)
		scratch->p[scratch->count++] = p;
	return p;
}

void
sbl_scratch_finish(struct sbl_scratch *scratch)
{
	for (uint32_t i = 0; i < scratch->count; i++)
		free(scratch->p[i]);
	free(scratch->p);
	*scratch = (struct sbl_scratch){ 0 };
}

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

bool
sbl_submit_chain_extendable(const void *chain)
{
	if (!chain_has_counts(chain))
		return true; /* passed on untouched */
	for (const VkBaseInStructure *s = chain; s; s = s->pNext)
		if (!submit_ext_size(s->sType))
			return false;
	return true;
}

/* A copy (scratch) of the n elements of elem bytes at src with *last appended. */
static void *
append(struct sbl_scratch *scratch, const void *src, uint32_t n, size_t elem, const void *last)
{
	unsigned char *dst = sbl_scratch_alloc(scratch, (n + 1) * elem);
	if (!dst)
		return NULL;
	if (n)
		memcpy(dst, src, n * elem);
	memcpy(dst + n * elem, last, elem);
	return dst;
}

/*
 * One more entry, device 0, in a VkDeviceGroupSubmitInfo's per-semaphore
 * device indices (*count of them), for a semaphore we add. False when out
 * of memory.
 */
static bool
append_device_index(struct sbl_scratch *scratch, const uint32_t **indices, uint32_t *count)
{
	static const uint32_t device0;

	*indices = append(scratch, *indices, *count, sizeof(**indices), &device0);
	if (!*indices)
		return false;
	(*count)++;
	return true;
}

/*
 * Copy the pNext chain of a VkSubmitInfo whose semaphore arrays grow by
 * add_wait / add_signal, extending the per-semaphore arrays to match.
 * Returns false when out of memory.
 */
static bool
copy_chain(struct sbl_scratch *scratch, const VkSubmitInfo *orig, VkSubmitInfo *copy,
	   bool add_wait, bool add_signal)
{
	static const uint64_t zero64;
	VkBaseOutStructure *prev = (VkBaseOutStructure *)copy;

	for (const VkBaseInStructure *s = orig->pNext; s; s = s->pNext) {
		size_t size = submit_ext_size(s->sType);
		VkBaseOutStructure *c = sbl_scratch_alloc(scratch, size);
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
				t->pWaitSemaphoreValues = append(scratch, t->pWaitSemaphoreValues,
								 t->waitSemaphoreValueCount,
								 sizeof(uint64_t), &zero64);
				t->waitSemaphoreValueCount++;
			}
			if (add_signal && t->pSignalSemaphoreValues &&
			    t->signalSemaphoreValueCount == orig->signalSemaphoreCount) {
				t->pSignalSemaphoreValues =
					append(scratch, t->pSignalSemaphoreValues,
					       t->signalSemaphoreValueCount, sizeof(uint64_t),
					       &zero64);
				t->signalSemaphoreValueCount++;
			}
			if (!t->pWaitSemaphoreValues && t->waitSemaphoreValueCount)
				return false;
			if (!t->pSignalSemaphoreValues && t->signalSemaphoreValueCount)
				return false;
		} else if (s->sType == VK_STRUCTURE_TYPE_DEVICE_GROUP_SUBMIT_INFO) {
			VkDeviceGroupSubmitInfo *g = (VkDeviceGroupSubmitInfo *)c;
			if (add_wait &&
			    !append_device_index(scratch, &g->pWaitSemaphoreDeviceIndices,
						 &g->waitSemaphoreCount))
				return false;
			if (add_signal &&
			    !append_device_index(scratch, &g->pSignalSemaphoreDeviceIndices,
						 &g->signalSemaphoreCount))
				return false;
		}
	}
	return true;
}

/* Batch b's semaphores added to *out, a copy of *s (VkSubmitInfo). */
static bool
add_semaphores1(struct sbl_scratch *scratch, const VkSubmitInfo *s, VkSubmitInfo *out,
		const struct sbl_batch *b)
{
	static const VkPipelineStageFlags all_commands = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;

	if (b->wait) {
		out->pWaitSemaphores = append(scratch, s->pWaitSemaphores, s->waitSemaphoreCount,
					      sizeof(VkSemaphore), &b->wait);
		out->pWaitDstStageMask = append(scratch, s->pWaitDstStageMask,
						s->waitSemaphoreCount, sizeof(VkPipelineStageFlags),
						&all_commands);
		out->waitSemaphoreCount++;
		if (!out->pWaitSemaphores || !out->pWaitDstStageMask)
			return false;
	}
	if (b->signal) {
		out->pSignalSemaphores = append(scratch, s->pSignalSemaphores,
						s->signalSemaphoreCount, sizeof(VkSemaphore),
						&b->signal);
		out->signalSemaphoreCount++;
		if (!out->pSignalSemaphores)
			return false;
	}
	if (!chain_has_counts(s->pNext))
		return true; /* passed on untouched */
	out->pNext = NULL;
	return copy_chain(scratch, s, out, b->wait, b->signal);
}

/* Batch b's semaphores added to *out, a copy of *s (VkSubmitInfo2). */
static bool
add_semaphores2(struct sbl_scratch *scratch, const VkSubmitInfo2 *s, VkSubmitInfo2 *out,
		const struct sbl_batch *b)
{
	VkSemaphoreSubmitInfo ours = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
		.stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
	};

	if (b->wait) {
		ours.semaphore = b->wait;
		out->pWaitSemaphoreInfos = append(scratch, s->pWaitSemaphoreInfos,
						  s->waitSemaphoreInfoCount, sizeof(ours), &ours);
		out->waitSemaphoreInfoCount++;
		if (!out->pWaitSemaphoreInfos)
			return false;
	}
	if (b->signal) {
		ours.semaphore = b->signal;
		out->pSignalSemaphoreInfos =
			append(scratch, s->pSignalSemaphoreInfos, s->signalSemaphoreInfoCount,
			       sizeof(ours), &ours);
		out->signalSemaphoreInfoCount++;
		if (!out->pSignalSemaphoreInfos)
			return false;
	}
	return true;
}

const void *
sbl_submits_build(struct sbl_scratch *scratch, bool info2, const void *submits, uint32_t count,
		  const struct sbl_batch *batches)
{
	const VkSubmitInfo *s1 = info2 ? NULL : submits;
	const VkSubmitInfo2 *s2 = info2 ? submits : NULL;
	size_t size = info2 ? sizeof(*s2) : sizeof(*s1);
	unsigned char *out = sbl_scratch_alloc(scratch, count * size);

	if (!out)
		return NULL;
	memcpy(out, submits, count * size);
	for (uint32_t i = 0; i < count; i++) {
		const struct sbl_batch *b = &batches[i];
		if (!b->wait && !b->signal)
			continue;
		if (info2 ? !add_semaphores2(scratch, &s2[i], (VkSubmitInfo2 *)out + i, b)
			  : !add_semaphores1(scratch, &s1[i], (VkSubmitInfo *)out + i, b))
			return NULL;
	}
	return out;
}
