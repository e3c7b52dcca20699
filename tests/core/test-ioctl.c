/* SPDX-License-Identifier: MIT */
/*
 * sb_ioctl() (src/core/util.h), the one ioctl wrapper: the ioctl's non-negative
 * result on success, -errno on failure (never -1 with errno set), and the
 * caller's fd untouched.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/sync_file.h>
#include <sys/ioctl.h>

#include "harness.h"
#include "util.h"

int
main(void)
{
	struct sync_file_info info;
	int p[2], closed, avail, ret, fds_before;

	fds_before = tb_count_fds();
	REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));

	/* A sync_file ioctl on a pipe: the kernel says ENOTTY. */
	memset(&info, 0, sizeof(info));
	errno = 0;
	CHECK_EQ(sb_ioctl(p[0], SYNC_IOC_FILE_INFO, &info), -ENOTTY, "SYNC_IOC_FILE_INFO on a pipe");

	/* Not an fd at all. */
	CHECK_EQ(sb_ioctl(-1, SYNC_IOC_FILE_INFO, &info), -EBADF, "ioctl on fd -1");
	CHECK_EQ(sb_ioctl(INT_MAX, SYNC_IOC_FILE_INFO, &info), -EBADF, "ioctl on fd INT_MAX");
	closed = open("/dev/null", O_RDONLY | O_CLOEXEC);
	REQUIRE(closed >= 0, "open /dev/null: %s", strerror(errno));
	close(closed);
	CHECK_EQ(sb_ioctl(closed, SYNC_IOC_FILE_INFO, &info), -EBADF, "ioctl on a closed fd");

	REQUIRE(write(p[1], "hello", 5) == 5, "write: %s", strerror(errno));

	/* Success: the ioctl's result (0) and its output. */
	avail = -1;
	ret = sb_ioctl(p[0], FIONREAD, &avail);
	CHECK_EQ(ret, 0, "FIONREAD on a pipe holding 5 bytes");
	CHECK_EQ(avail, 5, "FIONREAD result");

	/* The pipe still works: the wrapper did nothing else to it. */
	char buf[8];
	CHECK(read(p[0], buf, sizeof(buf)) == 5 && memcmp(buf, "hello", 5) == 0,
	      "pipe still carries its data");

	close(p[0]);
	close(p[1]);
	CHECK_EQ(tb_count_fds(), fds_before, "fd count");
	return tb_finish();
}
