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
 *    vkGetSemaphoreFdKHR(R) → sb_egl_sync_file_wait() → GL reads back NEW.
 *    --control: no hand-off at all (no export, no wait): GL reads OLD while
 *    Vulkan still waits. (lavapipe's SYNC_FD export itself blocks until the
 *    batch is done, so with lavapipe SYNCBRIDGE_DISABLE alone cannot show a
 *    race in this direction; the control shows that the test would see one.)
 *  --dir gl-to-vk: GL clears the buffer to NEW (issued, not flushed);
 *    sb_egl_sync_file_export() → vkImportSemaphoreFdKHR(TEMPORARY, SYNC_FD) →
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
#include <stdbool.h>

#include <syncbridge/egl.h>
#include <syncbridge/syncbridge.h>

#include "eglt.h"
#include "harness.h"
#include "kernel.h"
#include "tbvk.h"

#define SIZE 64
#define PITCH 4096
#define BUF_BYTES ((VkDeviceSize)SIZE * PITCH)
#define OLD 0x11
#define NEW 0xee
#define MS INT64_C(1000000)
#define DELAY_NS (500 * MS)

struct vk {
	struct vkt t;
	struct vkt_buffer shared;  /* on the dma-buf's memory */
	struct vkt_buffer staging; /* host-visible, to copy into */
};

static void
vk_open(struct vk *v, int dmabuf_fd)
{
	/* The first device with SYNC_FD semaphores and dma-buf memory (lavapipe
	 * has them only where /dev/udmabuf exists: the VM tier), else skip. */
	struct vkt_config cfg = {
		.app_name = "egl-vulkan",
		.api_version = VK_API_VERSION_1_1,
		.first_capable = true,
		.require = VKT_DMABUF | VKT_SEMAPHORE_FD,
		.fail = tbvk_test_fail,
	};

	memset(v, 0, sizeof(*v));
	vkt_create(&v->t, &cfg);
	vkt_import_buffer(&v->t, dmabuf_fd, BUF_BYTES, &v->shared);
	vkt_host_buffer(&v->t, BUF_BYTES, &v->staging);
}

static void
vk_close(struct vk *v)
{
	vkDeviceWaitIdle(v->t.device);
	vkt_buffer_destroy(&v->t, &v->staging);
	vkt_buffer_destroy(&v->t, &v->shared);
	vkt_finish(&v->t);
}

/* One batch: wait (optional), fill or copy, signal (optional), fence. */
static VkFence
submit(struct vk *v, VkCommandBuffer *cb, VkSemaphore wait, VkSemaphore signal, bool fill)
{
	vkt_cmd_begin(&v->t, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, cb);
	if (fill) {
		vkCmdFillBuffer(*cb, v->shared.buffer, 0, BUF_BYTES, 0x01010101u * NEW);
	} else {
		VkBufferCopy region = { .size = BUF_BYTES };
		vkCmdCopyBuffer(*cb, v->shared.buffer, v->staging.buffer, 1, &region);
		vkt_host_read_barrier(*cb);
	}
	VK_CHECK(vkEndCommandBuffer(*cb));
	VkFence fence = vkt_fence(&v->t);
	vkt_submit_one(&v->t, *cb, wait, signal, fence);
	return fence;
}

/* What the helper thread signals: the vgem fence Vulkan's batch waits for. */
struct vgem_signal {
	struct sbk_fence *fence;
	int ret;
};

static void
signal_vgem(void *arg)
{
	struct vgem_signal *s = arg;
	s->ret = sbk_fence_signal(s->fence);
}

/*
 * The fd count once Vulkan settled: lavapipe's queue thread frees a consumed
 * temporary payload (closing its sync_file) a moment after the batch's fence
 * signalled, so wait for it (up to 10 s) after vkDeviceWaitIdle.
 */
static int
settled_fd_count(struct vk *v, int want)
{
	int64_t end = now_ns() + 10000 * MS, t0 = now_ns();
	int n;

	vkDeviceWaitIdle(v->t.device);
	while ((n = tb_count_fds()) != want && now_ns() < end)
		sbk_sleep_ns(10 * MS);
	if (n == want && now_ns() - t0 > 5 * MS)
		tb_note("the fd count settled after %.1f ms", (double)(now_ns() - t0) / 1e6);
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
		tb_note("fd %d -> %s", fd, target);
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
	struct vgem_signal sig = { .fence = &busy };
	VkSemaphore busy_sem = vkt_semaphore(&v->t, false), rendered = vkt_semaphore(&v->t, true);
	VkCommandBuffer cb;
	VkFence fence;
	int before = tb_count_fds(), fd = -2, first = -1;
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
	vkt_semaphore_import(&v->t, busy_sem, busy_fd); /* Vulkan's now (else bail out) */
	fence = submit(v, &cb, busy_sem, rendered, true);
	/* The control: "the GPU" finishes only after GL has read, so GL reads
	 * OLD however slowly it runs; with the hand-off GL waits for it. */
	struct tbvk_deferred later = { .fn = signal_vgem, .arg = &sig, .delay_ns = DELAY_NS,
				      .when_told = control };
	tbvk_deferred_start(&later);

	t0 = now_ns();
	if (!control) {
		CHECK_EQ(vkt_semaphore_export(&v->t, rendered, &fd), VK_SUCCESS, "vkGetSemaphoreFdKHR");
		tb_note("vkGetSemaphoreFdKHR returned fd %d after %.1f ms", fd,
			     (double)(now_ns() - t0) / 1e6);
		CHECK(fd == -1 || sb_sync_file_is_valid(fd), "a sync_file or -1 (signalled)");
		CHECK_EQ(sb_egl_sync_file_wait(t->dpy, fd), 0, "the bridge's wait on Vulkan's fence");
		if (fd >= 0)
			CHECK(sb_sync_file_is_valid(fd), "borrowed: still open after the wait");
		if (fd >= 0)
			close(fd); /* ours: vkGetSemaphoreFdKHR gave it to us */
	}
	n = eglt_count(target, NEW, &first);
	tbvk_deferred_tell(&later);
	tb_note("GL read %ld NEW pixels of %d (first 0x%02x) %.1f ms after the submit", n,
		     SIZE * SIZE, first, (double)(now_ns() - t0) / 1e6);
	if (control)
		CHECK(n == 0 && first == OLD,
		      "control: without the hand-off GL reads OLD while Vulkan still waits");
	else
		CHECK_EQ(n, SIZE * SIZE, "GL reads what Vulkan wrote");

	tbvk_deferred_join(&later);
	CHECK_EQ(sig.ret, 0, "vgem signalled");
	VK_CHECK(vkWaitForFences(v->t.device, 1, &fence, VK_TRUE, UINT64_MAX));
	vkDestroyFence(v->t.device, fence, NULL);
	vkFreeCommandBuffers(v->t.device, v->t.pool, 1, &cb);
	vkDestroySemaphore(v->t.device, busy_sem, NULL);
	vkDestroySemaphore(v->t.device, rendered, NULL);
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
	VkSemaphore gl_done = vkt_semaphore(&v->t, false);
	VkCommandBuffer cb;
	VkFence fence;
	VkResult vr;
	int before = tb_count_fds(), fd = -2;
	long n;

	if (getenv("SB_TEST_VERBOSE"))
		list_fds();
	eglt_fill(target, NEW); /* issued, not flushed */
	CHECK_EQ(sb_egl_sync_file_export(t->dpy, &fd), 0, "the bridge's export");
	tb_note("sb_egl_sync_file_export gave fd %d", fd);
	if (control)
		CHECK_EQ(fd, -1, "control: no fence, GL not flushed");
	else
		CHECK(fd >= 0 && sb_sync_file_is_valid(fd), "a sync_file (native fences in the guest)");

	vr = vkt_semaphore_import(&v->t, gl_done, fd); /* Vulkan owns fd now (else bail out) */
	CHECK_EQ(vr, VK_SUCCESS, "vkImportSemaphoreFdKHR(TEMPORARY, SYNC_FD)");
	fence = submit(v, &cb, vr == VK_SUCCESS ? gl_done : VK_NULL_HANDLE, VK_NULL_HANDLE, false);
	VK_CHECK(vkWaitForFences(v->t.device, 1, &fence, VK_TRUE, UINT64_MAX));

	n = count_bytes(v->staging.map, PITCH, NEW);
	tb_note("Vulkan copied %ld NEW bytes of %d", n, SIZE * SIZE * 4);
	if (control)
		CHECK(n < SIZE * SIZE * 4,
		      "control: without the bridge Vulkan copies before GL's clear ran");
	else
		CHECK_EQ(n, SIZE * SIZE * 4, "Vulkan reads what GL wrote");

	vkDestroyFence(v->t.device, fence, NULL);
	vkFreeCommandBuffers(v->t.device, v->t.pool, 1, &cb);
	vkDestroySemaphore(v->t.device, gl_done, NULL);
	n = settled_fd_count(v, before);
	CHECK_EQ(n, before, "fd count back to the start (Vulkan closed what it owned)");
	if (n != before)
		list_fds();
}

int
main(int argc, char **argv)
{
	const char *dir = "vk-to-gl";
	bool control = false;
	struct sbk_buf buf = { .fd = -1, .vgem_fd = -1 };
	struct eglt t;
	struct eglt_target target;
	struct vk v;
	uint32_t caps = 0;
	int vgem, ret;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--control") == 0) {
			control = true;
		} else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc &&
			   (strcmp(argv[i + 1], "vk-to-gl") == 0 || strcmp(argv[i + 1], "gl-to-vk") == 0)) {
			dir = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--dir vk-to-gl|gl-to-vk] [--control]\n", argv[0]);
			return 2;
		}
	}
	bool to_gl = strcmp(dir, "vk-to-gl") == 0;
	if (control && !to_gl)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);

	vgem = sbk_vgem_open();
	if (vgem < 0)
		tb_skip("no vgem node (%s): run in the VM tier as root", strerror(-vgem));
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, vgem, BUF_BYTES, &buf) == 0, "vgem buffer");
	for (int y = 0; y < SIZE; y++)
		memset((uint8_t *)buf.map + (size_t)y * PITCH, OLD, SIZE * 4);

	eglt_no_disk_cache(); /* before lavapipe's device exists: eglt.h */
	vk_open(&v, buf.fd);
	ret = eglt_open(&t, EGLT_DEVICE_SW);
	if (ret == -ENODEV)
		tb_skip("no EGL software device (EGL_MESA_device_software)");
	REQUIRE(ret == 0, "eglt_open");
	ret = eglt_target_import(&t, buf.fd, SIZE, SIZE, PITCH, &target);
	if (ret == -ENODEV)
		tb_skip("the software device cannot import the vgem dma-buf");
	REQUIRE(ret == 0, "import the dma-buf into EGL");
	REQUIRE(sb_egl_display_get_caps(t.dpy, &caps) == 0, "caps");
	tb_note("%s%s, caps 0x%x", dir, control ? " CONTROL" : "", caps);
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
	return tb_finish();
}
