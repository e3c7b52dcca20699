/* SPDX-License-Identifier: MIT */
/*
 * Release ordering: the app writes the dma-buf on the GPU and releases it to
 * FOREIGN; a consumer that knows only implicit sync polls the dma-buf and
 * reads it once the app has submitted everything the write depends on.
 *
 * The app's batch waits on one of its own timeline semaphores (value 1),
 * submitted with no signal yet (wait-before-signal). The signal comes, per
 * --signal, from another thread (the default), from the same thread right
 * after vkQueueSubmit, or before the batch (alternate: the first two by
 * turns, round by round, on one device). Until it is submitted the spec
 * forbids exporting the batch's signal as a SYNC_FD (VUID-03254), so the
 * layer defers the export to the call that submits the signal (resolve.c);
 * the consumer is told only after that call.
 *
 * What keeps the copy pending once its dependencies are submitted (--hold):
 *  - fence (default): the batch also waits on a binary semaphore holding a
 *    pending vgem fence (SYNC_FD, imported before the submit: a resolved
 *    wait), which a thread signals 500 ms later — in the control only once
 *    the consumer has read, so the copy cannot have run however slowly the
 *    test does. (Not a host-set VkEvent: "event must not be waited on by a
 *    command buffer in the pending state", VUID-vkSetEvent-event-09543.)
 *  - work: 30 fills of a 64 MiB buffer before the copy, for drivers that
 *    wait for an imported fence on the CPU inside vkQueueSubmit (venus):
 *    ~1 s of host work in the venus guest, usually. Work cannot be held
 *    for certain, so its control submits the dependency only once the
 *    consumer has read (venus's race by itself).
 * Then:
 *  - with the layer, the dma-buf carries the layer's WRITE fence by the time
 *    the consumer is told; the consumer (poll for POLLIN) sees the complete
 *    NEW data. With lavapipe the layer's SYNC_FD export blocks until the
 *    work is done, inside the call that resolved it.
 *  - with --control (SYNCBRIDGE_DISABLE=1) the dma-buf has no fence, poll
 *    returns at once and the consumer reads OLD data: the race.
 * With --signal same-thread, a layer that exported at submit time would
 * never return from vkQueueSubmit on lavapipe (its export waits for work
 * that waits for a signal this thread has yet to submit).
 * The timeline wait goes through VkTimelineSemaphoreSubmitInfo (or
 * VkSemaphoreSubmitInfo with --sync2), which the layer must extend correctly.
 *
 * Options (tbvk.h): --image --sync2 --secondary --no-barriers --by-name --validation
 *                  --exported --fault NAME --signal MODE --hold fence|work
 *                  --iterations N --control
 */
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include <sys/ioctl.h>

#include <linux/dma-buf.h>

#include "harness.h"
#include "kernel.h"
#include "kernel_raw.h"
#include "tbvk.h"

#define SIZE 16384
#define OLD 0x11
#define NEW 0x33

/* The dependency: the app's timeline semaphore, value 1. */
struct timeline_signal {
	struct vkt *t;
	VkSemaphore timeline;
	VkResult result;
	int64_t ns; /* how long vkSignalSemaphore took */
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
	int64_t t0 = now_ns();
	s->result = vkSignalSemaphore(s->t->device, &info);
	s->ns = now_ns() - t0;
}

/* --hold fence: what holds the copy back, a pending vgem fence. */
static void
signal_hold(void *arg)
{
	sbk_fence_signal(arg);
}

#define FILLS 30
#define FILL_SIZE (64u << 20)

/* The fences on the dma-buf as a consumer would see them: how many, and
 * whether all have signalled (1), or -99 when the export failed. */
static int
dmabuf_fences(int fd, uint32_t *count)
{
	int fence_fd = -1, status = -99;

	*count = 0;
	if (tb_dmabuf_export_raw(fd, DMA_BUF_SYNC_READ, &fence_fd) == 0)
		tb_sync_file_info_raw(fence_fd, &status, count, 0, NULL);
	if (fence_fd >= 0)
		close(fence_fd);
	return status;
}

/* Bytes of the shared resource equal to v (image: only the pixels). */
static size_t
count_shared(const struct tbvk_shared *sh, const struct sbk_buf *buf, uint8_t v, size_t *total)
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

/* What one round needs that lives across rounds. */
struct scene {
	struct tbvk_options opt;
	struct vkt t;
	int vgem;
	struct sbk_buf buf;
	struct tbvk_shared shared;
	struct vkt_buffer src;
	struct vkt_buffer busy; /* --hold work */
};

static void
one_round(struct scene *sc, int round)
{
	struct tbvk_options opt = sc->opt;
	if (opt.signal == TBVK_SIGNAL_ALTERNATE)
		opt.signal = round % 2 ? TBVK_SIGNAL_SAME_THREAD : TBVK_SIGNAL_OTHER_THREAD;
	struct vkt t = sc->t;
	struct sbk_buf buf = sc->buf;
	struct tbvk_shared shared = sc->shared;
	struct vkt_buffer src = sc->src;

	if (round > 0)
		memset(buf.map, OLD, buf.size); /* nothing of ours is in flight now */

	struct sbk_fence hold = { .sync_file = -1 };
	VkSemaphore held = VK_NULL_HANDLE;
	if (opt.hold == TBVK_HOLD_FENCE) {
		REQUIRE(sbk_fence_create(sc->vgem, true, &hold) == 0, "a vgem fence");
		held = vkt_semaphore(&t, false);
		int fd = fcntl(hold.sync_file, F_DUPFD_CLOEXEC, 0);
		REQUIRE(fd >= 0, "dup");
		VkResult ir = vkt_semaphore_import(&t, held, fd);
		if (ir != VK_SUCCESS)
			close(fd);
		REQUIRE(ir == VK_SUCCESS, "import the vgem fence: %s", vkt_result_name(ir));
	}

	struct tbvk_rec rec;
	tbvk_begin(&t, &opt, true, &rec);
	if (opt.hold == TBVK_HOLD_WORK) {
		for (int i = 0; i < FILLS; i++)
			vkCmdFillBuffer(tbvk_cmd(&rec), sc->busy.buffer, 0, VK_WHOLE_SIZE, (uint32_t)i);
		/* The copy runs after the fills (an execution dependency). */
		vkCmdPipelineBarrier(tbvk_cmd(&rec), VK_PIPELINE_STAGE_TRANSFER_BIT,
				     VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, NULL, 0, NULL, 0, NULL);
	}
	tbvk_copy_to_shared(tbvk_cmd(&rec), &src, &shared);
	tbvk_release(&t, &opt, tbvk_cmd(&rec), &shared, VK_ACCESS_TRANSFER_WRITE_BIT);
	tbvk_end(&t, &rec);

	struct timeline_signal s = { .t = &t, .timeline = vkt_timeline(&t, 0) };
	/* --hold fence: 500 ms; in the control only once the consumer has read. */
	struct tbvk_deferred work = { .fn = signal_hold, .arg = &hold,
				     .delay_ns = 500ll * 1000 * 1000, .when_told = opt.control };
	/*
	 * With --hold work the control cannot hold submitted work back: real
	 * GPU work takes as long as it takes (on venus, in one .ci/run, the
	 * fills and the copy were done before the consumer read in round 0).
	 * There the control's dependency comes only once the consumer has
	 * read: venus's race by itself, made certain. (--hold fence keeps the
	 * control the same scenario as the bridged run.)
	 */
	bool late_dep = opt.control && opt.hold == TBVK_HOLD_WORK;
	/* The dependency from another thread, 100 ms after its start. */
	struct tbvk_deferred dep = { .fn = signal_timeline, .arg = &s,
				    .delay_ns = 100ll * 1000 * 1000, .when_told = late_dep };
	VkFence fence = vkt_fence(&t);
	if (opt.hold == TBVK_HOLD_FENCE)
		tbvk_deferred_start(&work);
	if (opt.signal == TBVK_SIGNAL_BEFORE)
		signal_timeline(&s);
	else if (opt.signal == TBVK_SIGNAL_OTHER_THREAD)
		tbvk_deferred_start(&dep);

	int64_t t0 = now_ns();
	VkSemaphore waits[] = { s.timeline, held };
	uint64_t values[] = { 1, 0 };
	VkResult r = tbvk_submit_waits(&t, &opt, rec.primary, held ? 2 : 1, waits, values, fence);
	int64_t t1 = now_ns();
	CHECK(r == VK_SUCCESS, "vkQueueSubmit: %s", vkt_result_name(r));
	/* Before the dependency is submitted: the window (docs/layer.md). */
	uint32_t window_fences = 0;
	int window_status = dmabuf_fences(buf.fd, &window_fences);

	if (opt.signal == TBVK_SIGNAL_SAME_THREAD && !late_dep)
		signal_timeline(&s);
	else if (opt.signal == TBVK_SIGNAL_OTHER_THREAD && !late_dep)
		tbvk_deferred_join(&dep);
	/* The dependency is submitted: now the consumer may be told. */
	int64_t t2 = now_ns();

	/* The consumer: implicit sync only. */
	struct pollfd pfd = { .fd = buf.fd, .events = POLLIN };
	int pr = poll(&pfd, 1, 10000);
	int64_t t3 = now_ns();
	struct dma_buf_sync sync = { .flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ };
	ioctl(buf.fd, DMA_BUF_IOCTL_SYNC, &sync);
	size_t total;
	size_t n_new = count_shared(&shared, &buf, NEW, &total);
	size_t n_old = count_shared(&shared, &buf, OLD, &total);
	sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ;
	ioctl(buf.fd, DMA_BUF_IOCTL_SYNC, &sync);
	if (opt.hold == TBVK_HOLD_FENCE)
		tbvk_deferred_tell(&work);
	if (late_dep && opt.signal == TBVK_SIGNAL_SAME_THREAD) {
		signal_timeline(&s);
	} else if (late_dep && opt.signal == TBVK_SIGNAL_OTHER_THREAD) {
		tbvk_deferred_tell(&dep);
		tbvk_deferred_join(&dep);
	}

	/* What the consumer could also see: the fence on the buffer. */
	uint32_t num_fences = 0;
	dmabuf_fences(buf.fd, &num_fences);

	static const char *const modes[] = { "other-thread", "same-thread", "before" };
	tb_note("round %d, signal %s: submit %.1f ms (dma-buf then: %u fences, status %d), "
		     "vkSignalSemaphore %.1f ms, poll %.1f ms (rc %d); consumer read %zu NEW, "
		     "%zu OLD of %zu; dma-buf read fences: %u",
		     round, modes[opt.signal], (t1 - t0) / 1e6, window_fences, window_status,
		     s.ns / 1e6, (t3 - t2) / 1e6, pr, n_new, n_old, total, num_fences);

	if (opt.hold == TBVK_HOLD_FENCE)
		tbvk_deferred_join(&work);
	CHECK(s.result == VK_SUCCESS, "vkSignalSemaphore: %s", vkt_result_name(s.result));
	r = vkWaitForFences(t.device, 1, &fence, VK_TRUE, 20ull * 1000 * 1000 * 1000);
	CHECK(r == VK_SUCCESS, "vkWaitForFences: %s", vkt_result_name(r));
	CHECK(pr == 1 && (pfd.revents & POLLIN), "poll: the dma-buf became readable");

	if (!opt.control) {
		CHECK(n_new == total, "the consumer saw the released data complete");
	} else {
		CHECK(n_old == total, "control: without the layer the consumer read stale data");
	}

	vkDestroyFence(t.device, fence, NULL);
	vkDestroySemaphore(t.device, s.timeline, NULL);
	if (held)
		vkDestroySemaphore(t.device, held, NULL);
	if (opt.hold == TBVK_HOLD_FENCE)
		sbk_fence_destroy(&hold);
	tbvk_rec_free(&t, &rec);
}

int
main(int argc, char **argv)
{
	struct scene sc = { 0 };
	int vgem = tbvk_start(argc, argv, &sc.opt);

	/* --hold fence: the app imports the vgem fence itself. */
	sc.opt.app_semaphore_fd = sc.opt.hold == TBVK_HOLD_FENCE;
	tbvk_fault_begin(&sc.opt);
	tbvk_init(&sc.t, &sc.opt, true);
	tbvk_shared_create(&sc.t, &sc.opt, vgem, SIZE, OLD, &sc.buf, &sc.shared);

	sc.vgem = vgem;
	vkt_host_buffer(&sc.t, SIZE, &sc.src);
	memset(sc.src.map, NEW, SIZE);
	if (sc.opt.hold == TBVK_HOLD_WORK)
		VK_CHECK(vkt_host_buffer(&sc.t, FILL_SIZE, &sc.busy));
	/* --iterations N: N rounds on one device (venus takes minutes to bring
	 * a device up under TCG; a round takes about a second). */
	long rounds = sc.opt.iterations > 0 ? sc.opt.iterations : 1;
	for (long r = 0; r < rounds; r++)
		one_round(&sc, (int)r);

	tbvk_fault_check(&sc.opt, &tb_failures);
	if (sc.opt.validation)
		CHECK_EQ(vkt_validation_errors, 0, "validation errors");
	vkt_buffer_destroy(&sc.t, &sc.src);
	if (sc.busy.buffer)
		vkt_buffer_destroy(&sc.t, &sc.busy);
	tbvk_shared_destroy(&sc.t, &sc.shared, &sc.buf);
	vkt_finish(&sc.t);
	close(vgem);
	return tb_finish();
}
