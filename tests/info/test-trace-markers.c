/* SPDX-License-Identifier: MIT */
/*
 * The library's trace markers (src/core/trace.c, docs/inspect.md "Markers"), on a
 * plain file named by SYNCBRIDGE_TRACE_MARKER (what `syncbridge-info trace`
 * points at tracefs):
 *
 *   test-trace-markers on          SYNCBRIDGE_TRACE=1: every marker line
 *                                  arrives whole, one per write, from 4 threads;
 *                                  the fd count is unchanged; errno is kept
 *   test-trace-markers off         SYNCBRIDGE_TRACE unset: nothing written and
 *                                  the marker arguments not even evaluated (the
 *                                  control of "on": same calls, same file)
 *   test-trace-markers zero        SYNCBRIDGE_TRACE=0: the same as unset
 *   test-trace-markers unopenable  the marker file cannot be opened: markers
 *                                  off, nothing on stderr, errno and fds kept
 *   test-trace-markers unopenable-debug   the same with SYNCBRIDGE_DEBUG=info:
 *                                  the library says why once (shows that the
 *                                  quiet case really took that path)
 *
 * Each case is its own process: the environment is read once per process.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "trace.h"

#define THREADS 4
#define PER_THREAD 500

static char marker_file[] = "/tmp/sb-trace-markers-XXXXXX";
static int evaluated;
static pthread_barrier_t start_line; /* the writers start together */
static bool use_barrier;

static int
side_effect(void)
{
	return ++evaluated;
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0;

	*len = 0;
	if (!f)
		return NULL;
	for (;;) {
		if (*len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			if (!buf)
				break;
		}
		size_t n = fread(buf + *len, 1, 4096, f);
		if (n == 0)
			break;
		*len += n;
	}
	fclose(f);
	if (buf)
		buf[*len] = '\0';
	return buf;
}

static void *
writer(void *arg)
{
	int t = (int)(intptr_t)arg;
	/* A long payload: a line written in pieces would show up torn. */
	static const char pad[] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

	if (use_barrier)
		pthread_barrier_wait(&start_line);
	for (int i = 0; i < PER_THREAD; i++)
		sb_trace("test.line t=%d i=%d pad=%s end=1", t, i, pad);
	return NULL;
}

static void
check_file_empty(const char *what)
{
	struct stat st;

	CHECK(stat(marker_file, &st) == 0 && st.st_size == 0, "%s: the marker file stays empty "
	      "(%lld bytes)", what, (long long)st.st_size);
}

/* The calls every case makes; only their effect differs. */
static void
emit_some(void)
{
	sb_trace("begin test.span n=%d", side_effect());
	sb_trace("test.instant n=%d %s", side_effect(), sb_trace_sync_file(-1).s);
	sb_trace("end test.span n=%d", side_effect());
}

static void
case_on(void)
{
	pthread_t th[THREADS];
	int fds_before = tb_count_fds();
	size_t len;
	char *text, *line, *save = NULL;
	static bool seen[THREADS][PER_THREAD];
	int lines = 0, torn = 0, dup = 0, whole = 0;

	CHECK(sb_trace_enabled(), "SYNCBRIDGE_TRACE=1 with a writable marker file: markers on");
	errno = 1234;
	emit_some();
	CHECK_EQ(errno, 1234, "errno after markers");
	CHECK_EQ(evaluated, 3, "marker arguments evaluated");
	CHECK_EQ(tb_count_fds(), fds_before, "open fds after markers (none kept open)");

	pthread_barrier_init(&start_line, NULL, THREADS);
	use_barrier = true;
	for (int t = 0; t < THREADS; t++)
		REQUIRE(pthread_create(&th[t], NULL, writer, (void *)(intptr_t)t) == 0, "thread");
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	CHECK_EQ(tb_count_fds(), fds_before, "open fds after 2000 markers from 4 threads");

	text = slurp(marker_file, &len);
	REQUIRE(text, "read %s", marker_file);
	CHECK(strncmp(text, "syncbridge: begin test.span n=1\nsyncbridge: test.instant n=2 "
			    "fence=none\nsyncbridge: end test.span n=3\n", 94) == 0,
	      "the first three lines are the begin/instant/end markers:\n%.120s", text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int t, i, n = 0;

		if (++lines <= 3)
			continue; /* the begin/instant/end checked above */
		if (sscanf(line, "syncbridge: test.line t=%d i=%d pad=%*[x] end=1%n", &t, &i, &n) !=
			    2 ||
		    line[n] != '\0' || t < 0 || t >= THREADS || i < 0 || i >= PER_THREAD) {
			if (torn++ < 3)
				printf("# torn line: %.80s\n", line);
			continue;
		}
		dup += seen[t][i];
		whole += !seen[t][i];
		seen[t][i] = true;
	}
	CHECK_EQ(lines, 3 + THREADS * PER_THREAD, "lines in the marker file");
	CHECK_EQ(torn, 0, "lines torn or interleaved");
	CHECK_EQ(dup, 0, "lines written twice");
	CHECK_EQ(whole, THREADS * PER_THREAD, "distinct whole test.line lines");
	free(text);

	/* the keys helpers */
	int p[2];
	REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe");
	CHECK(strcmp(sb_trace_sync_file(p[0]).s, "fence=?") == 0,
	      "a pipe is not a sync_file: \"%s\"", sb_trace_sync_file(p[0]).s);
	close(p[0]);
	close(p[1]);
	int fd = open(marker_file, O_RDONLY | O_CLOEXEC);
	struct stat st;
	REQUIRE(fd >= 0 && fstat(fd, &st) == 0, "open %s", marker_file);
	CHECK_EQ(sb_trace_ino(fd), st.st_ino, "sb_trace_ino() is the fd's inode");
	CHECK_EQ(sb_trace_ino(-1), 0, "sb_trace_ino(-1)");
	close(fd);
}

static void
case_off(const char *what)
{
	CHECK(!sb_trace_enabled(), "%s: markers off", what);
	emit_some();
	writer((void *)0);
	CHECK_EQ(evaluated, 0, "marker arguments evaluated while off");
	check_file_empty(what);
}

static void
case_unopenable(bool debug)
{
	int fds_before = tb_count_fds();
	char err_file[] = "/tmp/sb-trace-stderr-XXXXXX";
	int err_fd = mkstemp(err_file), saved_stderr = dup(2);
	size_t len;
	char *err;

	REQUIRE(err_fd >= 0 && saved_stderr >= 0, "stderr capture");
	fds_before += 2;
	fflush(stderr);
	dup2(err_fd, 2);
	errno = 4321;
	emit_some();
	writer((void *)0);
	CHECK_EQ(errno, 4321, "errno after markers that cannot be written");
	fflush(stderr);
	dup2(saved_stderr, 2);
	CHECK(!sb_trace_enabled(), "a marker file that cannot be opened turns markers off");
	CHECK_EQ(evaluated, 0, "marker arguments evaluated while off");
	CHECK_EQ(tb_count_fds(), fds_before, "open fds");
	err = slurp(err_file, &len);
	REQUIRE(err, "read the captured stderr");
	if (debug) {
		int said = 0;

		for (const char *p = err; (p = strstr(p, "trace: cannot open")); p++)
			said++;
		CHECK(said == 1 && strstr(err, "markers off"),
		      "with SYNCBRIDGE_DEBUG=info the library says why, once: \"%s\"", err);
	} else
		CHECK(len == 0, "nothing on stderr without SYNCBRIDGE_DEBUG: \"%s\"", err);
	free(err);
	close(err_fd);
	close(saved_stderr);
	unlink(err_file);
}

int
main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	int fd = mkstemp(marker_file);

	REQUIRE(fd >= 0, "mkstemp");
	close(fd);
	/* Before the first marker: the library reads these once, lazily. */
	unsetenv("SYNCBRIDGE_DEBUG");
	setenv("SYNCBRIDGE_TRACE_MARKER", marker_file, 1);
	if (strcmp(c, "on") == 0) {
		setenv("SYNCBRIDGE_TRACE", "1", 1);
		case_on();
	} else if (strcmp(c, "off") == 0) {
		unsetenv("SYNCBRIDGE_TRACE");
		case_off("SYNCBRIDGE_TRACE unset");
	} else if (strcmp(c, "zero") == 0) {
		setenv("SYNCBRIDGE_TRACE", "0", 1);
		case_off("SYNCBRIDGE_TRACE=0");
	} else if (strcmp(c, "unopenable") == 0 || strcmp(c, "unopenable-debug") == 0) {
		bool debug = strcmp(c, "unopenable-debug") == 0;

		if (debug)
			setenv("SYNCBRIDGE_DEBUG", "info", 1);
		setenv("SYNCBRIDGE_TRACE", "1", 1);
		setenv("SYNCBRIDGE_TRACE_MARKER", "/nonexistent-sb-dir/trace_marker", 1);
		case_unopenable(debug);
	} else {
		fprintf(stderr, "usage: %s on|off|zero|unopenable|unopenable-debug\n", argv[0]);
		unlink(marker_file);
		return 2;
	}
	unlink(marker_file);
	return tb_finish();
}
