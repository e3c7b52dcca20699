/* SPDX-License-Identifier: MIT */
#include "vk_common.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <drm_fourcc.h>

#define LAYER_LIBRARY "libVkLayer_SYNCBRIDGE_implicit_sync"

const char *
cube_vk_result(VkResult r)
{
	switch (r) {
#define R(x) case x: return #x
		R(VK_SUCCESS);
		R(VK_NOT_READY);
		R(VK_TIMEOUT);
		R(VK_INCOMPLETE);
		R(VK_ERROR_OUT_OF_HOST_MEMORY);
		R(VK_ERROR_OUT_OF_DEVICE_MEMORY);
		R(VK_ERROR_INITIALIZATION_FAILED);
		R(VK_ERROR_DEVICE_LOST);
		R(VK_ERROR_LAYER_NOT_PRESENT);
		R(VK_ERROR_EXTENSION_NOT_PRESENT);
		R(VK_ERROR_FEATURE_NOT_PRESENT);
		R(VK_ERROR_INCOMPATIBLE_DRIVER);
		R(VK_ERROR_INVALID_EXTERNAL_HANDLE);
		R(VK_ERROR_FORMAT_NOT_SUPPORTED);
#undef R
	default:
		return "VkResult?";
	}
}

#define VK_TRY(vk, call)                                                                    \
	do {                                                                                \
		VkResult r_ = (call);                                                       \
		if (r_ != VK_SUCCESS) {                                                     \
			fprintf(stderr, "%s: %s: %s\n", (vk)->who, #call,                 \
				cube_vk_result(r_));                                        \
			return -EIO;                                                        \
		}                                                                           \
	} while (0)

static bool
has_ext(const VkExtensionProperties *p, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(p[i].extensionName, name) == 0)
			return true;
	return false;
}

/* Whether the device's vkQueueSubmit lives in the syncbridge layer's library. */
static bool
layer_in_chain(VkDevice device)
{
	PFN_vkVoidFunction f = vkGetDeviceProcAddr(device, "vkQueueSubmit");
	Dl_info info;

	if (!f || !dladdr((void *)f, &info) || !info.dli_fname)
		return false;
	return strstr(info.dli_fname, LAYER_LIBRARY) != NULL;
}

int
cube_vk_init(struct cube_vk *vk, const char *who)
{
	memset(vk, 0, sizeof(*vk));
	vk->who = who;

	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "syncbridge-demo-cube",
		.apiVersion = VK_API_VERSION_1_3,
	};
	VkInstanceCreateInfo ici = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	VkResult r = vkCreateInstance(&ici, NULL, &vk->instance);
	if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
		fprintf(stderr, "%s: no Vulkan driver\n", who);
		return -ENODEV;
	}
	VK_TRY(vk, r);

	uint32_t n = 0;
	VK_TRY(vk, vkEnumeratePhysicalDevices(vk->instance, &n, NULL));
	if (n == 0) {
		fprintf(stderr, "%s: no Vulkan device\n", who);
		return -ENODEV;
	}
	VkPhysicalDevice pds[16];
	if (n > 16)
		n = 16;
	r = vkEnumeratePhysicalDevices(vk->instance, &n, pds);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE)
		VK_TRY(vk, r);
	/* Prefer the CPU device (lavapipe): the demo's software path. */
	vk->physical = pds[0];
	for (uint32_t i = 0; i < n; i++) {
		VkPhysicalDeviceProperties p;
		vkGetPhysicalDeviceProperties(pds[i], &p);
		if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
			vk->physical = pds[i];
			break;
		}
	}
	VkPhysicalDeviceProperties props;
	vkGetPhysicalDeviceProperties(vk->physical, &props);
	snprintf(vk->device_name, sizeof(vk->device_name), "%s", props.deviceName);
	if (VK_API_VERSION_MAJOR(props.apiVersion) == 1 && VK_API_VERSION_MINOR(props.apiVersion) < 3) {
		fprintf(stderr, "%s: %s is Vulkan 1.%u; the demo needs 1.3\n",
			who, vk->device_name, VK_API_VERSION_MINOR(props.apiVersion));
		return -ENODEV;
	}

	uint32_t ne = 0;
	VK_TRY(vk, vkEnumerateDeviceExtensionProperties(vk->physical, NULL, &ne, NULL));
	VkExtensionProperties *ep = calloc(ne ? ne : 1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	r = vkEnumerateDeviceExtensionProperties(vk->physical, NULL, &ne, ep);
	if (r != VK_SUCCESS) {
		free(ep);
		VK_TRY(vk, r);
	}
	static const char *const needed[] = {
		VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME,
		VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME,
		VK_EXT_IMAGE_DRM_FORMAT_MODIFIER_EXTENSION_NAME,
	};
	const char *exts[4];
	uint32_t n_exts = 0;
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		if (!has_ext(ep, ne, needed[i])) {
			fprintf(stderr,
				"%s: %s lacks %s (lavapipe has it where "
				"/dev/udmabuf exists: run in the test guest)\n",
				who, vk->device_name, needed[i]);
			free(ep);
			return -ENODEV;
		}
		exts[n_exts++] = needed[i];
	}
	vk->foreign_family = VK_QUEUE_FAMILY_EXTERNAL;
	if (has_ext(ep, ne, VK_EXT_QUEUE_FAMILY_FOREIGN_EXTENSION_NAME)) {
		exts[n_exts++] = VK_EXT_QUEUE_FAMILY_FOREIGN_EXTENSION_NAME;
		vk->foreign_family = VK_QUEUE_FAMILY_FOREIGN_EXT;
	}
	free(ep);

	VkPhysicalDeviceVulkan13Features f13 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
		.dynamicRendering = VK_TRUE,
	};
	float prio = 1.0f;
	VkDeviceQueueCreateInfo q = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = 0,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDeviceCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = &f13,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &q,
		.enabledExtensionCount = n_exts,
		.ppEnabledExtensionNames = exts,
	};
	VK_TRY(vk, vkCreateDevice(vk->physical, &dci, NULL, &vk->device));
	vk->family = 0;
	vkGetDeviceQueue(vk->device, 0, 0, &vk->queue);
	vkGetPhysicalDeviceMemoryProperties(vk->physical, &vk->mem_props);
	vk->GetMemoryFdPropertiesKHR = (PFN_vkGetMemoryFdPropertiesKHR)vkGetDeviceProcAddr(
		vk->device, "vkGetMemoryFdPropertiesKHR");
	if (!vk->GetMemoryFdPropertiesKHR) {
		fprintf(stderr, "%s: no vkGetMemoryFdPropertiesKHR\n", who);
		return -EIO;
	}
	VkCommandPoolCreateInfo pci = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = 0,
	};
	VK_TRY(vk, vkCreateCommandPool(vk->device, &pci, NULL, &vk->pool));
	vk->layer_active = layer_in_chain(vk->device);
	return 0;
}

void
cube_vk_finish(struct cube_vk *vk)
{
	if (vk->device) {
		vkDeviceWaitIdle(vk->device);
		if (vk->pool)
			vkDestroyCommandPool(vk->device, vk->pool, NULL);
		vkDestroyDevice(vk->device, NULL);
	}
	if (vk->instance)
		vkDestroyInstance(vk->instance, NULL);
	memset(vk, 0, sizeof(*vk));
}

int
cube_vk_memory_type(const struct cube_vk *vk, uint32_t bits, VkMemoryPropertyFlags flags)
{
	for (uint32_t i = 0; i < vk->mem_props.memoryTypeCount; i++)
		if ((bits & (1u << i)) && (vk->mem_props.memoryTypes[i].propertyFlags & flags) == flags)
			return (int)i;
	return -1;
}

int
cube_vk_import_image(struct cube_vk *vk, int dmabuf_fd, uint32_t width, uint32_t height,
		     uint32_t pitch, uint32_t offset, VkImageUsageFlags usage, VkImage *image,
		     VkDeviceMemory *memory)
{
	*image = VK_NULL_HANDLE;
	*memory = VK_NULL_HANDLE;

	VkSubresourceLayout plane = { .offset = offset, .rowPitch = pitch };
	VkImageDrmFormatModifierExplicitCreateInfoEXT modifier = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_DRM_FORMAT_MODIFIER_EXPLICIT_CREATE_INFO_EXT,
		.drmFormatModifier = DRM_FORMAT_MOD_LINEAR,
		.drmFormatModifierPlaneCount = 1,
		.pPlaneLayouts = &plane,
	};
	VkExternalMemoryImageCreateInfo ext = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO,
		.pNext = &modifier,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
	};
	VkImageCreateInfo ici = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
		.pNext = &ext,
		.imageType = VK_IMAGE_TYPE_2D,
		.format = VK_FORMAT_B8G8R8A8_UNORM, /* DRM_FORMAT_ARGB8888 */
		.extent = { width, height, 1 },
		.mipLevels = 1,
		.arrayLayers = 1,
		.samples = VK_SAMPLE_COUNT_1_BIT,
		.tiling = VK_IMAGE_TILING_DRM_FORMAT_MODIFIER_EXT,
		.usage = usage,
		.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
	};
	VK_TRY(vk, vkCreateImage(vk->device, &ici, NULL, image));

	VkMemoryRequirements req;
	vkGetImageMemoryRequirements(vk->device, *image, &req);
	VkMemoryFdPropertiesKHR fd_props = { .sType = VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR };
	VK_TRY(vk, vk->GetMemoryFdPropertiesKHR(vk->device,
						VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
						dmabuf_fd, &fd_props));
	int type = cube_vk_memory_type(vk, req.memoryTypeBits & fd_props.memoryTypeBits, 0);
	if (type < 0) {
		fprintf(stderr, "%s: no memory type for the dma-buf image\n",
			vk->who);
		return -EIO;
	}
	/* "Importing memory from a file descriptor transfers ownership of the
	 * file descriptor from the application to the Vulkan implementation":
	 * on success only — so import a duplicate and close it on failure. */
	int fd = fcntl(dmabuf_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	VkMemoryDedicatedAllocateInfo dedicated = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
		.image = *image,
	};
	VkImportMemoryFdInfoKHR import = {
		.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
		.pNext = &dedicated,
		.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
		.fd = fd,
	};
	VkMemoryAllocateInfo mai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = &import,
		.allocationSize = req.size,
		.memoryTypeIndex = (uint32_t)type,
	};
	VkResult r = vkAllocateMemory(vk->device, &mai, NULL, memory);
	if (r != VK_SUCCESS)
		close(fd);
	VK_TRY(vk, r);
	VK_TRY(vk, vkBindImageMemory(vk->device, *image, *memory, 0));
	return 0;
}

int
cube_vk_images_to_general(struct cube_vk *vk, const VkImage *images, unsigned count)
{
	VkCommandBufferAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = vk->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VkCommandBuffer cb;
	VK_TRY(vk, vkAllocateCommandBuffers(vk->device, &ai, &cb));
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	VK_TRY(vk, vkBeginCommandBuffer(cb, &bi));
	for (unsigned i = 0; i < count; i++) {
		VkImageMemoryBarrier b = {
			.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
			.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
			.newLayout = VK_IMAGE_LAYOUT_GENERAL,
			.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
			.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
			.image = images[i],
			.subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
		};
		vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
				     VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0, 0, NULL, 0, NULL, 1, &b);
	}
	VK_TRY(vk, vkEndCommandBuffer(cb));
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &cb,
	};
	VK_TRY(vk, vkQueueSubmit(vk->queue, 1, &si, VK_NULL_HANDLE));
	VK_TRY(vk, vkQueueWaitIdle(vk->queue));
	vkFreeCommandBuffers(vk->device, vk->pool, 1, &cb);
	return 0;
}

void
cube_vk_transfer(const struct cube_vk *vk, VkCommandBuffer cb, VkImage image, bool acquire,
		 VkPipelineStageFlags stage, VkAccessFlags access, VkImageLayout our_layout)
{
	/* The access that matters is on our side: the acquire's dstAccessMask,
	 * the release's srcAccessMask (the other side's is ignored). */
	VkImageMemoryBarrier b = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
		.srcAccessMask = acquire ? 0 : access,
		.dstAccessMask = acquire ? access : 0,
		.oldLayout = acquire ? VK_IMAGE_LAYOUT_GENERAL : our_layout,
		.newLayout = acquire ? our_layout : VK_IMAGE_LAYOUT_GENERAL,
		.srcQueueFamilyIndex = acquire ? vk->foreign_family : vk->family,
		.dstQueueFamilyIndex = acquire ? vk->family : vk->foreign_family,
		.image = image,
		.subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
	};
	vkCmdPipelineBarrier(cb, acquire ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT : stage,
			     acquire ? stage : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0, 0, NULL, 0,
			     NULL, 1, &b);
}
