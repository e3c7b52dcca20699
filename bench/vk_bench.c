/* SPDX-License-Identifier: MIT */
/* The Vulkan benchmarks' shared plumbing (see vk_bench.h). */
#include "vk_bench.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The build tree's explicit manifest folder, from bench/meson.build. */
#ifndef VKB_EXPLICIT_DIR
#error "VKB_EXPLICIT_DIR must be defined"
#endif

void
vkb_die(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static void
skip(const char *why)
{
	printf("SKIP: %s\n", why);
	exit(77);
}

void
vkb_env_setup(void)
{
	/* Nothing from the caller's environment may add or remove layers: the
	 * layer is named by the one instance that wants it. */
	unsetenv("VK_INSTANCE_LAYERS");
	unsetenv("VK_LAYER_PATH");
	unsetenv("VK_LOADER_LAYERS_ENABLE");
	unsetenv("VK_LOADER_LAYERS_DISABLE");
	unsetenv("VK_ADD_IMPLICIT_LAYER_PATH");
	setenv("VK_ADD_LAYER_PATH", VKB_EXPLICIT_DIR, 1);
	/* The build tree's implicit manifest is found only through XDG_DATA_DIRS
	 * (meson devenv puts it there): drop it, or the floor gets the layer. */
	const char *xdg = getenv("XDG_DATA_DIRS");
	if (xdg && strstr(xdg, "manifest"))
		setenv("XDG_DATA_DIRS", "/usr/local/share:/usr/share", 1);
	/* It would switch the named layer off from inside. */
	unsetenv("SYNCBRIDGE_DISABLE");
	unsetenv("SYNCBRIDGE_MODE");
	unsetenv("SYNCBRIDGE_LAYER_FAULTS");
	unsetenv("SYNCBRIDGE_DEBUG");
}

static bool
in_layer(const void *func)
{
	Dl_info info;
	if (!func || !dladdr(func, &info) || !info.dli_fname)
		return false;
	return strstr(info.dli_fname, "libVkLayer_SYNCBRIDGE_implicit_sync") != NULL;
}

static bool
has_ext(const VkExtensionProperties *p, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(p[i].extensionName, name) == 0)
			return true;
	return false;
}

static void
check_layer(struct vkb *b)
{
	uint32_t n = 0;
	VKB_CHECK(vkEnumerateDeviceLayerProperties(b->physical, &n, NULL));
	VkLayerProperties *props = calloc(n ? n : 1, sizeof(*props));
	if (!props)
		vkb_die("out of memory");
	VkResult r = vkEnumerateDeviceLayerProperties(b->physical, &n, props);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE)
		vkb_die("vkEnumerateDeviceLayerProperties: %d", (int)r);
	bool listed = false;
	for (uint32_t i = 0; i < n; i++)
		listed |= strcmp(props[i].layerName, VKB_LAYER_NAME) == 0;
	free(props);

	/* Active, not pass-through: the submit the app calls is the layer's. */
	bool intercepts = in_layer((void *)vkGetDeviceProcAddr(b->device, "vkQueueSubmit"));
	if (b->layered && !(listed && intercepts))
		vkb_die("the layer instance: %s lists the layer: %s, its vkQueueSubmit is the "
			"layer's: %s (pass-through?)", VKB_LAYER_NAME, listed ? "yes" : "no",
			intercepts ? "yes" : "no");
	if (!b->layered && (listed || intercepts))
		vkb_die("the floor instance has the layer (listed: %s, intercepts vkQueueSubmit: "
			"%s): is an implicit manifest on the loader's path?",
			listed ? "yes" : "no", intercepts ? "yes" : "no");
}

void
vkb_init(struct vkb *b, bool with_layer)
{
	memset(b, 0, sizeof(*b));
	b->layered = with_layer;

	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "syncbridge-bench",
		.apiVersion = VK_API_VERSION_1_3,
	};
	const char *layers[] = { VKB_LAYER_NAME };
	VkInstanceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
		.enabledLayerCount = with_layer ? 1 : 0,
		.ppEnabledLayerNames = layers,
	};
	VkResult r = vkCreateInstance(&info, NULL, &b->instance);
	if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
		skip("no Vulkan driver");
	if (r == VK_ERROR_LAYER_NOT_PRESENT)
		vkb_die("%s not found in %s", VKB_LAYER_NAME, VKB_EXPLICIT_DIR);
	VKB_CHECK(r);

	uint32_t n = 0;
	VKB_CHECK(vkEnumeratePhysicalDevices(b->instance, &n, NULL));
	if (n == 0)
		skip("no Vulkan physical device");
	VkPhysicalDevice *pds = calloc(n, sizeof(*pds));
	if (!pds)
		vkb_die("out of memory");
	r = vkEnumeratePhysicalDevices(b->instance, &n, pds);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE)
		vkb_die("vkEnumeratePhysicalDevices: %d", (int)r);
	/* The CPU device (lavapipe) when there is one: docs/performance.md's figures. */
	b->physical = pds[0];
	for (uint32_t i = 0; i < n; i++) {
		VkPhysicalDeviceProperties p;
		vkGetPhysicalDeviceProperties(pds[i], &p);
		if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
			b->physical = pds[i];
			break;
		}
	}
	free(pds);

	VKB_CHECK(vkEnumerateDeviceExtensionProperties(b->physical, NULL, &n, NULL));
	VkExtensionProperties *props = calloc(n ? n : 1, sizeof(*props));
	if (!props)
		vkb_die("out of memory");
	VKB_CHECK(vkEnumerateDeviceExtensionProperties(b->physical, NULL, &n, props));
	const char *need[] = {
		VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME,
		VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME,
		VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME,
		VK_EXT_QUEUE_FAMILY_FOREIGN_EXTENSION_NAME,
	};
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (!has_ext(props, n, need[i])) {
			char why[256];
			snprintf(why, sizeof(why), "the Vulkan device lacks %s (run in the test guest)",
				 need[i]);
			free(props);
			skip(why);
		}
	}
	free(props);
	b->foreign_family = VK_QUEUE_FAMILY_FOREIGN_EXT;

	VkPhysicalDeviceVulkan13Features f13 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
		.synchronization2 = VK_TRUE,
	};
	float prio = 1.0f;
	VkDeviceQueueCreateInfo q = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = 0,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDeviceCreateInfo dinfo = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = &f13,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &q,
		.enabledExtensionCount = sizeof(need) / sizeof(need[0]),
		.ppEnabledExtensionNames = need,
	};
	VKB_CHECK(vkCreateDevice(b->physical, &dinfo, NULL, &b->device));
	vkGetDeviceQueue(b->device, 0, 0, &b->queue);
	VkCommandPoolCreateInfo pool = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = 0,
	};
	VKB_CHECK(vkCreateCommandPool(b->device, &pool, NULL, &b->pool));
	vkGetPhysicalDeviceMemoryProperties(b->physical, &b->mem_props);
	b->GetMemoryFdPropertiesKHR = (PFN_vkGetMemoryFdPropertiesKHR)vkGetDeviceProcAddr(
		b->device, "vkGetMemoryFdPropertiesKHR");
	b->ImportSemaphoreFdKHR = (PFN_vkImportSemaphoreFdKHR)vkGetDeviceProcAddr(
		b->device, "vkImportSemaphoreFdKHR");
	b->GetSemaphoreFdKHR = (PFN_vkGetSemaphoreFdKHR)vkGetDeviceProcAddr(
		b->device, "vkGetSemaphoreFdKHR");
	if (!b->GetMemoryFdPropertiesKHR || !b->ImportSemaphoreFdKHR || !b->GetSemaphoreFdKHR)
		vkb_die("missing external memory/semaphore fd entry points");
	check_layer(b);
}

void
vkb_finish(struct vkb *b)
{
	if (b->device) {
		vkDeviceWaitIdle(b->device);
		vkDestroyCommandPool(b->device, b->pool, NULL);
		vkDestroyDevice(b->device, NULL);
	}
	if (b->instance)
		vkDestroyInstance(b->instance, NULL);
	memset(b, 0, sizeof(*b));
}

static uint32_t
memory_type(struct vkb *b, uint32_t bits, VkMemoryPropertyFlags want)
{
	for (uint32_t i = 0; i < b->mem_props.memoryTypeCount; i++)
		if ((bits & (1u << i)) && (b->mem_props.memoryTypes[i].propertyFlags & want) == want)
			return i;
	vkb_die("no memory type in bits 0x%x with flags 0x%x", bits, want);
}

void
vkb_import_buffer(struct vkb *b, int dmabuf_fd, VkDeviceSize size, struct vkb_buffer *out)
{
	memset(out, 0, sizeof(*out));
	VkExternalMemoryBufferCreateInfo ext = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
	};
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.pNext = &ext,
		.size = size,
		.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
	};
	VKB_CHECK(vkCreateBuffer(b->device, &info, NULL, &out->buffer));
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(b->device, out->buffer, &req);
	VkMemoryFdPropertiesKHR fd_props = { .sType = VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR };
	VKB_CHECK(b->GetMemoryFdPropertiesKHR(b->device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
					      dmabuf_fd, &fd_props));
	int fd = fcntl(dmabuf_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		vkb_die("dup: %m");
	VkImportMemoryFdInfoKHR import = {
		.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
		.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
		.fd = fd,
	};
	VkMemoryAllocateInfo alloc = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = &import,
		.allocationSize = req.size,
		.memoryTypeIndex = memory_type(b, req.memoryTypeBits & fd_props.memoryTypeBits, 0),
	};
	/* On success Vulkan owns the fd; on failure it is still ours. */
	VkResult r = vkAllocateMemory(b->device, &alloc, NULL, &out->memory);
	if (r != VK_SUCCESS) {
		close(fd);
		vkb_die("importing the dma-buf: VkResult %d", (int)r);
	}
	VKB_CHECK(vkBindBufferMemory(b->device, out->buffer, out->memory, 0));
	out->size = size;
}

void
vkb_host_buffer(struct vkb *b, VkDeviceSize size, struct vkb_buffer *out)
{
	memset(out, 0, sizeof(*out));
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = size,
		.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
	};
	VKB_CHECK(vkCreateBuffer(b->device, &info, NULL, &out->buffer));
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(b->device, out->buffer, &req);
	VkMemoryAllocateInfo alloc = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.allocationSize = req.size,
		.memoryTypeIndex = memory_type(b, req.memoryTypeBits,
					       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
						       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT),
	};
	VKB_CHECK(vkAllocateMemory(b->device, &alloc, NULL, &out->memory));
	VKB_CHECK(vkBindBufferMemory(b->device, out->buffer, out->memory, 0));
	out->size = size;
}

void
vkb_buffer_destroy(struct vkb *b, struct vkb_buffer *buf)
{
	vkDestroyBuffer(b->device, buf->buffer, NULL);
	vkFreeMemory(b->device, buf->memory, NULL);
	memset(buf, 0, sizeof(*buf));
}

VkCommandBuffer
vkb_cmd_begin(struct vkb *b)
{
	VkCommandBufferAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = b->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VkCommandBuffer cb;
	VKB_CHECK(vkAllocateCommandBuffers(b->device, &ai, &cb));
	VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
	VKB_CHECK(vkBeginCommandBuffer(cb, &bi));
	return cb;
}

VkFence
vkb_fence(struct vkb *b)
{
	VkFenceCreateInfo info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	VkFence f;
	VKB_CHECK(vkCreateFence(b->device, &info, NULL, &f));
	return f;
}

VkSemaphore
vkb_sync_fd_semaphore(struct vkb *b)
{
	VkExportSemaphoreCreateInfo export = {
		.sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
	};
	VkSemaphoreCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
		.pNext = &export,
	};
	VkSemaphore s;
	VKB_CHECK(vkCreateSemaphore(b->device, &info, NULL, &s));
	return s;
}

void
vkb_transfer(struct vkb *b, VkCommandBuffer cb, VkBuffer buffer, bool acquire,
	     VkAccessFlags our_access)
{
	/* The acquire's srcAccessMask and the release's dstAccessMask are
	 * ignored (the other side's); ours is the one that counts. */
	VkBufferMemoryBarrier bb = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
		.srcAccessMask = acquire ? 0 : our_access,
		.dstAccessMask = acquire ? our_access : 0,
		.srcQueueFamilyIndex = acquire ? b->foreign_family : 0,
		.dstQueueFamilyIndex = acquire ? 0 : b->foreign_family,
		.buffer = buffer,
		.size = VK_WHOLE_SIZE,
	};
	vkCmdPipelineBarrier(cb,
			     acquire ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT : VK_PIPELINE_STAGE_TRANSFER_BIT,
			     acquire ? VK_PIPELINE_STAGE_TRANSFER_BIT
				     : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
			     0, 0, NULL, 1, &bb, 0, NULL);
}
