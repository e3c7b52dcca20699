/* SPDX-License-Identifier: MIT */
/*
 * doctor's live Vulkan measurements, run inside a probe child (doctor_vk.c):
 *
 *  - implicit sync out: a long write (many vkCmdFillBuffer) into an exported
 *    dma-buf buffer, submitted with a VkFence; right after the submit the
 *    dma-buf's READ sync_file (what a reader would wait for) is exported and
 *    decoded, then the VkFence is asked. A pending export: the driver puts
 *    its fence on the buffer. A signalled or empty export while the VkFence
 *    is still NOT_READY: it does not. Both done: too little work to tell,
 *    retried with four times more, three times at most.
 *  - implicit sync in: a pending vgem write fence imported into the device's
 *    dma-buf, then a copy that reads the buffer; a thread signals the vgem
 *    fence IN_WAIT_MS later. The read done before that: the driver does not
 *    wait; done after it: it does (in the GPU's queue or, the layer on venus,
 *    on the CPU inside vkQueueSubmit: either way the read is ordered).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/sync_file.h>

#include <syncbridge/dmabuf.h>

#include "doctor_vk_probe.h"
#include "kernel.h"

#define OUT_BYTES (4u << 20)
#define OUT_FILLS 16u
#define OUT_TRIES 3
#define IN_BYTES 65536u
#define IN_WAIT_MS 1500

/* The VkResult of the failed dma-buf export (the tail of t->why), or all of why. */
static const char *
export_error(const struct vkt *t)
{
	const char *r = strstr(t->why, "VK_");

	return r ? r : t->why;
}

/* One submit of `fills` fills (and the FOREIGN release) with the dma-buf's
 * export right after it: 1 pending, 0 signalled while the VkFence was not,
 * -EAGAIN both done, -EINPROGRESS both done because vkQueueSubmit itself
 * returned only once the work was (a CPU wait: *submit_ns says how long it
 * took), other -errno: failed (it says why). */
static int
out_once(struct vkt *t, const struct vkt_buffer *b, int dmabuf, unsigned fills, bool release,
	 VkFence fence, struct doctor_item *it, int64_t *submit_ns)
{
	VkResult at_return;
	int64_t t0;
	VkCommandBuffer cb;
	char driver[32];
	int status = -1, ret;
	uint32_t num = 0;
	VkResult fs;

	if (vkt_cmd_begin(t, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, &cb) != VK_SUCCESS)
		goto vk_failed;
	for (unsigned k = 0; k < fills; k++)
		vkCmdFillBuffer(cb, b->buffer, 0, VK_WHOLE_SIZE, k + 1);
	if (release)
		vkt_transfer_buffer(t, cb, b->buffer, false, VK_PIPELINE_STAGE_TRANSFER_BIT,
				    VK_ACCESS_TRANSFER_WRITE_BIT);
	if (vkEndCommandBuffer(cb) != VK_SUCCESS)
		goto vk_failed;
	t0 = now_ns();
	if (vkt_submit_one(t, cb, VK_NULL_HANDLE, VK_NULL_HANDLE, fence) != VK_SUCCESS)
		goto vk_failed;
	*submit_ns = now_ns() - t0;
	at_return = vkGetFenceStatus(t->device, fence);
	ret = doctor_dmabuf_reader_fences(dmabuf, &status, &num, driver, sizeof(driver));
	fs = vkGetFenceStatus(t->device, fence);
	vkWaitForFences(t->device, 1, &fence, VK_TRUE, UINT64_MAX);
	vkResetFences(t->device, 1, &fence);
	vkFreeCommandBuffers(t->device, t->pool, 1, &cb);
	if (ret < 0) {
		doctor_item_set(it, DOCTOR_UNKNOWN,
				"DMA_BUF_IOCTL_EXPORT_SYNC_FILE on its dma-buf: %s",
				strerror(-ret));
		return ret;
	}
	if (status == 0) {
		doctor_item_set(it, DOCTOR_YES,
				"right after the submit the dma-buf carried a pending "
				"fence (%s) while the work ran",
				driver[0] ? driver : "?");
		return 1;
	}
	if (fs == VK_NOT_READY) {
		doctor_item_set(it, DOCTOR_NO,
				"right after the submit the dma-buf's fences were %s "
				"(%u fence%s%s%s) while its VkFence was still pending: a reader "
				"would not wait",
				num ? "signalled" : "none", num, num == 1 ? "" : "s",
				driver[0] ? ", " : "", driver);
		return 0;
	}
	return at_return == VK_SUCCESS ? -EINPROGRESS : -EAGAIN;
vk_failed:
	doctor_item_set(it, DOCTOR_UNKNOWN, "recording or submitting the write failed: %s", t->why);
	return -EIO;
}

void
doctor_vk_measure_out(struct vkt *t, bool release, struct doctor_item *it)
{
	struct vkt_buffer b;
	unsigned fills = OUT_FILLS;
	int dmabuf = -1, ret = -EAGAIN;
	int64_t submit_ns = 0;
	VkFence fence;

	if (!t->has_dmabuf) {
		doctor_item_set(it, DOCTOR_UNKNOWN, "the device exports no dma-buf memory");
		return;
	}
	if (vkt_export_buffer(t, OUT_BYTES, &b, &dmabuf) != VK_SUCCESS) {
		doctor_item_set(it, DOCTOR_UNKNOWN, "the driver exports no dma-buf buffer (%s)",
				export_error(t));
		return;
	}
	fence = vkt_fence(t);
	for (int i = 0; fence && i < OUT_TRIES && (ret == -EAGAIN || ret == -EINPROGRESS);
	     i++, fills *= 4)
		ret = out_once(t, &b, dmabuf, fills, release, fence, it, &submit_ns);
	if (ret == -EINPROGRESS)
		doctor_item_set(
			it, DOCTOR_YES,
			"vkQueueSubmit returned only once the work was done "
			"(%.0f ms for %u fills of %u MiB: a CPU wait in the submit), so nothing "
			"can read the buffer early",
			(double)submit_ns / 1e6, fills / 4, OUT_BYTES >> 20);
	else if (ret == -EAGAIN)
		doctor_item_set(it, DOCTOR_UNKNOWN,
				"even %u fills of %u MiB were done before the "
				"export could look",
				fills / 4, OUT_BYTES >> 20);
	else if (!fence)
		doctor_item_set(it, DOCTOR_UNKNOWN, "vkCreateFence: %s", t->why);
	if (fence)
		vkDestroyFence(t->device, fence, NULL);
	vkt_buffer_destroy(t, &b);
	close(dmabuf);
}

/*
 * The vgem fence is signalled by a thread IN_WAIT_MS after the read was
 * recorded, so that a vkQueueSubmit that itself waits on the CPU for the
 * fence (the layer on venus) is judged too: what counts is whether the read
 * finished before or after that signal.
 */
struct signaller {
	struct sbk_fence *f;
	int64_t at;        /* when to signal (CLOCK_MONOTONIC ns) */
	int64_t signalled; /* when it did */
};

static void *
signal_later(void *arg)
{
	struct signaller *s = arg;

	sbk_sleep_ns(s->at - now_ns());
	s->signalled = now_ns();
	sbk_fence_signal(s->f);
	return NULL;
}

/* Submit the read (after an acquire from FOREIGN with acquire) and wait for it:
 * its VkResult, *done the time it was seen done. */
static VkResult
submit_read(struct vkt *t, VkCommandBuffer cb, VkFence fence, int64_t *done)
{
	VkResult r = vkt_submit_one(t, cb, VK_NULL_HANDLE, VK_NULL_HANDLE, fence);

	if (r == VK_SUCCESS)
		r = vkWaitForFences(t->device, 1, &fence, VK_TRUE,
				    (uint64_t)(IN_WAIT_MS + 5000) * 1000000);
	*done = now_ns();
	return r;
}

/* A read of the dma-buf behind the pending foreign fence f: the verdict into it. */
static void
in_read(struct vkt *t, const struct vkt_buffer *src, struct sbk_fence *f, bool acquire,
	struct doctor_item *it)
{
	struct vkt_buffer dst;
	VkCommandBuffer cb;
	VkFence fence = vkt_fence(t);
	VkBufferCopy region = {.size = IN_BYTES};
	struct signaller sig = {.f = f};
	int64_t t0, done;
	pthread_t th;
	VkResult r;

	if (!fence || vkt_host_buffer(t, IN_BYTES, &dst) != VK_SUCCESS ||
	    vkt_cmd_begin(t, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, &cb) != VK_SUCCESS) {
		doctor_item_set(it, DOCTOR_UNKNOWN, "setting up the read: %s", t->why);
		return;
	}
	if (acquire)
		vkt_transfer_buffer(t, cb, src->buffer, true, VK_PIPELINE_STAGE_TRANSFER_BIT,
				    VK_ACCESS_TRANSFER_READ_BIT);
	vkCmdCopyBuffer(cb, src->buffer, dst.buffer, 1, &region);
	if (vkEndCommandBuffer(cb) != VK_SUCCESS) {
		doctor_item_set(it, DOCTOR_UNKNOWN, "recording the read failed");
		return;
	}
	t0 = now_ns();
	sig.at = t0 + (int64_t)IN_WAIT_MS * 1000000;
	if (pthread_create(&th, NULL, signal_later, &sig) != 0) {
		doctor_item_set(it, DOCTOR_UNKNOWN, "no thread to signal the vgem fence");
		return;
	}
	r = submit_read(t, cb, fence, &done);
	pthread_join(th, NULL);
	if (r != VK_SUCCESS)
		doctor_item_set(it, DOCTOR_UNKNOWN,
				"the read did not finish, even after the vgem "
				"fence signalled (%s)",
				vkt_result_name(r));
	else if (done < sig.signalled)
		doctor_item_set(it, DOCTOR_NO,
				"its read of the dma-buf finished after %.0f ms while "
				"the vgem fence on it was still pending",
				(double)(done - t0) / 1e6);
	else
		doctor_item_set(it, DOCTOR_YES,
				"its read waited %.0f ms for the vgem fence on the "
				"dma-buf and finished %.0f ms after it signalled",
				(double)(sig.signalled - t0) / 1e6,
				(double)(done - sig.signalled) / 1e6);
	vkDeviceWaitIdle(t->device);
	vkDestroyFence(t->device, fence, NULL);
	vkt_buffer_destroy(t, &dst);
}

void
doctor_vk_measure_in(struct vkt *t, bool acquire, struct doctor_item *it)
{
	struct sbk_fence f;
	struct vkt_buffer b;
	int vgem, dmabuf = -1, ret;
	bool created;

	if (!t->has_dmabuf) {
		doctor_item_set(it, DOCTOR_UNKNOWN, "the device exports no dma-buf memory");
		return;
	}
	vgem = sbk_vgem_open();
	if (vgem < 0) {
		doctor_item_set(
			it, DOCTOR_UNKNOWN, "%s",
			vgem == -ENODEV
				? "no source of a foreign fence: no vgem (modprobe vgem to measure)"
				: "no source of a foreign fence: vgem's card node cannot be opened "
				  "(permissions: run as root to measure)");
		return;
	}
	if (vkt_export_buffer(t, IN_BYTES, &b, &dmabuf) != VK_SUCCESS) {
		doctor_item_set(it, DOCTOR_UNKNOWN, "the driver exports no dma-buf buffer (%s)",
				export_error(t));
		close(vgem);
		return;
	}
	ret = sbk_fence_create(vgem, true, &f);
	created = ret == 0;
	if (ret == 0)
		ret = sb_dmabuf_import_sync_file(dmabuf, SB_ACCESS_WRITE, f.sync_file);
	if (ret < 0)
		doctor_item_set(it, DOCTOR_UNKNOWN, "a vgem fence onto its dma-buf: %s",
				strerror(-ret));
	else
		in_read(t, &b, &f, acquire, it);
	if (created) {
		sbk_fence_signal(&f);
		sbk_fence_destroy(&f);
	}
	vkt_buffer_destroy(t, &b);
	close(dmabuf);
	close(vgem);
}
