/* SPDX-License-Identifier: MIT */
/*
 * Figure 3b (docs/performance.md): 1,000 pending syncobj waiters. The
 * waiter's fallback for kernels without DRM_IOCTL_SYNCOBJ_EVENTFD (< 6.6,
 * forced with SYNCBRIDGE_SYNCOBJ_EVENTFD=0) against the kernel's eventfd
 * path, in the same process: 999 waiters of each path stay pending on
 * timeline points nobody signals while, iteration by iteration (the paths
 * alternating), one more waiter of either path is created on a fresh point,
 * once every other thread sleeps (the fallback thread back in its wait over
 * the 1,000) the point is signalled (DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL), and
 * the time until its fd polls readable is taken; then it is destroyed. Printed: the
 * threads each path added for its 999 waiters, the time to create and to
 * destroy a waiter, and the wake-up latency with 999 others pending, as the
 * fallback's ratio to the eventfd path's.
 *
 *   bench-waiters [--iterations N]      (default 1000)
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <drm.h>
#include <sys/ioctl.h>
#include <sys/resource.h>

#include <syncbridge/syncobj.h>

#include "kernel.h"
#include "wake_stats.h"

#define BACKGROUND 999

static int
syncobj_create(int drm, uint32_t *handle)
{
	struct drm_syncobj_create c = { 0 };

	if (ioctl(drm, DRM_IOCTL_SYNCOBJ_CREATE, &c) < 0)
		return -1;
	*handle = c.handle;
	return 0;
}

static void
syncobj_destroy(int drm, uint32_t handle)
{
	struct drm_syncobj_destroy d = { .handle = handle };

	ioctl(drm, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
}

/*
 * Until every other thread of the process sleeps (state S in
 * /proc/self/task/T/stat): the fallback thread back in its kernel wait over
 * the new set, so that the signal measures a wake-up, not a race with the
 * thread re-arming for the waiter just added. At most 1 s.
 */
static void
others_asleep(void)
{
	int self = (int)gettid();

	for (int tries = 0; tries < 1000; tries++) {
		DIR *d = opendir("/proc/self/task");
		struct dirent *e;
		bool all = true;

		while (d && (e = readdir(d))) {
			char path[300], buf[256], *p;
			FILE *f;

			if (e->d_name[0] == '.' || atoi(e->d_name) == self)
				continue;
			snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
			f = fopen(path, "re");
			if (!f)
				continue;
			p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
			fclose(f);
			if (p && p[1] == ' ' && p[2] != 'S')
				all = false;
		}
		if (d)
			closedir(d);
		if (all)
			return;
		usleep(1000);
	}
}

static void
die(const char *what, int err)
{
	fprintf(stderr, "bench-waiters: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void
use_fallback(bool yes)
{
	setenv("SYNCBRIDGE_SYNCOBJ_EVENTFD", yes ? "0" : "1", 1);
}

struct path {
	const char *name;
	bool fallback;
	uint32_t background[BACKGROUND];
	struct sb_syncobj_waiter *waiters[BACKGROUND];
	uint32_t probe;        /* the syncobj whose points the iterations signal */
	uint64_t next_point;
	int threads_added;
	struct bench_samples create_ns, destroy_ns, wake_ns;
};

static void
setup(int drm, struct path *p)
{
	int before = sbk_thread_count();

	use_fallback(p->fallback);
	for (int i = 0; i < BACKGROUND; i++) {
		if (syncobj_create(drm, &p->background[i]) != 0)
			die("drmSyncobjCreate", errno);
		int ret = sb_syncobj_waiter_create(drm, p->background[i], 1, 0, &p->waiters[i]);
		if (ret)
			die("sb_syncobj_waiter_create", ret);
		if (sb_syncobj_waiter_uses_eventfd(p->waiters[i]) == p->fallback)
			die(p->fallback ? "the fallback was not used" : "the kernel has no SYNCOBJ_EVENTFD",
			    EINVAL);
	}
	p->threads_added = sbk_thread_count() - before;
	if (syncobj_create(drm, &p->probe) != 0)
		die("drmSyncobjCreate", errno);
	p->next_point = 1;
}

/* One waiter on the probe's next point: created, signalled, woken, destroyed. */
static void
iteration(int drm, struct path *p, bool keep)
{
	struct sb_syncobj_waiter *w = NULL;
	struct pollfd pfd;
	uint64_t point = p->next_point++;
	int64_t t0, t1, t2, t3;
	int ret;

	use_fallback(p->fallback);
	t0 = now_ns();
	ret = sb_syncobj_waiter_create(drm, p->probe, point, 0, &w);
	t1 = now_ns();
	if (ret)
		die("sb_syncobj_waiter_create", ret);
	pfd = (struct pollfd){ .fd = sb_syncobj_waiter_get_fd(w), .events = POLLIN };
	others_asleep();
	ret = sb_syncobj_signal(drm, p->probe, point);
	if (ret)
		die("sb_syncobj_signal", ret);
	t2 = now_ns();
	if (poll(&pfd, 1, 10000) != 1)
		die("the waiter did not fire within 10 s", ETIME);
	t3 = now_ns();
	sb_syncobj_waiter_destroy(w);
	if (keep) {
		bench_samples_add(&p->create_ns, t1 - t0);
		bench_samples_add(&p->wake_ns, t3 - t2);
		bench_samples_add(&p->destroy_ns, now_ns() - t3);
	}
}

int
main(int argc, char **argv)
{
	static struct path eventfd_path = { .name = "eventfd", .fallback = false };
	static struct path thread_path = { .name = "fallback", .fallback = true };
	long iterations = bench_args(argc, argv, NULL, NULL, NULL);
	struct rlimit nofile;
	int drm = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);

	/* Two eventfds per pair of waiters, 2,000 in all: above the usual soft limit of 1,024. */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	if (drm < 0) {
		printf("SKIP: no virtio_gpu render node (a DRM driver with syncobjs)\n");
		return 77;
	}
	if (!sbk_drm_has_syncobj_eventfd(drm)) {
		printf("SKIP: the kernel has no DRM_IOCTL_SYNCOBJ_EVENTFD to compare with\n");
		return 77;
	}
	printf("# figure 3b: %d pending syncobj waiters per path; one more created, signalled,\n"
	       "# woken and destroyed per iteration, the paths alternating; %ld iterations each\n",
	       BACKGROUND, iterations);
	setup(drm, &eventfd_path);
	setup(drm, &thread_path);
	printf("threads added for %d pending waiters: eventfd path %d, fallback %d\n", BACKGROUND,
	       eventfd_path.threads_added, thread_path.threads_added);
	for (long i = 0; i < iterations + 20; i++) {
		bool keep = i >= 20;

		if (i % 2) {
			iteration(drm, &thread_path, keep);
			iteration(drm, &eventfd_path, keep);
		} else {
			iteration(drm, &eventfd_path, keep);
			iteration(drm, &thread_path, keep);
		}
	}
	bench_print_us("fallback create vs eventfd", &thread_path.create_ns, &eventfd_path.create_ns);
	bench_print_us("fallback wake vs eventfd", &thread_path.wake_ns, &eventfd_path.wake_ns);
	bench_print_us("fallback destroy vs eventfd", &thread_path.destroy_ns,
		       &eventfd_path.destroy_ns);
	for (struct path *p = &eventfd_path; p; p = p == &eventfd_path ? &thread_path : NULL) {
		int64_t t0 = now_ns();

		for (int i = 0; i < BACKGROUND; i++)
			sb_syncobj_waiter_destroy(p->waiters[i]);
		printf("%s: destroying the %d pending waiters took %.1f ms\n", p->name, BACKGROUND,
		       (double)(now_ns() - t0) / 1e6);
		for (int i = 0; i < BACKGROUND; i++)
			syncobj_destroy(drm, p->background[i]);
		syncobj_destroy(drm, p->probe);
	}
	printf("threads left after destroying them: %d added\n",
	       sbk_thread_count() - 1 /* this thread */);
	close(drm);
	return 0;
}
