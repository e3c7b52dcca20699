/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-handoff: hand a dma-buf with a pending kernel fence from a
 * producer process to a consumer process.
 *
 *   producer (child)                         consumer (parent)
 *   ----------------                         -----------------
 *   vgem dumb buffer, mmap, export dma-buf
 *   send dma-buf fd (SCM_RIGHTS)  ─────────► check it is a dma-buf, mmap it
 *   for each frame N:
 *     FENCE_ATTACH(WRITE)  (fence pending)
 *     send "frame N submitted"    ─────────► export READ sync_file, decode it
 *     "render": write frame N,               sb_sync_file_wait()   (skipped
 *               band by band, ~300 ms                               with --no-sync)
 *     FENCE_SIGNAL        ───── wakes ─────► read + verify the whole frame
 *     wait for "released"         ◄───────── send "frame N released"
 *
 * The consumer learns when the frame is complete only through the fence
 * attached to the dma-buf: exactly the implicit-sync handoff that compositors
 * and media pipelines rely on. With --no-sync (or SYNCBRIDGE_DISABLE=1) it
 * skips the wait and reads while the producer is still writing, which shows
 * what the fence is for: stale or torn frames.
 *
 * The vgem buffer, its fences (a WRITE fence that signals on FENCE_SIGNAL,
 * by itself after 10 s, or when the vgem fd that attached it closes), the
 * messages and the clocks are common/'s (common/demo_util.h).
 *
 * This file is the consumer and the options; the producer is in
 * handoff_producer.c, what both share in handoff.h.
 *
 * Needs the vgem driver (DRM card node, root): run it in the test VM
 * (scripts/vm/vm-run.sh -- build/examples/syncbridge-demo-handoff) or after
 * `modprobe vgem`. Exit status: 0 success, 1 failure, 2 usage, 77 no vgem.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/mman.h>

#include <syncbridge/syncbridge.h>

#include "demo_util.h"
#include "handoff.h"

#define EXIT_USAGE 2
#define EXIT_SKIP 77

/* A vgem fence signals itself 10 s after it was attached. */
#define MAX_RENDER_MS 5000
/* Generous for TCG; a lost producer signals its fences when its fd closes. */
#define WAIT_TIMEOUT_NS (INT64_C(15) * 1000000000)

/* ---- the messages both processes exchange (handoff.h) ------------------ */

int
handoff_recv(int sock, uint32_t type, const unsigned *frame, struct msg *m, int *fd)
{
	int n_fds = 0, got = -1;
	int ret = demo_recv(sock, m, sizeof(*m), &got, fd ? 1 : 0, &n_fds, -1);

	if (ret == 0 && (m->type != type || (frame && m->frame != *frame)))
		ret = -EPROTO;
	if (ret < 0 || !fd)
		demo_fd_clear(&got);
	else
		*fd = got;
	return ret;
}

const char *
handoff_peer_error(int ret, const char *peer)
{
	return ret == -EPIPE ? peer : strerror(-ret);
}

/* ---- consumer --------------------------------------------------------- */

struct stats {
	unsigned ok, bad, errors, n_waits;
	double wait_ms_sum, wait_ms_min, wait_ms_max;
	int64_t wake_ns[256]; /* from the fence's signal to the end of the wait */
	unsigned n_wake;
};

struct consumer {
	int dmabuf_fd;
	const uint8_t *map;
	size_t map_size;
	uint8_t *snapshot;
	uint32_t width, height, stride;
};

/* Prints the frame's verdict; returns whether it is complete. */
static bool
check_frame(const struct consumer *c, unsigned frame, const char *how)
{
	uint32_t new_rows = 0, old_rows = 0; /* rows entirely of this / the previous frame */

	for (uint32_t y = 0; y < c->height; y++) {
		const uint32_t *row = (const uint32_t *)(c->snapshot + (size_t)y * c->stride);
		bool is_new = true, is_old = true;

		for (uint32_t x = 0; x < c->width && (is_new || is_old); x++) {
			size_t i = (size_t)y * c->width + x;
			is_new = is_new && row[x] == handoff_pattern(frame, i);
			is_old = is_old && row[x] == handoff_pattern(frame - 1, i);
		}
		new_rows += is_new;
		old_rows += is_old;
	}
	if (new_rows == c->height)
		printf("frame %u: %s -> content OK\n", frame, how);
	else if (old_rows == c->height)
		printf("frame %u: %s -> STALE (still frame %u)\n", frame, how, frame - 1);
	else if (new_rows + old_rows > 0)
		printf("frame %u: %s -> STALE (torn: %u/%u rows of frame %u, %u of frame %u)\n",
		       frame, how, new_rows, c->height, frame, old_rows, frame - 1);
	else
		printf("frame %u: %s -> STALE (garbage: neither frame %u nor %u)\n", frame, how,
		       frame, frame - 1);
	fflush(stdout);
	return new_rows == c->height;
}

/* "1 fence (vgem unbound, status active)" */
static void
describe_fences(const struct sb_sync_file_info *info, char *out, size_t size)
{
	int n;

	if (info->num_fences == 0) {
		snprintf(out, size, "0 fences (buffer idle)");
		return;
	}
	n = snprintf(out, size, "%" PRIu32 " fence%s (", info->num_fences,
		     info->num_fences == 1 ? "" : "s");
	for (uint32_t i = 0; i < info->num_fences && n > 0 && (size_t)n < size; i++) {
		const struct sb_fence_info *f = &info->fences[i];
		char st[64];

		if (f->status < 0)
			snprintf(st, sizeof(st), "error %s", strerror(-f->status));
		n += snprintf(out + n, size - n, "%s%s %s, status %s", i ? "; " : "", f->driver,
			      f->timeline,
			      f->status == 1   ? "signalled"
			      : f->status == 0 ? "active"
					       : st);
	}
	if (n > 0 && (size_t)n < size)
		snprintf(out + n, size - n, ")");
}

/* The latest signal time among the fences, 0 if one is still active. */
static uint64_t
last_signal_ns(const struct sb_sync_file_info *info)
{
	uint64_t t = 0;

	for (uint32_t i = 0; i < info->num_fences; i++) {
		if (info->fences[i].status == 0)
			return 0;
		if (info->fences[i].timestamp_ns > t)
			t = info->fences[i].timestamp_ns;
	}
	return t;
}

static void
consumer_finish(struct consumer *c)
{
	if (c->map)
		munmap((void *)c->map, c->map_size);
	c->map = NULL;
	free(c->snapshot);
	c->snapshot = NULL;
	demo_fd_clear(&c->dmabuf_fd);
}

static int
consumer_init(struct consumer *c, int sock)
{
	struct msg m;
	int ret;

	*c = (struct consumer){ .dmabuf_fd = -1 };
	ret = handoff_recv(sock, MSG_BUFFER, NULL, &m, &c->dmabuf_fd);
	if (ret < 0) {
		fprintf(stderr, "%s: consumer: receiving the dma-buf: %s\n", prog,
			handoff_peer_error(ret, "the producer went away (see its error above)"));
		return ret;
	}
	/* Never trust a received fd: it must be a dma-buf as large as announced. */
	if (c->dmabuf_fd < 0 || !sb_dmabuf_is_valid(c->dmabuf_fd)) {
		fprintf(stderr, "%s: consumer: the producer did not send a dma-buf\n", prog);
		return -EPROTO;
	}
	off_t size = lseek(c->dmabuf_fd, 0, SEEK_END);
	if (size < 0 || m.width == 0 || m.height == 0 || m.stride < m.width * 4 ||
	    (uint64_t)m.stride * m.height > (uint64_t)size || m.size != (uint64_t)size) {
		fprintf(stderr,
			"%s: consumer: dma-buf of %lld bytes does not hold %ux%u (stride %u)\n",
			prog, (long long)size, m.width, m.height, m.stride);
		return -EPROTO;
	}
	c->width = m.width;
	c->height = m.height;
	c->stride = m.stride;
	c->map_size = (size_t)size;

	/*
	 * A plain CPU mapping of the dma-buf. A portable reader would bracket
	 * its reads with DMA_BUF_IOCTL_SYNC for cache maintenance; vgem maps
	 * write-combined (coherent), and DMA_BUF_SYNC_START would itself wait
	 * for the write fence — which would hide exactly what --no-sync shows.
	 */
	void *ptr = mmap(NULL, c->map_size, PROT_READ, MAP_SHARED, c->dmabuf_fd, 0);
	if (ptr == MAP_FAILED) {
		ret = -errno;
		fprintf(stderr, "%s: consumer: mmap of the dma-buf: %s\n", prog, strerror(-ret));
		return ret;
	}
	c->map = ptr;
	c->snapshot = malloc(c->map_size);
	if (!c->snapshot) {
		fprintf(stderr, "%s: consumer: %s\n", prog, strerror(ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

/*
 * What a reader has to wait for: the buffer's writers, as a sync_file, decoded
 * into `fences` in every mode (also --no-sync) so that the only difference
 * between the runs is the wait itself. *mode falls back to WAIT_DMABUF on a
 * kernel without sync_file export. Returns 0 or -errno (printed).
 */
static int
consumer_fences(struct consumer *c, unsigned frame, enum wait_mode *mode, int *sync_fd,
		struct sb_sync_file_info **info, char *fences, size_t size)
{
	const char *what = "sb_dmabuf_export_sync_file(READ)";
	bool busy = false;
	int ret = 0;

	if (*mode != WAIT_DMABUF) {
		ret = sb_dmabuf_export_sync_file(c->dmabuf_fd, SB_ACCESS_READ, sync_fd);
		if (ret == -EOPNOTSUPP && *mode == WAIT_SYNC_FILE) {
			/* kernel < 6.0: poll() on the dma-buf keeps the ordering */
			*mode = WAIT_DMABUF;
		} else if (ret == -EOPNOTSUPP) {
			snprintf(fences, size,
				 "the buffer's writers (kernel < 6.0: no sync_file export)");
			return 0;
		} else if (ret == 0) {
			what = "sb_sync_file_info_create";
			ret = sb_sync_file_info_create(*sync_fd, info);
			if (ret == 0)
				describe_fences(*info, fences, size);
		}
	}
	if (*mode == WAIT_DMABUF) {
		what = "sb_dmabuf_is_busy(READ)";
		ret = sb_dmabuf_is_busy(c->dmabuf_fd, SB_ACCESS_READ, &busy);
		snprintf(fences, size, "the buffer's writers (dma-buf %s)", busy ? "busy" : "idle");
	}
	if (ret < 0)
		fprintf(stderr, "%s: consumer: frame %u: %s: %s\n", prog, frame, what,
			strerror(-ret));
	return ret;
}

/*
 * One frame. Returns 0 when the frame was handled (whatever its content),
 * -errno when the handoff itself failed.
 */
static int
consumer_frame(struct consumer *c, int sock, const struct options *opt, unsigned frame,
	       struct stats *st)
{
	struct sb_sync_file_info *info = NULL;
	enum wait_mode mode = opt->wait;
	struct msg m;
	char fences[256] = "", wake[64] = "", how[400];
	int sync_fd = -1;
	int64_t t0, t1;
	int ret;

	ret = handoff_recv(sock, MSG_FRAME_SUBMITTED, &frame, &m, NULL);
	if (ret < 0) {
		fprintf(stderr, "%s: consumer: frame %u: %s\n", prog, frame,
			handoff_peer_error(ret, "the producer went away (see its error above)"));
		return ret;
	}
	ret = consumer_fences(c, frame, &mode, &sync_fd, &info, fences, sizeof(fences));
	if (ret < 0)
		goto out;

	t0 = now_ns();
	if (mode == WAIT_SYNC_FILE && (ret = sb_sync_file_wait(sync_fd, WAIT_TIMEOUT_NS)) < 0)
		fprintf(stderr, "%s: consumer: frame %u: sb_sync_file_wait: %s\n", prog, frame,
			strerror(-ret));
	if (mode == WAIT_DMABUF &&
	    (ret = sb_dmabuf_wait(c->dmabuf_fd, SB_ACCESS_READ, WAIT_TIMEOUT_NS)) < 0)
		fprintf(stderr, "%s: consumer: frame %u: sb_dmabuf_wait(READ): %s\n", prog, frame,
			strerror(-ret));
	if (ret < 0)
		goto out;
	t1 = now_ns();

	/* Read the frame, as a compositor would sample it. */
	memcpy(c->snapshot, c->map, (size_t)c->stride * c->height);

	double waited = (t1 - t0) * MS_PER_NS;
	if (mode != WAIT_NONE) {
		st->wait_ms_sum += waited;
		if (st->n_waits++ == 0 || waited < st->wait_ms_min)
			st->wait_ms_min = waited;
		if (waited > st->wait_ms_max)
			st->wait_ms_max = waited;
	}
	/* How long after the signal the wait returned (the kernel timestamps it). */
	if (mode == WAIT_SYNC_FILE && info && info->status == 0) {
		struct sb_sync_file_info *after = NULL;
		uint64_t signalled = 0;

		if (sb_sync_file_info_create(sync_fd, &after) == 0)
			signalled = last_signal_ns(after);
		if (signalled && (uint64_t)t1 >= signalled) {
			int64_t ns = (int64_t)((uint64_t)t1 - signalled);
			snprintf(wake, sizeof(wake), ", woke %.2f ms after the signal",
				 ns * MS_PER_NS);
			if (st->n_wake < sizeof(st->wake_ns) / sizeof(st->wake_ns[0]))
				st->wake_ns[st->n_wake++] = ns;
		}
		sb_sync_file_info_destroy(after);
	}
	if (mode == WAIT_NONE)
		snprintf(how, sizeof(how), "read at once, not waiting for %s%s", fences, wake);
	else
		snprintf(how, sizeof(how), "waited %.1f ms for %s%s", waited, fences, wake);
	if (check_frame(c, frame, how))
		st->ok++;
	else
		st->bad++;

	m = (struct msg){ .type = MSG_FRAME_RELEASED, .frame = frame };
	ret = demo_send(sock, &m, sizeof(m), NULL, 0);
	if (ret < 0)
		fprintf(stderr, "%s: consumer: frame %u: sending the release: %s\n", prog, frame,
			strerror(-ret));
out:
	sb_sync_file_info_destroy(info);
	demo_fd_clear(&sync_fd);
	return ret;
}

static const char *const wait_mode_names[] = {
	[WAIT_SYNC_FILE] = "sync: sb_dmabuf_export_sync_file(READ) + sb_sync_file_wait",
	[WAIT_DMABUF] = "sync: sb_dmabuf_wait(READ)",
	[WAIT_NONE] = "no-sync: the consumer reads without waiting",
};

static int
run_consumer(int sock, const struct options *opt, struct stats *st)
{
	struct consumer c;
	int ret = consumer_init(&c, sock);

	if (ret == 0)
		printf("handoff: %s (vgem), %ux%u XRGB8888 dumb buffer (%zu bytes) as a dma-buf, "
		       "%u frames, %u ms render each; %s\n",
		       opt->device, c.width, c.height, c.map_size, opt->frames, opt->render_ms,
		       wait_mode_names[opt->wait]);
	fflush(stdout);
	for (unsigned f = 1; ret == 0 && f <= opt->frames; f++)
		if ((ret = consumer_frame(&c, sock, opt, f, st)) < 0)
			st->errors++;
	consumer_finish(&c);
	return ret;
}

/* The summary; returns the exit status. */
static int
report(const struct options *opt, struct stats *st, double total_ms, bool ok)
{
	unsigned done = st->ok + st->bad;

	if (st->n_waits > 0) {
		printf("waits: min %.1f ms, mean %.1f ms, max %.1f ms", st->wait_ms_min,
		       st->wait_ms_sum / st->n_waits, st->wait_ms_max);
		if (st->n_wake > 0) {
			demo_sort_i64(st->wake_ns, st->n_wake);
			printf("; wake-up after the signal: median %.2f ms, max %.2f ms",
			       st->wake_ns[st->n_wake / 2] * MS_PER_NS,
			       st->wake_ns[st->n_wake - 1] * MS_PER_NS);
		}
		printf("\n");
	}
	if (opt->wait == WAIT_NONE)
		printf("read without waiting: %u of %u frames stale or torn\n", st->bad, done);
	printf("total %.0f ms\n", total_ms);
	printf("frames=%u ok=%u stale=%u\n", done, st->ok, st->bad);

	if (!ok || st->errors || done != opt->frames)
		return EXIT_FAILURE;
	if (opt->wait != WAIT_NONE)
		return st->bad == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	if (opt->expect_torn && st->bad == 0) {
		fprintf(stderr, "%s: --expect-torn: every frame was complete although the "
			"consumer did not wait; the control did not show the race\n", prog);
		return EXIT_FAILURE;
	}
	return EXIT_SUCCESS;
}

/* ---- main ------------------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [options]\n"
		"A producer process renders frames into a vgem dma-buf under a kernel write\n"
		"fence; a consumer process waits for that fence through libsyncbridge before\n"
		"reading each frame, and checks it is complete.\n"
		"\n"
		"  -n, --frames N       frames to hand over (1-255, default 5)\n"
		"  -r, --render-ms MS   simulated render time per frame (1-%d, default 300)\n"
		"  -w, --wait MODE      sync-file (default): export a READ sync_file, show it,\n"
		"                       sb_sync_file_wait(); dmabuf: sb_dmabuf_wait() (poll)\n"
		"      --no-sync        skip the wait (also SYNCBRIDGE_DISABLE=1): frames are\n"
		"                       read too early and reported STALE\n"
		"      --expect-torn    with --no-sync: fail unless at least one frame was bad\n"
		"  -d, --device PATH    vgem card node (default: found by driver name)\n"
		"  -v, --verbose        also print the producer's side\n"
		"  -h, --help\n"
		"\n"
		"Exit: 0 success, 1 failure, 2 usage, 77 no vgem (skip).\n",
		prog, MAX_RENDER_MS);
}

/* Options into *opt, with the vgem node: 0, -EINVAL (usage) or EXIT_SKIP. */
static int
parse_options(int argc, char **argv, struct options *opt)
{
	static const char *const waits[] = {
		[WAIT_SYNC_FILE] = "sync-file", [WAIT_DMABUF] = "dmabuf", NULL};
	const char *dev = NULL;
	bool no_sync = sb_env_get_bool("SYNCBRIDGE_DISABLE", false);
	int wait = WAIT_SYNC_FILE;
	const struct demo_opt opts[] = {
		{"frames", DEMO_OPT_UINT, &opt->frames, 1, 255, .short_name = 'n'},
		/* a vgem fence expires after 10 s */
		{"render-ms", DEMO_OPT_UINT, &opt->render_ms, 1, MAX_RENDER_MS, .short_name = 'r'},
		{"wait", DEMO_OPT_WORD, &wait, .words = waits, .short_name = 'w'},
		{"no-sync", DEMO_OPT_FLAG, &no_sync},
		{"expect-torn", DEMO_OPT_FLAG, &opt->expect_torn},
		{"device", DEMO_OPT_STRING, &dev, .short_name = 'd'},
		{"verbose", DEMO_OPT_FLAG, &opt->verbose, .short_name = 'v'},
		{NULL},
	};

	*opt = (struct options){ .frames = 5, .render_ms = 300 };
	if (demo_opt_parse(prog, argc, argv, opts, usage, 0) < 0)
		return -EINVAL;
	opt->wait = (enum wait_mode)wait;
	if (no_sync)
		opt->wait = WAIT_NONE;
	if (opt->expect_torn && !no_sync) {
		fprintf(stderr, "%s: --expect-torn needs --no-sync (or SYNCBRIDGE_DISABLE=1)\n",
			prog);
		return -EINVAL;
	}
	if (dev) {
		snprintf(opt->device, sizeof(opt->device), "%s", dev);
		return 0;
	}
	/* The producer opens the node itself: its vgem fd alone owns the fences. */
	int fd = demo_vgem_open_path(opt->device, sizeof(opt->device));
	if (fd < 0) {
		fprintf(stderr, "%s: no vgem DRM card node%s; needs the vgem driver: run it in "
			"the test VM with scripts/vm/vm-run.sh, or modprobe vgem\n", prog,
			fd == -EACCES ? " (some /dev/dri/card* nodes could not be opened: "
					"Permission denied; run as root)" : "");
		return EXIT_SKIP;
	}
	close(fd);
	return 0;
}

static int
producer_main(int sock, void *arg)
{
	const struct options *opt = arg;

	return handoff_run_producer(sock, opt, opt->device) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int
main(int argc, char **argv)
{
	struct options opt;
	struct stats st = { 0 };
	int sock, status, ret;

	/* Two processes share stdout: keep their lines whole. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	ret = parse_options(argc, argv, &opt);
	if (ret != 0)
		return ret < 0 ? EXIT_USAGE : ret;

	int fds_before = demo_count_fds();
	pid_t pid = demo_fork_peer(producer_main, &opt, &sock);
	if (pid < 0) {
		fprintf(stderr, "%s: starting the producer: %s\n", prog, strerror(-pid));
		return EXIT_FAILURE;
	}
	int64_t t_start = now_ns();
	ret = run_consumer(sock, &opt, &st);
	/* Closing our end unblocks a producer still waiting for a release. */
	demo_fd_clear(&sock);
	status = demo_wait_peer(pid);
	int64_t t_end = now_ns();
	if (status < 0)
		fprintf(stderr, "%s: waitpid: %s\n", prog, strerror(-status));
	if (status > 128)
		fprintf(stderr, "%s: the producer was killed by signal %d (%s)\n", prog,
			status - 128, strsignal(status - 128));
	else if (status != 0)
		fprintf(stderr, "%s: the producer failed\n", prog);

	int fds_after = demo_count_fds();
	bool fds_ok = fds_before < 0 || fds_after == fds_before;
	if (!fds_ok)
		fprintf(stderr, "%s: consumer: %d fds open at the end, %d at the start\n", prog,
			fds_after, fds_before);
	return report(&opt, &st, (t_end - t_start) * MS_PER_NS, ret == 0 && status == 0 && fds_ok);
}
