/*
 * Loader activation, one scenario per run (argv[1]; the table below). There
 * is one manifest, implicit (docs/layer.md, "Activation"):
 *   implicit            found through XDG_DATA_DIRS (and VK_ADD_IMPLICIT_LAYER_PATH
 *                       for newer loaders)                        → loaded, offered once
 *   disabled            the same with SYNCBRIDGE_DISABLE=1          → loaded, mode off
 *                       (the layer reads the value: pure pass-through)
 *   disable-0           SYNCBRIDGE_DISABLE=0 (control of the above) → loaded, transfers
 *   disable-bogus       SYNCBRIDGE_DISABLE=maybe                    → mode off, one warning
 *   no-syncbridge       NO_SYNCBRIDGE=1 (the manifest's disable_environment)
 *                                                                 → not loaded
 *   no-syncbridge-empty NO_SYNCBRIDGE= (empty: the loader tests presence) → not loaded
 *   named               implicit manifest only + VK_INSTANCE_LAYERS → loaded ONCE
 *   app-named           implicit manifest only + ppEnabledLayerNames → loaded ONCE
 *   named-while-off     VK_INSTANCE_LAYERS with NO_SYNCBRIDGE=1     → not loaded
 *                       (loader 1.3.239: the disable variable wins over the name)
 *   by-name             the manifest's folder in VK_ADD_LAYER_PATH (an explicit
 *                       layer to the loader) + VK_INSTANCE_LAYERS   → loaded
 *   by-name-disabled    that with SYNCBRIDGE_DISABLE=1              → loaded, mode off
 *   both                implicit and by name at once (the file found twice)
 *                                                                 → loaded ONCE
 *   app-enabled         that, named in ppEnabledLayerNames instead  → loaded ONCE
 * "Loaded" is counted from the layer's own log (SYNCBRIDGE_DEBUG=debug: one
 * line per vkCreateInstance and one per vkCreateDevice that went through it)
 * and checked against the loader's list of active layers
 * (vkEnumerateDeviceLayerProperties); "offered" is how often
 * vkEnumerateInstanceLayerProperties names it (what vulkaninfo lists).
 */
#include <string.h>

#include "harness.h"
#include "tbvk.h"

struct scenario {
	const char *name;
	enum tbvk_activation how;
	bool keep_instance_layers; /* else VK_INSTANCE_LAYERS is unset */
	bool app_enables;          /* ppEnabledLayerNames names the layer */
	const char *disable;       /* SYNCBRIDGE_DISABLE's value, or NULL */
	bool no_syncbridge;        /* NO_SYNCBRIDGE set (to the value below) */
	const char *no_value;
	int want_loaded;
	const char *want_mode; /* on the instance line */
	int want_offered;      /* -1: not checked */
};

static const struct scenario scenarios[] = {
	{ "implicit", TBVK_ACTIVATE_IMPLICIT, true, false, NULL, false, NULL, 1, "transfers", 1 },
	{ "disabled", TBVK_ACTIVATE_IMPLICIT, true, false, "1", false, NULL, 1, "off", 1 },
	{ "disable-0", TBVK_ACTIVATE_IMPLICIT, true, false, "0", false, NULL, 1, "transfers", 1 },
	{ "disable-bogus", TBVK_ACTIVATE_IMPLICIT, true, false, "maybe", false, NULL, 1, "off",
	  1 },
	{ "no-syncbridge", TBVK_ACTIVATE_IMPLICIT, true, false, NULL, true, "1", 0, NULL, 1 },
	{ "no-syncbridge-empty", TBVK_ACTIVATE_IMPLICIT, true, false, NULL, true, "", 0, NULL, 1 },
	{ "named", TBVK_ACTIVATE_IMPLICIT, true, false, NULL, false, NULL, 1, "transfers", 1 },
	{ "app-named", TBVK_ACTIVATE_IMPLICIT, false, true, NULL, false, NULL, 1, "transfers", 1 },
	{ "named-while-off", TBVK_ACTIVATE_IMPLICIT, true, false, NULL, true, "1", 0, NULL, 1 },
	{ "by-name", TBVK_ACTIVATE_BY_NAME, true, false, NULL, false, NULL, 1, "transfers", 1 },
	{ "by-name-disabled", TBVK_ACTIVATE_BY_NAME, true, false, "1", false, NULL, 1, "off", 1 },
	{ "both", TBVK_ACTIVATE_BOTH, true, false, NULL, false, NULL, 1, "transfers", -1 },
	{ "app-enabled", TBVK_ACTIVATE_BOTH, false, true, NULL, false, NULL, 1, "transfers", -1 },
};

static const struct scenario *
find_scenario(const char *name)
{
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (strcmp(scenarios[i].name, name) == 0)
			return &scenarios[i];
	return NULL;
}

int
main(int argc, char **argv)
{
	REQUIRE(argc == 2, "usage: %s SCENARIO", argv[0]);
	const struct scenario *sc = find_scenario(argv[1]);
	REQUIRE(sc, "unknown scenario %s", argv[1]);

	setenv("SYNCBRIDGE_DEBUG", "debug", 1);
	unsetenv("SYNCBRIDGE_MODE");
	unsetenv("SYNCBRIDGE_DISABLE");
	unsetenv("NO_SYNCBRIDGE");
	tbvk_env_activate(sc->how, NULL);
	/* "named"/"named-while-off": the implicit manifest alone, named anyway. */
	if (strncmp(sc->name, "named", 5) == 0)
		setenv("VK_INSTANCE_LAYERS", VKT_LAYER_NAME, 1);
	if (!sc->keep_instance_layers)
		unsetenv("VK_INSTANCE_LAYERS");
	if (sc->disable)
		setenv("SYNCBRIDGE_DISABLE", sc->disable, 1);
	if (sc->no_syncbridge)
		setenv("NO_SYNCBRIDGE", sc->no_value, 1);

	const char *layers[] = { VKT_LAYER_NAME };
	tbvk_capture_begin();
	VkInstance instance = tbvk_bare_instance(sc->app_enables ? 1 : 0, layers);

	VkPhysicalDevice pd = tbvk_first_physical(instance);
	int listed = -1, devices_made = 0;
	if (pd != VK_NULL_HANDLE) {
		listed = vkt_device_layer_count(pd, VKT_LAYER_NAME);

		/* A device too: its chain must hold the layer once as well. */
		VkDevice device;
		if (tbvk_bare_device(pd, &device) == VK_SUCCESS) {
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

	char want_line[128];
	snprintf(want_line, sizeof(want_line), "vkCreateInstance: %s loaded, mode %s",
		 VKT_LAYER_NAME, sc->want_mode ? sc->want_mode : "");
	int loaded = tbvk_count(log, "vkCreateInstance: " VKT_LAYER_NAME " loaded");
	int device_lines = tbvk_count(log, "layer: device \"");
	int warnings = tbvk_count(log, "SYNCBRIDGE_DISABLE=maybe is not");
	tb_note("scenario %s: through the layer: %d instance(s), %d of %d device(s); "
		     "active list names it %d time(s); offered %d time(s)", sc->name, loaded,
		     device_lines, devices_made, listed, offered);
	CHECK_EQ(loaded, sc->want_loaded, "instances created through the layer");
	if (devices_made)
		CHECK_EQ(device_lines, sc->want_loaded, "devices created through the layer");
	/* Loader 1.3.239 names a layer found through two manifests twice in
	 * its active list, but builds the chains with it once (counted above). */
	if (listed >= 0)
		CHECK(sc->want_loaded ? listed >= 1 : listed == 0, "the active list %s the layer",
		      sc->want_loaded ? "names" : "does not name");
	if (sc->want_offered >= 0)
		CHECK_EQ(offered, sc->want_offered, "times vkEnumerateInstanceLayerProperties "
						    "offers the layer");
	if (sc->want_loaded)
		CHECK(tbvk_count(log, want_line) == 1, "the instance line reads '%s'", want_line);
	if (sc->want_mode && strcmp(sc->want_mode, "off") == 0 && devices_made)
		CHECK(tbvk_count(log, ": pass-through: disabled") == 1,
		      "mode off: the device is passed through as disabled");
	CHECK_EQ(warnings, strcmp(sc->name, "disable-bogus") == 0 ? 1 : 0,
		 "warnings about SYNCBRIDGE_DISABLE's value");
	free(log);
	return tb_finish();
}
