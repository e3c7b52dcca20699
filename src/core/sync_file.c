/* SPDX-License-Identifier: MIT */
/*
 * sync_file helpers over the kernel's uapi (include/uapi/linux/sync_file.h).
 */
#include <syncbridge/sync_file.h>

#include <linux/sync_file.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sync_file_internal.h"
#include "uapi_compat.h"
#include "util.h"


static const char merge_name[] = "syncbridge";

int
sb_sync_file_check(int fd, int32_t *status, uint32_t *num_fences)
{
	struct sync_file_info info;
	int ret;

	/*
	 * num_fences = 0 asks only for the count and the aggregate status. The
	 * ioctl comes first and the open-fd check only when it fails, to tell
	 * -EBADF from -EINVAL: a valid sync_file costs one system call
	 * (docs/performance.md, figure 4).
	 */
	memset(&info, 0, sizeof(info));
	ret = sb_ioctl(fd, SYNC_IOC_FILE_INFO, &info);
	if (ret < 0) {
		ret = sb_fd_check_open(fd);
		/* Open, but not a sync_file (ENOTTY; EBADF for O_PATH). */
		return ret ? ret : -EINVAL;
	}

	if (status)
		*status = info.status;
	if (num_fences)
		*num_fences = info.num_fences;
	return 0;
}

bool
sb_sync_file_is_valid(int fd)
{
	return sb_sync_file_check(fd, NULL, NULL) == 0;
}

int
sb_sync_file_get_status(int fd, int *status)
{
	int32_t st;
	int ret;

	if (!status)
		return -EINVAL;
	ret = sb_sync_file_check(fd, &st, NULL);
	if (ret)
		return ret;
	*status = st;
	return 0;
}

int
sb_sync_file_wait(int fd, int64_t timeout_ns)
{
	int64_t deadline = sb_deadline_from_timeout(sb_now_ns(), timeout_ns);
	int32_t status;
	int ret;

	ret = sb_sync_file_check(fd, &status, NULL);
	if (ret)
		return ret;

	while (status == 0) {
		/* sync_file_poll(): EPOLLIN once the fence is signalled, nothing before. */
		ret = sb_poll_until(fd, POLLIN, deadline);
		if (ret < 0)
			return ret;
		ret = sb_sync_file_check(fd, &status, NULL);
		if (ret)
			return ret;
	}

	if (status < 0) {
		sb_debug("sync_file %d signalled with error %d (from the fence's driver)", fd,
			 status);
		return status;
	}
	return 0;
}

int
sb_sync_file_info_create(int fd, struct sb_sync_file_info **out)
{
	struct sync_file_info info;
	struct sync_fence_info *fences = NULL;
	struct sb_sync_file_info *res;
	uint32_t n;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;

	ret = sb_sync_file_check(fd, NULL, &n);
	if (ret)
		return ret;

	if (n) {
		fences = calloc(n, sizeof(*fences));
		if (!fences)
			return -ENOMEM;
	}

	/* A sync_file's fence set never changes, so the count read above holds. */
	memset(&info, 0, sizeof(info));
	info.num_fences = n;
	info.sync_fence_info = (uint64_t)(uintptr_t)fences;
	ret = sb_ioctl(fd, SYNC_IOC_FILE_INFO, &info);
	if (ret < 0) {
		/*
		 * The fd answered as a sync_file a moment ago, so this is not a
		 * validation failure: sync_file_ioctl_fence_info() fails its copy
		 * with ENOMEM (kzalloc of the fence array) or EFAULT, and those
		 * come through. Anything else (ENOTTY, EBADF) means the fd number
		 * no longer names that sync_file (closed or reused meanwhile).
		 */
		if (ret != -ENOMEM && ret != -EFAULT)
			ret = -EINVAL;
		goto err_free_fences;
	}
	if (info.num_fences < n)
		n = info.num_fences;

	res = calloc(1, sizeof(*res) + (size_t)n * sizeof(res->fences[0]));
	if (!res) {
		ret = -ENOMEM;
		goto err_free_fences;
	}

	memcpy(res->name, info.name, sizeof(res->name));
	res->name[sizeof(res->name) - 1] = '\0';
	res->status = info.status;
	res->num_fences = n;
	for (uint32_t i = 0; i < n; i++) {
		struct sb_fence_info *f = &res->fences[i];

		memcpy(f->driver, fences[i].driver_name, sizeof(f->driver));
		f->driver[sizeof(f->driver) - 1] = '\0';
		memcpy(f->timeline, fences[i].obj_name, sizeof(f->timeline));
		f->timeline[sizeof(f->timeline) - 1] = '\0';
		f->status = fences[i].status;
		f->timestamp_ns = fences[i].timestamp_ns;
	}

	free(fences);
	*out = res;
	return 0;

err_free_fences:
	free(fences);
	return ret;
}

void
sb_sync_file_info_destroy(struct sb_sync_file_info *info)
{
	free(info);
}

/*
 * One SYNC_IOC_MERGE, which validates both inputs itself: the request reaches
 * sync_file_ioctl() only through a sync_file (any other file answers it with
 * ENOTTY, an O_PATH fd with EBADF), and sync_file_ioctl_merge() takes fd2
 * through sync_file_fdget(), which refuses anything but a sync_file (ENOENT).
 * So the callers check their inputs only when it failed, to say which one
 * was wrong with the documented errors (merge_error()): a valid pair costs
 * one system call instead of three (docs/performance.md, figure 4). Issuing
 * a sync_file ioctl on an fd not yet known to be one is what
 * sb_sync_file_check() does too.
 */
static int
merge_two(int a, int b, int *out_fd)
{
	struct sync_merge_data data;
	int ret;

	memset(&data, 0, sizeof(data));
	memcpy(data.name, merge_name, sizeof(merge_name));
	data.fd2 = b;
	/* The kernel allocates data.fence with O_CLOEXEC (sync_file_merge()). */
	ret = sb_ioctl(a, SYNC_IOC_MERGE, &data);
	if (ret < 0) {
		sb_log_errno(SB_LOG_DEBUG, ret, "SYNC_IOC_MERGE(%d, %d) failed", a, b);
		return ret;
	}
	*out_fd = data.fence;
	return 0;
}

/*
 * After a failed merge of fds[0..n): the first input that is not a sync_file
 * (-EBADF, -EINVAL), else the merge's own error (-ENOMEM, -EMFILE).
 */
static int
merge_error(const int *fds, size_t n, int merge_ret)
{
	for (size_t i = 0; i < n; i++) {
		int ret = sb_sync_file_check(fds[i], NULL, NULL);

		if (ret)
			return ret;
	}
	return merge_ret;
}

int
sb_sync_file_merge(int a, int b, int *out_fd)
{
	int ret;

	if (!out_fd)
		return -EINVAL;
	*out_fd = -1;
	ret = merge_two(a, b, out_fd);
	if (ret)
		return merge_error((const int[]){ a, b }, 2, ret);
	return 0;
}

/*
 * Merge fds[0..n) (n >= 2, borrowed) as a balanced tree. Every
 * SYNC_IOC_MERGE copies both operands' fences into a new sync_file, so a
 * chain (((a+b)+c)+...) copies up to n-1 fences per merge, O(n^2) in all
 * (256 fences: ~7x the tree's time, docs/performance.md, figure 4); the tree
 * makes the same n-1 merges but copies each fence about log2(n) times.
 */
static int
merge_tree(const int *fds, size_t n, int *out_fd)
{
	int left = -1, right = -1, ret;
	size_t half;

	if (n == 2)
		return merge_two(fds[0], fds[1], out_fd);
	if (n == 3) {
		ret = merge_two(fds[0], fds[1], &left);
		if (ret)
			return ret;
		ret = merge_two(left, fds[2], out_fd);
		fd_clear(&left);
		return ret;
	}
	half = n / 2;
	ret = merge_tree(fds, half, &left);
	if (ret)
		return ret;
	ret = merge_tree(fds + half, n - half, &right);
	if (ret)
		goto err_close_left;
	ret = merge_two(left, right, out_fd);
	fd_clear(&right);
err_close_left:
	fd_clear(&left);
	return ret;
}

int
sb_sync_file_merge_array(const int *fds, size_t n, int *out_fd)
{
	int ret;

	if (!out_fd)
		return -EINVAL;
	*out_fd = -1;
	if (!fds || n == 0)
		return -EINVAL;

	if (n == 1) {
		ret = sb_sync_file_check(fds[0], NULL, NULL);
		if (ret)
			return ret;
		ret = sb_fd_dup(fds[0]);
		if (ret < 0)
			return ret;
		*out_fd = ret;
		return 0;
	}
	/*
	 * The merges validate their inputs (merge_two()); when one fails, every
	 * input is checked, so the error names the first bad one whichever
	 * merge of the tree met it. The partial merges are closed on the way out.
	 */
	ret = merge_tree(fds, n, out_fd);
	if (ret)
		return merge_error(fds, n, ret);
	return 0;
}

int
sb_sync_file_accumulate(int *acc_fd, int fd)
{
	int merged;
	int ret;

	if (!acc_fd)
		return -EINVAL;
	if (*acc_fd < 0) {
		ret = sb_sync_file_check(fd, NULL, NULL);
		if (ret)
			return ret;
		ret = sb_fd_dup(fd);
		if (ret < 0)
			return ret;
		*acc_fd = ret;
		return 0;
	}

	ret = merge_two(*acc_fd, fd, &merged);
	if (ret)
		return merge_error((const int[]){ fd, *acc_fd }, 2, ret); /* fd's error first */
	/* Commit point: the old accumulator goes only once the merge exists. */
	fd_replace(acc_fd, merged);
	return 0;
}

int
sb_sync_file_set_deadline(int fd, uint64_t deadline_ns)
{
	struct sync_set_deadline args;
	int ret;

	ret = sb_sync_file_check(fd, NULL, NULL);
	if (ret)
		return ret;

	memset(&args, 0, sizeof(args));
	args.deadline_ns = deadline_ns;
	ret = sb_ioctl(fd, SYNC_IOC_SET_DEADLINE, &args);
	if (ret == -ENOTTY) {
		/* Before Linux 6.5 there is no deadline hint; nothing is lost. */
		sb_debug("SYNC_IOC_SET_DEADLINE not supported by this kernel; ignoring the hint");
		return 0;
	}
	return ret < 0 ? ret : 0;
}
