/* SPDX-License-Identifier: MIT */
/*
 * now_ns(): CLOCK_MONOTONIC in ns, the clock of the programs' and the tests'
 * deadlines, timeouts and timestamps — the same clock as the kernel's
 * sync_file timestamps and the libraries' sb_now_ns() (src/core/util.h:
 * the libraries and the layer never include common/). Header-only (static
 * inline), so a program needs nothing linked for it.
 */
#ifndef SB_COMMON_CLOCK_H
#define SB_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
