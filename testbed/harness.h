/* SPDX-License-Identifier: MIT */
/*
 * Minimal test harness shared by both tiers. Each test program is one
 * behaviour, runnable alone (also under gdb / valgrind), and exits with
 *   0  every check passed
 *   1  a check failed
 *   77 skipped (meson counts it as SKIP, never as a pass): say why.
 * Checks print "ok"/"not ok" lines so a failure says what and where.
 */
#ifndef TB_HARNESS_H
#define TB_HARNESS_H

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int tb_failures;
static int tb_checks;

#define CHECK(cond, ...)                                                           \
	do {                                                                       \
		tb_checks++;                                                  \
		if (cond) {                                                        \
			if (getenv("SB_TEST_VERBOSE")) {                           \
				printf("ok %d - ", tb_checks);               \
				printf(__VA_ARGS__);                               \
				printf("\n");                                      \
			}                                                          \
		} else {                                                           \
			tb_failures++;                                        \
			printf("not ok %d - %s:%d: (%s) ", tb_checks, __FILE__, \
			       __LINE__, #cond);                                   \
			printf(__VA_ARGS__);                                       \
			printf("\n");                                              \
			fflush(stdout);                                            \
		}                                                                  \
	} while (0)

/* Compare two ints (errno codes, counts), printing both on failure. */
#define CHECK_EQ(a, b, what)                                                         \
	do {                                                                         \
		long long sb_a_ = (long long)(a), sb_b_ = (long long)(b);            \
		CHECK(sb_a_ == sb_b_, "%s: got %lld (%s), want %lld (%s)", (what),   \
		      sb_a_, sb_a_ < 0 ? strerror((int)-sb_a_) : "-", sb_b_,         \
		      sb_b_ < 0 ? strerror((int)-sb_b_) : "-");                      \
	} while (0)

/* Abort the test (fail) when a precondition needed to go on is not met. */
#define REQUIRE(cond, ...)                                                          \
	do {                                                                        \
		if (!(cond)) {                                                      \
			printf("Bail out! %s:%d: (%s) ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                                        \
			printf("\n");                                               \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

static inline void __attribute__((noreturn, format(printf, 1, 2)))
tb_skip(const char *fmt, ...)
{
	va_list ap;

	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(77);
}

static inline void __attribute__((format(printf, 1, 2)))
tb_note(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/*
 * fork() with stdout flushed first (the child must not print the parent's
 * buffered lines again); a failed fork bails out. The child's pid in the
 * parent, 0 in the child.
 */
static inline pid_t
tb_fork(void)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	REQUIRE(pid >= 0, "fork: %s", strerror(errno));
	return pid;
}

/*
 * Run path with argv (NULL-terminated, argv[0] included) in a child process
 * and wait for it: its wait status. An exec that fails exits 127.
 */
static inline int
tb_run(const char *path, char *const argv[])
{
	int status;
	pid_t pid = tb_fork();

	if (pid == 0) {
		execv(path, argv);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
	return status;
}

/* Entries of a /proc directory (not "." and ".."), or -1 when it cannot be read. */
static inline int
tb_count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Number of open fds of this process (from /proc/self/fd), or -1. */
static inline int
tb_count_fds(void)
{
	int n = tb_count_entries("/proc/self/fd");

	return n < 0 ? -1 : n - 1; /* the DIR's own fd */
}

/* Threads of this process (/proc/self/task), or -1. */
static inline int
tb_count_threads(void)
{
	return tb_count_entries("/proc/self/task");
}

/* Whether `arg` is one of the program's arguments. */
static inline bool
tb_has_arg(int argc, char **argv, const char *arg)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], arg) == 0)
			return true;
	return false;
}

/* The argument following `opt` on the command line, or def. */
static inline const char *
tb_arg_value(int argc, char **argv, const char *opt, const char *def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], opt) == 0)
			return argv[i + 1];
	return def;
}

static inline int
tb_finish(void)
{
	printf("%s: %d checks, %d failed\n", tb_failures ? "FAIL" : "PASS", tb_checks,
	       tb_failures);
	return tb_failures ? 1 : 0;
}

#endif
