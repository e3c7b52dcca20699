/* SPDX-License-Identifier: MIT */
/*
 * hardening-canary KIND: proves that a sanitizer setup is live where the
 * tests run (host, or the QEMU guest): a forked child commits the bug KIND
 * detects, and the test passes only if the child was stopped with the
 * sanitizer's report. A setup that silently lost its runtime, its *SAN_OPTIONS
 * (halt_on_error, detect_leaks) or its suppressions file would make every
 * other test in the run pass vacuously; this one fails instead.
 *
 *   asan   heap-buffer-overflow        "ERROR: AddressSanitizer: heap-buffer-overflow"
 *   lsan   a leaked allocation          "ERROR: LeakSanitizer: detected memory leaks"
 *   ubsan  signed integer overflow      "runtime error: signed integer overflow"
 *   tsan   a data race between threads  "WARNING: ThreadSanitizer: data race"
 *   valgrind  running under valgrind (RUNNING_ON_VALGRIND), when built with its header
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define HAVE_VALGRIND_H 1
#endif

#include "harness.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* volatile everywhere: the compiler must not see through the bugs. */
static volatile int sink;

static void
bug_asan(void)
{
	char *volatile p = malloc(16);
	volatile size_t i = 16;

	p[i] = 1; /* one past the end */
	sink = p[0];
	free(p);
}

static void *volatile leaked;

static void __attribute__((noinline))
bug_lsan(void)
{
	void *p = malloc(4096);

	memset(p, 1, 4096);
	leaked = p;
	leaked = NULL; /* the only reference is gone: a definite leak at exit */
}

static void
bug_ubsan(void)
{
	volatile int x = INT32_MAX;

	sink = x + (int)(intptr_t)leaked + 1;
}

static int racy;

static void *
racer(void *arg)
{
	for (int i = 0; i < 1000; i++)
		racy++;
	return arg;
}

static void
bug_tsan(void)
{
	pthread_t a, b;

	pthread_create(&a, NULL, racer, NULL);
	pthread_create(&b, NULL, racer, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	sink = racy;
}

int
main(int argc, char **argv)
{
	const struct {
		const char *kind;
		void (*bug)(void);
		const char *marker;
	} kinds[] = {
		{ "asan", bug_asan, "ERROR: AddressSanitizer: heap-buffer-overflow" },
		{ "lsan", bug_lsan, "ERROR: LeakSanitizer: detected memory leaks" },
		{ "ubsan", bug_ubsan, "runtime error: signed integer overflow" },
		{ "tsan", bug_tsan, "WARNING: ThreadSanitizer: data race" },
	};
	char out[16384];
	size_t len = 0;
	int pipefd[2], status;
	pid_t pid;
	ssize_t r;
	int k, shown = 0;

	REQUIRE(argc == 2, "usage: %s asan|lsan|ubsan|tsan|valgrind", argv[0]);
	if (strcmp(argv[1], "valgrind") == 0) {
#ifdef HAVE_VALGRIND_H
		CHECK(RUNNING_ON_VALGRIND, "this test program runs under valgrind");
		return tb_finish();
#else
		tb_skip("built without <valgrind/valgrind.h>");
#endif
	}
	for (k = 0; k < (int)ARRAY_LEN(kinds); k++)
		if (strcmp(argv[1], kinds[k].kind) == 0)
			break;
	REQUIRE(k < (int)ARRAY_LEN(kinds), "unknown kind '%s'", argv[1]);

	REQUIRE(pipe(pipefd) == 0, "pipe: %s", strerror(errno));
	pid = tb_fork();
	if (pid == 0) {
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		close(pipefd[1]);
		kinds[k].bug();
		/* exit(), not _exit(): LeakSanitizer checks from an atexit handler. */
		exit(0);
	}
	close(pipefd[1]);
	while (len < sizeof(out) - 1 && (r = read(pipefd[0], out + len, sizeof(out) - 1 - len)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		len += (size_t)r;
	}
	out[len] = '\0';
	close(pipefd[0]);
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));

	tb_note("child: %s %d; its stderr (%zu bytes) begins:", WIFEXITED(status) ? "exit" : "signal",
		     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), len);
	for (const char *line = out; *line && shown < 8; shown++) {
		const char *nl = strchr(line, '\n');
		int n = nl ? (int)(nl - line) : (int)strlen(line);

		printf("#   %.*s\n", n, line);
		line += n + (nl != NULL);
	}
	CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0),
	      "the %s bug stopped the child (halt_on_error / exitcode)", kinds[k].kind);
	CHECK(strstr(out, kinds[k].marker) != NULL, "the child's report says \"%s\"", kinds[k].marker);
	return tb_finish();
}
