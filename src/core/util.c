/* SPDX-License-Identifier: MIT */
#include "util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <time.h>

int
sb_ioctl(int fd, unsigned long request, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, request, arg);
	} while (ret == -1 && (errno == EINTR || errno == EAGAIN));

	return ret == -1 ? -errno : ret;
}

int
sb_fd_dup(int fd)
{
	int ret = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	return ret < 0 ? -errno : ret;
}

int
sb_fd_check_open(int fd)
{
	if (fd < 0 || fcntl(fd, F_GETFD) < 0)
		return -EBADF;
	return 0;
}

int64_t
sb_deadline_from_timeout(int64_t now, int64_t timeout_ns)
{
	if (timeout_ns < 0)
		return INT64_MAX;
	if (timeout_ns > INT64_MAX - now)
		return INT64_MAX;
	return now + timeout_ns;
}

int64_t
sb_deadline_remaining(int64_t now, int64_t deadline_ns)
{
	if (deadline_ns == INT64_MAX)
		return -1;
	return deadline_ns > now ? deadline_ns - now : 0;
}

int
sb_poll_until(int fd, short events, int64_t deadline_ns)
{
	/* poll() ignores negative fds: that would be a silent wait for nothing. */
	if (fd < 0)
		return -EBADF;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		int64_t left = sb_deadline_remaining(sb_now_ns(), deadline_ns);
		struct timespec ts, *tsp = NULL;
		int ret;

		if (left >= 0) {
			ts.tv_sec = left / 1000000000;
			ts.tv_nsec = left % 1000000000;
			tsp = &ts;
		}

		/* ppoll keeps nanosecond resolution; poll() would round to ms. */
		ret = ppoll(&pfd, 1, tsp, NULL);
		if (ret > 0) {
			if (pfd.revents & POLLNVAL)
				return -EBADF;
			return pfd.revents;
		}
		if (ret == 0) {
			/* The kernel may wake a little early: only a passed
			 * deadline is a timeout. */
			if (sb_deadline_remaining(sb_now_ns(), deadline_ns) == 0)
				return -ETIME;
			continue;
		}
		if (errno != EINTR && errno != EAGAIN)
			return -errno;
	}
}
