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
 *
 * Files: camera.c (options, setup, the threads, the verdict), source.c (the
 * source thread), consumer.c (the consumer), holder.c (the holder thread),
 * vk_reader.c (the Vulkan read), egl_display.c (the display stage, on
 * common/eglt), camera.h (what they share).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "camera.h"

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
		"  --expect-race        succeed only if a frame was overwritten while read (the "
		"control)\n"
		"  --size WxH           vivid capture size (default 320x180)\n"
		"  --seed N             random holds (default 1)\n"
		"  --output DIR         a few camera frames as PNG\n"
		"  --layer-dir DIR      XDG data dir with the layer's manifest (default: the\n"
		"                       installed layer)\n"
		"  --verbose\n",
		MAX_BUFFERS);
}

static int
parse_args(int argc, char **argv, struct options *o)
{
	static const char *const sources[] = {
		[SOURCE_VIVID] = "vivid", [SOURCE_VGEM] = "vgem", NULL};
	static const char *const consumers[] = { "cpu", "vulkan", NULL };
	static const char *const displays[] = { "none", "egl", NULL };
	int source = SOURCE_VIVID, consumer = 1;
	const struct demo_opt opts[] = {
		{ "source", DEMO_OPT_WORD, &source, .words = sources },
		{ "frames", DEMO_OPT_UINT, &o->frames, 1, UINT_MAX },
		{ "buffers", DEMO_OPT_UINT, &o->buffers, 2, MAX_BUFFERS },
		/* vgem fences expire after 10 s */
		{ "hold-ms", DEMO_OPT_UINT, &o->hold_ms, 0, 5000 },
		{ "consumer", DEMO_OPT_WORD, &consumer, .words = consumers },
		{ "display", DEMO_OPT_WORD, &o->display, .words = displays },
		{ "mailbox", DEMO_OPT_FLAG, &o->mailbox },
		{ "no-queue-wait", DEMO_OPT_FLAG, &o->no_wait },
		{ "expect-race", DEMO_OPT_FLAG, &o->expect_race },
		{ "size", DEMO_OPT_SIZE, &o->width, 1, 65535, .dst2 = &o->height },
		{ "seed", DEMO_OPT_UINT, &o->seed, 0, UINT_MAX },
		{ "output", DEMO_OPT_STRING, &o->output },
		{ "layer-dir", DEMO_OPT_STRING, &o->layer_dir },
		{ "verbose", DEMO_OPT_FLAG, &o->verbose, .short_name = 'v' },
		{ NULL },
	};

	*o = (struct options){ .frames = 60, .buffers = 4, .hold_ms = 50, .display = -1, .seed = 1,
			       .width = 320, .height = 180 };
	if (demo_opt_parse(PROG, argc, argv, opts, usage, 0) < 0)
		return -EINVAL;
	o->source = (enum source_kind)source;
	o->vulkan = consumer == 1;
	if (sb_env_get_bool("SYNCBRIDGE_DISABLE", false))
		o->no_wait = true;
	return 0;
}

static void
setup_environment(struct options *o)
{
	demo_layer_env(o->layer_dir);
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
	camera_source_teardown(a);
	for (unsigned i = 0; i < HOLD_POOL; i++)
		demo_vgem_buf_destroy(&a->fences[i].bo);
	demo_fd_clear(&a->vgem_fd);
}

/* Fds start at -1, the lock and condition the threads share. */
static void
app_init(struct app *a)
{
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
}

/* The queue over the buffers, and the Vulkan reader (--consumer vulkan) on them. */
static int
start_queue(struct app *a)
{
	int ret = sb_buffer_queue_create(a->count, a->opt.mailbox ? SB_BUFFER_QUEUE_MAILBOX : 0,
					 &a->queue);

	for (unsigned i = 0; ret == 0 && i < a->count; i++)
		ret = sb_buffer_queue_set_dmabuf(a->queue, i, a->bufs[i].dmabuf);
	if (ret < 0 || !a->opt.vulkan)
		return ret;

	int fds[MAX_BUFFERS];
	size_t sizes[MAX_BUFFERS];
	for (unsigned i = 0; i < a->count; i++) {
		fds[i] = a->bufs[i].dmabuf;
		sizes[i] = a->bufs[i].size;
	}
	ret = vk_reader_create(fds, sizes, a->count, &a->vk);
	if (ret < 0)
		return ret;
	printf("consumer: %s\n", vk_reader_describe(a->vk));
	if (!vk_reader_layer_active(a->vk) && !a->opt.no_wait) {
		fprintf(stderr, PROG ": the syncbridge layer is not active\n");
		return -ENOENT;
	}
	return 0;
}

/* The EGL display stage, a second reader of every frame (default: for vivid). */
static int
start_display(struct app *a)
{
	if (a->opt.display == -1)
		a->opt.display = a->opt.source == SOURCE_VIVID;
	if (!a->opt.display)
		return 0;
#ifdef CAMERA_HAVE_EGL
	int fds[MAX_BUFFERS];
	for (unsigned i = 0; i < a->count; i++)
		fds[i] = a->bufs[i].dmabuf;
	if (a->opt.source != SOURCE_VIVID) {
		fprintf(stderr,
			PROG ": the display stage shows YUYV camera frames (--source vivid)\n");
		return -EINVAL;
	}
	int ret = egl_display_create(fds, a->count, a->width, a->height, a->stride, &a->disp);
	if (ret < 0)
		return ret;
	printf("display: %s\n", egl_display_describe(a->disp));
#else
	fprintf(stderr, PROG ": built without EGL: no display stage\n");
#endif
	return 0;
}

/*
 * The source and holder threads around the consumer (this thread), until
 * the source ends the queue; *secs: how long it took.
 */
static int
run(struct app *a, double *secs)
{
	pthread_t source, holder;
	pthread_create(&holder, NULL, camera_holder_main, a);
	pthread_create(&source, NULL, camera_source_main, a);
	int64_t t0 = now_ns();
	int ret = camera_consume(a);
	if (ret < 0)
		sb_buffer_queue_close(a->queue);
	pthread_join(source, NULL);
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(holder, NULL);
	*secs = (double)(now_ns() - t0) / 1e9;
	return ret == 0 ? a->source_ret : ret;
}

/*
 * The exit status: every frame consumed (FIFO), none overwritten, reused
 * while busy or torn, no fd leaked; with --expect-race, frames overwritten.
 */
static int
verdict(struct app *a, int fds_start, int fds_end)
{
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
		fprintf(stderr, PROG ": %" PRIu64 " of %u frames consumed\n", a->c.frames,
			a->opt.frames);
	return all && fds_ok && races == 0 && a->c.torn == 0 ? 0 : 1;
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
	app_init(a);

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
	ret = a->opt.source == SOURCE_VGEM ? camera_vgem_setup(a) : camera_vivid_setup(a);
	if (ret < 0)
		goto out;
	if (a->opt.source == SOURCE_VIVID)
		printf("camera: vivid %ux%u YUYV, %u bytes per row\n", a->width, a->height,
		       a->stride);
	if (a->opt.output && (ret = demo_mkdir_p(a->opt.output)) < 0)
		goto out;
	if ((ret = start_queue(a)) < 0 || (ret = start_display(a)) < 0)
		goto out;

	double secs;
	ret = run(a, &secs);
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
	return verdict(a, fds_start, fds_end);
}
