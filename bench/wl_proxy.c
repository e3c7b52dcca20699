/* SPDX-License-Identifier: MIT */
/*
 * bench-wl-proxy: what syncbridge-wl-proxy costs a client that does not use
 * explicit sync (docs/wl-proxy.md, "What it costs"). The example compositor
 * (no renderer, no syncobj: nothing but the protocol) and the proxy in front
 * of it run as their programs; one libwayland client connects to each, and
 * the rounds alternate between the two so that a busy machine's noise falls
 * on both:
 *   - round trip: wl_display_roundtrip(), median and p90 in µs;
 *   - messages/s: 5,000 wl_surface.damage_buffer requests, then a round trip;
 *   - fds/s: 500 wl_shm.create_pool (a memfd each) + wl_shm_pool.destroy,
 *     then a round trip.
 * Each figure with its ratio proxy / direct, from this one run.
 *
 *   bench-wl-proxy [--rounds N]     (default 20; 200 round trips per round)
 *
 * Needs neither a GPU nor a kernel fence: runs on any host.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wayland-client.h>

#include "clock.h"
#include "demo_util.h"

#define TRIPS 200
#define DAMAGES 5000
#define POOLS 500

struct side {
	const char *name;
	struct wl_display *d;
	struct wl_compositor *comp;
	struct wl_shm *shm;
	struct wl_surface *surf;
	int64_t *trips; /* ns, TRIPS per round */
	size_t n_trips;
	int64_t damage_ns, pool_ns;
};

static void
on_global(void *data, struct wl_registry *r, uint32_t name, const char *iface, uint32_t v)
{
	struct side *s = data;

	(void)v;
	if (strcmp(iface, "wl_compositor") == 0)
		s->comp = wl_registry_bind(r, name, &wl_compositor_interface, 4);
	else if (strcmp(iface, "wl_shm") == 0)
		s->shm = wl_registry_bind(r, name, &wl_shm_interface, 1);
}

static void
on_global_remove(void *data, struct wl_registry *r, uint32_t name)
{
	(void)data, (void)r, (void)name;
}

/* Start PROGRAM ARGS with WAYLAND_DISPLAY=display (NULL: unset), wait for its ready line. */
static pid_t
start(char **argv, const char *display)
{
	int p[2];
	char fdarg[16], buf[64];
	pid_t pid;

	if (pipe2(p, 0) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		snprintf(fdarg, sizeof(fdarg), "%d", p[1]);
		argv[2] = fdarg; /* argv[1] is "--ready-fd" */
		if (display)
			setenv("WAYLAND_DISPLAY", display, 1);
		if (!getenv("SYNCBRIDGE_DEBUG")) { /* their start and exit lines are not figures */
			int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

			if (null >= 0)
				dup2(null, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], buf, sizeof(buf)) <= 0) {
		close(p[0]);
		return -1;
	}
	close(p[0]);
	return pid;
}

static int
side_open(struct side *s, const char *socket)
{
	static const struct wl_registry_listener listener = { on_global, on_global_remove };
	struct wl_registry *r;

	s->d = wl_display_connect(socket);
	if (!s->d)
		return -errno;
	r = wl_display_get_registry(s->d);
	wl_registry_add_listener(r, &listener, s);
	if (wl_display_roundtrip(s->d) < 0 || !s->comp || !s->shm)
		return -ENOENT;
	wl_registry_destroy(r);
	s->surf = wl_compositor_create_surface(s->comp);
	return wl_display_roundtrip(s->d) < 0 ? -EPROTO : 0;
}

/* One round on s: TRIPS round trips, a damage burst, a pool burst. 0 or -1. */
static int
side_round(struct side *s, int memfd)
{
	int64_t t;

	for (int k = 0; k < TRIPS; k++) {
		t = now_ns();
		if (wl_display_roundtrip(s->d) < 0)
			return -1;
		s->trips[s->n_trips++] = now_ns() - t;
	}
	t = now_ns();
	for (int k = 0; k < DAMAGES; k++) {
		wl_surface_damage_buffer(s->surf, k % 64, k % 64, 1, 1);
		if (k % 256 == 255 && wl_display_flush(s->d) < 0 && errno != EAGAIN)
			return -1;
	}
	if (wl_display_roundtrip(s->d) < 0)
		return -1;
	s->damage_ns += now_ns() - t;
	t = now_ns();
	for (int k = 0; k < POOLS; k++) {
		wl_shm_pool_destroy(wl_shm_create_pool(s->shm, memfd, 4096));
		if (k % 16 == 15 && wl_display_flush(s->d) < 0 && errno != EAGAIN)
			return -1;
	}
	if (wl_display_roundtrip(s->d) < 0)
		return -1;
	s->pool_ns += now_ns() - t;
	return 0;
}

static void
report(struct side *s, int rounds, double *med, double *p90, double *msgs, double *fds)
{
	demo_sort_i64(s->trips, s->n_trips);
	*med = s->trips[s->n_trips / 2] / 1e3;
	*p90 = s->trips[s->n_trips * 9 / 10] / 1e3;
	*msgs = (double)DAMAGES * rounds / (s->damage_ns / 1e9);
	*fds = (double)POOLS * rounds / (s->pool_ns / 1e9);
	printf("%-7s round trip median %7.1f µs p90 %7.1f µs, %9.0f messages/s, %8.0f fds/s\n",
	       s->name, *med, *p90, *msgs, *fds);
}

int
main(int argc, char **argv)
{
	char *comp_argv[] = { BENCH_COMPOSITOR, "--ready-fd", NULL, "--socket", "bench-comp",
			      "--no-drm-syncobj", "--renderer", "none", NULL };
	char *proxy_argv[] = { BENCH_PROXY, "--ready-fd", NULL, "--socket", "bench-proxy", NULL };
	struct side sides[2] = { { .name = "direct" }, { .name = "proxy" } };
	unsigned rounds = 20;
	double v[2][4];
	char rt[] = "/tmp/bench-wl-proxy-XXXXXX";
	pid_t comp = -1, proxy = -1;
	int memfd, ret = 1;

	if (argc == 3 && strcmp(argv[1], "--rounds") == 0 &&
	    demo_parse_uint(argv[2], 1, 10000, &rounds)) {
	} else if (argc != 1) {
		fprintf(stderr, "usage: bench-wl-proxy [--rounds N]\n");
		return 2;
	}
	if (!mkdtemp(rt))
		return 1;
	setenv("XDG_RUNTIME_DIR", rt, 1);
	memfd = memfd_create("bench-pool", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, 4096) != 0)
		return 1;
	comp = start(comp_argv, NULL);
	proxy = comp > 0 ? start(proxy_argv, "bench-comp") : -1;
	if (comp <= 0 || proxy <= 0) {
		fprintf(stderr, "bench-wl-proxy: the compositor or the proxy did not start\n");
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		sides[i].trips = calloc((size_t)rounds * TRIPS, sizeof(int64_t));
		if (!sides[i].trips || side_open(&sides[i], i ? "bench-proxy" : "bench-comp") != 0) {
			fprintf(stderr, "bench-wl-proxy: cannot connect (%s)\n", sides[i].name);
			goto out;
		}
	}
	for (unsigned r = 0; r < rounds; r++)
		for (int i = 0; i < 2; i++)
			if (side_round(&sides[(r + i) % 2], memfd) != 0) {
				fprintf(stderr, "bench-wl-proxy: a round failed\n");
				goto out;
			}
	printf("bench-wl-proxy: %u rounds of %d round trips, %d damage requests, %d pools (fds)\n",
	       rounds, TRIPS, DAMAGES, POOLS);
	for (int i = 0; i < 2; i++)
		report(&sides[i], (int)rounds, &v[i][0], &v[i][1], &v[i][2], &v[i][3]);
	printf("ratio   round trip median %.2fx, p90 %.2fx, messages/s %.2fx, fds/s %.2fx\n",
	       v[1][0] / v[0][0], v[1][1] / v[0][1], v[1][2] / v[0][2], v[1][3] / v[0][3]);
	ret = 0;
out:
	for (int i = 0; i < 2; i++) {
		if (sides[i].d)
			wl_display_disconnect(sides[i].d);
		free(sides[i].trips);
	}
	if (proxy > 0) {
		kill(proxy, SIGTERM);
		waitpid(proxy, NULL, 0);
	}
	if (comp > 0) {
		kill(comp, SIGTERM);
		waitpid(comp, NULL, 0);
	}
	close(memfd);
	rmdir(rt);
	return ret;
}
