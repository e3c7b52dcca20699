/* SPDX-License-Identifier: MIT */
/*
 * bq-host: the buffer queue's state machine and argument checks, without
 * kernel fences (the host has no way to make a sync_file): every fence is -1
 * ("nothing to wait for") or a wrong fd.
 *
 *  - FIFO order, slots handed back least-recently released first;
 *  - mailbox: the newest queued frame wins, older ones are dropped and free;
 *  - wrong-state calls are -EINVAL and change nothing; wrong fds are
 *    -EBADF / -EINVAL and stay the caller's (still open);
 *  - timeouts (-ETIME), a second blocked dequeuer (-EBUSY), close (-EPIPE)
 *    wakes blocked threads;
 *  - stats; fd count unchanged after create/destroy cycles.
 *
 * Timing: a thread that must be blocked in the queue before the main thread
 * acts is waited for, not slept on: its /proc/self/task/TID/syscall shows it
 * asleep in ppoll (dequeue) or futex (acquire's condition wait). A 50 ms
 * sleep did it before, and "one blocked dequeuer at a time" failed (-ETIME
 * instead of -EBUSY) whenever the dequeuer had not got there in 50 ms.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <syncbridge/buffer_queue.h>

#include "harness.h"
#include "kernel.h"

#define MS INT64_C(1000000)

static void
test_create_args(void)
{
	struct sb_buffer_queue *q = (struct sb_buffer_queue *)0x1;

	CHECK_EQ(sb_buffer_queue_create(0, 0, &q), -EINVAL, "0 slots");
	CHECK(q == NULL, "*out is NULL on failure");
	CHECK_EQ(sb_buffer_queue_create(SB_BUFFER_QUEUE_MAX_SLOTS + 1, 0, &q), -EINVAL, "too many");
	CHECK_EQ(sb_buffer_queue_create(2, 0x80, &q), -EINVAL, "unknown flag");
	CHECK_EQ(sb_buffer_queue_create(2, 0, NULL), -EINVAL, "NULL out");
	sb_buffer_queue_destroy(NULL);
	CHECK_EQ(sb_buffer_queue_close(NULL), -EINVAL, "close(NULL)");
	struct sb_buffer_queue_stats st;
	CHECK_EQ(sb_buffer_queue_get_stats(NULL, &st), -EINVAL, "stats(NULL)");
}

static void
test_fifo(void)
{
	struct sb_buffer_queue *q;
	unsigned a, b, c, s;
	int fence = 123;

	REQUIRE(sb_buffer_queue_create(3, 0, &q) == 0, "create");
	CHECK_EQ(sb_buffer_queue_dequeue(q, 0, &a), 0, "dequeue a");
	CHECK_EQ(sb_buffer_queue_dequeue(q, 0, &b), 0, "dequeue b");
	CHECK_EQ(sb_buffer_queue_dequeue(q, 0, &c), 0, "dequeue c");
	CHECK(a != b && b != c && a != c, "three different slots");
	CHECK_EQ(sb_buffer_queue_dequeue(q, 0, &s), -ETIME, "nothing free: poll");
	int64_t t0 = now_ns();
	CHECK_EQ(sb_buffer_queue_dequeue(q, 50 * MS, &s), -ETIME, "nothing free: 50 ms");
	CHECK(now_ns() - t0 >= 50 * MS, "waited the timeout");

	CHECK_EQ(sb_buffer_queue_acquire(q, 0, &s, &fence), -ETIME, "nothing queued");
	CHECK_EQ(fence, -1, "fence -1 on failure");
	CHECK_EQ(sb_buffer_queue_queue(q, b, -1), 0, "queue b");
	CHECK_EQ(sb_buffer_queue_queue(q, a, -1), 0, "queue a");
	CHECK_EQ(sb_buffer_queue_queue(q, a, -1), -EINVAL, "queue a twice");
	CHECK_EQ(sb_buffer_queue_acquire(q, 0, &s, &fence), 0, "acquire");
	CHECK_EQ(s, b, "FIFO: b first");
	CHECK_EQ(fence, -1, "no acquire fence");
	CHECK_EQ(sb_buffer_queue_acquire(q, 0, &s, &fence), 0, "acquire");
	CHECK_EQ(s, a, "then a");
	CHECK_EQ(sb_buffer_queue_release(q, c, -1), -EINVAL, "release a dequeued slot");
	CHECK_EQ(sb_buffer_queue_release(q, 99, -1), -EINVAL, "release a bad slot");
	CHECK_EQ(sb_buffer_queue_release(q, a, -1), 0, "release a");
	CHECK_EQ(sb_buffer_queue_release(q, b, -1), 0, "release b");
	CHECK_EQ(sb_buffer_queue_release(q, b, -1), -EINVAL, "release b twice");
	CHECK_EQ(sb_buffer_queue_dequeue(q, 0, &s), 0, "dequeue");
	CHECK_EQ(s, a, "least recently released first");
	CHECK_EQ(sb_buffer_queue_dequeue(q, 0, &s), 0, "dequeue");
	CHECK_EQ(s, b, "then b");

	struct sb_buffer_queue_stats st;
	CHECK_EQ(sb_buffer_queue_get_stats(q, &st), 0, "stats");
	CHECK_EQ(st.dequeued, 5, "dequeued");
	CHECK_EQ(st.queued, 2, "queued");
	CHECK_EQ(st.acquired, 2, "acquired");
	CHECK_EQ(st.released, 2, "released");
	CHECK_EQ(st.dropped, 0, "dropped");
	CHECK_EQ(st.reuse_waits, 0, "reuse waits");
	sb_buffer_queue_destroy(q);
}

static void
test_mailbox(void)
{
	struct sb_buffer_queue *q;
	unsigned a, b, c, s;
	int fence;

	REQUIRE(sb_buffer_queue_create(3, SB_BUFFER_QUEUE_MAILBOX, &q) == 0, "create");
	sb_buffer_queue_dequeue(q, 0, &a);
	sb_buffer_queue_dequeue(q, 0, &b);
	sb_buffer_queue_dequeue(q, 0, &c);
	CHECK_EQ(sb_buffer_queue_queue(q, a, -1), 0, "queue a");
	CHECK_EQ(sb_buffer_queue_queue(q, b, -1), 0, "queue b");
	CHECK_EQ(sb_buffer_queue_queue(q, c, -1), 0, "queue c");
	CHECK_EQ(sb_buffer_queue_acquire(q, 0, &s, &fence), 0, "acquire");
	CHECK_EQ(s, c, "mailbox: the newest");
	CHECK_EQ(sb_buffer_queue_acquire(q, 0, &s, &fence), -ETIME, "the others were dropped");
	CHECK_EQ(sb_buffer_queue_dequeue(q, 0, &s), 0, "a dropped slot is free again");
	CHECK_EQ(s, a, "the older dropped one first");
	CHECK_EQ(sb_buffer_queue_dequeue(q, 0, &s), 0, "dequeue");
	CHECK_EQ(s, b, "then b");
	struct sb_buffer_queue_stats st;
	sb_buffer_queue_get_stats(q, &st);
	CHECK_EQ(st.dropped, 2, "two dropped");
	sb_buffer_queue_destroy(q);
}

static void
test_bad_fds(void)
{
	struct sb_buffer_queue *q;
	unsigned s;
	int p[2];

	REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe");
	REQUIRE(sb_buffer_queue_create(2, 0, &q) == 0, "create");
	CHECK_EQ(sb_buffer_queue_dequeue(q, 0, &s), 0, "dequeue");
	CHECK_EQ(sb_buffer_queue_queue(q, s, p[0]), -EINVAL, "a pipe is not a sync_file");
	CHECK(sbk_fd_is_open(p[0]), "the caller's fd stays open on failure");
	CHECK_EQ(sb_buffer_queue_queue(q, s, 1000), -EBADF, "closed fd");
	CHECK_EQ(sb_buffer_queue_queue(q, s, -5), -EBADF, "negative fd other than -1");
	CHECK_EQ(sb_buffer_queue_set_dmabuf(q, s, p[0]), -EINVAL, "a pipe is not a dma-buf");
	CHECK_EQ(sb_buffer_queue_set_dmabuf(q, s, 1000), -EBADF, "closed dma-buf fd");
	CHECK_EQ(sb_buffer_queue_set_dmabuf(q, 7, -1), -EINVAL, "bad slot");
	CHECK_EQ(sb_buffer_queue_set_dmabuf(q, s, -1), 0, "-1 forgets");
	CHECK_EQ(sb_buffer_queue_queue(q, s, -1), 0, "queue");
	int fence;
	CHECK_EQ(sb_buffer_queue_acquire(q, 0, &s, &fence), 0, "acquire");
	CHECK_EQ(sb_buffer_queue_release(q, s, p[1]), -EINVAL, "release with a pipe");
	CHECK(sbk_fd_is_open(p[1]), "still the caller's");
	CHECK_EQ(sb_buffer_queue_release_dmabuf(q, s), -EINVAL, "release_dmabuf without a dma-buf");
	CHECK_EQ(sb_buffer_queue_release(q, s, -1), 0, "the slot is still ACQUIRED after the failures");
	CHECK_EQ(sb_buffer_queue_acquire(q, 0, NULL, &fence), -EINVAL, "NULL slot");
	CHECK_EQ(sb_buffer_queue_dequeue(q, 0, NULL), -EINVAL, "NULL slot");
	sb_buffer_queue_destroy(q);
	close(p[0]);
	close(p[1]);
}

struct blocked {
	struct sb_buffer_queue *q;
	bool dequeue;
	atomic_int tid; /* the thread's, once it runs */
	int ret;
	unsigned slot;
};

static void *
blocked_main(void *arg)
{
	struct blocked *b = arg;
	int fence;
	atomic_store(&b->tid, (int)gettid());
	b->ret = b->dequeue ? sb_buffer_queue_dequeue(b->q, SB_TIMEOUT_INFINITE, &b->slot)
			    : sb_buffer_queue_acquire(b->q, SB_TIMEOUT_INFINITE, &b->slot, &fence);
	return NULL;
}

/*
 * Wait (up to 10 s) until b's thread sleeps in the queue: in ppoll (a
 * dequeue waits for a free slot or a release fence there; nothing else in
 * its path sleeps) or in futex (an acquire's condition wait; the queue's
 * mutex is never contended here). /proc/PID/syscall names the system call a
 * sleeping thread is in ("running" otherwise).
 */
static void
wait_blocked(struct blocked *b)
{
	long want = b->dequeue ? SYS_ppoll : SYS_futex;
	int64_t end = now_ns() + 10000 * MS;
	struct timespec ms = { 0, MS };
	char path[64];

	for (;;) {
		int tid = atomic_load(&b->tid);
		if (tid > 0) {
			long nr = -1;
			FILE *f;

			snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
			f = fopen(path, "r");
			REQUIRE(f, "%s: %s (the test needs it to see the thread block)", path, strerror(errno));
			if (fscanf(f, "%ld", &nr) != 1)
				nr = -1;
			fclose(f);
			if (nr == want)
				return;
		}
		REQUIRE(now_ns() < end, "the %s thread did not block in the queue within 10 s",
			b->dequeue ? "dequeue" : "acquire");
		nanosleep(&ms, NULL);
	}
}

static void
test_threads(void)
{
	struct sb_buffer_queue *q;
	unsigned s;
	pthread_t t1, t2, t3;

	REQUIRE(sb_buffer_queue_create(1, 0, &q) == 0, "create");
	CHECK_EQ(sb_buffer_queue_dequeue(q, 0, &s), 0, "dequeue the only slot");

	/* A consumer blocked in acquire wakes when the frame is queued. */
	struct blocked cons = { .q = q };
	pthread_create(&t1, NULL, blocked_main, &cons);
	wait_blocked(&cons);
	CHECK_EQ(sb_buffer_queue_queue(q, s, -1), 0, "queue");
	pthread_join(t1, NULL);
	CHECK_EQ(cons.ret, 0, "the blocked consumer got it");

	/* A producer blocked in dequeue wakes on release; a second one is -EBUSY. */
	struct blocked prod = { .q = q, .dequeue = true };
	pthread_create(&t2, NULL, blocked_main, &prod);
	wait_blocked(&prod);
	CHECK_EQ(sb_buffer_queue_dequeue(q, 10 * MS, &s), -EBUSY, "one blocked dequeuer at a time");
	CHECK_EQ(sb_buffer_queue_release(q, cons.slot, -1), 0, "release");
	pthread_join(t2, NULL);
	CHECK_EQ(prod.ret, 0, "the blocked producer got it");

	/* close() wakes both kinds of waiters with -EPIPE. */
	struct blocked c2 = { .q = q }, p2 = { .q = q, .dequeue = true };
	pthread_create(&t1, NULL, blocked_main, &c2);
	pthread_create(&t3, NULL, blocked_main, &p2);
	wait_blocked(&c2);
	wait_blocked(&p2);
	CHECK_EQ(sb_buffer_queue_close(q), 0, "close");
	pthread_join(t1, NULL);
	pthread_join(t3, NULL);
	CHECK_EQ(c2.ret, -EPIPE, "acquire after close");
	CHECK_EQ(p2.ret, -EPIPE, "dequeue after close");
	CHECK_EQ(sb_buffer_queue_queue(q, prod.slot, -1), 0, "queue still works after close");
	int fence;
	CHECK_EQ(sb_buffer_queue_acquire(q, 0, &s, &fence), 0, "a queued frame is still handed out");
	CHECK_EQ(sb_buffer_queue_acquire(q, 0, &s, &fence), -EPIPE, "then -EPIPE");
	sb_buffer_queue_destroy(q);
}

int
main(void)
{
	int fds0 = tb_count_fds();

	test_create_args();
	test_fifo();
	test_mailbox();
	test_bad_fds();
	test_threads();
	for (int i = 0; i < 1000; i++) {
		struct sb_buffer_queue *q;
		REQUIRE(sb_buffer_queue_create(4, 0, &q) == 0, "create");
		sb_buffer_queue_destroy(q);
	}
	CHECK_EQ(tb_count_fds(), fds0, "fd count after 1,000 create/destroy");
	return tb_finish();
}
