/* SPDX-License-Identifier: MIT */
/*
 * Shared scaffolding of the VM-tier test programs: device look-ups that skip
 * (exit 77) when a device is missing, timing, a "do this later on another
 * thread" helper and a signal bombarder. Included once by each program.
 */
#ifndef SB_VMTEST_H
#define SB_VMTEST_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xf86drm.h>

#include <syncbridge/syncbridge.h>

#include "harness.h"
#include "kernel.h"

#define MS (INT64_C(1000000))
/* Upper-bound slack for timings: the guest runs under TCG (p99 wake-up ~2 ms, worse under load). */
#define VM_SLACK_NS (750 * MS)

static inline double
vm_ms(int64_t ns)
{
	return (double)ns / 1e6;
}

static inline bool
vm_has_arg(int argc, char **argv, const char *arg)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], arg) == 0)
			return true;
	return false;
}

/* The value following `opt` on the command line, or def. */
static inline const char *
vm_arg_value(int argc, char **argv, const char *opt, const char *def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], opt) == 0)
			return argv[i + 1];
	return def;
}

static inline int
vm_require_vgem(void)
{
	int fd = sbk_vgem_open();

	if (fd == -ENODEV)
		sb_test_skip("no vgem DRM node (/dev/dri/card* with driver \"vgem\"); load vgem as root");
	if (fd < 0)
		sb_test_skip("cannot open the vgem node: %s (needs root)", strerror(-fd));
	return fd;
}

/* virtio_gpu's render node, with binary and timeline syncobjs. */
static inline int
vm_require_syncobj_node(void)
{
	uint64_t cap = 0;
	int fd = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);

	if (fd == -ENODEV)
		sb_test_skip("no virtio_gpu render node: no DRM driver with syncobjs here");
	if (fd < 0)
		sb_test_skip("cannot open the virtio_gpu render node: %s", strerror(-fd));
	if (drmGetCap(fd, DRM_CAP_SYNCOBJ, &cap) != 0 || !cap)
		sb_test_skip("virtio_gpu without DRM_CAP_SYNCOBJ");
	cap = 0;
	if (drmGetCap(fd, DRM_CAP_SYNCOBJ_TIMELINE, &cap) != 0 || !cap)
		sb_test_skip("virtio_gpu without DRM_CAP_SYNCOBJ_TIMELINE");
	return fd;
}

static inline void
vm_require_buf(enum sbk_buf_kind kind, int vgem_fd, size_t size, struct sbk_buf *buf)
{
	int ret = sbk_buf_create(kind, vgem_fd, size, buf);

	if (ret == -ENODEV)
		sb_test_skip("no %s exporter on this machine", sbk_buf_kind_name(kind));
	REQUIRE(ret == 0, "create a %s buffer: %s", sbk_buf_kind_name(kind), strerror(-ret));
}

static inline void
vm_require_fence(int vgem_fd, bool write, struct sbk_fence *f)
{
	int ret = sbk_fence_create(vgem_fd, write, f);

	REQUIRE(ret == 0, "create a pending vgem %s fence: %s", write ? "write" : "read",
		strerror(-ret));
}

/* Library status of a sync_file; a failed call reports INT32_MIN (never a status). */
static inline int
vm_status(int sync_fd)
{
	int status = INT32_MIN;
	int ret = sb_sync_file_get_status(sync_fd, &status);

	if (ret < 0) {
		printf("# sb_sync_file_get_status(%d) failed: %s\n", sync_fd, strerror(-ret));
		return INT32_MIN;
	}
	return status;
}

/* Library busy state; -1 when the call failed. */
static inline int
vm_busy(int dmabuf_fd, enum sb_access access)
{
	bool busy = false;
	int ret = sb_dmabuf_is_busy(dmabuf_fd, access, &busy);

	if (ret < 0) {
		printf("# sb_dmabuf_is_busy(%d, %d) failed: %s\n", dmabuf_fd, access, strerror(-ret));
		return -1;
	}
	return busy ? 1 : 0;
}

/* Export through the library; REQUIREs success. */
static inline int
vm_export(int dmabuf_fd, enum sb_access access)
{
	int out = -1;
	int ret = sb_dmabuf_export_sync_file(dmabuf_fd, access, &out);

	REQUIRE(ret == 0 && out >= 0, "sb_dmabuf_export_sync_file(%s): %s",
		access == SB_ACCESS_READ ? "READ" : "WRITE", strerror(-ret));
	return out;
}

/* poll() one fd for `events` for up to timeout_ms; returns revents (0 on timeout). */
static inline int
vm_poll(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int ret;

	do {
		ret = poll(&p, 1, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : p.revents;
}

/* ---- do something on another thread after a delay ---- */

struct vm_later {
	pthread_t thread;
	int64_t delay_ns;
	int (*fn)(void *arg);
	void *arg;
	int ret;
	int64_t done_ns; /* CLOCK_MONOTONIC when fn returned */
};

static inline void *
vm_later_main(void *p)
{
	struct vm_later *l = p;

	sbk_sleep_ns(l->delay_ns);
	l->ret = l->fn(l->arg);
	l->done_ns = sbk_now_ns();
	return NULL;
}

static inline void
vm_later_start(struct vm_later *l, int64_t delay_ns, int (*fn)(void *), void *arg)
{
	sigset_t all, old;

	l->delay_ns = delay_ns;
	l->fn = fn;
	l->arg = arg;
	l->ret = 0;
	l->done_ns = 0;
	/* Helper threads never take the test's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	REQUIRE(pthread_create(&l->thread, NULL, vm_later_main, l) == 0, "pthread_create");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static inline int
vm_later_join(struct vm_later *l)
{
	pthread_join(l->thread, NULL);
	return l->ret;
}

/* fn for vm_later: signal a struct sbk_fence. */
static inline int
vm_later_signal_fence(void *arg)
{
	return sbk_fence_signal(arg);
}

/* ---- a thread that interrupts another one with SIGUSR1 every ~1 ms ---- */

static volatile sig_atomic_t vm_sigusr1_count;

static inline void
vm_sigusr1_handler(int sig)
{
	(void)sig;
	vm_sigusr1_count++;
}

struct vm_bombard {
	pthread_t thread;
	pthread_t target;
	atomic_int stop; /* written by the test's thread, read by the bombarder */
	int64_t max_ns; /* stop on its own after this long */
	long sent;
};

static inline void *
vm_bombard_main(void *p)
{
	struct vm_bombard *b = p;
	int64_t end = sbk_now_ns() + b->max_ns;

	while (!atomic_load(&b->stop) && sbk_now_ns() < end) {
		if (pthread_kill(b->target, SIGUSR1) == 0)
			b->sent++;
		sbk_sleep_ns(1 * MS);
	}
	return NULL;
}

/* Install the handler (no SA_RESTART) and start interrupting the calling thread. */
static inline void
vm_bombard_start(struct vm_bombard *b, int64_t max_ns)
{
	struct sigaction sa;
	sigset_t all, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = vm_sigusr1_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: every blocking syscall sees EINTR */
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
	b->target = pthread_self();
	atomic_init(&b->stop, 0);
	b->sent = 0;
	b->max_ns = max_ns;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	REQUIRE(pthread_create(&b->thread, NULL, vm_bombard_main, b) == 0, "pthread_create");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static inline void
vm_bombard_stop(struct vm_bombard *b)
{
	atomic_store(&b->stop, 1);
	pthread_join(b->thread, NULL);
}

#endif
