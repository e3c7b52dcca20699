/* SPDX-License-Identifier: MIT */
/*
 * vkQueueSubmit / vkQueueSubmit2 (submit.c). Above batch.h.
 */
#ifndef SBL_SUBMIT_H
#define SBL_SUBMIT_H

#include "device.h"

/* The commands implemented here (name, function; NULL-terminated). */
extern const struct sbl_entry sbl_submit_entries[];

#endif
