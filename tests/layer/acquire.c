/* SPDX-License-Identifier: MIT */
/*
 * Acquire ordering: a foreign producer (the CPU behind a vgem WRITE fence)
 * still owns the dma-buf when the app submits a copy that acquires it from
 * FOREIGN. The producer writes new data only after the submit, then signals.
 *
 *   main:    attach vgem WRITE fence ─ submit(acquire + copy) ─ wait ─ check
 *   helper:        wait ≤1.5 s for the app's VkFence (once submitted) ─ write NEW ─ signal
 *
 * With the layer the copy waits for the vgem fence and sees NEW (and the
 * app's fence cannot signal before the producer's). With --control
 * (SYNCBRIDGE_DISABLE=1) the copy runs at once and sees OLD: the race the
 * layer exists for.
 *
 * Timing: the producer's 1.5 s is not a synchronisation. With the layer
 * nothing the producer does can let the copy see OLD (a late producer only
 * loses the chance to catch a layer that does not wait). In the control the
 * producer waits for the app's fence without that limit (up to 15 s: vgem's
 * own 10 s timer ends a wrong wait anyway), so the copy has finished first
 * however slowly lavapipe runs (typically 5-20 ms after the submit).
 *
 * Options (tbvk.h): --image --sync2 --secondary --no-barriers --by-name --validation
 *                  --exported --fault NAME --control
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "kernel.h"
#include "tbvk.h"

#define SIZE 16384 /* 64×64 RGBA8 for images */
#define OLD 0x11
#define NEW 0x22

struct producer {
	bool control;
	struct vkt *t;
	VkFence fence;
	struct sbk_buf *buf;
	int vgem;
	uint32_t fence_id;
	atomic_bool submitted;
	atomic_bool app_done_early;
	int signal_ret;
};

static void *
producer_main(void *arg)
{
	struct producer *p = arg;

	/* If the app's work finishes while our fence is pending, it did not wait.
	 * The VkFence may be waited on only once vkQueueSubmit has returned (the
	 * submit synchronises it externally); with the layer give up after 1.5 s
	 * (its work waits for us), in the control after 15 s (header). */
	int64_t deadline = now_ns() + (p->control ? 15000ll : 1500ll) * 1000 * 1000;
	while (!atomic_load(&p->submitted) && now_ns() < deadline)
		sbk_sleep_ns(1000 * 1000);
	int64_t left = deadline - now_ns();
	VkResult r = VK_TIMEOUT;
	if (atomic_load(&p->submitted) && left > 0)
		r = vkWaitForFences(p->t->device, 1, &p->fence, VK_TRUE, (uint64_t)left);
	atomic_store(&p->app_done_early, r == VK_SUCCESS);
	memset(p->buf->map, NEW, p->buf->size);
	p->signal_ret = sbk_vgem_fence_signal(p->vgem, p->fence_id);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct tbvk_options opt;
	struct vkt t;
	struct sbk_buf buf;
	struct tbvk_shared shared;
	int vgem = tbvk_setup_shared(argc, argv, SIZE, OLD, &opt, &t, &buf, &shared);

	struct vkt_buffer dst;
	vkt_host_buffer(&t, SIZE, &dst);

	struct tbvk_rec rec;
	tbvk_begin(&t, &opt, true, &rec);
	tbvk_acquire(&t, &opt, tbvk_cmd(&rec), &shared, VK_ACCESS_TRANSFER_READ_BIT);
	tbvk_copy_from_shared(tbvk_cmd(&rec), &shared, &dst);
	vkt_host_read_barrier(tbvk_cmd(&rec));
	tbvk_end(&t, &rec);

	/* The foreign producer starts writing: a WRITE fence on the dma-buf. */
	struct producer p = { .control = opt.control, .t = &t, .buf = &buf, .vgem = vgem,
			      .fence = vkt_fence(&t) };
	tbvk_producer_fence(&shared, vgem, &buf, &p.fence_id);

	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, producer_main, &p) == 0, "pthread_create");
	int64_t t0 = now_ns();
	VkResult r = tbvk_submit(&t, &opt, rec.primary, VK_NULL_HANDLE, 0, p.fence);
	int64_t t1 = now_ns();
	atomic_store(&p.submitted, true);
	CHECK(r == VK_SUCCESS, "vkQueueSubmit: %s", vkt_result_name(r));
	r = vkWaitForFences(t.device, 1, &p.fence, VK_TRUE, 20ull * 1000 * 1000 * 1000);
	CHECK(r == VK_SUCCESS, "vkWaitForFences: %s", vkt_result_name(r));
	pthread_join(th, NULL);
	CHECK_EQ(p.signal_ret, 0, "vgem fence signal");
	tb_note("submit took %.1f ms", (t1 - t0) / 1e6);

	size_t n_new = vkt_count_bytes(dst.map, SIZE, NEW);
	size_t n_old = vkt_count_bytes(dst.map, SIZE, OLD);
	tb_note("copy saw %zu NEW, %zu OLD bytes of %d; app fence before producer: %s",
		     n_new, n_old, SIZE, atomic_load(&p.app_done_early) ? "yes" : "no");
	tbvk_fault_check(&opt, &tb_failures);
	if (!opt.control) {
		CHECK(n_new == SIZE, "the acquiring copy waited for the foreign writer");
		CHECK(!atomic_load(&p.app_done_early), "the app's work waited for the vgem fence");
	} else {
		CHECK(n_old == SIZE, "control: without the layer the copy raced ahead (old data)");
		CHECK(atomic_load(&p.app_done_early), "control: app finished before the producer");
	}
	if (opt.validation)
		CHECK_EQ(vkt_validation_errors, 0, "validation errors");

	vkDestroyFence(t.device, p.fence, NULL);
	tbvk_rec_free(&t, &rec);
	vkt_buffer_destroy(&t, &dst);
	tbvk_shared_destroy(&t, &shared, &buf);
	vkt_finish(&t);
	close(vgem);
	return tb_finish();
}
