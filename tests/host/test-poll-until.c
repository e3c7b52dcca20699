/* SPDX-License-Identifier: MIT */
/*
 * sb_poll_until() (src/util.h): poll one fd until an absolute deadline,
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
 * the machine may be a noisy 2-core VM.
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

static atomic_long signals_delivered;

static void
on_sigusr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&signals_delivered, 1);
}

struct bombarder {
	pthread_t target;
	pthread_t thread;
	atomic_bool stop;
	long sent;
};

static void *
bombard(void *data)
{
	struct bombarder *b = data;
	struct timespec ms = { 0, 1000000 };

	while (!atomic_load(&b->stop)) {
		if (pthread_kill(b->target, SIGUSR1) == 0)
			b->sent++;
		nanosleep(&ms, NULL);
	}
	return NULL;
}

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
	install_handler();
	b->target = pthread_self();
	b->sent = 0;
	atomic_init(&b->stop, false);
	REQUIRE(pthread_create(&b->thread, NULL, bombard, b) == 0, "pthread_create");
	/* Let it get going so the first signals land inside the poll. */
	struct timespec t = { 0, 5 * 1000000 };
	nanosleep(&t, NULL);
}

static void
bombard_stop(struct bombarder *b)
{
	atomic_store(&b->stop, true);
	pthread_join(b->thread, NULL);
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

	fds_before = sb_test_count_fds();
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
		sb_test_note("control: bare ppoll() interrupted after %lld us",
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
	CHECK(sig1 - sig0 > 50, "only %ld signals were delivered during the wait (%ld sent in "
	      "all): the bombardment did not happen", sig1 - sig0, b.sent);
	sb_test_note("eintr-timeout: %lld ms, %ld signals delivered during the wait",
		     (long long)((end - start) / MS), sig1 - sig0);

	close(p[0]);
	close(p[1]);
	CHECK_EQ(sb_test_count_fds(), fds_before, "fd count after eintr-timeout");
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
	CHECK(sig1 - sig0 > 20, "%s: only %ld signals delivered during the wait", what,
	      sig1 - sig0);
	sb_test_note("%s: POLLIN after %lld ms, %ld signals delivered", what,
		     (long long)((end - start) / MS), sig1 - sig0);

	close(p[0]);
	close(p[1]);
}

static void
case_eintr_wakeup(void)
{
	int fds_before = sb_test_count_fds();

	wakeup_once(-1, "eintr-wakeup, no deadline");
	wakeup_once(5 * S, "eintr-wakeup, deadline +5 s");
	CHECK_EQ(sb_test_count_fds(), fds_before, "fd count after eintr-wakeup");
}

static void
case_immediate(void)
{
	int p[2], q[2], ret, fds_before;
	int64_t start, end;

	fds_before = sb_test_count_fds();
	REQUIRE(pipe2(p, O_CLOEXEC) == 0 && pipe2(q, O_CLOEXEC) == 0, "pipe2: %s",
		strerror(errno));
	watchdog(10);

	/* Not ready, timeout 0 (deadline = now): -ETIME at once. */
	start = sb_now_ns();
	ret = sb_poll_until(p[0], POLLIN, sb_deadline_from_timeout(sb_now_ns(), 0));
	end = sb_now_ns();
	CHECK_EQ(ret, -ETIME, "not-ready pipe, timeout 0");
	CHECK(end - start < 100 * MS, "timeout 0 took %lld ms", (long long)((end - start) / MS));

	/* Not ready, deadline long past. */
	start = sb_now_ns();
	ret = sb_poll_until(p[0], POLLIN, 0);
	end = sb_now_ns();
	CHECK_EQ(ret, -ETIME, "not-ready pipe, deadline in the past");
	CHECK(end - start < 100 * MS, "past deadline took %lld ms",
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
	CHECK_EQ(sb_test_count_fds(), fds_before, "fd count after immediate");
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
	ret = sb_poll_until(fd, POLLIN, start + 2 * S);
	end = sb_now_ns();
	CHECK_EQ(ret, -EBADF, "closed fd, deadline +2 s");
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
	return sb_test_finish();
}
