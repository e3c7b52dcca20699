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
 *   "GPU" thread: top half + stamp, │  (daemon,    sb_egl_wait_sync_file (GL waits)
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
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	return getenv("SYNCBRIDGE_DISABLE") != NULL;
}

static int
parse_args(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{ "role", required_argument, NULL, 'r' },
		{ "frames", required_argument, NULL, 'f' },
		{ "size", required_argument, NULL, 's' },
		{ "fps", required_argument, NULL, 'p' },
		{ "write-ms", required_argument, NULL, 'w' },
		{ "expect-race", no_argument, NULL, 'x' },
		{ "output", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int role = -1, c;

	*opt = (struct options){ .frames = 48, .width = 320, .height = 180, .fps = 10,
				 .write_ms = 40 };
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			role = demo_parse_word(optarg, (const char *const[]){ "consumer", "producer",
									      NULL });
			if (role < 0)
				goto bad;
			opt->producer = role == 1;
			break;
		case 'f':
			if (!demo_parse_uint(optarg, 1, 100000, &opt->frames))
				goto bad;
			break;
		case 's':
			if (sscanf(optarg, "%ux%u", &opt->width, &opt->height) != 2 ||
			    opt->width < 2 * STAMP_BITS || opt->width % 2 || opt->width > 4096 ||
			    opt->height < 4 * STAMP_ROWS || opt->height > 4096)
				goto bad;
			break;
		case 'p':
			if (!demo_parse_uint(optarg, 1, 120, &opt->fps))
				goto bad;
			break;
		case 'w':
			if (!demo_parse_uint(optarg, 0, 5000, &opt->write_ms))
				goto bad;
			break;
		case 'x':
			opt->expect_race = true;
			break;
		case 'o':
			opt->output = optarg;
			break;
		default:
			if (demo_opt_common(c, &opt->verbose, usage) < 0)
				return -EINVAL;
			break;
		}
		continue;
bad:
		demo_opt_bad_value(PROG, longopts, c, optarg);
		return -EINVAL;
	}
	if (optind < argc || role < 0) {
		usage(stderr);
		return -EINVAL;
	}
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
