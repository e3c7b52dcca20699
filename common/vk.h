/* SPDX-License-Identifier: MIT */
/*
 * A plain Vulkan application's plumbing, written the way an app would, for
 * the tests, the benchmarks and the examples (docs/testing.md, "Layout"):
 * instance and device (with a layer named or not, the dma-buf and SYNC_FD
 * extensions wanted or required), memory types, dma-bufs imported as buffers
 * and images, SYNC_FD semaphores, command buffers, and the queue family
 * ownership transfers with the outside world (FOREIGN) that
 * VK_LAYER_SYNCBRIDGE_implicit_sync turns into kernel fences.
 *
 * Errors: a call that fails writes what went wrong into t->why and calls
 * t->cfg.fail with -ENODEV (this machine lacks something: skip)
 * or -EIO. A test or benchmark passes a fail that does not return, so its
 * calls need no checks; an example passes one that prints (or none) and
 * checks what the calls return. The layer tests' options, environment and
 * harness glue are vkt.h.
 */
#ifndef SB_TESTBED_VK_H
#define SB_TESTBED_VK_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#define VKT_LAYER_NAME "VK_LAYER_SYNCBRIDGE_implicit_sync"
#define VKT_LAYER_LIBRARY "libVkLayer_SYNCBRIDGE_implicit_sync"
#define VKT_VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

struct vkt;

/* The device extensions vkt_create() knows: a config requires some (the
 * device lacks one: -ENODEV) and wants others (enabled when listed). */
enum vkt_ext {
	VKT_DMABUF = 1 << 0,       /* VK_KHR_external_memory_fd + VK_EXT_external_memory_dma_buf */
	VKT_SEMAPHORE_FD = 1 << 1, /* VK_KHR_external_semaphore_fd, SYNC_FD import and export */
	VKT_FOREIGN = 1 << 2,      /* VK_EXT_queue_family_foreign */
	VKT_DRM_MODIFIER = 1 << 3, /* VK_EXT_image_drm_format_modifier */
};

/* The device features vkt_create() enables when asked. */
enum vkt_feature {
	VKT_TIMELINE = 1 << 0,          /* timelineSemaphore (1.2) */
	VKT_SYNC2 = 1 << 1,             /* synchronization2 (1.3) */
	VKT_DYNAMIC_RENDERING = 1 << 2, /* dynamicRendering (1.3) */
};

struct vkt_config {
	const char *who;      /* prefix of vkt_fail_print()'s messages */
	const char *app_name; /* VkApplicationInfo */
	uint32_t api_version; /* the instance's; 0: 1.3, and the device must have 1.3 */
	const char *layer;    /* named in ppEnabledLayerNames, or NULL */
	/* VK_EXT_debug_utils messenger: validation errors are counted in
	 * vkt_validation_errors and printed as TAP comments. */
	bool validation;
	/* Which device: the first that has everything required; else (false)
	 * the CPU device (lavapipe) when there is one, or the first. */
	bool first_capable;
	unsigned require, want; /* enum vkt_ext; what is not named is not enabled
				 * (the layer may enable it itself) */
	unsigned features;      /* enum vkt_feature */
	void (*fail)(struct vkt *t, int err);
};

struct vkt {
	struct vkt_config cfg; /* a copy of vkt_create()'s */
	char why[320];         /* the last failure */
	VkInstance instance;
	VkPhysicalDevice physical;
	char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
	/* VkPhysicalDeviceDriverProperties.driverID where the instance and the
	 * device are Vulkan 1.2 or later; 0 (no such id) otherwise. */
	VkDriverId driver_id;
	VkDevice device;
	VkQueue queue;
	uint32_t family;
	VkCommandPool pool; /* RESET_COMMAND_BUFFER */
	VkPhysicalDeviceMemoryProperties mem_props;
	VkDebugUtilsMessengerEXT messenger;
	PFN_vkGetMemoryFdPropertiesKHR GetMemoryFdPropertiesKHR;
	/* With semaphore_fd enabled; otherwise NULL (even if the layer enabled it). */
	PFN_vkImportSemaphoreFdKHR ImportSemaphoreFdKHR;
	PFN_vkGetSemaphoreFdKHR GetSemaphoreFdKHR;
	/* The family on the other side of a transfer: FOREIGN when enabled, else EXTERNAL. */
	uint32_t outside_family;
	bool has_foreign_family; /* VK_EXT_queue_family_foreign enabled */
	bool has_dmabuf;         /* dma-buf import enabled */
	bool layer_active;       /* the device's vkQueueSubmit is the syncbridge layer's */
};

/* Validation messages of ERROR severity seen so far (all instances). */
extern int vkt_validation_errors;

/*
 * Instance, device (one queue), command pool. Returns 0; -ENODEV when there
 * is no driver, device or what the config requires (t->why says which); -EIO.
 * t->fail is called on failure; vkt_finish() cleans up after a failure too.
 */
int vkt_create(struct vkt *t, const struct vkt_config *cfg);
/* A second device on from's instance and physical device, with from's config. */
int vkt_create_device(struct vkt *t, const struct vkt *from);
/* The device and its pool (not the instance); a no-op when there is none. */
void vkt_finish_device(struct vkt *t);
/* Everything vkt_create() made. */
void vkt_finish(struct vkt *t);

/* Prints "who: why" to stderr: the examples' fail. */
void vkt_fail_print(struct vkt *t, int err);
/* Record a failure in t->why and call t->cfg.fail with err; returns err. */
int vkt_fail(struct vkt *t, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same for a failed Vulkan call ("what: VK_ERROR_…", -EIO); returns r. */
VkResult vkt_fail_vk(struct vkt *t, const char *what, VkResult r);

/* In a function returning 0 / -errno: a failed call is told to t, then -EIO. */
#define VKT_TRY(t, call)                                         \
	do {                                                     \
		VkResult vkt_try_r_ = (call);                    \
		if (vkt_try_r_ != VK_SUCCESS) {                  \
			vkt_fail_vk((t), #call, vkt_try_r_);     \
			return -EIO;                             \
		}                                                \
	} while (0)

/* In a function returning VkResult: a failed call is told to t, then returned. */
#define VKT_TRY_VK(t, call)                                      \
	do {                                                     \
		VkResult vkt_try_r_ = (call);                    \
		if (vkt_try_r_ != VK_SUCCESS)                    \
			return vkt_fail_vk((t), #call, vkt_try_r_); \
	} while (0)

/* A memory type in bits with all of flags, or -1. */
int vkt_memory_type(const struct vkt *t, uint32_t bits, VkMemoryPropertyFlags flags);

struct vkt_buffer {
	VkBuffer buffer;
	VkDeviceMemory memory;
	VkDeviceSize size;
	void *map; /* host and exported buffers only */
};

/* A host-visible coherent TRANSFER_SRC|DST buffer, mapped and zeroed. */
VkResult vkt_host_buffer(struct vkt *t, VkDeviceSize size, struct vkt_buffer *b);
/* A TRANSFER_SRC|DST buffer whose memory is external as a dma-buf, with no
 * memory bound yet, and its requirements; the raw result, nothing logged. */
VkResult vkt_dmabuf_buffer(struct vkt *t, VkDeviceSize size, VkBuffer *buffer,
			   VkMemoryRequirements *req);
/*
 * vkAllocateMemory of req's size and memory type `type`, dedicated to
 * dedicated_image (VK_NULL_HANDLE: a buffer's, not dedicated): memory that
 * exports as a dma-buf, or an import of the dma-buf fd. The import's fd is
 * Vulkan's on success ("importing memory from a file descriptor transfers
 * ownership of the file descriptor from the application to the Vulkan
 * implementation") and still the caller's on failure. The raw result,
 * nothing logged.
 */
VkResult vkt_dmabuf_memory_export(struct vkt *t, const VkMemoryRequirements *req, uint32_t type,
				  VkImage dedicated_image, VkDeviceMemory *mem);
VkResult vkt_dmabuf_memory_import(struct vkt *t, const VkMemoryRequirements *req, uint32_t type,
				  VkImage dedicated_image, int fd, VkDeviceMemory *mem);
/*
 * A TRANSFER_SRC|DST buffer on an imported dma-buf. dmabuf_fd is borrowed:
 * Vulkan imports a duplicate ("importing memory from a file descriptor
 * transfers ownership of the file descriptor from the application to the
 * Vulkan implementation": on success; on failure the duplicate is closed here).
 */
VkResult vkt_import_buffer(struct vkt *t, int dmabuf_fd, VkDeviceSize size, struct vkt_buffer *b);
/* Destroys and zeroes b; a zeroed b is a no-op. */
void vkt_buffer_destroy(struct vkt *t, struct vkt_buffer *b);

struct vkt_image {
	VkImage image;
	VkDeviceMemory memory;
	uint32_t width, height;
	VkDeviceSize offset, row_pitch; /* the one subresource's layout */
	void *map;             /* exported images only: the mapping of the whole memory */
	VkDeviceSize map_size; /* and its size */
};

struct vkt_image_desc {
	VkFormat format;
	uint32_t width, height;
	VkImageUsageFlags usage;
	/* false: VK_IMAGE_TILING_LINEAR, the driver's layout; true: the DRM
	 * LINEAR modifier with this pitch and offset (the producer's layout). */
	bool explicit_layout;
	uint32_t pitch, offset;
	bool bind2;               /* vkBindImageMemory2 (else vkBindImageMemory) */
	VkDeviceSize dmabuf_size; /* > 0: fail when the image needs more */
};

/* An image on an imported dma-buf, with its own dedicated memory; the
 * dma-buf fd as for vkt_import_buffer(). */
VkResult vkt_import_image(struct vkt *t, int dmabuf_fd, const struct vkt_image_desc *d,
			  struct vkt_image *img);
/*
 * The driver's own memory, exported as a dma-buf (host-visible, coherent,
 * mapped: b->map / img->map): a TRANSFER_SRC|DST buffer, or an image with the
 * LINEAR DRM modifier (VK_EXT_image_drm_format_modifier), dedicated memory.
 * On success *dmabuf_fd is a new dma-buf fd, the caller's to close; on
 * failure it is -1 (and t->cfg.fail was called).
 */
VkResult vkt_export_buffer(struct vkt *t, VkDeviceSize size, struct vkt_buffer *b, int *dmabuf_fd);
VkResult vkt_export_image(struct vkt *t, const struct vkt_image_desc *d, struct vkt_image *img,
			  int *dmabuf_fd);
/* Destroys and zeroes img; a zeroed img is a no-op. */
void vkt_image_destroy(struct vkt *t, struct vkt_image *img);
/* One command buffer that moves the images UNDEFINED → GENERAL; waits for it. */
VkResult vkt_images_to_general(struct vkt *t, const VkImage *images, unsigned count);

/* A primary command buffer from t->pool. */
VkResult vkt_cmd_alloc(struct vkt *t, VkCommandBuffer *cb);
/* The same, begun (flags: e.g. ONE_TIME_SUBMIT). */
VkResult vkt_cmd_begin(struct vkt *t, VkCommandBufferUsageFlags flags, VkCommandBuffer *cb);
/* Reset cb and begin it again, ONE_TIME_SUBMIT: a frame's re-recording. */
VkResult vkt_cmd_reset_begin(struct vkt *t, VkCommandBuffer cb);
/* Submit one command buffer; wait (at TRANSFER) and signal are optional. */
VkResult vkt_submit_one(struct vkt *t, VkCommandBuffer cb, VkSemaphore wait, VkSemaphore signal,
			VkFence fence);
/* Wait for fence (no time limit) and reset it. */
VkResult vkt_fence_wait(struct vkt *t, VkFence fence);
/* Submit cb, wait for fence and reset it: a synchronous round trip. */
VkResult vkt_submit_wait(struct vkt *t, VkCommandBuffer cb, VkFence fence);

/* Objects; VK_NULL_HANDLE on failure. */
VkFence vkt_fence(struct vkt *t);
VkSemaphore vkt_timeline(struct vkt *t, uint64_t initial);
/* A binary semaphore; exportable: as SYNC_FD. */
VkSemaphore vkt_semaphore(struct vkt *t, bool exportable);

/*
 * Import a sync_file (or -1: already signalled) as s's TEMPORARY SYNC_FD
 * payload. Vulkan owns fd on success only; on failure it is still the caller's.
 */
VkResult vkt_semaphore_import(struct vkt *t, VkSemaphore s, int fd);
/*
 * Export s's payload as a sync_file into *fd (the caller's to close; -1 when
 * already signalled). SYNC_FD export has wait semantics: it resets s's payload.
 */
VkResult vkt_semaphore_export(struct vkt *t, VkSemaphore s, int *fd);

/*
 * An ownership transfer between the outside (t->outside_family) and our
 * family: acquire (from outside; stage and access are the destination's) or
 * release (to outside; the source's). Per the spec the acquire's
 * srcAccessMask and the release's dstAccessMask are ignored: ours counts.
 * An image moves between GENERAL (outside) and our_layout.
 */
void vkt_transfer_buffer(const struct vkt *t, VkCommandBuffer cb, VkBuffer buffer, bool acquire,
			 VkPipelineStageFlags stage, VkAccessFlags access);
void vkt_transfer_image(const struct vkt *t, VkCommandBuffer cb, VkImage image, bool acquire,
			VkPipelineStageFlags stage, VkAccessFlags access, VkImageLayout our_layout);
/* TRANSFER_WRITE → HOST_READ. */
void vkt_host_read_barrier(VkCommandBuffer cb);

/* How many times the physical device's layer list names name. */
int vkt_device_layer_count(VkPhysicalDevice physical, const char *name);
/* Whether the function pointer lives in the layer's shared object. */
bool vkt_in_layer(const void *func);
/* Bytes in [p, p+n) equal to v. */
size_t vkt_count_bytes(const void *p, size_t n, uint8_t v);
const char *vkt_result_name(VkResult r);

#endif
