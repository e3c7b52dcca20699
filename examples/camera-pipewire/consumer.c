/* SPDX-License-Identifier: MIT */
/*
 * The consumer process: a PipeWire video stream in, EGL/GLES on llvmpipe,
 * every frame checked. For each buffer the stream gives it:
 *
 *   sb_pw_consumer_acquire()          the acquire point as a sync_file
 *   sb_egl_sync_file_wait()           GL waits for the producer's write
 *   YUYV → RGB into its own texture   the read (convert.c)
 *   read the RGB back, check it: the top and the bottom stamp must both be
 *   the header's seq, else the frame is torn
 *   sb_pw_consumer_release(read fence), pw_stream_queue_buffer()
 *
 * The release comes after the check: until its release point signals the
 * producer keeps the buffer aside and writes the next frames into others
 * (producer.c).
 *
 * A buffer negotiated without explicit sync (the fallback) is waited for
 * through its dma-buf's implicit fences instead (sb_egl_dmabuf_wait()).
 * With SYNCBRIDGE_DISABLE=1 every bridge call is a no-op: GL reads whatever
 * the buffer holds when it gets to it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/buffer/meta.h>
#include <spa/param/video/format-utils.h>
#include <spa/pod/builder.h>

#include <syncbridge/pipewire.h>

#include "camera_pw.h"

#define STALL_NS (INT64_C(60) * 1000000000)

struct cslot {
	struct pw_buffer *pwb; /* NULL: a free slot */
	struct convert_image *img;
};

struct consumer {
	const struct options *opt;
	struct stream_side side;
	struct spa_source *watchdog;
	struct convert *cv;
	struct sheet *sheet;
	struct cslot slots[MAX_SLOTS];
	uint32_t width, height;
	uint8_t *rgba;
	unsigned done, torn, synced;
	int64_t start_ns, progress_ns;
};

static struct cslot *
slot_of(struct consumer *c, struct pw_buffer *pwb)
{
	for (int i = 0; i < MAX_SLOTS; i++)
		if (c->slots[i].pwb == pwb)
			return &c->slots[i];
	return NULL;
}

/* ---- one frame ------------------------------------------------------------ */

/* Wait and convert; *read_fence: the read's, for the release. */
static int
read_frame(struct consumer *c, struct cslot *s, int *read_fence)
{
	struct spa_buffer *buf = s->pwb->buffer;
	struct spa_data *d = &buf->datas[0];
	int acquire = -1, ret;

	if (d->type != SPA_DATA_DmaBuf || d->fd < 0) {
		stream_fail(&c->side, "a buffer without a dma-buf", -EINVAL);
		return -EINVAL;
	}
	if (!s->img) {
		uint32_t stride = d->chunk->stride > 0 ? (uint32_t)d->chunk->stride : c->width * 2;
		ret = convert_import(c->cv, (int)d->fd, d->chunk->offset, stride, &s->img);
		if (ret < 0) {
			stream_fail(&c->side, "importing a buffer into EGL", ret);
			return ret;
		}
	}
	ret = sb_pw_consumer_acquire(c->side.sync, buf, &acquire);
	if (ret < 0) {
		stream_fail(&c->side, "sb_pw_consumer_acquire", ret);
		return ret;
	}
	ret = convert_frame(c->cv, s->img, acquire,
			    sb_pw_buffer_is_synced(c->side.sync, buf) ? -1 : (int)d->fd,
			    read_fence);
	demo_fd_clear(&acquire); /* the bridge only borrowed it */
	if (ret < 0)
		stream_fail(&c->side, "the frame's conversion", ret);
	return ret;
}

/* Read back what was shown and check its stamps. */
static int
check_frame(struct consumer *c, uint32_t seq)
{
	uint32_t row = c->width * 4, top, bottom;
	bool torn;
	int ret = convert_read(c->cv, c->rgba);

	if (ret < 0) {
		stream_fail(&c->side, "reading the frame back", ret);
		return ret;
	}
	top = stamp_read_rgba(c->rgba + (size_t)row * (STAMP_ROWS / 2), c->width);
	bottom =
		stamp_read_rgba(c->rgba + (size_t)row * (c->height - 1 - STAMP_ROWS / 2), c->width);
	seq &= (1u << STAMP_BITS) - 1;
	torn = top != seq || bottom != seq;
	c->torn += torn;
	if (c->opt->verbose || (torn && c->torn <= 5))
		printf("consumer: frame %u (seq %u): top stamp %u, bottom stamp %u%s\n", c->done,
		       seq, top, bottom, torn ? ": TORN" : "");
	sheet_add(c->sheet, c->done, c->rgba, torn);
	c->done++;
	c->progress_ns = now_ns();
	return 0;
}

static void
on_process(void *data)
{
	struct consumer *c = data;
	struct pw_buffer *pwb;

	while (c->done < c->opt->frames && (pwb = pw_stream_dequeue_buffer(c->side.stream))) {
		struct spa_meta_header *h =
			spa_buffer_find_meta_data(pwb->buffer, SPA_META_Header, sizeof(*h));
		struct cslot *s = slot_of(c, pwb);
		int read_fence = -1, ret;

		if (!s || !h) {
			pw_stream_queue_buffer(c->side.stream, pwb);
			stream_fail(&c->side,
				    !s ? "an unknown buffer" : "a buffer without a header meta",
				    -EINVAL);
			return;
		}
		ret = read_frame(c, s, &read_fence);
		if (ret == 0)
			ret = check_frame(c, (uint32_t)h->seq);
		if (ret == 0) {
			/* The producer may write the buffer once the read is done. */
			ret = sb_pw_consumer_release(c->side.sync, pwb->buffer, read_fence);
			if (ret < 0)
				stream_fail(&c->side, "sb_pw_consumer_release", ret);
		}
		demo_fd_clear(&read_fence);
		pw_stream_queue_buffer(c->side.stream, pwb);
		if (ret < 0)
			return;
	}
	if (c->done >= c->opt->frames)
		pw_main_loop_quit(c->side.loop);
}

/* ---- the stream's buffers ------------------------------------------------- */

static void
on_param_changed(void *data, uint32_t id, const struct spa_pod *param)
{
	struct consumer *c = data;
	struct spa_video_info_raw info = { 0 };
	int ret;

	if (id != SPA_PARAM_Format || !param)
		return;
	if (spa_format_video_raw_parse(param, &info) < 0 || info.size.width < 2 * STAMP_BITS ||
	    info.size.width % 2 || info.size.height < 2 * STAMP_ROWS) {
		stream_fail(&c->side, "the negotiated format", -EINVAL);
		return;
	}
	if (c->rgba && (info.size.width != c->width || info.size.height != c->height)) {
		stream_fail(&c->side, "the frame size changed mid-run", -EINVAL);
		return;
	}
	c->width = info.size.width;
	c->height = info.size.height;
	ret = convert_set_size(c->cv, c->width, c->height);
	if (ret == 0 && !c->rgba && !(c->rgba = malloc((size_t)c->width * c->height * 4)))
		ret = -ENOMEM;
	if (ret == 0 && c->opt->output && !c->sheet)
		ret = sheet_create(c->opt->output, c->opt->frames, c->width, c->height, &c->sheet);
	if (ret < 0) {
		stream_fail(&c->side, "the frame's target", ret);
		return;
	}
	stream_answer_format(&c->side, c->width, c->height);
}

static void
on_add_buffer(void *data, struct pw_buffer *pwb)
{
	struct consumer *c = data;
	struct cslot *s = slot_of(c, NULL);
	int ret;

	if (!s) {
		stream_fail(&c->side, "too many buffers", -ENOSPC);
		return;
	}
	/* The planes' syncobjs are imported here; the dma-buf on first use. */
	ret = sb_pw_buffer_add(c->side.sync, pwb->buffer, false);
	if (ret < 0) {
		stream_fail(&c->side, "sb_pw_buffer_add", ret);
		return;
	}
	c->synced += (unsigned)ret;
	s->pwb = pwb;
	s->img = NULL;
}

static void
on_remove_buffer(void *data, struct pw_buffer *pwb)
{
	struct consumer *c = data;
	struct cslot *s = slot_of(c, pwb);

	if (!s)
		return;
	sb_pw_buffer_remove(c->side.sync, pwb->buffer);
	convert_image_destroy(c->cv, s->img);
	s->img = NULL;
	s->pwb = NULL;
}

static void
on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state,
		 const char *error)
{
	struct consumer *c = data;

	if (state == PW_STREAM_STATE_ERROR)
		stream_fail(&c->side, error ? error : "stream error", -EIO);
}

static const struct pw_stream_events stream_events = STREAM_EVENTS;

static void
on_watchdog(void *data, uint64_t expirations)
{
	struct consumer *c = data;

	if (now_ns() - c->progress_ns > STALL_NS)
		stream_fail(&c->side,
			    c->done ? "no frame for 60 s"
				    : "no frame in 60 s (is the producer linked?)",
			    -ETIME);
}

/* ---- the process ------------------------------------------------------------ */

static int
setup(struct consumer *c)
{
	struct timespec second = { .tv_sec = 1 };
	int ret;

	ret = convert_create(&c->cv);
	if (ret < 0) {
		fprintf(stderr, PROG ": consumer: no EGL display that imports dma-bufs (the EGL "
			"device platform's software device; run it in the test guest)\n");
		return -ENODEV;
	}
	ret = stream_side_open(&c->side);
	if (ret < 0)
		return ret;
	c->watchdog = pw_loop_add_timer(stream_loop(&c->side), on_watchdog, c);
	pw_loop_update_timer(stream_loop(&c->side), c->watchdog, &second, &second, false);
	return stream_side_connect(&c->side, CONSUMER_NODE, "Capture", &stream_events, c, false,
				   PW_STREAM_FLAG_NONE, c->opt->width, c->opt->height);
}

int
consumer_run(const struct options *opt)
{
	struct consumer c = { .opt = opt, .side = { .name = "consumer", .drm = -1 } };
	bool ok;
	int ret;

	pw_init(NULL, NULL);
	ret = setup(&c);
	if (ret == 0) {
		/* What the EGL bridge does here, SYNCBRIDGE_DISABLE included. */
		printf("consumer: %s, %u frames, %s\n", CONSUMER_NODE, opt->frames,
		       convert_describe(c.cv));
		c.start_ns = c.progress_ns = now_ns();
		pw_main_loop_run(c.side.loop);
		if (c.done)
			printf("consumer: %u frames in %.1f s\n", c.done,
			       (double)(c.progress_ns - c.start_ns) / 1e9);
	}
	stream_side_close(&c.side, c.watchdog);
	if (sheet_finish(c.sheet) < 0)
		c.side.errors++;
	convert_destroy(c.cv);
	free(c.rgba);
	pw_deinit();
	if (ret == -ENODEV)
		return EXIT_SKIP;
	if (ret < 0)
		return 1;

	printf("frames=%u torn=%u synced=%u\n", c.done, c.torn, c.synced);
	if (opt->output)
		printf("pictures: %s/ (contact-sheet.png: green border = whole frame, red = "
		       "torn)\n",
		       opt->output);
	ok = !c.side.errors && c.done == opt->frames;
	if (opt->expect_race) {
		printf("%s\n", c.torn ? "as expected without the bridge: the consumer read frames "
					"before their writes were done"
				      : "UNEXPECTED: no torn frame without the bridge");
		return ok && c.torn ? 0 : 1;
	}
	return ok && !c.torn ? 0 : 1;
}
