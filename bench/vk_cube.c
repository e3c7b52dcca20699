/* SPDX-License-Identifier: MIT */
/*
 * Figure 6 (docs/performance.md): the cube pipeline (examples/cube: a Vulkan
 * producer process → an EGL/GLES consumer process, ring of 3 vgem dma-bufs)
 * with GPU-side waits through the bridge (the layer in the producer,
 * libsyncbridge-egl in the consumer) against the same pipeline synchronised
 * by CPU stalls with the bridge off (--cpu-sync: vkQueueWaitIdle before each
 * hand-off, glFinish before each release). Runs of the two alternate (bridge
 * first in even rounds, CPU stalls first in odd ones); each run renders
 * --frames frames as fast as it can (--refresh-ms 0) without reading them
 * back (--no-check: the read back would stall both alike). The demo's own
 * tests check the frames (demo-cube, demo-cube-cpu-sync).
 *
 * frames/s: all frames of a variant over the sum of its runs' times (from
 * each run's first hand-back to its last, start-up left out); the frame
 * intervals pooled over the runs give the median and p90.
 *
 * --producer gles: the same figure on a real asynchronous GPU — the demo's
 * GLES producer and EGL consumer on Mesa virgl (the GPU guest, run by
 * scripts/run-bench.sh as `vk-cube-virgl`): bridge = sb_egl_dmabuf_attach /
 * sb_egl_dmabuf_wait, GPU-side; CPU stalls = glFinish before each hand-off
 * and each release.
 *
 * Besides the pooled figures, each variant's runs are listed and the ratio of
 * each round's pair (bridge / CPU stalls, the two runs next to each other)
 * gives the run-to-run spread: a ratio is beyond the noise only when every
 * round's is on the same side of 1.0.
 *
 * Words after "--" go to every run of the demo as they are: figure 6 on
 * venus (scripts/run-bench.sh vk-cube-venus) runs the demo's Vulkan consumer
 * on venus's own ring (`-- --ring device --consumer vulkan`), venus
 * importing no other driver's dma-bufs.
 *
 *   bench-vk-cube [--runs R] [--frames F] [--producer vulkan|gles] [-- DEMO-ARGS...]
 *                                           (default 4 runs × 250 frames, vulkan)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/wait.h>

#include "vk_bench.h"
#include "wake_stats.h"

#if !defined(VKB_CUBE_DEMO) || !defined(VKB_LAYER_DIR)
#error "VKB_CUBE_DEMO and VKB_LAYER_DIR (the build tree's manifest folder) must be defined"
#endif

#define MAX_RUNS 64

struct variant {
	const char *name;
	const char *flag; /* extra demo option, or NULL */
	struct bench_samples intervals;
	double seconds;
	unsigned frames;
	double run_fps[MAX_RUNS]; /* each run's frames/s, in round order */
	unsigned runs;
};

static const char *producer = "vulkan";
#define MAX_EXTRA 16
static const char *extra[MAX_EXTRA]; /* the words after "--" */
static int extra_count;

/* Run the demo once; add its intervals and time to v. Returns the exit status. */
static int
run_demo(struct variant *v, unsigned frames)
{
	char nframes[16];
	snprintf(nframes, sizeof(nframes), "%u", frames);
	const char *argv[14 + MAX_EXTRA] = { VKB_CUBE_DEMO, "--layer-dir", VKB_LAYER_DIR,
					     "--frames", nframes, "--refresh-ms", "0",
					     "--no-check", "--intervals", "--producer", producer };
	int argc = 11;
	if (v->flag)
		argv[argc++] = v->flag;
	for (int i = 0; i < extra_count; i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		vkb_die("pipe: %m");
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		vkb_die("fork: %m");
	if (pid == 0) {
		dup2(pipefd[1], 1);
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "bench: exec %s: %m\n", argv[0]);
		_exit(127);
	}
	close(pipefd[1]);
	FILE *f = fdopen(pipefd[0], "r");
	if (!f)
		vkb_die("fdopen: %m");

	char *line = NULL;
	size_t cap = 0;
	bool got_rate = false;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "intervals_us:", 13) == 0) {
			char *p = line + 13;
			for (;;) {
				char *end;
				long long us = strtoll(p, &end, 10);
				if (end == p)
					break;
				bench_samples_add(&v->intervals, us * 1000);
				p = *end == ',' ? end + 1 : end;
			}
		} else if (strncmp(line, "rate:", 5) == 0) {
			double fps, s;
			unsigned n;
			if (sscanf(line, "rate: fps=%lf frames=%u seconds=%lf", &fps, &n, &s) == 3) {
				v->seconds += s;
				v->frames += n - 1; /* intervals, i.e. frames after the first */
				got_rate = true;
				if (v->runs < MAX_RUNS)
					v->run_fps[v->runs++] = fps;
				printf("  %-12s %u frames: %.2f frames/s\n", v->name, n, fps);
			}
		} else if (strstr(line, "layer") || strstr(line, "consumer:") ||
			   strstr(line, "SKIP")) {
			/* Show which paths the demo took (layer active, GPU-side waits). */
			static int shown[2];
			int k = v->flag ? 1 : 0;
			if (shown[k] < 3) {
				printf("    %s", line);
				shown[k]++;
			}
		}
	}
	free(line);
	fclose(f);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (rc == 0 && !got_rate)
		vkb_die("%s: the demo printed no rate line", v->name);
	return rc;
}

int
main(int argc, char **argv)
{
	unsigned runs = 4, frames = 250;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc)
			frames = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--producer") == 0 && i + 1 < argc &&
			 (strcmp(argv[i + 1], "vulkan") == 0 || strcmp(argv[i + 1], "gles") == 0))
			producer = argv[++i];
		else if (strcmp(argv[i], "--") == 0 && argc - i - 1 <= MAX_EXTRA) {
			for (i++; i < argc; i++)
				extra[extra_count++] = argv[i];
		} else {
			fprintf(stderr, "usage: %s [--runs R] [--frames F] [--producer vulkan|gles] "
				"[-- DEMO-ARGS...] (at most %d)\n", argv[0], MAX_EXTRA);
			return 2;
		}
	}
	if (runs < 1)
		runs = 1;
	if (runs > MAX_RUNS)
		runs = MAX_RUNS;
	if (frames < 2)
		frames = 2;

	/* The bridged runs must have the bridge: nothing may switch it off. */
	unsetenv("SYNCBRIDGE_DISABLE");
	unsetenv("SYNCBRIDGE_MODE");
	unsetenv("SYNCBRIDGE_DEBUG");

	struct variant bridge = { .name = "bridge" }, cpu = { .name = "cpu-stalls",
							       .flag = "--cpu-sync" };
	printf("figure 6: cube pipeline, %u runs × %u frames each way, alternating "
	       "(%s --refresh-ms 0 --no-check --producer %s [--cpu-sync]", runs, frames,
	       VKB_CUBE_DEMO, producer);
	for (int i = 0; i < extra_count; i++)
		printf(" %s", extra[i]);
	printf(")\n");
	int64_t t0 = now_ns();
	for (unsigned r = 0; r < runs; r++) {
		struct variant *order[2] = { r % 2 ? &cpu : &bridge, r % 2 ? &bridge : &cpu };
		for (int k = 0; k < 2; k++) {
			int rc = run_demo(order[k], frames);
			if (rc == 77) {
				printf("SKIP: the cube demo cannot run here\n");
				return 77;
			}
			if (rc != 0)
				vkb_die("%s run %u: the demo exited %d", order[k]->name, r, rc);
		}
	}
	printf("(%.1f s)\n", (now_ns() - t0) / 1e9);

	double fps_b = bridge.seconds > 0 ? bridge.frames / bridge.seconds : 0;
	double fps_c = cpu.seconds > 0 ? cpu.frames / cpu.seconds : 0;
	printf("cube-fps  bridge %.2f frames/s | floor (CPU stalls): %.2f frames/s | "
	       "ratio: %.3f (goal >= 1.0)\n", fps_b, fps_c, fps_c > 0 ? fps_b / fps_c : 0.0);
	/* Each round's pair: the spread of the ratio from run to run. */
	double lo = 0, hi = 0;
	unsigned pairs = bridge.runs < cpu.runs ? bridge.runs : cpu.runs;
	printf("cube-fps-rounds");
	for (unsigned r = 0; r < pairs; r++) {
		double q = cpu.run_fps[r] > 0 ? bridge.run_fps[r] / cpu.run_fps[r] : 0;
		lo = r == 0 || q < lo ? q : lo;
		hi = r == 0 || q > hi ? q : hi;
		printf(" %.3f", q);
	}
	printf(" | spread %.3f..%.3f%s\n", lo, hi,
	       pairs == 0 ? "" : lo > 1.0 ? " (every round above 1.0)"
			       : hi < 1.0 ? " (every round below 1.0)" : " (1.0 inside the spread)");
	/* Intervals: lower is better, so this ratio is the inverse sense. */
	bench_print_us("cube-frame-interval", &bridge.intervals, &cpu.intervals);
	bench_samples_finish(&bridge.intervals);
	bench_samples_finish(&cpu.intervals);
	return 0;
}
