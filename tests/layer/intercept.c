/* SPDX-License-Identifier: MIT */
/*
 * What the layer intercepts, and pass-through when the driver lacks what it
 * needs. One program, two expectations:
 *  - on a device without SYNC_FD semaphores (lavapipe on the host): the layer
 *    loads, logs "pass-through" once, every device command the app gets from
 *    vkGetDeviceProcAddr is the next layer's/driver's (none lives in the
 *    layer's .so), the app's extension list is unchanged, and its work runs;
 *  - on a capable device (--expect-active, the guest): the commands the layer
 *    implements resolve into the layer, everything else still does not, the
 *    layer enabled VK_KHR_external_semaphore_fd behind the app's back, and
 *    the app's work runs.
 * Either way: unknown names are NULL.
 */
#include <string.h>

#include "harness.h"
#include "tbvk.h"

static const char *const intercepted[] = {
	"vkQueueSubmit", "vkQueueSubmit2", "vkCmdPipelineBarrier", "vkCmdPipelineBarrier2",
	"vkCmdExecuteCommands", "vkAllocateMemory", "vkFreeMemory", "vkBindBufferMemory",
	"vkBindImageMemory2", "vkBeginCommandBuffer", "vkDestroyCommandPool",
	/* resolve.c: which signals are submitted (wait-before-signal) */
	"vkCreateSemaphore", "vkDestroySemaphore", "vkSignalSemaphore", "vkQueueBindSparse",
};
static const char *const passed_through[] = {
	"vkCmdDraw", "vkCmdCopyBuffer", "vkCreateBuffer", "vkQueueWaitIdle", "vkWaitSemaphores",
	"vkGetSemaphoreCounterValue", "vkWaitForFences", "vkMapMemory", "vkCmdBeginRenderPass",
};

int
main(int argc, char **argv)
{
	bool expect_active = argc > 1 && strcmp(argv[1], "--expect-active") == 0;
	struct tbvk_options opt = { 0 };

	setenv("SYNCBRIDGE_DEBUG", "debug", 1);
	unsetenv("SYNCBRIDGE_DISABLE");
	unsetenv("SYNCBRIDGE_MODE");
	tbvk_env_activate(TBVK_ACTIVATE_IMPLICIT, NULL);

	struct vkt t;
	tbvk_capture_begin();
	tbvk_init(&t, &opt, false);
	char *log = tbvk_capture_end();

	int instance_lines = tbvk_count(log, "vkCreateInstance: " VKT_LAYER_NAME " loaded");
	int passthrough_lines = tbvk_count(log, ": pass-through: ");
	int active_lines = tbvk_count(log, ": active, mode transfers");
	CHECK_EQ(instance_lines, 1, "the layer announced one instance");
	if (expect_active) {
		if (passthrough_lines)
			tb_skip("this driver lacks SYNC_FD semaphores / dma-buf memory");
		CHECK_EQ(active_lines, 1, "device active");
	} else {
		if (active_lines)
			tb_skip("this driver has what the layer needs: not a pass-through case");
		CHECK_EQ(passthrough_lines, 1, "one pass-through line for the device");
	}
	free(log);

	CHECK_EQ(vkt_device_layer_count(t.physical, VKT_LAYER_NAME), 1,
		 "the layer is in the device's layer list once");

	for (size_t i = 0; i < sizeof(intercepted) / sizeof(intercepted[0]); i++) {
		PFN_vkVoidFunction f = vkGetDeviceProcAddr(t.device, intercepted[i]);
		CHECK(f != NULL, "%s resolves", intercepted[i]);
		if (expect_active)
			CHECK(vkt_in_layer((void *)f), "%s is the layer's", intercepted[i]);
		else
			CHECK(!vkt_in_layer((void *)f), "pass-through: %s is not the layer's",
			      intercepted[i]);
	}
	for (size_t i = 0; i < sizeof(passed_through) / sizeof(passed_through[0]); i++) {
		PFN_vkVoidFunction f = vkGetDeviceProcAddr(t.device, passed_through[i]);
		CHECK(f != NULL && !vkt_in_layer((void *)f), "%s is passed through",
		      passed_through[i]);
	}
	CHECK(vkGetDeviceProcAddr(t.device, "vkNoSuchCommandSYNCBRIDGE") == NULL,
	      "unknown device command is NULL");
	CHECK(vkGetInstanceProcAddr(t.instance, "vkNoSuchCommandSYNCBRIDGE") == NULL,
	      "unknown instance command is NULL");

	/* The app never enabled VK_KHR_external_semaphore_fd. */
	PFN_vkVoidFunction get_sem_fd = vkGetDeviceProcAddr(t.device, "vkGetSemaphoreFdKHR");
	if (expect_active)
		CHECK(get_sem_fd != NULL, "the layer enabled VK_KHR_external_semaphore_fd");
	else
		CHECK(get_sem_fd == NULL, "pass-through: the app's extensions are unchanged");

	/* The app's work, unchanged: copy between two host buffers. */
	struct vkt_buffer a, b;
	vkt_host_buffer(&t, 4096, &a);
	vkt_host_buffer(&t, 4096, &b);
	memset(a.map, 0x5a, 4096);
	struct tbvk_rec rec;
	tbvk_begin(&t, &opt, true, &rec);
	VkBufferCopy region = { .size = 4096 };
	vkCmdCopyBuffer(rec.primary, a.buffer, b.buffer, 1, &region);
	vkt_host_read_barrier(rec.primary);
	tbvk_end(&t, &rec);
	VkFence fence = vkt_fence(&t);
	VK_CHECK(tbvk_submit(&t, &opt, rec.primary, VK_NULL_HANDLE, 0, fence));
	VK_CHECK(vkWaitForFences(t.device, 1, &fence, VK_TRUE, 10ull * 1000 * 1000 * 1000));
	CHECK_EQ(vkt_count_bytes(b.map, 4096, 0x5a), 4096, "the copy ran");

	vkDestroyFence(t.device, fence, NULL);
	tbvk_rec_free(&t, &rec);
	vkt_buffer_destroy(&t, &a);
	vkt_buffer_destroy(&t, &b);
	vkt_finish(&t);
	return tb_finish();
}
