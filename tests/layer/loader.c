/* SPDX-License-Identifier: MIT */
/*
 * Loader activation, one scenario per run (argv[1]):
 *   implicit          the implicit manifest via XDG_DATA_DIRS (and
 *                     VK_ADD_IMPLICIT_LAYER_PATH for newer loaders)  → loaded
 *   disabled          the same with SYNCBRIDGE_DISABLE=1              → not loaded
 *   by-name           VK_ADD_LAYER_PATH + VK_INSTANCE_LAYERS only     → loaded
 *   both              implicit and VK_INSTANCE_LAYERS at once         → loaded ONCE
 *   app-enabled       implicit + the app's ppEnabledLayerNames        → loaded ONCE
 *   by-name-disabled  VK_INSTANCE_LAYERS with SYNCBRIDGE_DISABLE=1    → loaded, but
 *                     the layer itself turns to pass-through (mode off)
 * "Loaded" is counted from the layer's own log (SYNCBRIDGE_DEBUG=debug: one
 * line per vkCreateInstance and one per vkCreateDevice that went through it)
 * and checked against the loader's list of active layers
 * (vkEnumerateDeviceLayerProperties).
 */
#include <string.h>

#include "harness.h"
#include "tbvk.h"

int
main(int argc, char **argv)
{
	REQUIRE(argc == 2, "usage: %s SCENARIO", argv[0]);
	const char *sc = argv[1];
	enum tbvk_activation how;
	bool disable = false, app_enables = false;
	int want_loaded = 1;
	const char *want_mode = "mode transfers";

	if (strcmp(sc, "implicit") == 0) {
		how = TBVK_ACTIVATE_IMPLICIT;
	} else if (strcmp(sc, "disabled") == 0) {
		how = TBVK_ACTIVATE_IMPLICIT;
		disable = true;
		want_loaded = 0;
	} else if (strcmp(sc, "by-name") == 0) {
		how = TBVK_ACTIVATE_BY_NAME;
	} else if (strcmp(sc, "both") == 0) {
		how = TBVK_ACTIVATE_BOTH;
	} else if (strcmp(sc, "app-enabled") == 0) {
		how = TBVK_ACTIVATE_BOTH; /* the explicit manifest must be findable */
		app_enables = true;
	} else if (strcmp(sc, "by-name-disabled") == 0) {
		how = TBVK_ACTIVATE_BY_NAME;
		disable = true;
		want_mode = "mode off";
	} else {
		REQUIRE(0, "unknown scenario %s", sc);
	}

	setenv("SYNCBRIDGE_DEBUG", "debug", 1);
	unsetenv("SYNCBRIDGE_MODE");
	unsetenv("SYNCBRIDGE_DISABLE");
	tbvk_env_activate(how, NULL);
	if (app_enables)
		unsetenv("VK_INSTANCE_LAYERS");
	if (disable)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);

	const char *layers[] = { VKT_LAYER_NAME };
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.apiVersion = VK_API_VERSION_1_1,
	};
	VkInstanceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
		.enabledLayerCount = app_enables ? 1 : 0,
		.ppEnabledLayerNames = layers,
	};

	tbvk_capture_begin();
	VkInstance instance;
	VkResult r = vkCreateInstance(&info, NULL, &instance);
	if (r != VK_SUCCESS) {
		free(tbvk_capture_end());
		if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
			sb_test_skip("no Vulkan driver");
		REQUIRE(0, "vkCreateInstance: %s", vkt_result_name(r));
	}

	uint32_t n = 1;
	VkPhysicalDevice pd = VK_NULL_HANDLE;
	r = vkEnumeratePhysicalDevices(instance, &n, &pd);
	int listed = -1, devices_made = 0;
	if ((r == VK_SUCCESS || r == VK_INCOMPLETE) && n == 1) {
		listed = vkt_device_layer_count(pd, VKT_LAYER_NAME);

		/* A device too: its chain must hold the layer once as well. */
		float prio = 1.0f;
		VkDeviceQueueCreateInfo q = {
			.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
			.queueCount = 1,
			.pQueuePriorities = &prio,
		};
		VkDeviceCreateInfo dinfo = {
			.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
			.queueCreateInfoCount = 1,
			.pQueueCreateInfos = &q,
		};
		VkDevice device;
		if (vkCreateDevice(pd, &dinfo, NULL, &device) == VK_SUCCESS) {
			devices_made = 1;
			vkDestroyDevice(device, NULL);
		}
	}

	/* How often the loader offers the name (both manifests: twice). */
	uint32_t avail_count = 0;
	vkEnumerateInstanceLayerProperties(&avail_count, NULL);
	VkLayerProperties *avail = calloc(avail_count ? avail_count : 1, sizeof(*avail));
	vkEnumerateInstanceLayerProperties(&avail_count, avail);
	int offered = 0;
	for (uint32_t i = 0; i < avail_count; i++)
		offered += strcmp(avail[i].layerName, VKT_LAYER_NAME) == 0;
	free(avail);

	vkDestroyInstance(instance, NULL);
	char *log = tbvk_capture_end();

	int loaded = tbvk_count(log, "vkCreateInstance: " VKT_LAYER_NAME " active");
	int device_lines = tbvk_count(log, "layer: device 0x");
	sb_test_note("scenario %s: through the layer: %d instance(s), %d of %d device(s); "
		     "active list names it %d time(s); offered %d time(s)", sc, loaded,
		     device_lines, devices_made, listed, offered);
	CHECK_EQ(loaded, want_loaded, "instances created through the layer");
	if (devices_made)
		CHECK_EQ(device_lines, want_loaded, "devices created through the layer");
	/* Loader 1.3.239 names a layer found through both manifests twice in
	 * its active list, but builds the chains with it once (counted above). */
	if (listed >= 0)
		CHECK(want_loaded ? listed >= 1 : listed == 0, "the active list %s the layer",
		      want_loaded ? "names" : "does not name");
	if (want_loaded)
		CHECK(tbvk_count(log, want_mode) == 1, "the layer runs in '%s'", want_mode);
	free(log);
	return sb_test_finish();
}
