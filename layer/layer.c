/* SPDX-License-Identifier: MIT */
/*
 * VK_LAYER_SYNCBRIDGE_implicit_sync: the loader interface, instances and
 * devices.
 *
 * The loader contract (LoaderLayerInterface.md, interface version 2):
 *  - the only exported symbol is vkNegotiateLoaderLayerInterfaceVersion;
 *  - vkCreateInstance / vkCreateDevice find the VK_LAYER_LINK_INFO element in
 *    the create info's pNext chain, take the next layer's GetInstanceProcAddr
 *    (and GetDeviceProcAddr) from it and advance it before calling down;
 *  - vkGetInstanceProcAddr / vkGetDeviceProcAddr return our function for the
 *    names we intercept (only when the next layer has the command too) and
 *    the next layer's for everything else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "loader_link.h"
#include "memory.h"
#include "pool.h"
#include "resolve.h"
#include "submit.h"
#include "track.h"
#include "util.h"
#include "venus.h"

/* Everything in the layer is hidden except the negotiate entry point. */
#define SBL_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------------ */
/* Instances                                                                 */

/*
 * A Vulkan 1.0 instance answers the external-semaphore capability query with
 * no features unless VK_KHR_external_semaphore_capabilities is enabled
 * (measured on lavapipe: 0x0 vs 0x3), and the layer would then wrongly stand
 * aside for every 1.0 app (vkcube). So for apps below 1.1 enable the instance
 * extensions whose functionality the layer queries. Returns the names array
 * to free (NULL: use info as it is; *oom on allocation failure).
 */
static const char **
patch_for_1_0(const VkInstanceCreateInfo *info, uint32_t app_api,
	      VkInstanceCreateInfo *patched, bool *oom)
{
	*oom = false;
	if (VK_API_VERSION_MINOR(app_api) != 0 || VK_API_VERSION_MAJOR(app_api) != 1)
		return NULL;
	static const char *const wanted[] = {
		VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME,
		VK_KHR_EXTERNAL_SEMAPHORE_CAPABILITIES_EXTENSION_NAME,
		VK_KHR_EXTERNAL_MEMORY_CAPABILITIES_EXTENSION_NAME,
	};
	uint32_t n = info->enabledExtensionCount;
	const char **names = calloc(n + SB_ARRAY_SIZE(wanted), sizeof(*names));
	if (!names) {
		*oom = true;
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++)
		names[i] = info->ppEnabledExtensionNames[i];
	for (size_t w = 0; w < SB_ARRAY_SIZE(wanted); w++) {
		bool have = false;
		for (uint32_t i = 0; i < info->enabledExtensionCount; i++)
			have = have || strcmp(info->ppEnabledExtensionNames[i], wanted[w]) == 0;
		if (!have)
			names[n++] = wanted[w];
	}
	*patched = *info;
	patched->enabledExtensionCount = n;
	patched->ppEnabledExtensionNames = names;
	return names;
}

/* Fill inst's instance-level entry points from the next layer. */
static void
load_instance(struct sbl_instance *inst, VkInstance handle, bool khr_caps)
{
	PFN_vkGetInstanceProcAddr next_gipa = inst->next_gipa;
#define GET(name) (PFN_vk##name) next_gipa(handle, "vk" #name)
	inst->DestroyInstance = GET(DestroyInstance);
	inst->EnumerateDeviceExtensionProperties = GET(EnumerateDeviceExtensionProperties);
	inst->GetPhysicalDeviceProperties = GET(GetPhysicalDeviceProperties);
	/* A 1.0 instance with the KHR extension: use the extension's entry point. */
	inst->GetPhysicalDeviceExternalSemaphoreProperties =
		khr_caps ? NULL : GET(GetPhysicalDeviceExternalSemaphoreProperties);
	if (!inst->GetPhysicalDeviceExternalSemaphoreProperties)
		inst->GetPhysicalDeviceExternalSemaphoreProperties =
			(PFN_vkGetPhysicalDeviceExternalSemaphoreProperties)next_gipa(
				handle, "vkGetPhysicalDeviceExternalSemaphorePropertiesKHR");
#undef GET
}

static VKAPI_ATTR VkResult VKAPI_CALL
CreateInstance(const VkInstanceCreateInfo *info, const VkAllocationCallbacks *alloc,
	       VkInstance *out)
{
	VkLayerInstanceCreateInfo *link = sbl_find_instance_link(info);
	if (!link || !link->u.pLayerInfo) {
		sb_error("layer: vkCreateInstance without a loader link "
			 "(loader bug or not a loader)");
		return VK_ERROR_INITIALIZATION_FAILED;
	}

	PFN_vkGetInstanceProcAddr next_gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
	PFN_vkCreateInstance create = (PFN_vkCreateInstance)next_gipa(NULL, "vkCreateInstance");
	if (!create)
		return VK_ERROR_INITIALIZATION_FAILED;

	struct sbl_instance *inst = calloc(1, sizeof(*inst));
	if (!inst)
		return VK_ERROR_OUT_OF_HOST_MEMORY;

	uint32_t app_api = info->pApplicationInfo && info->pApplicationInfo->apiVersion
				   ? info->pApplicationInfo->apiVersion
				   : VK_API_VERSION_1_0;

	/* Disabled (SYNCBRIDGE_DISABLE=1, SYNCBRIDGE_MODE=off): pure pass-through,
	 * the instance is created exactly as the app asked. */
	enum sbl_mode mode = sbl_mode_from_env();
	VkInstanceCreateInfo patched;
	bool oom = false;
	const char **names = mode == SBL_MODE_OFF ? NULL
						   : patch_for_1_0(info, app_api, &patched, &oom);
	if (oom) {
		free(inst);
		return VK_ERROR_OUT_OF_HOST_MEMORY;
	}
	const VkInstanceCreateInfo *use = names ? &patched : info;

	/* Venus reads its options in vkCreateInstance: set for the call only (venus.c). */
	struct sbl_venus_env venus_env;
	sbl_venus_prepare(&venus_env, mode != SBL_MODE_OFF);

	/* Advance the chain for the next layer before calling down. */
	VkLayerInstanceLink *my_link = link->u.pLayerInfo;
	link->u.pLayerInfo = my_link->pNext;
	VkResult res = create(use, alloc, out);
	if (res == VK_ERROR_EXTENSION_NOT_PRESENT && use != info) {
		sb_debug("layer: driver refused the 1.1 capability extensions for a 1.0 app; "
			 "creating the instance as the app asked");
		use = info;
		res = create(info, alloc, out);
	}
	link->u.pLayerInfo = my_link; /* leave the loader's chain as we found it */
	sbl_venus_restore(&venus_env);
	free(names);
	if (res != VK_SUCCESS) {
		free(inst);
		return res;
	}

	inst->handle = *out;
	inst->key = sbl_dispatch_key(*out);
	inst->next_gipa = next_gipa;
	inst->mode = mode;
	inst->api_version = app_api;
	load_instance(inst, *out, use != info);

	if (sbl_instance_add(inst) < 0) {
		inst->DestroyInstance(*out, alloc);
		free(inst);
		*out = VK_NULL_HANDLE;
		return VK_ERROR_OUT_OF_HOST_MEMORY;
	}

	/* One line per instance: tests count these to prove single loading.
	 * "Loaded", not "active": whether it acts is per device (CreateDevice). */
	sb_info("layer: vkCreateInstance: " SBL_LAYER_NAME " loaded, mode %s",
		sbl_mode_name(inst->mode));
	return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL
DestroyInstance(VkInstance instance, const VkAllocationCallbacks *alloc)
{
	if (!instance)
		return;

	struct sbl_instance *inst = sbl_instance_remove(instance);
	if (!inst)
		return;

	inst->DestroyInstance(instance, alloc);
	free(inst);
}

/* ------------------------------------------------------------------------ */
/* Devices                                                                   */

static const char *const required_exts[] = {
	VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME,
	VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME,
	VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME,
};

/* Promoted to Vulkan 1.1; enabled too (when listed) if the device or the
 * app's instance is Vulkan 1.0. */
static const char *const optional_exts[] = {
	VK_KHR_EXTERNAL_SEMAPHORE_EXTENSION_NAME,
	VK_KHR_EXTERNAL_MEMORY_EXTENSION_NAME,
};

static bool
has_ext(const VkExtensionProperties *props, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(props[i].extensionName, name) == 0)
			return true;
	return false;
}

static bool
enabled_ext(const VkDeviceCreateInfo *info, const char *name)
{
	for (uint32_t i = 0; i < info->enabledExtensionCount; i++)
		if (strcmp(info->ppEnabledExtensionNames[i], name) == 0)
			return true;
	return false;
}

/* The device's extensions (a new array, *n long), or NULL with *why set. */
static VkExtensionProperties *
device_extensions(struct sbl_instance *inst, VkPhysicalDevice physical, uint32_t *n,
		  const char **why)
{
	*n = 0;
	if (inst->EnumerateDeviceExtensionProperties(physical, NULL, n, NULL) != VK_SUCCESS) {
		*why = "cannot enumerate device extensions";
		return NULL;
	}
	VkExtensionProperties *props = calloc(*n ? *n : 1, sizeof(*props));
	if (!props) {
		*why = "out of memory";
		return NULL;
	}
	VkResult res = inst->EnumerateDeviceExtensionProperties(physical, NULL, n, props);
	if (res != VK_SUCCESS && res != VK_INCOMPLETE) {
		free(props);
		*why = "cannot enumerate device extensions";
		return NULL;
	}
	return props;
}

/*
 * Why the driver cannot carry the layer (a required extension missing, no
 * SYNC_FD binary semaphores), or NULL when it can. props: its n extensions.
 */
static const char *
driver_lacks(struct sbl_instance *inst, VkPhysicalDevice physical,
	     const VkExtensionProperties *props, uint32_t n, char *why_buf, size_t why_size)
{
	for (size_t i = 0; i < sizeof(required_exts) / sizeof(required_exts[0]); i++) {
		if (!has_ext(props, n, required_exts[i])) {
			snprintf(why_buf, why_size, "the driver lacks %s", required_exts[i]);
			return why_buf;
		}
	}

	/* Binary SYNC_FD semaphores, exportable and importable. */
	VkPhysicalDeviceExternalSemaphoreInfo sem_info = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO,
		.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
	};
	VkExternalSemaphoreProperties sem_props = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES,
	};
	inst->GetPhysicalDeviceExternalSemaphoreProperties(physical, &sem_info, &sem_props);
	const VkExternalSemaphoreFeatureFlags need =
		VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT |
		VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT;
	if ((sem_props.externalSemaphoreFeatures & need) != need)
		return "the driver cannot export and import SYNC_FD binary semaphores";
	return NULL;
}

/*
 * Decide whether the layer can work on this physical device. On success
 * *names is a new array (free it) holding the app's extensions plus the ones
 * we add, and *count its length. Returns NULL (pass-through) with *why set
 * when the driver lacks something.
 */
static const char **
plan_extensions(struct sbl_instance *inst, VkPhysicalDevice physical,
		const VkDeviceCreateInfo *info, uint32_t *count, const char **why,
		char *why_buf, size_t why_size)
{
	if (!inst->EnumerateDeviceExtensionProperties ||
	    !inst->GetPhysicalDeviceExternalSemaphoreProperties) {
		*why = "the loader gave no external semaphore capability query";
		return NULL;
	}

	uint32_t n;
	VkExtensionProperties *props = device_extensions(inst, physical, &n, why);
	if (!props)
		return NULL;
	*why = driver_lacks(inst, physical, props, n, why_buf, why_size);
	if (*why) {
		free(props);
		return NULL;
	}

	const size_t extra = sizeof(required_exts) / sizeof(required_exts[0]) +
			     sizeof(optional_exts) / sizeof(optional_exts[0]);
	const char **names = calloc(info->enabledExtensionCount + extra, sizeof(*names));
	if (!names) {
		free(props);
		*why = "out of memory";
		return NULL;
	}
	uint32_t k = 0;
	for (uint32_t i = 0; i < info->enabledExtensionCount; i++)
		names[k++] = info->ppEnabledExtensionNames[i];
	/* Device-level core functionality is min(app's apiVersion, device's). */
	uint32_t version = inst->api_version;
	if (inst->GetPhysicalDeviceProperties) {
		VkPhysicalDeviceProperties dp;
		inst->GetPhysicalDeviceProperties(physical, &dp);
		if (dp.apiVersion < version)
			version = dp.apiVersion;
	}
	if (version < VK_API_VERSION_1_1) {
		for (size_t i = 0; i < sizeof(optional_exts) / sizeof(optional_exts[0]); i++)
			if (has_ext(props, n, optional_exts[i]) &&
			    !enabled_ext(info, optional_exts[i]))
				names[k++] = optional_exts[i];
	}
	for (size_t i = 0; i < sizeof(required_exts) / sizeof(required_exts[0]); i++)
		if (!enabled_ext(info, required_exts[i]))
			names[k++] = required_exts[i];

	free(props);
	*count = k;
	return names;
}

/*
 * One line per device at info, in a stable form that `syncbridge-info doctor`
 * parses: `layer: device "<deviceName>": active, mode <mode>` or
 * `layer: device "<deviceName>": pass-through: <why>`.
 */
static void
log_device(struct sbl_instance *inst, VkPhysicalDevice physical, bool active,
	   enum sbl_mode mode, const char *why)
{
	if (sb_log_level() < SB_LOG_INFO)
		return;
	VkPhysicalDeviceProperties dp = { .deviceName = "?" };
	if (inst->GetPhysicalDeviceProperties)
		inst->GetPhysicalDeviceProperties(physical, &dp);
	if (active)
		sb_info("layer: device \"%s\": active, mode %s", dp.deviceName,
			sbl_mode_name(mode));
	else
		sb_info("layer: device \"%s\": pass-through: %s", dp.deviceName, why);
}

static VKAPI_ATTR VkResult VKAPI_CALL
CreateDevice(VkPhysicalDevice physical, const VkDeviceCreateInfo *info,
	     const VkAllocationCallbacks *alloc, VkDevice *out)
{
	VkLayerDeviceCreateInfo *link = sbl_find_device_link(info);
	struct sbl_instance *inst = sbl_instance_lookup(physical);
	if (!link || !link->u.pLayerInfo || !inst) {
		sb_error("layer: vkCreateDevice without a loader link or instance (loader bug)");
		return VK_ERROR_INITIALIZATION_FAILED;
	}

	VkLayerDeviceLink *my_link = link->u.pLayerInfo;
	PFN_vkGetInstanceProcAddr next_gipa = my_link->pfnNextGetInstanceProcAddr;
	PFN_vkGetDeviceProcAddr next_gdpa = my_link->pfnNextGetDeviceProcAddr;
	PFN_vkCreateDevice create = (PFN_vkCreateDevice)next_gipa(inst->handle, "vkCreateDevice");
	if (!create)
		return VK_ERROR_INITIALIZATION_FAILED;

	struct sbl_device *dev = sbl_device_create(physical, next_gdpa, inst->mode);
	if (!dev)
		return VK_ERROR_OUT_OF_HOST_MEMORY;

	char why_buf[128];
	const char *why = "disabled by the environment (SYNCBRIDGE_DISABLE / SYNCBRIDGE_MODE=off)";
	const char **names = NULL;
	uint32_t name_count = 0;
	if (dev->mode != SBL_MODE_OFF)
		names = plan_extensions(inst, physical, info, &name_count, &why, why_buf,
					sizeof(why_buf));
	bool active = names != NULL;

	VkResult res;
	link->u.pLayerInfo = my_link->pNext; /* advance before calling down */
	if (active) {
		VkDeviceCreateInfo copy = *info;
		copy.enabledExtensionCount = name_count;
		copy.ppEnabledExtensionNames = names;
		res = create(physical, &copy, alloc, out);
		if (res == VK_ERROR_EXTENSION_NOT_PRESENT) {
			/* The driver listed them but refuses them: run the app unchanged. */
			why = "the driver refused extensions it lists";
			active = false;
			link->u.pLayerInfo = my_link->pNext;
			res = create(physical, info, alloc, out);
		}
	} else {
		res = create(physical, info, alloc, out);
	}
	link->u.pLayerInfo = my_link; /* leave the loader's chain as we found it */
	free(names);
	if (res != VK_SUCCESS)
		goto err_dev;

	sbl_device_load(dev, *out);
	if (active && (!dev->GetMemoryFdKHR || !dev->ImportSemaphoreFdKHR ||
		       !dev->GetSemaphoreFdKHR || !dev->CreateSemaphore || !dev->QueueSubmit)) {
		why = "the driver did not return the external fd entry points";
		active = false;
	}
	if (!active)
		dev->mode = SBL_MODE_OFF;
	if (sbl_device_add(dev) < 0) {
		res = VK_ERROR_OUT_OF_HOST_MEMORY;
		goto err_driver_device;
	}

	log_device(inst, physical, active, dev->mode, why);
	return VK_SUCCESS;

err_driver_device:
	dev->DestroyDevice(*out, alloc);
	*out = VK_NULL_HANDLE;
err_dev:
	sbl_device_destroy(dev);
	return res;
}

static VKAPI_ATTR void VKAPI_CALL
DestroyDevice(VkDevice device, const VkAllocationCallbacks *alloc)
{
	if (!device)
		return;

	struct sbl_device *dev = sbl_device_remove(device);
	if (!dev)
		return;

	/* The app has waited for its work (a valid vkDestroyDevice needs it), and
	 * ours only ever rides on the app's submits. */
	sbl_resolve_device_finish(dev);
	sbl_pool_device_finish(dev);
	sbl_track_device_finish(dev);
	sbl_memory_device_finish(dev);
	dev->DestroyDevice(device, alloc);
	sbl_device_destroy(dev);
}

/* ------------------------------------------------------------------------ */
/* Proc addresses                                                            */

/* Device-level commands the layer implements while a device is active. */
static const struct sbl_entry *const device_entries[] = {
	sbl_memory_entries,
	sbl_track_entries,
	sbl_submit_entries,
	sbl_resolve_entries,
};

static PFN_vkVoidFunction
find_device_entry(const char *name)
{
	for (size_t t = 0; t < SB_ARRAY_SIZE(device_entries); t++)
		for (const struct sbl_entry *e = device_entries[t]; e->name; e++)
			if (strcmp(e->name, name) == 0)
				return e->func;
	return NULL;
}

static void *
find_instance(VkInstance instance)
{
	return sbl_instance_lookup(instance);
}

static void *
find_device(VkDevice device)
{
	return sbl_device_lookup(device);
}

static PFN_vkVoidFunction
device_next(void *d, VkDevice device, const char *name)
{
	struct sbl_device *dev = d;
	PFN_vkVoidFunction next = dev->next_gdpa(device, name);

	/* Ours only where the driver has the command too; NULL stays NULL. */
	if (!next || dev->mode == SBL_MODE_OFF)
		return next;
	PFN_vkVoidFunction mine = find_device_entry(name);
	return mine ? mine : next;
}

static PFN_vkVoidFunction
instance_next(void *i, VkInstance instance, const char *name)
{
	struct sbl_instance *inst = i;
	PFN_vkVoidFunction next = inst->next_gipa(instance, name);

	if (!next || inst->mode == SBL_MODE_OFF)
		return next;
	/* A device command through vkGetInstanceProcAddr works on every device:
	 * ours checks the device's mode on each call. */
	PFN_vkVoidFunction mine = find_device_entry(name);
	return mine ? mine : next;
}

/* vkGetInstanceProcAddr, vkGetDeviceProcAddr, vkNegotiateLoaderLayerInterfaceVersion. */
SBL_LAYER_ENTRY_POINTS(SBL_EXPORT)
