/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-camera's source thread: a vgem producer that emits write
 * fences (an ISP, a GPU), or vivid, a V4L2 camera without fences.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <linux/videodev2.h>
#include <sys/mman.h>

#include "camera.h"

/* ---- the vgem source ---------------------------------------------------- */

int
camera_vgem_setup(struct app *a)
{
	a->width = VGEM_WIDTH;
	a->height = VGEM_HEIGHT;
	for (unsigned i = 0; i < a->count; i++) {
		struct buffer *b = &a->bufs[i];
		int ret = demo_vgem_buf_create(a->vgem_fd, VGEM_WIDTH, VGEM_HEIGHT, 32, &b->vgem);
		if (ret == 0)
			ret = demo_vgem_buf_map(&b->vgem);
		if (ret < 0) {
			fprintf(stderr, PROG ": vgem buffer: %s\n", strerror(-ret));
			return ret;
		}
		b->dmabuf = dup(b->vgem.dmabuf_fd);
		b->map = b->vgem.map;
		b->size = b->vgem.size;
		a->stride = b->vgem.pitch;
	}
	return 0;
}

static int
vgem_produce(struct app *a)
{
	for (uint64_t f = 0; f < a->opt.frames; f++) {
		unsigned j;
		int ret = sb_buffer_queue_dequeue(a->queue, TIMEOUT_NS, &j);
		if (ret < 0) {
			fprintf(stderr, PROG ": source: dequeue: %s\n", strerror(-ret));
			return ret;
		}
		struct buffer *b = &a->bufs[j];
		bool busy = false;
		sb_dmabuf_is_busy(b->dmabuf, SB_ACCESS_WRITE, &busy);
		if (busy) {
			pthread_mutex_lock(&a->lock);
			a->c.reused_busy++;
			pthread_mutex_unlock(&a->lock);
		}
		/* "Submit": a pending write fence, the frame's acquire fence. */
		uint32_t fence_id = 0;
		int acquire = -1;
		ret = demo_vgem_fence_attach(a->vgem_fd, b->vgem.handle, true, &fence_id);
		bool fenced = ret == 0;
		if (ret < 0 && ret != -EBUSY) {
			fprintf(stderr, PROG ": source: vgem fence: %s\n", strerror(-ret));
			return ret;
		}
		/* -EBUSY: a reader's fence is still pending (only without the
		 * queue's wait): the frame is written without a fence, over it. */
		if (fenced &&
		    (ret = sb_dmabuf_export_sync_file(b->dmabuf, SB_ACCESS_READ, &acquire)) < 0) {
			fprintf(stderr, PROG ": source: export: %s\n", strerror(-ret));
			demo_vgem_fence_signal(a->vgem_fd, fence_id);
			return ret;
		}
		b->frame = f;
		ret = sb_buffer_queue_queue(a->queue, j, acquire);
		if (ret < 0) {
			demo_fd_clear(&acquire);
			if (fenced)
				demo_vgem_fence_signal(a->vgem_fd, fence_id);
			return ret;
		}
		/* "Render" after the submit, as a GPU or ISP would. */
		uint32_t *px = b->map;
		for (size_t i = 0; i < b->size / 4; i++)
			px[i] = vgem_pattern(f, i);
		if (fenced)
			demo_vgem_fence_signal(a->vgem_fd, fence_id);
		if (f % 500 == 0)
			sample_fds(a);
	}
	return 0;
}

/* ---- the vivid source --------------------------------------------------- */

int
camera_vivid_setup(struct app *a)
{
	int fd = demo_vivid_open();
	if (fd < 0) {
		fprintf(stderr, PROG
			": no vivid capture device (load it: examples/camera/with-vivid.sh)\n");
		return -ENODEV;
	}
	a->video_fd = fd;

	struct v4l2_format fmt = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
	fmt.fmt.pix.width = a->opt.width;
	fmt.fmt.pix.height = a->opt.height;
	fmt.fmt.pix.pixelformat = V4L2_PIX_FMT_YUYV;
	fmt.fmt.pix.field = V4L2_FIELD_NONE;
	int ret = demo_ioctl(fd, VIDIOC_S_FMT, &fmt);
	if (ret < 0) {
		fprintf(stderr, PROG ": VIDIOC_S_FMT: %s\n", strerror(-ret));
		return ret;
	}
	a->width = fmt.fmt.pix.width;
	a->height = fmt.fmt.pix.height;
	a->stride = fmt.fmt.pix.bytesperline;
	a->fourcc = fmt.fmt.pix.pixelformat;

	struct v4l2_requestbuffers req = {
		.count = a->count, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE, .memory = V4L2_MEMORY_MMAP,
	};
	ret = demo_ioctl(fd, VIDIOC_REQBUFS, &req);
	if (ret < 0) {
		fprintf(stderr, PROG ": VIDIOC_REQBUFS: %s\n", strerror(-ret));
		return ret;
	}
	if (req.count != a->count) {
		fprintf(stderr, PROG ": vivid gave %u buffers, not %u\n", req.count, a->count);
		return -EINVAL;
	}
	for (unsigned i = 0; i < a->count; i++) {
		struct v4l2_buffer vb = { .index = i, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
					  .memory = V4L2_MEMORY_MMAP };
		ret = demo_ioctl(fd, VIDIOC_QUERYBUF, &vb);
		if (ret < 0)
			return ret;
		struct buffer *b = &a->bufs[i];
		b->size = vb.length;
		void *p =
			mmap(NULL, vb.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, vb.m.offset);
		if (p == MAP_FAILED)
			return -errno;
		b->map = p;
		/* The buffer as a dma-buf, for the consumer and for its fences. */
		struct v4l2_exportbuffer exp = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE, .index = i,
						 .flags = O_RDWR | O_CLOEXEC };
		ret = demo_ioctl(fd, VIDIOC_EXPBUF, &exp);
		if (ret < 0) {
			fprintf(stderr, PROG ": VIDIOC_EXPBUF: %s\n", strerror(-ret));
			return ret;
		}
		b->dmabuf = exp.fd;
	}
	return 0;
}

static int
vivid_qbuf(struct app *a, unsigned i)
{
	struct v4l2_buffer vb = { .index = i, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
				  .memory = V4L2_MEMORY_MMAP };
	int ret = demo_ioctl(a->video_fd, VIDIOC_QBUF, &vb);
	if (ret < 0)
		fprintf(stderr, PROG ": VIDIOC_QBUF %u: %s\n", i, strerror(-ret));
	return ret;
}

static int
vivid_produce(struct app *a)
{
	int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	int ret;

	/* Every buffer starts with the driver. */
	for (unsigned i = 0; i < a->count; i++) {
		unsigned j;
		ret = sb_buffer_queue_dequeue(a->queue, 0, &j);
		if (ret == 0)
			ret = vivid_qbuf(a, j);
		if (ret < 0)
			return ret;
	}
	ret = demo_ioctl(a->video_fd, VIDIOC_STREAMON, &type);
	if (ret < 0) {
		fprintf(stderr, PROG ": VIDIOC_STREAMON: %s\n", strerror(-ret));
		return ret;
	}
	bool first = true;
	uint32_t last_seq = 0;
	for (uint64_t f = 0; f < a->opt.frames; f++) {
		struct pollfd pfd = { .fd = a->video_fd, .events = POLLIN };
		int pr = poll(&pfd, 1, 20000);
		if (pr <= 0) {
			fprintf(stderr, PROG ": source: no frame from vivid in 20 s\n");
			ret = -ETIME;
			break;
		}
		struct v4l2_buffer vb = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
					  .memory = V4L2_MEMORY_MMAP };
		ret = demo_ioctl(a->video_fd, VIDIOC_DQBUF, &vb);
		if (ret < 0) {
			fprintf(stderr, PROG ": VIDIOC_DQBUF: %s\n", strerror(-ret));
			break;
		}
		if (!first && vb.sequence > last_seq + 1) {
			pthread_mutex_lock(&a->lock);
			a->c.dropped += vb.sequence - last_seq - 1;
			pthread_mutex_unlock(&a->lock);
		}
		first = false;
		last_seq = vb.sequence;
		struct buffer *b = &a->bufs[vb.index];
		b->frame = f;
		b->sequence = vb.sequence;
		/* V4L2 has no fences: a dequeued buffer is complete. */
		ret = sb_buffer_queue_queue(a->queue, vb.index, -1);
		if (ret < 0)
			break;

		/* A buffer back for the driver — only once nobody reads it. */
		unsigned j;
		ret = sb_buffer_queue_dequeue(a->queue, TIMEOUT_NS, &j);
		if (ret < 0) {
			fprintf(stderr, PROG ": source: dequeue: %s\n", strerror(-ret));
			break;
		}
		bool busy = false;
		sb_dmabuf_is_busy(a->bufs[j].dmabuf, SB_ACCESS_WRITE, &busy);
		if (busy) {
			pthread_mutex_lock(&a->lock);
			a->c.reused_busy++;
			pthread_mutex_unlock(&a->lock);
		}
		ret = vivid_qbuf(a, j);
		if (ret < 0)
			break;
		if (f % 50 == 0)
			sample_fds(a);
	}
	demo_ioctl(a->video_fd, VIDIOC_STREAMOFF, &type);
	return ret;
}

void *
camera_source_main(void *arg)
{
	struct app *a = arg;
	a->source_ret = a->opt.source == SOURCE_VGEM ? vgem_produce(a) : vivid_produce(a);
	/* No more frames: the consumer drains what is queued, then sees -EPIPE. */
	sb_buffer_queue_close(a->queue);
	return NULL;
}

/* ---- both ----------------------------------------------------------------- */

void
camera_source_teardown(struct app *a)
{
	for (unsigned i = 0; i < MAX_BUFFERS; i++) {
		struct buffer *b = &a->bufs[i];
		if (a->opt.source == SOURCE_VIVID && b->map)
			munmap(b->map, b->size);
		b->map = NULL;
		demo_fd_clear(&b->dmabuf);
		demo_vgem_buf_destroy(&b->vgem);
	}
	if (a->video_fd >= 0) {
		struct v4l2_requestbuffers req = { .count = 0, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
						   .memory = V4L2_MEMORY_MMAP };
		demo_ioctl(a->video_fd, VIDIOC_REQBUFS, &req);
	}
	demo_fd_clear(&a->video_fd);
}
