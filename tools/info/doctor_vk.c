/* SPDX-License-Identifier: MIT */
/*
 * doctor, Vulkan: each device's external-sync capabilities (a listing
 * child), then per device two probe children: the driver alone (the
 * syncbridge layer kept out: SYNCBRIDGE_DISABLE=1 and
 * VK_LOADER_LAYERS_DISABLE) measures implicit sync out and in; the app's own
 * environment with SYNCBRIDGE_DEBUG=info reads the layer's per-device log
 * line and, where the layer is active, measures out again after a FOREIGN
 * release. Each child has the caller's time limit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "doctor.h"
#include "doctor_vk_probe.h"
#include "info.h"

struct vk_arg {
	int index; /* in vkEnumeratePhysicalDevices' order */
};

/* The layer kept out of this (child) process. */
static void
layer_out(void)
{
	const char *old = getenv("VK_LOADER_LAYERS_DISABLE");
	char v[1024];

	snprintf(v, sizeof(v), "%s%s" VKT_LAYER_NAME, old && *old ? old : "",
		 old && *old ? "," : "");
	setenv("VK_LOADER_LAYERS_DISABLE", v, 1);
	setenv("SYNCBRIDGE_DISABLE", "1", 1);
	setenv("NO_SYNCBRIDGE", "1", 1); /* the merged layer's manifest variable */
}

/* An instance and up to DOCTOR_MAX_VK devices; 0 or -errno with why in it. */
static int
open_instance(VkInstance *inst, VkPhysicalDevice *pds, uint32_t *n, struct doctor_item *it)
{
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "syncbridge-info doctor",
		.apiVersion = VK_API_VERSION_1_1,
	};
	VkInstanceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	VkResult r = vkCreateInstance(&info, NULL, inst);

	if (r != VK_SUCCESS) {
		doctor_item_set(it, DOCTOR_NO, "vkCreateInstance: %s%s", vkt_result_name(r),
				r == VK_ERROR_INCOMPATIBLE_DRIVER ? " (no Vulkan driver installed)"
								  : "");
		return -ENODEV;
	}
	*n = DOCTOR_MAX_VK;
	r = vkEnumeratePhysicalDevices(*inst, n, pds);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
		doctor_item_set(it, DOCTOR_NO, "vkEnumeratePhysicalDevices: %s",
				vkt_result_name(r));
		vkDestroyInstance(*inst, NULL);
		return -EIO;
	}
	return 0;
}

static bool
has_ext(VkPhysicalDevice pd, const char *name)
{
	VkExtensionProperties p[512];
	uint32_t n = 512;

	vkEnumerateDeviceExtensionProperties(pd, NULL, &n, p);
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(p[i].extensionName, name) == 0)
			return true;
	return false;
}

static void
describe(VkPhysicalDevice pd, struct doctor_vk_dev *d)
{
	static const char *const types[] = {"other", "integrated", "discrete", "virtual", "cpu"};
	VkPhysicalDeviceDriverProperties drv = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
	};
	VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
	VkPhysicalDeviceExternalSemaphoreInfo si = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO,
		.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
	};
	VkExternalSemaphoreProperties sp = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES};
	bool sem_ext = has_ext(pd, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
	bool dmabuf = has_ext(pd, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME) &&
		      has_ext(pd, VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME);
	bool foreign = has_ext(pd, VK_EXT_QUEUE_FAMILY_FOREIGN_EXTENSION_NAME);

	vkGetPhysicalDeviceProperties(pd, &p2.properties);
	if (VK_API_VERSION_MINOR(p2.properties.apiVersion) >= 2 ||
	    has_ext(pd, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME)) {
		p2.pNext = &drv;
		vkGetPhysicalDeviceProperties2(pd, &p2);
	}
	snprintf(d->name, sizeof(d->name), "%s", p2.properties.deviceName);
	snprintf(d->driver, sizeof(d->driver), "%.*s", (int)sizeof(d->driver) - 1, drv.driverName);
	snprintf(d->driver_info, sizeof(d->driver_info), "%.*s", (int)sizeof(d->driver_info) - 1,
		 drv.driverInfo);
	snprintf(d->type, sizeof(d->type), "%s",
		 p2.properties.deviceType <= 4 ? types[p2.properties.deviceType] : "?");
	d->api = p2.properties.apiVersion;
	vkGetPhysicalDeviceExternalSemaphoreProperties(pd, &si, &sp);
	doctor_item_set(&d->sync_fd_export,
			sem_ext && (sp.externalSemaphoreFeatures &
				    VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT)
				? DOCTOR_YES
				: DOCTOR_NO,
			"%s",
			sem_ext ? "VkExternalSemaphoreProperties, SYNC_FD"
				: "no " VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
	doctor_item_set(&d->sync_fd_import,
			sem_ext && (sp.externalSemaphoreFeatures &
				    VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT)
				? DOCTOR_YES
				: DOCTOR_NO,
			"%s", d->sync_fd_export.why);
	doctor_item_set(&d->dmabuf, dmabuf ? DOCTOR_YES : DOCTOR_NO, "%s",
			VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME);
	doctor_item_set(&d->foreign, foreign ? DOCTOR_YES : DOCTOR_NO, "%s",
			VK_EXT_QUEUE_FAMILY_FOREIGN_EXTENSION_NAME);
}

static void
list_child(void *out, const void *arg)
{
	struct doctor_vk *vk = out;
	VkPhysicalDevice pds[DOCTOR_MAX_VK];
	VkInstance inst;
	uint32_t n;

	(void)arg;
	layer_out();
	if (open_instance(&inst, pds, &n, &vk->available) < 0)
		return;
	doctor_item_set(&vk->available, n ? DOCTOR_YES : DOCTOR_NO, "%u device%s", n,
			n == 1 ? "" : "s");
	vk->n = (int)n;
	for (uint32_t i = 0; i < n; i++)
		describe(pds[i], &vk->dev[i]);
	vkDestroyInstance(inst, NULL);
}

/* The device of index a->index on a fresh instance: 0, or -errno saying why in it. */
static int
open_device(const struct vk_arg *a, struct vkt *t, VkInstance *inst, struct doctor_item *it)
{
	VkPhysicalDevice pds[DOCTOR_MAX_VK];
	struct vkt base = {0};
	uint32_t n;

	if (open_instance(inst, pds, &n, it) < 0)
		return -ENODEV;
	if ((uint32_t)a->index >= n) {
		doctor_item_set(it, DOCTOR_UNKNOWN, "the device is gone");
		vkDestroyInstance(*inst, NULL);
		return -ENODEV;
	}
	base.cfg = (struct vkt_config){
		.who = "doctor",
		.api_version = VK_API_VERSION_1_1,
		.want = VKT_DMABUF | VKT_FOREIGN,
	};
	base.instance = *inst;
	base.physical = pds[a->index];
	if (vkt_create_device(t, &base) < 0) {
		doctor_item_set(it, DOCTOR_UNKNOWN, "%s", t->why);
		vkt_finish_device(t);
		vkDestroyInstance(*inst, NULL);
		return -EIO;
	}
	return 0;
}

static void
driver_child(void *out, const void *arg)
{
	struct doctor_vk_dev *d = out;
	VkInstance inst;
	struct vkt t;

	layer_out();
	if (open_device(arg, &t, &inst, &d->out) < 0) {
		d->in = d->out;
		return;
	}
	doctor_vk_measure_out(&t, false, &d->out);
	doctor_vk_measure_in(&t, false, &d->in);
	vkt_finish_device(&t);
	vkDestroyInstance(inst, NULL);
}

/* What the layer said (stderr, caught in memfd) about device d, or what we saw. */
static void
read_layer_log(int memfd, const struct vkt *t, struct doctor_vk_dev *d)
{
	struct doctor_vk_layer *l = &d->layer;
	char text[16384];
	ssize_t n = pread(memfd, text, sizeof(text) - 1, 0);

	text[n > 0 ? n : 0] = 0;
	if (doctor_layer_line_parse(text, d->name, l))
		return;
	if (t->layer_active) {
		snprintf(l->state, sizeof(l->state), "active");
		snprintf(l->why, sizeof(l->why),
			 "its vkQueueSubmit is the layer's (the layer wrote "
			 "no per-device line: an older syncbridge)");
	} else if (strstr(text, "syncbridge: ")) {
		snprintf(l->state, sizeof(l->state), "pass-through");
		snprintf(l->why, sizeof(l->why),
			 "the layer is loaded but not in this device's "
			 "vkQueueSubmit (it wrote no per-device line: an older syncbridge)");
	} else {
		snprintf(l->state, sizeof(l->state), "not loaded");
		snprintf(l->why, sizeof(l->why),
			 "the loader did not put " VKT_LAYER_NAME " in this "
			 "app's chain (see the layer section)");
	}
}

static void
layer_child(void *out, const void *arg)
{
	struct doctor_vk_dev *d = out;
	int memfd = memfd_create("doctor-layer-log", MFD_CLOEXEC);
	VkInstance inst;
	struct vkt t;

	setenv("SYNCBRIDGE_DEBUG", "info", 1);
	if (memfd >= 0)
		dup2(memfd, STDERR_FILENO);
	if (open_device(arg, &t, &inst, &d->layer.foreign_out) < 0) {
		snprintf(d->layer.state, sizeof(d->layer.state), "unknown");
		snprintf(d->layer.why, sizeof(d->layer.why), "%s", d->layer.foreign_out.why);
		d->layer.foreign_in = d->layer.foreign_out;
		return;
	}
	read_layer_log(memfd, &t, d);
	if (strcmp(d->layer.state, "active") == 0) {
		doctor_vk_measure_out(&t, true, &d->layer.foreign_out);
		doctor_vk_measure_in(&t, true, &d->layer.foreign_in);
	} else {
		doctor_item_set(&d->layer.foreign_out, DOCTOR_UNKNOWN,
				"the layer is not active on this device");
		d->layer.foreign_in = d->layer.foreign_out;
	}
	vkt_finish_device(&t);
	vkDestroyInstance(inst, NULL);
}

void
doctor_vk_probe(struct doctor_vk *vk, int timeout_ms)
{
	char why[256];

	memset(vk, 0, sizeof(*vk));
	doctor_item_set(&vk->available, DOCTOR_UNKNOWN, "the probe did not say");
	if (doctor_run("vulkan", list_child, NULL, vk, sizeof(*vk), timeout_ms, why, sizeof(why)) <
	    0) {
		doctor_item_set(&vk->available, DOCTOR_UNKNOWN, "%s", why);
		vk->n = 0;
		return;
	}
	for (int i = 0; i < vk->n; i++) {
		struct doctor_vk_dev *d = &vk->dev[i];
		struct vk_arg a = {.index = i};

		if (doctor_run("vulkan", driver_child, &a, d, sizeof(*d), timeout_ms, why,
			       sizeof(why)) < 0) {
			doctor_item_set(&d->out, DOCTOR_UNKNOWN, "%s", why);
			doctor_item_set(&d->in, DOCTOR_UNKNOWN, "%s", why);
		}
		if (doctor_run("vulkan-layer", layer_child, &a, d, sizeof(*d), timeout_ms, why,
			       sizeof(why)) < 0) {
			snprintf(d->layer.state, sizeof(d->layer.state), "unknown");
			snprintf(d->layer.why, sizeof(d->layer.why), "%s", why);
			doctor_item_set(&d->layer.foreign_out, DOCTOR_UNKNOWN, "%s", why);
			d->layer.foreign_in = d->layer.foreign_out;
		}
	}
}

static struct json_object *
dev_json(const struct doctor_vk_dev *d)
{
	struct json_object *o = json_object_new_object(), *l = json_object_new_object();
	char api[32];

	snprintf(api, sizeof(api), "%u.%u.%u", VK_API_VERSION_MAJOR(d->api),
		 VK_API_VERSION_MINOR(d->api), VK_API_VERSION_PATCH(d->api));
	json_object_object_add(o, "name", info_json_str(d->name));
	json_object_object_add(o, "driver", info_json_str(d->driver));
	json_object_object_add(o, "driver_info", info_json_str(d->driver_info));
	json_object_object_add(o, "type", info_json_str(d->type));
	json_object_object_add(o, "api", json_object_new_string(api));
	json_object_object_add(o, "sync_fd_semaphore_export", doctor_item_json(&d->sync_fd_export));
	json_object_object_add(o, "sync_fd_semaphore_import", doctor_item_json(&d->sync_fd_import));
	json_object_object_add(o, "dmabuf_memory", doctor_item_json(&d->dmabuf));
	json_object_object_add(o, "queue_family_foreign", doctor_item_json(&d->foreign));
	json_object_object_add(o, "implicit_out", doctor_item_json(&d->out));
	json_object_object_add(o, "implicit_in", doctor_item_json(&d->in));
	json_object_object_add(l, "state", info_json_str(d->layer.state));
	json_object_object_add(l, "mode", d->layer.mode[0] ? info_json_str(d->layer.mode) : NULL);
	json_object_object_add(l, "why", info_json_str(d->layer.why));
	json_object_object_add(l, "foreign_release_out", doctor_item_json(&d->layer.foreign_out));
	json_object_object_add(l, "foreign_acquire_in", doctor_item_json(&d->layer.foreign_in));
	json_object_object_add(o, "layer", l);
	return o;
}

struct json_object *
doctor_vk_json(const struct doctor_vk *vk)
{
	struct json_object *o = json_object_new_object(), *devs = json_object_new_array();

	json_object_object_add(o, "available", doctor_item_json(&vk->available));
	for (int i = 0; i < vk->n; i++)
		json_object_array_add(devs, dev_json(&vk->dev[i]));
	json_object_object_add(o, "devices", devs);
	return o;
}

void
doctor_vk_print(FILE *f, const struct doctor_vk *vk)
{
	fprintf(f, "Vulkan: %s (%s)\n", doctor_tri_word(vk->available.v), vk->available.why);
	for (int i = 0; i < vk->n; i++) {
		const struct doctor_vk_dev *d = &vk->dev[i];

		fprintf(f, "  device %d: %s (%s, %s, Vulkan %u.%u)\n", i, d->name,
			d->driver[0] ? d->driver : "driver ?", d->type,
			VK_API_VERSION_MAJOR(d->api), VK_API_VERSION_MINOR(d->api));
		doctor_item_print(f, "    ", "SYNC_FD semaphore export", &d->sync_fd_export);
		doctor_item_print(f, "    ", "SYNC_FD semaphore import", &d->sync_fd_import);
		doctor_item_print(f, "    ", "dma-buf memory", &d->dmabuf);
		doctor_item_print(f, "    ", "FOREIGN queue family", &d->foreign);
		doctor_item_print(f, "    ", "implicit sync out", &d->out);
		doctor_item_print(f, "    ", "implicit sync in", &d->in);
		fprintf(f, "    %-26s %s%s%s (%s)\n", "syncbridge layer", d->layer.state,
			d->layer.mode[0] ? ", mode " : "", d->layer.mode, d->layer.why);
		doctor_item_print(f, "    ", "  fence after FOREIGN", &d->layer.foreign_out);
		doctor_item_print(f, "    ", "  wait at FOREIGN acquire", &d->layer.foreign_in);
	}
}
