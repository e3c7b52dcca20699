/* SPDX-License-Identifier: MIT */
/* The Vulkan benchmarks' shared plumbing (see vk_bench.h). */
#include "vk_bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbvk.h"
#include "wake_stats.h"

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

/* vk.h's fail: skip where the machine lacks something, else no figure. */
static void
bench_fail(struct vkt *t, int err)
{
	if (err == -ENODEV) {
		printf("SKIP: %s\n", t->why);
		exit(77);
	}
	vkb_die("%s", t->why);
}

void
vkb_env_setup(void)
{
	/* Nothing from the caller's environment may add or remove layers: the
	 * layer is named by the one instance that wants it. */
	tbvk_env_activate(TBVK_ACTIVATE_APP, NULL);
	/* It would switch the named layer off from inside. */
	unsetenv("SYNCBRIDGE_DISABLE");
	unsetenv("SYNCBRIDGE_MODE");
	unsetenv("SYNCBRIDGE_LAYER_FAULTS");
	unsetenv("SYNCBRIDGE_DEBUG");
}

void
vkb_init(struct vkt *t, bool with_layer)
{
	vkb_init_with(t, with_layer, VKT_DMABUF | VKT_SEMAPHORE_FD | VKT_FOREIGN, VKT_SYNC2);
}

void
vkb_init_with(struct vkt *t, bool with_layer, unsigned require, unsigned features)
{
	struct vkt_config cfg = {
		.app_name = "syncbridge-bench",
		.layer = with_layer ? VKT_LAYER_NAME : NULL,
		.require = require,
		.want = VKT_FOREIGN,
		.features = features,
		.fail = bench_fail,
	};
	vkt_create(t, &cfg);

	/* Active, not pass-through: the submit the app calls is the layer's. */
	bool listed = vkt_device_layer_count(t->physical, VKT_LAYER_NAME) > 0;
	if (with_layer && !(listed && t->layer_active))
		vkb_die("the layer instance: %s lists the layer: %s, its vkQueueSubmit is the "
			"layer's: %s (pass-through?)", VKT_LAYER_NAME, listed ? "yes" : "no",
			t->layer_active ? "yes" : "no");
	if (!with_layer && (listed || t->layer_active))
		vkb_die("the floor instance has the layer (listed: %s, intercepts vkQueueSubmit: "
			"%s): is an implicit manifest on the loader's path?",
			listed ? "yes" : "no", t->layer_active ? "yes" : "no");
}

void
vkb_interleave(long iterations, void (*iterate)(void *side, bool record), void *layer,
	       void *floor)
{
	const long warmup = 20;
	int64_t t0 = now_ns();
	for (long i = 0; i < iterations + warmup; i++) {
		bool record = i >= warmup;
		iterate(i % 2 ? layer : floor, record);
		iterate(i % 2 ? floor : layer, record);
	}
	printf("(%.1f s)\n", (now_ns() - t0) / 1e9);
}

void
vkb_side_idle_release(struct vkt *t, VkFence fence, VkCommandBuffer cb)
{
	vkDeviceWaitIdle(t->device);
	if (fence)
		vkDestroyFence(t->device, fence, NULL);
	if (cb)
		vkFreeCommandBuffers(t->device, t->pool, 1, &cb);
}
