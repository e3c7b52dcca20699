/* SPDX-License-Identifier: MIT */
/*
 * fault-core (VM tier): every public core function that reaches the kernel,
 * against real objects (vgem fences and buffers, udmabuf, virtio_gpu
 * syncobjs), with each of its calls into the kernel and libc made to fail in
 * turn by libsbfault (testbed/sbfault.h):
 *
 *   1. a dry run counts the calls the function makes (ioctl, eventfd, dup,
 *      pthread_create, malloc, calloc) and notes the ioctl requests;
 *   2. for every counted call N and every error E for its kind, a fresh
 *      child process sets the objects up again, fails call N with E, and
 *      checks that
 *      - it did not crash (the child exits normally),
 *      - the fault was hit (exactly one injection),
 *      - the return value is one the header documents for the function, or
 *        E itself passed through unchanged (counted and listed as
 *        "undocumented pass-through"); EINTR and EAGAIN must be invisible
 *        (sb_ioctl retries them): the same result as the dry run,
 *      - out-parameters are -1 / NULL on failure, the accumulator unchanged,
 *      - no fd leaked, no fd that was open before was closed or swapped
 *        (testbed/fd_snapshot.h), no close() hit a closed fd (EBADF),
 *      - a syncobj waiter that was created anyway still fires.
 *   Each case runs in its own process: a fault can flip the library's
 *   one-time kernel probes (ENOTTY on a dma-buf means "kernel < 6.0"), and a
 *   crash must not take the other cases with it.
 *
 *   fault-core [--only SCENARIO-SUBSTRING] [--list] [--verbose]
 */
#include <dlfcn.h>
#include <linux/dma-buf.h>
#include <linux/sync_file.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "vmtest.h"
#include "fd_snapshot.h"
#include "sbfault.h"

#ifndef SYNC_IOC_SET_DEADLINE
struct sync_set_deadline {
	__u64 deadline_ns;
	__u64 pad;
};
#define SYNC_IOC_SET_DEADLINE _IOW(SYNC_IOC_MAGIC, 5, struct sync_set_deadline)
#endif
#ifndef DRM_IOCTL_SYNCOBJ_EVENTFD
struct drm_syncobj_eventfd {
	__u32 handle;
	__u32 flags;
	__u64 point;
	__s32 fd;
	__u32 pad;
};
#define DRM_IOCTL_SYNCOBJ_EVENTFD DRM_IOWR(0xCF, struct drm_syncobj_eventfd)
#endif

static const char *
ioctl_name(unsigned long req)
{
	static const struct {
		unsigned long req;
		const char *name;
	} names[] = {
		{ SYNC_IOC_FILE_INFO, "SYNC_IOC_FILE_INFO" },
		{ SYNC_IOC_MERGE, "SYNC_IOC_MERGE" },
		{ SYNC_IOC_SET_DEADLINE, "SYNC_IOC_SET_DEADLINE" },
		{ DMA_BUF_IOCTL_EXPORT_SYNC_FILE, "DMA_BUF_IOCTL_EXPORT_SYNC_FILE" },
		{ DMA_BUF_IOCTL_IMPORT_SYNC_FILE, "DMA_BUF_IOCTL_IMPORT_SYNC_FILE" },
		{ DMA_BUF_IOCTL_SYNC, "DMA_BUF_IOCTL_SYNC" },
		{ DRM_IOCTL_SYNCOBJ_CREATE, "SYNCOBJ_CREATE" },
		{ DRM_IOCTL_SYNCOBJ_DESTROY, "SYNCOBJ_DESTROY" },
		{ DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, "SYNCOBJ_HANDLE_TO_FD" },
		{ DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, "SYNCOBJ_FD_TO_HANDLE" },
		{ DRM_IOCTL_SYNCOBJ_TRANSFER, "SYNCOBJ_TRANSFER" },
		{ DRM_IOCTL_SYNCOBJ_SIGNAL, "SYNCOBJ_SIGNAL" },
		{ DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL, "SYNCOBJ_TIMELINE_SIGNAL" },
		{ DRM_IOCTL_SYNCOBJ_QUERY, "SYNCOBJ_QUERY" },
		{ DRM_IOCTL_SYNCOBJ_WAIT, "SYNCOBJ_WAIT" },
		{ DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, "SYNCOBJ_TIMELINE_WAIT" },
		{ DRM_IOCTL_SYNCOBJ_EVENTFD, "SYNCOBJ_EVENTFD" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].req == req)
			return names[i].name;
	return "?";
}

/* ---- the objects a case works on ---- */

struct env {
	int vgem;
	int drm;           /* virtio_gpu render node, or -1 */
	struct sbk_fence pending;   /* a pending vgem write fence */
	struct sbk_fence pending2;  /* another, read */
	int signalled;     /* a signalled sync_file */
	int merged;        /* pending + signalled: 2 fences */
	struct sbk_buf buf;         /* udmabuf, idle */
	uint32_t bin;      /* binary syncobj, signalled */
	uint32_t tl;       /* timeline syncobj: point 1 signalled, point 2 = pending fence */
};

/* What a call gave back, for the checks and the clean-up. */
struct out {
	int fds[2];                        /* new fds the caller owns (-1: none) */
	struct sb_sync_file_info *info;
	struct sb_syncobj_waiter *waiter;
	int acc_before, acc;               /* accumulate: the accumulator before/after */
};

static int
setup(struct env *e, bool need_syncobj)
{
	int ret, tmp = -1;

	memset(e, 0, sizeof(*e));
	e->drm = e->signalled = e->merged = -1;
	e->vgem = sbk_vgem_open();
	if (e->vgem < 0)
		return e->vgem;
	if ((ret = sbk_fence_create(e->vgem, true, &e->pending)) ||
	    (ret = sbk_fence_create(e->vgem, false, &e->pending2)))
		return ret;
	{
		struct sbk_fence s;

		if ((ret = sbk_fence_create(e->vgem, true, &s)))
			return ret;
		sbk_fence_signal(&s);
		e->signalled = fcntl(s.sync_file, F_DUPFD_CLOEXEC, 0);
		sbk_fence_destroy(&s);
	}
	{
		struct sync_merge_data m = { .name = "fault", .fd2 = e->signalled };

		if (ioctl(e->pending.sync_file, SYNC_IOC_MERGE, &m) < 0)
			return -errno;
		e->merged = m.fence;
	}
	if ((ret = sbk_buf_create(SBK_BUF_UDMABUF, e->vgem, 4096, &e->buf)))
		return ret;
	if (!need_syncobj)
		return 0;
	e->drm = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);
	if (e->drm < 0)
		return e->drm;
	if (drmSyncobjCreate(e->drm, DRM_SYNCOBJ_CREATE_SIGNALED, &e->bin) ||
	    drmSyncobjCreate(e->drm, 0, &e->tl))
		return -errno;
	{
		uint64_t p = 1;

		if (drmSyncobjTimelineSignal(e->drm, &e->tl, &p, 1))
			return -errno;
	}
	/* point 2 waits for the pending vgem fence (raw libdrm: not the code under test) */
	{
		uint32_t t;

		if (drmSyncobjCreate(e->drm, 0, &t) ||
		    drmSyncobjImportSyncFile(e->drm, t, e->pending.sync_file) ||
		    drmSyncobjTransfer(e->drm, e->tl, 2, t, 0, 0))
			return -errno;
		drmSyncobjDestroy(e->drm, t);
	}
	(void)tmp;
	return 0;
}

/* ---- the scenarios ---- */

#define ERRS(...) ((const int[]){ __VA_ARGS__, 0 })

struct scenario {
	const char *name;
	bool need_syncobj;
	const int *documented; /* negative errnos the header lists, 0-terminated */
	int (*call)(struct env *e, struct out *o);
	/* After a successful call: does the result work? (may be NULL) */
	int (*verify)(struct env *e, struct out *o);
};

static int
c_is_valid(struct env *e, struct out *o)
{
	return sb_sync_file_is_valid(e->pending.sync_file) ? 0 : -EINVAL;
}

static int
c_get_status(struct env *e, struct out *o)
{
	int st = 7;
	int ret = sb_sync_file_get_status(e->merged, &st);

	if (ret == 0 && st != 0)
		return -1000; /* wrong answer: the merge is pending */
	return ret;
}

static int
c_wait_signalled(struct env *e, struct out *o)
{
	return sb_sync_file_wait(e->signalled, 0);
}

static int
c_wait_pending(struct env *e, struct out *o)
{
	return sb_sync_file_wait(e->pending.sync_file, 0);
}

static int
c_get_info(struct env *e, struct out *o)
{
	int ret = sb_sync_file_get_info(e->merged, &o->info);

	if (ret != 0 && o->info != NULL)
		return -1001; /* *out must be NULL on failure */
	/* the kernel's merge leaves the signalled fence out: 1 or 2 fences */
	if (ret == 0 && (!o->info || o->info->num_fences < 1))
		return -1002;
	return ret;
}

static int
c_merge(struct env *e, struct out *o)
{
	return sb_sync_file_merge(e->pending.sync_file, e->signalled, &o->fds[0]);
}

static int
c_merge_array(struct env *e, struct out *o)
{
	int in[3] = { e->pending.sync_file, e->signalled, e->pending2.sync_file };

	return sb_sync_file_merge_array(in, 3, &o->fds[0]);
}

static int
c_acc_first(struct env *e, struct out *o)
{
	int ret;

	o->acc = o->acc_before = -1;
	ret = sb_sync_file_accumulate(&o->acc, e->pending.sync_file);
	o->fds[0] = o->acc;
	return ret;
}

static int
c_acc_merge_call(struct env *e, struct out *o)
{
	int ret = sb_sync_file_accumulate(&o->acc, e->pending.sync_file);

	o->fds[0] = o->acc != o->acc_before ? o->acc : -1;
	return ret;
}

static int
c_deadline(struct env *e, struct out *o)
{
	return sb_sync_file_set_deadline(e->pending.sync_file, (uint64_t)sbk_now_ns() + 1000000);
}

static int
c_dmabuf_export_read(struct env *e, struct out *o)
{
	return sb_dmabuf_export_sync_file(e->pending.bo.fd, SB_ACCESS_READ, &o->fds[0]);
}

static int
c_dmabuf_export_write(struct env *e, struct out *o)
{
	return sb_dmabuf_export_sync_file(e->buf.fd, SB_ACCESS_WRITE, &o->fds[0]);
}

static int
c_dmabuf_import(struct env *e, struct out *o)
{
	return sb_dmabuf_import_sync_file(e->buf.fd, SB_ACCESS_WRITE, e->pending.sync_file);
}

static int
c_dmabuf_wait(struct env *e, struct out *o)
{
	bool busy = false;
	int ret = sb_dmabuf_is_busy(e->pending.bo.fd, SB_ACCESS_READ, &busy);

	if (ret == 0 && !busy)
		return -1003;
	if (ret == 0)
		ret = sb_dmabuf_wait(e->buf.fd, SB_ACCESS_WRITE, 0);
	return ret;
}

static int
c_so_export_bin(struct env *e, struct out *o)
{
	return sb_syncobj_export_sync_file(e->drm, e->bin, 0, &o->fds[0]);
}

static int
c_so_export_tl(struct env *e, struct out *o)
{
	return sb_syncobj_export_sync_file(e->drm, e->tl, 2, &o->fds[0]);
}

static int
c_so_import_bin(struct env *e, struct out *o)
{
	return sb_syncobj_import_sync_file(e->drm, e->bin, 0, e->pending.sync_file);
}

static int
c_so_import_tl(struct env *e, struct out *o)
{
	return sb_syncobj_import_sync_file(e->drm, e->tl, 5, e->pending.sync_file);
}

static int
c_so_signal_bin(struct env *e, struct out *o)
{
	return sb_syncobj_signal(e->drm, e->bin, 0);
}

static int
c_so_signal_tl(struct env *e, struct out *o)
{
	return sb_syncobj_signal(e->drm, e->tl, 9);
}

static int
c_so_query(struct env *e, struct out *o)
{
	uint64_t p = 77;
	int ret = sb_syncobj_query(e->drm, e->tl, &p);

	if (ret == 0 && p != 1)
		return -1004;
	return ret;
}

static int
c_so_wait_bin(struct env *e, struct out *o)
{
	return sb_syncobj_wait(e->drm, e->bin, 0, 0, 0);
}

static int
c_so_wait_avail(struct env *e, struct out *o)
{
	return sb_syncobj_wait(e->drm, e->tl, 2, 0, SB_SYNCOBJ_WAIT_AVAILABLE);
}

static int
c_waiter(struct env *e, struct out *o)
{
	return sb_syncobj_waiter_create(e->drm, e->tl, 2, 0, &o->waiter);
}

static int
c_waiter_thread(struct env *e, struct out *o)
{
	int ret;

	setenv("SYNCBRIDGE_SYNCOBJ_EVENTFD", "0", 1);
	ret = sb_syncobj_waiter_create(e->drm, e->tl, 2, 0, &o->waiter);
	unsetenv("SYNCBRIDGE_SYNCOBJ_EVENTFD");
	return ret;
}

/* A waiter that was created must fire once point 2 signals, and not before. */
static int
v_waiter(struct env *e, struct out *o)
{
	int fd = sb_syncobj_waiter_get_fd(o->waiter);

	if (vm_poll(fd, POLLIN, 0) != 0)
		return -1005;
	sbk_fence_signal(&e->pending);
	if (!(vm_poll(fd, POLLIN, 5000) & POLLIN))
		return -1006;
	return 0;
}

static const struct scenario scenarios[] = {
	{ "sb_sync_file_is_valid", false, ERRS(-EINVAL), c_is_valid, NULL },
	{ "sb_sync_file_get_status", false, ERRS(-EBADF, -EINVAL), c_get_status, NULL },
	{ "sb_sync_file_wait(signalled)", false, ERRS(-ETIME, -EBADF, -EINVAL), c_wait_signalled, NULL },
	{ "sb_sync_file_wait(pending, 0)", false, ERRS(-ETIME, -EBADF, -EINVAL), c_wait_pending, NULL },
	{ "sb_sync_file_get_info", false, ERRS(-EBADF, -EINVAL, -ENOMEM, -EFAULT), c_get_info, NULL },
	{ "sb_sync_file_merge", false, ERRS(-EBADF, -EINVAL, -EMFILE, -ENOMEM), c_merge, NULL },
	{ "sb_sync_file_merge_array(3)", false, ERRS(-EINVAL, -EBADF, -EMFILE, -ENOMEM), c_merge_array,
	  NULL },
	{ "sb_sync_file_accumulate(-1, fd)", false, ERRS(-EBADF, -EINVAL, -EMFILE, -ENOMEM), c_acc_first,
	  NULL },
	{ "sb_sync_file_accumulate(acc, fd)", false, ERRS(-EBADF, -EINVAL, -EMFILE, -ENOMEM),
	  c_acc_merge_call, NULL },
	{ "sb_sync_file_set_deadline", false, ERRS(-EBADF, -EINVAL), c_deadline, NULL },
	{ "sb_dmabuf_export_sync_file(READ)", false,
	  ERRS(-EBADF, -EINVAL, -EOPNOTSUPP, -EMFILE, -ENOMEM), c_dmabuf_export_read, NULL },
	{ "sb_dmabuf_export_sync_file(WRITE)", false,
	  ERRS(-EBADF, -EINVAL, -EOPNOTSUPP, -EMFILE, -ENOMEM), c_dmabuf_export_write, NULL },
	{ "sb_dmabuf_import_sync_file(WRITE)", false, ERRS(-EBADF, -EINVAL, -EOPNOTSUPP, -ENOMEM),
	  c_dmabuf_import, NULL },
	{ "sb_dmabuf_is_busy+wait", false, ERRS(-ETIME, -EBADF, -EINVAL), c_dmabuf_wait, NULL },
	{ "sb_syncobj_export_sync_file(binary)", true,
	  ERRS(-EINVAL, -ENOENT, -EOPNOTSUPP, -EBADF, -EMFILE, -ENOMEM), c_so_export_bin, NULL },
	{ "sb_syncobj_export_sync_file(timeline)", true,
	  ERRS(-EINVAL, -ENOENT, -EOPNOTSUPP, -EBADF, -EMFILE, -ENOMEM), c_so_export_tl, NULL },
	{ "sb_syncobj_import_sync_file(binary)", true,
	  ERRS(-ENOENT, -EINVAL, -EOPNOTSUPP, -EBADF, -ENOMEM), c_so_import_bin, NULL },
	{ "sb_syncobj_import_sync_file(timeline)", true,
	  ERRS(-ENOENT, -EINVAL, -EOPNOTSUPP, -EBADF, -ENOMEM), c_so_import_tl, NULL },
	{ "sb_syncobj_signal(binary)", true, ERRS(-ENOENT, -EOPNOTSUPP, -EINVAL, -EBADF, -ENOMEM),
	  c_so_signal_bin,
	  NULL },
	{ "sb_syncobj_signal(timeline)", true, ERRS(-ENOENT, -EOPNOTSUPP, -EINVAL, -EBADF, -ENOMEM),
	  c_so_signal_tl,
	  NULL },
	{ "sb_syncobj_query", true, ERRS(-ENOENT, -EOPNOTSUPP, -EINVAL, -EBADF, -ENOMEM), c_so_query,
	  NULL },
	{ "sb_syncobj_wait(binary)", true, ERRS(-ETIME, -ENOENT, -EOPNOTSUPP, -EINVAL, -EBADF, -ENOMEM),
	  c_so_wait_bin, NULL },
	{ "sb_syncobj_wait(timeline, AVAILABLE)", true,
	  ERRS(-ETIME, -ENOENT, -EOPNOTSUPP, -EINVAL, -EBADF, -ENOMEM), c_so_wait_avail, NULL },
	{ "sb_syncobj_waiter_create(eventfd)", true,
	  ERRS(-ENOENT, -EOPNOTSUPP, -EINVAL, -EBADF, -EMFILE, -ENOMEM, -EAGAIN), c_waiter, v_waiter },
	{ "sb_syncobj_waiter_create(thread)", true,
	  ERRS(-ENOENT, -EOPNOTSUPP, -EINVAL, -EBADF, -EMFILE, -ENOMEM, -EAGAIN), c_waiter_thread,
	  v_waiter },
};
#define N_SCENARIOS ((int)(sizeof(scenarios) / sizeof(scenarios[0])))

/*
 * Cases whose result is dictated more precisely than "a documented error":
 * the kernel error must come through (not be mistaken for a validation
 * failure), or the library must absorb it. `known`: a finding written up as
 * open in docs/reliability.md; the case is then a note, not a failure.
 */
struct strict {
	const char *scenario, *schedule;
	int want;
	const char *why, *known;
};

static const struct strict stricts[] = {
	{ "sb_sync_file_get_info", "ioctl:2:ENOMEM", -ENOMEM,
	  "out of memory in the kernel's fence-info copy is -ENOMEM, not \"not a sync_file\" (F1)",
	  NULL },
	{ "sb_sync_file_get_info", "calloc:1:ENOMEM", -ENOMEM, "calloc failure is -ENOMEM", NULL },
	{ "sb_sync_file_get_info", "calloc:2:ENOMEM", -ENOMEM, "calloc failure is -ENOMEM", NULL },
	{ "sb_sync_file_set_deadline", "ioctl:2:ENOTTY", 0,
	  "a kernel without SYNC_IOC_SET_DEADLINE (< 6.5): the hint is dropped, 0", NULL },
	{ "sb_dmabuf_export_sync_file(READ)", "ioctl:1:ENOTTY", -EOPNOTSUPP,
	  "ENOTTY on a dma-buf means a kernel < 6.0: -EOPNOTSUPP", NULL },
	{ "sb_dmabuf_export_sync_file(WRITE)", "ioctl:1:ENOTTY", -EOPNOTSUPP,
	  "ENOTTY on a dma-buf means a kernel < 6.0: -EOPNOTSUPP", NULL },
	{ "sb_dmabuf_import_sync_file(WRITE)", "ioctl:2:ENOTTY", -EOPNOTSUPP,
	  "ENOTTY on a dma-buf means a kernel < 6.0: -EOPNOTSUPP", NULL },
	{ "sb_dmabuf_export_sync_file(READ)", "ioctl:1:ENOMEM", -ENOMEM, "-ENOMEM comes through", NULL },
	{ "sb_dmabuf_export_sync_file(READ)", "ioctl:1:EMFILE", -EMFILE, "-EMFILE comes through", NULL },
	{ "sb_syncobj_signal(timeline)", "ioctl:1:ENOMEM", -ENOMEM,
	  "the kernel's -ENOMEM (drm_syncobj_array_find) comes through, documented (F3)", NULL },
	{ "sb_syncobj_query", "ioctl:1:ENOMEM", -ENOMEM,
	  "the kernel's -ENOMEM comes through, documented (F3)", NULL },
	{ "sb_syncobj_wait(timeline, AVAILABLE)", "ioctl:1:ENOMEM", -ENOMEM,
	  "the kernel's -ENOMEM comes through, documented (F3)", NULL },
	{ "sb_syncobj_waiter_create(eventfd)", "ioctl:1:EINVAL", 0,
	  "no SYNCOBJ_EVENTFD (< 6.6, EINVAL): falls back to a thread that still fires", NULL },
	{ "sb_syncobj_waiter_create(eventfd)", "ioctl:1:ENOTTY", 0,
	  "no SYNCOBJ_EVENTFD (ENOTTY): falls back to a thread that still fires", NULL },
	{ "sb_syncobj_waiter_create(eventfd)", "ioctl:1:ENOMEM", -ENOMEM, "-ENOMEM comes through", NULL },
	{ "sb_syncobj_waiter_create(eventfd)", "eventfd:1:EMFILE", -EMFILE, "-EMFILE comes through", NULL },
	{ "sb_syncobj_waiter_create(eventfd)", "calloc:1:ENOMEM", -ENOMEM, "calloc failure is -ENOMEM", NULL },
	{ "sb_syncobj_waiter_create(thread)", "pthread_create:1:EAGAIN", -EAGAIN,
	  "no thread: -EAGAIN", NULL },
};

static const struct strict *
strict_for(const struct scenario *s, const char *schedule)
{
	for (size_t i = 0; i < sizeof(stricts) / sizeof(stricts[0]); i++)
		if (strcmp(stricts[i].scenario, s->name) == 0 && strcmp(stricts[i].schedule, schedule) == 0)
			return &stricts[i];
	return NULL;
}

/* The kinds of call we fail, and the errors each is failed with. */
static const struct {
	const char *fn;
	const int *errs;
} kinds[] = {
	{ "ioctl", ERRS(ENOTTY, EINVAL, ENOMEM, EINTR, EAGAIN) },
	{ "eventfd", ERRS(EMFILE, ENOMEM) },
	{ "dup", ERRS(EMFILE) },
	{ "pthread_create", ERRS(EAGAIN) },
	{ "malloc", ERRS(ENOMEM) },
	{ "calloc", ERRS(ENOMEM) },
	{ "realloc", ERRS(ENOMEM) },
};
#define N_KINDS ((int)(sizeof(kinds) / sizeof(kinds[0])))

/* What a child reports back to the parent. */
struct report {
	int ret;
	unsigned calls[N_KINDS];
	unsigned long ioctls[16];
	unsigned injected;
	int failures;
	bool undocumented; /* returned the injected errno, not in the documented list */
	bool skipped;
};

static const char *
errname(int e)
{
	static char bufs[4][32];
	static int next;
	char *buf = bufs[next++ % 4];
	static const char *const names[] = {
		[EPERM] = "EPERM", [ENOENT] = "ENOENT", [EINTR] = "EINTR", [EIO] = "EIO",
		[EBADF] = "EBADF", [EAGAIN] = "EAGAIN", [ENOMEM] = "ENOMEM", [EBUSY] = "EBUSY",
		[EINVAL] = "EINVAL", [EMFILE] = "EMFILE", [ENOTTY] = "ENOTTY", [ETIME] = "ETIME",
		[EOPNOTSUPP] = "EOPNOTSUPP", [ENODEV] = "ENODEV",
	};

	if (e == 0)
		return "0";
	if (e < 0 && -e < (int)(sizeof(names) / sizeof(names[0])) && names[-e]) {
		snprintf(buf, sizeof(bufs[0]), "-%s", names[-e]);
		return buf;
	}
	if (e > 0 && e < (int)(sizeof(names) / sizeof(names[0])) && names[e])
		return names[e];
	snprintf(buf, sizeof(bufs[0]), "%d", e);
	return buf;
}

static bool
listed(const int *set, int v)
{
	for (; *set; set++)
		if (*set == v)
			return true;
	return false;
}

static void
cleanup_out(struct out *o)
{
	for (int i = 0; i < 2; i++)
		if (o->fds[i] >= 0)
			close(o->fds[i]);
	sb_sync_file_info_free(o->info);
	sb_syncobj_waiter_destroy(o->waiter);
	o->info = NULL;
	o->waiter = NULL;
}

static void
teardown(struct env *e)
{
	if (e->drm >= 0)
		close(e->drm);
	if (e->signalled >= 0)
		close(e->signalled);
	if (e->merged >= 0)
		close(e->merged);
	sbk_buf_destroy(&e->buf);
	sbk_fence_signal(&e->pending);
	sbk_fence_signal(&e->pending2);
	sbk_fence_destroy(&e->pending);
	sbk_fence_destroy(&e->pending2);
	close(e->vgem);
}

/* Drop fd from a snapshot: it was closed on purpose. */
static void
snapshot_forget(struct sb_fd_snapshot *s, int fd)
{
	for (int i = 0; i < s->n; i++) {
		if (s->e[i].fd == fd) {
			memmove(&s->e[i], &s->e[i + 1], (size_t)(s->n - i - 1) * sizeof(s->e[0]));
			s->n--;
			return;
		}
	}
}

/*
 * In a child: set up, (snapshot), arm `schedule`, call, disarm, check.
 * dry: no checks beyond "it worked"; fills the counts.
 */
static void
run_case(const struct scenario *s, const char *schedule, int injected_err, const struct report *dry,
	 struct report *r)
{
	struct env e;
	struct out o = { .fds = { -1, -1 }, .acc = -1, .acc_before = -1 };
	struct sb_fd_snapshot before;
	int bad_fd = -1, ret;

	memset(r, 0, sizeof(*r));
	ret = setup(&e, s->need_syncobj);
	if (ret == -ENODEV) {
		r->skipped = true;
		return;
	}
	REQUIRE(ret == 0, "%s: set-up failed: %s", s->name, strerror(-ret));
	if (s->call == c_acc_merge_call)
		o.acc = o.acc_before = fcntl(e.signalled, F_DUPFD_CLOEXEC, 0);
	REQUIRE(sb_fd_snapshot_take(&before) == 0, "fd snapshot");

	sbfault_arm(schedule);
	r->ret = s->call(&e, &o);
	sbfault_disarm();

	for (int k = 0; k < N_KINDS; k++)
		r->calls[k] = sbfault_calls(kinds[k].fn);
	for (unsigned i = 0; i < 16; i++)
		r->ioctls[i] = sbfault_ioctl_request(i);
	r->injected = sbfault_injected();

	int failures_before = sb_test_failures;
	const char *label = schedule && *schedule ? schedule : "dry run";

	if (!dry) {
		CHECK(r->ret == 0 || r->ret == -ETIME || listed(s->documented, r->ret),
		      "%s [%s]: returned %s", s->name, label, errname(r->ret));
	} else {
		/* sb_ioctl() retries EINTR and EAGAIN: invisible to the caller. */
		bool transparent = strncmp(schedule, "ioctl:", 6) == 0 &&
				   (injected_err == EINTR || injected_err == EAGAIN);
		const struct strict *st = strict_for(s, schedule);

		CHECK_EQ(r->injected, 1, "the fault was hit");
		if (transparent) {
			CHECK(r->ret == dry->ret, "%s [%s]: %s is retried: same result as the dry run (%s), got %s",
			      s->name, label, errname(injected_err), errname(dry->ret), errname(r->ret));
		} else if (st && r->ret != st->want) {
			if (st->known)
				sb_test_note("%s [%s]: KNOWN (docs/reliability.md %s): want %s, got %s",
					     s->name, label, st->known, errname(st->want), errname(r->ret));
			else
				CHECK(0, "%s [%s]: want %s (%s), got %s", s->name, label, errname(st->want),
				      st->why, errname(r->ret));
		} else if (st) {
			CHECK(1, "%s [%s]: %s", s->name, label, st->why);
			if (st->known)
				sb_test_note("%s [%s]: %s is fixed: update docs/reliability.md", s->name,
					     label, st->known);
		} else if (r->ret != 0 && r->ret != dry->ret && !listed(s->documented, r->ret)) {
			if (r->ret == -injected_err) {
				r->undocumented = true;
				sb_test_note("%s [%s]: returned %s: passed through, not in the header's list",
					     s->name, label, errname(r->ret));
			} else {
				CHECK(0, "%s [%s]: returned %s: neither documented nor the injected error",
				      s->name, label, errname(r->ret));
			}
		}
		if (r->ret != 0 && r->ret != dry->ret) {
			CHECK(o.fds[0] == -1 && o.info == NULL && o.waiter == NULL,
			      "%s [%s]: failed, and left no output (fd %d, info %p, waiter %p)", s->name,
			      label, o.fds[0], (void *)o.info, (void *)o.waiter);
			if (o.acc_before >= 0)
				CHECK(o.acc == o.acc_before, "%s [%s]: failed, accumulator unchanged (%d → %d)",
				      s->name, label, o.acc_before, o.acc);
		}
	}
	CHECK_EQ(sbfault_bad_closes(&bad_fd), 0, "close() never hit a closed fd");
	if (bad_fd >= 0)
		sb_test_note("%s [%s]: close(%d) → EBADF", s->name, label, bad_fd);

	/* A waiter created in spite of the fault must still work. */
	if (r->ret == 0 && s->verify) {
		int v = s->verify(&e, &o);
		CHECK(v == 0, "%s [%s]: the result works (%d)", s->name, label, v);
	}

	/*
	 * accumulate: the accumulator was open before the call; on success the
	 * library closed it (documented) and fds[0] is the new one, on failure
	 * it is unchanged and ours to close. Either way it is gone now.
	 */
	cleanup_out(&o);
	if (o.acc_before >= 0 && o.acc == o.acc_before)
		close(o.acc);
	if (o.acc_before >= 0)
		snapshot_forget(&before, o.acc_before);
	{
		char what[256];

		snprintf(what, sizeof(what), "%s [%s]", s->name, label);
		sb_fd_snapshot_check(&before, NULL, 0, what);
	}
	sb_fd_snapshot_free(&before);
	teardown(&e);
	r->failures = sb_test_failures - failures_before;
}

/* Fork a child for one case; returns false if the child crashed. */
static bool
fork_case(const struct scenario *s, const char *schedule, int err, const struct report *dry,
	  struct report *r)
{
	int p[2], status;
	pid_t pid;
	ssize_t n;

	REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe2");
	fflush(stdout);
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		struct report mine;

		close(p[0]);
		run_case(s, schedule, err, dry, &mine);
		if (write(p[1], &mine, sizeof(mine)) != (ssize_t)sizeof(mine))
			_exit(3);
		fflush(stdout);
		_exit(mine.failures ? 1 : 0);
	}
	close(p[1]);
	memset(r, 0, sizeof(*r));
	n = read(p[0], r, sizeof(*r));
	close(p[0]);
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	if (n != (ssize_t)sizeof(*r) || !WIFEXITED(status)) {
		CHECK(0, "%s [%s]: the child %s (status %#x)", s->name, schedule ? schedule : "dry run",
		      WIFSIGNALED(status) ? "crashed" : "gave no report", status);
		return false;
	}
	CHECK(r->failures == 0, "%s [%s]: %d checks failed in the child (above)", s->name,
	      schedule ? schedule : "dry run", r->failures);
	return true;
}

int
main(int argc, char **argv)
{
	const char *only = vm_arg_value(argc, argv, "--only", NULL);
	int cases = 0, injected = 0, undocumented = 0, sites = 0, scen = 0;
	int vgem;

	if (!dlsym(RTLD_DEFAULT, "sbfault_arm"))
		sb_test_skip("libsbfault is not loaded");
	vgem = vm_require_vgem();
	close(vgem);
	sb_test_note("malloc family interposed: %s", sbfault_malloc_interposed() ? "yes" : "no (ASan)");

	for (int i = 0; i < N_SCENARIOS; i++) {
		const struct scenario *s = &scenarios[i];
		struct report dry, r;
		char line[512];
		int pos = 0;

		if (only && !strstr(s->name, only))
			continue;
		if (vm_has_arg(argc, argv, "--list")) {
			printf("%s\n", s->name);
			continue;
		}
		if (!fork_case(s, "", 0, NULL, &dry))
			continue;
		if (dry.skipped) {
			sb_test_note("%s: skipped (device missing)", s->name);
			continue;
		}
		scen++;
		pos += snprintf(line + pos, sizeof(line) - (size_t)pos, "%s → %s; calls:", s->name,
				errname(dry.ret));
		for (int k = 0; k < N_KINDS; k++)
			if (dry.calls[k])
				pos += snprintf(line + pos, sizeof(line) - (size_t)pos, " %s=%u",
						kinds[k].fn, dry.calls[k]);
		for (unsigned j = 0; j < dry.calls[0] && j < 16; j++)
			pos += snprintf(line + pos, sizeof(line) - (size_t)pos, "%s%s", j ? "," : " (",
					ioctl_name(dry.ioctls[j]));
		if (dry.calls[0])
			snprintf(line + pos, sizeof(line) - (size_t)pos, ")");
		sb_test_note("%s", line);

		for (int k = 0; k < N_KINDS; k++) {
			sites += (int)dry.calls[k];
			for (unsigned n = 1; n <= dry.calls[k]; n++) {
				for (const int *err = kinds[k].errs; *err; err++) {
					char sched[64];

					snprintf(sched, sizeof(sched), "%s:%u:%s", kinds[k].fn, n,
						 errname(*err));
					fork_case(s, sched, *err, &dry, &r);
					cases++;
					injected += (int)r.injected;
					undocumented += r.undocumented;
					sb_test_note("  %s%s%s → %s", sched,
							     k == 0 ? " " : "",
							     k == 0 ? ioctl_name(dry.ioctls[n - 1 < 16 ? n - 1 : 15]) : "",
							     errname(r.ret));
				}
			}
		}
	}
	sb_test_note("%d scenarios, %d call sites, %d fault cases, %d faults injected, %d undocumented pass-throughs",
		     scen, sites, cases, injected, undocumented);
	return sb_test_finish();
}
