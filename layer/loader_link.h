/* SPDX-License-Identifier: MIT */
/*
 * The loader plumbing every layer of this tree does the same way
 * (LoaderLayerInterface.md, interface version 2): finding the
 * VK_LAYER_LINK_INFO element of a create info, the negotiate entry point,
 * and the head of vkGet{Instance,Device}ProcAddr: the commands a layer
 * answers itself so that it sees every instance and device come and go.
 *
 * Header-only (static inline): VK_LAYER_SYNCBRIDGE_implicit_sync (layer.c)
 * and the test layer VK_LAYER_SBTEST_fault
 * (testbed/vk_fault_layer/vk_fault_layer.c) are separate shared objects and
 * each compiles its own copy; nothing here has state.
 */
#ifndef SBL_LOADER_LINK_H
#define SBL_LOADER_LINK_H

#include <stddef.h>
#include <string.h>

#include <vulkan/vulkan.h>
#include <vulkan/vk_layer.h>

static inline VkLayerInstanceCreateInfo *
sbl_find_instance_link(const VkInstanceCreateInfo *info)
{
	for (const VkBaseInStructure *s = info->pNext; s; s = s->pNext) {
		if (s->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO &&
		    ((const VkLayerInstanceCreateInfo *)s)->function == VK_LAYER_LINK_INFO)
			return (VkLayerInstanceCreateInfo *)s;
	}
	return NULL;
}

static inline VkLayerDeviceCreateInfo *
sbl_find_device_link(const VkDeviceCreateInfo *info)
{
	for (const VkBaseInStructure *s = info->pNext; s; s = s->pNext) {
		if (s->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO &&
		    ((const VkLayerDeviceCreateInfo *)s)->function == VK_LAYER_LINK_INFO)
			return (VkLayerDeviceCreateInfo *)s;
	}
	return NULL;
}

/*
 * What a layer answers itself in vkGet{Instance,Device}ProcAddr, so that it
 * sees every instance and device come and go, and how it finds its state.
 * Filled by SBL_LAYER_ENTRY_POINTS() from the layer's static functions.
 */
struct sbl_layer_procs {
	PFN_vkGetInstanceProcAddr GetInstanceProcAddr;
	PFN_vkGetDeviceProcAddr GetDeviceProcAddr;
	PFN_vkCreateInstance CreateInstance;
	PFN_vkDestroyInstance DestroyInstance;
	PFN_vkCreateDevice CreateDevice;
	PFN_vkDestroyDevice DestroyDevice;
	/* The layer's state for a handle it created, NULL for any other. */
	void *(*find_instance)(VkInstance instance);
	void *(*find_device)(VkDevice device);
	/* Every other name: the next layer's command, or the layer's own in its place. */
	PFN_vkVoidFunction (*instance_next)(void *inst, VkInstance instance, const char *name);
	PFN_vkVoidFunction (*device_next)(void *dev, VkDevice device, const char *name);
};

static inline PFN_vkVoidFunction
sbl_layer_get_instance_proc_addr(const struct sbl_layer_procs *p, VkInstance instance,
				 const char *name)
{
	void *inst;

	if (!name)
		return NULL;
	if (strcmp(name, "vkGetInstanceProcAddr") == 0)
		return (PFN_vkVoidFunction)p->GetInstanceProcAddr;
	if (strcmp(name, "vkCreateInstance") == 0)
		return (PFN_vkVoidFunction)p->CreateInstance;
	if (!instance)
		return NULL; /* the other global commands are the loader's */
	inst = p->find_instance(instance);
	if (!inst)
		return NULL;
	if (strcmp(name, "vkDestroyInstance") == 0)
		return (PFN_vkVoidFunction)p->DestroyInstance;
	if (strcmp(name, "vkCreateDevice") == 0)
		return (PFN_vkVoidFunction)p->CreateDevice;
	if (strcmp(name, "vkGetDeviceProcAddr") == 0)
		return (PFN_vkVoidFunction)p->GetDeviceProcAddr;
	if (strcmp(name, "vkDestroyDevice") == 0)
		return (PFN_vkVoidFunction)p->DestroyDevice;
	return p->instance_next(inst, instance, name);
}

static inline PFN_vkVoidFunction
sbl_layer_get_device_proc_addr(const struct sbl_layer_procs *p, VkDevice device, const char *name)
{
	void *dev;

	if (!device || !name)
		return NULL;
	if (strcmp(name, "vkGetDeviceProcAddr") == 0)
		return (PFN_vkVoidFunction)p->GetDeviceProcAddr;
	dev = p->find_device(device);
	if (!dev)
		return NULL;
	if (strcmp(name, "vkDestroyDevice") == 0)
		return (PFN_vkVoidFunction)p->DestroyDevice;
	return p->device_next(dev, device, name);
}

/* vkNegotiateLoaderLayerInterfaceVersion: version 2 (the first with this struct) is all we need. */
static inline VkResult
sbl_layer_negotiate(VkNegotiateLayerInterface *version, const struct sbl_layer_procs *p)
{
	if (!version || version->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT ||
	    version->loaderLayerInterfaceVersion < 2)
		return VK_ERROR_INITIALIZATION_FAILED;
	version->loaderLayerInterfaceVersion = 2;
	version->pfnGetInstanceProcAddr = p->GetInstanceProcAddr;
	version->pfnGetDeviceProcAddr = p->GetDeviceProcAddr;
	version->pfnGetPhysicalDeviceProcAddr = NULL; /* no physical-device commands */
	return VK_SUCCESS;
}

/*
 * The layer's vkGetInstanceProcAddr, vkGetDeviceProcAddr and its one export,
 * vkNegotiateLoaderLayerInterfaceVersion (with the visibility attribute
 * `exported`), from static functions the layer defines before it by these
 * names: CreateInstance, DestroyInstance, CreateDevice, DestroyDevice,
 * find_instance, find_device, instance_next, device_next. A macro so that
 * both layers' entry points are this one text.
 */
#define SBL_LAYER_ENTRY_POINTS(exported)                                                          \
	static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetInstanceProcAddr(VkInstance instance,  \
									    const char *name);   \
	static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetDeviceProcAddr(VkDevice device,        \
									  const char *name);     \
	static const struct sbl_layer_procs procs = {                                             \
		GetInstanceProcAddr, GetDeviceProcAddr, CreateInstance, DestroyInstance,           \
		CreateDevice, DestroyDevice, find_instance, find_device, instance_next,            \
		device_next,                                                                       \
	};                                                                                        \
	static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetInstanceProcAddr(VkInstance instance,  \
									    const char *name)    \
	{                                                                                         \
		return sbl_layer_get_instance_proc_addr(&procs, instance, name);                   \
	}                                                                                         \
	static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL GetDeviceProcAddr(VkDevice device,        \
									  const char *name)      \
	{                                                                                         \
		return sbl_layer_get_device_proc_addr(&procs, device, name);                       \
	}                                                                                         \
	exported VKAPI_ATTR VkResult VKAPI_CALL vkNegotiateLoaderLayerInterfaceVersion(           \
		VkNegotiateLayerInterface *version);                                               \
	exported VKAPI_ATTR VkResult VKAPI_CALL vkNegotiateLoaderLayerInterfaceVersion(           \
		VkNegotiateLayerInterface *version)                                                \
	{                                                                                         \
		return sbl_layer_negotiate(version, &procs);                                       \
	}

#endif
