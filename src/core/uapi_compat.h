/* SPDX-License-Identifier: MIT */
/*
 * The uapi this project uses that older kernel / libdrm headers lack, as the
 * kernel defines it. Include after <linux/sync_file.h> and <drm.h>. Shared by
 * the core and by the tests that act out these ioctls (fault injection, the
 * fuzzers' fake kernel), so the numbers are written once.
 */
#ifndef SB_UAPI_COMPAT_H
#define SB_UAPI_COMPAT_H

#include <linux/types.h>

#if defined(SYNC_IOC_MAGIC) && !defined(SYNC_IOC_SET_DEADLINE)
/* Linux 6.5 (uapi sync_file.h): "struct sync_set_deadline - SYNC_IOC_SET_DEADLINE". */
struct sync_set_deadline {
	__u64 deadline_ns;
	__u64 pad; /* must be zero */
};
#define SYNC_IOC_SET_DEADLINE _IOW(SYNC_IOC_MAGIC, 5, struct sync_set_deadline)
#endif

#if defined(DRM_IOWR) && !defined(DRM_IOCTL_SYNCOBJ_EVENTFD)
/* Linux 6.6 (uapi drm.h): "DRM_IOCTL_SYNCOBJ_EVENTFD - register an eventfd ..." */
struct drm_syncobj_eventfd {
	__u32 handle;
	__u32 flags;
	__u64 point;
	__s32 fd;
	__u32 pad;
};
#define DRM_IOCTL_SYNCOBJ_EVENTFD DRM_IOWR(0xCF, struct drm_syncobj_eventfd)
#endif

#endif
