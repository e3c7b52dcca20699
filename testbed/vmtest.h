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
#include <time.h>
#include <unistd.h>

#include <xf86drm.h>

#include <syncbridge/syncbridge.h>

#include "harness.h"
#include "kernel.h"

#define MS (INT64_C(1000000))
/*
 * Timing in these programs (docs/testing.md, "Timing: what each test
 * depends on"): the guest runs under TCG on a shared 2-core host, where a
 * thread can go hundreds of ms without running. So a program never sleeps to
 * let something happen: it waits for it. What a wait's return proves is
 * checked causally (it returned after the helper started signalling: see
 * vm_later.start_ns; its result says signalled or timed out); a duration is
 * checked only where it is the point, with the kernel's own guarantee as the
 * lower bound (a timeout never expires early) and, as the upper one, this
 * slack, which only has to tell "late on a busy machine" (typically < 5 ms
 * here, a few tens of ms with a busy loop on each host core) from a wait that
 * misreads its timeout or sleeps through its wake-up (seconds).
 */
#define VM_SLACK_NS (2000 * MS)

static inline double
vm_ms(int64_t ns)
{
	return (double)ns / 1e6;
}

static inline bool
vm_has_arg(int argc, char **argv, const char *arg)
{
	return tb_has_arg(argc, argv, arg);
}

/* The value following `opt` on the command line, or def. */
static inline const char *
vm_arg_value(int argc, char **argv, const char *opt, const char *def)
{
	return tb_arg_value(argc, argv, opt, def);
}

static inline int
vm_require_vgem(void)
{
	int fd = sbk_vgem_open();

	if (fd == -ENODEV)
		tb_skip("no vgem DRM node (/dev/dri/card* with driver \"vgem\"); load vgem as root");
	if (fd < 0)
		tb_skip("cannot open the vgem node: %s (needs root)", strerror(-fd));
	return fd;
}

/* virtio_gpu's render node, with binary and timeline syncobjs. */
static inline int
vm_require_syncobj_node(void)
{
	uint64_t cap = 0;
	int fd = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);

	if (fd == -ENODEV)
		tb_skip("no virtio_gpu render node: no DRM driver with syncobjs here");
	if (fd < 0)
		tb_skip("cannot open the virtio_gpu render node: %s", strerror(-fd));
	if (drmGetCap(fd, DRM_CAP_SYNCOBJ, &cap) != 0 || !cap)
		tb_skip("virtio_gpu without DRM_CAP_SYNCOBJ");
	cap = 0;
	if (drmGetCap(fd, DRM_CAP_SYNCOBJ_TIMELINE, &cap) != 0 || !cap)
		tb_skip("virtio_gpu without DRM_CAP_SYNCOBJ_TIMELINE");
	return fd;
}

static inline void
vm_require_buf(enum sbk_buf_kind kind, int vgem_fd, size_t size, struct sbk_buf *buf)
{
	int ret = sbk_buf_create(kind, vgem_fd, size, buf);

	if (ret == -ENODEV)
		tb_skip("no %s exporter on this machine", sbk_buf_kind_name(kind));
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

/*
 * The library's view of who a dma-buf's fences hold up, against what the
 * test expects: readers / writers blocked (true) or free. Checks
 * is_busy(READ) and is_busy(WRITE), then exports the READ and WRITE fences
 * and checks that each is pending exactly when its party is blocked; the two
 * exports go to *er and *ew (the caller's to close). `with` names the state
 * for the messages ("a pending read fence").
 */
static inline void
vm_check_dmabuf_blocks(int dmabuf_fd, bool readers, bool writers, const char *with, int *er,
		       int *ew)
{
	char what[256];

	snprintf(what, sizeof(what), "is_busy(READ) with %s", with);
	CHECK_EQ(vm_busy(dmabuf_fd, SB_ACCESS_READ), readers, what);
	snprintf(what, sizeof(what), "is_busy(WRITE) with %s", with);
	CHECK_EQ(vm_busy(dmabuf_fd, SB_ACCESS_WRITE), writers, what);
	*er = vm_export(dmabuf_fd, SB_ACCESS_READ);
	*ew = vm_export(dmabuf_fd, SB_ACCESS_WRITE);
	snprintf(what, sizeof(what), "READ export %s with %s", readers ? "pending" : "signalled", with);
	CHECK_EQ(vm_status(*er), !readers, what);
	snprintf(what, sizeof(what), "WRITE export %s with %s", writers ? "pending" : "signalled", with);
	CHECK_EQ(vm_status(*ew), !writers, what);
}

/*
 * How many of a sync_file's fences come from `driver` ("vgem"), through
 * sb_sync_file_info_create(); *total (if not NULL) gets the number of fences.
 * -1 when the info call failed.
 */
static inline int
vm_fences_of(int sync_fd, const char *driver, uint32_t *total)
{
	struct sb_sync_file_info *info = NULL;
	int n = 0;

	if (sb_sync_file_info_create(sync_fd, &info) != 0)
		return -1;
	for (uint32_t i = 0; i < info->num_fences; i++)
		n += strcmp(info->fences[i].driver, driver) == 0;
	if (total)
		*total = info->num_fences;
	sb_sync_file_info_destroy(info);
	return n;
}

/* ---- a syncobj and a pending vgem fence to bridge into it ---- */

struct vm_syncobj_case {
	int drm;            /* virtio_gpu's render node */
	int vgem;
	uint32_t handle;    /* a new syncobj, no payload */
	struct sbk_fence f; /* a pending vgem write fence: the producer */
};

/* Skips (77) without virtio_gpu's syncobjs or vgem. */
static inline void
vm_syncobj_case_init(struct vm_syncobj_case *c)
{
	c->drm = vm_require_syncobj_node();
	c->vgem = vm_require_vgem();
	REQUIRE(drmSyncobjCreate(c->drm, 0, &c->handle) == 0, "drmSyncobjCreate");
	vm_require_fence(c->vgem, true, &c->f);
}

/*
 * Bridge the producer's fence into `point` (0: the binary payload) with
 * sb_syncobj_import_sync_file(), which must leave the sync_file open; or, for
 * a control, signal the point from the CPU instead: what an import that does
 * not attach the fence would leave behind.
 */
static inline void
vm_syncobj_case_attach(struct vm_syncobj_case *c, uint64_t point, bool control)
{
	char what[128];

	if (control) {
		tb_note("CONTROL: no import, point %llu signalled from the CPU instead",
			     (unsigned long long)point);
		snprintf(what, sizeof(what), "sb_syncobj_signal(point %llu)", (unsigned long long)point);
		CHECK_EQ(sb_syncobj_signal(c->drm, c->handle, point), 0, what);
		return;
	}
	snprintf(what, sizeof(what), "sb_syncobj_import_sync_file(point %llu)",
		 (unsigned long long)point);
	CHECK_EQ(sb_syncobj_import_sync_file(c->drm, c->handle, point, c->f.sync_file), 0, what);
	CHECK(sbk_fd_is_open(c->f.sync_file), "import leaves the sync_file open");
}

static inline void
vm_syncobj_case_finish(struct vm_syncobj_case *c)
{
	drmSyncobjDestroy(c->drm, c->handle);
	sbk_fence_destroy(&c->f);
	close(c->vgem);
	close(c->drm);
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

/*
 * The delay is not a synchronisation: it only gives the other side time to
 * block first, and a test must pass however late fn runs. What fn's effect
 * proves is checked against start_ns: a wait that returned because of fn
 * cannot have returned before fn started (a wait that returned on its own
 * returns -ETIME, or before start_ns).
 */
struct vm_later {
	pthread_t thread;
	int64_t delay_ns;
	int (*fn)(void *arg);
	void *arg;
	int ret;
	int64_t start_ns; /* CLOCK_MONOTONIC just before fn was called */
	int64_t done_ns;  /* CLOCK_MONOTONIC when fn returned */
};

static inline void *
vm_later_main(void *p)
{
	struct vm_later *l = p;

	sbk_sleep_ns(l->delay_ns);
	l->start_ns = now_ns();
	l->ret = l->fn(l->arg);
	l->done_ns = now_ns();
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
	l->start_ns = 0;
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

/* ---- SIGUSR1 every 1 ms at the calling thread ---- */

/*
 * A POSIX timer aimed at the thread (SIGEV_THREAD_ID), not a thread that
 * sleeps 1 ms between pthread_kill()s: the kernel generates the signals on
 * time whoever gets the CPU, and each one the waiting thread handles is one
 * EINTR in its wait (a sending thread can be starved: on the host, under a
 * busy loop per core, one went 215 ms without running). The handler stops the
 * timer once max_ns have passed, so a wait that restarts its full timeout on
 * every EINTR ends after the bombardment and shows up as too long.
 */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

static volatile sig_atomic_t vm_sigusr1_count;
static timer_t vm_bombard_timer;
static int64_t vm_bombard_end_ns; /* 0: no bombardment */
static volatile sig_atomic_t vm_bombard_expired;

static inline void
vm_sigusr1_handler(int sig)
{
	int saved = errno;

	(void)sig;
	vm_sigusr1_count++;
	/* clock_gettime and timer_settime are async-signal-safe. */
	if (vm_bombard_end_ns && !vm_bombard_expired && now_ns() >= vm_bombard_end_ns) {
		struct itimerspec off;

		memset(&off, 0, sizeof(off));
		timer_settime(vm_bombard_timer, 0, &off, NULL);
		vm_bombard_expired = 1;
	}
	errno = saved;
}

struct vm_bombard {
	int64_t max_ns; /* the timer stops itself after this long */
	bool expired;   /* at vm_bombard_stop(): it had */
};

/*
 * Install the handler (no SA_RESTART) and start interrupting the calling
 * thread; returns once it has handled the first signal (under way: no sleep
 * and hope).
 */
static inline void
vm_bombard_start(struct vm_bombard *b, int64_t max_ns)
{
	struct itimerspec every_ms = { .it_interval = { 0, 1000000 }, .it_value = { 0, 1000000 } };
	struct sigaction sa;
	struct sigevent sev;
	sig_atomic_t before;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = vm_sigusr1_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: every blocking syscall sees EINTR */
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
	sev.sigev_notify_thread_id = gettid();
	REQUIRE(timer_create(CLOCK_MONOTONIC, &sev, &vm_bombard_timer) == 0, "timer_create: %s",
		strerror(errno));
	b->max_ns = max_ns;
	b->expired = false;
	vm_bombard_expired = 0;
	vm_bombard_end_ns = now_ns() + max_ns;
	before = vm_sigusr1_count;
	REQUIRE(timer_settime(vm_bombard_timer, 0, &every_ms, NULL) == 0, "timer_settime: %s",
		strerror(errno));
	/* A signal between the test and pause() only means the next one, 1 ms later. */
	while (vm_sigusr1_count == before)
		pause();
}

static inline void
vm_bombard_stop(struct vm_bombard *b)
{
	timer_delete(vm_bombard_timer);
	b->expired = vm_bombard_expired;
	vm_bombard_end_ns = 0;
}

#endif
