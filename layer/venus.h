/* SPDX-License-Identifier: MIT */
/*
 * Mesa's venus driver (Vulkan over virtio-gpu): what the layer asks of it.
 * The bottom of the layer's files, next to map (device.h lists them); it
 * calls nothing of the layer's.
 */
#ifndef SBL_VENUS_H
#define SBL_VENUS_H

/*
 * Before the layer calls down vkCreateInstance: unless SYNCBRIDGE_VENUS_FENCING=0
 * or venus_implicit_fencing is in the environment already, set it to true, so
 * that venus hands out SYNC_FD exports pending instead of waiting on the CPU
 * for the work in each one (venus.c says why that is safe now).
 */
void sbl_venus_prepare(void);

#endif
