/* SPDX-License-Identifier: MIT */
/* Internal helpers: the ioctl wrapper, fd ownership helpers, monotonic time. */
#ifndef SB_UTIL_H
#define SB_UTIL_H

#include "private.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#define SB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The one ioctl wrapper: retries EINTR and EAGAIN (as libdrm's drmIoctl does;
 * the sync_file, dma-buf and DRM ioctls used here return EAGAIN only for
 * "try again", never for "would block"). Returns the ioctl's non-negative
 * result or -errno.
 */
SB_PRIVATE int sb_ioctl(int fd, unsigned long request, void *arg);

/* Close *fd if it is open and set it to -1. */
static inline void
fd_clear(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
	*fd = -1;
}

/* Hand the fd out of *fd: returns it and leaves -1 behind. */
static inline int
fd_move(int *fd)
{
	int ret = *fd;
	*fd = -1;
	return ret;
}

/* Replace *fd with new_fd, closing the old one. */
static inline void
fd_replace(int *fd, int new_fd)
{
	if (*fd != new_fd)
		fd_clear(fd);
	*fd = new_fd;
}

/* F_DUPFD_CLOEXEC; returns the new fd or -errno. */
SB_PRIVATE int sb_fd_dup(int fd);

/* -EBADF if fd is not an open descriptor, else 0. */
SB_PRIVATE int sb_fd_check_open(int fd);

/*
 * CLOCK_MONOTONIC in ns: the clock of every deadline, timeout and timestamp
 * in the libraries and the layer (the kernel's sync_file timestamps use it
 * too). Header-only, so that the side libraries and the layer need nothing
 * linked for it; the programs have common/clock.h's now_ns(), the same clock,
 * and the libraries never include common/.
 */
static inline int64_t
sb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Deadline arithmetic for relative timeouts (SB_TIMEOUT_INFINITE = -1):
 * sb_deadline_from_timeout() turns a relative timeout into an absolute
 * CLOCK_MONOTONIC deadline (INT64_MAX = none, saturating on overflow);
 * sb_deadline_remaining() gives what is left (never negative; -1 = none).
 */
SB_PRIVATE int64_t sb_deadline_from_timeout(int64_t now, int64_t timeout_ns);
SB_PRIVATE int64_t sb_deadline_remaining(int64_t now, int64_t deadline_ns);

/*
 * poll() one fd for `events` until the absolute deadline, resuming with the
 * remaining time after EINTR. Returns the revents (> 0), -ETIME when the
 * deadline passed, or -errno.
 */
SB_PRIVATE int sb_poll_until(int fd, short events, int64_t deadline_ns);

#endif
