/* SPDX-License-Identifier: MIT */
/* A plain Vulkan application's instance and device (see vk.h). */
#include "vk.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vkt_validation_errors;

int
vkt_fail(struct vkt *t, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
	if (t->cfg.fail)
		t->cfg.fail(t, err);
	return err;
}

VkResult
vkt_fail_vk(struct vkt *t, const char *what, VkResult r)
{
	vkt_fail(t, -EIO, "%s: %s", what, vkt_result_name(r));
	return r;
}

void
vkt_fail_print(struct vkt *t, int err)
{
	(void)err;
	fprintf(stderr, "%s: %s\n", t->cfg.who ? t->cfg.who : "vulkan", t->why);
}

const char *
vkt_result_name(VkResult r)
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

bool
vkt_in_layer(const void *func)
{
	Dl_info info;
	if (!func || !dladdr(func, &info) || !info.dli_fname)
		return false;
	return strstr(info.dli_fname, VKT_LAYER_LIBRARY) != NULL;
}

int
vkt_device_layer_count(VkPhysicalDevice physical, const char *name)
{
	VkLayerProperties props[64];
	uint32_t n = 64;
	int count = 0;

	VkResult r = vkEnumerateDeviceLayerProperties(physical, &n, props);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		count += strcmp(props[i].layerName, name) == 0;
	return count;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL
on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
		 VkDebugUtilsMessageTypeFlagsEXT types,
		 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
	(void)types;
	(void)user;
	if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
		vkt_validation_errors++;
		printf("# VALIDATION ERROR: %s\n", data->pMessage);
	} else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
		printf("# validation warning: %s\n", data->pMessage);
	}
	fflush(stdout);
	return VK_FALSE;
}

/* The device's extension list (malloc'd; free it), or NULL. */
static VkExtensionProperties *
device_extensions(VkPhysicalDevice physical, uint32_t *n)
{
	*n = 0;
	if (vkEnumerateDeviceExtensionProperties(physical, NULL, n, NULL) != VK_SUCCESS)
		return NULL;
	VkExtensionProperties *props = calloc(*n ? *n : 1, sizeof(*props));
	if (props && vkEnumerateDeviceExtensionProperties(physical, NULL, n, props) != VK_SUCCESS)
		*n = 0;
	return props;
}

static bool
listed(const VkExtensionProperties *p, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(p[i].extensionName, name) == 0)
			return true;
	return false;
}

static bool
sync_fd_semaphores(VkPhysicalDevice physical)
{
	VkPhysicalDeviceExternalSemaphoreInfo info = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO,
		.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
	};
	VkExternalSemaphoreProperties props = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES,
	};
	const VkExternalSemaphoreFeatureFlags both = VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT |
						     VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT;

	vkGetPhysicalDeviceExternalSemaphoreProperties(physical, &info, &props);
	return (props.externalSemaphoreFeatures & both) == both;
}

/* The first thing the config requires that the device lacks, or NULL. */
static const char *
lacks(const struct vkt_config *cfg, VkPhysicalDevice physical)
{
	static const struct {
		unsigned ext;
		const char *name;
	} names[] = {
		{ VKT_DMABUF, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME },
		{ VKT_DMABUF, VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME },
		{ VKT_SEMAPHORE_FD, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME },
		{ VKT_FOREIGN, VK_EXT_QUEUE_FAMILY_FOREIGN_EXTENSION_NAME },
		{ VKT_DRM_MODIFIER, VK_EXT_IMAGE_DRM_FORMAT_MODIFIER_EXTENSION_NAME },
	};
	uint32_t n;
	VkExtensionProperties *p = device_extensions(physical, &n);
	const char *what = NULL;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !what; i++)
		if ((cfg->require & names[i].ext) && !listed(p, n, names[i].name))
			what = names[i].name;
	if (!what && (cfg->require & VKT_SEMAPHORE_FD) && !sync_fd_semaphores(physical))
		what = "SYNC_FD semaphore import and export";
	free(p);
	return what;
}

static int
pick_physical(struct vkt *t)
{
	VkPhysicalDevice pds[16];
	uint32_t n = 16;

	VkResult r = vkEnumeratePhysicalDevices(t->instance, &n, pds);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE)
		return vkt_fail_vk(t, "vkEnumeratePhysicalDevices", r), -EIO;
	if (n == 0)
		return vkt_fail(t, -ENODEV, "no Vulkan physical device");
	t->physical = pds[0];
	for (uint32_t i = 0; i < n; i++) {
		VkPhysicalDeviceProperties p;
		vkGetPhysicalDeviceProperties(pds[i], &p);
		if (t->cfg.first_capable ? lacks(&t->cfg, pds[i]) == NULL
					 : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
			t->physical = pds[i];
			break;
		}
	}

	VkPhysicalDeviceProperties p;
	vkGetPhysicalDeviceProperties(t->physical, &p);
	snprintf(t->device_name, sizeof(t->device_name), "%s", p.deviceName);
	uint32_t asked = t->cfg.api_version ? t->cfg.api_version : VK_API_VERSION_1_3;
	if (VK_API_VERSION_MINOR(p.apiVersion) >= 2 && VK_API_VERSION_MINOR(asked) >= 2) {
		VkPhysicalDeviceDriverProperties driver = {
			.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
		};
		VkPhysicalDeviceProperties2 p2 = {
			.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &driver,
		};
		vkGetPhysicalDeviceProperties2(t->physical, &p2);
		t->driver_id = driver.driverID;
	}
	if (!t->cfg.api_version && VK_API_VERSION_MAJOR(p.apiVersion) == 1 &&
	    VK_API_VERSION_MINOR(p.apiVersion) < 3)
		return vkt_fail(t, -ENODEV, "%s is Vulkan 1.%u; 1.3 is needed", t->device_name,
			    VK_API_VERSION_MINOR(p.apiVersion));
	const char *what = lacks(&t->cfg, t->physical);
	if (what)
		return vkt_fail(t, -ENODEV,
				"%s lacks %s (lavapipe has it where /dev/udmabuf exists: "
				"run in the test guest)",
				t->device_name, what);
	return 0;
}

static int
create_instance(struct vkt *t)
{
	const struct vkt_config *cfg = &t->cfg;
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = cfg->app_name,
		.apiVersion = cfg->api_version ? cfg->api_version : VK_API_VERSION_1_3,
	};
	VkDebugUtilsMessengerCreateInfoEXT dbg = {
		.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
		.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
				   VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
		.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
			       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
			       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
		.pfnUserCallback = on_debug_message,
	};
	const char *exts[] = { VK_EXT_DEBUG_UTILS_EXTENSION_NAME };
	VkInstanceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pNext = cfg->validation ? &dbg : NULL,
		.pApplicationInfo = &app,
		.enabledLayerCount = cfg->layer ? 1 : 0,
		.ppEnabledLayerNames = &cfg->layer,
		.enabledExtensionCount = cfg->validation ? 1 : 0,
		.ppEnabledExtensionNames = exts,
	};
	VkResult r = vkCreateInstance(&info, NULL, &t->instance);
	if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
		return vkt_fail(t, -ENODEV, "no Vulkan driver");
	if (r == VK_ERROR_LAYER_NOT_PRESENT && cfg->validation)
		return vkt_fail(t, -ENODEV, "%s is not installed (vulkan-validationlayers)",
			    VKT_VALIDATION_LAYER);
	if (r == VK_ERROR_LAYER_NOT_PRESENT && cfg->layer)
		return vkt_fail(t, -EIO, "%s not found (VK_ADD_LAYER_PATH=%s)", cfg->layer,
			    getenv("VK_ADD_LAYER_PATH") ? getenv("VK_ADD_LAYER_PATH") : "");
	if (r != VK_SUCCESS)
		return vkt_fail_vk(t, "vkCreateInstance", r), -EIO;

	if (cfg->validation) {
		PFN_vkCreateDebugUtilsMessengerEXT create =
			(PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
				t->instance, "vkCreateDebugUtilsMessengerEXT");
		if (!create)
			return vkt_fail(t, -EIO, "no vkCreateDebugUtilsMessengerEXT");
		r = create(t->instance, &dbg, NULL, &t->messenger);
		if (r != VK_SUCCESS)
			return vkt_fail_vk(t, "vkCreateDebugUtilsMessengerEXT", r), -EIO;
	}
	return 0;
}

/* The first queue family that can do transfers. */
static uint32_t
pick_family(VkPhysicalDevice physical)
{
	VkQueueFamilyProperties qf[16];
	uint32_t n = 16;

	vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, qf);
	for (uint32_t i = 0; i < n; i++)
		if (qf[i].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT |
					VK_QUEUE_TRANSFER_BIT))
			return i;
	return 0;
}

/*
 * The device extensions to enable: those cfg requires or wants that the
 * device lists (at most 8, into exts); sets t->has_dmabuf,
 * t->has_foreign_family and t->outside_family, and *semaphore_fd. Returns
 * how many.
 */
static uint32_t
pick_extensions(struct vkt *t, const char **exts, bool *semaphore_fd)
{
	unsigned enable = t->cfg.require | t->cfg.want;
	uint32_t n, n_exts = 0;
	VkExtensionProperties *props = device_extensions(t->physical, &n);

	t->has_dmabuf = (enable & VKT_DMABUF) &&
			listed(props, n, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME) &&
			listed(props, n, VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME);
	if (t->has_dmabuf) {
		exts[n_exts++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
		exts[n_exts++] = VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME;
	}
	*semaphore_fd = (enable & VKT_SEMAPHORE_FD) &&
			listed(props, n, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
	if (*semaphore_fd)
		exts[n_exts++] = VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME;
	t->has_foreign_family = (enable & VKT_FOREIGN) &&
				listed(props, n, VK_EXT_QUEUE_FAMILY_FOREIGN_EXTENSION_NAME);
	if (t->has_foreign_family)
		exts[n_exts++] = VK_EXT_QUEUE_FAMILY_FOREIGN_EXTENSION_NAME;
	t->outside_family = t->has_foreign_family ? VK_QUEUE_FAMILY_FOREIGN_EXT
						  : VK_QUEUE_FAMILY_EXTERNAL;
	if ((enable & VKT_DRM_MODIFIER) &&
	    listed(props, n, VK_EXT_IMAGE_DRM_FORMAT_MODIFIER_EXTENSION_NAME))
		exts[n_exts++] = VK_EXT_IMAGE_DRM_FORMAT_MODIFIER_EXTENSION_NAME;
	free(props);
	return n_exts;
}

/* Device, queue, pool and entry points on t->physical. */
static int
create_device(struct vkt *t)
{
	const struct vkt_config *cfg = &t->cfg;
	const char *exts[8];
	bool semaphore_fd;
	uint32_t n_exts = pick_extensions(t, exts, &semaphore_fd);

	VkPhysicalDeviceVulkan13Features f13 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
		.synchronization2 = !!(cfg->features & VKT_SYNC2),
		.dynamicRendering = !!(cfg->features & VKT_DYNAMIC_RENDERING),
	};
	bool with13 = f13.synchronization2 || f13.dynamicRendering;
	VkPhysicalDeviceVulkan12Features f12 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
		.pNext = with13 ? &f13 : NULL,
		.timelineSemaphore = VK_TRUE,
	};
	bool with12 = cfg->features & VKT_TIMELINE;
	float prio = 1.0f;
	t->family = pick_family(t->physical);
	VkDeviceQueueCreateInfo q = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = t->family,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDeviceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = with12 ? (void *)&f12 : with13 ? (void *)&f13 : NULL,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &q,
		.enabledExtensionCount = n_exts,
		.ppEnabledExtensionNames = exts,
	};
	VkResult r = vkCreateDevice(t->physical, &info, NULL, &t->device);
	if (r != VK_SUCCESS)
		return vkt_fail_vk(t, "vkCreateDevice", r), -EIO;
	vkGetDeviceQueue(t->device, t->family, 0, &t->queue);
	VkCommandPoolCreateInfo pool = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = t->family,
	};
	r = vkCreateCommandPool(t->device, &pool, NULL, &t->pool);
	if (r != VK_SUCCESS)
		return vkt_fail_vk(t, "vkCreateCommandPool", r), -EIO;
	vkGetPhysicalDeviceMemoryProperties(t->physical, &t->mem_props);

#define GET(name) (PFN_##name) vkGetDeviceProcAddr(t->device, #name)
	if (t->has_dmabuf && !(t->GetMemoryFdPropertiesKHR = GET(vkGetMemoryFdPropertiesKHR)))
		return vkt_fail(t, -EIO, "no vkGetMemoryFdPropertiesKHR");
	if (semaphore_fd && (!(t->ImportSemaphoreFdKHR = GET(vkImportSemaphoreFdKHR)) ||
			     !(t->GetSemaphoreFdKHR = GET(vkGetSemaphoreFdKHR))))
		return vkt_fail(t, -EIO, "no vkImportSemaphoreFdKHR / vkGetSemaphoreFdKHR");
	t->layer_active = vkt_in_layer((void *)GET(vkQueueSubmit));
#undef GET
	return 0;
}

int
vkt_create(struct vkt *t, const struct vkt_config *cfg)
{
	memset(t, 0, sizeof(*t));
	t->cfg = *cfg;
	int ret = create_instance(t);
	if (!ret)
		ret = pick_physical(t);
	if (!ret)
		ret = create_device(t);
	return ret;
}

int
vkt_create_device(struct vkt *t, const struct vkt *from)
{
	memset(t, 0, sizeof(*t));
	t->cfg = from->cfg;
	t->instance = from->instance;
	t->physical = from->physical;
	memcpy(t->device_name, from->device_name, sizeof(t->device_name));
	t->driver_id = from->driver_id;
	return create_device(t);
}

void
vkt_finish_device(struct vkt *t)
{
	if (t->device) {
		vkDeviceWaitIdle(t->device);
		if (t->pool)
			vkDestroyCommandPool(t->device, t->pool, NULL);
		vkDestroyDevice(t->device, NULL);
	}
	t->pool = VK_NULL_HANDLE;
	t->device = VK_NULL_HANDLE;
}

void
vkt_finish(struct vkt *t)
{
	vkt_finish_device(t);
	if (t->messenger) {
		PFN_vkDestroyDebugUtilsMessengerEXT destroy =
			(PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
				t->instance, "vkDestroyDebugUtilsMessengerEXT");
		if (destroy)
			destroy(t->instance, t->messenger, NULL);
	}
	if (t->instance)
		vkDestroyInstance(t->instance, NULL);
	t->messenger = VK_NULL_HANDLE;
	t->instance = VK_NULL_HANDLE;
}
