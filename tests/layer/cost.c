/* SPDX-License-Identifier: MIT */
/*
 * What the layer costs where it has nothing to do (docs/layer.md, "Cost when
 * there is nothing to do"). Not a test: run by hand, on the host (lavapipe
 * without SYNC_FD: the layer is pass-through) and in the guest (lavapipe with
 * SYNC_FD: active, but no FOREIGN transfer is ever submitted).
 *
 *   layer-cost [--runs R] [--iterations N]     (defaults 10, 1000)
 *
 * Each run forks one child per variant, the order rotated each run, so every
 * child starts from the same cold process:
 *   on        the build tree's implicit manifest visible, nothing disabled
 *   disabled  the same with SYNCBRIDGE_DISABLE=1 (loaded, pure pass-through)
 *   absent    the same with NO_SYNCBRIDGE=1 (the loader leaves it out: the floor)
 * A child times vkCreateInstance, vkCreateDevice, then N submits of one empty
 * command buffer with a fence (the vkQueueSubmit call alone, and the round
 * trip submit + wait + reset), and sends the four medians to the parent,
 * which prints the median over the runs of each and its ratio to the floor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "vk.h"
#include "tbvk.h"

enum { INSTANCE, DEVICE, SUBMIT, ROUND_TRIP, METRICS, IN_LAYER = METRICS, VALUES };
static const char *const metric_names[METRICS] = {
	"vkCreateInstance", "vkCreateDevice", "vkQueueSubmit call", "submit+wait+reset",
};
static const char *const variants[] = { "on", "disabled", "absent" };
#define NVARIANTS 3

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double
median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define OK(call)                                                              \
	do {                                                                  \
		VkResult r_ = (call);                                         \
		if (r_ != VK_SUCCESS) {                                       \
			fprintf(stderr, "%s: %d\n", #call, r_);               \
			_exit(1);                                             \
		}                                                             \
	} while (0)

/* In the child: one measurement, all in µs. */
static void
measure(long iterations, double out[VALUES])
{
	VkApplicationInfo app = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
				  .apiVersion = VK_API_VERSION_1_1 };
	VkInstanceCreateInfo ii = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
				    .pApplicationInfo = &app };
	VkInstance inst;
	int64_t t0 = now_ns();
	OK(vkCreateInstance(&ii, NULL, &inst));
	out[INSTANCE] = (now_ns() - t0) / 1e3;

	uint32_t n = 1;
	VkPhysicalDevice pd;
	VkResult r = vkEnumeratePhysicalDevices(inst, &n, &pd);
	if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n != 1)
		_exit(1);
	float prio = 1.0f;
	VkDeviceQueueCreateInfo qi = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
				       .queueCount = 1, .pQueuePriorities = &prio };
	VkDeviceCreateInfo di = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
				  .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi };
	VkDevice dev;
	t0 = now_ns();
	OK(vkCreateDevice(pd, &di, NULL, &dev));
	out[DEVICE] = (now_ns() - t0) / 1e3;

	VkQueue q;
	vkGetDeviceQueue(dev, 0, 0, &q);
	/* 1 where the submit the app calls is the layer's (the layer is active). */
	out[IN_LAYER] = vkt_in_layer((const void *)vkGetDeviceProcAddr(dev, "vkQueueSubmit"));
	VkCommandPoolCreateInfo pi = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO };
	VkCommandPool pool;
	OK(vkCreateCommandPool(dev, &pi, NULL, &pool));
	VkCommandBufferAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
					   .commandPool = pool,
					   .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
					   .commandBufferCount = 1 };
	VkCommandBuffer cb;
	OK(vkAllocateCommandBuffers(dev, &ai, &cb));
	VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
	OK(vkBeginCommandBuffer(cb, &bi));
	OK(vkEndCommandBuffer(cb));
	VkFenceCreateInfo fi = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	VkFence fence;
	OK(vkCreateFence(dev, &fi, NULL, &fence));
	VkSubmitInfo si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
			    .commandBufferCount = 1, .pCommandBuffers = &cb };

	double *sub = calloc(iterations, sizeof(double));
	double *rt = calloc(iterations, sizeof(double));
	if (!sub || !rt)
		_exit(1);
	for (long i = 0; i < iterations + 20; i++) {
		int64_t a = now_ns();
		OK(vkQueueSubmit(q, 1, &si, fence));
		int64_t b = now_ns();
		OK(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX));
		OK(vkResetFences(dev, 1, &fence));
		int64_t c = now_ns();
		if (i >= 20) {
			sub[i - 20] = (b - a) / 1e3;
			rt[i - 20] = (c - a) / 1e3;
		}
	}
	out[SUBMIT] = median(sub, iterations);
	out[ROUND_TRIP] = median(rt, iterations);
	vkDestroyFence(dev, fence, NULL);
	vkDestroyCommandPool(dev, pool, NULL);
	vkDestroyDevice(dev, NULL);
	vkDestroyInstance(inst, NULL);
}

/* Fork a child for one variant; its four numbers land in out. */
static int
run_child(int variant, long iterations, double out[VALUES])
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		tbvk_env_activate(TBVK_ACTIVATE_IMPLICIT, NULL);
		unsetenv("SYNCBRIDGE_DEBUG");
		unsetenv("SYNCBRIDGE_MODE");
		unsetenv("SYNCBRIDGE_DISABLE");
		unsetenv("NO_SYNCBRIDGE");
		if (variant == 1)
			setenv("SYNCBRIDGE_DISABLE", "1", 1);
		if (variant == 2)
			setenv("NO_SYNCBRIDGE", "1", 1);
		double v[VALUES];
		measure(iterations, v);
		_exit(write(p[1], v, sizeof(v)) == (ssize_t)sizeof(v) ? 0 : 1);
	}
	close(p[1]);
	ssize_t got = read(p[0], out, sizeof(double) * VALUES);
	close(p[0]);
	int status;
	waitpid(pid, &status, 0);
	return got == (ssize_t)(sizeof(double) * VALUES) && WIFEXITED(status) &&
			       WEXITSTATUS(status) == 0
		       ? 0
		       : -1;
}

int
main(int argc, char **argv)
{
	long runs = 10, iterations = 1000;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--runs") == 0)
			runs = atol(argv[i + 1]);
		else if (strcmp(argv[i], "--iterations") == 0)
			iterations = atol(argv[i + 1]);
	}
	if (runs < 1 || iterations < 1)
		return 2;
	double *res = calloc((size_t)runs * NVARIANTS * VALUES, sizeof(double));
	if (!res)
		return 1;
	for (long r = 0; r < runs; r++)
		for (int k = 0; k < NVARIANTS; k++) {
			int v = (int)((k + r) % NVARIANTS);
			if (run_child(v, iterations, &res[(r * NVARIANTS + v) * VALUES]) < 0) {
				fprintf(stderr, "variant %s failed\n", variants[v]);
				return 1;
			}
		}
	printf("%ld runs x %ld submits, µs: median over runs (ratio to 'absent') / "
	       "minimum over runs (ratio)\n", runs, iterations);
	printf("%-20s %30s %30s %22s\n", "", variants[0], variants[1], variants[2]);
	double col[64];
	size_t nr = runs < 64 ? (size_t)runs : 64;
	for (int m = 0; m < METRICS; m++) {
		double med[NVARIANTS], min[NVARIANTS];
		for (int v = 0; v < NVARIANTS; v++) {
			for (size_t r = 0; r < nr; r++)
				col[r] = res[(r * NVARIANTS + v) * VALUES + m];
			med[v] = median(col, nr);
			min[v] = col[0]; /* sorted by median() */
		}
		printf("%-20s", metric_names[m]);
		for (int v = 0; v < 2; v++)
			printf(" %10.1f (%.3f) / %8.1f (%.3f)", med[v], med[v] / med[2], min[v],
			       min[v] / min[2]);
		printf(" %10.1f / %10.1f\n", med[2], min[2]);
	}
	for (int v = 0; v < NVARIANTS; v++) {
		int in = 0;
		for (long r = 0; r < runs; r++)
			in += res[(r * NVARIANTS + v) * VALUES + IN_LAYER] != 0;
		printf("%s: vkQueueSubmit is the layer's (active) in %d of %ld runs\n", variants[v],
		       in, runs);
	}
	free(res);
	return 0;
}
