/* SPDX-License-Identifier: MIT */
/*
 * Mesa's venus driver (Vulkan over virtio-gpu): what the layer asks of it.
 * The bottom of the layer's files, next to map (device.h lists them); it
 * calls nothing of the layer's.
 */
#ifndef SBL_VENUS_H
#define SBL_VENUS_H

/*
 * Before the layer calls down vkCreateInstance: with SYNCBRIDGE_VENUS_FENCING=1
 * (opt-in) and venus_implicit_fencing not in the environment yet, set it to
 * true, so that venus hands out SYNC_FD exports pending instead of waiting on
 * the CPU for the work in each one. Not the default: venus.c says why.
 */
void sbl_venus_prepare(void);

#endif
