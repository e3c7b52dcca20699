/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-camera's holder thread: a reader that goes on reading a
 * frame after the consumer released it (an encoder, say), standing behind a
 * pending vgem READ fence on the buffer until the hold ends.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "camera.h"

/* ---- the holder: reads that go on after the consumer released ------------ */

static struct hold_fence *
hold_fence_get(struct app *a)
{
	for (unsigned i = 0; i < HOLD_POOL; i++) {
		struct hold_fence *h = &a->fences[i];
		if (h->busy)
			continue;
		if (!h->bo.handle && demo_vgem_buf_create(a->vgem_fd, 1024, 1, 32, &h->bo) < 0)
			return NULL;
		if (demo_vgem_fence_attach(a->vgem_fd, h->bo.handle, true, &h->fence_id) < 0)
			return NULL;
		h->busy = true;
		return h;
	}
	return NULL;
}

/*
 * Hold buffer i for hold_ns: its dma-buf gets a pending READ fence (the
 * scratch bo's write fence) that the holder signals after checking the frame.
 */
int
camera_hold_start(struct app *a, unsigned i, uint64_t sum, int64_t hold_ns)
{
	pthread_mutex_lock(&a->lock);
	struct hold_fence *hf = hold_fence_get(a);
	struct hold *slot = NULL;
	for (unsigned k = 0; k < HOLD_POOL && !slot; k++)
		if (!a->holds[k].used)
			slot = &a->holds[k];
	if (!hf || !slot) {
		if (hf) {
			demo_vgem_fence_signal(a->vgem_fd, hf->fence_id);
			hf->busy = false;
		}
		a->c.hold_skipped++;
		pthread_mutex_unlock(&a->lock);
		return 0;
	}
	int sync_file = -1;
	int ret = sb_dmabuf_export_sync_file(hf->bo.dmabuf_fd, SB_ACCESS_READ, &sync_file);
	if (ret == 0)
		ret = sb_dmabuf_import_sync_file(a->bufs[i].dmabuf, SB_ACCESS_READ, sync_file);
	demo_fd_clear(&sync_file);
	if (ret < 0) {
		fprintf(stderr, PROG ": hold fence: %s\n", strerror(-ret));
		demo_vgem_fence_signal(a->vgem_fd, hf->fence_id);
		hf->busy = false;
		pthread_mutex_unlock(&a->lock);
		return ret;
	}
	*slot = (struct hold){ .used = true, .buffer = i, .frame = a->bufs[i].frame,
			       .checksum = sum, .until_ns = now_ns() + hold_ns, .fence = hf };
	a->c.holds++;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

void *
camera_holder_main(void *arg)
{
	struct app *a = arg;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct hold *next = NULL;
		for (unsigned k = 0; k < HOLD_POOL; k++)
			if (a->holds[k].used && (!next || a->holds[k].until_ns < next->until_ns))
				next = &a->holds[k];
		if (!next) {
			if (a->stop)
				break;
			pthread_cond_wait(&a->cond, &a->lock);
			continue;
		}
		int64_t now = now_ns();
		if (next->until_ns > now) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			int64_t t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec +
				    (next->until_ns - now);
			ts.tv_sec = t / 1000000000;
			ts.tv_nsec = t % 1000000000;
			pthread_cond_timedwait(&a->cond, &a->lock, &ts);
			continue;
		}
		/* The read ends: is the frame still the one we were reading? */
		struct buffer *b = &a->bufs[next->buffer];
		cpu_access(b->dmabuf, true);
		uint64_t sum = checksum(b->map, b->size);
		cpu_access(b->dmabuf, false);
		if (sum != next->checksum) {
			a->c.overwritten++;
			if (a->c.overwritten <= 3)
				printf("consumer: frame %" PRIu64
				       " (buffer %u) was overwritten while it "
				       "was still being read\n",
				       next->frame, next->buffer);
		}
		demo_vgem_fence_signal(a->vgem_fd, next->fence->fence_id);
		next->fence->busy = false;
		next->used = false;
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}
