/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-handoff's producer (the child process; handoff.c has the
 * picture): a vgem dumb buffer whose dma-buf goes to the consumer once; per
 * frame a WRITE fence attached, "frame N submitted", the frame written band
 * by band over --render-ms, the fence signalled, and the consumer's release
 * awaited before the next frame overwrites it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "demo_util.h"
#include "handoff.h"

#define BUF_WIDTH 256
#define BUF_HEIGHT 256
#define RENDER_BANDS 32

static void
fill_rows(const struct demo_vgem_buf *b, unsigned frame, uint32_t row_begin, uint32_t row_end)
{
	for (uint32_t y = row_begin; y < row_end; y++) {
		uint32_t *row = (uint32_t *)((uint8_t *)b->map + (size_t)y * b->pitch);
		for (uint32_t x = 0; x < b->width; x++)
			row[x] = handoff_pattern(frame, (size_t)y * b->width + x);
	}
}

static int
producer_frame(int vgem_fd, const struct demo_vgem_buf *b, int sock, const struct options *opt,
	       unsigned frame)
{
	struct msg m = { .type = MSG_FRAME_SUBMITTED, .frame = frame };
	int64_t render_ns = (int64_t)opt->render_ms * 1000000, t0;
	uint32_t fence;
	int ret;

	/* "Submit": from now on the buffer has a pending writer. */
	ret = demo_vgem_fence_attach(vgem_fd, b->handle, true, &fence);
	if (ret < 0) {
		fprintf(stderr, "%s: producer: frame %u: DRM_IOCTL_VGEM_FENCE_ATTACH: %s\n", prog,
			frame, strerror(-ret));
		return ret;
	}
	ret = demo_send(sock, &m, sizeof(m), NULL, 0);
	if (ret < 0) {
		fprintf(stderr, "%s: producer: frame %u: sending to the consumer: %s\n", prog,
			frame, strerror(-ret));
		/* Signal anyway so nobody waits for a frame that never comes. */
		demo_vgem_fence_signal(vgem_fd, fence);
		return ret;
	}

	/* "Render": the GPU latency, then the writes, one band at a time. */
	t0 = now_ns();
	for (uint32_t k = 0; k < RENDER_BANDS; k++) {
		demo_sleep_until_ns(t0 + render_ns * (k + 1) / RENDER_BANDS);
		fill_rows(b, frame, b->height * k / RENDER_BANDS,
			  b->height * (k + 1) / RENDER_BANDS);
	}

	/* "Completion interrupt": the frame is complete. */
	ret = demo_vgem_fence_signal(vgem_fd, fence);
	if (ret < 0) {
		fprintf(stderr, "%s: producer: frame %u: DRM_IOCTL_VGEM_FENCE_SIGNAL: %s%s\n", prog,
			frame, strerror(-ret),
			ret == -ETIMEDOUT ? " (the fence expired: vgem signals it after 10 s)"
					  : "");
		return ret;
	}
	if (opt->verbose)
		printf("producer: frame %u rendered in %.1f ms, fence signalled\n", frame,
		       (now_ns() - t0) * MS_PER_NS);

	/* The next frame overwrites the buffer: wait until the consumer is done. */
	ret = handoff_recv(sock, MSG_FRAME_RELEASED, &frame, &m, NULL);
	if (ret < 0)
		fprintf(stderr, "%s: producer: frame %u: waiting for the release: %s\n", prog,
			frame, handoff_peer_error(ret, "the consumer went away"));
	return ret;
}

int
handoff_run_producer(int sock, const struct options *opt, const char *device)
{
	struct demo_vgem_buf b = { .dmabuf_fd = -1 };
	int fds_before = demo_count_fds();
	int vgem_fd, ret;

	vgem_fd = open(device, O_RDWR | O_CLOEXEC);
	if (vgem_fd < 0) {
		ret = -errno;
		fprintf(stderr, "%s: producer: open %s: %s\n", prog, device, strerror(-ret));
		return ret;
	}
	ret = demo_drm_driver_is(vgem_fd, "vgem");
	if (ret <= 0) {
		fprintf(stderr, "%s: producer: %s is not a vgem node (%s)\n", prog, device,
			ret < 0 ? strerror(-ret) : "other driver");
		ret = ret < 0 ? ret : -ENODEV;
		goto out;
	}
	ret = demo_vgem_buf_create(vgem_fd, BUF_WIDTH, BUF_HEIGHT, 32, &b);
	if (ret == 0)
		ret = demo_vgem_buf_map(&b);
	if (ret < 0) {
		fprintf(stderr, "%s: producer: a mapped dumb buffer on %s: %s%s\n", prog, device,
			strerror(-ret),
			ret == -EACCES ? " (a render node? dumb buffers need the card node)" : "");
		goto out;
	}
	/* Frame 0: what the consumer finds before the first frame is rendered. */
	fill_rows(&b, 0, 0, b.height);

	struct msg m = { .type = MSG_BUFFER, .width = b.width, .height = b.height,
			 .stride = b.pitch, .size = b.size };
	ret = demo_send(sock, &m, sizeof(m), &b.dmabuf_fd, 1);
	if (ret < 0) {
		fprintf(stderr, "%s: producer: sending the dma-buf: %s\n", prog, strerror(-ret));
		goto out;
	}
	/* The consumer holds its own reference now; ours is not needed. */
	demo_fd_clear(&b.dmabuf_fd);

	for (unsigned f = 1; f <= opt->frames && ret == 0; f++)
		ret = producer_frame(vgem_fd, &b, sock, opt, f);
out:
	demo_vgem_buf_destroy(&b);
	/* Closing the vgem fd also signals any vgem fence still pending. */
	demo_fd_clear(&vgem_fd);
	int fds_after = demo_count_fds();
	if (fds_before >= 0 && fds_after != fds_before) {
		fprintf(stderr, "%s: producer: %d fds open at the end, %d at the start\n", prog,
			fds_after, fds_before);
		if (ret == 0)
			ret = -EBADFD;
	}
	return ret;
}
