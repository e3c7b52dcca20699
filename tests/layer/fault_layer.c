/* SPDX-License-Identifier: MIT */
/*
 * fault-layer (VM tier): the layer keeps the app's ordering guarantee — or
 * reports an error — when the kernel refuses any of the calls it makes during
 * a submit. One Vulkan app (lavapipe) runs two cycles through the layer:
 *
 *   acquire: a vgem WRITE fence is pending on the dma-buf; the app submits
 *            acquire-from-FOREIGN + copy-out; a producer thread writes NEW
 *            and signals only after 150 ms (or after the app's fence, if that
 *            comes first: the layer did not order). The copy must see NEW.
 *   release: the app submits copy-in (held 100 ms by a vgem fence imported
 *            into a binary semaphore the batch waits on; it also waits on
 *            its own timeline, signalled just before, so the layer exports
 *            inside the submit) + release-to-FOREIGN;
 *            a consumer that knows only implicit sync polls the dma-buf and
 *            reads it: it must see the new data.
 *
 * A dry run of each cycle counts the ioctl / dup / eventfd calls made from the
 * layer's own object during vkQueueSubmit (libsbfault, scoped to
 * libVkLayer_SYNCBRIDGE); then each of them is failed in turn (ioctl with
 * EINVAL, ENOMEM and — each in a process of its own, see main() — ENOTTY;
 * dup with EMFILE; eventfd with EMFILE, ENOMEM), and the cycle must end
 * "kept" (VK_SUCCESS and correct data) or "reported" (an error VkResult);
 * "broken" (VK_SUCCESS, wrong data) fails. No fd may leak and no close() may
 * hit a closed fd, on any path. Last, an acquire whose producer fence
 * completed with an error (libsbfault's fence_error rule in the layer's
 * SYNC_IOC_FILE_INFO answers; docs/layer.md "Errored producer fences"):
 *
 *   errored                 default: VK_SUCCESS, the copy ran after the
 *                           producer, one warning naming EIO
 *   errored-device-lost     SYNCBRIDGE_FENCE_ERRORS=device-lost:
 *                           VK_ERROR_DEVICE_LOST, the work still ran
 *   errored-cpu-wait        device-lost, the fence still pending at the
 *                           submit and the layer's merge of the batch's two
 *                           sync_files failing (libsbfault: SYNC_IOC_MERGE,
 *                           see acquire_errored): the layer waits on the CPU
 *                           and sees the error there
 *   errored-control         device-lost, no fence_error rule: VK_SUCCESS and
 *                           no warning (the report comes from the error)
 *   errored-cpu-wait-default  the CPU-wait fallback without the knob:
 *                           VK_SUCCESS and the warning
 *
 *   fault-layer [vkt options: --image --sync2 --secondary ...]
 *
 * Timing (issue 19): no check passes or fails by how fast lavapipe or the
 * guest runs.
 *  - acquire's producer window (150 ms from the producer's start): with a
 *    layer that orders, the app's fence cannot signal before the producer's
 *    signal, so `early` stays false and the copy sees NEW however late
 *    anything runs. The window only gives a layer that does not order the
 *    time to show (the app's fence signals in it: BROKEN); a slow copy can
 *    make such a bug go unseen in one case, never fail a correct layer. It
 *    also ends a CPU wait inside vkQueueSubmit (the fallback paths), which
 *    needs the producer to go without waiting for the submit to return.
 *  - release's hold (the vgem fence, signalled 100 ms after its start): not
 *    a synchronisation either; the consumer's poll() waits for the layer's
 *    fence whenever the hold ends. The 100 ms keep the copy pending while the layer
 *    fences the buffer, so that a layer that does not would let the consumer
 *    read OLD (a negative-check window). The poll's 10 s is a bound on an
 *    event that must happen: typically ~100 ms + the copy (ms).
 *  - the errored cases' pending producer signals once the submitting thread
 *    sleeps in the layer's CPU wait (an untimed ppoll, seen in
 *    /proc/self/task/TID/syscall), not after a fixed 100 ms: a main thread
 *    late by more than that made the fence complete before the submit, and
 *    "the layer waited on the CPU" failed. Bound 5 s (a hang guard below
 *    vgem's 10 s; typically a few ms to ~100 ms).
 *  - the 1.1 s between errored cases is the layer's rate limit (one fence
 *    error line a second, CLOCK_MONOTONIC): a sleep never ends early, so the
 *    next case's line is always due; a slow guest only adds to the gap.
 *  - the app's fence is waited for up to 20 s: typically ms (a hang guard).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/sync_file.h>

#include "fd_snapshot.h"
#include "harness.h"
#include "kernel.h"
#include "sbfault.h"
#include "tbvk.h"

#define SIZE 16384
#define OLD 0x11
#define NEW 0x22
#define SCOPE "libVkLayer_SYNCBRIDGE"
#define MS (1000ll * 1000)

struct app {
	struct vkt t;
	struct tbvk_options opt;
	int vgem;
	struct sbk_buf buf;
	struct tbvk_shared shared;
	struct vkt_buffer src, dst;
	struct tbvk_rec acq, rel;
	struct tbvk_shared shared2; /* the same dma-buf imported again (errored cases) */
	struct tbvk_rec acq2;       /* acquires shared and shared2 */
	unsigned merge_ioctl;
	VkSemaphore timeline;
	VkSemaphore held; /* the release waits on it: a vgem fence (hold_main) */
	uint64_t tl_value;
};

enum outcome { KEPT, REPORTED, BROKEN };
static const char *const outcome_names[] = { "kept", "reported", "BROKEN" };

struct producer {
	struct app *a;
	VkFence fence;
	uint32_t fence_id;
	atomic_bool submitted;
	atomic_bool early;
};

/*
 * Writes NEW and signals 150 ms after it starts, or sooner if the app's fence
 * signals first (early: the layer did not order). The 150 ms are only a
 * negative-check window, see the header.
 */
static void *
producer_main(void *arg)
{
	struct producer *p = arg;
	int64_t deadline = now_ns() + 150 * MS;

	while (!atomic_load(&p->submitted) && now_ns() < deadline)
		sbk_sleep_ns(MS);
	int64_t left = deadline - now_ns();
	if (atomic_load(&p->submitted) && left > 0)
		atomic_store(&p->early, vkWaitForFences(p->a->t.device, 1, &p->fence, VK_TRUE,
							(uint64_t)left) == VK_SUCCESS);
	memset(p->a->buf.map, NEW, p->a->buf.size);
	sbk_vgem_fence_signal(p->a->vgem, p->fence_id);
	return NULL;
}

static void *
hold_main(void *arg)
{
	struct sbk_fence *hold = arg;

	/* A negative-check window, not a synchronisation (see the header). */
	sbk_sleep_ns(100 * MS);
	sbk_fence_signal(hold);
	return NULL;
}

/* schedule NULL: not armed. Returns the outcome; *res the submit's result. */
static enum outcome
cycle_acquire(struct app *a, const char *schedule, VkResult *res)
{
	struct producer p = { .a = a };
	pthread_t th;
	VkResult r;

	memset(a->buf.map, OLD, a->buf.size);
	memset(a->dst.map, 0, SIZE);
	p.fence = vkt_fence(&a->t);
	REQUIRE(sbk_vgem_fence_attach(a->vgem, a->buf.handle, true, &p.fence_id) == 0, "vgem fence");
	REQUIRE(pthread_create(&th, NULL, producer_main, &p) == 0, "pthread_create");
	if (schedule)
		sbfault_arm_scoped(schedule, SCOPE);
	r = tbvk_submit(&a->t, &a->opt, a->acq.primary, VK_NULL_HANDLE, 0, p.fence);
	if (schedule)
		sbfault_disarm();
	atomic_store(&p.submitted, true);
	if (r == VK_SUCCESS)
		vkWaitForFences(a->t.device, 1, &p.fence, VK_TRUE, 20000 * MS);
	pthread_join(th, NULL);
	/* Whatever happened, the queue is idle before the next case. */
	vkQueueWaitIdle(a->t.queue);
	vkDestroyFence(a->t.device, p.fence, NULL);
	*res = r;
	if (r != VK_SUCCESS)
		return REPORTED;
	return vkt_count_bytes(a->dst.map, SIZE, NEW) == SIZE && !atomic_load(&p.early) ? KEPT : BROKEN;
}

static enum outcome
cycle_release(struct app *a, const char *schedule, VkResult *res)
{
	uint64_t value = ++a->tl_value;
	VkSemaphoreSignalInfo si = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
		.semaphore = a->timeline,
		.value = value,
	};
	struct pollfd pfd = { .fd = a->buf.fd, .events = POLLIN };
	struct dma_buf_sync sync = { .flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ };
	pthread_t th;
	size_t n_new;
	VkResult r;

	memset(a->buf.map, OLD, a->buf.size);
	memset(a->src.map, NEW, SIZE);
	struct sbk_fence hold = { .sync_file = -1 };
	REQUIRE(sbk_fence_create(a->vgem, true, &hold) == 0, "a vgem fence");
	int fd = fcntl(hold.sync_file, F_DUPFD_CLOEXEC, 0);
	REQUIRE(fd >= 0 && vkt_semaphore_import(&a->t, a->held, fd) == VK_SUCCESS,
		"import the hold's fence");
	/* The batch's timeline wait is resolved before the submit: the layer
	 * exports inside it (docs/layer.md, "Waits before signals"). */
	vkSignalSemaphore(a->t.device, &si);
	REQUIRE(pthread_create(&th, NULL, hold_main, &hold) == 0, "pthread_create");
	VkSemaphore waits[] = { a->timeline, a->held };
	uint64_t values[] = { value, 0 };
	if (schedule)
		sbfault_arm_scoped(schedule, SCOPE);
	r = tbvk_submit_waits(&a->t, &a->opt, a->rel.primary, 2, waits, values, VK_NULL_HANDLE);
	if (schedule)
		sbfault_disarm();
	/* The consumer: implicit sync only (10 s: a hang guard, typically ~100 ms). */
	poll(&pfd, 1, 10000);
	ioctl(a->buf.fd, DMA_BUF_IOCTL_SYNC, &sync);
	n_new = vkt_count_bytes(a->buf.map, SIZE, NEW);
	sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ;
	ioctl(a->buf.fd, DMA_BUF_IOCTL_SYNC, &sync);
	pthread_join(th, NULL);
	vkQueueWaitIdle(a->t.queue);
	sbk_fence_destroy(&hold);
	*res = r;
	if (r != VK_SUCCESS)
		return REPORTED;
	return n_new == SIZE ? KEPT : BROKEN;
}

/*
 * The producer's fence completed before the submit; `schedule` makes it an
 * error (libsbfault's fence_error rule in the layer's SYNC_IOC_FILE_INFO
 * answers) or not (NULL). The data is the producer's. Returns whether the
 * layer logged a line about the error.
 */
struct late_producer {
	struct app *a;
	uint32_t fence_id;
	pid_t submitter; /* the thread that calls vkQueueSubmit */
	bool blocked;    /* it was seen in the layer's CPU wait */
};

/*
 * Whether thread tid sleeps in an untimed ppoll(): the layer's CPU wait
 * (sb_sync_file_wait / sb_dmabuf_wait with SB_TIMEOUT_INFINITE, whose
 * ppoll has no timespec). Nothing else in the submit path sleeps that way:
 * the fence checks before it are ioctls.
 * /proc/PID/syscall: "NR ARG1 ARG2 ARG3 ..." while asleep in a system call.
 */
static bool
in_untimed_ppoll(pid_t tid)
{
	char path[64];
	long nr = -1;
	unsigned long a1, a2, a3 = 1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	REQUIRE(f, "%s: %s (the test needs it to see the submit block)", path, strerror(errno));
	if (fscanf(f, "%ld %lx %lx %lx", &nr, &a1, &a2, &a3) != 4)
		nr = -1;
	fclose(f);
	return nr == SYS_ppoll && a3 == 0;
}

static void *
late_producer_main(void *arg)
{
	struct late_producer *p = arg;
	int64_t end = now_ns() + 5000 * MS;

	/* Until the submit waits for this fence on the CPU (bound: a hang guard). */
	while (!(p->blocked = in_untimed_ppoll(p->submitter)) && now_ns() < end)
		sbk_sleep_ns(MS);
	memset(p->a->buf.map, NEW, p->a->buf.size);
	sbk_vgem_fence_signal(p->a->vgem, p->fence_id);
	return NULL;
}

/*
 * The pending cases' CPU wait. A second import of the same dma-buf, acquired
 * in the same batch (a->acq2), makes the layer export a sync_file from each
 * memory and merge them (layer/batch.c, prepare_acquire). Failing that merge
 * (SYNC_IOC_MERGE, through libsbfault) makes it wait on the CPU for the
 * second sync_file, where it sees the producer's error. (The layer's other
 * sync_file CPU wait follows a failed vkImportSemaphoreFdKHR: lavapipe's
 * import makes no call libsbfault can fail and have it report.) Returns the
 * 1-based index of the merge among the layer's ioctls in that submit, from a
 * dry run with a signalled fence.
 */
static unsigned
merge_ioctl_index(struct app *a)
{
	VkFence fence = vkt_fence(&a->t);
	uint32_t fence_id;
	unsigned n, i;

	REQUIRE(sbk_vgem_fence_attach(a->vgem, a->buf.handle, true, &fence_id) == 0, "vgem fence");
	REQUIRE(sbk_vgem_fence_signal(a->vgem, fence_id) == 0, "vgem signal");
	sbfault_arm_scoped("", SCOPE);
	VkResult r = tbvk_submit(&a->t, &a->opt, a->acq2.primary, VK_NULL_HANDLE, 0, fence);
	sbfault_disarm();
	REQUIRE(r == VK_SUCCESS, "two-buffer acquire dry run: %s", vkt_result_name(r));
	vkWaitForFences(a->t.device, 1, &fence, VK_TRUE, 20000 * MS);
	vkQueueWaitIdle(a->t.queue);
	vkDestroyFence(a->t.device, fence, NULL);
	n = sbfault_calls("ioctl");
	for (i = 0; i < n && sbfault_ioctl_request(i) != SYNC_IOC_MERGE; i++)
		;
	REQUIRE(i < n, "the layer merged no sync_files in a two-buffer acquire (%u ioctls)", n);
	return i + 1;
}

/*
 * pending: the producer's fence is still pending at the submit and completes
 * (from another thread) once the layer waits for it on the CPU: the batch
 * acquires the dma-buf through two memories and the merge fails
 * (merge_ioctl_index). *cpu_wait: the layer said it waited on the CPU.
 */
static bool
acquire_errored(struct app *a, const char *schedule, bool pending, VkResult *res, bool *data_ok,
		bool *cpu_wait)
{
	VkFence fence = vkt_fence(&a->t);
	struct late_producer lp = { .a = a, .submitter = (pid_t)syscall(SYS_gettid) };
	VkCommandBuffer cb = pending ? a->acq2.primary : a->acq.primary;
	char sched[96];
	pthread_t th;
	char *log;
	bool told;

	if (pending)
		snprintf(sched, sizeof(sched), "%s%sioctl:%u:ENOMEM", schedule ? schedule : "",
			 schedule ? "," : "", a->merge_ioctl);
	else
		snprintf(sched, sizeof(sched), "%s", schedule ? schedule : "");

	memset(a->buf.map, OLD, a->buf.size);
	memset(a->dst.map, 0, SIZE);
	REQUIRE(sbk_vgem_fence_attach(a->vgem, a->buf.handle, true, &lp.fence_id) == 0, "vgem fence");
	if (pending) {
		REQUIRE(pthread_create(&th, NULL, late_producer_main, &lp) == 0, "pthread_create");
	} else {
		memset(a->buf.map, NEW, a->buf.size);
		REQUIRE(sbk_vgem_fence_signal(a->vgem, lp.fence_id) == 0, "vgem signal");
	}
	tbvk_capture_begin();
	sbfault_arm_scoped(sched, SCOPE);
	*res = tbvk_submit(&a->t, &a->opt, cb, VK_NULL_HANDLE, 0, fence);
	sbfault_disarm();
	if (pending) {
		pthread_join(th, NULL);
		CHECK(lp.blocked, "the submit waited on the CPU for the pending fence (seen within 5 s)");
		CHECK(sbfault_ioctl_request(a->merge_ioctl - 1) == SYNC_IOC_MERGE,
		      "the failed ioctl was the merge");
	}
	/* Submitted either way (DEVICE_LOST comes after the submit): the fence signals. */
	CHECK_EQ(vkWaitForFences(a->t.device, 1, &fence, VK_TRUE, 20000 * MS), VK_SUCCESS,
		 "the app's fence signals");
	vkQueueWaitIdle(a->t.queue);
	log = tbvk_capture_end();
	fputs(log, stderr);
	told = strstr(log, "completed with an error") && strstr(log, "Input/output error");
	*cpu_wait = strstr(log, "waiting on the CPU instead") != NULL;
	free(log);
	*data_ok = vkt_count_bytes(a->dst.map, SIZE, NEW) == SIZE;
	vkDestroyFence(a->t.device, fence, NULL);
	return told;
}

static const struct {
	const char *set;
	const char *schedule; /* NULL: no rule */
	bool device_lost;     /* SYNCBRIDGE_FENCE_ERRORS=device-lost */
	bool pending;         /* completes during the layer's CPU wait */
	VkResult want;
	bool want_told;
} errored_cases[] = {
	{ "errored", "fence_error:*:EIO", false, false, VK_SUCCESS, true },
	{ "errored-device-lost", "fence_error:*:EIO", true, false, VK_ERROR_DEVICE_LOST, true },
	{ "errored-cpu-wait", "fence_error:*:EIO", true, true, VK_ERROR_DEVICE_LOST, true },
	{ "errored-control", NULL, true, false, VK_SUCCESS, false },
	{ "errored-cpu-wait-default", "fence_error:*:EIO", false, true, VK_SUCCESS, true },
};
#define N_ERRORED ((int)(sizeof(errored_cases) / sizeof(errored_cases[0])))

static const struct {
	const char *name;
	enum outcome (*run)(struct app *, const char *, VkResult *);
} cycles[] = {
	{ "acquire", cycle_acquire },
	{ "release", cycle_release },
};

/* Errors each kind of call is failed with (ENOTTY separately: see main()). */
static const struct {
	const char *fn;
	const char *errs[3];
} kinds[] = {
	{ "ioctl", { "EINVAL", "ENOMEM", NULL } },
	{ "dup", { "EMFILE", NULL } },
	{ "eventfd", { "EMFILE", "ENOMEM", NULL } },
};
#define N_KINDS ((int)(sizeof(kinds) / sizeof(kinds[0])))

static int cases, kept, reported, broken;

static void
one_case(struct app *a, size_t c, const char *sched)
{
	struct tb_fd_snapshot before;
	char what[128];
	int bad_fd = -1;
	VkResult r;
	enum outcome o;

	REQUIRE(tb_fd_snapshot_take(&before) == 0, "snapshot");
	o = cycles[c].run(a, sched, &r);
	cases++;
	kept += o == KEPT;
	reported += o == REPORTED;
	broken += o == BROKEN;
	tb_note("%s [%s]: %s (%s)", cycles[c].name, sched, outcome_names[o], vkt_result_name(r));
	CHECK(o != BROKEN, "%s [%s]: the ordering is kept or an error reported", cycles[c].name, sched);
	CHECK_EQ(sbfault_injected(), 1, "the fault was hit");
	CHECK_EQ(sbfault_bad_closes(&bad_fd), 0, "no close() of a closed fd");
	snprintf(what, sizeof(what), "%s [%s]", cycles[c].name, sched);
	tb_fd_snapshot_check(&before, NULL, 0, what);
	tb_fd_snapshot_free(&before);
}

/*
 * One process, one Vulkan app: the cases of `set` for cycle `c`.
 *   "faults"  every counted call, failed with each error of its kind;
 *   "enotty"  only ioctl number `n` (1-based), with ENOTTY: exit 3 when there
 *             is no such call;
 *   "errored" the errored-producer-fence case.
 */
static int
child(const struct tbvk_options *opt, size_t c, const char *set, unsigned n)
{
	struct app a = { .opt = *opt };
	bool no_such_call = false;

	a.vgem = sbk_vgem_open();
	if (a.vgem == -ENODEV)
		tb_skip("no vgem (run in the test guest)");
	REQUIRE(a.vgem >= 0, "open vgem: %s", strerror(-a.vgem));

	a.opt.app_semaphore_fd = true; /* the release's hold: a vgem fence it imports */
	tbvk_init(&a.t, &a.opt, true);
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, a.vgem, SIZE, &a.buf) == 0, "vgem buffer");
	vkt_import_buffer(&a.t, a.buf.fd, SIZE, &a.shared.buf);
	vkt_host_buffer(&a.t, SIZE, &a.src);
	vkt_host_buffer(&a.t, SIZE, &a.dst);
	a.timeline = vkt_timeline(&a.t, 0);

	tbvk_begin(&a.t, &a.opt, false, &a.acq);
	tbvk_acquire(&a.t, &a.opt, tbvk_cmd(&a.acq), &a.shared, VK_ACCESS_TRANSFER_READ_BIT);
	tbvk_copy_from_shared(tbvk_cmd(&a.acq), &a.shared, &a.dst);
	vkt_host_read_barrier(tbvk_cmd(&a.acq));
	tbvk_end(&a.t, &a.acq);
	a.held = vkt_semaphore(&a.t, false);
	tbvk_begin(&a.t, &a.opt, false, &a.rel);
	tbvk_copy_to_shared(tbvk_cmd(&a.rel), &a.src, &a.shared);
	tbvk_release(&a.t, &a.opt, tbvk_cmd(&a.rel), &a.shared, VK_ACCESS_TRANSFER_WRITE_BIT);
	tbvk_end(&a.t, &a.rel);

	/*
	 * "errored": the cases without SYNCBRIDGE_FENCE_ERRORS; "errored-device-lost":
	 * those with it (read once per process), one after the other, more than
	 * a second apart (the layer logs fence errors at most once a second).
	 */
	if (strncmp(set, "errored", 7) == 0) {
		bool device_lost = strcmp(set, "errored-device-lost") == 0, first = true;

		vkt_import_buffer(&a.t, a.buf.fd, SIZE, &a.shared2.buf);
		tbvk_begin(&a.t, &a.opt, false, &a.acq2);
		tbvk_acquire(&a.t, &a.opt, tbvk_cmd(&a.acq2), &a.shared, VK_ACCESS_TRANSFER_READ_BIT);
		tbvk_acquire(&a.t, &a.opt, tbvk_cmd(&a.acq2), &a.shared2, VK_ACCESS_TRANSFER_READ_BIT);
		tbvk_copy_from_shared(tbvk_cmd(&a.acq2), &a.shared, &a.dst);
		vkt_host_read_barrier(tbvk_cmd(&a.acq2));
		tbvk_end(&a.t, &a.acq2);
		a.merge_ioctl = merge_ioctl_index(&a);

		for (int i = 0; i < N_ERRORED; i++) {
			const char *name = errored_cases[i].set;
			VkResult r;
			bool data_ok, told, cpu_wait;

			if (errored_cases[i].device_lost != device_lost)
				continue;
			/* The layer's one-line-a-second limit: a sleep never ends early. */
			if (!first)
				sbk_sleep_ns(1100 * MS);
			first = false;
			told = acquire_errored(&a, errored_cases[i].schedule, errored_cases[i].pending, &r,
					       &data_ok, &cpu_wait);
			if (errored_cases[i].pending)
				CHECK(cpu_wait, "%s: the layer waited on the CPU (import fault)", name);
			tb_note("%s: acquire after %s producer fence: %s, copy saw the producer's "
				     "data: %s, a warning named the error: %s",
				     name, errored_cases[i].schedule ? "an errored" : "a clean",
				     vkt_result_name(r), data_ok ? "yes" : "no", told ? "yes" : "no");
			CHECK(data_ok, "%s: the copy ran after the producer", name);
			CHECK(r == errored_cases[i].want, "%s: vkQueueSubmit returned %s, want %s", name,
			      vkt_result_name(r), vkt_result_name(errored_cases[i].want));
			CHECK(told == errored_cases[i].want_told, "%s: a warning naming EIO: %s, want %s",
			      name, told ? "yes" : "no", errored_cases[i].want_told ? "yes" : "no");
			if (errored_cases[i].schedule)
				CHECK(sbfault_calls("fence_error") > 0, "%s: the rule was applied", name);
		}
		goto out;
	}

	/* Warm up (lazy driver state), then the dry run. */
	VkResult r;
	enum outcome o = cycles[c].run(&a, NULL, &r);
	REQUIRE(o == KEPT, "%s without faults: %s (%s)", cycles[c].name, outcome_names[o],
		vkt_result_name(r));
	o = cycles[c].run(&a, "", &r);
	REQUIRE(o == KEPT, "%s dry run: %s (%s)", cycles[c].name, outcome_names[o], vkt_result_name(r));
	unsigned counts[N_KINDS], total = 0;
	for (int k = 0; k < N_KINDS; k++)
		total += counts[k] = sbfault_calls(kinds[k].fn);

	if (strcmp(set, "enotty") == 0) {
		char sched[64];

		if (n > counts[0]) {
			no_such_call = true;
			goto out;
		}
		snprintf(sched, sizeof(sched), "ioctl:%u:ENOTTY", n);
		one_case(&a, c, sched);
		goto out;
	}

	tb_note("%s: during vkQueueSubmit the layer made ioctl=%u dup=%u eventfd=%u calls",
		     cycles[c].name, counts[0], counts[1], counts[2]);
	if (total == 0)
		tb_note("%s: no call from %s counted (under ASan its interceptors hide the caller): "
			     "nothing to inject", cycles[c].name, SCOPE);
	for (int k = 0; k < N_KINDS; k++) {
		for (unsigned i = 1; i <= counts[k]; i++) {
			for (int e = 0; kinds[k].errs[e]; e++) {
				char sched[64];

				snprintf(sched, sizeof(sched), "%s:%u:%s", kinds[k].fn, i, kinds[k].errs[e]);
				one_case(&a, c, sched);
			}
		}
	}
	tb_note("%s: %d fault cases: %d kept the ordering, %d reported an error, %d broke it",
		     cycles[c].name, cases, kept, reported, broken);

out:
	tbvk_rec_free(&a.t, &a.acq);
	tbvk_rec_free(&a.t, &a.rel);
	if (a.acq2.primary)
		tbvk_rec_free(&a.t, &a.acq2);
	if (a.shared2.buf.buffer)
		vkt_buffer_destroy(&a.t, &a.shared2.buf);
	vkDestroySemaphore(a.t.device, a.held, NULL);
	vkDestroySemaphore(a.t.device, a.timeline, NULL);
	vkt_buffer_destroy(&a.t, &a.src);
	vkt_buffer_destroy(&a.t, &a.dst);
	vkt_buffer_destroy(&a.t, &a.shared.buf);
	vkt_finish(&a.t);
	sbk_buf_destroy(&a.buf);
	close(a.vgem);
	return no_such_call ? 3 : tb_finish();
}

/* Run this program as `--child CYCLE SET N` plus the original arguments. */
static int
spawn(int argc, char **argv, size_t c, const char *set, unsigned n)
{
	char nbuf[16], **av = calloc((size_t)argc + 5, sizeof(*av));
	int status, k = 0;
	pid_t pid;

	REQUIRE(av, "calloc");
	snprintf(nbuf, sizeof(nbuf), "%u", n);
	av[k++] = argv[0];
	av[k++] = "--child";
	av[k++] = (char *)cycles[c].name;
	av[k++] = (char *)set;
	av[k++] = nbuf;
	for (int i = 1; i < argc; i++)
		av[k++] = argv[i];
	fflush(stdout);
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		/* argv[0] when it is a path: under valgrind /proc/self/exe is valgrind's tool. */
		execv(strchr(argv[0], '/') ? argv[0] : "/proc/self/exe", av);
		_exit(127);
	}
	free(av);
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	if (WIFSIGNALED(status)) {
		printf("# %s %s %u: killed by signal %d\n", cycles[c].name, set, n, WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}

int
main(int argc, char **argv)
{
	struct tbvk_options opt;
	int rc;

	if (!dlsym(RTLD_DEFAULT, "sbfault_arm_scoped"))
		tb_skip("libsbfault is not loaded");
	if (argc >= 5 && strcmp(argv[1], "--child") == 0) {
		size_t c = 0;

		while (c < sizeof(cycles) / sizeof(cycles[0]) && strcmp(cycles[c].name, argv[2]) != 0)
			c++;
		REQUIRE(c < sizeof(cycles) / sizeof(cycles[0]), "unknown cycle %s", argv[2]);
		unsigned n = (unsigned)strtoul(argv[4], NULL, 10);

		/* tbvk_parse_args() sees the original arguments after a program name. */
		argv[4] = argv[0];
		tbvk_parse_args(argc - 4, argv + 4, &opt);
		tbvk_env_from_options(&opt);
		/*
		 * No Mesa shader disk cache: its "disk$" thread opens and closes the
		 * cache files (two fds per write) in the background, whenever it is
		 * scheduled, and an fd snapshot taken meanwhile would see them come
		 * and go (common/eglt.h, eglt_no_disk_cache()).
		 */
		setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
		/* The layer's fallback warnings (once per device and kind) go to the log. */
		setenv("SYNCBRIDGE_DEBUG", "warn", 0);
		if (strcmp(argv[3], "errored-device-lost") == 0)
			setenv("SYNCBRIDGE_FENCE_ERRORS", "device-lost", 1);
		return child(&opt, c, argv[3], n);
	}

	/*
	 * A first ENOTTY from a dma-buf tells the library "Linux < 6.0" for the
	 * rest of the process (docs/core.md): every later export or import falls
	 * back at once. So the other errors run in one process per cycle, and
	 * each ENOTTY in a process of its own.
	 */
	for (size_t c = 0; c < sizeof(cycles) / sizeof(cycles[0]); c++) {
		rc = spawn(argc, argv, c, "faults", 0);
		if (rc == 77)
			return 77;
		CHECK(rc == 0, "%s: the fault cases passed (exit status %d)", cycles[c].name, rc);
		for (unsigned n = 1;; n++) {
			rc = spawn(argc, argv, c, "enotty", n);
			if (rc == 3)
				break;
			CHECK(rc == 0, "%s: ENOTTY on ioctl %u (exit status %d)", cycles[c].name, n, rc);
			if (rc != 0 && n > 16)
				break;
		}
	}
	rc = spawn(argc, argv, 0, "errored", 0);
	CHECK(rc == 0, "errored producer fences, default (exit status %d)", rc);
	rc = spawn(argc, argv, 0, "errored-device-lost", 0);
	CHECK(rc == 0, "errored producer fences, SYNCBRIDGE_FENCE_ERRORS=device-lost (exit status %d)", rc);
	return tb_finish();
}
