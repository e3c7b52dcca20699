/* SPDX-License-Identifier: MIT */
/*
 * The fd helpers every library path uses (src/core/util.h):
 *  - sb_fd_dup() gives a new fd for the same file with FD_CLOEXEC set, even
 *    when the original lacks it, and that fd really does not survive exec()
 *    (control: a plain F_DUPFD copy does, so the exec check can fail);
 *  - sb_fd_check_open(): 0 for any open fd (O_PATH too), -EBADF otherwise;
 *  - fd_clear / fd_move / fd_replace: close exactly what they say, leave -1
 *    behind, keep errno.
 *
 * On the host no public function can create an fd (that needs a dma-buf, a
 * sync_file or a DRM device), so this is where CLOEXEC is proven here; the
 * VM tier checks it on the fds the public API returns.
 *
 *   test-fd-helpers                 the checks
 *   test-fd-helpers is-open FD      (exec'd by the checks) exit 0 if FD is open, 3 if not
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "util.h"

/*
 * This program, to re-exec: argv[0] when it is a path (so that a wrapper
 * such as valgrind still runs this program), else /proc/self/exe.
 */
static const char *self_path = "/proc/self/exe";

static bool
same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* Whether fd is open in a freshly exec'd copy of this program. */
static int
open_after_exec(int fd)
{
	char arg[16];
	char *argv[] = { "test-fd-helpers", "is-open", arg, NULL };
	int status;

	snprintf(arg, sizeof(arg), "%d", fd);
	status = tb_run(self_path, argv);
	REQUIRE(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3),
		"exec'd child failed (status 0x%x)", status);
	return WEXITSTATUS(status) == 0;
}

static void
check_dup(void)
{
	int p[2], d, plain, flags;

	REQUIRE(pipe(p) == 0, "pipe: %s", strerror(errno)); /* deliberately without O_CLOEXEC */
	REQUIRE(!(fcntl(p[0], F_GETFD) & FD_CLOEXEC), "pipe() gave FD_CLOEXEC");

	d = sb_fd_dup(p[0]);
	CHECK(d >= 0, "sb_fd_dup(pipe): %s", d < 0 ? strerror(-d) : "-");
	REQUIRE(d >= 0, "cannot go on without the dup");
	CHECK(d != p[0], "sb_fd_dup returned the same number");
	CHECK(same_file(d, p[0]), "sb_fd_dup: not the same file");
	flags = fcntl(d, F_GETFD);
	CHECK(flags >= 0 && (flags & FD_CLOEXEC), "sb_fd_dup: FD_CLOEXEC not set (0x%x)", flags);
	CHECK(!(fcntl(p[0], F_GETFD) & FD_CLOEXEC), "sb_fd_dup changed the original's flags");

	/* Control: the exec check sees a descriptor without FD_CLOEXEC... */
	plain = fcntl(p[0], F_DUPFD, 0);
	REQUIRE(plain >= 0, "F_DUPFD: %s", strerror(errno));
	CHECK(open_after_exec(plain), "control: a plain dup did not survive exec, so the exec "
	      "check cannot tell anything");
	/* ...and the library's dup is gone after exec. */
	CHECK(!open_after_exec(d), "sb_fd_dup's fd %d survived exec()", d);
	close(plain);
	close(d);

	CHECK_EQ(sb_fd_dup(-1), -EBADF, "sb_fd_dup(-1)");
	CHECK_EQ(sb_fd_dup(INT_MAX), -EBADF, "sb_fd_dup(INT_MAX)");
	close(p[1]);
	CHECK_EQ(sb_fd_dup(p[1]), -EBADF, "sb_fd_dup(closed fd)");
	close(p[0]);
}

static void
check_open(void)
{
	int fd, path_fd;

	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	path_fd = open("/", O_PATH | O_CLOEXEC);
	REQUIRE(fd >= 0 && path_fd >= 0, "open: %s", strerror(errno));
	CHECK_EQ(sb_fd_check_open(fd), 0, "sb_fd_check_open(/dev/null)");
	CHECK_EQ(sb_fd_check_open(path_fd), 0, "sb_fd_check_open(O_PATH fd)");
	CHECK_EQ(sb_fd_check_open(-1), -EBADF, "sb_fd_check_open(-1)");
	CHECK_EQ(sb_fd_check_open(INT_MIN), -EBADF, "sb_fd_check_open(INT_MIN)");
	CHECK_EQ(sb_fd_check_open(INT_MAX), -EBADF, "sb_fd_check_open(INT_MAX)");
	close(fd);
	CHECK_EQ(sb_fd_check_open(fd), -EBADF, "sb_fd_check_open(closed fd)");
	close(path_fd);
}

static void
check_field_helpers(void)
{
	int a, b, field, moved, fds_before = tb_count_fds();

	/* fd_clear: closes, leaves -1, keeps errno; -1 is a no-op. */
	field = open("/dev/null", O_RDONLY | O_CLOEXEC);
	REQUIRE(field >= 0, "open: %s", strerror(errno));
	a = field;
	errno = ENOSPC;
	fd_clear(&field);
	CHECK_EQ(field, -1, "fd_clear leaves -1");
	CHECK(errno == ENOSPC, "fd_clear clobbered errno (%d)", errno);
	CHECK(fcntl(a, F_GETFD) < 0 && errno == EBADF, "fd_clear did not close fd %d", a);
	fd_clear(&field);
	CHECK_EQ(field, -1, "fd_clear(-1) stays -1");

	/* fd_move: hands the fd out, closes nothing. */
	field = open("/dev/null", O_RDONLY | O_CLOEXEC);
	REQUIRE(field >= 0, "open: %s", strerror(errno));
	a = field;
	moved = fd_move(&field);
	CHECK_EQ(moved, a, "fd_move returns the fd");
	CHECK_EQ(field, -1, "fd_move leaves -1");
	CHECK(fcntl(moved, F_GETFD) >= 0, "fd_move closed the fd");

	/* fd_replace: closes the old one, keeps the new one. */
	b = open("/dev/null", O_RDONLY | O_CLOEXEC);
	REQUIRE(b >= 0, "open: %s", strerror(errno));
	field = moved;
	fd_replace(&field, b);
	CHECK_EQ(field, b, "fd_replace stores the new fd");
	CHECK(fcntl(a, F_GETFD) < 0 && errno == EBADF, "fd_replace did not close the old fd");
	CHECK(fcntl(b, F_GETFD) >= 0, "fd_replace closed the new fd");

	/* Replacing an fd with itself must not close it. */
	fd_replace(&field, b);
	CHECK(fcntl(b, F_GETFD) >= 0, "fd_replace(&fd, fd) closed the fd");

	/* Replacing -1 closes nothing. */
	field = -1;
	fd_replace(&field, b);
	CHECK_EQ(field, b, "fd_replace into -1");
	fd_clear(&field);
	CHECK_EQ(tb_count_fds(), fds_before, "fd count after the field helpers");
}

int
main(int argc, char **argv)
{
	if (argc > 0 && strchr(argv[0], '/'))
		self_path = argv[0];
	if (argc == 3 && strcmp(argv[1], "is-open") == 0)
		return fcntl(atoi(argv[2]), F_GETFD) >= 0 ? 0 : 3;

	check_dup();
	check_open();
	check_field_helpers();
	return tb_finish();
}
