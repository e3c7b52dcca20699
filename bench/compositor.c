/* SPDX-License-Identifier: MIT */
/*
 * bench-compositor (docs/performance.md, figure 5): the compositor helper
 * with N surfaces (default 1,000) whose commits wait for pending acquire
 * fences, in the example compositor on a thread of this process.
 *
 * Two sets of N surfaces on one client, with the same explicit-sync objects:
 *   A: each commit's acquire is pending (v1: a vgem sync_file; syncobj: a
 *      timeline point not yet materialised); the helper holds it;
 *   B (the floor): the same commit whose acquire has already signalled (v1:
 *      a signalled vgem sync_file; syncobj: a point signalled before the
 *      commit) — the same protocol traffic, fd passing and validation, and
 *      the helper's fast path: the commit is applied at once.
 * The commits go in batches (--batch, default 4) of one set, each batch
 * followed by a roundtrip, batches of A and B alternating (A B B A); the
 * compositor thread's CPU time (its CLOCK_THREAD_CPUTIME_ID, read while it
 * sleeps in epoll_wait) and the heap in use (mallinfo2; the client keeps
 * nothing between roundtrips) are read around each batch. Then A's fences
 * signal one at a time, and the compositor's CPU time from the signal to the
 * commit applied is read for each. Every round (--rounds, default 4) commits
 * each surface once; a sample is the per-commit mean of one batch. So:
 *
 *   CPU per commit      A: commit + wake-up and apply, B: commit (applied)
 *   heap per commit     A: held while waiting, B: none held after the apply
 *   wake-ups per fence  the helper's wakeups counter per signal (goal: 1)
 *   fds and threads     per pending wait, at the end of the commit phase
 *
 * (A v1 acquire is a vgem fence, which signals itself after ~10 s: the
 * commit phase must stay shorter than that, hence batches.)
 *
 *   bench-compositor [--proto v1|syncobj] [--surfaces N] [--rounds R] [--batch K]
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <drm.h>
#include <linux/dma-buf.h>

#include <syncbridge/syncbridge.h>

#include "kernel.h"
#include "kernel_raw.h"
#include "wake_stats.h"
#include "wlt.h"

#define TIMEOUT_NS (5 * INT64_C(1000000000))

struct surf {
	struct wl_surface *surface;
	struct zwp_linux_surface_synchronization_v1 *sync;
	struct wp_linux_drm_syncobj_surface_v1 *so;
	struct wp_linux_drm_syncobj_timeline_v1 *tl;
	uint32_t handle;       /* syncobj: the acquire timeline (client side) */
	/* v1: a vgem buffer of its own, which gets a new write fence per commit. */
	struct sbk_buf bo;
	uint32_t fence_id;
	int sync_file;         /* that fence, exported; closed at the next commit */
	bool has_fence;        /* fence_id not signalled yet */
};

struct bench {
	bool syncobj;
	int n;
	int vgem, client_drm, comp_drm;
	struct wlt_comp comp;
	int comp_tid;
	clockid_t comp_clock;
	struct wlt_client c;
	struct sbk_buf buf;
	struct wl_buffer *wbuf;
	struct wp_linux_drm_syncobj_timeline_v1 *rel_tl;
	uint32_t rel_point;
	struct surf *a, *b;
	int batch;
	int n_used;
};

static int64_t
comp_cpu_ns(struct bench *b)
{
	struct timespec ts;

	clock_gettime(b->comp_clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
fail(const char *what, int err)
{
	fprintf(stderr, "bench-compositor: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

static int
setup_surface(struct bench *b, struct surf *s)
{
	s->surface = wl_compositor_create_surface(b->c.compositor);
	if (b->syncobj) {
		struct drm_syncobj_create cr = { 0 };
		struct drm_syncobj_handle h = { .fd = -1 };

		s->so = wp_linux_drm_syncobj_manager_v1_get_surface(b->c.syncobj, s->surface);
		if (ioctl(b->client_drm, DRM_IOCTL_SYNCOBJ_CREATE, &cr) < 0)
			return -errno;
		s->handle = cr.handle;
		h.handle = cr.handle;
		if (ioctl(b->client_drm, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h) < 0)
			return -errno;
		s->tl = wp_linux_drm_syncobj_manager_v1_import_timeline(b->c.syncobj, h.fd);
		close(h.fd);
	} else {
		s->sync = zwp_linux_explicit_synchronization_v1_get_synchronization(b->c.explicit_sync,
										  s->surface);
		return sbk_buf_create(SBK_BUF_VGEM, b->vgem, 4096, &s->bo);
	}
	return 0;
}

/* Send one commit on s, acquire pending or not; the fence/point is made here. */
static int
commit(struct bench *b, struct surf *s, uint64_t point, bool pending)
{
	int ret;

	wl_surface_attach(s->surface, b->wbuf, 0, 0);
	if (b->syncobj) {
		if (!pending) {
			ret = sb_syncobj_signal(b->client_drm, s->handle, point);
			if (ret)
				return ret;
		}
		wp_linux_drm_syncobj_surface_v1_set_acquire_point(s->so, s->tl, (uint32_t)(point >> 32),
								  (uint32_t)point);
		b->rel_point++;
		wp_linux_drm_syncobj_surface_v1_set_release_point(s->so, b->rel_tl, 0, b->rel_point);
	} else {
		/* Two ioctls per commit (a vgem fence lives ~10 s: keep the phase short). */
		ret = sbk_vgem_fence_attach(b->vgem, s->bo.handle, true, &s->fence_id);
		if (ret)
			return ret;
		s->has_fence = true;
		if (!pending) {
			ret = sbk_vgem_fence_signal(b->vgem, s->fence_id);
			if (ret)
				return ret;
			s->has_fence = false;
		}
		ret = tb_dmabuf_export_raw(s->bo.fd, DMA_BUF_SYNC_READ, &s->sync_file);
		if (ret)
			return ret;
		zwp_linux_surface_synchronization_v1_set_acquire_fence(s->sync, s->sync_file);
	}
	wl_surface_commit(s->surface);
	return 0;
}

/* Signal the surface's fence if it is pending, close its sync_file (v1). */
static void
drop_fence(struct bench *b, struct surf *s)
{
	if (s->has_fence) {
		sbk_vgem_fence_signal(b->vgem, s->fence_id);
		s->has_fence = false;
	}
	if (s->sync_file >= 0) {
		close(s->sync_file);
		s->sync_file = -1;
	}
}

/*
 * One round: every surface of A and of B commits once (in batches of
 * b->batch commits, one roundtrip each, batches alternating A B B A), then
 * A's acquires signal one at a time. Samples are per commit: a batch's
 * compositor CPU time (and heap) divided by its commits; for A, plus the CPU
 * time of its surfaces' wake-ups.
 */
static int
round_run(struct bench *b, uint64_t point, struct bench_samples *cpu_a, struct bench_samples *cpu_b,
	  struct bench_samples *cpu_commit_a, struct bench_samples *heap_a,
	  struct bench_samples *heap_b, uint64_t *wakeups, int *bad_wakeups)
{
	int n = b->n, k = b->batch, nb = n / k, ret, fds0, fds1, thr0, thr1;
	int64_t *commit_cpu = calloc((size_t)nb, sizeof(*commit_cpu));
	int64_t *wake_cpu = calloc((size_t)n, sizeof(*wake_cpu));
	int64_t t_start = now_ns(), t_commits;
	struct sb_wl_server_stats st0, st1;

	ret = -ENOMEM;
	if (!commit_cpu || !wake_cpu)
		goto out;
	sb_wl_server_get_stats(wlc_comp_get_helper(b->comp.comp), &st0); /* compositor idle */
	fds0 = wlt_count_fds();
	thr0 = sbk_thread_count();
	for (int j = 0; j < 2 * nb; j++) {
		bool pending = ((j ^ (j >> 1)) & 1) == 0; /* A B B A ... */
		int first = (j / 2) * k;
		struct surf *set = pending ? b->a : b->b;
		struct mallinfo2 m0, m1;
		int64_t c0, c1;

		if (!b->syncobj)
			for (int q = 0; q < k; q++)
				drop_fence(b, &set[first + q]); /* last round's */
		ret = bench_wait_asleep(b->comp_tid, TIMEOUT_NS);
		if (ret)
			goto out;
		m0 = mallinfo2();
		c0 = comp_cpu_ns(b);
		for (int q = 0; q < k; q++) {
			ret = commit(b, &set[first + q], point, pending);
			if (ret)
				goto out;
		}
		if (wl_display_roundtrip(b->c.display) < 0) {
			ret = -EPROTO;
			goto out;
		}
		ret = bench_wait_asleep(b->comp_tid, TIMEOUT_NS);
		if (ret)
			goto out;
		c1 = comp_cpu_ns(b);
		m1 = mallinfo2();
		if (pending) {
			commit_cpu[j / 2] = c1 - c0;
			bench_samples_add(heap_a, ((int64_t)m1.uordblks - (int64_t)m0.uordblks) / k);
		} else {
			b->n_used += k;
			bench_samples_add(cpu_b, (c1 - c0) / k);
			bench_samples_add(heap_b, ((int64_t)m1.uordblks - (int64_t)m0.uordblks) / k);
		}
	}
	/* Every B commit was applied, no A commit was (a vgem fence signals itself after ~10 s). */
	if (wlt_comp_n_used(&b->comp) != b->n_used) {
		fprintf(stderr, "bench-compositor: %d uses after the commits, want %d\n",
			wlt_comp_n_used(&b->comp), b->n_used);
		ret = -EIO;
		goto out;
	}
	fds1 = wlt_count_fds();
	thr1 = sbk_thread_count();
	sb_wl_server_get_stats(wlc_comp_get_helper(b->comp.comp), &st1);
	t_commits = now_ns() - t_start;
	printf("#   %d pending waits: %+d fds (%.2f per wait), %+d threads, waits_pending %u, "
	       "waits_threaded %u; commit phase %.1f s\n",
	       n, fds1 - fds0, (double)(fds1 - fds0) / n, thr1 - thr0, st1.waits_pending,
	       st1.waits_threaded, (double)t_commits / 1e9);

	/* The signals, one at a time; each must cost exactly one helper wake-up. */
	for (int i = 0; i < n; i++) {
		struct surf *s = &b->a[i];
		uint64_t before, after;
		int64_t c0, c1;

		pthread_mutex_lock(&b->comp.lock);
		before = b->n_used ? b->comp.used[b->n_used - 1].stats.wakeups : st0.wakeups;
		pthread_mutex_unlock(&b->comp.lock);
		c0 = comp_cpu_ns(b);
		if (b->syncobj)
			ret = sb_syncobj_signal(b->client_drm, s->handle, point);
		else
			ret = sbk_vgem_fence_signal(b->vgem, s->fence_id);
		if (ret)
			goto out;
		s->has_fence = false;
		ret = wlt_comp_wait_used(&b->comp, b->n_used + 1, TIMEOUT_NS);
		if (ret)
			goto out;
		ret = bench_wait_asleep(b->comp_tid, TIMEOUT_NS);
		if (ret)
			goto out;
		c1 = comp_cpu_ns(b);
		pthread_mutex_lock(&b->comp.lock);
		after = b->comp.used[b->n_used].stats.wakeups;
		if (b->comp.used[b->n_used].surface_id != wl_proxy_get_id((struct wl_proxy *)s->surface))
			ret = -EIO;
		pthread_mutex_unlock(&b->comp.lock);
		if (ret) {
			fprintf(stderr, "bench-compositor: surface %d applied out of signal order\n", i);
			goto out;
		}
		b->n_used++;
		*wakeups += after - before;
		if (after - before != 1)
			(*bad_wakeups)++;
		wake_cpu[i] = c1 - c0;
		/* The release events, so that the compositor's buffer to us never fills up. */
		wlt_dispatch_for(&b->c, 0);
	}
	for (int bi = 0; bi < nb; bi++) {
		int64_t wake = 0;

		for (int q = 0; q < k; q++)
			wake += wake_cpu[bi * k + q];
		bench_samples_add(cpu_a, (commit_cpu[bi] + wake) / k);
		bench_samples_add(cpu_commit_a, commit_cpu[bi] / k);
	}
	ret = 0;
out:
	free(commit_cpu);
	free(wake_cpu);
	return ret;
}

int
main(int argc, char **argv)
{
	const char *proto = "v1";
	struct bench_samples cpu_a = { 0 }, cpu_b = { 0 }, cpu_commit_a = { 0 }, heap_a = { 0 },
			     heap_b = { 0 };
	struct wlc_comp_options opt;
	struct bench b;
	struct utsname u;
	struct rlimit rl;
	uint64_t wakeups = 0;
	int rounds = 4, bad_wakeups = 0, ret;

	memset(&b, 0, sizeof(b));
	b.n = 1000;
	b.batch = 4;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--proto") == 0 && i + 1 < argc)
			proto = argv[++i];
		else if (strcmp(argv[i], "--surfaces") == 0 && i + 1 < argc)
			b.n = atoi(argv[++i]);
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
			b.batch = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: bench-compositor [--proto v1|syncobj] [--surfaces N] [--rounds R] [--batch K]\n");
			return 2;
		}
	}
	b.syncobj = strcmp(proto, "syncobj") == 0;
	/* Each round records 2N buffer uses; the recorder keeps WLT_MAX_EVENTS. */
	if (b.n < 1 || rounds < 1 || (long)rounds * 2 * b.n >= WLT_MAX_EVENTS) {
		fprintf(stderr, "bench-compositor: rounds x 2 x surfaces must stay below %d\n", WLT_MAX_EVENTS);
		return 2;
	}
	if (b.batch < 1 || b.n % b.batch) {
		fprintf(stderr, "bench-compositor: --batch must divide --surfaces\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* v1: per pending surface its fence's sync_file and buffer, the compositor's copy. */
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_max < (rlim_t)b.n * 8) {
		struct rlimit more = { (rlim_t)b.n * 8, (rlim_t)b.n * 8 };
		if (setrlimit(RLIMIT_NOFILE, &more) == 0)
			rl = more;
	}
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);

	b.client_drm = b.comp_drm = -1;
	b.buf = (struct sbk_buf)SBK_BUF_INIT;
	b.vgem = sbk_vgem_open();
	if (b.vgem < 0)
		return fail("vgem", b.vgem);
	if (b.syncobj) {
		b.client_drm = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);
		b.comp_drm = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);
		if (b.client_drm < 0 || b.comp_drm < 0)
			return fail("no DRM node with timeline syncobjs (virtio_gpu)", ENODEV);
	}
	memset(&opt, 0, sizeof(opt));
	opt.drm_fd = b.comp_drm;
	opt.vgem_fd = -1;
	/* One client holds every pending commit here: no per-client bound (default 128). */
	opt.max_client_pending = UINT32_MAX;
	ret = wlt_comp_start(&b.comp, &opt);
	if (ret)
		return fail("start the compositor", ret);
	pthread_setname_np(b.comp.thread, "sb-bench-comp");
	b.comp_tid = sbk_thread_find("sb-bench-comp");
	if (b.comp_tid < 0 || pthread_getcpuclockid(b.comp.thread, &b.comp_clock))
		return fail("the compositor thread", ESRCH);
	ret = wlt_client_connect(&b.c, b.comp.socket);
	if (ret)
		return fail("connect", ret);
	if (b.syncobj ? !b.c.syncobj : !b.c.explicit_sync)
		return fail("the explicit-sync global is missing", ENOTSUP);
	ret = sbk_buf_create(SBK_BUF_VGEM, b.vgem, 16 * 64, &b.buf);
	if (ret)
		return fail("vgem buffer", ret);
	b.wbuf = wlt_dmabuf_buffer(&b.c, b.buf.fd, 16, 16, 64);
	if (b.syncobj) {
		struct drm_syncobj_create cr = { 0 };
		struct drm_syncobj_handle h = { .fd = -1 };

		if (ioctl(b.client_drm, DRM_IOCTL_SYNCOBJ_CREATE, &cr) < 0)
			return fail("SYNCOBJ_CREATE", errno);
		h.handle = cr.handle;
		if (ioctl(b.client_drm, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h) < 0)
			return fail("HANDLE_TO_FD", errno);
		b.rel_tl = wp_linux_drm_syncobj_manager_v1_import_timeline(b.c.syncobj, h.fd);
		close(h.fd);
	}
	b.a = calloc((size_t)b.n, sizeof(*b.a));
	b.b = calloc((size_t)b.n, sizeof(*b.b));
	if (!b.a || !b.b)
		return fail("memory", ENOMEM);
	for (int i = 0; i < b.n; i++) {
		b.a[i].bo = b.b[i].bo = (struct sbk_buf)SBK_BUF_INIT;
		b.a[i].sync_file = b.b[i].sync_file = -1;
	}
	for (int i = 0; i < b.n; i++) {
		if ((ret = setup_surface(&b, &b.a[i])) || (ret = setup_surface(&b, &b.b[i])))
			return fail("surface", ret);
		if (i % 64 == 63 && wl_display_roundtrip(b.c.display) < 0)
			return fail("setup roundtrip", EPROTO);
	}
	if (wl_display_roundtrip(b.c.display) < 0)
		return fail("setup roundtrip", EPROTO);

	uname(&u);
	printf("# figure 5: compositor helper, %d surfaces with pending acquire (%s) against the same commits "
	       "already signalled;\n# kernel %s, %ld CPUs; %d round(s); commits in batches of %d (one roundtrip "
	       "each), batches interleaved A B B A; samples are per-commit means of a batch\n",
	       b.n, b.syncobj ? "linux-drm-syncobj-v1 timeline points" : "explicit-sync v1 vgem sync_files",
	       u.release, sysconf(_SC_NPROCESSORS_ONLN), rounds, b.batch);
	for (int r = 0; r < rounds; r++) {
		ret = round_run(&b, (uint64_t)r + 1, &cpu_a, &cpu_b, &cpu_commit_a, &heap_a, &heap_b,
				&wakeups, &bad_wakeups);
		if (ret)
			return fail("round", ret);
	}
	char name[64];
	snprintf(name, sizeof(name), "%s CPU per commit (+wake)", proto);
	bench_print_us(name, &cpu_a, &cpu_b);
	snprintf(name, sizeof(name), "%s CPU per commit request", proto);
	bench_print_us(name, &cpu_commit_a, &cpu_b);
	snprintf(name, sizeof(name), "%s heap per commit", proto);
	bench_print_unit(name, "B", &heap_a, &heap_b);
	printf("%s wake-ups per signalled fence: %.3f (%llu wake-ups for %ld signals; %d signals "
	       "not costing exactly one)\n",
	       proto, (double)wakeups / ((double)rounds * b.n), (unsigned long long)wakeups,
	       (long)rounds * b.n, bad_wakeups);

	wlt_client_disconnect(&b.c);
	wlt_comp_stop(&b.comp);
	for (int i = 0; i < b.n; i++) {
		drop_fence(&b, &b.a[i]);
		drop_fence(&b, &b.b[i]);
		sbk_buf_destroy(&b.a[i].bo);
		sbk_buf_destroy(&b.b[i].bo);
	}
	free(b.a);
	free(b.b);
	sbk_buf_destroy(&b.buf);
	close(b.vgem);
	if (b.client_drm >= 0)
		close(b.client_drm);
	if (b.comp_drm >= 0)
		close(b.comp_drm);
	bench_samples_finish(&cpu_a);
	bench_samples_finish(&cpu_b);
	bench_samples_finish(&cpu_commit_a);
	bench_samples_finish(&heap_a);
	bench_samples_finish(&heap_b);
	return bad_wakeups ? 1 : 0;
}
