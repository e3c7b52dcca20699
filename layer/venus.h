/* SPDX-License-Identifier: MIT */
/*
 * Mesa's venus driver (Vulkan over virtio-gpu): what the layer asks of it.
 * The bottom of the layer's files, next to map (device.h lists them); it
 * calls nothing of the layer's.
 */
#ifndef SBL_VENUS_H
#define SBL_VENUS_H

#include <stdbool.h>

/* What sbl_venus_prepare changed, for sbl_venus_restore. */
struct sbl_venus_env {
	bool unset_after; /* we set venus_implicit_fencing: unset it after the call */
};

/*
 * Right before the layer calls vkCreateInstance down (enabled: the layer is
 * not off): where a venus device is present and venus_implicit_fencing is not
 * in the environment, set it to true so that venus hands out SYNC_FD exports
 * pending instead of waiting on the CPU for the work in each one
 * (SYNCBRIDGE_VENUS_FENCING: venus.c).
 */
void sbl_venus_prepare(struct sbl_venus_env *env, bool enabled);

/* Right after the call: the environment as it was before sbl_venus_prepare. */
void sbl_venus_restore(struct sbl_venus_env *env);

#endif
