/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-cube's consumer process (cube.c has the picture): it takes
 * the producer's ring, composites each frame at its refresh tick through a
 * backend (consumer_egl.c, consumer_vk.c), hands the buffer back, reads the
 * result back and judges it complete, stale or torn; with --output it keeps
 * a few frames and a contact sheet as PNG files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <syncbridge/syncbridge.h>

#include "cube.h"
#include "demo_util.h"

#define PROG "syncbridge-demo-cube"
#define FRAME_TIMEOUT_MS 60000

/* The contact sheet: SHEET_COLS × SHEET_ROWS frames picked evenly over the run. */
#define SHEET_COLS 8
#define SHEET_ROWS 3
#define SHEET_BORDER 3
#define SHEET_GAP 4
/* Individual frames written as PNG. */
#define SAVED_FRAMES 4

enum verdict { FRAME_COMPLETE, FRAME_STALE, FRAME_TORN };

static const uint8_t verdict_rgb[3][3] = {
	{ 60, 200, 90 },  /* complete: green */
	{ 240, 170, 40 }, /* stale: amber */
	{ 230, 50, 50 },  /* torn: red */
};

int
cube_run_init(struct cube_run *run, const struct cube_options *opt)
{
	*run = (struct cube_run){ .opt = opt, .first_torn = -1, .first_stale = -1 };
	run->done_ns = calloc(opt->frames, sizeof(*run->done_ns));
	if (!run->done_ns)
		return -ENOMEM;
	if (!opt->output)
		return 0;
	int ret = demo_mkdir_p(opt->output);
	if (ret < 0) {
		fprintf(stderr, PROG ": cannot create %s: %s\n", opt->output, strerror(-ret));
		return ret;
	}
	run->sheet = (struct demo_sheet){ .cols = SHEET_COLS, .rows = SHEET_ROWS,
					  .frame_w = opt->width, .frame_h = opt->height,
					  .border = SHEET_BORDER, .gap = SHEET_GAP };
	return demo_sheet_alloc(&run->sheet);
}

void
cube_run_write_sheet(struct cube_run *run)
{
	if (run->opt->output && run->sheet_cells) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/contact-sheet.png", run->opt->output);
		int r = demo_sheet_write(&run->sheet, path);
		if (r < 0)
			fprintf(stderr, PROG ": writing %s: %s\n", path, strerror(-r));
	}
	free(run->sheet.rgb);
	run->sheet.rgb = NULL;
}

static unsigned
sheet_frame(const struct cube_options *opt, unsigned cell)
{
	return (unsigned)((uint64_t)cell * opt->frames / (SHEET_COLS * SHEET_ROWS));
}

static bool
is_saved_frame(const struct cube_options *opt, unsigned frame)
{
	for (unsigned k = 0; k < SAVED_FRAMES; k++)
		if (frame == (unsigned)((uint64_t)k * (opt->frames - 1) / (SAVED_FRAMES - 1)))
			return true;
	return false;
}

static void
save_png(const struct cube_options *opt, const char *name, unsigned frame, const uint8_t *rgba)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s-%03u.png", opt->output, name, frame);
	int ret = demo_png_write(path, rgba, opt->width, opt->height, opt->width * 4, 4);
	if (ret < 0)
		fprintf(stderr, PROG ": writing %s: %s\n", path, strerror(-ret));
}

static enum verdict
check_frame(const struct cube_options *opt, unsigned frame, const uint8_t *rgba,
	    size_t *n_new, size_t *n_old)
{
	size_t n = (size_t)opt->width * opt->height;
	uint8_t want = cube_stamp(frame);
	/* What the buffer held before: the frame one ring earlier, or nothing. */
	uint8_t old = frame >= opt->buffers ? cube_stamp(frame - opt->buffers) : CUBE_ALPHA_INITIAL;

	*n_new = *n_old = 0;
	for (size_t i = 0; i < n; i++) {
		*n_new += rgba[4 * i + 3] == want;
		*n_old += rgba[4 * i + 3] == old;
	}
	if (*n_new == n)
		return FRAME_COMPLETE;
	/* Pixels of a frame in progress (CUBE_ALPHA_CLEAR) or of two frames: torn. */
	return *n_old == n ? FRAME_STALE : FRAME_TORN;
}

/*
 * The producer's ring: its message and its fds, every fd checked to be a
 * dma-buf, into bufs (which owns the fds, also on failure).
 */
static int
receive_buffers(int sock, const struct cube_options *opt, struct cube_buffers *bufs)
{
	struct cube_msg m;
	int n_fds = 0;
	int ret = demo_recv(sock, &m, sizeof(m), bufs->fds, CUBE_MAX_BUFFERS, &n_fds,
			    CUBE_START_TIMEOUT_MS);

	if (ret == -ETIMEDOUT)
		fprintf(stderr, PROG ": consumer: no buffers from the producer in %d s\n",
			CUBE_START_TIMEOUT_MS / 1000);
	if (ret < 0)
		return ret; /* the producer could not start: it says why */
	bufs->count = (unsigned)n_fds;
	if (m.type != CUBE_MSG_BUFFERS || m.count != (uint32_t)n_fds || m.count != opt->buffers ||
	    m.width != opt->width || m.height != opt->height) {
		fprintf(stderr, PROG ": consumer: malformed buffer message\n");
		return -EPROTO;
	}
	/* Every fd from the other process is checked before use. */
	for (unsigned i = 0; i < bufs->count; i++) {
		if (!sb_dmabuf_is_valid(bufs->fds[i])) {
			fprintf(stderr, PROG ": consumer: fd %u is not a dma-buf\n", i);
			return -EPROTO;
		}
	}
	bufs->width = m.width;
	bufs->height = m.height;
	bufs->pitch = m.pitch;
	bufs->offset = m.offset;
	bufs->drm_format = m.drm_format;
	bufs->size = m.size;
	bufs->modifier = m.modifier;
	return 0;
}

/* --output: the sampled frames, the first torn and stale ones, the contact sheet's cells. */
static void
save_pictures(const struct cube_options *opt, struct cube_run *run, uint32_t frame, enum verdict v,
	      size_t n_new, const uint8_t *rgba)
{
	if (is_saved_frame(opt, frame))
		save_png(opt, "frame", frame, rgba);
	/* The first torn frame, and a few that show part of themselves. */
	if (v == FRAME_TORN && (run->first_torn < 0 || (n_new > 0 && run->torn_saved < 3))) {
		if (run->first_torn < 0)
			run->first_torn = (int)frame;
		run->torn_saved += n_new > 0;
		save_png(opt, "torn", frame, rgba);
	}
	if (v == FRAME_STALE && run->first_stale < 0) {
		run->first_stale = (int)frame;
		save_png(opt, "stale", frame, rgba);
	}
	for (unsigned cell = 0; cell < SHEET_COLS * SHEET_ROWS; cell++)
		if (sheet_frame(opt, cell) == frame &&
		    (cell == 0 || sheet_frame(opt, cell - 1) != frame)) {
			demo_sheet_put(&run->sheet, cell, rgba, verdict_rgb[v]);
			run->sheet_cells = cell + 1;
		}
}

/* A frame read back (rgba): complete, stale or torn, counted, said, saved. */
static void
judge_frame(const struct cube_options *opt, struct cube_run *run, const struct cube_msg *m,
	    const uint8_t *rgba, int64_t t_read)
{
	size_t n_new, n_old;
	enum verdict v = check_frame(opt, m->frame, rgba, &n_new, &n_old);

	run->frames++;
	run->latency_ms_sum += (double)(t_read - m->submit_ns) / 1e6;
	if (v == FRAME_TORN)
		run->torn++;
	if (v == FRAME_STALE)
		run->stale++;
	if (opt->verbose || v != FRAME_COMPLETE)
		if (opt->verbose || run->torn + run->stale <= 5)
			printf("consumer: frame %u (buffer %u): %s — %zu px of this frame, %zu of "
			       "the previous one, of %zu; read %.1f ms after submit\n",
			       m->frame, m->index,
			       v == FRAME_COMPLETE ? "complete" :
			       v == FRAME_STALE ? "STALE" : "TORN",
			       n_new, n_old, (size_t)opt->width * opt->height,
			       (double)(t_read - m->submit_ns) / 1e6);
	if (opt->output)
		save_pictures(opt, run, m->frame, v, n_new, rgba);
}

/* Like a compositor, latch the newest frame at the next refresh tick; returns when. */
static int64_t
wait_for_refresh(int64_t clock0, int64_t period)
{
	int64_t t = now_ns();

	if (period <= 0)
		return t;
	demo_sleep_ns(clock0 + ((t - clock0) / period + 1) * period - t);
	return now_ns();
}

/* The producer's next message: 1 with a frame in m, 0 at its END, or -errno (said). */
static int
next_frame(int sock, const struct cube_options *opt, const struct cube_run *run,
	   struct cube_msg *m)
{
	int ret = demo_recv(sock, m, sizeof(*m), NULL, 0, NULL, FRAME_TIMEOUT_MS);

	if (ret < 0) {
		fprintf(stderr, PROG ": consumer: waiting for a frame: %s\n",
			ret == -EPIPE ? "the producer went away" : strerror(-ret));
		return ret;
	}
	if (m->type == CUBE_MSG_END)
		return 0;
	if (m->type != CUBE_MSG_FRAME || m->index >= opt->buffers || m->frame != run->frames) {
		fprintf(stderr, PROG ": consumer: unexpected message %u (frame %u, buffer %u)\n",
			m->type, m->frame, m->index);
		return -EPROTO;
	}
	return 1;
}

int
cube_consume(int sock, const struct cube_options *opt, struct cube_run *run)
{
	const struct cube_backend *backend =
		strcmp(opt->consumer, "vulkan") == 0 ? &cube_backend_vulkan : &cube_backend_egl;
	struct cube_consumer *c = NULL;
	struct cube_buffers bufs = { .count = 0 };
	uint8_t *rgba = NULL;
	struct cube_msg m;
	int ret;

	/* Our device comes up while the producer brings up its own. */
	ret = backend->open(&c, opt);
	if (ret < 0)
		return ret;
	ret = receive_buffers(sock, opt, &bufs);
	if (ret < 0)
		goto out;
	ret = backend->import(c, &bufs); /* takes the fds */
	bufs.count = 0;
	if (ret < 0)
		goto out;
	const char *description = backend->describe(c);
	printf("consumer: %s\n", description);
	run->venus = backend->on_venus(c);
	fflush(stdout);
	rgba = malloc((size_t)opt->width * opt->height * 4);
	if (!rgba) {
		ret = -ENOMEM;
		goto out;
	}
	m = (struct cube_msg){ .type = CUBE_MSG_READY };
	ret = demo_send(sock, &m, sizeof(m), NULL, 0);
	if (ret < 0)
		goto out;

	int64_t clock0 = now_ns(), period = (int64_t)opt->refresh_ms * 1000000;
	while ((ret = next_frame(sock, opt, run, &m)) > 0) {
		int64_t t_read = wait_for_refresh(clock0, period);
		ret = backend->composite(c, m.index);
		if (ret == 0 && opt->cpu_sync)
			ret = backend->finish(c);
		if (ret < 0)
			goto out;
		if (run->done_ns)
			run->done_ns[run->frames] = now_ns();
		struct cube_msg rel = {
			.type = CUBE_MSG_RELEASE, .frame = m.frame, .index = m.index,
		};
		ret = demo_send(sock, &rel, sizeof(rel), NULL, 0);
		if (ret < 0)
			goto out;
		if (opt->no_check) {
			run->frames++;
			continue;
		}
		ret = backend->read_back(c, rgba);
		if (ret < 0) {
			fprintf(stderr, PROG ": consumer: read back failed\n");
			goto out;
		}
		judge_frame(opt, run, &m, rgba, t_read);
	}
out:
	if (c)
		backend->destroy(c);
	cube_buffers_close(&bufs);
	free(rgba);
	return ret;
}

/*
 * Frames/s from the first frame's hand-back to the last one's (the start-up,
 * compiling pipelines included, is left out), and the frame-to-frame
 * intervals: `rate: fps=F frames=N seconds=S interval_ms median M p90 P`.
 */
void
cube_print_rate(const struct cube_options *opt, const struct cube_run *run)
{
	if (run->frames < 2)
		return;
	unsigned n = run->frames - 1;
	int64_t *iv = malloc(n * sizeof(*iv));
	if (!iv)
		return;
	for (unsigned i = 0; i < n; i++)
		iv[i] = run->done_ns[i + 1] - run->done_ns[i];
	if (opt->intervals) {
		printf("intervals_us:");
		for (unsigned i = 0; i < n; i++)
			printf("%s%lld", i ? "," : " ", (long long)(iv[i] / 1000));
		printf("\n");
	}
	double seconds = (double)(run->done_ns[run->frames - 1] - run->done_ns[0]) / 1e9;
	demo_sort_i64(iv, n);
	/* Nearest rank. */
	size_t p50 = (n + 1) / 2, p90 = (size_t)((9ull * n + 9) / 10);
	printf("rate: fps=%.2f frames=%u seconds=%.3f interval_ms median %.2f p90 %.2f\n",
	       seconds > 0 ? n / seconds : 0.0, run->frames, seconds, iv[p50 - 1] / 1e6,
	       iv[p90 - 1] / 1e6);
	free(iv);
}
