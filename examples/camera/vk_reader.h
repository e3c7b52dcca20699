/* SPDX-License-Identifier: MIT */
/*
 * The camera demo's Vulkan consumer: every buffer's dma-buf imported once as
 * a VkBuffer; a read is an acquire from FOREIGN, a copy into host memory and
 * a release to FOREIGN — VK_LAYER_SYNCBRIDGE_implicit_sync makes the copy
 * wait for the dma-buf's writers and puts a READ fence on it.
 */
#ifndef SB_DEMO_VK_READER_H
#define SB_DEMO_VK_READER_H

#include <stdbool.h>
#include <stddef.h>

struct vk_reader;

/* fds: borrowed (Vulkan imports duplicates). Returns 0, -ENODEV, -EIO, -ENOMEM. */
int vk_reader_create(const int *fds, const size_t *sizes, unsigned count, struct vk_reader **out);
/* Copy buffer i into dst (sizes[i] bytes); returns when the copy is done. */
int vk_reader_read(struct vk_reader *r, unsigned i, void *dst);
const char *vk_reader_describe(const struct vk_reader *r);
bool vk_reader_layer_active(const struct vk_reader *r);
/* NULL is a no-op. */
void vk_reader_destroy(struct vk_reader *r);

#endif
