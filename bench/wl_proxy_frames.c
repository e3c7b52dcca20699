/* SPDX-License-Identifier: MIT */
/*
 * bench-wl-proxy-frames: what syncbridge-wl-proxy costs a client that does
 * not use explicit sync, on a real compositor (issue 46: <= 1.10x frame
 * latency, <= 1.20x compositor + proxy CPU per frame). Two windows of the
 * same client code, one connected to the compositor directly, one through
 * the proxy; rounds alternate between them so that a busy machine's noise
 * falls on both. Each frame: a shm buffer attached, damaged, a frame
 * callback asked for, committed; the latency is commit -> wl_callback.done
 * as the client sees it. CPU is the compositor's and the proxy's time on a
 * CPU (/proc/PID/task/N/schedstat, every thread, ns) over each side's rounds.
 *
 *   bench-wl-proxy-frames --direct SOCKET --proxied SOCKET
 *                         --compositor-pid PID --proxy-pid PID
 *                         [--frames N] [--rounds N]
 *
 * bench/wl_proxy_frames.sh starts a compositor (Weston on any host, sway in
 * the GPU guest) and the proxy, then this. Prints each figure and its ratio
 * proxied / direct from this one run; never asserts a time.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <wayland-client.h>

#include "clock.h"
#include "demo_util.h"
#include "xdg-shell-client-protocol.h"

#define W 256
#define H 256

struct side {
	const char *name;
	struct wl_display *d;
	struct wl_compositor *comp;
	struct wl_shm *shm;
	struct xdg_wm_base *wm;
	struct wl_surface *surf;
	struct xdg_surface *xs;
	struct xdg_toplevel *top;
	struct wl_buffer *buf[2];
	bool busy[2], configured, done;
	int64_t *lat; /* ns, one a frame */
	size_t n_lat;
	int64_t cpu_comp_ns, cpu_proxy_ns;
};

/* Time on a CPU of every thread of pid, in ns; -1 if it is gone. */
static int64_t
cpu_ns(long pid)
{
	char path[64], line[128];
	struct dirent *e;
	int64_t sum = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((e = readdir(dir))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/task/%.16s/schedstat", pid, e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue; /* a thread that just ended */
		if (fgets(line, sizeof(line), f))
			sum += strtoll(line, NULL, 10);
		fclose(f);
	}
	closedir(dir);
	return sum;
}

static void
on_ping(void *data, struct xdg_wm_base *wm, uint32_t serial)
{
	(void)data;
	xdg_wm_base_pong(wm, serial);
}

static void
on_global(void *data, struct wl_registry *r, uint32_t name, const char *iface, uint32_t v)
{
	static const struct xdg_wm_base_listener wm_listener = { on_ping };
	struct side *s = data;

	(void)v;
	if (strcmp(iface, "wl_compositor") == 0) {
		s->comp = wl_registry_bind(r, name, &wl_compositor_interface, 4);
	} else if (strcmp(iface, "wl_shm") == 0) {
		s->shm = wl_registry_bind(r, name, &wl_shm_interface, 1);
	} else if (strcmp(iface, "xdg_wm_base") == 0) {
		s->wm = wl_registry_bind(r, name, &xdg_wm_base_interface, 1);
		xdg_wm_base_add_listener(s->wm, &wm_listener, s);
	}
}

static void
on_global_remove(void *data, struct wl_registry *r, uint32_t name)
{
	(void)data, (void)r, (void)name;
}

static void
on_xdg_configure(void *data, struct xdg_surface *xs, uint32_t serial)
{
	struct side *s = data;

	xdg_surface_ack_configure(xs, serial);
	s->configured = true;
}

static void
on_top_configure(void *data, struct xdg_toplevel *t, int32_t w, int32_t h, struct wl_array *st)
{
	(void)data, (void)t, (void)w, (void)h, (void)st;
}

static void
on_top_close(void *data, struct xdg_toplevel *t)
{
	(void)data, (void)t;
}

static void
on_release(void *data, struct wl_buffer *b)
{
	struct side *s = data;

	for (int i = 0; i < 2; i++)
		if (s->buf[i] == b)
			s->busy[i] = false;
}

static void
on_done(void *data, struct wl_callback *cb, uint32_t t)
{
	struct side *s = data;

	(void)t;
	s->done = true;
	wl_callback_destroy(cb);
}

static int
side_open(struct side *s, const char *socket, size_t max_frames)
{
	static const struct wl_registry_listener reg_listener = { on_global, on_global_remove };
	static const struct xdg_surface_listener xs_listener = { on_xdg_configure };
	static const struct xdg_toplevel_listener top_listener = { on_top_configure, on_top_close };
	static const struct wl_buffer_listener buf_listener = { on_release };
	struct wl_shm_pool *pool;
	struct wl_registry *r;
	int fd;

	s->lat = calloc(max_frames, sizeof(*s->lat));
	s->d = wl_display_connect(socket);
	if (!s->lat || !s->d)
		return -ENOMEM;
	r = wl_display_get_registry(s->d);
	wl_registry_add_listener(r, &reg_listener, s);
	if (wl_display_roundtrip(s->d) < 0 || !s->comp || !s->shm || !s->wm)
		return -ENOENT;
	wl_registry_destroy(r);
	fd = memfd_create("bench-frames", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 2 * W * H * 4) != 0) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	pool = wl_shm_create_pool(s->shm, fd, 2 * W * H * 4);
	close(fd); /* the pool holds the memory; the pixels stay zero (black) */
	for (int i = 0; i < 2; i++) {
		s->buf[i] = wl_shm_pool_create_buffer(pool, i * W * H * 4, W, H, W * 4,
						      WL_SHM_FORMAT_XRGB8888);
		wl_buffer_add_listener(s->buf[i], &buf_listener, s);
	}
	wl_shm_pool_destroy(pool);
	s->surf = wl_compositor_create_surface(s->comp);
	s->xs = xdg_wm_base_get_xdg_surface(s->wm, s->surf);
	xdg_surface_add_listener(s->xs, &xs_listener, s);
	s->top = xdg_surface_get_toplevel(s->xs);
	xdg_toplevel_add_listener(s->top, &top_listener, s);
	xdg_toplevel_set_title(s->top, s->name);
	wl_surface_commit(s->surf);
	while (!s->configured)
		if (wl_display_dispatch(s->d) < 0)
			return -EPROTO;
	return 0;
}

/* One frame on s: a free buffer, attach, damage, frame callback, commit,
 * then until its done. 0 or -1. */
static int
side_frame(struct side *s)
{
	static const struct wl_callback_listener cb_listener = { on_done };
	int i;

	while (s->busy[0] && s->busy[1])
		if (wl_display_dispatch(s->d) < 0)
			return -1;
	i = s->busy[0] ? 1 : 0;
	s->busy[i] = true;
	s->done = false;
	wl_surface_attach(s->surf, s->buf[i], 0, 0);
	wl_surface_damage_buffer(s->surf, 0, 0, W, H);
	wl_callback_add_listener(wl_surface_frame(s->surf), &cb_listener, s);
	wl_surface_commit(s->surf);
	int64_t t = now_ns();
	if (wl_display_flush(s->d) < 0)
		return -1;
	while (!s->done)
		if (wl_display_dispatch(s->d) < 0)
			return -1;
	s->lat[s->n_lat++] = now_ns() - t;
	return 0;
}

static int
side_round(struct side *s, unsigned frames, long comp_pid, long proxy_pid)
{
	int64_t c0 = cpu_ns(comp_pid), p0 = cpu_ns(proxy_pid);

	for (unsigned f = 0; f < frames; f++)
		if (side_frame(s) != 0)
			return -1;
	int64_t c1 = cpu_ns(comp_pid), p1 = cpu_ns(proxy_pid);
	if (c0 < 0 || c1 < 0 || p0 < 0 || p1 < 0)
		return -1;
	s->cpu_comp_ns += c1 - c0;
	s->cpu_proxy_ns += p1 - p0;
	return 0;
}

static void
side_close(struct side *s)
{
	if (s->d)
		wl_display_disconnect(s->d);
	free(s->lat);
}

static void
usage(void)
{
	fprintf(stderr, "usage: bench-wl-proxy-frames --direct SOCKET --proxied SOCKET "
			"--compositor-pid PID --proxy-pid PID [--frames N] [--rounds N]\n");
}

int
main(int argc, char **argv)
{
	struct side sides[2] = { { .name = "direct" }, { .name = "proxied" } };
	const char *sock[2] = { NULL, NULL };
	unsigned frames = 60, rounds = 10, comp_pid = 0, proxy_pid = 0;
	double med[2], p90[2], cpu[2], proxy_cpu[2];
	int ret = 1;

	for (int i = 1; i < argc; i += 2) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool ok = v != NULL;

		if (ok && strcmp(o, "--direct") == 0)
			sock[0] = v;
		else if (ok && strcmp(o, "--proxied") == 0)
			sock[1] = v;
		else if (ok && strcmp(o, "--compositor-pid") == 0)
			ok = demo_parse_uint(v, 1, 1u << 30, &comp_pid);
		else if (ok && strcmp(o, "--proxy-pid") == 0)
			ok = demo_parse_uint(v, 1, 1u << 30, &proxy_pid);
		else if (ok && strcmp(o, "--frames") == 0)
			ok = demo_parse_uint(v, 1, 100000, &frames);
		else if (ok && strcmp(o, "--rounds") == 0)
			ok = demo_parse_uint(v, 1, 10000, &rounds);
		else
			ok = false;
		if (!ok) {
			usage();
			return 2;
		}
	}
	if (!sock[0] || !sock[1] || !comp_pid || !proxy_pid) {
		usage();
		return 2;
	}
	for (int i = 0; i < 2; i++)
		if (side_open(&sides[i], sock[i], (size_t)frames * rounds) != 0) {
			fprintf(stderr, "bench-wl-proxy-frames: cannot open a window on %s (%s)\n",
				sock[i], sides[i].name);
			goto out;
		}
	/* One frame each first: the first commit of a window maps it. */
	for (int i = 0; i < 2; i++)
		if (side_frame(&sides[i]) != 0)
			goto failed;
	for (int i = 0; i < 2; i++)
		sides[i].n_lat = 0;
	for (unsigned r = 0; r < rounds; r++)
		for (int i = 0; i < 2; i++)
			if (side_round(&sides[(r + i) % 2], frames, comp_pid, proxy_pid) != 0)
				goto failed;
	printf("bench-wl-proxy-frames: %u rounds of %u frames a side, alternated\n", rounds, frames);
	for (int i = 0; i < 2; i++) {
		struct side *s = &sides[i];
		double n = (double)s->n_lat;

		demo_sort_i64(s->lat, s->n_lat);
		med[i] = s->lat[s->n_lat / 2] / 1e6;
		p90[i] = s->lat[s->n_lat * 9 / 10] / 1e6;
		cpu[i] = (s->cpu_comp_ns + s->cpu_proxy_ns) / n / 1e3;
		proxy_cpu[i] = s->cpu_proxy_ns / n / 1e3;
		printf("%-8s commit -> frame done median %6.2f ms p90 %6.2f ms; CPU a frame: compositor %7.1f µs, "
		       "proxy %6.1f µs\n", s->name, med[i], p90[i], cpu[i] - proxy_cpu[i], proxy_cpu[i]);
	}
	printf("ratio    frame latency median %.2fx, p90 %.2fx; compositor + proxy CPU a frame %.2fx\n",
	       med[1] / med[0], p90[1] / p90[0], cpu[1] / cpu[0]);
	ret = 0;
	goto out;
failed:
	fprintf(stderr, "bench-wl-proxy-frames: a frame failed (the connection: %s)\n", strerror(errno));
out:
	for (int i = 0; i < 2; i++)
		side_close(&sides[i]);
	return ret;
}
