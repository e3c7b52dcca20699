/* SPDX-License-Identifier: MIT */
/*
 * The bad-input matrix shared by the host tier's *-bad-fds tests: one table
 * of fd makers (every kind of fd a caller could wrongly hand us on a machine
 * without DRM, dma-bufs or sync_files), one table of calls per module, and a
 * runner that checks each call on each kind for:
 *  - the documented error: -EBADF for a number that is not an open fd,
 *    -EINVAL for an open fd of the wrong kind (for DRM functions: "not a DRM
 *    device" is -EINVAL too, not the kernel's ENOTTY), or false for the bool
 *    queries;
 *  - output fds left at -1, output pointers left NULL, an accumulator left
 *    as it was;
 *  - the caller's fd still open, still the same file, with the same fd and
 *    file status flags, and for pipes and sockets still carrying data;
 *  - no fd created or closed behind the caller's back (fd count);
 *  - no hang: every call runs under a watchdog (readable fds such as an
 *    eventfd with a count or an expired timerfd catch a function that polls
 *    before it validates).
 *
 * Header-only on purpose: the harness keeps its counters in static
 * variables, so the runner must live in the test's own translation unit.
 * Include it from exactly one .c file, after harness.h.
 */
#ifndef TB_FD_KINDS_H
#define TB_FD_KINDS_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "harness.h"

/* What one call under test reports besides its return value. */
struct call_result {
	bool returns_bool; /* the function returns bool: expect false */
	bool has_out_fd;   /* out_fd must be -1 afterwards */
	int out_fd;
	bool has_out_ptr; /* out_ptr must be NULL afterwards */
	const void *out_ptr;
	bool has_acc; /* accumulator must be unchanged (value and still open) */
	int acc_before, acc_after;
};

/*
 * One row of a module's table: a function taking the bad fd, and the other
 * arguments the row calls it with (what they mean is the function's own:
 * an access, a timeout, a point...), so that one function serves every row
 * that calls the same library function.
 */
struct bad_call {
	const char *name;
	/* Call the function under test with the bad fd and arg[]; fill *r; return its result. */
	int (*fn)(int fd, const int64_t *arg, struct call_result *r);
	int64_t arg[3];
	/* Instead of fn: a bool query of the fd alone (sb_*_is_*): must say false. */
	bool (*query)(int fd);
};

/* A value no call may leave in an out-fd on failure (only -1 is allowed). */
#define OUT_FD_SENTINEL 4242
/* A value no call may leave in an out-pointer on failure (only NULL is allowed). */
#define OUT_PTR_SENTINEL ((void *)(uintptr_t)0x5b5b5b5b)

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Seconds one call may take before the watchdog calls it a hang. */
#define CALL_WATCHDOG_S 5

/* One made fd. `fd` is what the call gets; `peer` the other end of a pipe/socket. */
struct fd_inst {
	int fd;
	int peer;
	bool fd_readable_end; /* for pipes: fd is the read end (data flows peer → fd) */
};

struct fd_kind {
	const char *name;
	int (*make)(struct fd_inst *in); /* 0 or -errno */
	int expect;                      /* what an errno-returning call must return */
	bool open;                       /* fd is an open descriptor */
	bool data;                       /* fd/peer carry data: check they still do */
	bool optional;                   /* may be missing on this kernel: note, not fail */
};

/* A maker's last step: fd (from a call that sets errno when it fails) is the one to hand over. */
static int
fd_inst_take(struct fd_inst *in, int fd)
{
	if (fd < 0)
		return -errno;
	in->fd = fd;
	return 0;
}

/* Undo fd_inst_take() when a later step of the maker failed (errno set): -errno. */
static int
fd_inst_drop(struct fd_inst *in)
{
	int ret = -errno;

	close(in->fd);
	in->fd = -1;
	return ret;
}

static int
mk_minus_one(struct fd_inst *in)
{
	in->fd = -1;
	return 0;
}

static int
mk_int_min(struct fd_inst *in)
{
	in->fd = INT_MIN;
	return 0;
}

static int
mk_int_max(struct fd_inst *in)
{
	in->fd = INT_MAX;
	return 0;
}

static int
mk_closed(struct fd_inst *in)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	in->fd = fd; /* the lowest free number: the library must not open it behind us */
	return 0;
}

static int
mk_pipe(struct fd_inst *in, bool read_end, bool with_data)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if (with_data && write(p[1], "x", 1) != 1) {
		close(p[0]);
		close(p[1]);
		return -EIO;
	}
	in->fd = read_end ? p[0] : p[1];
	in->peer = read_end ? p[1] : p[0];
	in->fd_readable_end = read_end;
	return 0;
}

static int
mk_pipe_read(struct fd_inst *in)
{
	return mk_pipe(in, true, false);
}

static int
mk_pipe_read_data(struct fd_inst *in)
{
	return mk_pipe(in, true, true);
}

static int
mk_pipe_write(struct fd_inst *in)
{
	return mk_pipe(in, false, false);
}

static int
mk_memfd(struct fd_inst *in)
{
	int ret = fd_inst_take(in, (int)syscall(SYS_memfd_create, "sb-test", MFD_CLOEXEC));

	if (ret == 0 && ftruncate(in->fd, 4096) < 0)
		ret = fd_inst_drop(in);
	return ret;
}

static int
mk_regular(struct fd_inst *in)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/sb-host-test-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (write(fd, "data", 4) != 4) {
		close(fd);
		return -EIO;
	}
	in->fd = fd;
	return 0;
}

static int
mk_open(struct fd_inst *in, const char *path, int flags)
{
	return fd_inst_take(in, open(path, flags | O_CLOEXEC));
}

static int
mk_dev_null(struct fd_inst *in)
{
	return mk_open(in, "/dev/null", O_RDWR);
}

static int
mk_dir(struct fd_inst *in)
{
	return mk_open(in, "/", O_RDONLY | O_DIRECTORY);
}

static int
mk_dir_path(struct fd_inst *in)
{
	return mk_open(in, "/", O_PATH | O_DIRECTORY);
}

static int
mk_proc_stat(struct fd_inst *in)
{
	return mk_open(in, "/proc/self/stat", O_RDONLY);
}

static int
mk_eventfd(struct fd_inst *in)
{
	/* A count of 1: readable, so polling it "succeeds" at once. */
	return fd_inst_take(in, eventfd(1, EFD_CLOEXEC));
}

static int
mk_socketpair(struct fd_inst *in)
{
	int s[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) < 0)
		return -errno;
	in->fd = s[0];
	in->peer = s[1];
	in->fd_readable_end = true; /* bidirectional; checked peer → fd */
	return 0;
}

static int
mk_udp(struct fd_inst *in)
{
	return fd_inst_take(in, socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
}

static int
mk_epoll(struct fd_inst *in)
{
	return fd_inst_take(in, epoll_create1(EPOLL_CLOEXEC));
}

static int
mk_timerfd(struct fd_inst *in)
{
	/* Armed to expire at once: readable. */
	struct itimerspec its = { .it_value = { .tv_sec = 0, .tv_nsec = 1 } };
	int ret = fd_inst_take(in, timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));

	if (ret == 0 && timerfd_settime(in->fd, 0, &its, NULL) < 0)
		ret = fd_inst_drop(in);
	return ret;
}

static int
mk_signalfd(struct fd_inst *in)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR2);
	return fd_inst_take(in, signalfd(-1, &mask, SFD_CLOEXEC));
}

static int
mk_pidfd(struct fd_inst *in)
{
#ifdef SYS_pidfd_open
	return fd_inst_take(in, (int)syscall(SYS_pidfd_open, getpid(), 0));
#else
	(void)in;
	return -ENOSYS;
#endif
}

static const struct fd_kind fd_kinds[] = {
	{ "-1", mk_minus_one, -EBADF, false, false, false },
	{ "INT_MIN", mk_int_min, -EBADF, false, false, false },
	{ "INT_MAX (never open)", mk_int_max, -EBADF, false, false, false },
	{ "closed fd number", mk_closed, -EBADF, false, false, false },
	{ "pipe read end", mk_pipe_read, -EINVAL, true, true, false },
	{ "pipe read end with data pending", mk_pipe_read_data, -EINVAL, true, true, false },
	{ "pipe write end", mk_pipe_write, -EINVAL, true, true, false },
	{ "memfd", mk_memfd, -EINVAL, true, false, false },
	{ "regular file", mk_regular, -EINVAL, true, false, false },
	{ "/dev/null", mk_dev_null, -EINVAL, true, false, false },
	{ "eventfd (count 1, readable)", mk_eventfd, -EINVAL, true, false, false },
	{ "unix socket", mk_socketpair, -EINVAL, true, true, false },
	{ "udp socket", mk_udp, -EINVAL, true, false, true },
	{ "directory", mk_dir, -EINVAL, true, false, false },
	{ "directory, O_PATH", mk_dir_path, -EINVAL, true, false, false },
	{ "epoll", mk_epoll, -EINVAL, true, false, false },
	{ "timerfd (expired, readable)", mk_timerfd, -EINVAL, true, false, false },
	{ "signalfd", mk_signalfd, -EINVAL, true, false, false },
	{ "pidfd", mk_pidfd, -EINVAL, true, false, true },
	{ "/proc/self/stat", mk_proc_stat, -EINVAL, true, false, false },
};

static void
fd_inst_close(struct fd_inst *in)
{
	if (in->fd >= 0)
		close(in->fd);
	if (in->peer >= 0)
		close(in->peer);
	in->fd = in->peer = -1;
}

/* ---- watchdog ------------------------------------------------------------ */

static const char *volatile watchdog_call;
static const char *volatile watchdog_kind;

static void
watchdog_fired(int sig)
{
	char msg[512];
	int len;

	(void)sig;
	len = snprintf(msg, sizeof(msg),
		       "Bail out! %s on %s did not return within %d s (waits instead of "
		       "rejecting the fd?)\n",
		       watchdog_call ? watchdog_call : "?", watchdog_kind ? watchdog_kind : "?",
		       CALL_WATCHDOG_S);
	if (len > 0 && write(STDOUT_FILENO, msg, (size_t)len) < 0)
		_exit(1);
	_exit(1);
}

static void
watchdog_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = watchdog_fired;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
}

/* ---- per-call checks ------------------------------------------------------ */

struct fd_snapshot {
	struct stat st;
	int fd_flags, fl_flags;
};

static void
snapshot(int fd, struct fd_snapshot *s)
{
	REQUIRE(fstat(fd, &s->st) == 0, "fstat(%d): %s", fd, strerror(errno));
	s->fd_flags = fcntl(fd, F_GETFD);
	s->fl_flags = fcntl(fd, F_GETFL);
	REQUIRE(s->fd_flags >= 0 && s->fl_flags >= 0, "fcntl(%d): %s", fd, strerror(errno));
}

/* The caller's fd must be exactly what it was: open, same file, same flags. */
static void
check_fd_intact(int fd, const struct fd_snapshot *before, const char *what)
{
	struct fd_snapshot after;

	if (fcntl(fd, F_GETFD) < 0) {
		CHECK(false, "%s: the caller's fd %d was closed (%s)", what, fd, strerror(errno));
		return;
	}
	snapshot(fd, &after);
	CHECK(after.st.st_dev == before->st.st_dev && after.st.st_ino == before->st.st_ino,
	      "%s: fd %d now refers to another file", what, fd);
	CHECK(after.fd_flags == before->fd_flags, "%s: fd flags changed 0x%x -> 0x%x", what,
	      before->fd_flags, after.fd_flags);
	CHECK(after.fl_flags == before->fl_flags, "%s: file status flags changed 0x%x -> 0x%x",
	      what, before->fl_flags, after.fl_flags);
}

/* A pipe or socket must still carry data, in the direction it did before. */
static void
check_data_flows(const struct fd_inst *in, const char *what)
{
	int from = in->fd_readable_end ? in->peer : in->fd;
	int to = in->fd_readable_end ? in->fd : in->peer;
	char buf[8];
	ssize_t n;

	/* Drain what the maker put there, then send a fresh byte through. */
	int fl = fcntl(to, F_GETFL);
	fcntl(to, F_SETFL, fl | O_NONBLOCK);
	while (read(to, buf, sizeof(buf)) > 0)
		;
	n = write(from, "z", 1);
	CHECK(n == 1, "%s: write after the call: %s", what, n < 0 ? strerror(errno) : "short");
	n = read(to, buf, 1);
	CHECK(n == 1 && buf[0] == 'z', "%s: read after the call: %s", what,
	      n < 0 ? strerror(errno) : "no data");
	fcntl(to, F_SETFL, fl);
}

static void
run_one(const struct fd_kind *k, const struct bad_call *c)
{
	struct fd_inst in = { .fd = -1, .peer = -1 };
	struct call_result r;
	struct fd_snapshot snap;
	char what[256];
	int before, after, ret;

	snprintf(what, sizeof(what), "%s on %s", c->name, k->name);

	ret = k->make(&in);
	if (ret < 0) {
		REQUIRE(k->optional, "cannot make a %s: %s", k->name, strerror(-ret));
		return;
	}
	if (k->open)
		snapshot(in.fd, &snap);

	memset(&r, 0, sizeof(r));
	r.out_fd = OUT_FD_SENTINEL;
	r.out_ptr = OUT_PTR_SENTINEL;

	before = tb_count_fds();
	watchdog_call = c->name;
	watchdog_kind = k->name;
	alarm(CALL_WATCHDOG_S);
	if (c->query) {
		r.returns_bool = true;
		ret = c->query(in.fd);
	} else {
		ret = c->fn(in.fd, c->arg, &r);
	}
	alarm(0);
	after = tb_count_fds();

	if (r.returns_bool)
		CHECK(ret == 0, "%s: returned true", what);
	else
		CHECK_EQ(ret, k->expect, what);

	if (r.has_out_fd)
		CHECK(r.out_fd == -1, "%s: output fd is %d, want -1", what, r.out_fd);
	if (r.has_out_ptr)
		CHECK(r.out_ptr == NULL, "%s: output pointer is %p, want NULL", what, r.out_ptr);
	if (r.has_acc)
		CHECK(r.acc_after == r.acc_before, "%s: accumulator changed %d -> %d", what,
		      r.acc_before, r.acc_after);

	if (k->open) {
		check_fd_intact(in.fd, &snap, what);
		if (k->data)
			check_data_flows(&in, what);
	} else if (in.fd >= 0) {
		CHECK(fcntl(in.fd, F_GETFD) < 0 && errno == EBADF,
		      "%s: fd number %d is open after the call", what, in.fd);
	}

	CHECK(after == before, "%s: %d fds open before the call, %d after", what, before, after);

	/* An out-fd the library wrongly handed out must not leak into the next case. */
	if (r.has_out_fd && r.out_fd >= 0 && r.out_fd != OUT_FD_SENTINEL && r.out_fd != in.fd &&
	    r.out_fd != in.peer)
		close(r.out_fd);
	fd_inst_close(&in);
}

/*
 * Run every call in calls[] against every fd kind; failures are counted by
 * the harness. Returns the number of (kind, call) pairs run.
 */
static int
run_bad_fd_matrix(const char *module, const struct bad_call *calls, size_t n_calls)
{
	int runs = 0;

	watchdog_install();
	for (size_t i = 0; i < ARRAY_LEN(fd_kinds); i++) {
		int fails = tb_failures;

		for (size_t j = 0; j < n_calls; j++) {
			run_one(&fd_kinds[i], &calls[j]);
			runs++;
		}
		tb_note("%s: %-32s %s", module, fd_kinds[i].name,
			     tb_failures == fails ? "ok" : "FAILED");
	}
	return runs;
}

#endif
