/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-cube: a vkcube-style producer/consumer pair that checks
 * every frame it shows.
 *
 *   producer (child process, Vulkan)          consumer (parent, EGL/GLES or Vulkan)
 *   ────────────────────────────────          ─────────────────────────────────────
 *   ring of vgem dma-bufs, imported as
 *   LINEAR images; fds sent once ──SCM_RIGHTS──► import each (EGLImage / VkImage)
 *   per frame N, buffer I = N % ring:
 *     wait until the consumer released I ◄──── "released I"
 *     acquire I from FOREIGN                   │
 *     clear, cube, stamp pass (alpha = N)      │
 *     release I to FOREIGN, vkQueueSubmit      │
 *     "frame N in I" ────────────────────────► at its next refresh tick:
 *                                              bridge wait for I's writers
 *                                              composite I into its own target
 *                                              bridge: attach the read's fence
 *                                              "released I", read back, check:
 *                                                every pixel stamped N   → complete
 *                                                every pixel as before   → stale
 *                                                anything else           → torn
 *
 * The bridge is VK_LAYER_SYNCBRIDGE_implicit_sync in the producer (it turns
 * the FOREIGN transfers into the dma-buf's kernel fences) and libsyncbridge-egl
 * (or the layer again) in the consumer. With --no-bridge (SYNCBRIDGE_DISABLE=1)
 * the loader skips the layer and the EGL bridge's calls do nothing: the
 * consumer reads while the GPU is still drawing, and the checks say so.
 *
 * Prints `frames=N torn=T stale=S`; with --output DIR writes a few frames,
 * some torn ones, the first stale one, and a contact sheet as PNG files.
 * Needs root, vgem and a Vulkan driver that imports dma-bufs (lavapipe in the
 * test guest: scripts/vm/vm-run.sh -- build/examples/syncbridge-demo-cube).
 * Exit status: 0 as expected, 1 not (or an error), 2 usage, 77 cannot run here.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/wait.h>

#include <syncbridge/syncbridge.h>

#include "cube.h"
#include "demo_util.h"

#define PROG "syncbridge-demo-cube"
#define EXIT_USAGE 2
#define EXIT_SKIP 77
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

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [OPTIONS]\n"
		"  --frames N        frames to render (default 120)\n"
		"  --buffers N       dma-bufs in the ring, 2..%d (default 3)\n"
		"  --size WxH        frame size (default 160x120)\n"
		"  --work N          fragment shader iterations per pixel (default 8)\n"
		"  --refresh-ms N    the consumer composites at its next refresh tick, every\n"
		"                    N ms, as a compositor does at vblank (default 40; 0: at "
		"once)\n"
		"  --consumer KIND   egl (default) or vulkan\n"
		"  --producer KIND   vulkan (default: lavapipe into a vgem ring) or gles (GLES\n"
		"                    on the GPU's own textures: Mesa virgl in the GPU guest;\n"
		"                    the egl consumer then imports them on the same GPU)\n"
		"  --ring KIND       the vulkan producer's buffers: vgem (default: vgem dumb\n"
		"                    buffers imported into Vulkan) or device (the driver's own\n"
		"                    LINEAR images exported as dma-bufs, for drivers that\n"
		"                    import no other driver's buffers: venus)\n"
		"  --no-bridge       run without syncbridge (SYNCBRIDGE_DISABLE=1)\n"
		"  --cpu-sync        without syncbridge, synchronised by CPU stalls instead:\n"
		"                    vkQueueWaitIdle before each hand-off, glFinish before\n"
		"                    each release (the floor of docs/performance.md, figure 6)\n"
		"  --flush           gles producer without the bridge: glFlush before each\n"
		"                    hand-off, as a producer written for implicit sync does\n"
		"  --no-check        do not read frames back: only count and time them\n"
		"  --intervals       print every frame-to-frame interval (for bench-vk-cube)\n"
		"  --expect-race     succeed only if frames were torn or stale (the control)\n"
		"  --output DIR      write PNGs: frames, torn/stale ones, a contact sheet\n"
		"  --layer-dir DIR   XDG data dir holding vulkan/implicit_layer.d/ with the\n"
		"                    syncbridge layer (default: the installed layer)\n"
		"  --verbose         one line per frame\n",
		CUBE_MAX_BUFFERS);
}

static int
parse_args(int argc, char **argv, struct cube_options *opt)
{
	static const char *const consumers[] = { "egl", "vulkan", NULL };
	static const char *const producers[] = { "vulkan", "gles", NULL };
	static const char *const rings[] = { "vgem", "device", NULL };
	int consumer = 0, producer = 0, ring = 0;
	const struct demo_opt opts[] = {
		{ "frames", DEMO_OPT_UINT, &opt->frames, 1, 1000000 },
		{ "buffers", DEMO_OPT_UINT, &opt->buffers, 2, CUBE_MAX_BUFFERS },
		{ "size", DEMO_OPT_SIZE, &opt->width, 16, 4096, .dst2 = &opt->height },
		{ "work", DEMO_OPT_UINT, &opt->work, 0, 100000 },
		{ "refresh-ms", DEMO_OPT_UINT, &opt->refresh_ms, 0, 10000 },
		{ "consumer", DEMO_OPT_WORD, &consumer, .words = consumers },
		{ "producer", DEMO_OPT_WORD, &producer, .words = producers },
		{ "ring", DEMO_OPT_WORD, &ring, .words = rings },
		{ "flush", DEMO_OPT_FLAG, &opt->flush },
		{ "no-bridge", DEMO_OPT_FLAG, &opt->no_bridge },
		{ "cpu-sync", DEMO_OPT_FLAG, &opt->cpu_sync },
		{ "no-check", DEMO_OPT_FLAG, &opt->no_check },
		{ "intervals", DEMO_OPT_FLAG, &opt->intervals },
		{ "expect-race", DEMO_OPT_FLAG, &opt->expect_race },
		{ "output", DEMO_OPT_STRING, &opt->output },
		{ "layer-dir", DEMO_OPT_STRING, &opt->layer_dir },
		{ "verbose", DEMO_OPT_FLAG, &opt->verbose, .short_name = 'v' },
		{ NULL },
	};

	*opt = (struct cube_options){
		.frames = 120,
		.buffers = 3,
		.width = 160,
		.height = 120,
		.work = 8,
		.refresh_ms = 40,
	};
	if (demo_opt_parse(PROG, argc, argv, opts, usage, 0) < 0)
		return -EINVAL;
	opt->consumer = consumers[consumer];
	opt->producer = producers[producer];
	opt->ring_device = ring == 1;
	if (opt->cpu_sync)
		opt->no_bridge = true;
	if (sb_env_get_bool("SYNCBRIDGE_DISABLE", false))
		opt->no_bridge = true;
	bool gles = strcmp(opt->producer, "gles") == 0;
	if (gles && strcmp(opt->consumer, "egl") != 0) {
		fprintf(stderr, PROG ": --producer gles needs the egl consumer (the GPU's textures "
			"import only into its own EGL)\n");
		return -EINVAL;
	}
	if (opt->ring_device && gles) {
		fprintf(stderr, PROG ": --ring is for the vulkan producer (gles always exports "
			"its own textures)\n");
		return -EINVAL;
	}
	if (opt->flush && (!gles || !opt->no_bridge || opt->cpu_sync)) {
		fprintf(stderr, PROG ": --flush is for --producer gles with --no-bridge\n");
		return -EINVAL;
	}
	if (opt->cpu_sync && opt->expect_race) {
		fprintf(stderr, PROG ": --cpu-sync synchronises: it cannot --expect-race\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * The environment both processes start with: --layer-dir's manifest (the
 * build tree's, in the tests) on the loader's XDG path (Debian 12's loader
 * finds implicit layers only there), and SYNCBRIDGE_DISABLE=1 for the run
 * without the bridge — which makes the loader skip the implicit layer and
 * libsyncbridge-egl do nothing.
 */
static void
setup_environment(struct cube_options *opt)
{
	const char *dir = demo_layer_env(opt->layer_dir);

	if (dir)
		opt->layer_dir = dir;
	if (opt->no_bridge)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);
}

/* ---- the consumer's bookkeeping ------------------------------------------ */

struct run {
	const struct cube_options *opt;
	unsigned frames, torn, stale;
	double latency_ms_sum;     /* vkQueueSubmit returned → consumer started reading */
	int64_t *done_ns;          /* per frame: composited (and finished), before its release */
	int first_torn, first_stale;
	unsigned torn_saved; /* torn frames saved that show part of their frame */
	struct demo_sheet sheet;
	unsigned sheet_cells;
	bool venus; /* the consumer's Vulkan device is Mesa's venus */
};

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

static int
run_consumer(int sock, const struct cube_options *opt, struct run *run)
{
	const struct cube_backend *backend =
		strcmp(opt->consumer, "vulkan") == 0 ? &cube_backend_vulkan : &cube_backend_egl;
	struct cube_consumer *c = NULL;
	struct cube_buffers bufs = { .count = 0 };
	uint8_t *rgba = NULL;
	struct cube_msg m;
	int n_fds = 0, ret;

	/* Our device comes up while the producer brings up its own. */
	ret = backend->open(&c, opt);
	if (ret < 0)
		return ret;
	ret = demo_recv(sock, &m, sizeof(m), bufs.fds, CUBE_MAX_BUFFERS, &n_fds,
			CUBE_START_TIMEOUT_MS);
	if (ret == -ETIMEDOUT)
		fprintf(stderr, PROG ": consumer: no buffers from the producer in %d s\n",
			CUBE_START_TIMEOUT_MS / 1000);
	if (ret < 0)
		goto out; /* the producer could not start: it says why */
	bufs.count = (unsigned)n_fds;
	if (m.type != CUBE_MSG_BUFFERS || m.count != (uint32_t)n_fds || m.count != opt->buffers ||
	    m.width != opt->width || m.height != opt->height) {
		fprintf(stderr, PROG ": consumer: malformed buffer message\n");
		ret = -EPROTO;
		goto out;
	}
	/* Every fd from the other process is checked before use. */
	for (unsigned i = 0; i < bufs.count; i++) {
		if (!sb_dmabuf_is_dmabuf(bufs.fds[i])) {
			fprintf(stderr, PROG ": consumer: fd %u is not a dma-buf\n", i);
			ret = -EPROTO;
			goto out;
		}
	}
	bufs.width = m.width;
	bufs.height = m.height;
	bufs.pitch = m.pitch;
	bufs.offset = m.offset;
	bufs.drm_format = m.drm_format;
	bufs.size = m.size;
	bufs.modifier = m.modifier;

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
	for (;;) {
		ret = demo_recv(sock, &m, sizeof(m), NULL, 0, NULL, FRAME_TIMEOUT_MS);
		if (ret < 0) {
			fprintf(stderr, PROG ": consumer: waiting for a frame: %s\n",
				ret == -EPIPE ? "the producer went away" : strerror(-ret));
			goto out;
		}
		if (m.type == CUBE_MSG_END)
			break;
		if (m.type != CUBE_MSG_FRAME || m.index >= opt->buffers || m.frame != run->frames) {
			fprintf(stderr,
				PROG ": consumer: unexpected message %u (frame %u, buffer %u)\n",
				m.type, m.frame, m.index);
			ret = -EPROTO;
			goto out;
		}
		/* Like a compositor, latch the newest frame at the next refresh. */
		int64_t t_read = now_ns();
		if (period > 0) {
			int64_t next = clock0 + ((t_read - clock0) / period + 1) * period;
			demo_sleep_ns(next - t_read);
			t_read = now_ns();
		}
		ret = backend->composite(c, m.index);
		if (ret == 0 && opt->cpu_sync)
			ret = backend->finish(c);
		if (ret < 0)
			goto out;
		if (run->done_ns)
			run->done_ns[run->frames] = now_ns();
		struct cube_msg rel = {
			.type = CUBE_MSG_RELEASE, .frame = m.frame, .index = m.index};
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

		size_t n_new, n_old;
		enum verdict v = check_frame(opt, m.frame, rgba, &n_new, &n_old);
		run->frames++;
		run->latency_ms_sum += (double)(t_read - m.submit_ns) / 1e6;
		if (v == FRAME_TORN)
			run->torn++;
		if (v == FRAME_STALE)
			run->stale++;
		if (opt->verbose || v != FRAME_COMPLETE)
			if (opt->verbose || run->torn + run->stale <= 5)
				printf("consumer: frame %u (buffer %u): %s — %zu px of this frame, "
				       "%zu of "
				       "the previous one, of %zu; read %.1f ms after submit\n",
				       m.frame, m.index,
				       v == FRAME_COMPLETE ? "complete"
				       : v == FRAME_STALE  ? "STALE"
							   : "TORN",
				       n_new, n_old, (size_t)opt->width * opt->height,
				       (double)(t_read - m.submit_ns) / 1e6);

		if (opt->output) {
			if (is_saved_frame(opt, m.frame))
				save_png(opt, "frame", m.frame, rgba);
			/* The first torn frame, and a few that show part of themselves. */
			if (v == FRAME_TORN &&
			    (run->first_torn < 0 || (n_new > 0 && run->torn_saved < 3))) {
				if (run->first_torn < 0)
					run->first_torn = (int)m.frame;
				run->torn_saved += n_new > 0;
				save_png(opt, "torn", m.frame, rgba);
			}
			if (v == FRAME_STALE && run->first_stale < 0) {
				run->first_stale = (int)m.frame;
				save_png(opt, "stale", m.frame, rgba);
			}
			for (unsigned cell = 0; cell < SHEET_COLS * SHEET_ROWS; cell++)
				if (sheet_frame(opt, cell) == m.frame &&
				    (cell == 0 || sheet_frame(opt, cell - 1) != m.frame)) {
					demo_sheet_put(&run->sheet, cell, rgba, verdict_rgb[v]);
					run->sheet_cells = cell + 1;
				}
		}
	}
	ret = 0;
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
static void
print_rate(const struct cube_options *opt, const struct run *run)
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

int
main(int argc, char **argv)
{
	struct cube_options opt;
	int sv[2];

	if (parse_args(argc, argv, &opt) < 0)
		return EXIT_USAGE;
	setup_environment(&opt);
	setvbuf(stdout, NULL, _IOLBF, 0);

	bool gles = strcmp(opt.producer, "gles") == 0;
	printf("%s: %u frames of %ux%u, ring of %u %s, producer: %s, consumer: %s, bridge: %s\n",
	       PROG, opt.frames, opt.width, opt.height, opt.buffers,
	       gles		  ? "GPU textures as dma-bufs"
	       : opt.ring_device ? "Vulkan images as dma-bufs"
				 : "vgem dma-bufs",
	       opt.producer, opt.consumer,
	       opt.cpu_sync ? (gles ? "OFF, CPU stalls instead (glFinish)"
				    : "OFF, CPU stalls instead (vkQueueWaitIdle, glFinish)")
	       : opt.flush     ? "OFF (SYNCBRIDGE_DISABLE=1); glFlush before each hand-off"
	       : opt.no_bridge ? "OFF (SYNCBRIDGE_DISABLE=1)"
			       : "on");

	struct run run = { .opt = &opt, .first_torn = -1, .first_stale = -1 };
	run.done_ns = calloc(opt.frames, sizeof(*run.done_ns));
	if (!run.done_ns)
		return 1;
	if (opt.output) {
		int ret = demo_mkdir_p(opt.output);
		if (ret < 0) {
			fprintf(stderr, PROG ": cannot create %s: %s\n", opt.output,
				strerror(-ret));
			return 1;
		}
		run.sheet = (struct demo_sheet){ .cols = SHEET_COLS, .rows = SHEET_ROWS,
						 .frame_w = opt.width, .frame_h = opt.height,
						 .border = SHEET_BORDER, .gap = SHEET_GAP };
		if (demo_sheet_alloc(&run.sheet) < 0)
			return 1;
	}

	int fds_before = demo_count_fds();
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		perror(PROG ": socketpair");
		return 1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror(PROG ": fork");
		return 1;
	}
	if (pid == 0) {
		/* The producer: its own process, its own Vulkan instance or EGL display. */
		close(sv[0]);
		int ret =
			gles ? cube_producer_gles_run(sv[1], &opt) : cube_producer_run(sv[1], &opt);
		close(sv[1]);
		fflush(NULL);
		_exit(ret == -ENODEV ? EXIT_SKIP : ret < 0 ? 1 : 0);
	}
	close(sv[1]);
	int ret = run_consumer(sv[0], &opt, &run);
	close(sv[0]);

	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int producer_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (producer_rc == EXIT_SKIP || ret == -ENODEV) {
		printf("%s: SKIP: cannot run here (see above)\n", PROG);
		free(run.sheet.rgb);
		free(run.done_ns);
		return EXIT_SKIP;
	}

	if (opt.output && run.sheet_cells) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/contact-sheet.png", opt.output);
		int r = demo_sheet_write(&run.sheet, path);
		if (r < 0)
			fprintf(stderr, PROG ": writing %s: %s\n", path, strerror(-r));
	}
	free(run.sheet.rgb);

	int fds_after = demo_count_fds();
	if (run.frames)
		printf("consumer: frames read %.1f ms after %s returned, on average\n",
		       run.latency_ms_sum / run.frames,
		       gles ? "the hand-off (sb_egl_dmabuf_attach)" : "vkQueueSubmit");
	print_rate(&opt, &run);
	free(run.done_ns);
	if (opt.no_check)
		printf("frames=%u (not checked: --no-check)\n", run.frames);
	else
		printf("frames=%u torn=%u stale=%u\n", run.frames, run.torn, run.stale);
	if (opt.output)
		printf("pictures: %s/ (contact-sheet.png: green border = complete, amber = stale, "
		       "red = torn)\n", opt.output);

	bool ok = ret == 0 && producer_rc == 0 && run.frames == opt.frames;
	if (ret != 0 || producer_rc != 0)
		fprintf(stderr, PROG ": %s\n",
			ret != 0 ? "the consumer failed" : "the producer failed");
	if (run.frames != opt.frames)
		fprintf(stderr, PROG ": only %u of %u frames arrived\n", run.frames, opt.frames);
	/* Mesa's venus keeps one signalled sync_file for the process once the
	 * layer has exported a SYNC_FD (demo_count_signalled_virtio_sync_files):
	 * not the consumer's. A leak per frame still shows. */
	if (run.venus && fds_before >= 0 && fds_after == fds_before + 1 &&
	    demo_count_signalled_virtio_sync_files() >= 1) {
		printf("consumer: 1 fd more at the end: venus's own signalled sync_file, "
		       "kept for the process (not counted)\n");
		fds_after--;
	}
	if (fds_before >= 0 && fds_after != fds_before) {
		fprintf(stderr, PROG ": consumer: %d fds open at the end, %d at the start\n",
			fds_after, fds_before);
		demo_list_fds(stderr, PROG ": consumer: ");
		ok = false;
	}
	if (opt.expect_race) {
		bool raced = run.torn + run.stale > 0;
		printf("%s\n",
		       raced ? "as expected without the bridge: the consumer saw unfinished frames"
			     : "UNEXPECTED: no torn or stale frame without the bridge");
		return ok && raced ? 0 : 1;
	}
	return ok && run.torn == 0 && run.stale == 0 ? 0 : 1;
}
