/* SPDX-License-Identifier: MIT */
/*
 * NULL and empty arguments.
 *
 * Promised by the headers, and checked:
 *  - sb_sync_file_merge_array() with a NULL array or n == 0 is -EINVAL, and
 *    the output fd is -1;
 *  - sb_sync_file_info_destroy(NULL) and sb_syncobj_waiter_destroy(NULL) are
 *    no-ops.
 *
 * Not promised (the headers say nothing about NULL out-pointers): each such
 * call runs in a child process and the outcome (-EINVAL or a crash) is only
 * reported as a note. Build with -DSB_NULL_OUT_PROMISED=1 once the API
 * promises -EINVAL for them, and these become checks.
 */
#include <syncbridge/syncbridge.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "harness.h"

#ifndef SB_NULL_OUT_PROMISED
#define SB_NULL_OUT_PROMISED 1 /* common.h promises -EINVAL for NULL out-pointers */
#endif

static void
check_merge_array_empty(void)
{
	int fds[2] = { -1, -1 };
	int out;

	out = 4242;
	CHECK_EQ(sb_sync_file_merge_array(NULL, 1, &out), -EINVAL, "merge_array(NULL, 1)");
	CHECK(out == -1, "merge_array(NULL, 1): output fd %d, want -1", out);

	out = 4242;
	CHECK_EQ(sb_sync_file_merge_array(NULL, 0, &out), -EINVAL, "merge_array(NULL, 0)");
	CHECK(out == -1, "merge_array(NULL, 0): output fd %d, want -1", out);

	out = 4242;
	CHECK_EQ(sb_sync_file_merge_array(fds, 0, &out), -EINVAL, "merge_array(fds, 0)");
	CHECK(out == -1, "merge_array(fds, 0): output fd %d, want -1", out);
}

static void
check_free_null(void)
{
	sb_sync_file_info_destroy(NULL);
	sb_syncobj_waiter_destroy(NULL);
	CHECK(true, "sb_sync_file_info_destroy(NULL), sb_syncobj_waiter_destroy(NULL) returned");
}

/* ---- NULL out-pointers: not promised, surveyed in a child ---------------- */

static int
null_export_dmabuf(int fd)
{
	return sb_dmabuf_export_sync_file(fd, SB_ACCESS_READ, NULL);
}

static int
null_is_busy(int fd)
{
	return sb_dmabuf_is_busy(fd, SB_ACCESS_READ, NULL);
}

static int
null_get_status(int fd)
{
	return sb_sync_file_get_status(fd, NULL);
}

static int
null_get_info(int fd)
{
	return sb_sync_file_info_create(fd, NULL);
}

static int
null_merge(int fd)
{
	return sb_sync_file_merge(fd, fd, NULL);
}

static int
null_merge_array(int fd)
{
	return sb_sync_file_merge_array(&fd, 1, NULL);
}

static int
null_accumulate(int fd)
{
	return sb_sync_file_accumulate(NULL, fd);
}

static int
null_export_syncobj(int fd)
{
	return sb_syncobj_export_sync_file(fd, 1, 0, NULL);
}

static int
null_query(int fd)
{
	return sb_syncobj_query(fd, 1, NULL);
}

static int
null_waiter_create(int fd)
{
	return sb_syncobj_waiter_create(fd, 1, 0, 0, NULL);
}


static const struct {
	const char *name;
	int (*fn)(int fd);
} null_calls[] = {
	{ "sb_dmabuf_export_sync_file(.., NULL)", null_export_dmabuf },
	{ "sb_dmabuf_is_busy(.., NULL)", null_is_busy },
	{ "sb_sync_file_get_status(.., NULL)", null_get_status },
	{ "sb_sync_file_info_create(.., NULL)", null_get_info },
	{ "sb_sync_file_merge(.., NULL)", null_merge },
	{ "sb_sync_file_merge_array(.., NULL)", null_merge_array },
	{ "sb_sync_file_accumulate(NULL, ..)", null_accumulate },
	{ "sb_syncobj_export_sync_file(.., NULL)", null_export_syncobj },
	{ "sb_syncobj_query(.., NULL)", null_query },
	{ "sb_syncobj_waiter_create(.., NULL)", null_waiter_create },
};

static void
survey_null_out(void)
{
	/* Both a bad fd and an open non-sync_file fd: the NULL may be reached either way. */
	struct {
		const char *name;
		int fd;
	} fds[] = { { "fd -1", -1 }, { "a pipe", -1 } };
	int p[2];

	REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));
	fds[1].fd = p[0];

	for (size_t i = 0; i < sizeof(null_calls) / sizeof(null_calls[0]); i++) {
		for (size_t j = 0; j < sizeof(fds) / sizeof(fds[0]); j++) {
			int status;
			pid_t pid;

			pid = tb_fork();
			if (pid == 0) {
				struct rlimit no_core = { 0, 0 };
				int ret;

				setrlimit(RLIMIT_CORE, &no_core); /* an expected crash leaves no core */
				ret = null_calls[i].fn(fds[j].fd);
				/* Exit code: the negated errno (1..125), 0 for "success". */
				_exit(ret < 0 && ret > -126 ? -ret : 0);
			}
			REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));

			if (WIFSIGNALED(status)) {
				if (SB_NULL_OUT_PROMISED)
					CHECK(false, "%s on %s: killed by signal %d", null_calls[i].name,
					      fds[j].name, WTERMSIG(status));
				else
					tb_note("not promised: %s on %s crashes (signal %d)",
						     null_calls[i].name, fds[j].name, WTERMSIG(status));
			} else {
				int err = WEXITSTATUS(status);

				if (SB_NULL_OUT_PROMISED)
					CHECK(err == EINVAL || err == EBADF, "%s on %s: returned %d",
					      null_calls[i].name, fds[j].name, -err);
				else
					tb_note("not promised: %s on %s returns %d (%s)",
						     null_calls[i].name, fds[j].name, -err,
						     err ? strerror(err) : "success?!");
			}
		}
	}
	close(p[0]);
	close(p[1]);
}

int
main(void)
{
	check_merge_array_empty();
	check_free_null();
	survey_null_out();
	return tb_finish();
}
