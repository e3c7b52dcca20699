/* SPDX-License-Identifier: MIT */
#ifndef SB_SYNC_FILE_INTERNAL_H
#define SB_SYNC_FILE_INTERNAL_H

#include "private.h"

#include <stdint.h>

/*
 * Validate a foreign fd as a sync_file (SYNC_IOC_FILE_INFO) and read its
 * aggregate status / fence count (either pointer may be NULL).
 * Returns 0, -EBADF (not open) or -EINVAL (open, but not a sync_file).
 */
SB_PRIVATE int sb_sync_file_check(int fd, int32_t *status, uint32_t *num_fences);

#endif
