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

/* What runs: frames, ring, producer and consumer, and how the bridge stands. */
static void
print_setup(const struct cube_options *opt, bool gles)
{
	const char *ring = gles		    ? "GPU textures as dma-bufs"
			   : opt->ring_device ? "Vulkan images as dma-bufs"
					      : "vgem dma-bufs";
	const char *bridge =
		opt->cpu_sync ? (gles ? "OFF, CPU stalls instead (glFinish)"
				      : "OFF, CPU stalls instead (vkQueueWaitIdle, glFinish)")
		: opt->flush ? "OFF (SYNCBRIDGE_DISABLE=1); glFlush before each hand-off"
		: opt->no_bridge ? "OFF (SYNCBRIDGE_DISABLE=1)"
				 : "on";

	printf("%s: %u frames of %ux%u, ring of %u %s, producer: %s, consumer: %s, bridge: %s\n",
	       PROG, opt->frames, opt->width, opt->height, opt->buffers, ring, opt->producer,
	       opt->consumer, bridge);
}

/* The producer in a child process on sock: its own Vulkan instance or EGL display. */
static pid_t
start_producer(int sv[2], const struct cube_options *opt, bool gles)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	close(sv[0]);
	int ret = gles ? cube_producer_gles_run(sv[1], opt) : cube_producer_run(sv[1], opt);
	close(sv[1]);
	fflush(NULL);
	_exit(ret == -ENODEV ? EXIT_SKIP : ret < 0 ? 1 : 0);
}

/*
 * The exit status from the consumer's result (ret), the producer's, the
 * frames' verdicts and the consumer's fds (fds_before at the start).
 */
static int
verdict(const struct cube_options *opt, const struct cube_run *run, int ret, int producer_rc,
	int fds_before)
{
	int fds_after = demo_count_fds();
	bool ok = ret == 0 && producer_rc == 0 && run->frames == opt->frames;
	if (ret != 0 || producer_rc != 0)
		fprintf(stderr, PROG ": %s\n",
			ret != 0 ? "the consumer failed" : "the producer failed");
	if (run->frames != opt->frames)
		fprintf(stderr, PROG ": only %u of %u frames arrived\n", run->frames, opt->frames);
	/* Mesa's venus keeps one signalled sync_file for the process once the
	 * layer has exported a SYNC_FD (demo_count_signalled_virtio_sync_files):
	 * not the consumer's. A leak per frame still shows. */
	if (run->venus && fds_before >= 0 && fds_after == fds_before + 1 &&
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
	if (opt->expect_race) {
		bool raced = run->torn + run->stale > 0;
		printf("%s\n",
		       raced ? "as expected without the bridge: the consumer saw unfinished frames"
			     : "UNEXPECTED: no torn or stale frame without the bridge");
		return ok && raced ? 0 : 1;
	}
	return ok && run->torn == 0 && run->stale == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	struct cube_options opt;
	struct cube_run run;
	int sv[2];

	if (parse_args(argc, argv, &opt) < 0)
		return EXIT_USAGE;
	setup_environment(&opt);
	setvbuf(stdout, NULL, _IOLBF, 0);

	bool gles = strcmp(opt.producer, "gles") == 0;
	print_setup(&opt, gles);
	if (cube_run_init(&run, &opt) < 0)
		return 1;

	int fds_before = demo_count_fds();
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		perror(PROG ": socketpair");
		return 1;
	}
	pid_t pid = start_producer(sv, &opt, gles);
	if (pid < 0) {
		perror(PROG ": fork");
		return 1;
	}
	close(sv[1]);
	int ret = cube_consume(sv[0], &opt, &run);
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
	cube_run_write_sheet(&run);
	if (run.frames)
		printf("consumer: frames read %.1f ms after %s returned, on average\n",
		       run.latency_ms_sum / run.frames,
		       gles ? "the hand-off (sb_egl_dmabuf_attach)" : "vkQueueSubmit");
	cube_print_rate(&opt, &run);
	free(run.done_ns);
	if (opt.no_check)
		printf("frames=%u (not checked: --no-check)\n", run.frames);
	else
		printf("frames=%u torn=%u stale=%u\n", run.frames, run.torn, run.stale);
	if (opt.output)
		printf("pictures: %s/ (contact-sheet.png: green border = complete, amber = stale, "
		       "red = torn)\n", opt.output);
	return verdict(&opt, &run, ret, producer_rc, fds_before);
}
