/* SPDX-License-Identifier: MIT */
/*
 * bench-wake (docs/performance.md, figure 3): wake-up latency from a vgem
 * fence signal to the waiter, for each way libsyncbridge waits, against a
 * raw poll() on the same kind of fd in the same run.
 *
 * The main thread signals (DRM_IOCTL_VGEM_FENCE_SIGNAL) and takes
 * CLOCK_MONOTONIC just before the ioctl; the waiter takes it when its wait
 * returned. The signal is sent only once the waiter sleeps in its poll-family
 * system call (and every other thread sleeps too): /proc/self/task/T/syscall.
 * The variants alternate A B B A (three: rotated), after a warm-up.
 *
 *   sync_file       sb_sync_file_wait() on the exported sync_file   vs poll() on it
 *   dmabuf          sb_dmabuf_wait(READ) on the dma-buf              vs poll(POLLIN) on it
 *   syncobj         a vgem sync_file imported into a timeline point
 *                   (virtio_gpu), sb_syncobj_waiter's fd polled      vs poll() on an eventfd
 *                                                                     registered by hand
 *                                                                     (DRM_IOCTL_SYNCOBJ_EVENTFD)
 *   syncobj-thread  the same, the waiter's thread fallback (< 6.6)   vs the same raw eventfd
 *   compositor      the compositor helper (example compositor on a
 *                   thread, zwp_linux_explicit_synchronization_v1
 *                   acquire fence): signal → commit applied          vs poll() on the sync_file,
 *                                                                     and vs a bare
 *                                                                     wl_event_loop fd source
 *                                                                     in the compositor's own
 *                                                                     loop, on its thread
 *
 *   bench-wake [--iterations N] [--kinds K,K,...]
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <drm.h>
#include <linux/dma-buf.h>
#include <linux/sync_file.h>
#include <wayland-server-core.h>

#include <syncbridge/syncbridge.h>

#include "kernel.h"
#include "kernel_raw.h"
#include "wake_stats.h"
#include "wlt.h"

#define ASLEEP_TIMEOUT_NS (5 * INT64_C(1000000000))

enum kind { K_SYNC_FILE, K_DMABUF, K_SYNCOBJ, K_SYNCOBJ_THREAD, K_COMPOSITOR,
	/* Diagnostics (not run by default): the library slot replaced by a piece of it. */
	K_X_PPOLL, K_X_INFO, K_X_AA, K_X_DMABUF_PPOLL, K_X_DMABUF_CHECK, K_X_DMABUF_STATFS,
	K_X_SYSCALL, K_X_INFO2, K_COUNT };
static const char *const kind_names[K_COUNT] = {
	"sync_file", "dmabuf", "syncobj", "syncobj-thread", "compositor",
	"x-ppoll", "x-info", "x-aa", "x-dmabuf-ppoll", "x-dmabuf-check", "x-dmabuf-statfs",
	"x-syscall", "x-info2",
};

/* How the wait is done: through the library, a raw poll(), a bare wl_event_loop source. */
enum how { H_LIB, H_POLL, H_LOOP, H_COUNT };

struct waiter {
	pthread_t thread;
	int tid;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool have_job, done, quit;
	enum kind kind;
	enum how how;
	int fd;
	int64_t t_done;
	int ret;
	struct wl_event_loop *loop;
};

struct ctx {
	int vgem;
	struct sbk_buf bo;  /* the fenced buffer: one write fence per iteration */
	int drm;            /* virtio_gpu render node, -1 without */
	uint32_t timeline;  /* syncobj on drm */
	uint64_t point;
	struct waiter w;
	/* compositor */
	bool comp_up;
	struct wlt_comp comp;
	int comp_tid;
	/* The floor in the compositor's own loop: an fd source on the fence. */
	struct wl_event_source *src;
	int src_fd;
	int64_t src_t;      /* when its callback ran (0: not yet); under src_lock */
	pthread_mutex_t src_lock;
	pthread_cond_t src_cond;
	struct wlt_client client;
	struct sbk_buf shown;
	struct wl_buffer *wbuf;
	struct wl_surface *surf;
	struct zwp_linux_surface_synchronization_v1 *sync;
	int n_used;
};

static int
loop_fired(int fd, uint32_t mask, void *data)
{
	int64_t *t = data;

	*t = now_ns();
	return 0;
}

static int
run_job(struct waiter *w, enum kind kind, enum how how, int fd, int64_t *t)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int ret;

	if (how == H_LIB && kind == K_SYNC_FILE) {
		ret = sb_sync_file_wait(fd, SB_TIMEOUT_INFINITE);
		*t = now_ns();
		return ret;
	}
	if (how == H_LIB && kind == K_DMABUF) {
		ret = sb_dmabuf_wait(fd, SB_ACCESS_READ, SB_TIMEOUT_INFINITE);
		*t = now_ns();
		return ret;
	}
	if (how == H_LIB && kind == K_X_DMABUF_CHECK) {
		char path[64], target[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (readlink(path, target, sizeof(target)) < 0)
			return -errno;
	}
	if (how == H_LIB && kind == K_X_DMABUF_STATFS) {
		struct statfs sfs;

		if (fstatfs(fd, &sfs) < 0)
			return -errno;
	}
	if (how == H_LIB && (kind == K_X_PPOLL || kind == K_X_DMABUF_PPOLL)) {
		do
			ret = ppoll(&p, 1, NULL, NULL);
		while (ret < 0 && errno == EINTR);
		*t = now_ns();
		return ret < 0 ? -errno : 0;
	}
	if (how == H_LIB && (kind == K_X_INFO || kind == K_X_INFO2 || kind == K_X_SYSCALL)) {
		/*
		 * What one system call after the wake-up costs: x-info makes the
		 * status query sb_sync_file_wait() makes, x-info2 the same query
		 * twice (the second one is the query's cost once the guest runs
		 * warm again), x-syscall the cheapest call there is (getppid).
		 */
		struct sync_file_info info;

		do
			ret = poll(&p, 1, -1);
		while (ret < 0 && errno == EINTR);
		if (kind == K_X_SYSCALL) {
			(void)getppid();
		} else {
			for (int i = 0; i < (kind == K_X_INFO2 ? 2 : 1); i++) {
				memset(&info, 0, sizeof(info));
				ioctl(fd, SYNC_IOC_FILE_INFO, &info);
			}
		}
		*t = now_ns();
		return ret < 0 ? -errno : 0;
	}
	if (how == H_LOOP) {
		struct wl_event_source *src;

		*t = 0;
		src = wl_event_loop_add_fd(w->loop, fd, WL_EVENT_READABLE, loop_fired, t);
		if (!src)
			return -ENOMEM;
		while (*t == 0)
			if (wl_event_loop_dispatch(w->loop, -1) < 0 && errno != EINTR)
				break;
		wl_event_source_remove(src);
		return *t ? 0 : -EIO;
	}
	/*
	 * A raw poll(); also the library's syncobj waiter, whose product is the
	 * fd itself: the caller polls it, nothing of ours runs after the wake.
	 */
	do
		ret = poll(&p, 1, -1);
	while (ret < 0 && errno == EINTR);
	*t = now_ns();
	if (ret < 0)
		return -errno;
	return (p.revents & POLLIN) ? 0 : -EIO;
}

static void *
waiter_main(void *data)
{
	struct waiter *w = data;

	pthread_mutex_lock(&w->lock);
	w->tid = bench_gettid();
	pthread_cond_broadcast(&w->cond);
	for (;;) {
		int64_t t = 0;
		int ret;

		while (!w->have_job && !w->quit)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->quit)
			break;
		w->have_job = false;
		pthread_mutex_unlock(&w->lock);
		ret = run_job(w, w->kind, w->how, w->fd, &t);
		pthread_mutex_lock(&w->lock);
		w->t_done = t;
		w->ret = ret;
		w->done = true;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void
waiter_post(struct waiter *w, enum kind kind, enum how how, int fd)
{
	pthread_mutex_lock(&w->lock);
	w->kind = kind;
	w->how = how;
	w->fd = fd;
	w->done = false;
	w->have_job = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static int
waiter_collect(struct waiter *w, int64_t *t)
{
	int ret;

	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	*t = w->t_done;
	ret = w->ret;
	pthread_mutex_unlock(&w->lock);
	return ret;
}

/* A pending write fence on ctx->bo; its sync_file into *sync_file if asked. */
static int
new_fence(struct ctx *c, uint32_t *id, int *sync_file)
{
	int ret = sbk_vgem_fence_attach(c->vgem, c->bo.handle, true, id);

	if (ret || !sync_file)
		return ret;
	ret = tb_dmabuf_export_raw(c->bo.fd, DMA_BUF_SYNC_READ, sync_file);
	if (ret)
		sbk_vgem_fence_signal(c->vgem, *id);
	return ret;
}

static int
comp_setup(struct ctx *c)
{
	struct wlc_comp_options opt;
	int ret;

	memset(&opt, 0, sizeof(opt));
	opt.drm_fd = -1;
	opt.vgem_fd = -1;
	opt.max_client_pending = UINT32_MAX;
	ret = wlt_comp_start(&c->comp, &opt);
	if (ret)
		return ret;
	c->comp_up = true;
	pthread_setname_np(c->comp.thread, "sb-bench-comp");
	c->comp_tid = sbk_thread_find("sb-bench-comp");
	if (c->comp_tid < 0)
		return -ESRCH;
	ret = wlt_client_connect(&c->client, c->comp.socket);
	if (ret)
		return ret;
	if (!c->client.explicit_sync)
		return -ENOTSUP;
	ret = sbk_buf_create(SBK_BUF_VGEM, c->vgem, 16 * 64, &c->shown);
	if (ret)
		return ret;
	c->wbuf = wlt_dmabuf_buffer(&c->client, c->shown.fd, 16, 16, 64);
	c->surf = wl_compositor_create_surface(c->client.compositor);
	c->sync = zwp_linux_explicit_synchronization_v1_get_synchronization(c->client.explicit_sync,
									    c->surf);
	if (!c->wbuf || wl_display_roundtrip(c->client.display) < 0)
		return -EPROTO;
	return 0;
}

static bool
wait_on_dmabuf(enum kind kind)
{
	return kind == K_DMABUF || kind == K_X_DMABUF_PPOLL || kind == K_X_DMABUF_CHECK ||
	       kind == K_X_DMABUF_STATFS;
}

/* One wake-up: returns 0 and *lat_ns, or -errno. */

/*
 * The compositor row's wl_event_loop floor runs in the compositor's own loop,
 * on its thread: the same thread the helper's wake-up runs on. (A loop on a
 * thread of its own, the other rows' floor, is woken by the guest scheduler on
 * whichever CPU it slept: under TCG a wake-up across CPUs takes ~2 ms and one
 * on the same CPU ~0.1 ms, so that floor compared the helper with a different
 * wake-up, not with the same one without the helper: 1.10x in one run, 18x in
 * the next.)
 */
static int
comp_source_fired(int fd, uint32_t mask, void *data)
{
	struct ctx *c = data;
	int64_t t = now_ns();

	wl_event_source_remove(c->src);
	c->src = NULL;
	pthread_mutex_lock(&c->src_lock);
	c->src_t = t;
	pthread_cond_broadcast(&c->src_cond);
	pthread_mutex_unlock(&c->src_lock);
	return 0;
}

static void
comp_source_add(void *data)
{
	struct ctx *c = data;
	struct wl_event_loop *loop = wl_display_get_event_loop(wlc_comp_get_display(c->comp.comp));

	c->src = wl_event_loop_add_fd(loop, c->src_fd, WL_EVENT_READABLE, comp_source_fired, c);
}

static void
comp_source_remove(void *data)
{
	struct ctx *c = data;

	if (c->src)
		wl_event_source_remove(c->src);
	c->src = NULL;
}

/* When the compositor loop's fd source fired, or -ETIME. */
static int
comp_source_collect(struct ctx *c, int64_t *t)
{
	int64_t deadline = now_ns() + ASLEEP_TIMEOUT_NS;
	int ret = 0;

	pthread_mutex_lock(&c->src_lock);
	while (c->src_t == 0 && ret == 0) {
		struct timespec ts = { .tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000 };

		if (pthread_cond_timedwait(&c->src_cond, &c->src_lock, &ts) == ETIMEDOUT)
			ret = -ETIME;
	}
	*t = c->src_t;
	pthread_mutex_unlock(&c->src_lock);
	return ret;
}

static int
iteration(struct ctx *c, enum kind kind, enum how how, int64_t *lat_ns)
{
	struct sb_syncobj_waiter *sw = NULL;
	int sync_file = -1, wait_fd = -1, tid = c->w.tid, ret, ret2;
	uint32_t id;
	int64_t t0, t1 = 0;
	bool via_comp = kind == K_COMPOSITOR && how == H_LIB;
	bool comp_loop = kind == K_COMPOSITOR && how == H_LOOP;

	ret = new_fence(c, &id, wait_on_dmabuf(kind) ? NULL : &sync_file);
	if (ret)
		return ret;

	switch (kind) {
	case K_SYNC_FILE:
	case K_X_PPOLL:
	case K_X_INFO:
	case K_X_INFO2:
	case K_X_SYSCALL:
	case K_X_AA:
		wait_fd = sync_file;
		break;
	case K_DMABUF:
	case K_X_DMABUF_PPOLL:
	case K_X_DMABUF_CHECK:
	case K_X_DMABUF_STATFS:
		wait_fd = c->bo.fd;
		break;
	case K_SYNCOBJ:
	case K_SYNCOBJ_THREAD:
		c->point++;
		ret = sb_syncobj_import_sync_file(c->drm, c->timeline, c->point, sync_file);
		if (ret)
			goto out;
		if (how == H_LIB) {
			if (kind == K_SYNCOBJ_THREAD)
				setenv("SYNCBRIDGE_SYNCOBJ_EVENTFD", "0", 1);
			ret = sb_syncobj_waiter_create(c->drm, c->timeline, c->point, 0, &sw);
			unsetenv("SYNCBRIDGE_SYNCOBJ_EVENTFD");
			if (ret)
				goto out;
			if (sb_syncobj_waiter_uses_eventfd(sw) != (kind == K_SYNCOBJ)) {
				ret = -ENOTSUP;
				goto out;
			}
			wait_fd = sb_syncobj_waiter_get_fd(sw);
		} else {
			struct drm_syncobj_eventfd ev = {
				.handle = c->timeline, .point = c->point,
			};

			ev.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			if (ev.fd < 0) {
				ret = -errno;
				goto out;
			}
			wait_fd = ev.fd;
			if (ioctl(c->drm, DRM_IOCTL_SYNCOBJ_EVENTFD, &ev) < 0) {
				ret = -errno;
				goto out;
			}
		}
		break;
	case K_COMPOSITOR:
		if (via_comp) {
			zwp_linux_surface_synchronization_v1_set_acquire_fence(c->sync, sync_file);
			wl_surface_attach(c->surf, c->wbuf, 0, 0);
			wl_surface_commit(c->surf);
			if (wl_display_roundtrip(c->client.display) < 0) {
				ret = -EPROTO;
				goto out;
			}
			if (wlt_comp_n_used(&c->comp) != c->n_used) {
				fprintf(stderr, "bench-wake: the compositor applied a commit whose fence is pending\n");
				ret = -EIO;
				goto out;
			}
			tid = c->comp_tid;
		} else if (comp_loop) {
			pthread_mutex_lock(&c->src_lock);
			c->src_t = 0;
			pthread_mutex_unlock(&c->src_lock);
			c->src_fd = sync_file;
			wlt_comp_call(&c->comp, comp_source_add, c);
			if (!c->src) {
				ret = -ENOMEM;
				goto out;
			}
			tid = c->comp_tid;
		} else {
			wait_fd = sync_file;
		}
		break;
	default:
		ret = -EINVAL;
		goto out;
	}

	if (!via_comp && !comp_loop)
		waiter_post(&c->w, kind, how, wait_fd);
	ret = bench_wait_asleep(tid, ASLEEP_TIMEOUT_NS);
	if (ret) {
		fprintf(stderr, "bench-wake: the waiter did not go to sleep in poll\n");
		sbk_vgem_fence_signal(c->vgem, id);
		if (comp_loop)
			wlt_comp_call(&c->comp, comp_source_remove, c);
		else if (!via_comp)
			waiter_collect(&c->w, &t1);
		goto out;
	}
	t0 = now_ns();
	ret = sbk_vgem_fence_signal(c->vgem, id);
	if (ret) /* e.g. -ETIMEDOUT: vgem signalled it itself (10 s) */
		fprintf(stderr, "bench-wake: VGEM_FENCE_SIGNAL: %s\n", strerror(-ret));
	if (via_comp) {
		ret2 = wlt_comp_wait_used(&c->comp, c->n_used + 1, ASLEEP_TIMEOUT_NS);
		if (ret2 == 0) {
			pthread_mutex_lock(&c->comp.lock);
			t1 = c->comp.used[c->n_used].time_ns;
			pthread_mutex_unlock(&c->comp.lock);
			c->n_used++;
		}
	} else if (comp_loop) {
		ret2 = comp_source_collect(c, &t1);
		if (ret2)
			wlt_comp_call(&c->comp, comp_source_remove, c);
	} else {
		ret2 = waiter_collect(&c->w, &t1);
	}
	if (!ret)
		ret = ret2;
	*lat_ns = t1 - t0;
out:
	if (ret && ret != -ETIME)
		sbk_vgem_fence_signal(c->vgem, id);
	sb_syncobj_waiter_destroy(sw);
	if ((kind == K_SYNCOBJ || kind == K_SYNCOBJ_THREAD) && how != H_LIB && wait_fd >= 0)
		close(wait_fd);
	if (sync_file >= 0)
		close(sync_file);
	return ret;
}

static const char *const floor_names[H_COUNT] = {
	[H_POLL] = "poll()",
	[H_LOOP] = "wl_event_loop fd source",
	/* the compositor row: in the compositor's own loop (comp_source_fired()) */
};

static int
run_kind(struct ctx *c, enum kind kind, int iterations)
{
	struct bench_samples s[H_COUNT];
	int nh = kind == K_COMPOSITOR ? 3 : 2, warmup = 10 * nh;
	int total = warmup + iterations * nh;
	int64_t t_start = now_ns();
	char name[64];

	memset(s, 0, sizeof(s));
	for (int i = 0; i < total; i++) {
		/* Two variants: A B B A ...; three: rotated each round (A B C, B C A, C A B). */
		enum how how = nh == 2 ? (enum how)((i ^ (i >> 1)) & 1) : (enum how)((i + i / 3) % 3);
		int64_t lat = 0;
		int ret = iteration(c, kind, how, &lat);

		if (ret) {
			fprintf(stderr, "bench-wake: %s iteration %d (%s): %s\n", kind_names[kind], i,
				how == H_LIB ? "library" : floor_names[how], strerror(-ret));
			return ret;
		}
		if (i >= warmup)
			bench_samples_add(&s[how], lat);
	}
	for (int h = H_POLL; h < nh; h++) {
		snprintf(name, sizeof(name), "%s vs %s", kind_names[kind], floor_names[h]);
		bench_print_us(name, &s[H_LIB], &s[h]);
	}
	printf("#   %s: %d iterations per variant in %.1f s\n", kind_names[kind], iterations,
	       (double)(now_ns() - t_start) / 1e9);
	for (int h = 0; h < H_COUNT; h++)
		bench_samples_finish(&s[h]);
	return 0;
}

/*
 * The diagnostic rows' yardstick: the same system calls in a loop, where the
 * guest runs warm (right after a wake-up under TCG it does not: x-info vs
 * x-info2 shows the difference).
 */
static void
print_warm_costs(struct ctx *c)
{
	struct bench_samples info, ppid;
	struct sync_file_info fi;
	int sync_file = -1;
	uint32_t id;

	if (new_fence(c, &id, &sync_file) || sbk_vgem_fence_signal(c->vgem, id)) {
		printf("#   warm costs: no signalled sync_file\n");
		if (sync_file >= 0)
			close(sync_file);
		return;
	}
	memset(&info, 0, sizeof(info));
	memset(&ppid, 0, sizeof(ppid));
	for (int i = 0; i < 1000; i++) {
		int64_t t0 = now_ns(), t1, t2;

		memset(&fi, 0, sizeof(fi));
		ioctl(sync_file, SYNC_IOC_FILE_INFO, &fi);
		t1 = now_ns();
		(void)getppid();
		t2 = now_ns();
		bench_samples_add(&info, t1 - t0);
		bench_samples_add(&ppid, t2 - t1);
	}
	printf("#   warm, in a loop of 1000: SYNC_IOC_FILE_INFO median %.2f us, getppid median %.2f us\n",
	       (double)bench_samples_pct(&info, 50) / 1e3, (double)bench_samples_pct(&ppid, 50) / 1e3);
	bench_samples_finish(&info);
	bench_samples_finish(&ppid);
	close(sync_file);
}

int
main(int argc, char **argv)
{
	const char *kinds = "sync_file,dmabuf,syncobj,syncobj-thread,compositor";
	int iterations = (int)bench_args(argc, argv, "--kinds", "K,...", &kinds), failures = 0, ret;
	bool warm_costs = false;
	struct ctx c;
	struct utsname u;

	setvbuf(stdout, NULL, _IOLBF, 0);

	memset(&c, 0, sizeof(c));
	c.drm = -1;
	c.bo = (struct sbk_buf)SBK_BUF_INIT;
	c.shown = (struct sbk_buf)SBK_BUF_INIT;
	c.vgem = sbk_vgem_open();
	if (c.vgem < 0) {
		fprintf(stderr, "bench-wake: no vgem: %s\n", strerror(-c.vgem));
		return 1;
	}
	ret = sbk_buf_create(SBK_BUF_VGEM, c.vgem, 4096, &c.bo);
	if (ret) {
		fprintf(stderr, "bench-wake: vgem buffer: %s\n", strerror(-ret));
		return 1;
	}
	pthread_mutex_init(&c.w.lock, NULL);
	pthread_cond_init(&c.w.cond, NULL);
	pthread_mutex_init(&c.src_lock, NULL);
	{
		pthread_condattr_t ca; /* comp_source_collect()'s deadline is CLOCK_MONOTONIC */

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c.src_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	c.w.tid = 0;
	c.w.loop = wl_event_loop_create();
	if (!c.w.loop || pthread_create(&c.w.thread, NULL, waiter_main, &c.w)) {
		fprintf(stderr, "bench-wake: waiter thread\n");
		return 1;
	}
	pthread_mutex_lock(&c.w.lock);
	while (!c.w.tid)
		pthread_cond_wait(&c.w.cond, &c.w.lock);
	pthread_mutex_unlock(&c.w.lock);

	uname(&u);
	printf("# figure 3: wake-up latency, vgem FENCE_SIGNAL → waiter returned (CLOCK_MONOTONIC);\n"
	       "# kernel %s, %ld CPUs; %d interleaved iterations per variant after a warm-up\n",
	       u.release, sysconf(_SC_NPROCESSORS_ONLN), iterations);

	for (int k = 0; k < K_COUNT; k++) {
		char want[64];

		snprintf(want, sizeof(want), ",%s,", kind_names[k]);
		char *list = malloc(strlen(kinds) + 3);
		if (!list) {
			fprintf(stderr, "bench-wake: out of memory\n");
			return 1;
		}
		sprintf(list, ",%s,", kinds);
		bool selected = strstr(list, want) != NULL;
		free(list);
		if (!selected)
			continue;

		if ((k == K_SYNCOBJ || k == K_SYNCOBJ_THREAD) && c.drm < 0) {
			struct drm_syncobj_create cr = { 0 };

			c.drm = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);
			if (c.drm < 0 || ioctl(c.drm, DRM_IOCTL_SYNCOBJ_CREATE, &cr) < 0) {
				printf("%s: no DRM node with timeline syncobjs (virtio_gpu): not measured\n",
				       kind_names[k]);
				failures++;
				continue;
			}
			c.timeline = cr.handle;
		}
		if (k == K_SYNCOBJ && !sbk_drm_has_syncobj_eventfd(c.drm)) {
			printf("%s: no DRM_IOCTL_SYNCOBJ_EVENTFD (Linux < 6.6): not measured\n", kind_names[k]);
			failures++;
			continue;
		}
		if (k == K_COMPOSITOR) {
			ret = comp_setup(&c);
			if (ret) {
				printf("compositor: setup failed: %s\n", strerror(-ret));
				failures++;
				continue;
			}
		}
		if (run_kind(&c, (enum kind)k, iterations))
			failures++;
		if (k == K_X_INFO || k == K_X_INFO2 || k == K_X_SYSCALL)
			warm_costs = true;
	}
	if (warm_costs)
		print_warm_costs(&c);

	pthread_mutex_lock(&c.w.lock);
	c.w.quit = true;
	pthread_cond_broadcast(&c.w.cond);
	pthread_mutex_unlock(&c.w.lock);
	pthread_join(c.w.thread, NULL);
	wl_event_loop_destroy(c.w.loop);
	if (c.comp_up) {
		if (c.client.display)
			wlt_client_disconnect(&c.client);
		wlt_comp_stop(&c.comp);
	}
	sbk_buf_destroy(&c.shown);
	sbk_buf_destroy(&c.bo);
	if (c.drm >= 0)
		close(c.drm);
	close(c.vgem);
	return failures ? 1 : 0;
}
