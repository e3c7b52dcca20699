/* SPDX-License-Identifier: MIT */
/*
 * egl-vulkan: Vulkan and GL in one process share a vgem dma-buf (a VkBuffer
 * on imported dma-buf memory; an EGLImage on the EGL device platform's
 * software device) and hand it over through SYNC_FD semaphores and the
 * bridge, following the recipes of docs/egl.md.
 *
 *  --dir vk-to-gl: Vulkan fills the buffer with NEW in a batch that first
 *    waits for a pending vgem fence (signalled by another thread after
 *    500 ms: "the GPU is still busy") and signals semaphore R.
 *    vkGetSemaphoreFdKHR(R) → sb_egl_wait_sync_file() → GL reads back NEW.
 *    --control: no hand-off at all (no export, no wait): GL reads OLD while
 *    Vulkan still waits. (lavapipe's SYNC_FD export itself blocks until the
 *    batch is done, so with lavapipe SYNCBRIDGE_DISABLE alone cannot show a
 *    race in this direction; the control shows that the test would see one.)
 *  --dir gl-to-vk: GL clears the buffer to NEW (issued, not flushed);
 *    sb_egl_export_sync_file() → vkImportSemaphoreFdKHR(TEMPORARY, SYNC_FD) →
 *    a Vulkan batch waiting on it copies the buffer into host memory: NEW.
 *    --control: SYNCBRIDGE_DISABLE=1 — the export returns -1 without
 *    flushing GL, Vulkan imports "already signalled" and copies OLD.
 *
 * Both directions check the fd rules: the exported fd is ours to close; an
 * imported fd is Vulkan's on success (never closed by us); the process's fd
 * count is back to the start at the end. Needs vgem, the software EGL device
 * and a Vulkan device with SYNC_FD semaphores and dma-buf memory (lavapipe in
 * the guest); else exit 77.
 *
 * Timing: the vgem signaller's 500 ms is not a synchronisation: with the
 * hand-off GL cannot read before Vulkan's batch is done, however late the
 * signal. In the vk-to-gl control it is no delay at all: the signaller waits
 * until GL has read (GL's readback under TCG can take longer than any fixed
 * delay). The fd count is waited for (lavapipe's queue thread closes a
 * consumed payload a moment after the fence), up to 10 s: typically < 20 ms.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>

#include <vulkan/vulkan.h>

#include <syncbridge/egl.h>
#include <syncbridge/syncbridge.h>

#include "eglt.h"
#include "harness.h"
#include "kernel.h"

#define SIZE 64
#define PITCH 4096
#define BUF_BYTES ((VkDeviceSize)SIZE * PITCH)
#define OLD 0x11
#define NEW 0xee
#define MS INT64_C(1000000)
#define DELAY_NS (500 * MS)

struct vk {
	VkInstance instance;
	VkPhysicalDevice phys;
	VkDevice device;
	VkQueue queue;
	uint32_t queue_family;
	VkCommandPool pool;
	VkPhysicalDeviceMemoryProperties mem_props;
	PFN_vkGetSemaphoreFdKHR GetSemaphoreFdKHR;
	PFN_vkImportSemaphoreFdKHR ImportSemaphoreFdKHR;
	PFN_vkGetMemoryFdPropertiesKHR GetMemoryFdPropertiesKHR;
	/* the shared buffer (dma-buf memory) and a host-visible copy target */
	VkBuffer shared;
	VkDeviceMemory shared_mem;
	VkBuffer staging;
	VkDeviceMemory staging_mem;
	void *staging_map;
};

static bool
has_arg(int argc, char **argv, const char *arg)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], arg) == 0)
			return true;
	return false;
}

static const char *
arg_value(int argc, char **argv, const char *opt, const char *def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], opt) == 0)
			return argv[i + 1];
	return def;
}

#define VK_REQUIRE(call)                                                              \
	do {                                                                          \
		VkResult vr_ = (call);                                                \
		REQUIRE(vr_ == VK_SUCCESS, "%s: VkResult %d", #call, (int)vr_);       \
	} while (0)

static bool
device_has_ext(VkPhysicalDevice phys, const char *name)
{
	VkExtensionProperties props[512];
	uint32_t n = 512;

	if (vkEnumerateDeviceExtensionProperties(phys, NULL, &n, props) < 0)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(props[i].extensionName, name) == 0)
			return true;
	return false;
}

static bool
sync_fd_semaphores(VkPhysicalDevice phys)
{
	VkPhysicalDeviceExternalSemaphoreInfo info = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO,
		.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
	};
	VkExternalSemaphoreProperties props = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES,
	};
	const VkExternalSemaphoreFeatureFlags both = VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT |
						     VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT;

	vkGetPhysicalDeviceExternalSemaphoreProperties(phys, &info, &props);
	return (props.externalSemaphoreFeatures & both) == both;
}

static uint32_t
pick_memory(struct vk *v, uint32_t bits, VkMemoryPropertyFlags want)
{
	for (uint32_t i = 0; i < v->mem_props.memoryTypeCount; i++)
		if ((bits & (1u << i)) &&
		    (v->mem_props.memoryTypes[i].propertyFlags & want) == want)
			return i;
	return UINT32_MAX;
}

static void
vk_open(struct vk *v, int dmabuf_fd)
{
	static const char *dev_exts[] = {
		VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME,
		VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME,
		VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME,
	};
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "egl-vulkan",
		.apiVersion = VK_API_VERSION_1_1,
	};
	VkInstanceCreateInfo ici = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	VkPhysicalDevice phys[8];
	uint32_t n = 8;

	memset(v, 0, sizeof(*v));
	if (vkCreateInstance(&ici, NULL, &v->instance) != VK_SUCCESS)
		sb_test_skip("no Vulkan 1.1 instance");
	if (vkEnumeratePhysicalDevices(v->instance, &n, phys) < 0 || n == 0)
		sb_test_skip("no Vulkan device");
	for (uint32_t i = 0; i < n && !v->phys; i++) {
		if (sync_fd_semaphores(phys[i]) &&
		    device_has_ext(phys[i], VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME) &&
		    device_has_ext(phys[i], VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME))
			v->phys = phys[i];
	}
	if (!v->phys)
		sb_test_skip("no Vulkan device with SYNC_FD semaphores and dma-buf memory "
			     "(lavapipe has them only where /dev/udmabuf exists: the VM tier)");
	vkGetPhysicalDeviceMemoryProperties(v->phys, &v->mem_props);

	VkQueueFamilyProperties qf[16];
	uint32_t nq = 16;
	vkGetPhysicalDeviceQueueFamilyProperties(v->phys, &nq, qf);
	v->queue_family = UINT32_MAX;
	for (uint32_t i = 0; i < nq && v->queue_family == UINT32_MAX; i++)
		if (qf[i].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT |
					VK_QUEUE_TRANSFER_BIT))
			v->queue_family = i;
	REQUIRE(v->queue_family != UINT32_MAX, "a queue family");

	float prio = 1.0f;
	VkDeviceQueueCreateInfo qci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = v->queue_family,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDeviceCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qci,
		.enabledExtensionCount = sizeof(dev_exts) / sizeof(dev_exts[0]),
		.ppEnabledExtensionNames = dev_exts,
	};
	VK_REQUIRE(vkCreateDevice(v->phys, &dci, NULL, &v->device));
	vkGetDeviceQueue(v->device, v->queue_family, 0, &v->queue);
	v->GetSemaphoreFdKHR =
		(PFN_vkGetSemaphoreFdKHR)vkGetDeviceProcAddr(v->device, "vkGetSemaphoreFdKHR");
	v->ImportSemaphoreFdKHR =
		(PFN_vkImportSemaphoreFdKHR)vkGetDeviceProcAddr(v->device, "vkImportSemaphoreFdKHR");
	v->GetMemoryFdPropertiesKHR = (PFN_vkGetMemoryFdPropertiesKHR)vkGetDeviceProcAddr(
		v->device, "vkGetMemoryFdPropertiesKHR");
	REQUIRE(v->GetSemaphoreFdKHR && v->ImportSemaphoreFdKHR && v->GetMemoryFdPropertiesKHR,
		"external fd entry points");

	VkCommandPoolCreateInfo pci = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = v->queue_family,
	};
	VK_REQUIRE(vkCreateCommandPool(v->device, &pci, NULL, &v->pool));

	/* The shared buffer on the dma-buf's memory. */
	VkExternalMemoryBufferCreateInfo ext_buf = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
	};
	VkBufferCreateInfo bci = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.pNext = &ext_buf,
		.size = BUF_BYTES,
		.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VK_REQUIRE(vkCreateBuffer(v->device, &bci, NULL, &v->shared));
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(v->device, v->shared, &req);
	VkMemoryFdPropertiesKHR fd_props = { .sType = VK_STRUCTURE_TYPE_MEMORY_FD_PROPERTIES_KHR };
	VK_REQUIRE(v->GetMemoryFdPropertiesKHR(v->device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
					       dmabuf_fd, &fd_props));
	uint32_t type = pick_memory(v, req.memoryTypeBits & fd_props.memoryTypeBits, 0);
	REQUIRE(type != UINT32_MAX, "a memory type for the dma-buf (bits 0x%x & 0x%x)",
		req.memoryTypeBits, fd_props.memoryTypeBits);
	/* "Importing memory from a file descriptor transfers ownership of the fd
	 * to the Vulkan implementation" — on success; so import a duplicate. */
	int dup_fd = fcntl(dmabuf_fd, F_DUPFD_CLOEXEC, 0);
	REQUIRE(dup_fd >= 0, "dup the dma-buf");
	VkImportMemoryFdInfoKHR import = {
		.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
		.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT,
		.fd = dup_fd,
	};
	VkMemoryAllocateInfo mai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = &import,
		.allocationSize = req.size > BUF_BYTES ? req.size : BUF_BYTES,
		.memoryTypeIndex = type,
	};
	if (vkAllocateMemory(v->device, &mai, NULL, &v->shared_mem) != VK_SUCCESS) {
		close(dup_fd);
		REQUIRE(false, "import the dma-buf as Vulkan memory");
	}
	VK_REQUIRE(vkBindBufferMemory(v->device, v->shared, v->shared_mem, 0));

	/* A host-visible buffer to copy into. */
	bci.pNext = NULL;
	bci.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT;
	VK_REQUIRE(vkCreateBuffer(v->device, &bci, NULL, &v->staging));
	vkGetBufferMemoryRequirements(v->device, v->staging, &req);
	type = pick_memory(v, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
						      VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
	REQUIRE(type != UINT32_MAX, "host-visible memory");
	mai.pNext = NULL;
	mai.allocationSize = req.size;
	mai.memoryTypeIndex = type;
	VK_REQUIRE(vkAllocateMemory(v->device, &mai, NULL, &v->staging_mem));
	VK_REQUIRE(vkBindBufferMemory(v->device, v->staging, v->staging_mem, 0));
	VK_REQUIRE(vkMapMemory(v->device, v->staging_mem, 0, VK_WHOLE_SIZE, 0, &v->staging_map));
	memset(v->staging_map, 0, BUF_BYTES);
}

static void
vk_close(struct vk *v)
{
	vkDeviceWaitIdle(v->device);
	vkDestroyBuffer(v->device, v->staging, NULL);
	vkFreeMemory(v->device, v->staging_mem, NULL);
	vkDestroyBuffer(v->device, v->shared, NULL);
	vkFreeMemory(v->device, v->shared_mem, NULL);
	vkDestroyCommandPool(v->device, v->pool, NULL);
	vkDestroyDevice(v->device, NULL);
	vkDestroyInstance(v->instance, NULL);
}

static VkSemaphore
semaphore_create(struct vk *v, bool exportable)
{
	VkExportSemaphoreCreateInfo export = {
		.sType = VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
	};
	VkSemaphoreCreateInfo sci = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
		.pNext = exportable ? &export : NULL,
	};
	VkSemaphore s;

	VK_REQUIRE(vkCreateSemaphore(v->device, &sci, NULL, &s));
	return s;
}

/*
 * Import a sync_file (or -1: already signalled) as the semaphore's temporary
 * payload. Vulkan owns fd on success; on failure it is still ours: close it.
 */
static VkResult
semaphore_import(struct vk *v, VkSemaphore s, int fd)
{
	VkImportSemaphoreFdInfoKHR info = {
		.sType = VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR,
		.semaphore = s,
		.flags = VK_SEMAPHORE_IMPORT_TEMPORARY_BIT,
		.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
		.fd = fd,
	};
	VkResult vr = v->ImportSemaphoreFdKHR(v->device, &info);

	if (vr != VK_SUCCESS && fd >= 0)
		close(fd);
	return vr;
}

/* One batch: wait (optional), fill or copy, signal (optional), fence. */
static VkFence
submit(struct vk *v, VkCommandBuffer *cb, VkSemaphore wait, VkSemaphore signal, bool fill)
{
	VkCommandBufferAllocateInfo cai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = v->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VkCommandBufferBeginInfo begin = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
	VkFence fence;

	VK_REQUIRE(vkAllocateCommandBuffers(v->device, &cai, cb));
	VK_REQUIRE(vkBeginCommandBuffer(*cb, &begin));
	if (fill) {
		vkCmdFillBuffer(*cb, v->shared, 0, BUF_BYTES, 0x01010101u * NEW);
	} else {
		VkBufferCopy region = { .size = BUF_BYTES };
		VkBufferMemoryBarrier to_host = {
			.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
			.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
			.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
			.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
			.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
			.buffer = v->staging,
			.size = VK_WHOLE_SIZE,
		};

		vkCmdCopyBuffer(*cb, v->shared, v->staging, 1, &region);
		vkCmdPipelineBarrier(*cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
				     0, 0, NULL, 1, &to_host, 0, NULL);
	}
	VK_REQUIRE(vkEndCommandBuffer(*cb));
	VK_REQUIRE(vkCreateFence(v->device, &fci, NULL, &fence));

	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.waitSemaphoreCount = wait ? 1 : 0,
		.pWaitSemaphores = &wait,
		.pWaitDstStageMask = &stage,
		.commandBufferCount = 1,
		.pCommandBuffers = cb,
		.signalSemaphoreCount = signal ? 1 : 0,
		.pSignalSemaphores = &signal,
	};
	VK_REQUIRE(vkQueueSubmit(v->queue, 1, &si, fence));
	return fence;
}

/* Signals a vgem fence DELAY_NS after it starts, or (after_read) once told that GL has read. */
struct signaller {
	pthread_t thread;
	struct sbk_fence *fence;
	bool after_read, read_done;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int ret;
};

static void *
signaller_main(void *p)
{
	struct signaller *s = p;

	if (s->after_read) {
		pthread_mutex_lock(&s->lock);
		while (!s->read_done)
			pthread_cond_wait(&s->cond, &s->lock);
		pthread_mutex_unlock(&s->lock);
	} else {
		sbk_sleep_ns(DELAY_NS);
	}
	s->ret = sbk_fence_signal(s->fence);
	return NULL;
}

/*
 * The fd count once Vulkan settled: lavapipe's queue thread frees a consumed
 * temporary payload (closing its sync_file) a moment after the batch's fence
 * signalled, so wait for it (up to 10 s) after vkDeviceWaitIdle.
 */
static int
settled_fd_count(struct vk *v, int want)
{
	int64_t end = sbk_now_ns() + 10000 * MS, t0 = sbk_now_ns();
	int n;

	vkDeviceWaitIdle(v->device);
	while ((n = sb_test_count_fds()) != want && sbk_now_ns() < end)
		sbk_sleep_ns(10 * MS);
	if (n == want && sbk_now_ns() - t0 > 5 * MS)
		sb_test_note("the fd count settled after %.1f ms", (double)(sbk_now_ns() - t0) / 1e6);
	return n;
}

/* On an fd-count mismatch: what is open now, for the log. */
static void
list_fds(void)
{
	char path[64], target[256];

	for (int fd = 0; fd < 256; fd++) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, target, sizeof(target) - 1);
		if (len < 0)
			continue;
		target[len] = '\0';
		sb_test_note("fd %d -> %s", fd, target);
	}
}

static long
count_bytes(const uint8_t *base, size_t pitch, uint8_t value)
{
	long n = 0;

	for (int y = 0; y < SIZE; y++)
		for (int x = 0; x < SIZE * 4; x++)
			n += base[(size_t)y * pitch + (size_t)x] == value;
	return n;
}

/* Vulkan writes, GL reads. */
static void
vk_to_gl(struct vk *v, struct eglt *t, struct eglt_target *target, int vgem, bool control)
{
	struct sbk_fence busy;
	struct signaller sig;
	VkSemaphore busy_sem = semaphore_create(v, false), rendered = semaphore_create(v, true);
	VkCommandBuffer cb;
	VkFence fence;
	int before = sb_test_count_fds(), fd = -2, first = -1;
	int64_t t0;
	long n;

	/* "The GPU is still busy": Vulkan's batch waits for a pending vgem fence. */
	memset(&busy, 0, sizeof(busy));
	busy.sync_file = -1;
	busy.bo.fd = -1;
	busy.bo.vgem_fd = -1;
	REQUIRE(sbk_fence_create(vgem, true, &busy) == 0, "pending vgem fence");
	int busy_fd = fcntl(busy.sync_file, F_DUPFD_CLOEXEC, 0);
	REQUIRE(busy_fd >= 0, "dup");
	REQUIRE(semaphore_import(v, busy_sem, busy_fd) == VK_SUCCESS, "import the busy fence");
	fence = submit(v, &cb, busy_sem, rendered, true);
	memset(&sig, 0, sizeof(sig));
	sig.fence = &busy;
	/* The control: "the GPU" finishes only after GL has read, so GL reads
	 * OLD however slowly it runs; with the hand-off GL waits for it. */
	sig.after_read = control;
	pthread_mutex_init(&sig.lock, NULL);
	pthread_cond_init(&sig.cond, NULL);
	REQUIRE(pthread_create(&sig.thread, NULL, signaller_main, &sig) == 0, "pthread_create");

	t0 = sbk_now_ns();
	if (!control) {
		VkSemaphoreGetFdInfoKHR get = {
			.sType = VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR,
			.semaphore = rendered,
			.handleType = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_SYNC_FD_BIT,
		};

		CHECK_EQ(v->GetSemaphoreFdKHR(v->device, &get, &fd), VK_SUCCESS, "vkGetSemaphoreFdKHR");
		sb_test_note("vkGetSemaphoreFdKHR returned fd %d after %.1f ms", fd,
			     (double)(sbk_now_ns() - t0) / 1e6);
		CHECK(fd == -1 || sb_sync_file_is_valid(fd), "a sync_file or -1 (signalled)");
		CHECK_EQ(sb_egl_wait_sync_file(t->dpy, fd), 0, "the bridge's wait on Vulkan's fence");
		if (fd >= 0)
			CHECK(sb_sync_file_is_valid(fd), "borrowed: still open after the wait");
		if (fd >= 0)
			close(fd); /* ours: vkGetSemaphoreFdKHR gave it to us */
	}
	n = eglt_count(target, NEW, &first);
	pthread_mutex_lock(&sig.lock);
	sig.read_done = true;
	pthread_cond_signal(&sig.cond);
	pthread_mutex_unlock(&sig.lock);
	sb_test_note("GL read %ld NEW pixels of %d (first 0x%02x) %.1f ms after the submit", n,
		     SIZE * SIZE, first, (double)(sbk_now_ns() - t0) / 1e6);
	if (control)
		CHECK(n == 0 && first == OLD,
		      "control: without the hand-off GL reads OLD while Vulkan still waits");
	else
		CHECK_EQ(n, SIZE * SIZE, "GL reads what Vulkan wrote");

	pthread_join(sig.thread, NULL);
	pthread_mutex_destroy(&sig.lock);
	pthread_cond_destroy(&sig.cond);
	CHECK_EQ(sig.ret, 0, "vgem signalled");
	VK_REQUIRE(vkWaitForFences(v->device, 1, &fence, VK_TRUE, UINT64_MAX));
	vkDestroyFence(v->device, fence, NULL);
	vkFreeCommandBuffers(v->device, v->pool, 1, &cb);
	vkDestroySemaphore(v->device, busy_sem, NULL);
	vkDestroySemaphore(v->device, rendered, NULL);
	sbk_fence_destroy(&busy);
	n = settled_fd_count(v, before);
	CHECK_EQ(n, before, "fd count back to the start");
	if (n != before)
		list_fds();
}

/* GL writes, Vulkan reads. */
static void
gl_to_vk(struct vk *v, struct eglt *t, struct eglt_target *target, bool control)
{
	VkSemaphore gl_done = semaphore_create(v, false);
	VkCommandBuffer cb;
	VkFence fence;
	VkResult vr;
	int before = sb_test_count_fds(), fd = -2;
	long n;

	if (getenv("SB_TEST_VERBOSE"))
		list_fds();
	eglt_fill(target, NEW); /* issued, not flushed */
	CHECK_EQ(sb_egl_export_sync_file(t->dpy, &fd), 0, "the bridge's export");
	sb_test_note("sb_egl_export_sync_file gave fd %d", fd);
	if (control)
		CHECK_EQ(fd, -1, "control: no fence, GL not flushed");
	else
		CHECK(fd >= 0 && sb_sync_file_is_valid(fd), "a sync_file (native fences in the guest)");

	vr = semaphore_import(v, gl_done, fd); /* Vulkan owns fd now (or it was closed) */
	CHECK_EQ(vr, VK_SUCCESS, "vkImportSemaphoreFdKHR(TEMPORARY, SYNC_FD)");
	fence = submit(v, &cb, vr == VK_SUCCESS ? gl_done : VK_NULL_HANDLE, VK_NULL_HANDLE, false);
	VK_REQUIRE(vkWaitForFences(v->device, 1, &fence, VK_TRUE, UINT64_MAX));

	n = count_bytes(v->staging_map, PITCH, NEW);
	sb_test_note("Vulkan copied %ld NEW bytes of %d", n, SIZE * SIZE * 4);
	if (control)
		CHECK(n < SIZE * SIZE * 4,
		      "control: without the bridge Vulkan copies before GL's clear ran");
	else
		CHECK_EQ(n, SIZE * SIZE * 4, "Vulkan reads what GL wrote");

	vkDestroyFence(v->device, fence, NULL);
	vkFreeCommandBuffers(v->device, v->pool, 1, &cb);
	vkDestroySemaphore(v->device, gl_done, NULL);
	n = settled_fd_count(v, before);
	CHECK_EQ(n, before, "fd count back to the start (Vulkan closed what it owned)");
	if (n != before)
		list_fds();
}

int
main(int argc, char **argv)
{
	const char *dir = arg_value(argc, argv, "--dir", "vk-to-gl");
	bool control = has_arg(argc, argv, "--control");
	bool to_gl = strcmp(dir, "vk-to-gl") == 0;
	struct sbk_buf buf = { .fd = -1, .vgem_fd = -1 };
	struct eglt t;
	struct eglt_target target;
	struct vk v;
	uint32_t caps = 0;
	int vgem, ret;

	if (!to_gl && strcmp(dir, "gl-to-vk") != 0) {
		fprintf(stderr, "usage: %s --dir vk-to-gl|gl-to-vk [--control]\n", argv[0]);
		return 2;
	}
	if (control && !to_gl)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);

	vgem = sbk_vgem_open();
	if (vgem < 0)
		sb_test_skip("no vgem node (%s): run in the VM tier as root", strerror(-vgem));
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, vgem, BUF_BYTES, &buf) == 0, "vgem buffer");
	for (int y = 0; y < SIZE; y++)
		memset((uint8_t *)buf.map + (size_t)y * PITCH, OLD, SIZE * 4);

	eglt_no_disk_cache(); /* before lavapipe's device exists: eglt.h */
	vk_open(&v, buf.fd);
	ret = eglt_open(&t, EGLT_DEVICE_SW);
	if (ret == -ENODEV)
		sb_test_skip("no EGL software device (EGL_MESA_device_software)");
	REQUIRE(ret == 0, "eglt_open");
	ret = eglt_target_import(&t, buf.fd, SIZE, SIZE, PITCH, &target);
	if (ret == -ENODEV)
		sb_test_skip("the software device cannot import the vgem dma-buf");
	REQUIRE(ret == 0, "import the dma-buf into EGL");
	REQUIRE(sb_egl_display_get_caps(t.dpy, &caps) == 0, "caps");
	sb_test_note("%s%s, caps 0x%x", dir, control ? " CONTROL" : "", caps);
	REQUIRE(eglt_count(&target, OLD, NULL) == SIZE * SIZE, "GL sees OLD");
	/* The fd counts below: no thread of Mesa's opens fds behind them (eglt.h). */
	REQUIRE(!eglt_disk_cache_running(), "no Mesa shader disk-cache thread (it opens fds behind "
		"the fd count: MESA_SHADER_CACHE_DISABLE)");

	if (to_gl)
		vk_to_gl(&v, &t, &target, vgem, control);
	else
		gl_to_vk(&v, &t, &target, control);

	eglt_target_destroy(&t, &target);
	eglt_close(&t);
	vk_close(&v);
	sbk_buf_destroy(&buf);
	close(vgem);
	return sb_test_finish();
}
