/* SPDX-License-Identifier: MIT */
/*
 * Per command buffer, the queue family ownership transfers of dma-buf
 * memory it records (track.c). Above memory.h.
 */
#ifndef SBL_TRACK_H
#define SBL_TRACK_H

#include "memory.h"

/* What a submit does with a dma-buf. */
enum sbl_xfer_kind {
	SBL_XFER_ACQUIRE, /* from FOREIGN/EXTERNAL: wait for its implicit fences */
	SBL_XFER_RELEASE, /* to FOREIGN/EXTERNAL: attach our fence */
};

/* One recorded ownership transfer of a dma-buf memory. */
struct sbl_xfer {
	struct sbl_memory *mem; /* referenced */
	enum sbl_xfer_kind kind;
	int access;             /* enum sb_access */
};

struct sbl_cmd {
	VkCommandPool pool;
	struct sbl_xfer *xfers;
	uint32_t count, capacity;
};

/* With the device gone from the store: drop every command buffer entry
 * (dev->cmds). */
void sbl_track_device_finish(struct sbl_device *dev);

/* The commands implemented here (name, function; NULL-terminated). */
extern const struct sbl_entry sbl_track_entries[];

#endif
