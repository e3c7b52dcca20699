/* SPDX-License-Identifier: MIT */
/*
 * dma-buf implicit fences (include/uapi/linux/dma-buf.h, Linux 6.0+ for the
 * sync_file ioctls; poll() since 3.17).
 */
#include <syncbridge/dmabuf.h>

#include <linux/dma-buf.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>

#include "log.h"
#include "sync_file_internal.h"
#include "util.h"

/* include/uapi/linux/magic.h: DMA_BUF_MAGIC, "DMAB" (Linux 5.3). */
#define SB_DMA_BUF_MAGIC 0x444d4142u

enum probe { PROBE_UNKNOWN = 0, PROBE_YES, PROBE_NO };

/* Whether this kernel has DMA_BUF_IOCTL_{EXPORT,IMPORT}_SYNC_FILE, probed once. */
static _Atomic int have_sync_file_ioctls = PROBE_UNKNOWN;

/*
 * A dma-buf's file lives on the dmabuf pseudo-fs, whose d_dname is
 * "/dmabuf:<name>" (Linux 5.3+; "anon_inode:dmabuf" before). Where /proc is
 * not mounted, fall back to DMA_BUF_IOCTL_SYNC with invalid flags, which a
 * dma-buf rejects with EINVAL (and other files with ENOTTY), changing nothing.
 */
static int
check_dmabuf(int fd)
{
	char path[64], target[64];
	struct statfs sfs;
	ssize_t len;
	int ret;

	ret = sb_fd_check_open(fd);
	if (ret)
		return ret;

	/*
	 * Since Linux 5.3 a dma-buf lives on the kernel's "dmabuf" pseudo
	 * filesystem (drivers/dma-buf/dma-buf.c, DMA_BUF_MAGIC): fstatfs() says
	 * so without a path lookup. A readlink() of /proc/self/fd/N right
	 * before a wait made that wait's wake-up ~15% slower in the test guest
	 * (docs/performance.md, figure 3); it stays for older kernels, where a
	 * dma-buf is an anonymous inode.
	 */
	if (fstatfs(fd, &sfs) == 0 && (uint32_t)sfs.f_type == SB_DMA_BUF_MAGIC)
		return 0;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	len = readlink(path, target, sizeof(target) - 1);
	if (len >= 0) {
		target[len] = '\0';
		if (strncmp(target, "/dmabuf:", 8) == 0 || strcmp(target, "anon_inode:dmabuf") == 0)
			return 0;
		return -EINVAL;
	}

	struct dma_buf_sync sync = { .flags = ~(__u64)0 };
	ret = sb_ioctl(fd, DMA_BUF_IOCTL_SYNC, &sync);
	return ret == -EINVAL ? 0 : -EINVAL;
}

/*
 * An access and the dma-buf it applies to, checked in the order the header
 * documents (-EINVAL for the access first, then the fd), and what the access
 * means to the kernel: the DMA_BUF_SYNC_* flag of the sync_file ioctls and
 * the dma_buf_poll() event — POLLIN once the writers are done, POLLOUT once
 * everybody is.
 */
static int
check_access(int dmabuf_fd, enum sb_access access, __u32 *sync_flag, short *poll_event)
{
	switch (access) {
	case SB_ACCESS_READ:
		*sync_flag = DMA_BUF_SYNC_READ;
		*poll_event = POLLIN;
		return check_dmabuf(dmabuf_fd);
	case SB_ACCESS_WRITE:
		*sync_flag = DMA_BUF_SYNC_WRITE;
		*poll_event = POLLOUT;
		return check_dmabuf(dmabuf_fd);
	}
	return -EINVAL;
}

/* Returns the ioctl's result, turning "kernel lacks it" into -EOPNOTSUPP. */
static int
sync_file_ioctl(int fd, unsigned long request, void *arg)
{
	int ret;

	if (atomic_load(&have_sync_file_ioctls) == PROBE_NO)
		return -EOPNOTSUPP;

	ret = sb_ioctl(fd, request, arg);
	if (ret == -ENOTTY) {
		/*
		 * ENOTTY from a dma-buf means a kernel before 6.0 — if fd still is
		 * a dma-buf. check_dmabuf() ran before the ioctl; in between, a
		 * caller's other thread may have closed fd and reused its number
		 * for another file, whose ENOTTY says nothing about the kernel.
		 * Check again, and conclude for the whole process only when fd is
		 * a dma-buf now; otherwise report what fd is, without latching.
		 */
		int now = check_dmabuf(fd);
		if (now) {
			sb_debug("fd %d stopped being a dma-buf during the call (caller): "
				 "not taking its ENOTTY as an old kernel", fd);
			return now;
		}
		if (atomic_exchange(&have_sync_file_ioctls, PROBE_NO) != PROBE_NO)
			sb_info("kernel lacks DMA_BUF_IOCTL_*_SYNC_FILE (Linux < 6.0): "
				"dma-buf fences can only be waited for with poll()");
		return -EOPNOTSUPP;
	}
	if (ret >= 0)
		atomic_store(&have_sync_file_ioctls, PROBE_YES);
	return ret;
}

bool
sb_dmabuf_is_valid(int fd)
{
	return check_dmabuf(fd) == 0;
}

int
sb_dmabuf_export_sync_file(int dmabuf_fd, enum sb_access access, int *out_fd)
{
	struct dma_buf_export_sync_file args;
	short unused;
	int ret;

	if (!out_fd)
		return -EINVAL;
	*out_fd = -1;
	memset(&args, 0, sizeof(args));
	args.fd = -1;
	ret = check_access(dmabuf_fd, access, &args.flags, &unused);
	if (ret)
		return ret;

	/* dma_buf_export_sync_file() allocates the fd with O_CLOEXEC. */
	ret = sync_file_ioctl(dmabuf_fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &args);
	if (ret < 0) {
		sb_log_errno(SB_LOG_DEBUG, ret, "EXPORT_SYNC_FILE on dma-buf %d", dmabuf_fd);
		return ret;
	}
	*out_fd = args.fd;
	return 0;
}

int
sb_dmabuf_import_sync_file(int dmabuf_fd, enum sb_access access, int sync_file_fd)
{
	struct dma_buf_import_sync_file args;
	short unused;
	int ret;

	memset(&args, 0, sizeof(args));
	ret = check_access(dmabuf_fd, access, &args.flags, &unused);
	if (ret)
		return ret;
	ret = sb_sync_file_check(sync_file_fd, NULL, NULL);
	if (ret)
		return ret;

	/*
	 * uapi: "DMA_BUF_SYNC_WRITE: ... added as a write (exclusive) fence;
	 * DMA_BUF_SYNC_READ: ... added as a read (shared) fence". The kernel
	 * takes its own fence references; the fd stays the caller's.
	 */
	args.fd = sync_file_fd;
	ret = sync_file_ioctl(dmabuf_fd, DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &args);
	if (ret < 0) {
		sb_log_errno(SB_LOG_DEBUG, ret, "IMPORT_SYNC_FILE(%d) on dma-buf %d", sync_file_fd,
			     dmabuf_fd);
		return ret;
	}
	return 0;
}

int
sb_dmabuf_wait(int dmabuf_fd, enum sb_access access, int64_t timeout_ns)
{
	int64_t deadline = sb_deadline_from_timeout(sb_now_ns(), timeout_ns);
	__u32 unused;
	short events;
	int ret;

	ret = check_access(dmabuf_fd, access, &unused, &events);
	if (ret)
		return ret;

	ret = sb_poll_until(dmabuf_fd, events, deadline);
	if (ret < 0)
		return ret;
	return (ret & events) ? 0 : -EIO;
}

int
sb_dmabuf_is_busy(int dmabuf_fd, enum sb_access access, bool *busy)
{
	int ret;

	if (!busy)
		return -EINVAL;
	ret = sb_dmabuf_wait(dmabuf_fd, access, 0);
	if (ret == 0 || ret == -ETIME) {
		*busy = ret == -ETIME;
		return 0;
	}
	return ret;
}
