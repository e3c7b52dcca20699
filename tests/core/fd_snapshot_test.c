/* SPDX-License-Identifier: MIT */
/*
 * hardening-fd-snapshot (host): the fd hygiene helper (testbed/
 * fd_snapshot.h) catches what it is for — a leaked fd, a closed borrowed fd,
 * a closed-and-reused fd number — and stays quiet on a clean call and on the
 * documented outputs it is told about. A checker that never fails would make
 * every test using it pass vacuously.
 */
#include <fcntl.h>
#include <sys/eventfd.h>

#include "fd_snapshot.h"
#include "harness.h"

/* Run the check and take back the failures it recorded: returns its problem count. */
static int
problems_of(const struct tb_fd_snapshot *before, const int *expected, int n, const char *what)
{
	int failures = tb_failures, checks = tb_checks;
	int p = tb_fd_snapshot_check(before, expected, n, what);

	tb_failures = failures;
	tb_checks = checks;
	return p;
}

int
main(void)
{
	struct tb_fd_snapshot s;
	int a, b, c;

	a = eventfd(0, EFD_CLOEXEC);
	b = open("/dev/null", O_RDONLY | O_CLOEXEC);
	REQUIRE(a >= 0 && b >= 0, "eventfd, /dev/null");

	REQUIRE(tb_fd_snapshot_take(&s) == 0, "snapshot");
	CHECK(tb_fd_snapshot_find(&s, a) && tb_fd_snapshot_find(&s, b), "the snapshot has both fds");
	CHECK(tb_fd_snapshot_find(&s, a) && tb_fd_snapshot_find(&s, a)->cloexec, "and sees FD_CLOEXEC");
	CHECK_EQ(problems_of(&s, NULL, 0, "nothing happened"), 0, "a clean call: no problem");

	c = eventfd(0, EFD_CLOEXEC);
	CHECK_EQ(problems_of(&s, NULL, 0, "leak"), 1, "a new fd is a leak");
	CHECK_EQ(problems_of(&s, &c, 1, "documented output"), 0, "unless it is a documented output");
	close(c);

	close(b);
	CHECK_EQ(problems_of(&s, NULL, 0, "closed"), 1, "a borrowed fd closed is caught");

	/* Same number, another file: what a double close turns into. */
	c = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	REQUIRE(c == b, "the lowest free number is reused (%d, %d)", c, b);
	CHECK_EQ(problems_of(&s, NULL, 0, "swapped"), 1, "a closed-and-reused fd number is caught");
	close(c);

	tb_fd_snapshot_free(&s);
	close(a);
	return tb_finish();
}
