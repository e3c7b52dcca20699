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
 *
 * A consumer that does not release: the producer never blocks on it. A
 * buffer whose release point has not signalled is kept aside (watched in
 * the loop) and the frame of that tick is dropped; once a buffer has been
 * out --release-timeout-ms (default 1000) the producer says so, once per
 * buffer, and goes on with the others.
 *
 * --hostile MODE makes this side break the contract (tests/pipewire/
 * pw-hostile.sh): consumer never-release (reads, queues back, never
 * signals a release point), consumer die (exits mid-frame after --frames
 * frames: acquired, never released or queued back); producer bad-timeline
 * (memfds in the SyncObj planes), stale-acquire (every frame names acquire
 * point 1), release-behind (the release point is one behind the acquire
 * point, i.e. already signalled).
 *
 * Both sides print "fds before=N after=M" at exit: the process's open fds
 * before its loop and stream were created and after both were destroyed
 * (testbed/fd_snapshot.h); a new one is listed with what it is.
 * --stats (consumer): per-frame wake latency (from the acquire fence's
 * signal, the kernel's timestamp, to the consumer's wake) and CPU time;
 * the producer prints its CPU time at exit (bench/pw_cost.sh). CPU time is
 * taken from frame 1 to frame --frames: the steady state, not the start-up;
 * the time inside the library's per-frame calls is summed as well.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/buffer/meta.h>
#include <spa/param/buffers.h>
#include <spa/param/video/format-utils.h>
#include <spa/pod/builder.h>

#include <syncbridge/pipewire.h>
#include <syncbridge/sync_file.h>

#include "demo_util.h"
#include "harness.h"
#include "fd_snapshot.h"
#include "kernel.h"
#include "kernel_raw.h"
#include "pwt.h"

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
	int64_t out_since;        /* producer: kept aside since (ns), waiting for its release */
	bool ready;               /* producer: released after being kept aside */
	bool warned;
	int bad_fds[2];           /* producer --hostile bad-timeline: the memfds in the SyncObj planes */
};

enum hostile {
	HOSTILE_NONE,
	HOSTILE_NEVER_RELEASE,
	HOSTILE_DIE,
	HOSTILE_BAD_TIMELINE,
	HOSTILE_STALE_ACQUIRE,
	HOSTILE_RELEASE_BEHIND,
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
	bool stop, busy;
	int write_ms;
};

struct app {
	bool producer;
	const char *name;
	int frames, write_ms, done, torn, synced, errors;
	int interval_ms, release_timeout_ms, dropped, kept_aside, stuck, unscheduled;
	enum hostile hostile;
	bool stats;
	int64_t *lat_ns; /* --stats: acquire fence signal to the consumer's wake */
	int64_t cpu_first, cpu_last; /* --stats: CPU time at frame 1 and at frame --frames */
	int64_t calls_ns;            /* --stats: time inside the four sb_pw_* calls of the frames */
	int nlat;
	int vgem, drm;
	struct pw_main_loop *loop;
	struct pw_stream *stream;
	struct spa_hook listener;
	struct sb_pw_sync *sync;
	struct spa_source *tick;
	struct slot slots[MAX_BUFS];
	int nslots;
	uint32_t next_frame;
	int64_t starved_since; /* producer: no buffer came back since (ns), 0: one did */
	bool starved_warned;
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
		g->busy = true;
		pthread_mutex_unlock(&g->lock);
		sbk_sleep_ns((int64_t)g->write_ms * 1000000);
		for (int i = 0; i < SIZE / 4; i++)
			j->pixels[i] = j->frame;
		sbk_fence_signal(&j->fence);
		sbk_fence_destroy(&j->fence);
		free(j);
		pthread_mutex_lock(&g->lock);
		g->busy = false;
		pthread_cond_broadcast(&g->cond);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

/* Waits until the "GPU" wrote every frame submitted: before a buffer's memory goes. */
static void
gpu_idle(struct gpu *g)
{
	pthread_mutex_lock(&g->lock);
	while (g->head || g->busy)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

static void
gpu_submit(struct gpu *g, struct gpu_job *j)
{
	pthread_mutex_lock(&g->lock);
	j->next = NULL;
	*g->tail = j;
	g->tail = &j->next;
	pthread_cond_broadcast(&g->cond);
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

/* What a leak left: the fds open now that were not open before (or are another file). */
static void
print_new_fds(const struct tb_fd_snapshot *before, const struct tb_fd_snapshot *after)
{
	for (int i = 0; i < after->n; i++) {
		const struct tb_fd_entry *e = &after->e[i], *was = tb_fd_snapshot_find(before, e->fd);

		if (!was || was->dev != e->dev || was->ino != e->ino)
			printf("# fd %d is new: %s\n", e->fd, e->what);
	}
}

static int64_t
cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

/* --stats: the steady state only, from frame 1 to frame --frames (no start-up). */
static void
stats_mark(struct app *a, int frame)
{
	if (frame == 1)
		a->cpu_first = cpu_ns();
	if (frame == a->frames)
		a->cpu_last = cpu_ns();
}

static void
fail(struct app *a, const char *what, int err)
{
	fprintf(stderr, "pw-frames %s: %s: %s\n", a->producer ? "producer" : "consumer", what,
		strerror(err < 0 ? -err : err));
	a->errors++;
	pw_main_loop_quit(a->loop);
}

/* ret, the result of an sb_pw_* call that began at t0: its time counts for --stats. */
static int
timed(struct app *a, int64_t t0, int ret)
{
	a->calls_ns += now_ns() - t0;
	return ret;
}

/* A consumer call failed: -EPROTO is the producer's meta breaking the contract. */
static void
fail_consumer(struct app *a, const char *call, int ret, const char *eproto)
{
	char what[160];

	snprintf(what, sizeof(what), "%s%s%s", call, ret == -EPROTO ? ": " : "",
		 ret == -EPROTO ? eproto : "");
	fail(a, what, ret);
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
	n = sb_pw_sync_build_params(a->sync, &b, params, 4, 4, 1, SIZE, STRIDE,
			       (1 << SPA_DATA_DmaBuf) | (1 << SPA_DATA_MemFd));
	if (n < 0) {
		fail(a, "sb_pw_sync_build_params", n);
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
	s->bad_fds[0] = s->bad_fds[1] = -1;
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
		fail(a, a->producer ? "sb_pw_buffer_add: cannot make the buffer's timelines"
				    : "sb_pw_buffer_add: the buffer's SyncObj planes are not usable "
				      "DRM syncobj timelines", ret);
		return;
	}
	a->synced += ret;
	if (a->producer && ret == 1 && a->hostile == HOSTILE_BAD_TIMELINE) {
		/* A broken producer: memfds where the timelines' fds belong. */
		for (int i = 0; i < 2; i++) {
			s->bad_fds[i] = memfd_create("sb-not-a-syncobj", MFD_CLOEXEC);
			buf->datas[buf->n_datas - 2 + i].fd = s->bad_fds[i];
		}
	}
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
	/* The watched release fd is the library's: out of the loop before it is closed. */
	if (s->release_io) {
		pw_loop_destroy_source(pw_main_loop_get_loop(a->loop), s->release_io);
		s->release_io = NULL;
		a->kept_aside--;
	}
	sb_pw_buffer_remove(a->sync, pwb->buffer);
	if (a->producer) {
		/* A consumer that went away mid-stream takes the buffers with it. */
		gpu_idle(&a->gpu);
		close((int)pwb->buffer->datas[0].fd);
		pwb->buffer->datas[0].fd = -1;
	}
	if (s->map)
		munmap(s->map, pwb->buffer->datas[0].maxsize);
	if (s->memfd >= 0) {
		munmap(s->wmap, SIZE);
		close(s->memfd);
	}
	for (int i = 0; i < 2; i++)
		if (s->bad_fds[i] >= 0)
			close(s->bad_fds[i]);
	sbk_buf_destroy(&s->buf);
	s->pwb = NULL;
}

/* ---- producer ----------------------------------------------------------------------- */

/* A frame: its write goes to the "GPU", and the buffer out behind its fence. */
static void
produce(struct app *a, struct slot *s)
{
	struct spa_buffer *buf = s->pwb->buffer;
	struct spa_meta_header *h = spa_buffer_find_meta_data(buf, SPA_META_Header, sizeof(*h));
	struct gpu_job *j = calloc(1, sizeof(*j));
	int64_t t0;
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
	t0 = now_ns();
	ret = timed(a, t0, sb_pw_producer_set_acquire(a->sync, buf, fence));
	close(fence);
	if (ret) {
		fail(a, "sb_pw_producer_set_acquire", ret);
		return;
	}
	if (a->hostile == HOSTILE_STALE_ACQUIRE || a->hostile == HOSTILE_RELEASE_BEHIND) {
		struct spa_meta_sync_timeline *m =
			spa_buffer_find_meta_data(buf, SPA_META_SyncTimeline, sizeof(*m));

		if (m && a->hostile == HOSTILE_STALE_ACQUIRE)
			m->acquire_point = 1;
		else if (m)
			m->release_point = m->acquire_point - 1;
	}
	if (h) {
		h->flags = 0;
		h->seq = s->frame;
		h->pts = now_ns();
		h->dts_offset = 0;
	}
	buf->datas[0].chunk->offset = 0;
	buf->datas[0].chunk->size = SIZE;
	buf->datas[0].chunk->stride = STRIDE;
	pw_stream_queue_buffer(a->stream, s->pwb);
	stats_mark(a, (int)s->frame);
}

static void
on_released(void *data, int fd, uint32_t mask)
{
	struct slot *s = data;
	struct app *a = s->app;

	pw_loop_destroy_source(pw_main_loop_get_loop(a->loop), s->release_io);
	s->release_io = NULL;
	s->ready = true; /* the next tick writes into it */
	a->kept_aside--;
}

/* Buffers kept aside too long, and no buffer at all: said once each, never waited for. */
static void
check_bounds(struct app *a, bool starved)
{
	int64_t now = now_ns(), bound = (int64_t)a->release_timeout_ms * 1000000;

	for (int i = 0; i < a->nslots; i++) {
		struct slot *s = &a->slots[i];

		if (s->pwb && s->release_io && !s->warned && now - s->out_since > bound) {
			fprintf(stderr, "pw-frames producer: the consumer has not released buffer %d "
				"(frame %u) in %d ms: it stays out of use until its release point "
				"signals; frames are dropped meanwhile\n", i, s->frame,
				a->release_timeout_ms);
			s->warned = true;
			a->stuck++;
		}
	}
	if (!starved) {
		a->starved_since = 0;
		a->starved_warned = false;
	} else if (!a->starved_since) {
		a->starved_since = now;
	} else if (!a->starved_warned && now - a->starved_since > bound) {
		fprintf(stderr, "pw-frames producer: no buffer came back from the consumer in %d ms: "
			"frames are dropped until one does\n", a->release_timeout_ms);
		a->starved_warned = true;
		a->stuck++;
	}
}

static void
producer_process(struct app *a)
{
	struct pw_buffer *pwb;
	struct slot *s = NULL;
	int64_t t0;
	int fd, ret;

	/* A buffer released after it was kept aside goes first. */
	for (int i = 0; i < a->nslots && !s; i++)
		if (a->slots[i].pwb && a->slots[i].ready)
			s = &a->slots[i];
	if (s) {
		s->ready = false;
		check_bounds(a, false);
		produce(a, s);
		return;
	}
	pwb = pw_stream_dequeue_buffer(a->stream);
	check_bounds(a, !pwb);
	if (!pwb) {
		a->dropped++;
		return;
	}
	s = slot_of(a, pwb);
	if (!s)
		return;
	/* Counted for the logs: a frame the consumer never took (the graph recycled it). */
	struct spa_meta_sync_timeline *m =
		spa_buffer_find_meta_data(pwb->buffer, SPA_META_SyncTimeline, sizeof(*m));
	if (m && s->frame && (m->flags & 1))
		a->unscheduled++;
	/* The consumer may still read it: watch the release point in the loop. */
	t0 = now_ns();
	ret = timed(a, t0, sb_pw_producer_watch_release(a->sync, pwb->buffer, &fd));
	if (ret < 0) {
		fail(a, "sb_pw_producer_watch_release", ret);
		return;
	}
	if (ret == 1) {
		produce(a, s);
		return;
	}
	/* Kept aside, never waited for here: this tick's frame is dropped. */
	s->out_since = now_ns();
	s->warned = false;
	s->release_io = pw_loop_add_io(pw_main_loop_get_loop(a->loop), fd, SPA_IO_IN, false,
				       on_released, s);
	a->kept_aside++;
	a->dropped++;
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
		int64_t t0;
		int fence = -1, ret, bad = 0;

		t0 = now_ns();
		ret = timed(a, t0, sb_pw_consumer_acquire(a->sync, buf, &fence));
		if (ret) {
			fail_consumer(a, "sb_pw_consumer_acquire", ret, "the producer's acquire point "
				      "is not after the last frame read from the buffer");
			return;
		}
		if (fence >= 0) {
			/* A GPU reader would wait for it on the GPU; the test reads on the CPU. */
			ret = sb_sync_file_wait(fence, 5000000000LL);
			if (ret == 0 && a->stats && a->nlat < a->frames) {
				int64_t woke = now_ns(), signalled = tb_sync_file_signal_time(fence);

				if (signalled > 0)
					a->lat_ns[a->nlat++] = woke - signalled;
			}
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
			stats_mark(a, a->done);
		}
		if (a->hostile == HOSTILE_DIE && a->done >= a->frames) {
			/* Mid-frame: acquired and read, never released or queued back. */
			printf("dying mid-frame after %d frames\n", a->done);
			_exit(3);
		}
		if (a->hostile != HOSTILE_NEVER_RELEASE) {
			t0 = now_ns();
			ret = timed(a, t0, sb_pw_consumer_release(a->sync, buf, -1));
			if (ret) {
				fail_consumer(a, "sb_pw_consumer_release", ret,
					      "the producer's release point is behind its timeline");
				return;
			}
		}
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
		struct timespec v = { .tv_sec = a->interval_ms / 1000,
				      .tv_nsec = (a->interval_ms % 1000) * 1000000L },
				i = v;

		a->tick = pw_loop_add_timer(pw_main_loop_get_loop(a->loop), on_tick, a);
		pw_loop_update_timer(pw_main_loop_get_loop(a->loop), a->tick, &v, &i, false);
	}
}

static const struct pw_stream_events stream_events = PWT_STREAM_EVENTS;

static void
usage(FILE *f)
{
	fprintf(f, "usage: pw-frames --role producer|consumer [--frames N] [--name NAME]\n"
		   "       [--write-ms MS] [--interval-ms MS] [--release-timeout-ms MS]\n"
		   "       [--hostile never-release|die|bad-timeline|stale-acquire|"
		   "release-behind] [--stats]\n");
}

int
main(int argc, char **argv)
{
	static const char *const roles[] = { "consumer", "producer", NULL };
	static const char *const hostile_names[] = { "none", "never-release", "die", "bad-timeline",
						     "stale-acquire", "release-behind", NULL };
	struct app a = { .frames = 20, .write_ms = 40, .interval_ms = 100, .release_timeout_ms = 1000,
			 .name = "sb-frames", .vgem = -1, .drm = -1 };
	uint8_t mem[1024];
	struct spa_pod_builder b = SPA_POD_BUILDER_INIT(mem, sizeof(mem));
	const struct spa_pod *params[1];
	int role = -1, hostile = HOSTILE_NONE;
	const struct demo_opt opts[] = {
		{ "role", DEMO_OPT_WORD, &role, .words = roles, .required = true },
		{ "frames", DEMO_OPT_INT, &a.frames, 1, INT_MAX },
		{ "write-ms", DEMO_OPT_INT, &a.write_ms, 0, INT_MAX },
		{ "name", DEMO_OPT_STRING, &a.name },
		{ "interval-ms", DEMO_OPT_INT, &a.interval_ms, 1, INT_MAX },
		{ "release-timeout-ms", DEMO_OPT_INT, &a.release_timeout_ms, 0, INT_MAX },
		{ "stats", DEMO_OPT_FLAG, &a.stats },
		{ "hostile", DEMO_OPT_WORD, &hostile, .words = hostile_names },
		{ NULL },
	};
	char node[96];
	struct tb_fd_snapshot fds_before, fds_after;
	int ret;

	if (demo_opt_parse("pw-frames", argc, argv, opts, usage, 0) < 0)
		return 2;
	a.producer = strcmp(roles[role], "producer") == 0;
	a.hostile = (enum hostile)hostile;
	if (a.stats && !(a.lat_ns = calloc((size_t)a.frames, sizeof(*a.lat_ns)))) {
		fprintf(stderr, "pw-frames: no memory\n");
		return 1;
	}
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

	/*
	 * PipeWire takes SIGINT/SIGTERM through a signalfd, which works only
	 * where the signal is blocked: in every thread, the GPU one included.
	 */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	a.gpu.tail = &a.gpu.head;
	a.gpu.write_ms = a.write_ms;
	pthread_mutex_init(&a.gpu.lock, NULL);
	pthread_cond_init(&a.gpu.cond, NULL);
	if (a.producer && pthread_create(&a.gpu.thread, NULL, gpu_thread, &a.gpu) != 0) {
		fprintf(stderr, "pw-frames: cannot start the GPU thread\n");
		return 1;
	}
	pw_init(&argc, &argv);
	/* The loop's fds count too: its signalfds, timers and invoke queues. */
	tb_fd_snapshot_take(&fds_before);
	a.loop = pwt_main_loop_new();
	snprintf(node, sizeof(node), "%s-%s", a.name, roles[role]);
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
	else
		printf("produced=%u dropped=%d stuck=%d unscheduled=%d synced=%d\n", a.next_frame,
		       a.dropped, a.stuck, a.unscheduled, a.synced);
	if (a.stats) {
		if (a.cpu_last && a.frames > 1)
			printf("cpu_ns_per_frame=%lld\n",
			       (long long)((a.cpu_last - a.cpu_first) / (a.frames - 1)));
		int64_t n = a.producer ? (int64_t)a.next_frame : a.done;
		printf("sync_calls_ns_per_frame=%lld\n", (long long)(a.calls_ns / (n > 0 ? n : 1)));
		if (a.nlat) {
			demo_sort_i64(a.lat_ns, (size_t)a.nlat);
			printf("wake_after_signal_us median=%lld p90=%lld n=%d\n",
			       (long long)(a.lat_ns[a.nlat / 2] / 1000),
			       (long long)(a.lat_ns[a.nlat * 9 / 10] / 1000), a.nlat);
		}
	}
	pw_stream_destroy(a.stream);
	pw_main_loop_destroy(a.loop);
	tb_fd_snapshot_take(&fds_after);
	print_new_fds(&fds_before, &fds_after);
	printf("fds before=%d after=%d\n", fds_before.n, fds_after.n);
	tb_fd_snapshot_free(&fds_before);
	tb_fd_snapshot_free(&fds_after);
	free(a.lat_ns);
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
