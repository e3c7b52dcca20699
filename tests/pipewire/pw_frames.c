/* SPDX-License-Identifier: MIT */
/*
 * pw-frames: one side of a video stream through the real PipeWire daemon,
 * with explicit sync from libsyncbridge-pipewire (tests/pipewire/pw-peer.sh
 * runs both sides and the daemon; docs/pipewire.md).
 *
 *   pw-frames --role producer [--frames N] [--name NAME] [--write-ms MS]
 *   pw-frames --role consumer [--frames N] [--name NAME]
 *
 * The producer is the graph's driver: every 100 ms it takes a buffer (a 16x16
 * XRGB vgem dma-buf, or a memfd for a peer that takes no dma-bufs), whose
 * last release point must have signalled (watched in the loop: never a
 * blocking wait in process), makes a pending vgem fence its acquire fence
 * (sb_pw_producer_set_acquire()), queues it, and its "GPU" (a thread of its
 * own) fills every pixel with the frame number only --write-ms later, then
 * signals the fence. The frame number also goes into the SPA_META_Header seq.
 *
 * The consumer waits for the acquire point (sb_pw_consumer_acquire(), a
 * CPU wait on the sync_file here; a GPU would wait on it), reads the frame
 * through its own mapping of the dma-buf, and signals the release point
 * (sb_pw_consumer_release()). A frame is torn when any pixel differs from its
 * header's seq. It prints "frames=N torn=M synced=S" and exits 0 after N
 * frames (1 on errors). With SYNCBRIDGE_DISABLE=1 on both sides the bridge
 * is off: plain buffers, no waits — the control, where frames arrive torn.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/buffer/meta.h>
#include <spa/param/buffers.h>
#include <spa/param/video/format-utils.h>
#include <spa/pod/builder.h>

#include <syncbridge/pipewire.h>
#include <syncbridge/sync_file.h>

#include "kernel.h"

#define W 16
#define H 16
#define STRIDE (W * 4)
#define SIZE (STRIDE * H)
#define MAX_BUFS 16

struct app;

struct slot {
	struct app *app;
	struct pw_buffer *pwb;
	struct sbk_buf buf;       /* producer: the vgem dma-buf (fd -1: a memfd plane) */
	void *wmap;               /* producer: where the "GPU" writes */
	int memfd;                /* producer: the memfd plane, or -1 */
	void *map;                /* consumer: its own mapping of plane 0 */
	uint32_t frame;
	struct spa_source *release_io;
};

/* The producer's "GPU": a thread that writes each frame --write-ms after it was queued. */
struct gpu_job {
	uint32_t *pixels;
	uint32_t frame;
	struct sbk_fence fence; /* the job's: signalled and destroyed by the thread */
	struct gpu_job *next;
};

struct gpu {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct gpu_job *head, **tail;
	bool stop;
	int write_ms;
};

struct app {
	bool producer;
	const char *name;
	int frames, write_ms, done, torn, synced, errors;
	int vgem, drm;
	struct pw_main_loop *loop;
	struct pw_stream *stream;
	struct spa_hook listener;
	struct sb_pw_sync *sync;
	struct spa_source *tick;
	struct slot slots[MAX_BUFS];
	int nslots;
	struct slot *waiting; /* producer: a buffer dequeued, waiting for its release */
	uint32_t next_frame;
	bool streaming;
	struct gpu gpu;
};

static void *
gpu_thread(void *data)
{
	struct gpu *g = data;

	pthread_mutex_lock(&g->lock);
	for (;;) {
		while (!g->head && !g->stop)
			pthread_cond_wait(&g->cond, &g->lock);
		if (!g->head)
			break;
		struct gpu_job *j = g->head;
		g->head = j->next;
		if (!g->head)
			g->tail = &g->head;
		pthread_mutex_unlock(&g->lock);
		sbk_sleep_ns((int64_t)g->write_ms * 1000000);
		for (int i = 0; i < SIZE / 4; i++)
			j->pixels[i] = j->frame;
		sbk_fence_signal(&j->fence);
		sbk_fence_destroy(&j->fence);
		free(j);
		pthread_mutex_lock(&g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

static void
gpu_submit(struct gpu *g, struct gpu_job *j)
{
	pthread_mutex_lock(&g->lock);
	j->next = NULL;
	*g->tail = j;
	g->tail = &j->next;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static struct slot *
slot_of(struct app *a, struct pw_buffer *b)
{
	for (int i = 0; i < a->nslots; i++)
		if (a->slots[i].pwb == b)
			return &a->slots[i];
	return NULL;
}

static void
fail(struct app *a, const char *what, int err)
{
	fprintf(stderr, "pw-frames %s: %s: %s\n", a->producer ? "producer" : "consumer", what,
		strerror(err < 0 ? -err : err));
	a->errors++;
	pw_main_loop_quit(a->loop);
}

/* ---- format and buffers -------------------------------------------------------- */

static const struct spa_pod *
format_param(struct spa_pod_builder *b)
{
	return spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
		SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
		SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
		SPA_FORMAT_VIDEO_format, SPA_POD_Id(SPA_VIDEO_FORMAT_BGRx),
		SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&SPA_RECTANGLE(W, H)),
		SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&SPA_FRACTION(0, 1)));
}

static void
on_param_changed(void *data, uint32_t id, const struct spa_pod *param)
{
	struct app *a = data;
	uint8_t mem[2048];
	struct spa_pod_builder b = SPA_POD_BUILDER_INIT(mem, sizeof(mem));
	const struct spa_pod *params[5];
	int n;

	if (id != SPA_PARAM_Format || !param)
		return;
	n = sb_pw_build_params(a->sync, &b, params, 4, 4, 1, SIZE, STRIDE,
			       (1 << SPA_DATA_DmaBuf) | (1 << SPA_DATA_MemFd));
	if (n < 0) {
		fail(a, "sb_pw_build_params", n);
		return;
	}
	params[n++] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
		SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
		SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
	pw_stream_update_params(a->stream, params, (uint32_t)n);
}

static void
on_add_buffer(void *data, struct pw_buffer *pwb)
{
	struct app *a = data;
	struct spa_buffer *buf = pwb->buffer;
	struct slot *s;
	int ret;

	s = slot_of(a, NULL); /* a slot whose buffer was removed */
	if (!s && a->nslots == MAX_BUFS) {
		fail(a, "too many buffers", ENOSPC);
		return;
	}
	if (!s)
		s = &a->slots[a->nslots++];
	memset(s, 0, sizeof(*s));
	s->app = a;
	s->pwb = pwb;
	s->buf.fd = -1;
	s->memfd = -1;
	if (a->producer) {
		struct spa_data *d = &buf->datas[0];

		/* datas[0].type holds the types negotiated: a dma-buf where the peer takes it. */
		if (d->type & (1u << SPA_DATA_DmaBuf)) {
			ret = sbk_buf_create(SBK_BUF_VGEM, a->vgem, SIZE, &s->buf);
			if (ret) {
				fail(a, "vgem buffer", ret);
				return;
			}
			s->wmap = s->buf.map;
			d->type = SPA_DATA_DmaBuf;
			d->fd = fcntl(s->buf.fd, F_DUPFD_CLOEXEC, 0);
		} else {
			s->memfd = memfd_create("sb-frames", MFD_CLOEXEC);
			if (s->memfd < 0 || ftruncate(s->memfd, SIZE) < 0 ||
			    (s->wmap = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, s->memfd, 0)) ==
				    MAP_FAILED) {
				s->wmap = NULL;
				fail(a, "memfd buffer", errno);
				return;
			}
			d->type = SPA_DATA_MemFd;
			d->fd = fcntl(s->memfd, F_DUPFD_CLOEXEC, 0);
		}
		memset(s->wmap, 0, SIZE);
		d->flags = SPA_DATA_FLAG_READWRITE;
		d->mapoffset = 0;
		d->maxsize = SIZE;
		d->data = NULL;
	}
	ret = sb_pw_buffer_add(a->sync, buf, a->producer);
	if (ret < 0) {
		fail(a, "sb_pw_buffer_add", ret);
		return;
	}
	a->synced += ret;
	if (!a->producer) {
		struct spa_data *d = &buf->datas[0];

		s->map = mmap(NULL, d->maxsize, PROT_READ, MAP_SHARED, (int)d->fd, d->mapoffset);
		if (s->map == MAP_FAILED) {
			s->map = NULL;
			fail(a, "mmap of the image plane", errno);
		}
	}
}

static void
on_remove_buffer(void *data, struct pw_buffer *pwb)
{
	struct app *a = data;
	struct slot *s = slot_of(a, pwb);

	if (!s)
		return;
	sb_pw_buffer_remove(a->sync, pwb->buffer);
	if (a->producer) {
		close((int)pwb->buffer->datas[0].fd);
		pwb->buffer->datas[0].fd = -1;
	}
	if (s->release_io)
		pw_loop_destroy_source(pw_main_loop_get_loop(a->loop), s->release_io);
	if (s->map)
		munmap(s->map, pwb->buffer->datas[0].maxsize);
	if (s->memfd >= 0) {
		munmap(s->wmap, SIZE);
		close(s->memfd);
	}
	sbk_buf_destroy(&s->buf);
	s->pwb = NULL;
	if (a->waiting == s)
		a->waiting = NULL;
}

/* ---- producer ----------------------------------------------------------------------- */

/* A frame: its write goes to the "GPU", and the buffer out behind its fence. */
static void
produce(struct app *a, struct slot *s)
{
	struct spa_buffer *buf = s->pwb->buffer;
	struct spa_meta_header *h = spa_buffer_find_meta_data(buf, SPA_META_Header, sizeof(*h));
	struct gpu_job *j = calloc(1, sizeof(*j));
	int fence, ret;

	if (!j) {
		fail(a, "no memory", ENOMEM);
		return;
	}
	s->frame = ++a->next_frame;
	ret = sbk_fence_create(a->vgem, true, &j->fence);
	if (ret) {
		free(j);
		fail(a, "vgem fence", ret);
		return;
	}
	fence = fcntl(j->fence.sync_file, F_DUPFD_CLOEXEC, 0);
	j->pixels = s->wmap;
	j->frame = s->frame;
	gpu_submit(&a->gpu, j); /* the thread owns the job and its fence now */
	/* A memfd plane (the fallback) waits here for the write: the GPU is its own thread. */
	ret = sb_pw_producer_set_acquire(a->sync, buf, fence);
	close(fence);
	if (ret) {
		fail(a, "sb_pw_producer_set_acquire", ret);
		return;
	}
	if (h) {
		h->flags = 0;
		h->seq = s->frame;
		h->pts = sbk_now_ns();
		h->dts_offset = 0;
	}
	buf->datas[0].chunk->offset = 0;
	buf->datas[0].chunk->size = SIZE;
	buf->datas[0].chunk->stride = STRIDE;
	pw_stream_queue_buffer(a->stream, s->pwb);
}

static void
on_released(void *data, int fd, uint32_t mask)
{
	struct slot *s = data;
	struct app *a = s->app;

	pw_loop_destroy_source(pw_main_loop_get_loop(a->loop), s->release_io);
	s->release_io = NULL;
	if (a->waiting == s) {
		a->waiting = NULL;
		produce(a, s);
	}
}

static void
producer_process(struct app *a)
{
	struct pw_buffer *pwb;
	struct slot *s;
	int fd, ret;

	if (a->waiting || !(pwb = pw_stream_dequeue_buffer(a->stream)))
		return;
	s = slot_of(a, pwb);
	if (!s)
		return;
	/* The consumer may still read it: watch the release point in the loop. */
	ret = sb_pw_producer_watch_release(a->sync, pwb->buffer, &fd);
	if (ret < 0) {
		fail(a, "sb_pw_producer_watch_release", ret);
		return;
	}
	if (ret == 1) {
		produce(a, s);
		return;
	}
	a->waiting = s;
	s->release_io = pw_loop_add_io(pw_main_loop_get_loop(a->loop), fd, SPA_IO_IN, false,
				       on_released, s);
}

static void
on_tick(void *data, uint64_t expirations)
{
	struct app *a = data;

	if (a->streaming)
		pw_stream_trigger_process(a->stream);
}

/* ---- consumer ----------------------------------------------------------------------- */

static void
consumer_process(struct app *a)
{
	struct pw_buffer *pwb;

	while ((pwb = pw_stream_dequeue_buffer(a->stream))) {
		struct spa_buffer *buf = pwb->buffer;
		struct spa_meta_header *h = spa_buffer_find_meta_data(buf, SPA_META_Header, sizeof(*h));
		struct slot *s = slot_of(a, pwb);
		int fence = -1, ret, bad = 0;

		ret = sb_pw_consumer_acquire(a->sync, buf, &fence);
		if (ret) {
			fail(a, "sb_pw_consumer_acquire", ret);
			return;
		}
		if (fence >= 0) {
			/* A GPU reader would wait for it on the GPU; the test reads on the CPU. */
			ret = sb_sync_file_wait(fence, 5000000000LL);
			close(fence);
			if (ret) {
				fail(a, "acquire fence wait", ret);
				return;
			}
		}
		if (s && s->map && h) {
			const uint32_t *p = s->map;
			for (int i = 0; i < SIZE / 4; i++)
				bad += p[i] != (uint32_t)h->seq;
			if (bad)
				a->torn++;
			a->done++;
		}
		ret = sb_pw_consumer_release(a->sync, buf, -1);
		if (ret)
			fail(a, "sb_pw_consumer_release", ret);
		pw_stream_queue_buffer(a->stream, pwb);
		if (a->done >= a->frames)
			pw_main_loop_quit(a->loop);
	}
}

static void
on_process(void *data)
{
	struct app *a = data;

	if (a->producer)
		producer_process(a);
	else
		consumer_process(a);
}

static void
on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error)
{
	struct app *a = data;

	a->streaming = state == PW_STREAM_STATE_STREAMING;
	if (state == PW_STREAM_STATE_ERROR)
		fail(a, error ? error : "stream error", EIO);
	if (a->producer && a->streaming && !a->tick) {
		struct timespec v = { .tv_nsec = 100000000 }, i = { .tv_nsec = 100000000 };

		a->tick = pw_loop_add_timer(pw_main_loop_get_loop(a->loop), on_tick, a);
		pw_loop_update_timer(pw_main_loop_get_loop(a->loop), a->tick, &v, &i, false);
	}
}

static const struct pw_stream_events stream_events = {
	PW_VERSION_STREAM_EVENTS,
	.state_changed = on_state_changed,
	.param_changed = on_param_changed,
	.add_buffer = on_add_buffer,
	.remove_buffer = on_remove_buffer,
	.process = on_process,
};

static void
on_signal(void *data, int signo)
{
	pw_main_loop_quit(((struct app *)data)->loop);
}

int
main(int argc, char **argv)
{
	struct app a = { .frames = 20, .write_ms = 40, .name = "sb-frames", .vgem = -1, .drm = -1 };
	uint8_t mem[1024];
	struct spa_pod_builder b = SPA_POD_BUILDER_INIT(mem, sizeof(mem));
	const struct spa_pod *params[1];
	const char *role = NULL;
	char node[96];
	int ret;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--role") == 0 && i + 1 < argc)
			role = argv[++i];
		else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc)
			a.frames = atoi(argv[++i]);
		else if (strcmp(argv[i], "--write-ms") == 0 && i + 1 < argc)
			a.write_ms = atoi(argv[++i]);
		else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
			a.name = argv[++i];
		else
			role = NULL, i = argc;
	}
	if (!role || (strcmp(role, "producer") && strcmp(role, "consumer"))) {
		fprintf(stderr, "usage: pw-frames --role producer|consumer [--frames N] [--name NAME] "
				"[--write-ms MS]\n");
		return 2;
	}
	a.producer = strcmp(role, "producer") == 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (a.producer) {
		a.vgem = sbk_vgem_open();
		if (a.vgem < 0) {
			printf("SKIP: no vgem\n");
			return 77;
		}
	}
	/* Timelines: the virtio_gpu render node (vgem has no syncobjs). */
	a.drm = sbk_drm_open_driver("virtio_gpu", true);
	if (a.drm < 0) {
		printf("SKIP: no DRM render node with timeline syncobjs\n");
		return 77;
	}
	ret = sb_pw_sync_create(a.drm, &a.sync);
	if (ret) {
		printf("SKIP: sb_pw_sync_create: %s\n", strerror(-ret));
		return 77;
	}

	a.gpu.tail = &a.gpu.head;
	a.gpu.write_ms = a.write_ms;
	pthread_mutex_init(&a.gpu.lock, NULL);
	pthread_cond_init(&a.gpu.cond, NULL);
	if (a.producer && pthread_create(&a.gpu.thread, NULL, gpu_thread, &a.gpu) != 0) {
		fprintf(stderr, "pw-frames: cannot start the GPU thread\n");
		return 1;
	}
	pw_init(&argc, &argv);
	a.loop = pw_main_loop_new(NULL);
	pw_loop_add_signal(pw_main_loop_get_loop(a.loop), SIGINT, on_signal, &a);
	pw_loop_add_signal(pw_main_loop_get_loop(a.loop), SIGTERM, on_signal, &a);
	snprintf(node, sizeof(node), "%s-%s", a.name, role);
	a.stream = pw_stream_new_simple(pw_main_loop_get_loop(a.loop), node,
		pw_properties_new(PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY,
				  a.producer ? "Source" : "Capture", PW_KEY_MEDIA_ROLE, "Camera",
				  PW_KEY_NODE_NAME, node, NULL),
		&stream_events, &a);
	if (!a.stream) {
		fprintf(stderr, "pw-frames: cannot create the stream (is the daemon running?)\n");
		return 1;
	}
	params[0] = format_param(&b);
	ret = pw_stream_connect(a.stream, a.producer ? PW_DIRECTION_OUTPUT : PW_DIRECTION_INPUT,
		PW_ID_ANY,
		a.producer ? PW_STREAM_FLAG_DRIVER | PW_STREAM_FLAG_ALLOC_BUFFERS
			   : PW_STREAM_FLAG_NONE,
		params, 1);
	if (ret < 0) {
		fprintf(stderr, "pw-frames: pw_stream_connect: %s\n", strerror(-ret));
		return 1;
	}
	printf("ready %s\n", node);
	pw_main_loop_run(a.loop);

	if (!a.producer)
		printf("frames=%d torn=%d synced=%d\n", a.done, a.torn, a.synced);
	pw_stream_destroy(a.stream);
	pw_main_loop_destroy(a.loop);
	if (a.producer) {
		pthread_mutex_lock(&a.gpu.lock);
		a.gpu.stop = true;
		pthread_cond_signal(&a.gpu.cond);
		pthread_mutex_unlock(&a.gpu.lock);
		pthread_join(a.gpu.thread, NULL);
	}
	sb_pw_sync_destroy(a.sync);
	close(a.drm);
	if (a.vgem >= 0)
		close(a.vgem);
	pw_deinit();
	return a.errors ? 1 : 0;
}
