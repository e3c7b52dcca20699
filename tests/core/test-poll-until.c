/* SPDX-License-Identifier: MIT */
/*
 * sb_poll_until() (src/core/util.h): poll one fd until an absolute deadline,
 * resuming with the remaining time after EINTR.
 *
 *   test-poll-until eintr-timeout  a never-ready fd, 300 ms deadline, SIGUSR1
 *                                  (no SA_RESTART) every ~1 ms: -ETIME, not
 *                                  before the deadline, not much after it;
 *                                  control: a bare ppoll() is cut short (EINTR)
 *   test-poll-until eintr-wakeup   the fd becomes readable at +100 ms from
 *                                  another thread, same bombardment: POLLIN,
 *                                  promptly (with and without a deadline)
 *   test-poll-until immediate      deadline now / in the past: -ETIME at once
 *                                  for a not-ready fd, the revents for a ready one
 *   test-poll-until nval           a closed fd (POLLNVAL): -EBADF, no waiting
 *   test-poll-until                all of the above
 *
 * Timing bounds are generous (this is a correctness check, not a benchmark):
 * the machine may be a noisy 2-core VM (docs/testing.md, "Timing"):
 *  - the signals come from a 1 ms POSIX timer aimed at the waiting thread
 *    (SIGEV_THREAD_ID), not from a thread that sleeps 1 ms between
 *    pthread_kill()s: under a busy loop on each core that thread went 215 ms
 *    without running, the control's bare ppoll() timed out instead of being
 *    interrupted and only 3 signals reached a 300 ms wait. The kernel
 *    generates timer signals on time whoever gets the CPU; each one the
 *    waiting thread handles is one EINTR in its wait;
 *  - the bombardment is known to be under way (a signal was handled), not
 *    assumed to be after a sleep;
 *  - "signals during the wait" is a premise (the wait was interrupted and
 *    resumed more than once): >= 3. With the timer: 300 in a 300 ms wait and
 *    100 in a 100 ms one, idle or with a busy loop on each of the 2 cores
 *    (the thread bombarder: 87-253, and 3 under that load);
 *  - lower bounds on durations are the kernel's (a deadline never passes
 *    early); upper bounds only catch a wait that restarts its full timeout or
 *    misses its wake-up, which hangs until the 10 s watchdog: 2 s against a
 *    typical 300 ms (100 ms for a wake-up), 1 s for calls that must not
 *    block at all (typically microseconds).
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "harness.h"
#include "util.h"

#define MS INT64_C(1000000)
#define S INT64_C(1000000000)

/* ---- signal bombardment ---------------------------------------------------- */

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* The fewest signals a wait must have taken to count as interrupted (header). */
#define MIN_SIGNALS 3

static atomic_long signals_delivered;

static void
on_sigusr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&signals_delivered, 1);
}

/* A 1 ms timer that signals the thread that started it. */
struct bombarder {
	timer_t timer;
};

static void
install_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;
	sa.sa_flags = 0; /* no SA_RESTART: every blocking call sees EINTR */
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction: %s", strerror(errno));
}

static void
bombard_start(struct bombarder *b)
{
	struct sigevent sev;
	struct itimerspec every_ms = { .it_interval = { 0, 1000000 }, .it_value = { 0, 1000000 } };
	long before;

	install_handler();
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
	sev.sigev_notify_thread_id = gettid();
	REQUIRE(timer_create(CLOCK_MONOTONIC, &sev, &b->timer) == 0, "timer_create: %s",
		strerror(errno));
	before = atomic_load(&signals_delivered);
	REQUIRE(timer_settime(b->timer, 0, &every_ms, NULL) == 0, "timer_settime: %s", strerror(errno));
	/* Under way once this thread has handled one: wait for that, not a fixed
	 * time. A signal between the load and pause() only means waiting for the
	 * next one, 1 ms later. */
	while (atomic_load(&signals_delivered) == before)
		pause();
}

static void
bombard_stop(struct bombarder *b)
{
	timer_delete(b->timer);
}

/* ---- a writer that makes a pipe readable later ------------------------------ */

struct delayed_write {
	int fd;
	int64_t delay_ns;
	pthread_t thread;
};

static void *
write_later(void *data)
{
	struct delayed_write *w = data;
	struct timespec t = { (time_t)(w->delay_ns / S), (long)(w->delay_ns % S) };

	/* clock_nanosleep restarts after signals itself only without a handler; loop. */
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &t, &t) == EINTR)
		;
	if (write(w->fd, "!", 1) != 1)
		abort();
	return NULL;
}

/* ---- watchdog ------------------------------------------------------------------ */

static void
watchdog_fired(int sig)
{
	static const char msg[] = "Bail out! sb_poll_until did not return (watchdog)\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

static void
watchdog(unsigned seconds)
{
	signal(SIGALRM, watchdog_fired);
	alarm(seconds);
}

/* ---- cases ----------------------------------------------------------------------- */

static void
case_eintr_timeout(void)
{
	struct bombarder b;
	int p[2], fds_before, ret;
	long sig0, sig1;
	int64_t start, end, deadline;

	fds_before = tb_count_fds();
	REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));
	bombard_start(&b);

	/* Control: without the resume loop the wait is cut short. */
	{
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		struct timespec ts = { 0, 300 * 1000000 };

		start = sb_now_ns();
		ret = ppoll(&pfd, 1, &ts, NULL);
		end = sb_now_ns();
		REQUIRE(ret == -1 && errno == EINTR,
			"control: a bare ppoll() under SIGUSR1 bombardment returned %d (%s) after "
			"%lld ms, want EINTR: signals do not interrupt it, so this test proves nothing",
			ret, ret < 0 ? strerror(errno) : "-", (long long)((end - start) / MS));
		tb_note("control: bare ppoll() interrupted after %lld us",
			     (long long)((end - start) / 1000));
	}

	watchdog(10);
	sig0 = atomic_load(&signals_delivered);
	start = sb_now_ns();
	deadline = start + 300 * MS;
	ret = sb_poll_until(p[0], POLLIN, deadline);
	end = sb_now_ns();
	sig1 = atomic_load(&signals_delivered);
	alarm(0);
	bombard_stop(&b);

	CHECK_EQ(ret, -ETIME, "sb_poll_until(never-ready pipe, +300 ms) under signals");
	CHECK(end >= deadline, "returned %lld us before the deadline (an EINTR restart or an "
	      "early timeout)", (long long)((deadline - end) / 1000));
	CHECK(end - start < 2 * S, "took %lld ms for a 300 ms deadline (restarted the full "
	      "timeout after each signal?)", (long long)((end - start) / MS));
	CHECK(sig1 - sig0 >= MIN_SIGNALS, "only %ld signals were delivered during the wait: the "
	      "bombardment did not happen", sig1 - sig0);
	tb_note("eintr-timeout: %lld ms, %ld signals delivered during the wait",
		     (long long)((end - start) / MS), sig1 - sig0);

	close(p[0]);
	close(p[1]);
	CHECK_EQ(tb_count_fds(), fds_before, "fd count after eintr-timeout");
}

static void
wakeup_once(int64_t deadline_offset, const char *what)
{
	struct bombarder b;
	struct delayed_write w;
	int p[2], ret;
	long sig0, sig1;
	int64_t start, end, deadline;

	REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));
	bombard_start(&b);
	watchdog(10);

	sig0 = atomic_load(&signals_delivered);
	start = sb_now_ns();
	deadline = deadline_offset < 0 ? INT64_MAX : start + deadline_offset;
	w.fd = p[1];
	w.delay_ns = 100 * MS;
	REQUIRE(pthread_create(&w.thread, NULL, write_later, &w) == 0, "pthread_create");
	ret = sb_poll_until(p[0], POLLIN, deadline);
	end = sb_now_ns();
	sig1 = atomic_load(&signals_delivered);
	alarm(0);
	bombard_stop(&b);
	pthread_join(w.thread, NULL);

	CHECK(ret > 0 && (ret & POLLIN), "%s: returned %d (%s), want POLLIN", what, ret,
	      ret < 0 ? strerror(-ret) : "revents");
	CHECK(end - start >= 100 * MS, "%s: returned after %lld ms, before the write at +100 ms",
	      what, (long long)((end - start) / MS));
	CHECK(end - start < 2 * S, "%s: took %lld ms to notice a write at +100 ms", what,
	      (long long)((end - start) / MS));
	CHECK(sig1 - sig0 >= MIN_SIGNALS, "%s: only %ld signals delivered during the wait", what,
	      sig1 - sig0);
	tb_note("%s: POLLIN after %lld ms, %ld signals delivered", what,
		     (long long)((end - start) / MS), sig1 - sig0);

	close(p[0]);
	close(p[1]);
}

static void
case_eintr_wakeup(void)
{
	int fds_before = tb_count_fds();

	wakeup_once(-1, "eintr-wakeup, no deadline");
	wakeup_once(5 * S, "eintr-wakeup, deadline +5 s");
	CHECK_EQ(tb_count_fds(), fds_before, "fd count after eintr-wakeup");
}

static void
case_immediate(void)
{
	int p[2], q[2], ret, fds_before;
	int64_t start, end;

	fds_before = tb_count_fds();
	REQUIRE(pipe2(p, O_CLOEXEC) == 0 && pipe2(q, O_CLOEXEC) == 0, "pipe2: %s",
		strerror(errno));
	watchdog(10);

	/* Not ready, timeout 0 (deadline = now): -ETIME at once. */
	start = sb_now_ns();
	ret = sb_poll_until(p[0], POLLIN, sb_deadline_from_timeout(sb_now_ns(), 0));
	end = sb_now_ns();
	CHECK_EQ(ret, -ETIME, "not-ready pipe, timeout 0");
	CHECK(end - start < 1 * S, "timeout 0 took %lld ms", (long long)((end - start) / MS));

	/* Not ready, deadline long past. */
	start = sb_now_ns();
	ret = sb_poll_until(p[0], POLLIN, 0);
	end = sb_now_ns();
	CHECK_EQ(ret, -ETIME, "not-ready pipe, deadline in the past");
	CHECK(end - start < 1 * S, "past deadline took %lld ms",
	      (long long)((end - start) / MS));

	/* Ready: the revents, even with no time left (poll semantics of timeout 0). */
	REQUIRE(write(p[1], "x", 1) == 1, "write: %s", strerror(errno));
	ret = sb_poll_until(p[0], POLLIN, sb_deadline_from_timeout(sb_now_ns(), 0));
	CHECK(ret > 0 && (ret & POLLIN), "ready pipe, timeout 0: got %d, want POLLIN", ret);
	ret = sb_poll_until(p[0], POLLIN, 0);
	CHECK(ret > 0 && (ret & POLLIN), "ready pipe, deadline in the past: got %d, want POLLIN",
	      ret);
	ret = sb_poll_until(p[0], POLLIN, INT64_MAX);
	CHECK(ret > 0 && (ret & POLLIN), "ready pipe, no deadline: got %d, want POLLIN", ret);

	/* Only what was asked for (plus the always-reported error bits). */
	ret = sb_poll_until(p[1], POLLOUT, 0);
	CHECK(ret > 0 && (ret & POLLOUT) && !(ret & POLLIN),
	      "empty pipe write end, POLLOUT: got 0x%x", ret > 0 ? ret : 0);

	/* Hang-up is reported even though only POLLIN was asked for: never a timeout. */
	close(q[1]);
	ret = sb_poll_until(q[0], POLLIN, INT64_MAX);
	CHECK(ret > 0 && (ret & POLLHUP), "pipe whose writer closed: got %d, want POLLHUP", ret);
	alarm(0);

	close(p[0]);
	close(p[1]);
	close(q[0]);
	CHECK_EQ(tb_count_fds(), fds_before, "fd count after immediate");
}

static void
case_nval(void)
{
	int fd, ret;
	int64_t start, end;

	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0, "open /dev/null: %s", strerror(errno));
	close(fd);

	watchdog(10);
	start = sb_now_ns();
	ret = sb_poll_until(fd, POLLIN, start + 5 * S);
	end = sb_now_ns();
	CHECK_EQ(ret, -EBADF, "closed fd, deadline +5 s");
	CHECK(end - start < 1 * S, "closed fd: took %lld ms instead of failing at once",
	      (long long)((end - start) / MS));

	ret = sb_poll_until(fd, POLLIN, INT64_MAX);
	CHECK_EQ(ret, -EBADF, "closed fd, no deadline");
	ret = sb_poll_until(fd, POLLIN, 0);
	CHECK_EQ(ret, -EBADF, "closed fd, deadline in the past");
	ret = sb_poll_until(INT_MAX, POLLIN, INT64_MAX);
	CHECK_EQ(ret, -EBADF, "fd INT_MAX (never open), no deadline");
	alarm(0);
}

static const struct {
	const char *name;
	void (*run)(void);
} cases[] = {
	{ "eintr-timeout", case_eintr_timeout },
	{ "eintr-wakeup", case_eintr_wakeup },
	{ "immediate", case_immediate },
	{ "nval", case_nval },
};

int
main(int argc, char **argv)
{
	bool found = false;

	for (size_t i = 0; i < SB_ARRAY_SIZE(cases); i++) {
		if (argc > 1 && strcmp(argv[1], cases[i].name) != 0)
			continue;
		found = true;
		cases[i].run();
	}
	if (!found) {
		fprintf(stderr, "usage: %s [eintr-timeout|eintr-wakeup|immediate|nval]\n", argv[0]);
		return 2;
	}
	return tb_finish();
}
