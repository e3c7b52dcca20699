/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-camera-pw: a camera across processes through PipeWire,
 * every frame checked (docs/demo.md, "The camera across processes").
 *
 *   producer process (--role producer)        consumer process (--role consumer)
 *   ──────────────────────────────────        ──────────────────────────────────
 *   vivid (V4L2 YUYV) → newest frame
 *   dequeue a PipeWire buffer (vgem dma-buf),
 *   once its release point has signalled
 *   pending vgem write fence on it ─┐
 *   sb_pw_producer_set_acquire(fence)│
 *   pw_stream_queue_buffer ─────────┼─ PipeWire ─► sb_pw_consumer_acquire → sync_file
 *   "GPU" thread: top half + stamp, │  (daemon,    sb_egl_sync_file_wait (GL waits)
 *     pause, bottom half + stamp,   │   pw-link)   YUYV → RGB on llvmpipe (EGL/GLES)
 *     signal the fence ─────────────┘              sb_pw_consumer_release(read fence)
 *                                                  read back: both stamps = seq?
 *                                                  → whole, else torn; contact sheet
 *
 * The two processes meet only through the PipeWire daemon; the acquire and
 * release points travel as the buffers' DRM syncobj timelines
 * (SPA_META_SyncTimeline, libsyncbridge-pipewire). With SYNCBRIDGE_DISABLE=1
 * on both sides the bridge is off — plain buffers, no waits — and the
 * consumer shows frames half written.
 *
 * examples/camera-pipewire/camera-pw.sh starts the daemon, both processes and
 * the link (scripts/run-demo.sh camera-pipewire runs it in the test guest).
 * The consumer prints `frames=N torn=T synced=S`. Exit status: 0 as expected
 * (no torn frame; with --expect-race: some), 1 not or an error, 2 usage,
 * 77 cannot run here. Needs vivid and vgem (producer), llvmpipe with dma-buf
 * import (consumer) and a DRM node with timeline syncobjs (both): the test guest.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syncbridge/common.h>

#include "camera_pw.h"

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " --role producer|consumer [OPTIONS]\n"
		"  --role ROLE      producer: vivid → PipeWire, until SIGINT/SIGTERM;\n"
		"                   consumer: PipeWire → EGL, checks --frames frames\n"
		"  --frames N       consumer: frames to check (default 48)\n"
		"  --size WxH       frame size, one vivid offers (default 320x180)\n"
		"  --fps N          producer: the camera's frame rate (default 10)\n"
		"  --write-ms N     producer: the GPU step's pause between the top and the\n"
		"                   bottom half of each frame (default 40)\n"
		"  --expect-race    consumer: succeed only if frames were torn (the control)\n"
		"  --output DIR     consumer: write PNGs: a contact sheet, a few frames, the\n"
		"                   first torn ones\n"
		"  --verbose        one line per frame\n"
		"SYNCBRIDGE_DISABLE=1 on both processes turns the bridge off.\n");
}

bool
bridge_disabled(void)
{
	return sb_env_get_bool("SYNCBRIDGE_DISABLE", false);
}

static int
parse_args(int argc, char **argv, struct options *opt)
{
	static const char *const roles[] = { "consumer", "producer", NULL };
	int role = -1;
	const struct demo_opt opts[] = {
		{ "role", DEMO_OPT_WORD, &role, .words = roles, .required = true },
		{ "frames", DEMO_OPT_UINT, &opt->frames, 1, 100000 },
		{ "size", DEMO_OPT_SIZE, &opt->width, 4 * STAMP_ROWS, 4096, .dst2 = &opt->height },
		{ "fps", DEMO_OPT_UINT, &opt->fps, 1, 120 },
		{ "write-ms", DEMO_OPT_UINT, &opt->write_ms, 0, 5000 },
		{ "expect-race", DEMO_OPT_FLAG, &opt->expect_race },
		{ "output", DEMO_OPT_STRING, &opt->output },
		{ "verbose", DEMO_OPT_FLAG, &opt->verbose, .short_name = 'v' },
		{ NULL },
	};

	*opt = (struct options){ .frames = 48, .width = 320, .height = 180, .fps = 10,
				 .write_ms = 40 };
	if (demo_opt_parse(PROG, argc, argv, opts, usage, 0) < 0)
		return -EINVAL;
	/* The stamps need an even width and room for both of them. */
	if (opt->width % 2 || opt->width < 2 * STAMP_BITS) {
		fprintf(stderr, PROG ": bad --size %ux%u (an even width of %d or more)\n",
			opt->width, opt->height, 2 * STAMP_BITS);
		return -EINVAL;
	}
	opt->producer = role == 1;
	return 0;
}

int
main(int argc, char **argv)
{
	struct options opt;
	sigset_t sigs;

	if (parse_args(argc, argv, &opt) < 0)
		return EXIT_USAGE;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/*
	 * PipeWire's loop takes SIGINT/SIGTERM through a signalfd, which sees a
	 * signal only where it is blocked: in every thread, so before any starts
	 * (the producer's GPU thread, llvmpipe's in the consumer, PipeWire's own).
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	return opt.producer ? producer_run(&opt) : consumer_run(&opt);
}
