/* SPDX-License-Identifier: MIT */
/*
 * The layer tests' side of common/'s Vulkan app (vk.h): the environment
 * that activates the build-tree layer without `meson devenv` (so the
 * programs run the same on the host, in the guest and under gdb; the
 * benchmarks use it too), the options every layer test takes, and the
 * harness glue: tbvk_init() bails out (or skips) on any failure, so a test's
 * calls into vk.h need no checks.
 *
 * Every program takes the common options parsed by tbvk_parse_args():
 *   --control      set SYNCBRIDGE_DISABLE=1 (the loader then skips the
 *                  implicit layer): the same app without the bridge
 *   --image        share a LINEAR image instead of a buffer
 *   --sync2        vkCmdPipelineBarrier2 + vkQueueSubmit2
 *   --secondary    record the work in a secondary command buffer
 *   --no-barriers  no ownership transfers at all; SYNCBRIDGE_MODE=all
 *   --validation   stack VK_LAYER_KHRONOS_validation below the layer and
 *                  fail on any validation error
 *   --exported     the shared resource is the driver's own memory, exported
 *                  as a dma-buf (vkt_export_buffer() / vkt_export_image()),
 *                  not a vgem buffer the app imports: for drivers that cannot
 *                  import other drivers' dma-bufs (venus). A vgem fence
 *                  still plays the foreign producer (tbvk_producer_fence()).
 *   --by-name      activate the layer through VK_INSTANCE_LAYERS (explicit
 *                  manifest) instead of the implicit manifest; with --control
 *                  the layer is loaded but SYNCBRIDGE_DISABLE=1 turns it off
 *   --fault NAME   fail, through libsbfault, the call behind one of the layer's
 *                  CPU-wait fallbacks during tbvk_submit() (acquire-export,
 *                  acquire-import, release-export, release-import; tbvk.c
 *                  says which call; acquire-import also stacks the test
 *                  layer VK_LAYER_SBTEST_fault below ours): the layer must
 *                  keep the ordering and warn once. Needs libsbfault linked
 *                  in (the layer-fallback-* programs).
 *   --iterations N (programs that loop)
 *   --signal MODE  the release scenario: when the signal its batch waits for
 *                  is submitted (other-thread, the default; same-thread,
 *                  after vkQueueSubmit; before the batch; alternate: the
 *                  first two by turns, round by round, for drivers where a
 *                  device costs minutes to bring up: venus)
 *   --hold fence|work  the release scenario: what keeps its work pending
 *                  (enum tbvk_hold)
 */
#ifndef TB_TBVK_H
#define TB_TBVK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel.h"
#include "vk.h"

/* When the release scenario (tests/layer/release.c) submits the signal its
 * batch waits for: before the batch, after it on the same thread, or from
 * another thread (the default). */
enum tbvk_signal {
	TBVK_SIGNAL_OTHER_THREAD,
	TBVK_SIGNAL_SAME_THREAD,
	TBVK_SIGNAL_BEFORE,
	TBVK_SIGNAL_ALTERNATE, /* other-thread in even rounds, same-thread in odd ones */
};
/* What keeps the release scenario's work pending once everything it depends
 * on is submitted: a foreign (vgem) fence its batch waits on, or real GPU
 * work before the copy (for drivers that wait for imported fences on the CPU
 * inside vkQueueSubmit: venus). */
enum tbvk_hold { TBVK_HOLD_FENCE, TBVK_HOLD_WORK };

struct tbvk_options {
	enum tbvk_signal signal; /* --signal other-thread|same-thread|before|alternate */
	enum tbvk_hold hold;     /* --hold fence|work */
	/* Not an option: set by a program between tbvk_start() and tbvk_init()
	 * when the app itself imports SYNC_FD payloads (VK_KHR_external_semaphore_fd
	 * required; the layer tests otherwise leave it to the layer). */
	bool app_semaphore_fd;
	bool control;
	bool image;
	bool sync2;
	bool secondary;
	bool no_barriers;
	bool validation;
	bool by_name;
	bool exported;
	const char *fault;
	long iterations;
	double seconds;
};

void tbvk_parse_args(int argc, char **argv, struct tbvk_options *opt);

/* How the layer gets activated. */
enum tbvk_activation {
	TBVK_ACTIVATE_NONE,     /* no build-tree manifest visible */
	TBVK_ACTIVATE_IMPLICIT, /* XDG_DATA_DIRS + VK_ADD_IMPLICIT_LAYER_PATH */
	TBVK_ACTIVATE_BY_NAME,  /* VK_ADD_LAYER_PATH + VK_INSTANCE_LAYERS */
	TBVK_ACTIVATE_BOTH,     /* all of the above at once */
	/* VK_ADD_LAYER_PATH only: an instance has the layer when the app names
	 * it (ppEnabledLayerNames). The build tree's implicit manifest is taken
	 * off XDG_DATA_DIRS (meson devenv puts it there), where it would slip
	 * the layer into every instance (the benchmarks' floor). */
	TBVK_ACTIVATE_APP,
};

/*
 * Set the environment for an activation (before vkCreateInstance):
 * clears the variables it owns, then sets the layer search paths. With
 * extra_layers (":"-separated or NULL) VK_INSTANCE_LAYERS gets them too.
 */
void tbvk_env_activate(enum tbvk_activation how, const char *extra_layers);

/* The usual setup from options: implicit activation, control, mode, validation. */
void tbvk_env_from_options(const struct tbvk_options *opt);

/*
 * A layer test's start: parse the options, set the environment from them,
 * open vgem (skip where there is none). Returns the vgem fd.
 */
int tbvk_start(int argc, char **argv, struct tbvk_options *opt);

/* With --fault: find libsbfault and start capturing stderr (tbvk_fault_check()
 * ends it); tbvk_submit() then arms the fault around the submit. */
void tbvk_fault_begin(const struct tbvk_options *opt);
/* With --fault: the fault was injected once, at the call it names, and the
 * layer warned exactly once about its CPU-wait fallback. */
void tbvk_fault_check(const struct tbvk_options *opt, int *failures);

/* Redirect stderr (fd 2) into a temporary file until tbvk_capture_end(), which
 * returns its text (malloc'd; free it) and restores stderr. */
void tbvk_capture_begin(void);
char *tbvk_capture_end(void);
/* Occurrences of needle in text. */
int tbvk_count(const char *text, const char *needle);

/* The harness as vk.h's fail: skip (77) on -ENODEV, else bail out (1). */
void tbvk_test_fail(struct vkt *t, int err);

/*
 * Create instance + device on the CPU device (lavapipe) with the test
 * harness as t->cfg.fail (tbvk_test_fail()). The app
 * enables VK_KHR_external_memory_fd, VK_EXT_external_memory_dma_buf and
 * VK_EXT_queue_family_foreign when present, timelineSemaphore and
 * synchronization2 — never VK_KHR_external_semaphore_fd (the layer must add
 * it). require_dmabuf: skip (exit 77) when dma-buf import is missing.
 */
void tbvk_init(struct vkt *t, const struct tbvk_options *opt, bool require_dmabuf);

/*
 * For the tests that watch the loader and the layer's own start (loader.c,
 * environ.c), not an app's work: a Vulkan 1.1 instance with only the layers
 * named (ppEnabledLayerNames) and no extensions. Skips (exit 77) where the
 * loader finds no driver and bails out on any other failure, ending a
 * capture (tbvk_capture_begin()) first so that the reason reaches the log.
 */
VkInstance tbvk_bare_instance(uint32_t layer_count, const char *const *layers);
/* The instance's first physical device, or VK_NULL_HANDLE where it has none. */
VkPhysicalDevice tbvk_first_physical(VkInstance instance);
/* A device with one queue of family 0 and nothing enabled. */
VkResult tbvk_bare_device(VkPhysicalDevice pd, VkDevice *device);

/* The shared resource a test moves between the outside world and Vulkan. */
struct tbvk_shared {
	bool is_image;
	bool exported; /* the driver's memory (--exported): the sbk_buf's map is Vulkan's */
	struct vkt_buffer buf;
	struct vkt_image img;
};

/*
 * A vgem dma-buf of size bytes (twice that for --image: room for a LINEAR
 * image's row padding) filled with fill, imported as the shared buffer or
 * (--image) a 64×64 R8G8B8A8 LINEAR image in GENERAL layout. With --exported
 * the buffer or image is the driver's own exported memory instead, and buf
 * describes it: buf->fd its dma-buf, buf->map Vulkan's mapping, buf->size
 * the mapped bytes (tbvk_shared_destroy() knows not to munmap it).
 */
void tbvk_shared_create(struct vkt *t, const struct tbvk_options *opt, int vgem, size_t size,
		       uint8_t fill, struct sbk_buf *buf, struct tbvk_shared *s);
void tbvk_shared_destroy(struct vkt *t, struct tbvk_shared *s, struct sbk_buf *buf);
/*
 * The foreign producer's WRITE fence on the shared dma-buf: a vgem fence
 * (signal it with sbk_vgem_fence_signal(vgem, *fence_id)). On a vgem buffer
 * it is attached directly; on exported memory (--exported), which vgem cannot
 * fence, it is attached to a vgem buffer of its own and imported into the
 * shared dma-buf (DMA_BUF_IOCTL_IMPORT_SYNC_FILE): what another driver's
 * pending write looks like there.
 */
void tbvk_producer_fence(const struct tbvk_shared *s, int vgem, struct sbk_buf *buf,
			uint32_t *fence_id);

/*
 * The start of an acquire or release test: tbvk_start(), --fault armed
 * (tbvk_fault_begin()), a dma-buf capable device (tbvk_init()) and the shared
 * buffer or image filled with fill (tbvk_shared_create()). Returns the vgem fd.
 */
int tbvk_setup_shared(int argc, char **argv, size_t size, uint8_t fill, struct tbvk_options *opt,
		     struct vkt *t, struct sbk_buf *buf, struct tbvk_shared *s);

/* Primary command buffer, begun. With opt->secondary a secondary is begun
 * too; tbvk_cmd() returns the one to record the work into. */
struct tbvk_rec {
	VkCommandBuffer primary;
	VkCommandBuffer secondary;
	bool one_time;
};

void tbvk_begin(struct vkt *t, const struct tbvk_options *opt, bool one_time, struct tbvk_rec *rec);
VkCommandBuffer tbvk_cmd(const struct tbvk_rec *rec);
/* Ends the secondary (executing it in the primary) and the primary. */
void tbvk_end(struct vkt *t, struct tbvk_rec *rec);
void tbvk_rec_free(struct vkt *t, struct tbvk_rec *rec);

/*
 * Ownership transfer of the shared resource between FOREIGN (EXTERNAL when
 * the foreign family extension is missing) and our family: acquire (from
 * outside, dst_access on our side) or release (to outside, src_access on our
 * side). With opt->no_barriers only a plain memory barrier is recorded; with
 * opt->sync2 it is vkCmdPipelineBarrier2.
 */
void tbvk_acquire(struct vkt *t, const struct tbvk_options *opt, VkCommandBuffer cb,
		 const struct tbvk_shared *s, VkAccessFlags dst_access);
void tbvk_release(struct vkt *t, const struct tbvk_options *opt, VkCommandBuffer cb,
		 const struct tbvk_shared *s, VkAccessFlags src_access);
/* Copy shared → host buffer / host buffer → shared. */
void tbvk_copy_from_shared(VkCommandBuffer cb, const struct tbvk_shared *s, struct vkt_buffer *dst);
void tbvk_copy_to_shared(VkCommandBuffer cb, struct vkt_buffer *src, const struct tbvk_shared *s);
/*
 * What an acquire/release cycle moves (the soaks, the threads): a vgem
 * dma-buf (zeroed) imported as the shared buffer, and two host buffers, src
 * to copy into it and dst to copy out of it.
 */
struct tbvk_cycle {
	struct sbk_buf buf;
	struct tbvk_shared sh;
	struct vkt_buffer src, dst;
};

void tbvk_cycle_create(struct vkt *t, int vgem, size_t size, struct tbvk_cycle *c);
void tbvk_cycle_destroy(struct vkt *t, struct tbvk_cycle *c);
/* One whole cycle into cb: acquire the shared buffer, copy it into dst,
 * copy src into it, release it. */
void tbvk_record_cycle(struct vkt *t, const struct tbvk_options *opt, VkCommandBuffer cb,
		      struct tbvk_cycle *c);

/*
 * "The GPU is still busy": a thread that runs fn(arg) (signals what the
 * app's batch waits for) delay_ns after tbvk_deferred_start(), or, with
 * when_told, only once tbvk_deferred_tell() was called: a control's signal
 * that must come after its reader, however slowly the reader runs.
 */
struct tbvk_deferred {
	void (*fn)(void *arg);
	void *arg;
	int64_t delay_ns;
	bool when_told;
	/* tbvk_deferred_start()'s */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool told;
};

void tbvk_deferred_start(struct tbvk_deferred *d);
void tbvk_deferred_tell(struct tbvk_deferred *d);
/* Waits for the thread (fn has run) and frees what start made. */
void tbvk_deferred_join(struct tbvk_deferred *d);

/*
 * Submit one command buffer (vkQueueSubmit, or vkQueueSubmit2 with
 * opt->sync2), optionally waiting on a timeline semaphore value first.
 */
VkResult tbvk_submit(struct vkt *t, const struct tbvk_options *opt, VkCommandBuffer cb,
		    VkSemaphore wait_timeline, uint64_t wait_value, VkFence fence);
/* The same with n waits (values: each timeline's; ignored for binary ones). */
VkResult tbvk_submit_waits(struct vkt *t, const struct tbvk_options *opt, VkCommandBuffer cb,
			  uint32_t n, const VkSemaphore *waits, const uint64_t *values,
			  VkFence fence);

#define VK_CHECK(call)                                                              \
	do {                                                                        \
		VkResult vk_r_ = (call);                                            \
		REQUIRE(vk_r_ == VK_SUCCESS, "%s: %s", #call, vkt_result_name(vk_r_)); \
	} while (0)

#endif
