/* SPDX-License-Identifier: MIT */
/* Shared between the PipeWire bridge's files (pw_sync.c holds the object). */
#ifndef SB_PW_INTERNAL_H
#define SB_PW_INTERNAL_H

#include <stdbool.h>

struct sb_pw_sync;

/* SYNCBRIDGE_DISABLE was set when the object was made. */
bool sb_pw_sync_disabled(const struct sb_pw_sync *sync);

#endif
