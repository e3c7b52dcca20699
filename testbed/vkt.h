/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the layer tests: a plain Vulkan "app" (instance, device, dma-buf
 * imports, barriers, submits) written the way an application would, plus the
 * environment that activates the build-tree layer without `meson devenv`
 * (so the programs run the same on the host, in the guest and under gdb).
 *
 * Every program takes the common options parsed by vkt_parse_args():
 *   --control      set SYNCBRIDGE_DISABLE=1 (the loader then skips the
 *                  implicit layer): the same app without the bridge
 *   --image        share a LINEAR image instead of a buffer
 *   --sync2        vkCmdPipelineBarrier2 + vkQueueSubmit2
 *   --secondary    record the work in a secondary command buffer
 *   --no-barriers  no ownership transfers at all; SYNCBRIDGE_MODE=all
 *   --validation   stack VK_LAYER_KHRONOS_validation below the layer and
 *                  fail on any validation error
 *   --by-name      activate the layer through VK_INSTANCE_LAYERS (explicit
 *                  manifest) instead of the implicit manifest; with --control
 *                  the layer is loaded but SYNCBRIDGE_DISABLE=1 turns it off
 *   --fault NAME   fail, through libsbfault, the call behind one of the layer's
 *                  CPU-wait fallbacks during vkt_submit() (acquire-export,
 *                  release-export, release-import; vkt.c says which call):
 *                  the layer must keep the ordering and warn once. Needs
 *                  libsbfault linked in (the layer-fallback-* programs).
 *   --iterations N (programs that loop)
 */
#ifndef SB_TEST_VKT_H
#define SB_TEST_VKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#define VKT_LAYER_NAME "VK_LAYER_SYNCBRIDGE_implicit_sync"
#define VKT_VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

struct vkt_options {
	bool control;
	bool image;
	bool sync2;
	bool secondary;
	bool no_barriers;
	bool validation;
	bool by_name;
	const char *fault;
	long iterations;
	double seconds;
};

void vkt_parse_args(int argc, char **argv, struct vkt_options *opt);

/* How the layer gets activated. */
enum vkt_activation {
	VKT_ACTIVATE_NONE,     /* no build-tree manifest visible */
	VKT_ACTIVATE_IMPLICIT, /* XDG_DATA_DIRS + VK_ADD_IMPLICIT_LAYER_PATH */
	VKT_ACTIVATE_BY_NAME,  /* VK_ADD_LAYER_PATH + VK_INSTANCE_LAYERS */
	VKT_ACTIVATE_BOTH,     /* all of the above at once */
};

/*
 * Set the environment for an activation (before vkCreateInstance):
 * clears the variables it owns, then sets the layer search paths. With
 * extra_layers (":"-separated or NULL) VK_INSTANCE_LAYERS gets them too.
 */
void vkt_env_activate(enum vkt_activation how, const char *extra_layers);

/* The usual setup from options: implicit activation, control, mode, validation. */
void vkt_env_from_options(const struct vkt_options *opt);

/* With --fault: find libsbfault and start capturing stderr (vkt_fault_check()
 * ends it); vkt_submit() then arms the fault around the submit. */
void vkt_fault_begin(const struct vkt_options *opt);
/* With --fault: the fault was injected once, at the call it names, and the
 * layer warned exactly once about its CPU-wait fallback. */
void vkt_fault_check(const struct vkt_options *opt, int *failures);

/* Redirect stderr (fd 2) into a temporary file until vkt_capture_end(), which
 * returns its text (malloc'd; free it) and restores stderr. */
void vkt_capture_begin(void);
char *vkt_capture_end(void);
/* Occurrences of needle in text. */
int vkt_count(const char *text, const char *needle);

struct vkt {
	VkInstance instance;
	VkPhysicalDevice physical;
	VkDevice device;
	VkQueue queue;
	uint32_t family;
	VkCommandPool pool;
	VkPhysicalDeviceMemoryProperties mem_props;
	VkDebugUtilsMessengerEXT messenger;
	PFN_vkGetMemoryFdPropertiesKHR GetMemoryFdPropertiesKHR;
	bool has_foreign_family; /* VK_EXT_queue_family_foreign enabled */
	bool has_semaphore_fd;   /* the driver lists VK_KHR_external_semaphore_fd */
	bool has_dmabuf;         /* the driver lists VK_EXT_external_memory_dma_buf */
};

/* Validation messages of ERROR severity seen so far (all instances). */
extern int vkt_validation_errors;

/*
 * Create instance + device on the first physical device (lavapipe). The app
 * enables VK_KHR_external_memory_fd, VK_EXT_external_memory_dma_buf and
 * VK_EXT_queue_family_foreign when present, timelineSemaphore and
 * synchronization2 — never VK_KHR_external_semaphore_fd (the layer must add
 * it). require_dmabuf: skip (exit 77) when dma-buf import is missing.
 */
void vkt_init(struct vkt *t, const struct vkt_options *opt, bool require_dmabuf);
void vkt_finish(struct vkt *t);

/* A second device on the same instance (threads test). */
void vkt_init_device(struct vkt *t, const struct vkt *from);
void vkt_finish_device(struct vkt *t);

struct vkt_buffer {
	VkBuffer buffer;
	VkDeviceMemory memory;
	VkDeviceSize size;
	void *map; /* host buffers only */
};

struct vkt_image {
	VkImage image;
	VkDeviceMemory memory;
	uint32_t width, height;
	VkDeviceSize offset, row_pitch; /* LINEAR layout of the one subresource */
};

/* Host-visible coherent buffer, mapped, zeroed. */
void vkt_host_buffer(struct vkt *t, VkDeviceSize size, struct vkt_buffer *b);
/* Import a dma-buf (a dup of dmabuf_fd; the caller keeps its own). */
void vkt_import_buffer(struct vkt *t, int dmabuf_fd, VkDeviceSize size, struct vkt_buffer *b);
/* Import a dma-buf as a width×height R8G8B8A8 LINEAR image (GENERAL layout
 * after the first barrier). */
void vkt_import_image(struct vkt *t, int dmabuf_fd, VkDeviceSize dmabuf_size, uint32_t width,
		      uint32_t height, struct vkt_image *img);
void vkt_buffer_destroy(struct vkt *t, struct vkt_buffer *b);
void vkt_image_destroy(struct vkt *t, struct vkt_image *img);

/* The shared resource a test moves between the outside world and Vulkan. */
struct vkt_shared {
	bool is_image;
	struct vkt_buffer buf;
	struct vkt_image img;
};

/* Primary command buffer, begun. With opt->secondary a secondary is begun
 * too; vkt_cmd() returns the one to record the work into. */
struct vkt_rec {
	VkCommandBuffer primary;
	VkCommandBuffer secondary;
	bool one_time;
};

void vkt_begin(struct vkt *t, const struct vkt_options *opt, bool one_time, struct vkt_rec *rec);
VkCommandBuffer vkt_cmd(const struct vkt_rec *rec);
/* Ends the secondary (executing it in the primary) and the primary. */
void vkt_end(struct vkt *t, struct vkt_rec *rec);
void vkt_rec_free(struct vkt *t, struct vkt_rec *rec);

/*
 * Ownership transfer of the shared resource between FOREIGN (EXTERNAL when
 * the foreign family extension is missing) and our family: acquire (from
 * outside, dst_access on our side) or release (to outside, src_access on our
 * side). With opt->no_barriers only a plain memory barrier is recorded; with
 * opt->sync2 it is vkCmdPipelineBarrier2.
 */
void vkt_acquire(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
		 const struct vkt_shared *s, VkAccessFlags dst_access);
void vkt_release(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
		 const struct vkt_shared *s, VkAccessFlags src_access);
/* Copy shared → host buffer / host buffer → shared, plus a host-read barrier. */
void vkt_copy_from_shared(VkCommandBuffer cb, const struct vkt_shared *s, struct vkt_buffer *dst);
void vkt_copy_to_shared(VkCommandBuffer cb, struct vkt_buffer *src, const struct vkt_shared *s);
void vkt_host_read_barrier(VkCommandBuffer cb);

/*
 * Submit one command buffer (vkQueueSubmit, or vkQueueSubmit2 with
 * opt->sync2), optionally waiting on a timeline semaphore value first.
 */
VkResult vkt_submit(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
		    VkSemaphore wait_timeline, uint64_t wait_value, VkFence fence);

VkFence vkt_fence(struct vkt *t);
VkSemaphore vkt_timeline(struct vkt *t, uint64_t initial);

/* Bytes in [p, p+n) equal to v. */
size_t vkt_count_bytes(const void *p, size_t n, uint8_t v);

/* Whether the function pointer lives in the layer's shared object. */
bool vkt_in_layer(const void *func);

const char *vkt_result_name(VkResult r);

#define VK_CHECK(call)                                                              \
	do {                                                                        \
		VkResult vk_r_ = (call);                                            \
		REQUIRE(vk_r_ == VK_SUCCESS, "%s: %s", #call, vkt_result_name(vk_r_)); \
	} while (0)

#endif
