/* SPDX-License-Identifier: MIT */
/*
 * VK_LAYER_SBTEST_fault: a test-only Vulkan layer that plays a strict driver
 * for one command, so that libsbfault can make that command fail for a real
 * reason (docs/layer.md, "Tests"; testbed/tbvk.c, --fault acquire-import).
 *
 * It passes everything through and intercepts only vkImportSemaphoreFdKHR.
 * For a SYNC_FD import of an fd it first does what a driver that keeps a
 * reference of its own does with the handle, fcntl(F_DUPFD_CLOEXEC), closes
 * the copy and calls down; when the dup fails it answers
 * VK_ERROR_INVALID_EXTERNAL_HANDLE without calling down. The spec:
 * "Importing a semaphore payload from a file descriptor transfers ownership
 * of the file descriptor from the application to the Vulkan implementation.
 * The application must not perform any operations on the file descriptor
 * after a successful import." — on failure the caller still owns the fd, and
 * this layer neither closes nor keeps it. In a normal run the dup succeeds
 * and nothing changes; libsbfault scoped to this object
 * ("libVkLayer_SBTEST_fault", rule "dup:1:EMFILE") fails it once.
 *
 * Only the layer-fallback-acquire-import program enables it, by name
 * (VK_INSTANCE_LAYERS): the loader puts environment-enabled layers below the
 * implicit ones, so it sits between VK_LAYER_SYNCBRIDGE_implicit_sync and
 * the driver and sees the layer's own imports. Its library name must not
 * contain "libVkLayer_SYNCBRIDGE", the scope of the other fault rows.
 *
 * The loader contract (LoaderLayerInterface.md, interface version 2): only
 * vkNegotiateLoaderLayerInterfaceVersion is exported; vkCreateInstance /
 * vkCreateDevice take the next layer's proc-addr functions from the
 * VK_LAYER_LINK_INFO element and advance it before calling down. No handle
 * is wrapped: instances and devices are found by dispatch key (a physical
 * device shares its instance's), in two lists under one mutex.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vulkan/vulkan.h>
#include <vulkan/vk_layer.h>

#include "loader_link.h" /* layer/: the loader plumbing both layers share */

#define EXPORT __attribute__((visibility("default")))

/* What both lists hold first: the dispatch key the loader's handles share. */
struct tracked {
	struct tracked *next;
	void *key;
};

struct fault_instance {
	struct tracked node; /* first: a struct tracked * is one of these */
	VkInstance handle;
	PFN_vkGetInstanceProcAddr next_gipa;
	PFN_vkDestroyInstance DestroyInstance;
};

struct fault_device {
	struct tracked node; /* first: a struct tracked * is one of these */
	PFN_vkGetDeviceProcAddr next_gdpa;
	PFN_vkDestroyDevice DestroyDevice;
	PFN_vkImportSemaphoreFdKHR ImportSemaphoreFdKHR;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct tracked *instances; /* struct fault_instance */
static struct tracked *devices;   /* struct fault_device */

static void *
dispatch_key(const void *handle)
{
	return *(void *const *)handle;
}

/* The entry of list whose key is handle's, or NULL. */
static struct tracked *
tracked_find(struct tracked *const *list, const void *handle)
{
	void *key = dispatch_key(handle);
	struct tracked *t;

	pthread_mutex_lock(&lock);
	for (t = *list; t && t->key != key; t = t->next)
		;
	pthread_mutex_unlock(&lock);
	return t;
}

/* t goes on list, under handle's key (the handle the next layer made). */
static void
tracked_add(struct tracked **list, struct tracked *t, const void *handle)
{
	t->key = dispatch_key(handle);
	pthread_mutex_lock(&lock);
	t->next = *list;
	*list = t;
	pthread_mutex_unlock(&lock);
}

/* Takes handle's entry off list and returns it (the caller frees it), or NULL. */
static struct tracked *
tracked_remove(struct tracked **list, const void *handle)
{
	void *key = dispatch_key(handle);
	struct tracked *t = NULL;

	pthread_mutex_lock(&lock);
	for (struct tracked **p = list; *p; p = &(*p)->next) {
		if ((*p)->key == key) {
			t = *p;
			*p = t->next;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return t;
}

static struct fault_instance *
instance_lookup(const void *handle)
{
	return (struct fault_instance *)tracked_find(&instances, handle);
}

static struct fault_device *
device_lookup(VkDevice handle)
{
	return (struct fault_device *)tracked_find(&devices, handle);
}

/* ------------------------------------------------------------------------ */
/* The one intercepted command                                               */

static VKAPI_ATTR VkResult VKAPI_CALL
ImportSemaphoreFdKHR(VkDevice device, const VkImportSemaphoreFdInfoKHR *info)
{
	struct fault_device *dev = device_lookup(device);
	if (!dev || !dev->ImportSemaphoreFdKHR)
		return VK_ERROR_INVALID_EXTERNAL_HANDLE; /* not a device of ours: loader bug */

	/* -1 is a valid SYNC_FD payload (already signalled): nothing to check. */
	if (info->handleType == VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT && info->fd >= 0) {
		int copy = fcntl(info->fd, F_DUPFD_CLOEXEC, 0);
		if (copy < 0)
			return VK_ERROR_INVALID_EXTERNAL_HANDLE; /* the caller keeps info->fd */
		close(copy);
	}
	return dev->ImportSemaphoreFdKHR(device, info);
}

/* ------------------------------------------------------------------------ */
/* Instances and devices                                                     */

static VKAPI_ATTR VkResult VKAPI_CALL
CreateInstance(const VkInstanceCreateInfo *info, const VkAllocationCallbacks *alloc,
	       VkInstance *out)
{
	VkLayerInstanceCreateInfo *link = sbl_find_instance_link(info);
	if (!link || !link->u.pLayerInfo)
		return VK_ERROR_INITIALIZATION_FAILED;

	VkLayerInstanceLink *my_link = link->u.pLayerInfo;
	PFN_vkGetInstanceProcAddr next_gipa = my_link->pfnNextGetInstanceProcAddr;
	PFN_vkCreateInstance create = (PFN_vkCreateInstance)next_gipa(NULL, "vkCreateInstance");
	if (!create)
		return VK_ERROR_INITIALIZATION_FAILED;

	struct fault_instance *inst = calloc(1, sizeof(*inst));
	if (!inst)
		return VK_ERROR_OUT_OF_HOST_MEMORY;

	link->u.pLayerInfo = my_link->pNext; /* advance before calling down */
	VkResult res = create(info, alloc, out);
	link->u.pLayerInfo = my_link;        /* and leave it as we found it */
	if (res != VK_SUCCESS) {
		free(inst);
		return res;
	}

	inst->handle = *out;
	inst->next_gipa = next_gipa;
	inst->DestroyInstance = (PFN_vkDestroyInstance)next_gipa(*out, "vkDestroyInstance");
	tracked_add(&instances, &inst->node, *out);
	return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL
DestroyInstance(VkInstance instance, const VkAllocationCallbacks *alloc)
{
	struct fault_instance *inst =
		instance ? (struct fault_instance *)tracked_remove(&instances, instance) : NULL;

	if (!inst)
		return;
	inst->DestroyInstance(instance, alloc);
	free(inst);
}

static VKAPI_ATTR VkResult VKAPI_CALL
CreateDevice(VkPhysicalDevice physical, const VkDeviceCreateInfo *info,
	     const VkAllocationCallbacks *alloc, VkDevice *out)
{
	VkLayerDeviceCreateInfo *link = sbl_find_device_link(info);
	struct fault_instance *inst = instance_lookup(physical);
	if (!link || !link->u.pLayerInfo || !inst)
		return VK_ERROR_INITIALIZATION_FAILED;

	VkLayerDeviceLink *my_link = link->u.pLayerInfo;
	PFN_vkGetDeviceProcAddr next_gdpa = my_link->pfnNextGetDeviceProcAddr;
	PFN_vkCreateDevice create =
		(PFN_vkCreateDevice)my_link->pfnNextGetInstanceProcAddr(inst->handle, "vkCreateDevice");
	if (!create)
		return VK_ERROR_INITIALIZATION_FAILED;

	struct fault_device *dev = calloc(1, sizeof(*dev));
	if (!dev)
		return VK_ERROR_OUT_OF_HOST_MEMORY;

	link->u.pLayerInfo = my_link->pNext; /* advance before calling down */
	VkResult res = create(physical, info, alloc, out);
	link->u.pLayerInfo = my_link;
	if (res != VK_SUCCESS) {
		free(dev);
		return res;
	}

	dev->next_gdpa = next_gdpa;
	dev->DestroyDevice = (PFN_vkDestroyDevice)next_gdpa(*out, "vkDestroyDevice");
	dev->ImportSemaphoreFdKHR =
		(PFN_vkImportSemaphoreFdKHR)next_gdpa(*out, "vkImportSemaphoreFdKHR");
	tracked_add(&devices, &dev->node, *out);
	return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL
DestroyDevice(VkDevice device, const VkAllocationCallbacks *alloc)
{
	struct fault_device *dev =
		device ? (struct fault_device *)tracked_remove(&devices, device) : NULL;

	if (!dev)
		return;
	dev->DestroyDevice(device, alloc);
	free(dev);
}

/* ------------------------------------------------------------------------ */
/* Proc addresses                                                            */

static void *
find_instance(VkInstance instance)
{
	return instance_lookup(instance);
}

static void *
find_device(VkDevice device)
{
	return device_lookup(device);
}

static PFN_vkVoidFunction
device_next(void *d, VkDevice device, const char *name)
{
	struct fault_device *dev = d;

	if (strcmp(name, "vkImportSemaphoreFdKHR") == 0)
		return dev->ImportSemaphoreFdKHR ? (PFN_vkVoidFunction)ImportSemaphoreFdKHR : NULL;
	return dev->next_gdpa(device, name);
}

static PFN_vkVoidFunction
instance_next(void *i, VkInstance instance, const char *name)
{
	struct fault_instance *inst = i;
	PFN_vkVoidFunction next = inst->next_gipa(instance, name);

	if (next && strcmp(name, "vkImportSemaphoreFdKHR") == 0)
		return (PFN_vkVoidFunction)ImportSemaphoreFdKHR;
	return next;
}

/* vkGetInstanceProcAddr, vkGetDeviceProcAddr, vkNegotiateLoaderLayerInterfaceVersion. */
SBL_LAYER_ENTRY_POINTS(EXPORT)
