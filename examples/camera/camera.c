/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-camera: a camera pipeline with a fence contract.
 *
 *   source thread                 sb_buffer_queue              consumer (main thread)
 *   ─────────────                 ───────────────              ──────────────────────
 *   vivid (V4L2):  DQBUF i ──────► queue(i, no fence) ───────► acquire i
 *                                                              read it: Vulkan through the
 *                                                                layer (FOREIGN acquire, copy,
 *                                                                release → READ fence on the
 *                                                                dma-buf), or the CPU
 *                                                              "hold": a pending vgem READ
 *                                                                fence for a random time (an
 *                                                                encoder still reading)
 *                                                              display stage (vivid): EGL/GLES
 *                                                                converts and shows it, the EGL
 *                                                                bridge attaches GL's READ fence
 *                  QBUF j ◄─────── dequeue → j ◄────────────── release_dmabuf(i): the
 *                  only after j's                               buffer's fences = release
 *                  release fence signalled                      fence
 *
 *   vgem: dequeue j, attach a pending WRITE fence, queue(j, that fence), write
 *         the frame, signal — a producer that does emit fences (an ISP, a GPU).
 *
 * The holder thread checks, at the end of each hold and before it signals the
 * hold's fence, that the frame it holds is still the one it acquired
 * (checksum). The source checks that a buffer it gets back has no reader left
 * (sb_dmabuf_is_busy). With SYNCBRIDGE_DISABLE=1 (--no-queue-wait) the queue
 * hands buffers back without waiting for their release fences: the camera or
 * the producer overwrites frames that are still being read, and the checks
 * count it.
 *
 * Prints `frames=N dropped=D reuse_waits=W overwritten=O reused_busy=B torn=T`.
 * Needs root; vivid loaded (with-vivid.sh) for --source vivid; vgem for the
 * holds and the vgem source; lavapipe with dma-buf import for --consumer
 * vulkan (the test guest). Exit: 0 as expected, 1 not, 2 usage, 77 cannot
 * run here.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <syncbridge/syncbridge.h>

#include "demo_util.h"
#include "vk_reader.h"
#ifdef CAMERA_HAVE_EGL
#include "egl_display.h"
#endif

#define PROG "syncbridge-demo-camera"
#define EXIT_USAGE 2
#define EXIT_SKIP 77
#define MAX_BUFFERS 16
#define TIMEOUT_NS (INT64_C(20) * 1000000000)
#define HOLD_POOL 64
#define VGEM_WIDTH 128
#define VGEM_HEIGHT 64
/* fds that may be open while running on top of those at the start: the
 * Vulkan driver's, the queue's and holds' fences (see the fd check). */
#define FD_SLACK 64

enum source_kind { SOURCE_VIVID, SOURCE_VGEM };

struct options {
	enum source_kind source;
	unsigned frames;
	unsigned buffers;
	unsigned hold_ms;   /* the consumer holds each frame 0..hold_ms */
	bool vulkan;        /* consumer: Vulkan through the layer, else CPU */
	int display;        /* EGL display stage: 1 on, 0 off, -1 default (vivid: on) */
	bool no_wait;       /* SYNCBRIDGE_DISABLE=1 */
	bool expect_race;
	bool mailbox;
	unsigned seed;
	uint32_t width, height; /* vivid capture size */
	const char *output;
	const char *layer_dir;
	bool verbose;
};

struct counters {
	uint64_t frames, dropped, overwritten, reused_busy, torn, holds, hold_skipped;
	int fds_max;
};

/* One buffer: the same index in V4L2, the queue and the consumer. */
struct buffer {
	int dmabuf;     /* owned */
	void *map;      /* CPU mapping (MMAP buffer or vgem dumb buffer) */
	size_t size;
	struct demo_vgem_buf vgem; /* SOURCE_VGEM */
	/* What the producer put in it (set before queue, read after acquire). */
	uint64_t frame;
	uint32_t sequence;
};

/* A scratch vgem bo whose pending WRITE fence stands for a held read. */
struct hold_fence {
	struct demo_vgem_buf bo;
	uint32_t fence_id;
	bool busy;
};

struct hold {
	bool used;
	unsigned buffer;
	uint64_t frame;
	uint64_t checksum;
	int64_t until_ns;
	struct hold_fence *fence;
};

struct app {
	struct options opt;
	struct sb_buffer_queue *queue;
	struct buffer bufs[MAX_BUFFERS];
	unsigned count;
	uint32_t width, height, stride, fourcc;
	int vgem_fd;
	int video_fd;
	struct vk_reader *vk;
#ifdef CAMERA_HAVE_EGL
	struct egl_display *disp;
#endif
	/* holder thread */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	struct hold holds[HOLD_POOL];
	struct hold_fence fences[HOLD_POOL];
	struct counters c;
	int source_ret;
};

/* ---- helpers ------------------------------------------------------------ */

static uint64_t
checksum(const void *p, size_t n)
{
	const uint64_t *w = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n / 8; i++)
		h = (h ^ w[i]) * 1099511628211ull;
	return h;
}

/* CPU access to a dma-buf mapping, bracketed for cache coherency. */
static void
cpu_access(int dmabuf, bool start)
{
	struct dma_buf_sync s = {
		.flags = (start ? DMA_BUF_SYNC_START : DMA_BUF_SYNC_END) | DMA_BUF_SYNC_READ,
	};
	demo_ioctl(dmabuf, DMA_BUF_IOCTL_SYNC, &s);
}

static inline uint32_t
vgem_pattern(uint64_t frame, size_t i)
{
	return (uint32_t)(frame & 0xff) << 24 | (uint32_t)(i & 0xffffff);
}

static void
sample_fds(struct app *a)
{
	int n = demo_count_fds();
	if (n > a->c.fds_max)
		a->c.fds_max = n;
}

/* ---- the vgem source ---------------------------------------------------- */

static int
vgem_setup(struct app *a)
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
		if (fenced && (ret = sb_dmabuf_export_sync_file(b->dmabuf, SB_ACCESS_READ, &acquire)) < 0) {
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

static int
xioctl(int fd, unsigned long req, void *arg)
{
	return demo_ioctl(fd, req, arg);
}

static int
vivid_open(void)
{
	for (int i = 0; i < 64; i++) {
		char path[32];
		snprintf(path, sizeof(path), "/dev/video%d", i);
		int fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		struct v4l2_capability cap = { 0 };
		if (xioctl(fd, VIDIOC_QUERYCAP, &cap) == 0 &&
		    strcmp((const char *)cap.driver, "vivid") == 0 &&
		    (cap.device_caps & V4L2_CAP_VIDEO_CAPTURE) &&
		    (cap.device_caps & V4L2_CAP_STREAMING))
			return fd;
		close(fd);
	}
	return -ENODEV;
}

static int
vivid_setup(struct app *a)
{
	int fd = vivid_open();
	if (fd < 0) {
		fprintf(stderr, PROG ": no vivid capture device (load it: examples/camera/with-vivid.sh)\n");
		return -ENODEV;
	}
	a->video_fd = fd;

	struct v4l2_format fmt = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
	fmt.fmt.pix.width = a->opt.width;
	fmt.fmt.pix.height = a->opt.height;
	fmt.fmt.pix.pixelformat = V4L2_PIX_FMT_YUYV;
	fmt.fmt.pix.field = V4L2_FIELD_NONE;
	int ret = xioctl(fd, VIDIOC_S_FMT, &fmt);
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
	ret = xioctl(fd, VIDIOC_REQBUFS, &req);
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
		ret = xioctl(fd, VIDIOC_QUERYBUF, &vb);
		if (ret < 0)
			return ret;
		struct buffer *b = &a->bufs[i];
		b->size = vb.length;
		void *p = mmap(NULL, vb.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, vb.m.offset);
		if (p == MAP_FAILED)
			return -errno;
		b->map = p;
		/* The buffer as a dma-buf, for the consumer and for its fences. */
		struct v4l2_exportbuffer exp = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE, .index = i,
						 .flags = O_RDWR | O_CLOEXEC };
		ret = xioctl(fd, VIDIOC_EXPBUF, &exp);
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
	int ret = xioctl(a->video_fd, VIDIOC_QBUF, &vb);
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
	ret = xioctl(a->video_fd, VIDIOC_STREAMON, &type);
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
		ret = xioctl(a->video_fd, VIDIOC_DQBUF, &vb);
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
	xioctl(a->video_fd, VIDIOC_STREAMOFF, &type);
	return ret;
}

static void *
source_main(void *arg)
{
	struct app *a = arg;
	a->source_ret = a->opt.source == SOURCE_VGEM ? vgem_produce(a) : vivid_produce(a);
	/* No more frames: the consumer drains what is queued, then sees -EPIPE. */
	sb_buffer_queue_close(a->queue);
	return NULL;
}

/* ---- the holder: reads that go on after the consumer released ------------ */

static struct hold_fence *
hold_fence_get(struct app *a)
{
	for (unsigned i = 0; i < HOLD_POOL; i++) {
		struct hold_fence *h = &a->fences[i];
		if (h->busy)
			continue;
		if (!h->bo.handle && demo_vgem_buf_create(a->vgem_fd, 1024, 1, 32, &h->bo) < 0)
			return NULL;
		if (demo_vgem_fence_attach(a->vgem_fd, h->bo.handle, true, &h->fence_id) < 0)
			return NULL;
		h->busy = true;
		return h;
	}
	return NULL;
}

/*
 * Hold buffer i for hold_ns: its dma-buf gets a pending READ fence (the
 * scratch bo's write fence) that the holder signals after checking the frame.
 */
static int
hold_start(struct app *a, unsigned i, uint64_t sum, int64_t hold_ns)
{
	pthread_mutex_lock(&a->lock);
	struct hold_fence *hf = hold_fence_get(a);
	struct hold *slot = NULL;
	for (unsigned k = 0; k < HOLD_POOL && !slot; k++)
		if (!a->holds[k].used)
			slot = &a->holds[k];
	if (!hf || !slot) {
		if (hf) {
			demo_vgem_fence_signal(a->vgem_fd, hf->fence_id);
			hf->busy = false;
		}
		a->c.hold_skipped++;
		pthread_mutex_unlock(&a->lock);
		return 0;
	}
	int sync_file = -1;
	int ret = sb_dmabuf_export_sync_file(hf->bo.dmabuf_fd, SB_ACCESS_READ, &sync_file);
	if (ret == 0)
		ret = sb_dmabuf_import_sync_file(a->bufs[i].dmabuf, SB_ACCESS_READ, sync_file);
	demo_fd_clear(&sync_file);
	if (ret < 0) {
		fprintf(stderr, PROG ": hold fence: %s\n", strerror(-ret));
		demo_vgem_fence_signal(a->vgem_fd, hf->fence_id);
		hf->busy = false;
		pthread_mutex_unlock(&a->lock);
		return ret;
	}
	*slot = (struct hold){ .used = true, .buffer = i, .frame = a->bufs[i].frame,
			       .checksum = sum, .until_ns = demo_now_ns() + hold_ns, .fence = hf };
	a->c.holds++;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

static void *
holder_main(void *arg)
{
	struct app *a = arg;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct hold *next = NULL;
		for (unsigned k = 0; k < HOLD_POOL; k++)
			if (a->holds[k].used && (!next || a->holds[k].until_ns < next->until_ns))
				next = &a->holds[k];
		if (!next) {
			if (a->stop)
				break;
			pthread_cond_wait(&a->cond, &a->lock);
			continue;
		}
		int64_t now = demo_now_ns();
		if (next->until_ns > now) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			int64_t t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + (next->until_ns - now);
			ts.tv_sec = t / 1000000000;
			ts.tv_nsec = t % 1000000000;
			pthread_cond_timedwait(&a->cond, &a->lock, &ts);
			continue;
		}
		/* The read ends: is the frame still the one we were reading? */
		struct buffer *b = &a->bufs[next->buffer];
		cpu_access(b->dmabuf, true);
		uint64_t sum = checksum(b->map, b->size);
		cpu_access(b->dmabuf, false);
		if (sum != next->checksum) {
			a->c.overwritten++;
			if (a->c.overwritten <= 3)
				printf("consumer: frame %" PRIu64 " (buffer %u) was overwritten while it "
				       "was still being read\n", next->frame, next->buffer);
		}
		demo_vgem_fence_signal(a->vgem_fd, next->fence->fence_id);
		next->fence->busy = false;
		next->used = false;
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* ---- the consumer ------------------------------------------------------- */

static void
save_frame(struct app *a, const uint8_t *data, uint64_t frame)
{
	if (!a->opt.output || a->opt.source != SOURCE_VIVID)
		return;
	uint8_t *rgb = malloc((size_t)a->width * a->height * 3);
	if (!rgb)
		return;
#ifdef CAMERA_HAVE_EGL
	/* What the display stage showed. */
	if (a->disp && egl_display_read(a->disp, rgb) == 0)
		goto write;
#endif
	/* YUYV (BT.601 limited range) → RGB. */
	for (uint32_t y = 0; y < a->height; y++) {
		const uint8_t *s = data + (size_t)y * a->stride;
		uint8_t *d = rgb + (size_t)y * a->width * 3;
		for (uint32_t x = 0; x < a->width; x++) {
			int Y = s[(x & ~1u) * 2 + (x & 1) * 2], U = s[(x & ~1u) * 2 + 1],
			    V = s[(x & ~1u) * 2 + 3];
			int c = Y - 16, dd = U - 128, e = V - 128;
			int r = (298 * c + 409 * e + 128) >> 8;
			int g = (298 * c - 100 * dd - 208 * e + 128) >> 8;
			int bl = (298 * c + 516 * dd + 128) >> 8;
			d[3 * x] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
			d[3 * x + 1] = (uint8_t)(g < 0 ? 0 : g > 255 ? 255 : g);
			d[3 * x + 2] = (uint8_t)(bl < 0 ? 0 : bl > 255 ? 255 : bl);
		}
	}
#ifdef CAMERA_HAVE_EGL
write:;
#endif
	char path[4096];
	snprintf(path, sizeof(path), "%s/camera-%03" PRIu64 ".png", a->opt.output, frame);
	int ret = demo_png_write(path, rgb, a->width, a->height, a->width * 3, 3);
	if (ret < 0)
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(-ret));
	free(rgb);
}

static int
consume(struct app *a)
{
	uint8_t *copy = NULL;
	size_t copy_size = 0;
	for (unsigned i = 0; i < a->count; i++)
		if (a->bufs[i].size > copy_size)
			copy_size = a->bufs[i].size;
	copy = malloc(copy_size);
	if (!copy)
		return -ENOMEM;

	int ret;
	for (;;) {
		unsigned i;
		int fence = -1;
		ret = sb_buffer_queue_acquire(a->queue, TIMEOUT_NS, &i, &fence);
		if (ret == -EPIPE) {
			ret = 0;
			break;
		}
		if (ret < 0) {
			fprintf(stderr, PROG ": consumer: acquire: %s\n", strerror(-ret));
			break;
		}
		struct buffer *b = &a->bufs[i];
		if (a->vk) {
			/* The layer makes the copy wait for the dma-buf's write fence:
			 * the acquire fence is the same fence, not needed here. */
			demo_fd_clear(&fence);
			ret = vk_reader_read(a->vk, i, copy);
		} else {
			if (fence >= 0)
				ret = sb_sync_file_wait(fence, TIMEOUT_NS);
			demo_fd_clear(&fence);
			cpu_access(b->dmabuf, true);
			memcpy(copy, b->map, b->size);
			cpu_access(b->dmabuf, false);
		}
		if (ret < 0) {
			fprintf(stderr, PROG ": consumer: read: %s\n", strerror(-ret));
			break;
		}
#ifdef CAMERA_HAVE_EGL
		/* The second consumer of the same buffer: the display stage. */
		if (a->disp && (ret = egl_display_show(a->disp, i)) < 0) {
			fprintf(stderr, PROG ": display: %s\n", strerror(-ret));
			break;
		}
#endif
		if (a->opt.source == SOURCE_VGEM) {
			const uint32_t *px = (const uint32_t *)copy;
			size_t bad = 0;
			for (size_t k = 0; k < b->size / 4; k++)
				bad += px[k] != vgem_pattern(b->frame, k);
			if (bad) {
				pthread_mutex_lock(&a->lock);
				a->c.torn++;
				pthread_mutex_unlock(&a->lock);
			}
		}
		uint64_t sum = checksum(copy, b->size);
		if (a->c.frames % (a->opt.frames / 4 ? a->opt.frames / 4 : 1) == 0)
			save_frame(a, copy, b->frame);
		if (a->opt.verbose)
			printf("consumer: frame %" PRIu64 " in buffer %u (sequence %u)\n", b->frame, i,
			       b->sequence);

		unsigned hold_ms = a->opt.hold_ms ? (unsigned)rand() % (a->opt.hold_ms + 1) : 0;
		if (hold_ms > 0) {
			ret = hold_start(a, i, sum, (int64_t)hold_ms * 1000000);
			if (ret < 0)
				break;
		}
		/* Done on our side: the buffer's fences (the layer's READ fence,
		 * the hold's) are the release fence. */
		ret = sb_buffer_queue_release_dmabuf(a->queue, i);
		if (ret < 0) {
			fprintf(stderr, PROG ": consumer: release: %s\n", strerror(-ret));
			break;
		}
		pthread_mutex_lock(&a->lock);
		a->c.frames++;
		pthread_mutex_unlock(&a->lock);
	}
	free(copy);
	return ret;
}

/* ---- main --------------------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [OPTIONS]\n"
		"  --source vivid|vgem  the camera (V4L2 vivid, no fences) or a vgem producer\n"
		"                       with write fences (default vivid)\n"
		"  --frames N           frames to capture (default 60)\n"
		"  --buffers N          buffers, 2..%d (default 4)\n"
		"  --hold-ms N          the consumer keeps reading each frame for a random\n"
		"                       0..N ms after releasing it (default 50)\n"
		"  --consumer vulkan|cpu  read through Vulkan + the layer (default), or the CPU\n"
		"  --display egl|none   the EGL/GLES display stage, a second reader of every\n"
		"                       frame (default: egl for vivid, if built with EGL)\n"
		"  --mailbox            the consumer takes only the newest frame\n"
		"  --no-queue-wait      SYNCBRIDGE_DISABLE=1: buffers go back unfenced\n"
		"  --expect-race        succeed only if a frame was overwritten while read (the control)\n"
		"  --size WxH           vivid capture size (default 320x180)\n"
		"  --seed N             random holds (default 1)\n"
		"  --output DIR         a few camera frames as PNG\n"
		"  --layer-dir DIR      XDG data dir with the layer's manifest\n"
		"  --verbose\n",
		MAX_BUFFERS);
}

static int
parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "source", required_argument, NULL, 's' },
		{ "frames", required_argument, NULL, 'f' },
		{ "buffers", required_argument, NULL, 'b' },
		{ "hold-ms", required_argument, NULL, 'H' },
		{ "consumer", required_argument, NULL, 'c' },
		{ "display", required_argument, NULL, 'd' },
		{ "mailbox", no_argument, NULL, 'm' },
		{ "no-queue-wait", no_argument, NULL, 'n' },
		{ "expect-race", no_argument, NULL, 'x' },
		{ "size", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 'r' },
		{ "output", required_argument, NULL, 'o' },
		{ "layer-dir", required_argument, NULL, 'l' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	*o = (struct options){ .source = SOURCE_VIVID, .frames = 60, .buffers = 4, .hold_ms = 50,
			       .vulkan = true, .display = -1, .seed = 1, .width = 320, .height = 180 };
	int c;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		char *end = "";
		switch (c) {
		case 's':
			if (strcmp(optarg, "vivid") == 0)
				o->source = SOURCE_VIVID;
			else if (strcmp(optarg, "vgem") == 0)
				o->source = SOURCE_VGEM;
			else
				goto bad;
			break;
		case 'f':
			o->frames = (unsigned)strtoul(optarg, &end, 10);
			if (o->frames == 0)
				goto bad;
			break;
		case 'b':
			o->buffers = (unsigned)strtoul(optarg, &end, 10);
			if (o->buffers < 2 || o->buffers > MAX_BUFFERS)
				goto bad;
			break;
		case 'H':
			o->hold_ms = (unsigned)strtoul(optarg, &end, 10);
			if (o->hold_ms > 5000)
				goto bad; /* vgem fences expire after 10 s */
			break;
		case 'c':
			if (strcmp(optarg, "vulkan") == 0)
				o->vulkan = true;
			else if (strcmp(optarg, "cpu") == 0)
				o->vulkan = false;
			else
				goto bad;
			break;
		case 'd':
			if (strcmp(optarg, "egl") == 0)
				o->display = 1;
			else if (strcmp(optarg, "none") == 0)
				o->display = 0;
			else
				goto bad;
			break;
		case 'm':
			o->mailbox = true;
			break;
		case 'n':
			o->no_wait = true;
			break;
		case 'x':
			o->expect_race = true;
			break;
		case 'S':
			if (sscanf(optarg, "%ux%u", &o->width, &o->height) != 2)
				goto bad;
			break;
		case 'r':
			o->seed = (unsigned)strtoul(optarg, &end, 10);
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'l':
			o->layer_dir = optarg;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
		if (*end)
			goto bad;
		continue;
bad:
		fprintf(stderr, PROG ": bad value '%s'\n", optarg);
		return -EINVAL;
	}
	if (optind < argc) {
		usage(stderr);
		return -EINVAL;
	}
	if (getenv("SYNCBRIDGE_DISABLE"))
		o->no_wait = true;
	return 0;
}

static void
setup_environment(struct options *o)
{
	const char *dir = o->layer_dir;
	struct stat st;

#ifdef CAMERA_BUILD_LAYER_DIR
	if (!dir && stat(CAMERA_BUILD_LAYER_DIR "/vulkan/implicit_layer.d", &st) == 0)
		dir = CAMERA_BUILD_LAYER_DIR;
#endif
	if (dir && stat(dir, &st) == 0) {
		const char *old = getenv("XDG_DATA_DIRS");
		char buf[4096];
		snprintf(buf, sizeof(buf), "%s:%s", dir, old && *old ? old : "/usr/local/share:/usr/share");
		setenv("XDG_DATA_DIRS", buf, 1);
	}
	if (o->no_wait)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);
}

static void
teardown(struct app *a)
{
#ifdef CAMERA_HAVE_EGL
	egl_display_destroy(a->disp);
	a->disp = NULL;
#endif
	vk_reader_destroy(a->vk);
	a->vk = NULL;
	sb_buffer_queue_destroy(a->queue);
	a->queue = NULL;
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
		xioctl(a->video_fd, VIDIOC_REQBUFS, &req);
	}
	demo_fd_clear(&a->video_fd);
	for (unsigned i = 0; i < HOLD_POOL; i++)
		demo_vgem_buf_destroy(&a->fences[i].bo);
	demo_fd_clear(&a->vgem_fd);
}

int
main(int argc, char **argv)
{
	static struct app app;
	struct app *a = &app;
	int ret;

	if (parse_args(argc, argv, &a->opt) < 0)
		return EXIT_USAGE;
	setup_environment(&a->opt);
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand(a->opt.seed);
	a->count = a->opt.buffers;
	a->video_fd = -1;
	for (unsigned i = 0; i < MAX_BUFFERS; i++) {
		a->bufs[i].dmabuf = -1;
		a->bufs[i].vgem.dmabuf_fd = -1;
	}
	for (unsigned i = 0; i < HOLD_POOL; i++)
		a->fences[i].bo.dmabuf_fd = -1;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);

	struct sb_buffer_queue_stats st = { 0 };
	int fds_start = demo_count_fds();
	printf("%s: %u frames from %s, %u buffers, consumer: %s, holds up to %u ms, queue %s%s\n",
	       PROG, a->opt.frames, a->opt.source == SOURCE_VGEM ? "a vgem producer (write fences)"
								  : "vivid (V4L2, no fences)",
	       a->opt.buffers, a->opt.vulkan ? "Vulkan + layer" : "CPU", a->opt.hold_ms,
	       a->opt.mailbox ? "mailbox" : "FIFO",
	       a->opt.no_wait ? ", release-fence waits OFF (SYNCBRIDGE_DISABLE=1)" : "");

	a->vgem_fd = demo_vgem_open();
	if (a->vgem_fd < 0) {
		fprintf(stderr, PROG ": no vgem (run in the test guest, as root)\n");
		return EXIT_SKIP;
	}
	ret = a->opt.source == SOURCE_VGEM ? vgem_setup(a) : vivid_setup(a);
	if (ret < 0)
		goto out;
	if (a->opt.source == SOURCE_VIVID)
		printf("camera: vivid %ux%u YUYV, %u bytes per row\n", a->width, a->height, a->stride);
	if (a->opt.output && (ret = demo_mkdir_p(a->opt.output)) < 0)
		goto out;

	ret = sb_buffer_queue_create(a->count, a->opt.mailbox ? SB_BUFFER_QUEUE_MAILBOX : 0,
				     &a->queue);
	for (unsigned i = 0; ret == 0 && i < a->count; i++)
		ret = sb_buffer_queue_set_dmabuf(a->queue, i, a->bufs[i].dmabuf);
	if (ret < 0)
		goto out;
	if (a->opt.vulkan) {
		int fds[MAX_BUFFERS];
		size_t sizes[MAX_BUFFERS];
		for (unsigned i = 0; i < a->count; i++) {
			fds[i] = a->bufs[i].dmabuf;
			sizes[i] = a->bufs[i].size;
		}
		ret = vk_reader_create(fds, sizes, a->count, &a->vk);
		if (ret < 0)
			goto out;
		printf("consumer: %s\n", vk_reader_describe(a->vk));
		if (!vk_reader_layer_active(a->vk) && !a->opt.no_wait) {
			fprintf(stderr, PROG ": the syncbridge layer is not active\n");
			ret = -ENOENT;
			goto out;
		}
	}

	if (a->opt.display == -1)
		a->opt.display = a->opt.source == SOURCE_VIVID;
	if (a->opt.display) {
#ifdef CAMERA_HAVE_EGL
		int fds[MAX_BUFFERS];
		for (unsigned i = 0; i < a->count; i++)
			fds[i] = a->bufs[i].dmabuf;
		if (a->opt.source != SOURCE_VIVID) {
			fprintf(stderr, PROG ": the display stage shows YUYV camera frames (--source vivid)\n");
			ret = -EINVAL;
			goto out;
		}
		ret = egl_display_create(fds, a->count, a->width, a->height, a->stride, &a->disp);
		if (ret < 0)
			goto out;
		printf("display: %s\n", egl_display_describe(a->disp));
#else
		fprintf(stderr, PROG ": built without EGL: no display stage\n");
#endif
	}

	pthread_t source, holder;
	pthread_create(&holder, NULL, holder_main, a);
	pthread_create(&source, NULL, source_main, a);
	int64_t t0 = demo_now_ns();
	ret = consume(a);
	if (ret < 0)
		sb_buffer_queue_close(a->queue);
	pthread_join(source, NULL);
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(holder, NULL);
	double secs = (double)(demo_now_ns() - t0) / 1e9;
	if (ret == 0)
		ret = a->source_ret;
	sample_fds(a);

	sb_buffer_queue_get_stats(a->queue, &st);
	printf("queue: dequeued %" PRIu64 ", queued %" PRIu64 ", acquired %" PRIu64
	       ", released %" PRIu64 ", dropped %" PRIu64 ", reuse waits %" PRIu64 "\n",
	       st.dequeued, st.queued, st.acquired, st.released, st.dropped, st.reuse_waits);
	printf("consumer: %" PRIu64 " holds (%" PRIu64 " skipped); %.1f frames/s\n", a->c.holds,
	       a->c.hold_skipped, secs > 0 ? (double)a->c.frames / secs : 0.0);
out:
	teardown(a);
	int fds_end = demo_count_fds();
	printf("fds: %d at the start, %d at most while running, %d at the end\n", fds_start,
	       a->c.fds_max, fds_end);
	/* Dropped: frames the camera skipped for want of a buffer (V4L2
	 * sequence gaps), plus frames a mailbox consumer never took. */
	printf("frames=%" PRIu64 " dropped=%" PRIu64 " reuse_waits=%" PRIu64 " overwritten=%" PRIu64
	       " reused_busy=%" PRIu64 " torn=%" PRIu64 "\n",
	       a->c.frames, a->c.dropped + st.dropped, st.reuse_waits, a->c.overwritten,
	       a->c.reused_busy, a->c.torn);
	if (ret < 0) {
		fprintf(stderr, PROG ": failed: %s\n", strerror(-ret));
		return ret == -ENODEV ? EXIT_SKIP : 1;
	}
	/* Per-frame fds (fences, the driver's) come and go; a leak of one per
	 * frame would pass this bound within the first hundred frames. */
	bool fds_ok = fds_end == fds_start && a->c.fds_max <= fds_start + FD_SLACK;
	if (!fds_ok)
		fprintf(stderr, PROG ": fd leak? %d fds at the start, %d at most, %d at the end\n",
			fds_start, a->c.fds_max, fds_end);
	uint64_t races = a->c.overwritten + a->c.reused_busy;
	if (a->opt.expect_race) {
		printf("%s\n", a->c.overwritten
				? "as expected without the queue's wait: frames were overwritten "
				  "while still being read"
				: "UNEXPECTED: no frame was overwritten without the queue's wait");
		return a->c.overwritten && fds_ok ? 0 : 1;
	}
	bool all = a->opt.mailbox || a->c.frames == a->opt.frames;
	if (!all)
		fprintf(stderr, PROG ": %" PRIu64 " of %u frames consumed\n", a->c.frames, a->opt.frames);
	return all && fds_ok && races == 0 && a->c.torn == 0 ? 0 : 1;
}
