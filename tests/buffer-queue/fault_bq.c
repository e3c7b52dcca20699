/* SPDX-License-Identifier: MIT */
/*
 * fault-bq (VM tier): the buffer queue (sb_buffer_queue_*, in libsyncbridge)
 * under failing kernel and libc calls, and under fences that completed with
 * an error. Real vgem fences throughout.
 *
 * Fault cases: for each scenario a dry run counts the calls made from
 * libsyncbridge's own object during the armed public call (libsbfault scoped
 * to it: ioctl, dup, eventfd), then each is failed in turn (ioctl: EINVAL,
 * ENOMEM, ENOTTY; dup, eventfd: EMFILE, ENOMEM) and the call must end "kept"
 * (its promise held) or "reported" (a documented error, the fence fd still the
 * caller's); "broken" fails, and so does an fd leaked, closed under us, or a
 * close() of a closed fd.
 *
 *   create          sb_buffer_queue_create(4)
 *   queue           a pending acquire fence queued
 *   release         a pending release fence
 *   dequeue-reuse   the only slot is RELEASED with a pending release fence
 *                   that signals after 50 ms: dequeue must hand it out only
 *                   after that, and within 10 s (kept; its timeout is 30 s:
 *                   not only when it expires), or fail
 *   acquire-mailbox two frames queued with pending acquire fences; mailbox
 *                   acquire drops the older one, whose acquire fence must
 *                   become its release fence: a dequeue right after must not
 *                   get that slot while the producer may still write it
 *   release-dmabuf  the slot's dma-buf carries a pending READ fence: release
 *                   with the buffer's fences; a dequeue must wait for it
 *                   (run last: an ENOTTY there marks the kernel "< 6.0" for
 *                   the process, NEWS.md, F4)
 *
 *   fault-bq            the fault cases
 *   fault-bq --errored  fences that completed with an error (see errored())
 */
#include <dlfcn.h>
#include <pthread.h>

#include <linux/dma-buf.h>

#include "vmtest.h"
#include "fd_snapshot.h"
#include "sbfault.h"

#define SCOPE "libsyncbridge.so"

enum outcome { KEPT, REPORTED, BROKEN };
static const char *const outcome_names[] = { "kept", "reported", "BROKEN" };

static int vgem;

static void
arm(const char *schedule)
{
	if (schedule)
		sbfault_arm_scoped(schedule, SCOPE);
}

static void
disarm(const char *schedule)
{
	if (schedule)
		sbfault_disarm();
}

static struct sb_buffer_queue *
new_queue(unsigned slots, uint32_t flags)
{
	struct sb_buffer_queue *q = NULL;

	REQUIRE(sb_buffer_queue_create(slots, flags, &q) == 0, "create");
	return q;
}

static enum outcome
run_create(const char *schedule, int *ret)
{
	struct sb_buffer_queue *q = (void *)1;

	arm(schedule);
	*ret = sb_buffer_queue_create(4, 0, &q);
	disarm(schedule);
	if (*ret)
		return q == NULL ? REPORTED : BROKEN;
	sb_buffer_queue_destroy(q);
	return KEPT;
}

/* queue (acquire) or release (release) a pending fence. */
static enum outcome
run_hand_over(const char *schedule, int *ret, bool release)
{
	struct sb_buffer_queue *q = new_queue(1, 0);
	struct sbk_fence f;
	unsigned slot;
	int fence;
	enum outcome o = KEPT;

	vm_require_fence(vgem, true, &f);
	REQUIRE(sb_buffer_queue_dequeue(q, 0, &slot) == 0, "dequeue");
	if (release) {
		REQUIRE(sb_buffer_queue_queue(q, slot, -1) == 0, "queue");
		REQUIRE(sb_buffer_queue_acquire(q, 0, &slot, &fence) == 0 && fence == -1, "acquire");
	}
	arm(schedule);
	*ret = release ? sb_buffer_queue_release(q, slot, f.sync_file)
		       : sb_buffer_queue_queue(q, slot, f.sync_file);
	disarm(schedule);
	if (*ret == 0) {
		/* Ours no more. */
		f.sync_file = -1;
		if (release) {
			CHECK_EQ(sb_buffer_queue_dequeue(q, 0, &slot), -ETIME,
				 "no slot before the release fence signals");
		} else {
			REQUIRE(sb_buffer_queue_acquire(q, 0, &slot, &fence) == 0, "acquire");
			if (fence < 0 || !sb_sync_file_is_valid(fence))
				o = BROKEN; /* the pending acquire fence was lost */
			else
				close(fence);
		}
	} else {
		o = REPORTED;
		CHECK(sb_sync_file_is_valid(f.sync_file), "on failure the fence is still the caller's");
	}
	sbk_fence_signal(&f);
	sbk_fence_destroy(&f);
	sb_buffer_queue_destroy(q);
	return o;
}

static enum outcome
run_queue(const char *schedule, int *ret)
{
	return run_hand_over(schedule, ret, false);
}

static enum outcome
run_release(const char *schedule, int *ret)
{
	return run_hand_over(schedule, ret, true);
}

static enum outcome
run_dequeue_reuse(const char *schedule, int *ret)
{
	struct sb_buffer_queue *q = new_queue(1, 0);
	struct sbk_fence f;
	struct vm_later later;
	unsigned slot;
	int fence, mine, st = 0;

	vm_require_fence(vgem, false, &f);
	REQUIRE(sb_buffer_queue_dequeue(q, 0, &slot) == 0, "dequeue");
	REQUIRE(sb_buffer_queue_queue(q, slot, -1) == 0, "queue");
	REQUIRE(sb_buffer_queue_acquire(q, 0, &slot, &fence) == 0, "acquire");
	mine = dup(f.sync_file);
	REQUIRE(sb_buffer_queue_release(q, slot, f.sync_file) == 0, "release");
	f.sync_file = -1;
	vm_later_start(&later, 50 * MS, vm_later_signal_fence, &f);
	int64_t t0 = now_ns();
	arm(schedule);
	*ret = sb_buffer_queue_dequeue(q, 30000 * MS, &slot);
	disarm(schedule);
	int64_t took = now_ns() - t0;
	/* Handed out: its release fence must have signalled by now. */
	sb_sync_file_get_status(mine, &st);
	vm_later_join(&later);
	close(mine);
	sbk_fence_destroy(&f);
	sb_buffer_queue_destroy(q);
	if (*ret)
		return REPORTED;
	/* ... and dequeue noticed it promptly: not only at its timeout (an
	 * infinite one would hang). */
	if (took > 10000 * MS)
		tb_note("dequeue took %.0f ms for a fence that signalled after 50 ms", vm_ms(took));
	return st == 1 && took <= 10000 * MS ? KEPT : BROKEN;
}

static enum outcome
run_acquire_mailbox(const char *schedule, int *ret)
{
	struct sb_buffer_queue *q = new_queue(2, SB_BUFFER_QUEUE_MAILBOX);
	struct sbk_fence f[2];
	unsigned slot[2], got, again;
	int fence = -1;
	enum outcome o = KEPT;

	for (int i = 0; i < 2; i++) {
		vm_require_fence(vgem, true, &f[i]);
		REQUIRE(sb_buffer_queue_dequeue(q, 0, &slot[i]) == 0, "dequeue");
		REQUIRE(sb_buffer_queue_queue(q, slot[i], f[i].sync_file) == 0, "queue");
		f[i].sync_file = -1;
	}
	arm(schedule);
	*ret = sb_buffer_queue_acquire(q, 0, &got, &fence);
	disarm(schedule);
	if (*ret) {
		o = REPORTED;
	} else {
		/* The dropped slot's producer may still be writing: not free yet. */
		int r = sb_buffer_queue_dequeue(q, 0, &again);

		if (got != slot[1] || fence < 0 || r != -ETIME)
			o = BROKEN;
		close(fence);
	}
	for (int i = 0; i < 2; i++) {
		sbk_fence_signal(&f[i]);
		sbk_fence_destroy(&f[i]);
	}
	sb_buffer_queue_destroy(q);
	return o;
}

static enum outcome
run_release_dmabuf(const char *schedule, int *ret)
{
	struct sb_buffer_queue *q = new_queue(1, 0);
	struct sbk_fence f;
	unsigned slot;
	int fence;
	enum outcome o = KEPT;

	vm_require_fence(vgem, false, &f); /* a pending READ fence on f.bo */
	REQUIRE(sb_buffer_queue_set_dmabuf(q, 0, f.bo.fd) == 0, "set_dmabuf");
	REQUIRE(sb_buffer_queue_dequeue(q, 0, &slot) == 0, "dequeue");
	REQUIRE(sb_buffer_queue_queue(q, slot, -1) == 0, "queue");
	REQUIRE(sb_buffer_queue_acquire(q, 0, &slot, &fence) == 0, "acquire");
	arm(schedule);
	*ret = sb_buffer_queue_release_dmabuf(q, slot);
	disarm(schedule);
	if (*ret == 0)
		o = sb_buffer_queue_dequeue(q, 0, &slot) == -ETIME ? KEPT : BROKEN;
	else
		o = REPORTED;
	sbk_fence_signal(&f);
	sbk_fence_destroy(&f);
	sb_buffer_queue_destroy(q);
	return o;
}

/* Documented errors (include/syncbridge/buffer_queue.h). */
static const struct {
	const char *name;
	enum outcome (*run)(const char *, int *);
	int errors[6];
} scenarios[] = {
	{ "create", run_create, { -EINVAL, -ENOMEM, -EMFILE } },
	{ "queue", run_queue, { -EINVAL, -EBADF } },
	{ "release", run_release, { -EINVAL, -EBADF } },
	{ "dequeue-reuse", run_dequeue_reuse, { -ETIME, -EPIPE, -EBUSY, -EINVAL } },
	{ "acquire-mailbox", run_acquire_mailbox, { -ETIME, -EPIPE, -EINVAL } },
	{ "release-dmabuf", run_release_dmabuf, { -EINVAL, -EOPNOTSUPP, -ENOMEM, -EMFILE } },
};
#define N_SCENARIOS ((int)(sizeof(scenarios) / sizeof(scenarios[0])))

static const struct {
	const char *fn;
	const char *errs[3];
} kinds[] = {
	{ "ioctl", { "EINVAL", "ENOMEM", "ENOTTY" } },
	{ "dup", { "EMFILE", "ENOMEM", NULL } },
	{ "eventfd", { "EMFILE", "ENOMEM", NULL } },
};
#define N_KINDS ((int)(sizeof(kinds) / sizeof(kinds[0])))

static int cases, n_kept, n_reported;

static void
one_case(int s, const char *schedule)
{
	struct tb_fd_snapshot before;
	char what[96];
	int ret = 0, bad_fd = -1;
	enum outcome o;
	bool doc = false;

	snprintf(what, sizeof(what), "%s [%s]", scenarios[s].name, schedule);
	REQUIRE(tb_fd_snapshot_take(&before) == 0, "snapshot");
	o = scenarios[s].run(schedule, &ret);
	cases++;
	n_kept += o == KEPT;
	n_reported += o == REPORTED;
	for (int i = 0; scenarios[s].errors[i]; i++)
		doc = doc || scenarios[s].errors[i] == ret;
	tb_note("%s: %s (%d %s)", what, outcome_names[o], ret, ret ? strerror(-ret) : "");
	CHECK(o != BROKEN, "%s: the promise is kept or an error reported", what);
	if (o == REPORTED)
		CHECK(doc, "%s: %d (%s) is a documented error", what, ret, strerror(-ret));
	CHECK_EQ(sbfault_injected(), 1, "the fault was hit");
	CHECK_EQ(sbfault_bad_closes(&bad_fd), 0, "no close() of a closed fd");
	tb_fd_snapshot_check(&before, NULL, 0, what);
	tb_fd_snapshot_free(&before);
}

static int
faults(void)
{
	char last_enotty[64] = "";
	int last_s = -1;

	for (int s = 0; s < N_SCENARIOS; s++) {
		unsigned counts[N_KINDS];
		int ret;

		REQUIRE(scenarios[s].run(NULL, &ret) == KEPT && ret == 0, "%s without faults (%d)",
			scenarios[s].name, ret);
		REQUIRE(scenarios[s].run("", &ret) == KEPT && ret == 0, "%s dry run (%d)",
			scenarios[s].name, ret);
		for (int k = 0; k < N_KINDS; k++)
			counts[k] = sbfault_calls(kinds[k].fn);
		tb_note("%s: the queue made ioctl=%u dup=%u eventfd=%u calls", scenarios[s].name,
			     counts[0], counts[1], counts[2]);
		if (counts[0] + counts[1] + counts[2] == 0)
			tb_note("%s: nothing from %s counted (under ASan its interceptors hide the "
				     "caller)", scenarios[s].name, SCOPE);
		for (int k = 0; k < N_KINDS; k++) {
			for (unsigned i = 1; i <= counts[k]; i++) {
				for (int e = 0; e < 3 && kinds[k].errs[e]; e++) {
					char sched[64];
					bool dmabuf = k == 0 &&
						      sbfault_ioctl_request(i - 1) == DMA_BUF_IOCTL_EXPORT_SYNC_FILE;

					snprintf(sched, sizeof(sched), "%s:%u:%s", kinds[k].fn, i, kinds[k].errs[e]);
					if (dmabuf && strcmp(kinds[k].errs[e], "ENOTTY") == 0) {
						/* F4: process-wide; the very last case. */
						snprintf(last_enotty, sizeof(last_enotty), "%s", sched);
						last_s = s;
						continue;
					}
					one_case(s, sched);
					/* one_case() re-ran the scenario: the counts are its. */
				}
			}
		}
	}
	if (last_s >= 0)
		one_case(last_s, last_enotty);
	tb_note("%d fault cases: %d kept the promise, %d reported a documented error", cases,
		     n_kept, n_reported);
	return tb_finish();
}

/*
 * Fences that completed with an error (libsbfault's fence_error rule makes
 * SYNC_IOC_FILE_INFO say so for signalled fences; docs/reliability.md). The
 * queue surfaces them per frame and never hangs on them:
 *  - an acquire fence that completed with an error is still handed to the
 *    consumer (not closed as "signalled"), whose wait reports the error, and
 *    is counted in stats.fence_errors;
 *  - a release fence that completed with an error lets the slot be reused
 *    (the consumer is done with it, one way or the other): dequeue returns,
 *    and the error is counted.
 * Control: the same without the rule — the acquire fence is closed at queue
 * (signalled: the consumer gets -1) and nothing is counted.
 */
static int
errored(void)
{
	for (int rule = 0; rule < 2; rule++) {
		const char *what = rule ? "fence_error rule" : "control";
		struct sb_buffer_queue *q = new_queue(1, 0);
		struct sb_buffer_queue_stats st;
		struct sbk_fence acq, rel;
		struct vm_later later;
		unsigned slot;
		int fence = -1, ret;
		int64_t t0;

		vm_require_fence(vgem, true, &acq);
		vm_require_fence(vgem, false, &rel);
		REQUIRE(sbk_fence_signal(&acq) == 0, "signal");
		if (rule)
			sbfault_arm("fence_error:*:EIO");

		/* A frame whose producer failed. */
		REQUIRE(sb_buffer_queue_dequeue(q, 0, &slot) == 0, "dequeue");
		REQUIRE(sb_buffer_queue_queue(q, slot, acq.sync_file) == 0, "queue");
		acq.sync_file = -1;
		REQUIRE(sb_buffer_queue_acquire(q, 0, &slot, &fence) == 0, "acquire");
		if (rule) {
			CHECK(fence >= 0, "%s: the consumer gets the errored acquire fence", what);
			CHECK_EQ(sb_sync_file_wait(fence, 0), -EIO, "and its wait reports the error");
		} else {
			CHECK_EQ(fence, -1, "control: a signalled acquire fence is not handed on");
		}
		if (fence >= 0)
			close(fence);

		/* A consumer whose read failed: its release fence completes with an error. */
		REQUIRE(sb_buffer_queue_release(q, slot, rel.sync_file) == 0, "release");
		rel.sync_file = -1;
		t0 = now_ns();
		vm_later_start(&later, 50 * MS, vm_later_signal_fence, &rel);
		/* Generous bounds (valgrind in TCG took 3.3 s): what matters is
		 * that it returns, long before its timeout. */
		ret = sb_buffer_queue_dequeue(q, 60000 * MS, &slot);
		CHECK_EQ(ret, 0, "dequeue returns once the release fence completed");
		CHECK(now_ns() - t0 < 20000 * MS, "%s: within %.0f ms", what,
		      vm_ms(now_ns() - t0));
		vm_later_join(&later);
		if (rule)
			sbfault_disarm();

		REQUIRE(sb_buffer_queue_get_stats(q, &st) == 0, "stats");
		tb_note("%s: fence_errors=%llu reuse_waits=%llu", what,
			     (unsigned long long)st.fence_errors, (unsigned long long)st.reuse_waits);
		CHECK_EQ(st.fence_errors, rule ? 2u : 0u, "stats.fence_errors");
		sbk_fence_destroy(&acq);
		sbk_fence_destroy(&rel);
		sb_buffer_queue_destroy(q);
	}
	return tb_finish();
}

int
main(int argc, char **argv)
{
	if (!dlsym(RTLD_DEFAULT, "sbfault_arm_scoped"))
		tb_skip("libsbfault is not loaded");
	setenv("SYNCBRIDGE_DEBUG", "warn", 0);
	vgem = vm_require_vgem();
	if (argc == 2 && strcmp(argv[1], "--errored") == 0)
		return errored();
	return faults();
}
