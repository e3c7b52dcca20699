/* SPDX-License-Identifier: MIT */
/*
 * Release ordering: the app writes the dma-buf on the GPU and releases it to
 * FOREIGN; a consumer that knows only implicit sync polls the dma-buf and
 * reads it right after vkQueueSubmit returns.
 *
 * The app's copy also waits on one of its own timeline semaphores, which a
 * helper thread signals 500 ms later — so the work cannot have run by the
 * time the submit returns, unless something waited for it:
 *  - with the layer, the dma-buf carries the layer's WRITE fence; the consumer
 *    (poll for POLLIN) sees the complete NEW data. With lavapipe the layer's
 *    SYNC_FD export already blocks until the work is done.
 *  - with --control (SYNCBRIDGE_DISABLE=1) the dma-buf has no fence, poll
 *    returns at once and the consumer reads OLD data: the race.
 * The timeline wait goes through VkTimelineSemaphoreSubmitInfo (or
 * VkSemaphoreSubmitInfo with --sync2), which the layer must extend correctly.
 *
 * Timing: with the layer the 500 ms is not a synchronisation (the consumer
 * cannot see OLD however late the signal; lavapipe's export blocks the
 * submit until then, so a helper must signal). In the control the helper
 * signals only once the consumer has read, so the copy cannot have run
 * however slowly the test does (a fixed 500 ms would race the submit).
 *
 * Options (vkt.h): --image --sync2 --secondary --no-barriers --by-name --validation
 *                  --exported --fault NAME --control
 */
#include <poll.h>
#include <string.h>
#include <time.h>

#include <sys/ioctl.h>

#include <linux/dma-buf.h>

#include "harness.h"
#include "kernel.h"
#include "vkt.h"

#define SIZE 16384
#define OLD 0x11
#define NEW 0x33

/* What the helper thread signals: the app's timeline semaphore, value 1. */
struct timeline_signal {
	struct vkt *t;
	VkSemaphore timeline;
	VkResult result;
};

static void
signal_timeline(void *arg)
{
	struct timeline_signal *s = arg;
	VkSemaphoreSignalInfo info = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
		.semaphore = s->timeline,
		.value = 1,
	};
	s->result = vkSignalSemaphore(s->t->device, &info);
}

/* Bytes of the shared resource equal to v (image: only the pixels). */
static size_t
count_shared(const struct vkt_shared *sh, const struct sbk_buf *buf, uint8_t v, size_t *total)
{
	const uint8_t *m = buf->map;
	if (!sh->is_image) {
		*total = SIZE;
		return vkt_count_bytes(m, SIZE, v);
	}
	size_t n = 0, row = (size_t)sh->img.width * 4;
	for (uint32_t y = 0; y < sh->img.height; y++)
		n += vkt_count_bytes(m + sh->img.offset + y * sh->img.row_pitch, row, v);
	*total = row * sh->img.height;
	return n;
}

int
main(int argc, char **argv)
{
	struct vkt_options opt;
	struct vkt t;
	struct sbk_buf buf;
	struct vkt_shared shared;
	int vgem = vkt_setup_shared(argc, argv, SIZE, OLD, &opt, &t, &buf, &shared);

	struct vkt_buffer src;
	vkt_host_buffer(&t, SIZE, &src);
	memset(src.map, NEW, SIZE);

	struct vkt_rec rec;
	vkt_begin(&t, &opt, true, &rec);
	vkt_copy_to_shared(vkt_cmd(&rec), &src, &shared);
	vkt_release(&t, &opt, vkt_cmd(&rec), &shared, VK_ACCESS_TRANSFER_WRITE_BIT);
	vkt_end(&t, &rec);

	struct timeline_signal s = { .t = &t, .timeline = vkt_timeline(&t, 0) };
	/* The control: signal once the consumer has read. */
	struct vkt_deferred later = { .fn = signal_timeline, .arg = &s,
				      .delay_ns = 500ll * 1000 * 1000, .when_told = opt.control };
	VkFence fence = vkt_fence(&t);
	vkt_deferred_start(&later);

	int64_t t0 = sbk_now_ns();
	VkResult r = vkt_submit(&t, &opt, rec.primary, s.timeline, 1, fence);
	int64_t t1 = sbk_now_ns();
	CHECK(r == VK_SUCCESS, "vkQueueSubmit: %s", vkt_result_name(r));

	/* The consumer: implicit sync only. */
	struct pollfd pfd = { .fd = buf.fd, .events = POLLIN };
	int pr = poll(&pfd, 1, 10000);
	int64_t t2 = sbk_now_ns();
	struct dma_buf_sync sync = { .flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ };
	ioctl(buf.fd, DMA_BUF_IOCTL_SYNC, &sync);
	size_t total;
	size_t n_new = count_shared(&shared, &buf, NEW, &total);
	size_t n_old = count_shared(&shared, &buf, OLD, &total);
	sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ;
	ioctl(buf.fd, DMA_BUF_IOCTL_SYNC, &sync);
	vkt_deferred_tell(&later);

	/* What the consumer could also see: the fence on the buffer. */
	int fence_fd = -1, status = -99;
	uint32_t num_fences = 0;
	int ret = sbk_dmabuf_export_raw(buf.fd, DMA_BUF_SYNC_READ, &fence_fd);
	if (ret == 0)
		sbk_sync_file_info_raw(fence_fd, &status, &num_fences, 0, NULL);
	if (fence_fd >= 0)
		close(fence_fd);

	sb_test_note("submit %.1f ms, poll %.1f ms (rc %d); consumer read %zu NEW, %zu OLD of %zu; "
		     "dma-buf read fences: %u", (t1 - t0) / 1e6, (t2 - t1) / 1e6, pr, n_new, n_old,
		     total, num_fences);

	vkt_deferred_join(&later);
	CHECK(s.result == VK_SUCCESS, "vkSignalSemaphore: %s", vkt_result_name(s.result));
	r = vkWaitForFences(t.device, 1, &fence, VK_TRUE, 20ull * 1000 * 1000 * 1000);
	CHECK(r == VK_SUCCESS, "vkWaitForFences: %s", vkt_result_name(r));
	CHECK(pr == 1 && (pfd.revents & POLLIN), "poll: the dma-buf became readable");

	vkt_fault_check(&opt, &sb_test_failures);
	if (!opt.control) {
		CHECK(n_new == total, "the consumer saw the released data complete");
	} else {
		CHECK(n_old == total, "control: without the layer the consumer read stale data");
	}
	if (opt.validation)
		CHECK_EQ(vkt_validation_errors, 0, "validation errors");

	vkDestroyFence(t.device, fence, NULL);
	vkDestroySemaphore(t.device, s.timeline, NULL);
	vkt_rec_free(&t, &rec);
	vkt_buffer_destroy(&t, &src);
	vkt_shared_destroy(&t, &shared, &buf);
	vkt_finish(&t);
	close(vgem);
	return sb_test_finish();
}
