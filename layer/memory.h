/* SPDX-License-Identifier: MIT */
/*
 * Which VkDeviceMemory objects are dma-bufs (with the layer's own fd for
 * each), and which buffers and images are bound to them. Above device.h.
 */
#ifndef SBL_MEMORY_H
#define SBL_MEMORY_H

#include "device.h"

/* A dma-buf backed VkDeviceMemory. Refcounted: buffers, images and recorded
 * transfers hold references, so the fd stays valid until the last user. */
struct sbl_memory {
	atomic_int refs;
	VkDeviceMemory handle;
	int fd; /* our own dma-buf fd (a dup of the import, or an export) */
};

/* sbl_memory_ref(NULL) returns NULL; sbl_memory_unref(NULL) is a no-op. The
 * last unref closes the fd. */
struct sbl_memory *sbl_memory_ref(struct sbl_memory *mem);
void sbl_memory_unref(struct sbl_memory *mem);

#define SBL_MAX_PLANES 4

struct sbl_image {
	struct sbl_memory *mem[SBL_MAX_PLANES];
};

/* With the device gone from the store: drop every memory, buffer and image
 * entry (dev->memories, dev->buffers, dev->images). */
void sbl_memory_device_finish(struct sbl_device *dev);

/* The commands implemented here (name, function; NULL-terminated). */
extern const struct sbl_entry sbl_memory_entries[];

#endif
