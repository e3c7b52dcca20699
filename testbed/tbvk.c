/* SPDX-License-Identifier: MIT */
/* The layer tests' side of common/'s Vulkan app (see tbvk.h). */
#include "tbvk.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include "harness.h"
#include "kernel.h"

/* Build-tree locations, from meson (tests/layer/meson.build). */
#ifndef SBL_TEST_XDG_DIR
#error "SBL_TEST_XDG_DIR must be defined"
#endif
#ifndef SBL_TEST_IMPLICIT_DIR
#error "SBL_TEST_IMPLICIT_DIR must be defined"
#endif
#ifndef SBL_TEST_EXPLICIT_DIR
#error "SBL_TEST_EXPLICIT_DIR must be defined"
#endif
#ifndef SBL_TEST_LAYER_PATH
#error "SBL_TEST_LAYER_PATH must be defined"
#endif
#if !defined(SBL_TEST_FAULT_LAYER_DIR) || !defined(SBL_TEST_FAULT_LAYER_NAME) || \
	!defined(SBL_TEST_FAULT_LAYER_SCOPE)
#error "SBL_TEST_FAULT_LAYER_{DIR,NAME,SCOPE} must be defined (testbed/vk_fault_layer)"
#endif

/* The options that take no value, and the field each one sets. */
static const struct {
	const char *name;
	size_t field;
} bool_options[] = {
	{ "--control", offsetof(struct tbvk_options, control) },
	{ "--image", offsetof(struct tbvk_options, image) },
	{ "--sync2", offsetof(struct tbvk_options, sync2) },
	{ "--secondary", offsetof(struct tbvk_options, secondary) },
	{ "--no-barriers", offsetof(struct tbvk_options, no_barriers) },
	{ "--validation", offsetof(struct tbvk_options, validation) },
	{ "--by-name", offsetof(struct tbvk_options, by_name) },
	{ "--exported", offsetof(struct tbvk_options, exported) },
};

static bool
parse_flag(const char *a, struct tbvk_options *opt)
{
	for (size_t k = 0; k < sizeof(bool_options) / sizeof(bool_options[0]); k++) {
		if (strcmp(a, bool_options[k].name) == 0) {
			*(bool *)((char *)opt + bool_options[k].field) = true;
			return true;
		}
	}
	return false;
}

/* NULL-terminated, in the enum's order. */
static const char *const signal_names[] = { "other-thread", "same-thread", "before", "alternate", NULL };
static const char *const hold_names[] = { "fence", "work", NULL };

/* The index of value in names; exits 2 with a usage line otherwise. */
static int
parse_choice(const char *option, const char *value, const char *const *names)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(value, names[i]) == 0)
			return i;
	fprintf(stderr, "%s:", option);
	for (int i = 0; names[i]; i++)
		fprintf(stderr, "%s%s", i ? "|" : " ", names[i]);
	fprintf(stderr, ", not %s\n", value);
	exit(2);
}

void
tbvk_parse_args(int argc, char **argv, struct tbvk_options *opt)
{
	memset(opt, 0, sizeof(*opt));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool value = i + 1 < argc;
		if (parse_flag(a, opt))
			continue;
		if (strcmp(a, "--fault") == 0 && value)
			opt->fault = argv[++i];
		else if (strcmp(a, "--iterations") == 0 && value)
			opt->iterations = strtol(argv[++i], NULL, 0);
		else if (strcmp(a, "--seconds") == 0 && value)
			opt->seconds = strtod(argv[++i], NULL);
		else if (strcmp(a, "--signal") == 0 && value)
			opt->signal = (enum tbvk_signal)parse_choice(a, argv[++i], signal_names);
		else if (strcmp(a, "--hold") == 0 && value)
			opt->hold = (enum tbvk_hold)parse_choice(a, argv[++i], hold_names);
		else {
			fprintf(stderr, "unknown argument %s\n", a);
			exit(2);
		}
	}
}

static void
prepend_path(const char *var, const char *dir, const char *fallback)
{
	const char *old = getenv(var);
	char buf[4096];

	if (old && *old)
		snprintf(buf, sizeof(buf), "%s:%s", dir, old);
	else if (fallback)
		snprintf(buf, sizeof(buf), "%s:%s", dir, fallback);
	else
		snprintf(buf, sizeof(buf), "%s", dir);
	setenv(var, buf, 1);
}

void
tbvk_env_activate(enum tbvk_activation how, const char *extra_layers)
{
	char layers[512] = "";

	unsetenv("VK_INSTANCE_LAYERS");
	unsetenv("VK_LAYER_PATH");
	unsetenv("VK_LOADER_LAYERS_ENABLE");
	unsetenv("VK_LOADER_LAYERS_DISABLE");
	unsetenv("VK_ADD_IMPLICIT_LAYER_PATH");
	unsetenv("VK_ADD_LAYER_PATH");

	if (how == TBVK_ACTIVATE_IMPLICIT || how == TBVK_ACTIVATE_BOTH) {
		/* Keep the XDG default after ours: the drivers' manifests live there. */
		prepend_path("XDG_DATA_DIRS", SBL_TEST_XDG_DIR, "/usr/local/share:/usr/share");
		prepend_path("VK_ADD_IMPLICIT_LAYER_PATH", SBL_TEST_IMPLICIT_DIR, NULL);
	}
	if (how == TBVK_ACTIVATE_BY_NAME || how == TBVK_ACTIVATE_BOTH) {
		prepend_path("VK_ADD_LAYER_PATH", SBL_TEST_EXPLICIT_DIR, NULL);
		snprintf(layers, sizeof(layers), "%s", VKT_LAYER_NAME);
	}
	if (how == TBVK_ACTIVATE_APP) {
		setenv("VK_ADD_LAYER_PATH", SBL_TEST_EXPLICIT_DIR, 1);
		const char *xdg = getenv("XDG_DATA_DIRS");
		if (xdg && strstr(xdg, "manifest"))
			setenv("XDG_DATA_DIRS", "/usr/local/share:/usr/share", 1);
	}
	if (extra_layers && *extra_layers) {
		size_t len = strlen(layers);
		snprintf(layers + len, sizeof(layers) - len, "%s%s", len ? ":" : "", extra_layers);
	}
	if (*layers)
		setenv("VK_INSTANCE_LAYERS", layers, 1);
}

static const char *fault_layer(const struct tbvk_options *opt);

void
tbvk_env_from_options(const struct tbvk_options *opt)
{
	const char *below = fault_layer(opt);
	char extra[256];

	snprintf(extra, sizeof(extra), "%s%s%s", opt->validation ? VKT_VALIDATION_LAYER : "",
		 opt->validation && below ? ":" : "", below ? below : "");
	tbvk_env_activate(opt->by_name ? TBVK_ACTIVATE_BY_NAME : TBVK_ACTIVATE_IMPLICIT, extra);
	/* A --fault row's test layer, enabled by name: the loader puts the layers
	 * of VK_INSTANCE_LAYERS below the implicit ones, in the order named (ours
	 * first with --by-name), so it lies between our layer and the driver. */
	if (below)
		prepend_path("VK_ADD_LAYER_PATH", SBL_TEST_FAULT_LAYER_DIR, NULL);
	unsetenv("SYNCBRIDGE_DISABLE");
	unsetenv("SYNCBRIDGE_MODE");
	if (opt->control)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);
	if (opt->no_barriers)
		setenv("SYNCBRIDGE_MODE", "all", 1);
	if (opt->fault)
		setenv("SYNCBRIDGE_DEBUG", "warn", 1); /* the fallback's warning */
}

/*
 * --fault NAME: the one call whose failure sends the layer into that
 * CPU-wait fallback, failed through libsbfault (testbed/sbfault.h) while
 * tbvk_submit() runs, counting only the calls made directly from `scope`.
 * The program must have libsbfault linked in (tests/layer/meson.build builds
 * the layer-fallback-* programs so); its functions are found with dlsym().
 */
static const struct vkt_fault {
	const char *name;
	const char *scope;
	const char *schedule;
	unsigned long request; /* the ioctl the failed call must be, or 0 */
	unsigned ioctl_index;  /* its index among the counted ioctls */
	const char *warning;   /* what the layer says about it */
	const char *layer;     /* a test layer to stack below ours for it, or NULL */
} vkt_faults[] = {
	/* The layer's DMA_BUF_IOCTL_EXPORT_SYNC_FILE, its first ioctl in the submit. */
	{ "acquire-export", "libVkLayer_SYNCBRIDGE", "ioctl:1:EOPNOTSUPP",
	  DMA_BUF_IOCTL_EXPORT_SYNC_FILE, 0, "cannot export the dma-buf's fences", NULL },
	/* The layer's DMA_BUF_IOCTL_IMPORT_SYNC_FILE, after the check of the
	 * semaphore's sync_file (SYNC_IOC_FILE_INFO). */
	{ "release-import", "libVkLayer_SYNCBRIDGE", "ioctl:2:EOPNOTSUPP",
	  DMA_BUF_IOCTL_IMPORT_SYNC_FILE, 1, "cannot attach our fence", NULL },
	/* Lavapipe's vkGetSemaphoreFdKHR(SYNC_FD) returns a F_DUPFD_CLOEXEC copy
	 * of its sync_file (lp_fence_get_fd), and VK_ERROR_OUT_OF_HOST_MEMORY
	 * when that fails: its first dup in the submit. */
	{ "release-export", "libvulkan_lvp", "dup:1:EMFILE", 0, 0,
	  "vkGetSemaphoreFdKHR(SYNC_FD) failed", NULL },
	/* Lavapipe's vkImportSemaphoreFdKHR(SYNC_FD) makes no libc call whose
	 * failure it reports: VK_LAYER_SBTEST_fault (testbed/vk_fault_layer),
	 * below ours, dups the fd first as a strict driver does and answers
	 * VK_ERROR_INVALID_EXTERNAL_HANDLE when that fails: its first dup in
	 * the submit, during the layer's import of the acquire's sync_file. */
	{ "acquire-import", SBL_TEST_FAULT_LAYER_SCOPE, "dup:1:EMFILE", 0, 0,
	  "vkImportSemaphoreFdKHR(SYNC_FD) failed", SBL_TEST_FAULT_LAYER_NAME },
};

static const struct vkt_fault *
fault_find(const struct tbvk_options *opt)
{
	for (size_t i = 0; opt->fault && i < sizeof(vkt_faults) / sizeof(vkt_faults[0]); i++)
		if (strcmp(vkt_faults[i].name, opt->fault) == 0)
			return &vkt_faults[i];
	return NULL;
}

static const char *
fault_layer(const struct tbvk_options *opt)
{
	const struct vkt_fault *f = fault_find(opt);
	return f ? f->layer : NULL;
}

static struct {
	void (*arm_scoped)(const char *schedule, const char *scope);
	void (*disarm)(void);
	unsigned (*injected)(void);
	unsigned long (*ioctl_request)(unsigned i);
	bool armed;              /* tbvk_submit() armed it */
	unsigned injected_count; /* failures injected during that submit */
	unsigned long request;   /* the request of the ioctl the fault names */
} sbfault;

void
tbvk_fault_begin(const struct tbvk_options *opt)
{
	if (!opt->fault)
		return;
	REQUIRE(fault_find(opt), "--fault %s: not one of acquire-export, acquire-import, "
		"release-export, release-import", opt->fault);
	*(void **)&sbfault.arm_scoped = dlsym(RTLD_DEFAULT, "sbfault_arm_scoped");
	*(void **)&sbfault.disarm = dlsym(RTLD_DEFAULT, "sbfault_disarm");
	*(void **)&sbfault.injected = dlsym(RTLD_DEFAULT, "sbfault_injected");
	*(void **)&sbfault.ioctl_request = dlsym(RTLD_DEFAULT, "sbfault_ioctl_request");
	REQUIRE(sbfault.arm_scoped && sbfault.disarm && sbfault.injected && sbfault.ioctl_request,
		"--fault needs libsbfault linked in (the layer-fallback-* programs)");
	tbvk_capture_begin();
}

void
tbvk_fault_check(const struct tbvk_options *opt, int *failures)
{
	if (!opt->fault)
		return;
	const struct vkt_fault *f = fault_find(opt);
	char *log = tbvk_capture_end();
	int n = tbvk_count(log, "on the CPU instead");
	printf("# fault %s: [%s] in %s, %u injected; %d fallback warning(s)\n", opt->fault,
	       f->schedule, f->scope, sbfault.injected_count, n);
#ifdef __SANITIZE_ADDRESS__
	/* Under ASan its ioctl interceptor calls libsbfault: no ioctl is in scope
	 * (fcntl is not intercepted: the dup rule still applies). */
	if (sbfault.injected_count == 0) {
		free(log);
		tb_skip("under ASan nothing is in libsbfault's scope: no fault injected");
	}
#endif
	if (!sbfault.armed || sbfault.injected_count != 1) {
		printf("not ok - the fault was injected once during vkQueueSubmit\n");
		(*failures)++;
	}
	if (f->request && sbfault.request != f->request) {
		printf("not ok - the failed ioctl was %#lx, want %#lx\n", sbfault.request, f->request);
		(*failures)++;
	}
	if (n != 1 || !strstr(log, f->warning)) {
		printf("not ok - the layer should warn exactly once about its fallback: \"%s\"\n",
		       f->warning);
		(*failures)++;
	}
	free(log);
}

int
tbvk_start(int argc, char **argv, struct tbvk_options *opt)
{
	tbvk_parse_args(argc, argv, opt);
	tbvk_env_from_options(opt);
	int vgem = sbk_vgem_open();
	if (vgem == -ENODEV)
		tb_skip("no vgem (run in the test guest)");
	REQUIRE(vgem >= 0, "open vgem: %s", strerror(-vgem));
	return vgem;
}

static int capture_saved_fd = -1;
static FILE *capture_file;

void
tbvk_capture_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	REQUIRE(capture_file, "tmpfile");
	capture_saved_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	REQUIRE(capture_saved_fd >= 0, "dup stderr");
	REQUIRE(dup2(fileno(capture_file), 2) == 2, "dup2");
}

char *
tbvk_capture_end(void)
{
	fflush(stderr);
	REQUIRE(dup2(capture_saved_fd, 2) == 2, "restore stderr");
	close(capture_saved_fd);
	capture_saved_fd = -1;

	long len = ftell(capture_file);
	if (len < 0)
		len = 0;
	char *text = calloc(1, (size_t)len + 1);
	REQUIRE(text, "calloc");
	rewind(capture_file);
	size_t got = fread(text, 1, (size_t)len, capture_file);
	text[got] = 0;
	fclose(capture_file);
	capture_file = NULL;
	/* Show what was captured, for the test log. */
	fputs(text, stderr);
	return text;
}

int
tbvk_count(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

void
tbvk_test_fail(struct vkt *t, int err)
{
	if (err == -ENODEV)
		tb_skip("%s", t->why);
	REQUIRE(0, "%s", t->why);
}

void
tbvk_init(struct vkt *t, const struct tbvk_options *opt, bool require_dmabuf)
{
	struct vkt_config cfg = {
		.app_name = "syncbridge-layer-test",
		.validation = opt && opt->validation,
		.want = VKT_DMABUF | VKT_FOREIGN,
		/* An exported image has the LINEAR DRM modifier. */
		.require = (require_dmabuf ? VKT_DMABUF : 0) |
			   (opt && opt->exported && opt->image ? VKT_DRM_MODIFIER : 0) |
			   (opt && opt->app_semaphore_fd ? VKT_SEMAPHORE_FD : 0),
		.features = VKT_TIMELINE | VKT_SYNC2,
		.fail = tbvk_test_fail,
	};
	vkt_create(t, &cfg);
}

VkInstance
tbvk_bare_instance(uint32_t layer_count, const char *const *layers)
{
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.apiVersion = VK_API_VERSION_1_1,
	};
	VkInstanceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
		.enabledLayerCount = layer_count,
		.ppEnabledLayerNames = layers,
	};
	VkInstance instance;
	VkResult r = vkCreateInstance(&info, NULL, &instance);

	if (r == VK_SUCCESS)
		return instance;
	/* The skip or failure must reach the log, not the capture's file. */
	if (capture_file)
		free(tbvk_capture_end());
	if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
		tb_skip("no Vulkan driver");
	REQUIRE(0, "vkCreateInstance: %s", vkt_result_name(r));
	return VK_NULL_HANDLE;
}

VkPhysicalDevice
tbvk_first_physical(VkInstance instance)
{
	uint32_t n = 1;
	VkPhysicalDevice pd = VK_NULL_HANDLE;
	VkResult r = vkEnumeratePhysicalDevices(instance, &n, &pd);

	return (r == VK_SUCCESS || r == VK_INCOMPLETE) && n == 1 ? pd : VK_NULL_HANDLE;
}

VkResult
tbvk_bare_device(VkPhysicalDevice pd, VkDevice *device)
{
	float prio = 1.0f;
	VkDeviceQueueCreateInfo q = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDeviceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &q,
	};

	return vkCreateDevice(pd, &info, NULL, device);
}

static void *
deferred_main(void *arg)
{
	struct tbvk_deferred *d = arg;

	if (d->when_told) {
		pthread_mutex_lock(&d->lock);
		while (!d->told)
			pthread_cond_wait(&d->cond, &d->lock);
		pthread_mutex_unlock(&d->lock);
	} else {
		sbk_sleep_ns(d->delay_ns);
	}
	d->fn(d->arg);
	return NULL;
}

void
tbvk_deferred_start(struct tbvk_deferred *d)
{
	d->told = false;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	REQUIRE(pthread_create(&d->thread, NULL, deferred_main, d) == 0, "pthread_create");
}

void
tbvk_deferred_tell(struct tbvk_deferred *d)
{
	pthread_mutex_lock(&d->lock);
	d->told = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

void
tbvk_deferred_join(struct tbvk_deferred *d)
{
	pthread_join(d->thread, NULL);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
}

#define VKT_MAX_WAITS 4

static VkResult
submit(struct vkt *t, const struct tbvk_options *opt, VkCommandBuffer cb, uint32_t n,
       const VkSemaphore *waits, const uint64_t *values, VkFence fence)
{
	if (opt->sync2) {
		VkSemaphoreSubmitInfo wait[VKT_MAX_WAITS];
		for (uint32_t i = 0; i < n; i++)
			wait[i] = (VkSemaphoreSubmitInfo){
				.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
				.semaphore = waits[i],
				.value = values[i],
				.stageMask = VK_PIPELINE_STAGE_2_TRANSFER_BIT,
			};
		VkCommandBufferSubmitInfo cbi = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
			.commandBuffer = cb,
		};
		VkSubmitInfo2 si = {
			.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
			.waitSemaphoreInfoCount = n,
			.pWaitSemaphoreInfos = wait,
			.commandBufferInfoCount = 1,
			.pCommandBufferInfos = &cbi,
		};
		return vkQueueSubmit2(t->queue, 1, &si, fence);
	}

	/* Timeline waits through VkTimelineSemaphoreSubmitInfo: the layer must
	 * extend its value array when it appends its own semaphores. */
	VkTimelineSemaphoreSubmitInfo tl = {
		.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
		.waitSemaphoreValueCount = n,
		.pWaitSemaphoreValues = values,
	};
	VkPipelineStageFlags stages[VKT_MAX_WAITS];
	for (uint32_t i = 0; i < n; i++)
		stages[i] = VK_PIPELINE_STAGE_TRANSFER_BIT;
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.pNext = n ? &tl : NULL,
		.waitSemaphoreCount = n,
		.pWaitSemaphores = waits,
		.pWaitDstStageMask = stages,
		.commandBufferCount = 1,
		.pCommandBuffers = &cb,
	};
	return vkQueueSubmit(t->queue, 1, &si, fence);
}

VkResult
tbvk_submit_waits(struct vkt *t, const struct tbvk_options *opt, VkCommandBuffer cb, uint32_t n,
		 const VkSemaphore *waits, const uint64_t *values, VkFence fence)
{
	const struct vkt_fault *f = fault_find(opt);
	VkResult r;

	if (n > VKT_MAX_WAITS)
		return VK_ERROR_OUT_OF_HOST_MEMORY;
	if (!f || !sbfault.arm_scoped)
		return submit(t, opt, cb, n, waits, values, fence);
	sbfault.arm_scoped(f->schedule, f->scope);
	r = submit(t, opt, cb, n, waits, values, fence);
	sbfault.disarm();
	sbfault.armed = true;
	sbfault.injected_count = sbfault.injected();
	sbfault.request = sbfault.ioctl_request(f->ioctl_index);
	return r;
}

VkResult
tbvk_submit(struct vkt *t, const struct tbvk_options *opt, VkCommandBuffer cb,
	   VkSemaphore wait_timeline, uint64_t wait_value, VkFence fence)
{
	return tbvk_submit_waits(t, opt, cb, wait_timeline ? 1 : 0, &wait_timeline, &wait_value,
				fence);
}
