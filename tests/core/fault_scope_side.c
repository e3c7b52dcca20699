/* SPDX-License-Identifier: MIT */
/* A stand-in side library for fault-scope-through-core (fault_scope.c): one call into the shared core. */
#include <stdbool.h>

#include <syncbridge/sync_file.h>

__attribute__((visibility("default"))) int sbtest_side_is_valid(int fd);

int
sbtest_side_is_valid(int fd)
{
	return sb_sync_file_is_valid(fd) ? 1 : 0;
}
