/* SPDX-License-Identifier: MIT */
/* The tests' raw kernel fence calls (kernel_raw.h says why they exist). */
#include "kernel_raw.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <linux/dma-buf.h>
#include <linux/sync_file.h>

#include "kernel.h" /* sbk_ioctl(): the retrying ioctl, not the library */

int
tb_dmabuf_export_raw(int dmabuf_fd, uint32_t flags, int *out_fd)
{
	struct dma_buf_export_sync_file arg = { .flags = flags, .fd = -1 };
	int ret;

	*out_fd = -1;
	ret = sbk_ioctl(dmabuf_fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &arg);
	if (ret < 0)
		return ret;
	*out_fd = arg.fd;
	return 0;
}

int
tb_dmabuf_import_raw(int dmabuf_fd, uint32_t flags, int sync_file_fd)
{
	struct dma_buf_import_sync_file arg = { .flags = flags, .fd = sync_file_fd };

	return sbk_ioctl(dmabuf_fd, DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &arg);
}

int
tb_dmabuf_poll_raw(int dmabuf_fd)
{
	struct pollfd p = { .fd = dmabuf_fd, .events = POLLIN | POLLOUT };
	int ret = poll(&p, 1, 0);

	if (ret < 0)
		return -errno;
	return p.revents;
}

int
tb_sync_file_info_raw(int fd, int *status, uint32_t *num_fences, uint32_t index,
		       int *fence_status)
{
	struct sync_file_info info;
	struct sync_fence_info *fences = NULL;
	uint32_t n;
	int ret;

	memset(&info, 0, sizeof(info));
	ret = sbk_ioctl(fd, SYNC_IOC_FILE_INFO, &info);
	if (ret < 0)
		return ret;
	if (status)
		*status = info.status;
	if (num_fences)
		*num_fences = info.num_fences;
	if (!fence_status)
		return 0;
	if (index >= info.num_fences)
		return -ERANGE;
	fences = calloc(info.num_fences, sizeof(*fences));
	if (!fences)
		return -ENOMEM;
	n = info.num_fences;
	memset(&info, 0, sizeof(info));
	info.num_fences = n; /* the kernel wants room for all of them */
	info.sync_fence_info = (__u64)(uintptr_t)fences;
	ret = sbk_ioctl(fd, SYNC_IOC_FILE_INFO, &info);
	if (ret == 0)
		*fence_status = fences[index].status;
	free(fences);
	return ret < 0 ? ret : 0;
}

/*
 * The fences of sync_file fd (at most n of them) into fences; their count, or
 * -1 if fd is not a sync_file or has more than n.
 */
int
tb_sync_file_fences(int fd, struct sync_fence_info *fences, uint32_t n)
{
	struct sync_file_info info;

	memset(&info, 0, sizeof(info));
	if (sbk_ioctl(fd, SYNC_IOC_FILE_INFO, &info) < 0 || info.num_fences > n)
		return -1;
	n = info.num_fences;
	memset(&info, 0, sizeof(info));
	memset(fences, 0, n * sizeof(*fences));
	info.num_fences = n;
	info.sync_fence_info = (__u64)(uintptr_t)fences;
	if (sbk_ioctl(fd, SYNC_IOC_FILE_INFO, &info) < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		fences[i].driver_name[sizeof(fences[i].driver_name) - 1] = '\0';
		fences[i].obj_name[sizeof(fences[i].obj_name) - 1] = '\0';
	}
	return (int)n;
}

int64_t
tb_sync_file_signal_time(int fd)
{
	struct sync_file_info info;
	struct sync_fence_info *fences;
	int64_t t = 0;
	uint32_t n;

	memset(&info, 0, sizeof(info));
	if (sbk_ioctl(fd, SYNC_IOC_FILE_INFO, &info) < 0 || info.num_fences == 0)
		return 0;
	n = info.num_fences;
	fences = calloc(n, sizeof(*fences));
	if (!fences)
		return 0;
	memset(&info, 0, sizeof(info));
	info.num_fences = n;
	info.sync_fence_info = (__u64)(uintptr_t)fences;
	if (sbk_ioctl(fd, SYNC_IOC_FILE_INFO, &info) == 0) {
		for (uint32_t i = 0; i < info.num_fences && i < n; i++) {
			/* a timestamp only once signalled (SYNC_FENCE_INFO: 0 before) */
			if (fences[i].status == 0 || !fences[i].timestamp_ns) {
				t = 0;
				break;
			}
			if ((int64_t)fences[i].timestamp_ns > t)
				t = (int64_t)fences[i].timestamp_ns;
		}
	}
	free(fences);
	return t;
}
