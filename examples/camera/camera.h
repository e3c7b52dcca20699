/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-camera: what its parts share (camera.c has the whole
 * picture). The source thread (source.c: vivid or vgem) fills buffers and
 * queues them; the consumer (consumer.c, the main thread) acquires, reads,
 * shows and releases them; the holder thread (holder.c) keeps reading some
 * of them after the release, under a pending READ fence.
 */
#ifndef SB_DEMO_CAMERA_H
#define SB_DEMO_CAMERA_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/dma-buf.h>

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

static inline uint64_t
checksum(const void *p, size_t n)
{
	const uint64_t *w = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n / 8; i++)
		h = (h ^ w[i]) * 1099511628211ull;
	return h;
}

/* CPU access to a dma-buf mapping, bracketed for cache coherency. */
static inline void
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

static inline void
sample_fds(struct app *a)
{
	int n = demo_count_fds();
	if (n > a->c.fds_max)
		a->c.fds_max = n;
}

/* source.c: the buffers (vgem dumb buffers, or vivid's, exported), and the
 * thread that fills them until opt.frames, then closes the queue. */
int camera_vgem_setup(struct app *a);
int camera_vivid_setup(struct app *a);
void *camera_source_main(void *arg);
void camera_source_teardown(struct app *a);

/* holder.c: hold buffer i for hold_ns under a pending READ fence; the thread
 * that checks each held frame at the end of its hold and signals the fence. */
int camera_hold_start(struct app *a, unsigned i, uint64_t sum, int64_t hold_ns);
void *camera_holder_main(void *arg);

/* consumer.c: acquire, read, show, hold, release, until the queue closes. */
int camera_consume(struct app *a);

#endif
