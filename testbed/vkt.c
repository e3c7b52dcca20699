/* SPDX-License-Identifier: MIT */
/* The layer tests' plain-Vulkan application helpers (see vkt.h). */
#include "vkt.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include "harness.h"

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

int vkt_validation_errors;

void
vkt_parse_args(int argc, char **argv, struct vkt_options *opt)
{
	memset(opt, 0, sizeof(*opt));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--control") == 0)
			opt->control = true;
		else if (strcmp(a, "--image") == 0)
			opt->image = true;
		else if (strcmp(a, "--sync2") == 0)
			opt->sync2 = true;
		else if (strcmp(a, "--secondary") == 0)
			opt->secondary = true;
		else if (strcmp(a, "--no-barriers") == 0)
			opt->no_barriers = true;
		else if (strcmp(a, "--validation") == 0)
			opt->validation = true;
		else if (strcmp(a, "--by-name") == 0)
			opt->by_name = true;
		else if (strcmp(a, "--fault") == 0 && i + 1 < argc)
			opt->fault = argv[++i];
		else if (strcmp(a, "--iterations") == 0 && i + 1 < argc)
			opt->iterations = strtol(argv[++i], NULL, 0);
		else if (strcmp(a, "--seconds") == 0 && i + 1 < argc)
			opt->seconds = strtod(argv[++i], NULL);
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
vkt_env_activate(enum vkt_activation how, const char *extra_layers)
{
	char layers[512] = "";

	unsetenv("VK_INSTANCE_LAYERS");
	unsetenv("VK_LAYER_PATH");
	unsetenv("VK_LOADER_LAYERS_ENABLE");
	unsetenv("VK_LOADER_LAYERS_DISABLE");
	unsetenv("VK_ADD_IMPLICIT_LAYER_PATH");
	unsetenv("VK_ADD_LAYER_PATH");

	if (how == VKT_ACTIVATE_IMPLICIT || how == VKT_ACTIVATE_BOTH) {
		/* Keep the XDG default after ours: the drivers' manifests live there. */
		prepend_path("XDG_DATA_DIRS", SBL_TEST_XDG_DIR, "/usr/local/share:/usr/share");
		prepend_path("VK_ADD_IMPLICIT_LAYER_PATH", SBL_TEST_IMPLICIT_DIR, NULL);
	}
	if (how == VKT_ACTIVATE_BY_NAME || how == VKT_ACTIVATE_BOTH) {
		prepend_path("VK_ADD_LAYER_PATH", SBL_TEST_EXPLICIT_DIR, NULL);
		snprintf(layers, sizeof(layers), "%s", VKT_LAYER_NAME);
	}
	if (extra_layers && *extra_layers) {
		size_t len = strlen(layers);
		snprintf(layers + len, sizeof(layers) - len, "%s%s", len ? ":" : "", extra_layers);
	}
	if (*layers)
		setenv("VK_INSTANCE_LAYERS", layers, 1);
}

void
vkt_env_from_options(const struct vkt_options *opt)
{
	vkt_env_activate(opt->by_name ? VKT_ACTIVATE_BY_NAME : VKT_ACTIVATE_IMPLICIT,
			 opt->validation ? VKT_VALIDATION_LAYER : NULL);
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
 * vkt_submit() runs, counting only the calls made directly from `scope`.
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
} vkt_faults[] = {
	/* The layer's DMA_BUF_IOCTL_EXPORT_SYNC_FILE, its first ioctl in the submit. */
	{ "acquire-export", "libVkLayer_SYNCBRIDGE", "ioctl:1:EOPNOTSUPP",
	  DMA_BUF_IOCTL_EXPORT_SYNC_FILE, 0, "cannot export the dma-buf's fences" },
	/* The layer's DMA_BUF_IOCTL_IMPORT_SYNC_FILE, after the check of the
	 * semaphore's sync_file (SYNC_IOC_FILE_INFO). */
	{ "release-import", "libVkLayer_SYNCBRIDGE", "ioctl:2:EOPNOTSUPP",
	  DMA_BUF_IOCTL_IMPORT_SYNC_FILE, 1, "cannot attach our fence" },
	/* Lavapipe's vkGetSemaphoreFdKHR(SYNC_FD) returns a F_DUPFD_CLOEXEC copy
	 * of its sync_file (lp_fence_get_fd), and VK_ERROR_OUT_OF_HOST_MEMORY
	 * when that fails: its first dup in the submit. */
	{ "release-export", "libvulkan_lvp", "dup:1:EMFILE", 0, 0,
	  "vkGetSemaphoreFdKHR(SYNC_FD) failed" },
};

static const struct vkt_fault *
fault_find(const struct vkt_options *opt)
{
	for (size_t i = 0; opt->fault && i < sizeof(vkt_faults) / sizeof(vkt_faults[0]); i++)
		if (strcmp(vkt_faults[i].name, opt->fault) == 0)
			return &vkt_faults[i];
	return NULL;
}

static struct {
	void (*arm_scoped)(const char *schedule, const char *scope);
	void (*disarm)(void);
	unsigned (*injected)(void);
	unsigned long (*ioctl_request)(unsigned i);
	bool armed;              /* vkt_submit() armed it */
	unsigned injected_count; /* failures injected during that submit */
	unsigned long request;   /* the request of the ioctl the fault names */
} sbfault;

void
vkt_fault_begin(const struct vkt_options *opt)
{
	if (!opt->fault)
		return;
	REQUIRE(fault_find(opt), "--fault %s: not one of acquire-export, release-export, "
		"release-import", opt->fault);
	*(void **)&sbfault.arm_scoped = dlsym(RTLD_DEFAULT, "sbfault_arm_scoped");
	*(void **)&sbfault.disarm = dlsym(RTLD_DEFAULT, "sbfault_disarm");
	*(void **)&sbfault.injected = dlsym(RTLD_DEFAULT, "sbfault_injected");
	*(void **)&sbfault.ioctl_request = dlsym(RTLD_DEFAULT, "sbfault_ioctl_request");
	REQUIRE(sbfault.arm_scoped && sbfault.disarm && sbfault.injected && sbfault.ioctl_request,
		"--fault needs libsbfault linked in (the layer-fallback-* programs)");
	vkt_capture_begin();
}

void
vkt_fault_check(const struct vkt_options *opt, int *failures)
{
	if (!opt->fault)
		return;
	const struct vkt_fault *f = fault_find(opt);
	char *log = vkt_capture_end();
	int n = vkt_count(log, "on the CPU instead");
	printf("# fault %s: [%s] in %s, %u injected; %d fallback warning(s)\n", opt->fault,
	       f->schedule, f->scope, sbfault.injected_count, n);
#ifdef __SANITIZE_ADDRESS__
	/* Under ASan its ioctl interceptor calls libsbfault: no ioctl is in scope
	 * (fcntl is not intercepted: the dup rule still applies). */
	if (sbfault.injected_count == 0) {
		free(log);
		sb_test_skip("under ASan nothing is in libsbfault's scope: no fault injected");
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

static int capture_saved_fd = -1;
static FILE *capture_file;

void
vkt_capture_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	REQUIRE(capture_file, "tmpfile");
	capture_saved_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	REQUIRE(capture_saved_fd >= 0, "dup stderr");
	REQUIRE(dup2(fileno(capture_file), 2) == 2, "dup2");
}

char *
vkt_capture_end(void)
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
vkt_count(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

const char *
vkt_result_name(VkResult r)
{
	switch (r) {
#define R(x) case x: return #x
		R(VK_SUCCESS);
		R(VK_NOT_READY);
		R(VK_TIMEOUT);
		R(VK_INCOMPLETE);
		R(VK_ERROR_OUT_OF_HOST_MEMORY);
		R(VK_ERROR_OUT_OF_DEVICE_MEMORY);
		R(VK_ERROR_INITIALIZATION_FAILED);
		R(VK_ERROR_DEVICE_LOST);
		R(VK_ERROR_LAYER_NOT_PRESENT);
		R(VK_ERROR_EXTENSION_NOT_PRESENT);
		R(VK_ERROR_FEATURE_NOT_PRESENT);
		R(VK_ERROR_INCOMPATIBLE_DRIVER);
		R(VK_ERROR_INVALID_EXTERNAL_HANDLE);
		R(VK_ERROR_FORMAT_NOT_SUPPORTED);
#undef R
	default:
		return "VkResult?";
	}
}

static VKAPI_ATTR VkBool32 VKAPI_CALL
on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
		 VkDebugUtilsMessageTypeFlagsEXT types,
		 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
	if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
		vkt_validation_errors++;
		printf("# VALIDATION ERROR: %s\n", data->pMessage);
	} else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
		printf("# validation warning: %s\n", data->pMessage);
	}
	fflush(stdout);
	return VK_FALSE;
}

static bool
list_has(const VkExtensionProperties *p, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(p[i].extensionName, name) == 0)
			return true;
	return false;
}

static void
create_device(struct vkt *t)
{
	uint32_t n = 0;
	VK_CHECK(vkEnumerateDeviceExtensionProperties(t->physical, NULL, &n, NULL));
	VkExtensionProperties *props = calloc(n ? n : 1, sizeof(*props));
	REQUIRE(props, "calloc");
	VK_CHECK(vkEnumerateDeviceExtensionProperties(t->physical, NULL, &n, props));

	const char *exts[4];
	uint32_t ext_count = 0;
	t->has_dmabuf = list_has(props, n, VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME) &&
			list_has(props, n, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
	t->has_semaphore_fd = list_has(props, n, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
	if (t->has_dmabuf) {
		exts[ext_count++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
		exts[ext_count++] = VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME;
	}
	t->has_foreign_family = list_has(props, n, VK_EXT_QUEUE_FAMILY_FOREIGN_EXTENSION_NAME);
	if (t->has_foreign_family)
		exts[ext_count++] = VK_EXT_QUEUE_FAMILY_FOREIGN_EXTENSION_NAME;
	free(props);

	VkPhysicalDeviceVulkan13Features f13 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
		.synchronization2 = VK_TRUE,
	};
	VkPhysicalDeviceVulkan12Features f12 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
		.pNext = &f13,
		.timelineSemaphore = VK_TRUE,
	};
	float prio = 1.0f;
	VkDeviceQueueCreateInfo q = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = 0,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDeviceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = &f12,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &q,
		.enabledExtensionCount = ext_count,
		.ppEnabledExtensionNames = exts,
	};
	VK_CHECK(vkCreateDevice(t->physical, &info, NULL, &t->device));
	t->family = 0;
	vkGetDeviceQueue(t->device, 0, 0, &t->queue);

	VkCommandPoolCreateInfo pool = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = 0,
	};
	VK_CHECK(vkCreateCommandPool(t->device, &pool, NULL, &t->pool));
	vkGetPhysicalDeviceMemoryProperties(t->physical, &t->mem_props);
	t->GetMemoryFdPropertiesKHR = (PFN_vkGetMemoryFdPropertiesKHR)vkGetDeviceProcAddr(
		t->device, "vkGetMemoryFdPropertiesKHR");
}

void
vkt_init(struct vkt *t, const struct vkt_options *opt, bool require_dmabuf)
{
	memset(t, 0, sizeof(*t));

	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "syncbridge-layer-test",
		.apiVersion = VK_API_VERSION_1_3,
	};
	VkDebugUtilsMessengerCreateInfoEXT dbg = {
		.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
		.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
				   VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
		.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
			       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
			       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
		.pfnUserCallback = on_debug_message,
	};
	const char *inst_exts[] = { VK_EXT_DEBUG_UTILS_EXTENSION_NAME };
	VkInstanceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pNext = opt && opt->validation ? &dbg : NULL,
		.pApplicationInfo = &app,
		.enabledExtensionCount = opt && opt->validation ? 1 : 0,
		.ppEnabledExtensionNames = inst_exts,
	};
	VkResult r = vkCreateInstance(&info, NULL, &t->instance);
	if (r == VK_ERROR_LAYER_NOT_PRESENT && opt && opt->validation)
		sb_test_skip("%s is not installed (vulkan-validationlayers)", VKT_VALIDATION_LAYER);
	if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
		sb_test_skip("no Vulkan driver");
	REQUIRE(r == VK_SUCCESS, "vkCreateInstance: %s", vkt_result_name(r));

	if (opt && opt->validation) {
		PFN_vkCreateDebugUtilsMessengerEXT create =
			(PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
				t->instance, "vkCreateDebugUtilsMessengerEXT");
		REQUIRE(create, "vkCreateDebugUtilsMessengerEXT");
		VK_CHECK(create(t->instance, &dbg, NULL, &t->messenger));
	}

	uint32_t n = 0;
	VK_CHECK(vkEnumeratePhysicalDevices(t->instance, &n, NULL));
	if (n == 0)
		sb_test_skip("no Vulkan physical device");
	VkPhysicalDevice *pds = calloc(n, sizeof(*pds));
	REQUIRE(pds, "calloc");
	r = vkEnumeratePhysicalDevices(t->instance, &n, pds);
	REQUIRE(r == VK_SUCCESS || r == VK_INCOMPLETE, "vkEnumeratePhysicalDevices");
	/* Prefer lavapipe: the tests' facts are about it. */
	t->physical = pds[0];
	for (uint32_t i = 0; i < n; i++) {
		VkPhysicalDeviceProperties p;
		vkGetPhysicalDeviceProperties(pds[i], &p);
		if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
			t->physical = pds[i];
			break;
		}
	}
	free(pds);

	VkPhysicalDeviceProperties p;
	vkGetPhysicalDeviceProperties(t->physical, &p);
	if (VK_API_VERSION_MINOR(p.apiVersion) < 3 && VK_API_VERSION_MAJOR(p.apiVersion) == 1)
		sb_test_skip("%s is Vulkan %u.%u; the tests need 1.3", p.deviceName,
			     VK_API_VERSION_MAJOR(p.apiVersion), VK_API_VERSION_MINOR(p.apiVersion));

	create_device(t);
	if (require_dmabuf && !t->has_dmabuf)
		sb_test_skip("%s cannot import dma-bufs (needs /dev/udmabuf: run in the test guest)",
			     p.deviceName);
	if (require_dmabuf && !t->GetMemoryFdPropertiesKHR)
		sb_test_skip("no vkGetMemoryFdPropertiesKHR");
}

void
vkt_init_device(struct vkt *t, const struct vkt *from)
{
	memset(t, 0, sizeof(*t));
	t->instance = from->instance;
	t->physical = from->physical;
	create_device(t);
}

void
vkt_finish_device(struct vkt *t)
{
	if (t->device) {
		vkDeviceWaitIdle(t->device);
		vkDestroyCommandPool(t->device, t->pool, NULL);
		vkDestroyDevice(t->device, NULL);
	}
	t->device = VK_NULL_HANDLE;
}

void
vkt_finish(struct vkt *t)
{
	vkt_finish_device(t);
	if (t->messenger) {
		PFN_vkDestroyDebugUtilsMessengerEXT destroy =
			(PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
				t->instance, "vkDestroyDebugUtilsMessengerEXT");
		if (destroy)
			destroy(t->instance, t->messenger, NULL);
	}
	if (t->instance)
		vkDestroyInstance(t->instance, NULL);
	t->instance = VK_NULL_HANDLE;
}

static uint32_t
pick_memory_type(struct vkt *t, uint32_t bits, VkMemoryPropertyFlags want)
{
	for (uint32_t i = 0; i < t->mem_props.memoryTypeCount; i++)
		if ((bits & (1u << i)) &&
		    (t->mem_props.memoryTypes[i].propertyFlags & want) == want)
			return i;
	REQUIRE(0, "no memory type in bits 0x%x with flags 0x%x", bits, want);
	return 0;
}

void
vkt_host_buffer(struct vkt *t, VkDeviceSize size, struct vkt_buffer *b)
{
	memset(b, 0, sizeof(*b));
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = size,
		.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
	};
	VK_CHECK(vkCreateBuffer(t->device, &info, NULL, &b->buffer));
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(t->device, b->buffer, &req);
	VkMemoryAllocateInfo alloc = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.allocationSize = req.size,
		.memoryTypeIndex = pick_memory_type(t, req.memoryTypeBits,
						    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
							    VK_MEMORY_PROPERTY_HOST_COHERENT_BIT),
	};
	VK_CHECK(vkAllocateMemory(t->device, &alloc, NULL, &b->memory));
	VK_CHECK(vkBindBufferMemory(t->device, b->buffer, b->memory, 0));
	VK_CHECK(vkMapMemory(t->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->map));
	memset(b->map, 0, size);
	b->size = size;
}

static VkDeviceMemory
import_memory(struct vkt *t, int dmabuf_fd, VkMemoryRequirements req, VkImage dedicated_image)
{
	VkMemoryFdPropertiesKHR fd_props = { .sType = VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR };
	VK_CHECK(t->GetMemoryFdPropertiesKHR(t->device,
					     VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
					     dmabuf_fd, &fd_props));
	int fd = fcntl(dmabuf_fd, F_DUPFD_CLOEXEC, 3);
	REQUIRE(fd >= 0, "dup");

	VkMemoryDedicatedAllocateInfo dedicated = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
		.image = dedicated_image,
	};
	VkImportMemoryFdInfoKHR import = {
		.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
		.pNext = dedicated_image ? &dedicated : NULL,
		.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
		.fd = fd,
	};
	VkMemoryAllocateInfo alloc = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = &import,
		.allocationSize = req.size,
		.memoryTypeIndex = pick_memory_type(t, req.memoryTypeBits & fd_props.memoryTypeBits, 0),
	};
	VkDeviceMemory mem;
	VkResult r = vkAllocateMemory(t->device, &alloc, NULL, &mem);
	if (r != VK_SUCCESS)
		close(fd); /* the import failed: the fd is still ours */
	REQUIRE(r == VK_SUCCESS, "import dma-buf: %s", vkt_result_name(r));
	return mem;
}

void
vkt_import_buffer(struct vkt *t, int dmabuf_fd, VkDeviceSize size, struct vkt_buffer *b)
{
	memset(b, 0, sizeof(*b));
	VkExternalMemoryBufferCreateInfo ext = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
	};
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.pNext = &ext,
		.size = size,
		.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
	};
	VK_CHECK(vkCreateBuffer(t->device, &info, NULL, &b->buffer));
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(t->device, b->buffer, &req);
	b->memory = import_memory(t, dmabuf_fd, req, VK_NULL_HANDLE);
	VK_CHECK(vkBindBufferMemory(t->device, b->buffer, b->memory, 0));
	b->size = size;
}

void
vkt_import_image(struct vkt *t, int dmabuf_fd, VkDeviceSize dmabuf_size, uint32_t width,
		 uint32_t height, struct vkt_image *img)
{
	memset(img, 0, sizeof(*img));
	VkExternalMemoryImageCreateInfo ext = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMAGE_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
	};
	VkImageCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
		.pNext = &ext,
		.imageType = VK_IMAGE_TYPE_2D,
		.format = VK_FORMAT_R8G8B8A8_UNORM,
		.extent = { width, height, 1 },
		.mipLevels = 1,
		.arrayLayers = 1,
		.samples = VK_SAMPLE_COUNT_1_BIT,
		.tiling = VK_IMAGE_TILING_LINEAR,
		.usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT,
		.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED, /* required for external memory */
	};
	VK_CHECK(vkCreateImage(t->device, &info, NULL, &img->image));
	VkMemoryRequirements req;
	vkGetImageMemoryRequirements(t->device, img->image, &req);
	REQUIRE(req.size <= dmabuf_size, "image needs %llu bytes, dma-buf has %llu",
		(unsigned long long)req.size, (unsigned long long)dmabuf_size);
	img->memory = import_memory(t, dmabuf_fd, req, img->image);
	/* Bound through vkBindImageMemory2, the other entry point the layer tracks. */
	VkBindImageMemoryInfo bind = {
		.sType = VK_STRUCTURE_TYPE_BIND_IMAGE_MEMORY_INFO,
		.image = img->image,
		.memory = img->memory,
	};
	VK_CHECK(vkBindImageMemory2(t->device, 1, &bind));
	img->width = width;
	img->height = height;
	VkImageSubresource sub = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0 };
	VkSubresourceLayout layout;
	vkGetImageSubresourceLayout(t->device, img->image, &sub, &layout);
	img->offset = layout.offset;
	img->row_pitch = layout.rowPitch;

	/* UNDEFINED → GENERAL once (lavapipe keeps a LINEAR image's bytes), then
	 * the tests move it between families in GENERAL. */
	VkCommandBufferAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = t->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VkCommandBuffer cb;
	VK_CHECK(vkAllocateCommandBuffers(t->device, &ai, &cb));
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	VK_CHECK(vkBeginCommandBuffer(cb, &bi));
	VkImageMemoryBarrier b = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
		.srcAccessMask = 0,
		.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
		.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED,
		.newLayout = VK_IMAGE_LAYOUT_GENERAL,
		.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
		.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
		.image = img->image,
		.subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 },
	};
	vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0,
			     NULL, 0, NULL, 1, &b);
	VK_CHECK(vkEndCommandBuffer(cb));
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &cb,
	};
	VK_CHECK(vkQueueSubmit(t->queue, 1, &si, VK_NULL_HANDLE));
	VK_CHECK(vkQueueWaitIdle(t->queue));
	vkFreeCommandBuffers(t->device, t->pool, 1, &cb);
}

void
vkt_buffer_destroy(struct vkt *t, struct vkt_buffer *b)
{
	if (b->map)
		vkUnmapMemory(t->device, b->memory);
	vkDestroyBuffer(t->device, b->buffer, NULL);
	vkFreeMemory(t->device, b->memory, NULL);
	memset(b, 0, sizeof(*b));
}

void
vkt_image_destroy(struct vkt *t, struct vkt_image *img)
{
	vkDestroyImage(t->device, img->image, NULL);
	vkFreeMemory(t->device, img->memory, NULL);
	memset(img, 0, sizeof(*img));
}

void
vkt_begin(struct vkt *t, const struct vkt_options *opt, bool one_time, struct vkt_rec *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->one_time = one_time;
	VkCommandBufferAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = t->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VK_CHECK(vkAllocateCommandBuffers(t->device, &ai, &rec->primary));
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = one_time ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT : 0,
	};
	VK_CHECK(vkBeginCommandBuffer(rec->primary, &bi));

	if (opt->secondary) {
		ai.level = VK_COMMAND_BUFFER_LEVEL_SECONDARY;
		VK_CHECK(vkAllocateCommandBuffers(t->device, &ai, &rec->secondary));
		VkCommandBufferInheritanceInfo inherit = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO,
		};
		VkCommandBufferBeginInfo sbi = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
			.flags = one_time ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT : 0,
			.pInheritanceInfo = &inherit,
		};
		VK_CHECK(vkBeginCommandBuffer(rec->secondary, &sbi));
	}
}

VkCommandBuffer
vkt_cmd(const struct vkt_rec *rec)
{
	return rec->secondary ? rec->secondary : rec->primary;
}

void
vkt_end(struct vkt *t, struct vkt_rec *rec)
{
	if (rec->secondary) {
		VK_CHECK(vkEndCommandBuffer(rec->secondary));
		vkCmdExecuteCommands(rec->primary, 1, &rec->secondary);
	}
	VK_CHECK(vkEndCommandBuffer(rec->primary));
}

void
vkt_rec_free(struct vkt *t, struct vkt_rec *rec)
{
	if (rec->secondary)
		vkFreeCommandBuffers(t->device, t->pool, 1, &rec->secondary);
	vkFreeCommandBuffers(t->device, t->pool, 1, &rec->primary);
	memset(rec, 0, sizeof(*rec));
}

static void
transfer(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
	 const struct vkt_shared *s, bool acquire, VkAccessFlags access)
{
	uint32_t outside = t->has_foreign_family ? VK_QUEUE_FAMILY_FOREIGN_EXT
						 : VK_QUEUE_FAMILY_EXTERNAL;
	uint32_t src_family = acquire ? outside : t->family;
	uint32_t dst_family = acquire ? t->family : outside;
	/* Per the spec, the acquire's srcAccessMask and the release's
	 * dstAccessMask are ignored; ours is the other side. */
	VkAccessFlags src_access = acquire ? 0 : access;
	VkAccessFlags dst_access = acquire ? access : 0;
	VkPipelineStageFlags src_stage = acquire ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
						 : VK_PIPELINE_STAGE_TRANSFER_BIT;
	VkPipelineStageFlags dst_stage = acquire ? VK_PIPELINE_STAGE_TRANSFER_BIT
						 : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT;

	if (opt->no_barriers) {
		/* No ownership transfer at all: what apps that ignore the rules do. */
		VkMemoryBarrier m = {
			.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
			.srcAccessMask = acquire ? 0 : access,
			.dstAccessMask = acquire ? access : 0,
		};
		vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, &m, 0, NULL, 0, NULL);
		return;
	}

	const VkImageSubresourceRange range = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1 };
	if (opt->sync2) {
		VkBufferMemoryBarrier2 bb = {
			.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2,
			.srcStageMask = acquire ? VK_PIPELINE_STAGE_2_NONE
						: VK_PIPELINE_STAGE_2_TRANSFER_BIT,
			.srcAccessMask = src_access,
			.dstStageMask = acquire ? VK_PIPELINE_STAGE_2_TRANSFER_BIT
						: VK_PIPELINE_STAGE_2_NONE,
			.dstAccessMask = dst_access,
			.srcQueueFamilyIndex = src_family,
			.dstQueueFamilyIndex = dst_family,
			.buffer = s->buf.buffer,
			.size = VK_WHOLE_SIZE,
		};
		VkImageMemoryBarrier2 ib = {
			.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER_2,
			.srcStageMask = bb.srcStageMask,
			.srcAccessMask = src_access,
			.dstStageMask = bb.dstStageMask,
			.dstAccessMask = dst_access,
			.oldLayout = VK_IMAGE_LAYOUT_GENERAL,
			.newLayout = VK_IMAGE_LAYOUT_GENERAL,
			.srcQueueFamilyIndex = src_family,
			.dstQueueFamilyIndex = dst_family,
			.image = s->img.image,
			.subresourceRange = range,
		};
		VkDependencyInfo dep = {
			.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
			.bufferMemoryBarrierCount = s->is_image ? 0 : 1,
			.pBufferMemoryBarriers = &bb,
			.imageMemoryBarrierCount = s->is_image ? 1 : 0,
			.pImageMemoryBarriers = &ib,
		};
		vkCmdPipelineBarrier2(cb, &dep);
		return;
	}

	VkBufferMemoryBarrier bb = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
		.srcAccessMask = src_access,
		.dstAccessMask = dst_access,
		.srcQueueFamilyIndex = src_family,
		.dstQueueFamilyIndex = dst_family,
		.buffer = s->buf.buffer,
		.size = VK_WHOLE_SIZE,
	};
	VkImageMemoryBarrier ib = {
		.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
		.srcAccessMask = src_access,
		.dstAccessMask = dst_access,
		.oldLayout = VK_IMAGE_LAYOUT_GENERAL,
		.newLayout = VK_IMAGE_LAYOUT_GENERAL,
		.srcQueueFamilyIndex = src_family,
		.dstQueueFamilyIndex = dst_family,
		.image = s->img.image,
		.subresourceRange = range,
	};
	vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 0, NULL, s->is_image ? 0 : 1, &bb,
			     s->is_image ? 1 : 0, &ib);
}

void
vkt_acquire(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
	    const struct vkt_shared *s, VkAccessFlags dst_access)
{
	transfer(t, opt, cb, s, true, dst_access);
}

void
vkt_release(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
	    const struct vkt_shared *s, VkAccessFlags src_access)
{
	transfer(t, opt, cb, s, false, src_access);
}

void
vkt_host_read_barrier(VkCommandBuffer cb)
{
	VkMemoryBarrier m = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
	};
	vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
			     &m, 0, NULL, 0, NULL);
}

void
vkt_copy_from_shared(VkCommandBuffer cb, const struct vkt_shared *s, struct vkt_buffer *dst)
{
	if (s->is_image) {
		VkBufferImageCopy region = {
			.imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
			.imageExtent = { s->img.width, s->img.height, 1 },
		};
		vkCmdCopyImageToBuffer(cb, s->img.image, VK_IMAGE_LAYOUT_GENERAL, dst->buffer, 1,
				       &region);
	} else {
		VkBufferCopy region = { .size = s->buf.size < dst->size ? s->buf.size : dst->size };
		vkCmdCopyBuffer(cb, s->buf.buffer, dst->buffer, 1, &region);
	}
}

void
vkt_copy_to_shared(VkCommandBuffer cb, struct vkt_buffer *src, const struct vkt_shared *s)
{
	if (s->is_image) {
		VkBufferImageCopy region = {
			.imageSubresource = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1 },
			.imageExtent = { s->img.width, s->img.height, 1 },
		};
		vkCmdCopyBufferToImage(cb, src->buffer, s->img.image, VK_IMAGE_LAYOUT_GENERAL, 1,
				       &region);
	} else {
		VkBufferCopy region = { .size = s->buf.size < src->size ? s->buf.size : src->size };
		vkCmdCopyBuffer(cb, src->buffer, s->buf.buffer, 1, &region);
	}
}

static VkResult
submit(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
       VkSemaphore wait_timeline, uint64_t wait_value, VkFence fence)
{
	if (opt->sync2) {
		VkSemaphoreSubmitInfo wait = {
			.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
			.semaphore = wait_timeline,
			.value = wait_value,
			.stageMask = VK_PIPELINE_STAGE_2_TRANSFER_BIT,
		};
		VkCommandBufferSubmitInfo cbi = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
			.commandBuffer = cb,
		};
		VkSubmitInfo2 si = {
			.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
			.waitSemaphoreInfoCount = wait_timeline ? 1 : 0,
			.pWaitSemaphoreInfos = &wait,
			.commandBufferInfoCount = 1,
			.pCommandBufferInfos = &cbi,
		};
		return vkQueueSubmit2(t->queue, 1, &si, fence);
	}

	/* A timeline wait through VkTimelineSemaphoreSubmitInfo: the layer must
	 * extend its value array when it appends its own semaphores. */
	VkTimelineSemaphoreSubmitInfo tl = {
		.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
		.waitSemaphoreValueCount = 1,
		.pWaitSemaphoreValues = &wait_value,
	};
	VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.pNext = wait_timeline ? &tl : NULL,
		.waitSemaphoreCount = wait_timeline ? 1 : 0,
		.pWaitSemaphores = &wait_timeline,
		.pWaitDstStageMask = &stage,
		.commandBufferCount = 1,
		.pCommandBuffers = &cb,
	};
	return vkQueueSubmit(t->queue, 1, &si, fence);
}

VkFence
vkt_fence(struct vkt *t)
{
	VkFenceCreateInfo info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	VkFence f;
	VK_CHECK(vkCreateFence(t->device, &info, NULL, &f));
	return f;
}

VkSemaphore
vkt_timeline(struct vkt *t, uint64_t initial)
{
	VkSemaphoreTypeCreateInfo type = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
		.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
		.initialValue = initial,
	};
	VkSemaphoreCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
		.pNext = &type,
	};
	VkSemaphore s;
	VK_CHECK(vkCreateSemaphore(t->device, &info, NULL, &s));
	return s;
}

size_t
vkt_count_bytes(const void *p, size_t n, uint8_t v)
{
	const uint8_t *b = p;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += b[i] == v;
	return k;
}

bool
vkt_in_layer(const void *func)
{
	Dl_info info;
	if (!func || !dladdr(func, &info) || !info.dli_fname)
		return false;
	return strstr(info.dli_fname, "libVkLayer_SYNCBRIDGE_implicit_sync") != NULL;
}

VkResult
vkt_submit(struct vkt *t, const struct vkt_options *opt, VkCommandBuffer cb,
	   VkSemaphore wait_timeline, uint64_t wait_value, VkFence fence)
{
	const struct vkt_fault *f = fault_find(opt);
	VkResult r;

	if (!f || !sbfault.arm_scoped)
		return submit(t, opt, cb, wait_timeline, wait_value, fence);
	sbfault.arm_scoped(f->schedule, f->scope);
	r = submit(t, opt, cb, wait_timeline, wait_value, fence);
	sbfault.disarm();
	sbfault.armed = true;
	sbfault.injected_count = sbfault.injected();
	sbfault.request = sbfault.ioctl_request(f->ioctl_index);
	return r;
}
