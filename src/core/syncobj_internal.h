/* SPDX-License-Identifier: MIT */
/*
 * Raw DRM syncobj calls for the side libraries (the Wayland helpers, the
 * PipeWire bridge): SYNCBRIDGE_PRIVATE (private.h), not part of the ABI. Unlike the public
 * sb_syncobj_*() calls they do not check that drm_fd is a DRM device node:
 * the caller validated it once (it answered sb_drm_has_timelines()). A DRM
 * ioctl the kernel does not know answers -EINVAL, never -ENOTTY, as the
 * public calls do.
 */
#ifndef SB_SYNCOBJ_INTERNAL_H
#define SB_SYNCOBJ_INTERNAL_H

#include "private.h"

#include <drm.h>
#include <stdbool.h>
#include <stdint.h>

#include "uapi_compat.h" /* DRM_IOCTL_SYNCOBJ_EVENTFD on older libdrm headers */

/* -EBADF if drm_fd is not open, -EINVAL if it is not a DRM device node, else 0. */
SB_PRIVATE int sb_drm_check_fd(int drm_fd);
/* A DRM ioctl on an fd already known to be DRM: 0 or -errno (an unknown ioctl is -EINVAL). */
int sb_drm_call(int drm_fd, unsigned long request, void *arg);
/* sb_drm_check_fd(), then the ioctl (0 or -errno; an unknown ioctl is -EINVAL). */
int sb_drm_ioctl(int drm_fd, unsigned long request, void *arg);
/*
 * One DRM wait (binary or timeline, WAIT_FOR_SUBMIT, plus WAIT_AVAILABLE for
 * SB_SYNCOBJ_WAIT_AVAILABLE) on an fd already checked (sb_drm_check_fd():
 * like sb_drm_call(), a closed fd is -EBADF, a non-DRM one -EINVAL) until an
 * absolute CLOCK_MONOTONIC deadline
 * (INT64_MAX: none; 0: just look). 0, -ETIME, or -errno. The DRM wait may
 * give -ETIME up to a jiffy early (sb_syncobj_wait() waits again).
 */
int sb_syncobj_wait_until(int drm_fd, uint32_t handle, uint64_t point, int64_t deadline_ns,
			  uint32_t flags);

/* DRM_CAP_SYNCOBJ_TIMELINE: false when the device has none or will not say. */
SB_PRIVATE bool sb_drm_has_timelines(int drm_fd);

/* A new, unsignalled syncobj; returns 0 (*handle set) or -errno. */
SB_PRIVATE int sb_syncobj_create(int drm_fd, uint32_t *handle);

/* Drop a handle (the syncobj lives on while an fd or another handle has it). */
SB_PRIVATE void sb_syncobj_destroy(int drm_fd, uint32_t handle);

/*
 * drmSyncobjHandleToFD: an fd of the syncobj itself (not a sync_file of its
 * fence), O_CLOEXEC, owned by the caller on success; *out_fd is -1 on failure.
 */
SB_PRIVATE int sb_syncobj_handle_to_fd(int drm_fd, uint32_t handle, int *out_fd);

/*
 * drmSyncobjFDToHandle: a handle for a syncobj fd (the kernel checks that it
 * is one). fd stays the caller's, on success and on failure.
 */
SB_PRIVATE int sb_syncobj_fd_to_handle(int drm_fd, int fd, uint32_t *handle);

/*
 * sb_syncobj_export_sync_file() as the Wayland helpers document it: a point
 * with no fence attached yet (the kernel's EINVAL) is -EAGAIN, "try again".
 * drm_fd: borrowed. On success *out_fd is a new sync_file owned by the
 * caller; on failure -1.
 */
SB_PRIVATE int sb_syncobj_export_point(int drm_fd, uint32_t handle, uint64_t point, int *out_fd);

#endif
