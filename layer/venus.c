/* SPDX-License-Identifier: MIT */
/*
 * Mesa's venus and the release path.
 *
 * A release exports the batch's signal semaphore as a SYNC_FD right after
 * vkQueueSubmit and attaches it to the dma-buf. Mesa's venus (25.0,
 * vn_queue.c, vn_GetSemaphoreFdKHR and vn_GetFenceFdKHR) makes that fence
 * with an empty virtio-gpu submit on the queue's ring, so it is pending and
 * signals once the host's queue has done the work before it; but in builds
 * with an X11 or Wayland platform it then waits for it on the CPU:
 *
 *     if (!dev->renderer->info.has_implicit_fencing)
 *        sync_wait(fd, -1);
 *
 * and has_implicit_fencing is only ever the driconf option
 * venus_implicit_fencing ("Assume the virtio-gpu kernel driver supports
 * implicit fencing", read at vkCreateInstance; an environment variable of the
 * same name overrides drirc). Without it every release would stall the app's
 * vkQueueSubmit until its own GPU work is done (measured in the venus guest:
 * the submit took as long as the work). With it the export returns at once
 * and the dma-buf carries the pending fence, which is what implicit sync
 * wants. The option's other effect is venus's own WSI: a present then puts
 * its fence on the swapchain image's buffer (a virtio-gpu submit listing it)
 * instead of waiting for the queue to go idle — again what a compositor
 * reading that buffer implicitly needs.
 *
 * Measured in the venus guest (docs/layer.md, "Mesa's venus"; figure 8):
 * with the option a release submit's median dropped from 168 ms (the work's
 * length) to 17 ms, and a poll()ing consumer then waited for the pending
 * fence instead. But a batch that waits on a timeline value another thread
 * signals later (wait-before-signal, legal Vulkan: the layer-release test)
 * never finished in 3 of 4 runs with the option (killed after 90-150 s) and
 * finished in all 4 without. Until that is understood a layer must not
 * turn it on behind an app's back, so it is opt-in:
 * SYNCBRIDGE_VENUS_FENCING=1 sets venus_implicit_fencing=true unless the
 * environment names it already (then it is kept). Other drivers ignore the
 * name. setenv() runs while the app is inside vkCreateInstance; an app thread
 * reading the environment at that very moment is the one risk, the same as
 * any library's setenv at initialisation.
 */
#include "venus.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define VENUS_OPTION "venus_implicit_fencing"

void
sbl_venus_prepare(void)
{
	const char *knob = getenv("SYNCBRIDGE_VENUS_FENCING");
	if (!knob || strcmp(knob, "1") != 0)
		return;
	const char *set = getenv(VENUS_OPTION);
	if (set) {
		sb_debug("layer: " VENUS_OPTION "=%s already in the environment: kept", set);
		return;
	}
	if (setenv(VENUS_OPTION, "true", 0) != 0) {
		sb_log_errno(SB_LOG_WARN, errno, "layer: SYNCBRIDGE_VENUS_FENCING=1: cannot set "
			     VENUS_OPTION "=true");
		return;
	}
	sb_debug("layer: SYNCBRIDGE_VENUS_FENCING=1: set " VENUS_OPTION "=true for Mesa's "
		 "venus: its SYNC_FD exports are handed out pending instead of waited for");
}
