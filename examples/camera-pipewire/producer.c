/* SPDX-License-Identifier: MIT */
/*
 * The producer process: vivid → the "GPU" → a PipeWire video stream, the
 * graph's driver. It allocates the stream's buffers itself (vgem dma-bufs,
 * PW_STREAM_FLAG_ALLOC_BUFFERS) and, for every camera frame:
 *
 *   pw_stream_dequeue_buffer()        in process, when a new frame is there
 *   sb_pw_producer_watch_release()    may it be written? never a blocking wait
 *   vgem write fence on the buffer    pending: the "GPU" has not written yet
 *   sb_pw_producer_set_acquire(fence) the acquire point waits for it
 *   pw_stream_queue_buffer()          out it goes, frame unwritten
 *   ... the GPU thread copies the frame in (top half, pause, bottom half)
 *       and signals the fence
 *
 * The frame number is the SPA_META_Header seq and the image's two stamps.
 *
 * Frames go out at the camera's rate; the consumer is never waited for. A
 * dequeued buffer whose release point has not signalled yet (the consumer
 * still reads it), or whose last write the GPU has not finished, is kept
 * aside with that fd watched in the loop, and the frame goes to the next
 * buffer that is free; with none free, the camera's next frame replaces it
 * (a dropped frame). A buffer the consumer keeps longer than HELD_NS is said
 * once, and stays aside until it is released. A buffer PipeWire gives back
 * without the consumer ever taking it is free at once: the library sees the
 * meta's SPA_META_SYNC_TIMELINE_UNSCHEDULED_RELEASE flag still set. Without
 * the bridge there are no release points: a buffer is free as soon as it is
 * back and the GPU is done with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/buffer/meta.h>
#include <spa/param/video/format-utils.h>
#include <spa/pod/builder.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/pipewire.h>

#include "camera_pw.h"

/* How long the consumer may keep a buffer before the producer says so. */
#define HELD_NS (INT64_C(2) * 1000000000)

/* PipeWire >= 1.4.8 (spa/buffer/meta.h); the meta is the same with 1.4.2's headers. */
#ifndef SPA_META_SYNC_TIMELINE_UNSCHEDULED_RELEASE
#define SPA_META_SYNC_TIMELINE_UNSCHEDULED_RELEASE (1 << 0)
#endif

struct producer;

struct slot {
	struct producer *p;
	struct pw_buffer *pwb;        /* NULL: a free slot */
	struct demo_vgem_buf vgem;    /* the buffer's memory; pwb's plane 0 is a dup of its fd */
	uint32_t seq;                 /* the last frame written into it; 0: none yet */
	struct spa_source *aside_io;  /* kept aside: its release point or last write, watched */
	int64_t aside_ns;             /* kept aside since */
	bool ready;                   /* the watched fd fired: to be checked again */
	bool warned;                  /* said that the consumer keeps it */
};

struct producer {
	const struct options *opt;
	struct stream_side side;
	int vgem;
	struct capture *cam;
	struct spa_source *cam_io;
	struct gpu *gpu;
	uint8_t *latest;  /* the newest camera frame, capture_stride() × height */
	size_t frame_size;
	bool have_frame;  /* latest is new: not given to a buffer yet */
	struct slot slots[MAX_SLOTS];
	int64_t starved_ns; /* since when a new frame finds no buffer free; 0: it does */
	bool starved_warned;
	uint32_t seq;
	unsigned synced, dropped, aside, held, unscheduled;
	bool streaming;
};

static struct slot *
slot_of(struct producer *p, struct pw_buffer *pwb)
{
	for (int i = 0; i < MAX_SLOTS; i++)
		if (p->slots[i].pwb == pwb)
			return &p->slots[i];
	return NULL;
}

/* ---- one frame ------------------------------------------------------------ */

static void
produce(struct producer *p, struct slot *s)
{
	struct spa_buffer *buf = s->pwb->buffer;
	struct spa_meta_header *h = spa_buffer_find_meta_data(buf, SPA_META_Header, sizeof(*h));
	struct gpu_job *j = calloc(1, sizeof(*j));
	uint8_t *next = malloc(p->frame_size);
	int acquire = -1, ret;

	if (!j || !next) {
		free(j);
		free(next);
		stream_fail(&p->side, "a frame's job", -ENOMEM);
		return;
	}
	*j = (struct gpu_job){
		.src = p->latest, .src_stride = capture_stride(p->cam),
		.dst = s->vgem.map, .dst_stride = s->vgem.pitch,
		.width = p->opt->width, .height = p->opt->height,
		.seq = ++p->seq, .vgem_fd = p->vgem,
	};
	memcpy(next, p->latest, p->frame_size);
	p->latest = next; /* the job owns the old one */
	p->have_frame = false;
	s->seq = p->seq;
	s->aside_ns = 0;
	s->warned = false;

	/*
	 * "Submit": the buffer gets a pending write fence, the frame's acquire
	 * fence. Nothing else fences it: writable() saw it idle, and only the
	 * GPU thread signals what this thread attached.
	 */
	ret = demo_vgem_fence_attach(p->vgem, s->vgem.handle, true, &j->fence_id);
	if (ret == 0) {
		ret = sb_dmabuf_export_sync_file(s->vgem.dmabuf_fd, SB_ACCESS_READ, &acquire);
		if (ret < 0)
			demo_vgem_fence_signal(p->vgem, j->fence_id);
	}
	if (ret < 0) {
		free(j->src);
		free(j);
		stream_fail(&p->side, "the frame's vgem fence", ret);
		return;
	}
	gpu_submit(p->gpu, j); /* the GPU thread owns the job now */
	ret = sb_pw_producer_set_acquire(p->side.sync, buf, acquire);
	demo_fd_clear(&acquire);
	if (ret < 0) {
		stream_fail(&p->side, "sb_pw_producer_set_acquire", ret);
		return;
	}
	if (h) {
		h->flags = 0;
		h->seq = p->seq;
		h->pts = now_ns();
		h->dts_offset = 0;
	}
	buf->datas[0].chunk->offset = 0;
	buf->datas[0].chunk->size = s->vgem.pitch * p->opt->height;
	buf->datas[0].chunk->stride = (int32_t)s->vgem.pitch;
	pw_stream_queue_buffer(p->side.stream, s->pwb);
	if (p->opt->verbose)
		printf("producer: frame %u queued before its write\n", p->seq);
}

/*
 * May s be written now? 1: yes; 0: not yet, *fd (*ours: this process's to
 * close, else the library's) becomes readable when it may; -errno.
 */
static int
writable(struct producer *p, struct slot *s, int *fd, bool *ours)
{
	bool busy;
	int ret;

	*ours = false;
	/* The consumer may still read it: its release point. */
	ret = sb_pw_producer_watch_release(p->side.sync, s->pwb->buffer, fd);
	if (ret != 1)
		return ret;
	/*
	 * Released, or never taken (PipeWire gave it back unseen, maybe before
	 * the GPU was done with it): this process's own last write, which the
	 * vgem fence still marks while it runs.
	 */
	ret = sb_dmabuf_is_busy(s->vgem.dmabuf_fd, SB_ACCESS_WRITE, &busy);
	if (ret < 0 || !busy)
		return ret < 0 ? ret : 1;
	ret = sb_dmabuf_export_sync_file(s->vgem.dmabuf_fd, SB_ACCESS_WRITE, fd);
	if (ret < 0)
		return ret;
	*ours = true;
	return 0;
}

static void
on_aside_ready(void *data, int fd, uint32_t mask)
{
	struct slot *s = data;
	struct producer *p = s->p;

	pw_loop_destroy_source(stream_loop(&p->side), s->aside_io); /* closes fd if it was ours */
	s->aside_io = NULL;
	s->ready = true;
	if (p->have_frame && p->streaming)
		pw_stream_trigger_process(p->side.stream);
}

/* Watch fd (see writable()) in the loop: s waits there, never here. */
static int
keep_aside(struct producer *p, struct slot *s, int fd, bool ours)
{
	s->aside_io = pw_loop_add_io(stream_loop(&p->side), fd, SPA_IO_IN, ours, on_aside_ready, s);
	if (!s->aside_io) {
		if (ours)
			close(fd);
		return errno ? -errno : -ENOMEM;
	}
	if (!s->aside_ns) {
		s->aside_ns = now_ns();
		p->aside++;
	}
	return 0;
}

/*
 * 1: s (`what`: where it came from) may be written now; 0: it went aside,
 * watched in the loop; -errno, the stream failed with it.
 */
static int
take_or_set_aside(struct producer *p, struct slot *s, const char *what)
{
	bool ours;
	int fd, ret = writable(p, s, &fd, &ours);

	if (ret == 0)
		ret = keep_aside(p, s, fd, ours);
	if (ret < 0)
		stream_fail(&p->side, what, ret);
	return ret;
}

/* A buffer that may be written now, or NULL; the others dequeued meanwhile go aside. */
static struct slot *
free_slot(struct producer *p)
{
	struct pw_buffer *pwb;
	struct slot *s;
	int ret;

	/* Those kept aside whose fd fired first. */
	for (int i = 0; i < MAX_SLOTS; i++) {
		s = &p->slots[i];
		if (!s->pwb || !s->ready)
			continue;
		s->ready = false;
		ret = take_or_set_aside(p, s, "a buffer kept aside");
		if (ret != 0)
			return ret == 1 ? s : NULL;
	}
	while ((pwb = pw_stream_dequeue_buffer(p->side.stream))) {
		struct spa_meta_sync_timeline *m =
			spa_buffer_find_meta_data(pwb->buffer, SPA_META_SyncTimeline, sizeof(*m));

		s = slot_of(p, pwb);
		if (!s) {
			stream_fail(&p->side, "an unknown buffer", -EINVAL);
			return NULL;
		}
		/* Counted for the summary: a frame the consumer never took. */
		if (m && s->seq && (m->flags & SPA_META_SYNC_TIMELINE_UNSCHEDULED_RELEASE))
			p->unscheduled++;
		ret = take_or_set_aside(p, s, "a dequeued buffer");
		if (ret != 0)
			return ret == 1 ? s : NULL;
	}
	return NULL;
}

static void
on_process(void *data)
{
	struct producer *p = data;
	struct slot *s;

	if (!p->have_frame)
		return;
	s = free_slot(p);
	if (!s) {
		if (!p->starved_ns)
			p->starved_ns = now_ns();
		return; /* the frame waits for a buffer, or the camera's next replaces it */
	}
	p->starved_ns = 0;
	p->starved_warned = false;
	produce(p, s);
}

/* The consumer keeps buffers, or none comes back: said once each, never waited for. */
static void
check_held(struct producer *p)
{
	int64_t now = now_ns();

	for (int i = 0; i < MAX_SLOTS; i++) {
		struct slot *s = &p->slots[i];

		if (s->pwb && s->aside_io && !s->warned && now - s->aside_ns > HELD_NS) {
			fprintf(stderr, PROG ": producer: the consumer has not released buffer %d "
				"(frame %u) in %d s: it stays aside until its release point "
				"signals; the other buffers take the frames\n",
				i, s->seq, (int)(HELD_NS / 1000000000));
			s->warned = true;
			p->held++;
		}
	}
	if (p->starved_ns && !p->starved_warned && now - p->starved_ns > HELD_NS) {
		fprintf(stderr, PROG ": producer: no buffer free for %d s: camera frames are "
			"dropped until one is\n", (int)(HELD_NS / 1000000000));
		p->starved_warned = true;
	}
}

/* The camera has a frame: keep the newest, and run a graph cycle for it. */
static void
on_camera(void *data, int fd, uint32_t mask)
{
	struct producer *p = data;
	int ret = capture_take_latest(p->cam, p->latest);

	if (ret < 0) {
		stream_fail(&p->side, "the camera", ret);
		return;
	}
	if (ret == 1 && p->have_frame && p->streaming)
		p->dropped++; /* the last one never found a buffer */
	p->have_frame |= ret == 1;
	check_held(p);
	if (p->have_frame && p->streaming)
		pw_stream_trigger_process(p->side.stream);
}

/* ---- the stream's buffers ------------------------------------------------- */

static void
on_param_changed(void *data, uint32_t id, const struct spa_pod *param)
{
	struct producer *p = data;
	struct spa_video_info_raw info = { 0 };

	if (id != SPA_PARAM_Format || !param)
		return;
	if (spa_format_video_raw_parse(param, &info) < 0 || info.size.width != p->opt->width ||
	    info.size.height != p->opt->height) {
		stream_fail(&p->side, "the negotiated format", -EINVAL);
		return;
	}
	stream_answer_format(&p->side, p->opt->width, p->opt->height);
}

static void
on_add_buffer(void *data, struct pw_buffer *pwb)
{
	struct producer *p = data;
	struct spa_data *d = &pwb->buffer->datas[0];
	struct slot *s = slot_of(p, NULL);
	int ret;

	if (!s) {
		stream_fail(&p->side, "too many buffers", -ENOSPC);
		return;
	}
	/* datas[0].type holds the types negotiated. */
	if (!(d->type & (1u << SPA_DATA_DmaBuf))) {
		stream_fail(&p->side, "the consumer takes no dma-buf", -EINVAL);
		return;
	}
	memset(s, 0, sizeof(*s));
	s->p = p;
	/* One YUYV texel pair = 32 bits: a (width / 2) × height × 32 bpp buffer. */
	ret = demo_vgem_buf_create(p->vgem, p->opt->width / 2, p->opt->height, 32, &s->vgem);
	if (ret == 0)
		ret = demo_vgem_buf_map(&s->vgem);
	if (ret < 0) {
		demo_vgem_buf_destroy(&s->vgem);
		stream_fail(&p->side, "a vgem buffer", ret);
		return;
	}
	/* Black until the first frame: Y 16, U and V 128. */
	for (uint64_t i = 0; i + 1 < s->vgem.size; i += 2) {
		((uint8_t *)s->vgem.map)[i] = 16;
		((uint8_t *)s->vgem.map)[i + 1] = 128;
	}
	d->type = SPA_DATA_DmaBuf;
	d->fd = fcntl(s->vgem.dmabuf_fd, F_DUPFD_CLOEXEC, 0);
	d->flags = SPA_DATA_FLAG_READWRITE;
	d->mapoffset = 0;
	d->maxsize = (uint32_t)s->vgem.size;
	d->data = NULL;
	if (d->fd < 0) {
		ret = -errno;
		demo_vgem_buf_destroy(&s->vgem);
		stream_fail(&p->side, "dup of a dma-buf", ret);
		return;
	}
	s->pwb = pwb;
	ret = sb_pw_buffer_add(p->side.sync, pwb->buffer, true);
	if (ret < 0) {
		stream_fail(&p->side, "sb_pw_buffer_add", ret);
		return;
	}
	p->synced += (unsigned)ret;
}

static void
on_remove_buffer(void *data, struct pw_buffer *pwb)
{
	struct producer *p = data;
	struct slot *s = slot_of(p, pwb);

	if (!s)
		return;
	/*
	 * A consumer that goes away mid-stream takes the buffers with it: the
	 * GPU thread may still write this one's memory.
	 */
	gpu_drain(p->gpu);
	/* Before the library closes the release fd the loop may be watching. */
	if (s->aside_io)
		pw_loop_destroy_source(stream_loop(&p->side), s->aside_io);
	sb_pw_buffer_remove(p->side.sync, pwb->buffer);
	if (pwb->buffer->datas[0].fd >= 0)
		close((int)pwb->buffer->datas[0].fd);
	pwb->buffer->datas[0].fd = -1;
	demo_vgem_buf_destroy(&s->vgem);
	memset(s, 0, sizeof(*s));
}

static void
on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state,
		 const char *error)
{
	struct producer *p = data;

	p->streaming = state == PW_STREAM_STATE_STREAMING;
	if (!p->streaming)
		p->starved_ns = 0; /* no consumer: nothing to say about buffers */
	if (state == PW_STREAM_STATE_ERROR)
		stream_fail(&p->side, error ? error : "stream error", -EIO);
}

static const struct pw_stream_events stream_events = STREAM_EVENTS;

/* ---- the process ------------------------------------------------------------ */

static int
setup(struct producer *p)
{
	int ret;

	p->vgem = demo_vgem_open();
	if (p->vgem < 0) {
		fprintf(stderr, PROG ": producer: no vgem: %s\n", strerror(-p->vgem));
		return -ENODEV;
	}
	ret = stream_side_open(&p->side);
	if (ret < 0)
		return ret;
	ret = capture_open(p->opt->width, p->opt->height, p->opt->fps, &p->cam);
	if (ret < 0)
		return ret;
	p->frame_size = (size_t)capture_stride(p->cam) * p->opt->height;
	p->latest = calloc(1, p->frame_size);
	if (!p->latest)
		return -ENOMEM;
	/* main() blocked SIGINT/SIGTERM: this thread inherits the mask. */
	ret = gpu_start(p->opt->write_ms, &p->gpu);
	if (ret < 0) {
		fprintf(stderr, PROG ": producer: the GPU thread: %s\n", strerror(-ret));
		return ret;
	}
	p->cam_io = pw_loop_add_io(stream_loop(&p->side), capture_fd(p->cam), SPA_IO_IN, false,
				   on_camera, p);
	return stream_side_connect(&p->side, PRODUCER_NODE, "Source", &stream_events, p, true,
				   PW_STREAM_FLAG_DRIVER | PW_STREAM_FLAG_ALLOC_BUFFERS,
				   p->opt->width, p->opt->height);
}

int
producer_run(const struct options *opt)
{
	struct producer p = { .opt = opt, .side = { .name = "producer", .drm = -1 }, .vgem = -1 };
	int ret;

	pw_init(NULL, NULL);
	ret = setup(&p);
	if (ret == 0) {
		printf("producer: %s, vivid %ux%u YUYV at %u fps, the GPU step pauses %u ms "
		       "mid-frame, bridge %s\n", PRODUCER_NODE, opt->width, opt->height, opt->fps,
		       opt->write_ms, bridge_disabled() ? "OFF (SYNCBRIDGE_DISABLE=1)" : "on");
		pw_main_loop_run(p.side.loop);
		printf("producer: %u frames sent, %u camera frames dropped (no buffer free), "
		       "%u times a buffer kept aside for its release or last write, %u held over "
		       "%d s, %u given back unseen, %u buffers with explicit sync\n", p.seq,
		       p.dropped, p.aside, p.held, (int)(HELD_NS / 1000000000), p.unscheduled,
		       p.synced);
	}
	stream_side_close(&p.side, p.cam_io);
	gpu_stop(p.gpu);
	capture_close(p.cam);
	free(p.latest);
	demo_fd_clear(&p.vgem);
	pw_deinit();
	if (ret == -ENODEV)
		return EXIT_SKIP;
	return ret < 0 || p.side.errors ? 1 : 0;
}
