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
 * fence instead. It used to be opt-in, because with it a batch that waits on
 * a timeline value another thread signals later (wait-before-signal) hung in
 * 3 of 4 runs. That hang was the layer's: it exported the release's SYNC_FD
 * while the batch's dependency was not yet submitted, which
 * VUID-VkSemaphoreGetFdInfoKHR-handleType-03254 forbids, and venus queues
 * that export on its command ring as a host export waiting for the
 * dependency, ahead of the app's vkSignalSemaphore. The layer now exports
 * only once every dependency is submitted (resolve.c), so it sets the option
 * by default: SYNCBRIDGE_VENUS_FENCING unset or 1 sets
 * venus_implicit_fencing=true unless the environment names it already (then
 * it is kept); SYNCBRIDGE_VENUS_FENCING=0 leaves venus alone (its exports
 * wait on the CPU, so each release submit lasts as long as its work). Other
 * drivers ignore the name. The option also applies to the app's own exports
 * and venus's WSI, which then hand out pending fences too: what the spec
 * describes, and what an implicit-sync consumer of its buffers needs.
 * setenv() runs while the app is inside vkCreateInstance; an app thread
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
	if (knob && strcmp(knob, "0") == 0)
		return;
	if (knob && *knob && strcmp(knob, "1") != 0)
		sb_warn("layer: SYNCBRIDGE_VENUS_FENCING=%s is not 0|1 (caller); using 1", knob);
	const char *set = getenv(VENUS_OPTION);
	if (set) {
		sb_debug("layer: " VENUS_OPTION "=%s already in the environment: kept", set);
		return;
	}
	if (setenv(VENUS_OPTION, "true", 0) != 0) {
		sb_log_errno(SB_LOG_WARN, errno, "layer: cannot set " VENUS_OPTION "=true");
		return;
	}
	sb_debug("layer: set " VENUS_OPTION "=true for Mesa's venus: its SYNC_FD exports are "
		 "handed out pending instead of waited for (SYNCBRIDGE_VENUS_FENCING=0: not)");
}
