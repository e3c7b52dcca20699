/* SPDX-License-Identifier: MIT */
/*
 * now_ns(): CLOCK_MONOTONIC in ns, the one clock of every deadline, timeout
 * and timestamp in the tree — the kernel's sync_file timestamps, the trace,
 * the libraries' waits, the tests' timeouts. Header-only (static inline) so
 * that the libraries, the layer and the programs share the definition
 * without linking anything of common/.
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
