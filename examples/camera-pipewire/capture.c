/* SPDX-License-Identifier: MIT */
/*
 * The producer's camera: vivid, the kernel's virtual V4L2 camera, capturing
 * YUYV into its own mmap buffers (examples/camera/with-vivid.sh loads it in
 * the test guest). V4L2 has no fences: a dequeued buffer is complete, and
 * the producer copies it out and gives it straight back.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "camera_pw.h"

#define CAPTURE_BUFFERS 4

struct capture {
	int fd;
	uint32_t width, height, stride;
	unsigned count;
	void *maps[CAPTURE_BUFFERS];
	size_t sizes[CAPTURE_BUFFERS];
	bool streaming;
};

/* Set the control called `name` (vivid's own controls have no public ids). */
static int
set_control(int fd, const char *name, int32_t value)
{
	struct v4l2_queryctrl q = { .id = V4L2_CTRL_FLAG_NEXT_CTRL };

	while (demo_ioctl(fd, VIDIOC_QUERYCTRL, &q) == 0) {
		if (strcmp((const char *)q.name, name) == 0) {
			struct v4l2_control c = { .id = q.id, .value = value };
			return demo_ioctl(fd, VIDIOC_S_CTRL, &c);
		}
		q.id |= V4L2_CTRL_FLAG_NEXT_CTRL;
	}
	return -ENOENT;
}

/* Best effort: a camera that keeps its own rate or pattern still works. */
static void
set_rate_and_motion(struct capture *c, unsigned fps)
{
	struct v4l2_streamparm parm = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
	int ret;

	parm.parm.capture.timeperframe.numerator = 1;
	parm.parm.capture.timeperframe.denominator = fps;
	ret = demo_ioctl(c->fd, VIDIOC_S_PARM, &parm);
	if (ret < 0)
		fprintf(stderr,
			PROG ": producer: VIDIOC_S_PARM %u fps: %s (keeping vivid's rate)\n", fps,
			strerror(-ret));
	/* vivid's menu: 0 move left fast .. 3 no movement .. 6 move right fast. */
	ret = set_control(c->fd, "Horizontal Movement", 6);
	if (ret < 0)
		fprintf(stderr, PROG ": producer: vivid's 'Horizontal Movement' control: %s\n",
			strerror(-ret));
}

static int
map_buffers(struct capture *c)
{
	struct v4l2_requestbuffers req = {
		.count = CAPTURE_BUFFERS, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
		.memory = V4L2_MEMORY_MMAP,
	};
	int ret = demo_ioctl(c->fd, VIDIOC_REQBUFS, &req);

	if (ret < 0) {
		fprintf(stderr, PROG ": producer: VIDIOC_REQBUFS: %s\n", strerror(-ret));
		return ret;
	}
	if (req.count < 2 || req.count > CAPTURE_BUFFERS) {
		fprintf(stderr, PROG ": producer: vivid gave %u buffers\n", req.count);
		return -EINVAL;
	}
	c->count = req.count;
	for (unsigned i = 0; i < c->count; i++) {
		struct v4l2_buffer vb = { .index = i, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
					  .memory = V4L2_MEMORY_MMAP };
		void *p;

		ret = demo_ioctl(c->fd, VIDIOC_QUERYBUF, &vb);
		if (ret < 0) {
			fprintf(stderr, PROG ": producer: VIDIOC_QUERYBUF: %s\n", strerror(-ret));
			return ret;
		}
		p = mmap(NULL, vb.length, PROT_READ, MAP_SHARED, c->fd, vb.m.offset);
		if (p == MAP_FAILED) {
			ret = -errno;
			fprintf(stderr, PROG ": producer: mmap of capture buffer %u: %s\n", i,
				strerror(-ret));
			return ret;
		}
		c->maps[i] = p;
		c->sizes[i] = vb.length;
		ret = demo_ioctl(c->fd, VIDIOC_QBUF, &vb);
		if (ret < 0) {
			fprintf(stderr, PROG ": producer: VIDIOC_QBUF: %s\n", strerror(-ret));
			return ret;
		}
	}
	return 0;
}

int
capture_open(uint32_t width, uint32_t height, unsigned fps, struct capture **out)
{
	struct v4l2_format fmt = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
	int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	struct capture *c;
	int ret;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = demo_vivid_open();
	if (c->fd < 0) {
		fprintf(stderr, PROG ": producer: no vivid capture device (load it: "
			"examples/camera/with-vivid.sh)\n");
		ret = c->fd;
		goto fail;
	}
	fmt.fmt.pix.width = width;
	fmt.fmt.pix.height = height;
	fmt.fmt.pix.pixelformat = V4L2_PIX_FMT_YUYV;
	fmt.fmt.pix.field = V4L2_FIELD_NONE;
	ret = demo_ioctl(c->fd, VIDIOC_S_FMT, &fmt);
	if (ret < 0) {
		fprintf(stderr, PROG ": producer: VIDIOC_S_FMT: %s\n", strerror(-ret));
		goto fail;
	}
	if (fmt.fmt.pix.width != width || fmt.fmt.pix.height != height ||
	    fmt.fmt.pix.pixelformat != V4L2_PIX_FMT_YUYV) {
		fprintf(stderr,
			PROG ": producer: vivid offers %ux%u, not YUYV %ux%u (try --size "
			     "320x180 or 640x360)\n",
			fmt.fmt.pix.width, fmt.fmt.pix.height, width, height);
		ret = -EINVAL;
		goto fail;
	}
	c->width = width;
	c->height = height;
	c->stride = fmt.fmt.pix.bytesperline;
	set_rate_and_motion(c, fps);
	ret = map_buffers(c);
	if (ret < 0)
		goto fail;
	ret = demo_ioctl(c->fd, VIDIOC_STREAMON, &type);
	if (ret < 0) {
		fprintf(stderr, PROG ": producer: VIDIOC_STREAMON: %s\n", strerror(-ret));
		goto fail;
	}
	c->streaming = true;
	*out = c;
	return 0;
fail:
	capture_close(c);
	return ret;
}

int
capture_fd(const struct capture *c)
{
	return c->fd;
}

uint32_t
capture_stride(const struct capture *c)
{
	return c->stride;
}

int
capture_take_latest(struct capture *c, uint8_t *dst)
{
	int copied = 0;

	for (;;) {
		struct v4l2_buffer vb = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
					  .memory = V4L2_MEMORY_MMAP };
		int ret = ioctl(c->fd, VIDIOC_DQBUF, &vb) < 0 ? -errno : 0;

		if (ret == -EINTR)
			continue;
		if (ret == -EAGAIN)
			return copied;
		if (ret < 0) {
			fprintf(stderr, PROG ": producer: VIDIOC_DQBUF: %s\n", strerror(-ret));
			return ret;
		}
		if (vb.index < c->count && !(vb.flags & V4L2_BUF_FLAG_ERROR) &&
		    (size_t)c->stride * c->height <= c->sizes[vb.index]) {
			memcpy(dst, c->maps[vb.index], (size_t)c->stride * c->height);
			copied = 1;
		}
		ret = demo_ioctl(c->fd, VIDIOC_QBUF, &vb);
		if (ret < 0) {
			fprintf(stderr, PROG ": producer: VIDIOC_QBUF: %s\n", strerror(-ret));
			return ret;
		}
	}
}

void
capture_close(struct capture *c)
{
	if (!c)
		return;
	if (c->streaming) {
		int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
		demo_ioctl(c->fd, VIDIOC_STREAMOFF, &type);
	}
	for (unsigned i = 0; i < CAPTURE_BUFFERS; i++)
		if (c->maps[i])
			munmap(c->maps[i], c->sizes[i]);
	if (c->fd >= 0) {
		struct v4l2_requestbuffers req = { .count = 0, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
						   .memory = V4L2_MEMORY_MMAP };
		demo_ioctl(c->fd, VIDIOC_REQBUFS, &req);
		close(c->fd);
	}
	free(c);
}
