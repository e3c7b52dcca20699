/* SPDX-License-Identifier: MIT */
/*
 * fault-core's objects and scenarios (fault_core.h; the runner and what the
 * program checks: fault_core.c).
 */
#include <linux/dma-buf.h>
#include <linux/sync_file.h>
#include <sys/ioctl.h>

#include "vmtest.h"
#include "fault_core.h"
#include "uapi_compat.h"


const char *
fault_ioctl_name(unsigned long req)
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

int
fault_env_setup(struct env *e, bool need_syncobj)
{
	int ret;

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
	return 0;
}

void
fault_env_teardown(struct env *e)
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
	int ret = sb_sync_file_info_create(e->merged, &o->info);

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
	return sb_sync_file_set_deadline(e->pending.sync_file, (uint64_t)now_ns() + 1000000);
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

const struct scenario fault_scenarios[] = {
	{ "sb_sync_file_is_valid", false, ERRS(-EINVAL), c_is_valid, NULL },
	{ "sb_sync_file_get_status", false, ERRS(-EBADF, -EINVAL), c_get_status, NULL },
	{ "sb_sync_file_wait(signalled)", false, ERRS(-ETIME, -EBADF, -EINVAL), c_wait_signalled, NULL },
	{ "sb_sync_file_wait(pending, 0)", false, ERRS(-ETIME, -EBADF, -EINVAL), c_wait_pending, NULL },
	{ "sb_sync_file_info_create", false, ERRS(-EBADF, -EINVAL, -ENOMEM, -EFAULT), c_get_info, NULL },
	{ "sb_sync_file_merge", false, ERRS(-EBADF, -EINVAL, -EMFILE, -ENOMEM), c_merge, NULL },
	{ "sb_sync_file_merge_array(3)", false, ERRS(-EINVAL, -EBADF, -EMFILE, -ENOMEM), c_merge_array,
	  NULL },
	{ "sb_sync_file_accumulate(-1, fd)", false, ERRS(-EBADF, -EINVAL, -EMFILE, -ENOMEM), c_acc_first,
	  NULL },
	{ "sb_sync_file_accumulate(acc, fd)", false, ERRS(-EBADF, -EINVAL, -EMFILE, -ENOMEM),
	  c_acc_merge_call, NULL, .acc_preset = true },
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
const int fault_n_scenarios = (int)(sizeof(fault_scenarios) / sizeof(fault_scenarios[0]));

static const struct strict stricts[] = {
	{ "sb_sync_file_info_create", "ioctl:2:ENOMEM", -ENOMEM,
	  "out of memory in the kernel's fence-info copy is -ENOMEM, not \"not a sync_file\" (F1)",
	  NULL },
	{ "sb_sync_file_info_create", "calloc:1:ENOMEM", -ENOMEM, "calloc failure is -ENOMEM", NULL },
	{ "sb_sync_file_info_create", "calloc:2:ENOMEM", -ENOMEM, "calloc failure is -ENOMEM", NULL },
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

const struct strict *
fault_strict_for(const struct scenario *s, const char *schedule)
{
	for (size_t i = 0; i < sizeof(stricts) / sizeof(stricts[0]); i++)
		if (strcmp(stricts[i].scenario, s->name) == 0 && strcmp(stricts[i].schedule, schedule) == 0)
			return &stricts[i];
	return NULL;
}
