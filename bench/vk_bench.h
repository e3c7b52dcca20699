/* SPDX-License-Identifier: MIT */
/*
 * What the Vulkan benchmarks (figures 1, 2 and 6 of docs/performance.md:
 * bench/vk_submit.c, bench/vk_acqrel.c, bench/vk_cube.c) share on top of the
 * Vulkan app of common/ (common/vk.h): two Vulkan instances and devices in
 * one process, one with VK_LAYER_SYNCBRIDGE_implicit_sync and one without,
 * so that iterations of the two can be interleaved.
 *
 * The loader decides an instance's layers at vkCreateInstance, so the layer
 * is enabled by name (ppEnabledLayerNames, from the build tree's explicit
 * manifest on VK_ADD_LAYER_PATH) in one instance and not named in the other
 * (testbed/tbvk.h, TBVK_ACTIVATE_APP: the build tree's implicit manifest is
 * kept off the loader's path, so it cannot slip the layer into the floor);
 * SYNCBRIDGE_DISABLE is cleared, as it would turn the named layer off from
 * inside. vkb_init() checks both ways that this worked and exits 1
 * otherwise: a floor with the layer in it, or a variant without, would make
 * the figure meaningless.
 */
#ifndef SB_BENCH_VK_BENCH_H
#define SB_BENCH_VK_BENCH_H

#include <stdbool.h>

#include "vk.h"

/* Print to stderr and exit 1 (a benchmark has no partial result). */
void vkb_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Set the loader's environment (before the first vkCreateInstance). */
void vkb_env_setup(void);

/*
 * Instance + device on the CPU (lavapipe) device, with dma-buf memory import,
 * VK_EXT_queue_family_foreign and SYNC_FD semaphores (the floor uses them by
 * hand; the layer would enable them itself). with_layer: name the layer, and
 * check that it is active (its vkQueueSubmit is the one the app gets, and the
 * device lists it); without: check that it is absent. Exits 77 when the
 * driver cannot import dma-bufs or lacks SYNC_FD semaphores (not the guest),
 * 1 on any failure then or later (t->cfg.fail): calls into vk.h need no checks.
 */
void vkb_init(struct vkt *t, bool with_layer);
/* The same with the app's own requirements (enum vkt_ext) and features
 * (enum vkt_feature) instead of dma-buf import + SYNC_FD + foreign family. */
void vkb_init_with(struct vkt *t, bool with_layer, unsigned require, unsigned features);

/*
 * Run iterate(side, record) for both sides, iterations times after 20 warm-up
 * ones (record false), the order swapped every iteration so that neither side
 * always goes first; prints the time it took.
 */
void vkb_interleave(long iterations, void (*iterate)(void *side, bool record), void *layer,
		    void *floor);

/* A side's end: wait for its device to go idle, destroy its fence and free
 * its command buffer (either may be VK_NULL_HANDLE / NULL). */
void vkb_side_idle_release(struct vkt *t, VkFence fence, VkCommandBuffer cb);

/* Samples and the figure line: wake_stats.h (bench_samples, bench_print_us, now_ns). */

#endif
