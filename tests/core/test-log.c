/* SPDX-License-Identifier: MIT */
/*
 * Logging (src/core/log.h): silent unless SYNCBRIDGE_DEBUG asks.
 *
 * The level is read once per process, so every case runs in a fresh
 * exec()'d copy of this program with the environment it needs and its
 * stdout and stderr captured through pipes.
 *
 *   test-log silent   failing public calls print nothing, on stderr or stdout,
 *                     with SYNCBRIDGE_DEBUG unset, empty or "0"; with "debug"
 *                     whatever they print is "syncbridge: LEVEL: file.c:LINE: ..."
 *                     and still nothing goes to stdout
 *   test-log levels   the internal macros honour each threshold (error, warn,
 *                     info, debug, 1, case-insensitive) and print the exact
 *                     documented format, errno variant included; control: the
 *                     capture does see them (so "silent" can fail)
 *   test-log          both
 *
 *   test-log child-public | child-internal   what the children run
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>

#include <syncbridge/syncbridge.h>

#include "harness.h"
#include "log.h"
#include "util.h"

/*
 * This program, to re-exec: argv[0] when it is a path (so that a wrapper
 * such as valgrind still runs this program), else /proc/self/exe.
 */
static const char *self_path = "/proc/self/exe";

extern char **environ;

#define MAX_OUT 65536

struct captured {
	char out[MAX_OUT], err[MAX_OUT];
	size_t out_len, err_len;
	int status;
};

/* ---- children ---------------------------------------------------------------- */

/* Calls that fail on a machine without fences, from every module. */
static int
child_public(void)
{
	struct sb_sync_file_info *info;
	struct sb_syncobj_waiter *w;
	int p[2], out, acc = -1, status;
	uint64_t point;
	bool busy;

	if (pipe2(p, O_CLOEXEC) < 0)
		return 1;
	sb_dmabuf_export_sync_file(p[0], SB_ACCESS_READ, &out);
	sb_dmabuf_import_sync_file(p[0], SB_ACCESS_WRITE, p[1]);
	sb_dmabuf_wait(p[0], SB_ACCESS_READ, 0);
	sb_dmabuf_is_busy(p[0], SB_ACCESS_WRITE, &busy);
	sb_dmabuf_is_valid(p[0]);
	sb_sync_file_is_valid(p[0]);
	sb_sync_file_wait(p[0], 0);
	sb_sync_file_get_status(p[0], &status);
	sb_sync_file_info_create(-1, &info);
	sb_sync_file_merge(p[0], p[1], &out);
	sb_sync_file_merge_array(p, 2, &out);
	sb_sync_file_accumulate(&acc, p[0]);
	sb_sync_file_set_deadline(p[0], 1);
	sb_syncobj_export_sync_file(p[0], 1, 0, &out);
	sb_syncobj_export_sync_file(p[0], 1, 7, &out);
	sb_syncobj_import_sync_file(p[0], 1, 7, p[1]);
	sb_syncobj_signal(p[0], 1, 0);
	sb_syncobj_query(p[0], 1, &point);
	sb_syncobj_wait(p[0], 1, 0, 0, 0);
	sb_syncobj_waiter_create(p[0], 1, 0, 0, &w);
	setenv("SYNCBRIDGE_SYNCOBJ_EVENTFD", "0", 1);
	sb_syncobj_waiter_create(p[0], 1, 0, 0, &w);
	sb_syncobj_waiter_create(-1, 1, 0, 0, &w);
	return 0;
}

/* One message per level plus the errno variant; the parent checks which appear. */
static int
child_internal(void)
{
	sb_error("hello %s", "error");
	sb_warn("hello %s", "warn");
	sb_info("hello %s", "info");
	sb_debug("hello %s", "debug");
	sb_log_errno(SB_LOG_ERROR, -ENOENT, "hello errno %d", 42);
	sb_log_errno(SB_LOG_DEBUG, EACCES, "hello positive errno");
	return 0;
}

/* ---- parent -------------------------------------------------------------------- */

/* Run this program with `mode`, SYNCBRIDGE_DEBUG set to `level` (NULL: unset). */
static void
run_child(const char *mode, const char *level, struct captured *c)
{
	char *envp[512];
	char level_var[128];
	int out[2], err[2];
	size_t n = 0;
	pid_t pid;

	for (char **e = environ; *e && n < SB_ARRAY_SIZE(envp) - 2; e++)
		if (strncmp(*e, "SYNCBRIDGE_DEBUG=", 17) != 0)
			envp[n++] = *e;
	if (level) {
		snprintf(level_var, sizeof(level_var), "SYNCBRIDGE_DEBUG=%s", level);
		envp[n++] = level_var;
	}
	envp[n] = NULL;

	REQUIRE(pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0, "pipe2: %s",
		strerror(errno));
	pid = tb_fork();
	if (pid == 0) {
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		execle(self_path, "test-log", mode, (char *)NULL, envp);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);

	memset(c, 0, sizeof(*c));
	/* Both streams together, so a chatty child cannot block on a full pipe. */
	struct pollfd pfd[2] = { { .fd = out[0], .events = POLLIN },
				 { .fd = err[0], .events = POLLIN } };
	while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
		if (poll(pfd, 2, 10000) <= 0)
			break;
		for (int i = 0; i < 2; i++) {
			char *buf = i ? c->err : c->out;
			size_t *len = i ? &c->err_len : &c->out_len;
			ssize_t r;

			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			r = read(pfd[i].fd, buf + *len, MAX_OUT - 1 - *len);
			if (r > 0) {
				*len += (size_t)r;
			} else {
				close(pfd[i].fd);
				pfd[i].fd = -1;
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	c->out[c->out_len] = '\0';
	c->err[c->err_len] = '\0';
	REQUIRE(waitpid(pid, &c->status, 0) == pid, "waitpid: %s", strerror(errno));
	REQUIRE(WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0,
		"child %s (SYNCBRIDGE_DEBUG=%s) failed: status 0x%x, stderr:\n%s", mode,
		level ? level : "<unset>", c->status, c->err);
}

static int
count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		if (*s == '\n')
			n++;
	return n;
}

/* "syncbridge: LEVEL: path/file.c:LINE: " — returns a pointer past it, or NULL. */
static const char *
parse_prefix(const char *line, const char *level)
{
	char want[64];
	const char *p;

	snprintf(want, sizeof(want), "syncbridge: %s: ", level);
	if (strncmp(line, want, strlen(want)) != 0)
		return NULL;
	p = line + strlen(want);
	/* file: up to ".c:" or ".h:" */
	while (*p && *p != '\n' && !((p[0] == '.' && (p[1] == 'c' || p[1] == 'h') && p[2] == ':')))
		p++;
	if (p[0] != '.')
		return NULL;
	p += 3;
	if (*p < '0' || *p > '9')
		return NULL;
	while (*p >= '0' && *p <= '9')
		p++;
	if (strncmp(p, ": ", 2) != 0)
		return NULL;
	return p + 2;
}

static void
case_silent(void)
{
	static const char *const silent_levels[] = { NULL, "", "0" };
	struct captured *c = malloc(sizeof(*c));

	REQUIRE(c, "malloc");
	for (size_t i = 0; i < SB_ARRAY_SIZE(silent_levels); i++) {
		const char *lvl = silent_levels[i];

		run_child("child-public", lvl, c);
		CHECK(c->err_len == 0, "SYNCBRIDGE_DEBUG=%s: failing calls printed on stderr:\n%s",
		      lvl ? lvl : "<unset>", c->err);
		CHECK(c->out_len == 0, "SYNCBRIDGE_DEBUG=%s: the library wrote to stdout:\n%s",
		      lvl ? lvl : "<unset>", c->out);
	}

	run_child("child-public", "debug", c);
	CHECK(c->out_len == 0, "SYNCBRIDGE_DEBUG=debug: the library wrote to stdout:\n%s", c->out);
	tb_note("with SYNCBRIDGE_DEBUG=debug the failing calls printed %d line(s)",
		     count_lines(c->err));
	for (char *line = c->err; *line;) {
		char *nl = strchr(line, '\n');
		bool ok = false;

		if (nl)
			*nl = '\0';
		static const char *const levels[] = { "error", "warn", "info", "debug" };
		for (size_t i = 0; i < SB_ARRAY_SIZE(levels) && !ok; i++)
			ok = parse_prefix(line, levels[i]) != NULL;
		CHECK(ok, "debug line not in the form \"syncbridge: LEVEL: file.c:LINE: msg\": %s",
		      line);
		if (!nl)
			break;
		line = nl + 1;
	}
	free(c);
}

static void
case_levels(void)
{
	static const struct {
		const char *env;
		int lines; /* error, errno-error, warn, info, debug, errno-debug */
	} levels[] = {
		{ NULL, 0 }, { "", 0 },      { "0", 0 },     { "error", 2 }, { "warn", 3 },
		{ "warning", 3 }, { "info", 4 }, { "debug", 6 }, { "DEBUG", 6 }, { "1", 6 },
	};
	struct captured *c = malloc(sizeof(*c));

	REQUIRE(c, "malloc");
	for (size_t i = 0; i < SB_ARRAY_SIZE(levels); i++) {
		const char *env = levels[i].env;

		run_child("child-internal", env, c);
		CHECK(count_lines(c->err) == levels[i].lines,
		      "SYNCBRIDGE_DEBUG=%s: %d line(s), want %d:\n%s", env ? env : "<unset>",
		      count_lines(c->err), levels[i].lines, c->err);
		CHECK(c->out_len == 0, "SYNCBRIDGE_DEBUG=%s: wrote to stdout:\n%s",
		      env ? env : "<unset>", c->out);
	}

	/* The exact format, on the most verbose level. */
	run_child("child-internal", "debug", c);
	static const struct {
		const char *level, *msg;
	} want[] = {
		{ "error", "hello error" },
		{ "warn", "hello warn" },
		{ "info", "hello info" },
		{ "debug", "hello debug" },
		{ "error", "hello errno 42: No such file or directory" },
		{ "debug", "hello positive errno: Permission denied" },
	};
	char *line = c->err;
	for (size_t i = 0; i < SB_ARRAY_SIZE(want); i++) {
		char *nl = strchr(line, '\n');
		const char *msg;

		REQUIRE(nl, "output ends before line %zu:\n%s", i + 1, c->err);
		*nl = '\0';
		msg = parse_prefix(line, want[i].level);
		CHECK(msg && strstr(line, "test-log.c:"),
		      "line %zu not \"syncbridge: %s: ...test-log.c:LINE: ...\": %s", i + 1,
		      want[i].level, line);
		CHECK(msg && strcmp(msg, want[i].msg) == 0, "line %zu message: got \"%s\", want \"%s\"",
		      i + 1, msg ? msg : line, want[i].msg);
		line = nl + 1;
	}
	free(c);
}

int
main(int argc, char **argv)
{
	if (argc > 0 && strchr(argv[0], '/'))
		self_path = argv[0];
	const char *mode = argc > 1 ? argv[1] : "all";

	if (strcmp(mode, "child-public") == 0)
		return child_public();
	if (strcmp(mode, "child-internal") == 0)
		return child_internal();

	if (strcmp(mode, "silent") == 0 || strcmp(mode, "all") == 0)
		case_silent();
	if (strcmp(mode, "levels") == 0 || strcmp(mode, "all") == 0)
		case_levels();
	return tb_finish();
}
