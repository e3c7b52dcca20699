/* SPDX-License-Identifier: MIT */
/*
 * DRM syncobj bridge (include/uapi/drm/drm.h, drivers/gpu/drm/drm_syncobj.c).
 * The ioctls are issued directly through sb_ioctl() so every call shares the
 * same EINTR/EAGAIN handling and the same 0 / -errno convention; libdrm
 * provides the uapi header.
 */
#include <syncbridge/syncobj.h>

#include <drm.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "log.h"
#include "sync_file_internal.h"
#include "syncobj_internal.h"
#include "util.h"

/* include/uapi/drm/drm.h: "#define DRM_MAJOR 226" (Linux only). */
#define DRM_CHAR_MAJOR 226

/* -EBADF if not open, -EINVAL if open but not a DRM device node. */
int
sb_drm_check_fd(int drm_fd)
{
	struct stat st;
	int ret;

	ret = sb_fd_check_open(drm_fd);
	if (ret)
		return ret;
	if (fstat(drm_fd, &st) < 0 || !S_ISCHR(st.st_mode) || major(st.st_rdev) != DRM_CHAR_MAJOR)
		return -EINVAL;
	return 0;
}

/*
 * Issue a DRM ioctl on an fd known to be a DRM device. DRM answers an unknown
 * core ioctl with EINVAL, never ENOTTY (an older kernel's table ends earlier);
 * an ENOTTY, from something that is not DRM after all, is reported the same.
 */
int
sb_drm_call(int drm_fd, unsigned long request, void *arg)
{
	int ret = sb_ioctl(drm_fd, request, arg);

	if (ret == -ENOTTY)
		return -EINVAL;
	return ret < 0 ? ret : 0;
}

/*
 * Validate the fd as a DRM device, then issue the ioctl. A DRM driver without
 * DRIVER_SYNCOBJ(_TIMELINE) answers EOPNOTSUPP itself.
 */
int
sb_drm_ioctl(int drm_fd, unsigned long request, void *arg)
{
	int ret;

	ret = sb_drm_check_fd(drm_fd);
	if (ret)
		return ret;
	return sb_drm_call(drm_fd, request, arg);
}

/* The calls below are also the Wayland helpers' (syncobj_internal.h). */

bool
sb_drm_has_timelines(int drm_fd)
{
	struct drm_get_cap cap;

	memset(&cap, 0, sizeof(cap));
	cap.capability = DRM_CAP_SYNCOBJ_TIMELINE;
	return sb_ioctl(drm_fd, DRM_IOCTL_GET_CAP, &cap) == 0 && cap.value;
}

/*
 * The raw calls below do not validate the fd: the public calls that use them
 * have (sb_drm_check_fd() at entry), and so have the Wayland helpers.
 */
int
sb_syncobj_create(int drm_fd, uint32_t *handle)
{
	struct drm_syncobj_create args;
	int ret;

	memset(&args, 0, sizeof(args));
	ret = sb_drm_call(drm_fd, DRM_IOCTL_SYNCOBJ_CREATE, &args);
	if (ret)
		return ret;
	*handle = args.handle;
	return 0;
}

void
sb_syncobj_destroy(int drm_fd, uint32_t handle)
{
	struct drm_syncobj_destroy args;

	memset(&args, 0, sizeof(args));
	args.handle = handle;
	sb_drm_call(drm_fd, DRM_IOCTL_SYNCOBJ_DESTROY, &args);
}

/* DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD (the kernel allocates the fd O_CLOEXEC). */
static int
handle_to_fd(int drm_fd, uint32_t handle, uint32_t flags, int *out_fd)
{
	struct drm_syncobj_handle args;
	int ret;

	*out_fd = -1;
	memset(&args, 0, sizeof(args));
	args.handle = handle;
	args.flags = flags;
	args.fd = -1;
	ret = sb_drm_call(drm_fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &args);
	if (ret)
		return ret;
	*out_fd = args.fd;
	return 0;
}

int
sb_syncobj_handle_to_fd(int drm_fd, uint32_t handle, int *out_fd)
{
	return handle_to_fd(drm_fd, handle, 0, out_fd);
}

int
sb_syncobj_fd_to_handle(int drm_fd, int fd, uint32_t *handle)
{
	struct drm_syncobj_handle args;
	int ret;

	memset(&args, 0, sizeof(args));
	args.fd = fd;
	ret = sb_drm_call(drm_fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &args);
	if (ret)
		return ret;
	*handle = args.handle;
	return 0;
}

static int
transfer(int drm_fd, uint32_t src, uint64_t src_point, uint32_t dst, uint64_t dst_point)
{
	struct drm_syncobj_transfer args;

	memset(&args, 0, sizeof(args));
	args.src_handle = src;
	args.src_point = src_point;
	args.dst_handle = dst;
	args.dst_point = dst_point;
	return sb_drm_ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_TRANSFER, &args);
}

/* Binary payload → sync_file. */
static int
export_binary(int drm_fd, uint32_t handle, int *out_fd)
{
	return handle_to_fd(drm_fd, handle, DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE,
			    out_fd);
}

static int
import_binary(int drm_fd, uint32_t handle, int sync_file_fd)
{
	struct drm_syncobj_handle args;

	memset(&args, 0, sizeof(args));
	args.handle = handle;
	args.flags = DRM_SYNCOBJ_FD_TO_HANDLE_FLAGS_IMPORT_SYNC_FILE;
	args.fd = sync_file_fd;
	return sb_drm_ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &args);
}

int
sb_syncobj_export_sync_file(int drm_fd, uint32_t handle, uint64_t point, int *out_fd)
{
	uint32_t tmp;
	int ret;

	if (!out_fd)
		return -EINVAL;
	*out_fd = -1;
	ret = sb_drm_check_fd(drm_fd);
	if (ret)
		return ret;
	if (point == 0)
		return export_binary(drm_fd, handle, out_fd);

	/*
	 * A timeline point cannot be exported directly: move its fence into a
	 * temporary binary syncobj first (what Mesa's vk_drm_syncobj does).
	 * An unmaterialised point makes the transfer fail with EINVAL.
	 */
	ret = sb_syncobj_create(drm_fd, &tmp);
	if (ret)
		return ret;
	ret = transfer(drm_fd, handle, point, tmp, 0);
	if (ret)
		goto out_destroy_tmp;
	ret = export_binary(drm_fd, tmp, out_fd);

out_destroy_tmp:
	sb_syncobj_destroy(drm_fd, tmp);
	return ret;
}

int
sb_syncobj_export_point(int drm_fd, uint32_t handle, uint64_t point, int *out_fd)
{
	int ret = sb_syncobj_export_sync_file(drm_fd, handle, point, out_fd);

	return ret == -EINVAL ? -EAGAIN : ret;
}

int
sb_syncobj_import_sync_file(int drm_fd, uint32_t handle, uint64_t point, int sync_file_fd)
{
	uint32_t tmp;
	int ret;

	/* Validate the foreign fd before handing it to the kernel. */
	ret = sb_drm_check_fd(drm_fd);
	if (ret)
		return ret;
	ret = sb_sync_file_check(sync_file_fd, NULL, NULL);
	if (ret)
		return ret;

	if (point == 0)
		return import_binary(drm_fd, handle, sync_file_fd);

	ret = sb_syncobj_create(drm_fd, &tmp);
	if (ret)
		return ret;
	ret = import_binary(drm_fd, tmp, sync_file_fd);
	if (ret)
		goto out_destroy_tmp;
	ret = transfer(drm_fd, tmp, 0, handle, point);

out_destroy_tmp:
	sb_syncobj_destroy(drm_fd, tmp);
	return ret;
}

int
sb_syncobj_signal(int drm_fd, uint32_t handle, uint64_t point)
{
	if (point == 0) {
		struct drm_syncobj_array args;

		memset(&args, 0, sizeof(args));
		args.handles = (uint64_t)(uintptr_t)&handle;
		args.count_handles = 1;
		return sb_drm_ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_SIGNAL, &args);
	}

	struct drm_syncobj_timeline_array args;

	memset(&args, 0, sizeof(args));
	args.handles = (uint64_t)(uintptr_t)&handle;
	args.points = (uint64_t)(uintptr_t)&point;
	args.count_handles = 1;
	return sb_drm_ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL, &args);
}

int
sb_syncobj_query(int drm_fd, uint32_t handle, uint64_t *point)
{
	struct drm_syncobj_timeline_array args;
	uint64_t value = 0;
	int ret;

	if (!point)
		return -EINVAL;
	memset(&args, 0, sizeof(args));
	args.handles = (uint64_t)(uintptr_t)&handle;
	args.points = (uint64_t)(uintptr_t)&value;
	args.count_handles = 1;
	ret = sb_drm_ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_QUERY, &args);
	if (ret)
		return ret;
	*point = value;
	return 0;
}

/* Wait until an absolute CLOCK_MONOTONIC deadline (INT64_MAX: none). */
int
sb_syncobj_wait_until(int drm_fd, uint32_t handle, uint64_t point, int64_t deadline_ns,
		      uint32_t flags)
{
	/*
	 * WAIT_FOR_SUBMIT: "wait for a fence to be attached" instead of failing
	 * with EINVAL on an unmaterialised point. The DRM timeout is absolute,
	 * so retrying after EINTR (sb_ioctl) keeps the same deadline.
	 */
	uint32_t drm_flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;

	if (point == 0 && !(flags & SB_SYNCOBJ_WAIT_AVAILABLE)) {
		struct drm_syncobj_wait args;

		memset(&args, 0, sizeof(args));
		args.handles = (uint64_t)(uintptr_t)&handle;
		args.count_handles = 1;
		args.timeout_nsec = deadline_ns;
		args.flags = drm_flags;
		return sb_drm_call(drm_fd, DRM_IOCTL_SYNCOBJ_WAIT, &args);
	}

	struct drm_syncobj_timeline_wait args;

	if (flags & SB_SYNCOBJ_WAIT_AVAILABLE)
		drm_flags |= DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE;
	memset(&args, 0, sizeof(args));
	args.handles = (uint64_t)(uintptr_t)&handle;
	args.points = (uint64_t)(uintptr_t)&point;
	args.count_handles = 1;
	args.timeout_nsec = deadline_ns;
	args.flags = drm_flags;
	return sb_drm_call(drm_fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &args);
}

int
sb_syncobj_wait(int drm_fd, uint32_t handle, uint64_t point, int64_t timeout_ns, uint32_t flags)
{
	int64_t deadline;
	int ret;

	if (flags & ~(uint32_t)SB_SYNCOBJ_WAIT_AVAILABLE)
		return -EINVAL;
	/* Once, not on every turn of the loop below (sb_syncobj_wait_until() is raw). */
	ret = sb_drm_check_fd(drm_fd);
	if (ret)
		return ret;
	deadline = sb_deadline_from_timeout(sb_now_ns(), timeout_ns);
	/*
	 * The kernel waits in jiffies: drm_timeout_abs_to_jiffies() takes the
	 * whole jiffies left before the deadline "+ 1", and schedule_timeout()
	 * counts the first, partly gone one in full, so the DRM wait can give
	 * -ETIME up to a jiffy (4 ms at HZ=250) before the deadline (measured:
	 * a 100 ms wait back after 97.7 ms in the test guest). The caller's
	 * timeout is a promise: wait again until the deadline has passed.
	 */
	do
		ret = sb_syncobj_wait_until(drm_fd, handle, point, deadline, flags);
	while (ret == -ETIME && sb_now_ns() < deadline);
	return ret;
}
