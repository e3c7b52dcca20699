/* SPDX-License-Identifier: MIT */
/*
 * The loader plumbing every layer of this tree does the same way
 * (LoaderLayerInterface.md, interface version 2): finding the
 * VK_LAYER_LINK_INFO element of a create info, the negotiate entry point,
 * and the commands a layer answers itself in vkGetInstanceProcAddr so that
 * it sees every instance and device come and go.
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

/* The layer's own entry points for the commands below. */
struct sbl_layer_procs {
	PFN_vkGetInstanceProcAddr GetInstanceProcAddr;
	PFN_vkGetDeviceProcAddr GetDeviceProcAddr;
	PFN_vkCreateInstance CreateInstance;
	PFN_vkDestroyInstance DestroyInstance;
	PFN_vkCreateDevice CreateDevice;
	PFN_vkDestroyDevice DestroyDevice;
};

/*
 * vkGetInstanceProcAddr before the instance is looked up: the layer's own
 * vkGetInstanceProcAddr and vkCreateInstance; NULL for anything else (with
 * no instance, the other global commands are the loader's).
 */
static inline PFN_vkVoidFunction
sbl_layer_global_proc(const struct sbl_layer_procs *p, const char *name)
{
	if (strcmp(name, "vkGetInstanceProcAddr") == 0)
		return (PFN_vkVoidFunction)p->GetInstanceProcAddr;
	if (strcmp(name, "vkCreateInstance") == 0)
		return (PFN_vkVoidFunction)p->CreateInstance;
	return NULL;
}

/*
 * vkGetInstanceProcAddr for an instance of the layer's: its own destroy and
 * device commands, or NULL (the caller then asks the next layer).
 */
static inline PFN_vkVoidFunction
sbl_layer_instance_proc(const struct sbl_layer_procs *p, const char *name)
{
	if (strcmp(name, "vkDestroyInstance") == 0)
		return (PFN_vkVoidFunction)p->DestroyInstance;
	if (strcmp(name, "vkCreateDevice") == 0)
		return (PFN_vkVoidFunction)p->CreateDevice;
	if (strcmp(name, "vkGetDeviceProcAddr") == 0)
		return (PFN_vkVoidFunction)p->GetDeviceProcAddr;
	if (strcmp(name, "vkDestroyDevice") == 0)
		return (PFN_vkVoidFunction)p->DestroyDevice;
	return NULL;
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

#endif
