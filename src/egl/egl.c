/* SPDX-License-Identifier: MIT */
/*
 * The EGL bridge (include/syncbridge/egl.h, docs/egl.md): GL work <-> sync_file
 * <-> dma-buf fences, through EGL_ANDROID_native_fence_sync when the display
 * has it, and CPU waits when it does not.
 *
 * EGL 1.0 functions are called directly (libEGL is linked: libglvnd's
 * dispatcher, or the driver's own libEGL); everything about sync objects is
 * resolved with eglGetProcAddress and used only when the display says it
 * supports it — the KHR entry points (EGL 1.4 + EGL_KHR_fence_sync) first,
 * the EGL 1.5 core ones when there are no KHR extensions (display.c resolves
 * them and probes each display).
 */
#include <syncbridge/egl.h>

#include <EGL/eglext.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>

#include "egl_internal.h"
#include "log.h"
#include "sync_file_internal.h"
#include "trace.h"
#include "util.h"

/* -ENOENT unless a context of dpy is current on this thread. */
static int
check_current(EGLDisplay dpy)
{
	if (eglGetCurrentContext() == EGL_NO_CONTEXT || eglGetCurrentDisplay() != dpy) {
		sb_debug("egl: no context of display %p is current on this thread (caller's bug)",
			 (void *)dpy);
		return -ENOENT;
	}
	return 0;
}

static int
egl_error_to_errno(EGLint err)
{
	switch (err) {
	case EGL_BAD_ALLOC:
		return -ENOMEM;
	case EGL_BAD_DISPLAY:
	case EGL_NOT_INITIALIZED:
	case EGL_BAD_ATTRIBUTE:
	case EGL_BAD_PARAMETER:
		return -EINVAL;
	case EGL_BAD_MATCH:
	case EGL_BAD_CONTEXT:
		return -ENOENT;
	default:
		return -EIO;
	}
}

/*
 * Rate limit for the warnings on paths that may run every frame: the first
 * few are logged, then nothing.
 */
static bool
warn_budget(void)
{
	static atomic_int left = 5;

	return atomic_fetch_sub(&left, 1) > 0;
}

/* ---- sync objects through the KHR or the 1.5 core entry points ---- */

static EGLSyncKHR
sync_create(const struct display_info *d, EGLenum type, const EGLint *attribs)
{
	if (d->caps & SB_EGL_CAP_CORE_SYNC) {
		EGLAttrib a[8];
		size_t i = 0;

		for (; attribs && attribs[i] != EGL_NONE && i + 2 < SB_ARRAY_SIZE(a); i += 2) {
			a[i] = attribs[i];
			a[i + 1] = attribs[i + 1];
		}
		a[i] = EGL_NONE;
		return egl_procs.create_sync(d->dpy, type, a);
	}
	return egl_procs.create_sync_khr(d->dpy, type, attribs);
}

static void
sync_destroy(const struct display_info *d, EGLSyncKHR sync)
{
	if (d->caps & SB_EGL_CAP_CORE_SYNC)
		egl_procs.destroy_sync(d->dpy, sync);
	else
		egl_procs.destroy_sync_khr(d->dpy, sync);
}

/* EGL_CONDITION_SATISFIED / EGL_TIMEOUT_EXPIRED, or EGL_FALSE on error. */
static EGLint
sync_client_wait(const struct display_info *d, EGLSyncKHR sync, EGLint flags, EGLTimeKHR timeout)
{
	if (d->caps & SB_EGL_CAP_CORE_SYNC)
		return egl_procs.client_wait_sync(d->dpy, sync, flags, timeout);
	return egl_procs.client_wait_sync_khr(d->dpy, sync, flags, timeout);
}

static bool
sync_server_wait(const struct display_info *d, EGLSyncKHR sync)
{
	if (d->caps & SB_EGL_CAP_CORE_SYNC)
		return egl_procs.wait_sync(d->dpy, sync, 0) == EGL_TRUE;
	return egl_procs.wait_sync_khr(d->dpy, sync, 0) == EGL_TRUE;
}

/* ---- the paths ---- */

/*
 * CPU fallback for "GL work so far": wait on the CPU until the current
 * context has finished it — an EGL fence sync when there is one, else glFinish.
 */
static int
finish_on_cpu(const struct display_info *d)
{
	if (d->caps & SB_EGL_CAP_FENCE_SYNC) {
		EGLSyncKHR sync = sync_create(d, EGL_SYNC_FENCE_KHR, NULL);

		if (sync != EGL_NO_SYNC_KHR) {
			EGLint r = sync_client_wait(d, sync, EGL_SYNC_FLUSH_COMMANDS_BIT_KHR,
						    EGL_FOREVER_KHR);
			sync_destroy(d, sync);
			if (r == EGL_CONDITION_SATISFIED_KHR)
				return 0;
		}
		if (warn_budget())
			sb_warn("egl: fence sync wait failed (driver, EGL error 0x%x): "
				"using glFinish", (unsigned)eglGetError());
	}
	if (d->gl_procs && egl_procs.gl_finish) {
		egl_procs.gl_finish();
		return 0;
	}
	sb_error("egl: display %p has neither fence sync nor glFinish through eglGetProcAddress: "
		 "cannot wait for GL (driver)", (void *)d->dpy);
	return -EIO;
}

/*
 * A native fence for the work issued so far. *out_fd: a new sync_file owned
 * by the caller on success; -1 on failure.
 */
static int
export_native(const struct display_info *d, int *out_fd)
{
	static const EGLint attribs[] = {
		EGL_SYNC_NATIVE_FENCE_FD_ANDROID, EGL_NO_NATIVE_FENCE_FD_ANDROID, EGL_NONE,
	};
	EGLSyncKHR sync;
	int fd, ret;

	*out_fd = -1;
	sync = sync_create(d, EGL_SYNC_NATIVE_FENCE_ANDROID, attribs);
	if (sync == EGL_NO_SYNC_KHR) {
		EGLint err = eglGetError();

		sb_debug("egl: eglCreateSync(NATIVE_FENCE) failed: EGL error 0x%x", (unsigned)err);
		return egl_error_to_errno(err);
	}
	/*
	 * EGL_ANDROID_native_fence_sync: the fence fd exists only once the fence
	 * command has been flushed. FLUSH_COMMANDS with a zero timeout flushes
	 * the current context's API without needing GL symbols; glFlush is the
	 * second resort for drivers that still have no fd.
	 */
	sync_client_wait(d, sync, EGL_SYNC_FLUSH_COMMANDS_BIT_KHR, 0);
	fd = egl_procs.dup_native_fence_fd(d->dpy, sync);
	if (fd == EGL_NO_NATIVE_FENCE_FD_ANDROID && d->gl_procs && egl_procs.gl_flush) {
		egl_procs.gl_flush();
		fd = egl_procs.dup_native_fence_fd(d->dpy, sync);
	}
	sync_destroy(d, sync);
	if (fd < 0) {
		sb_warn("egl: eglDupNativeFenceFDANDROID gave no fd after a flush "
			"(driver, EGL error 0x%x)", (unsigned)eglGetError());
		return -EIO;
	}

	/* Ours now. Keep the library's promise (close-on-exec) and check it. */
	(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	ret = sb_sync_file_check(fd, NULL, NULL);
	if (ret) {
		sb_error("egl: eglDupNativeFenceFDANDROID returned fd %d, which is not a sync_file "
			 "(driver bug)", fd);
		close(fd);
		return -EIO;
	}
	*out_fd = fd;
	return 0;
}

/* The work so far as a sync_file, or -1 after a CPU wait. */
static int
export_fence(const struct display_info *d, int *out_fd)
{
	*out_fd = -1;
	if (d->caps & SB_EGL_CAP_NATIVE_FENCE) {
		int ret = export_native(d, out_fd);

		if (ret == 0)
			return 0;
		if (warn_budget())
			sb_warn("egl: native fence export failed (%s): waiting for GL on the CPU",
				strerror(-ret));
	}
	return finish_on_cpu(d);
}

/*
 * Make later GL work wait for a validated sync_file (borrowed) whose status
 * was `status` a moment ago. GPU-side when the display can; every failure
 * there falls back to a CPU wait, which needs no new fd or EGL object, so
 * ordering is kept whatever EGL does.
 *
 * A fence that already completed with an error is reported as that error
 * (the producer failed: the data is not what it promised), whichever path:
 * EGL's server waits have no way to say so, so only a fence still pending
 * here can complete with an error unnoticed on the GPU-side path.
 */
static int
wait_fence(const struct display_info *d, int sync_file_fd, int32_t status)
{
	if (status < 0) {
		sb_debug("egl: sync_file %d completed with an error (%d): reported to the caller",
			 sync_file_fd, (int)status);
		return status;
	}
	/*
	 * Signalled already (the status was read just now): there is nothing to
	 * order after. A GPU-side wait would still cost an EGLSync and, on virgl,
	 * a command submission (an execbuffer carrying the fence) — in a
	 * compositor's take of a buffer whose fence the helper has waited for
	 * (the usual case), ~0.3-0.9 ms of every frame under TCG.
	 */
	if (status == 1)
		return 0;
	if (status == 0 && (d->caps & SB_EGL_CAP_FOREIGN_WAIT_BLOCKS))
		sb_debug("egl: sync_file %d is pending and display %p blocks on other drivers' "
			 "fences: if it holds one, this thread stalls until it signals, %s "
			 "(caller: poll sb_egl_*_export_blocking_fence() first)",
			 sync_file_fd, (void *)d->dpy,
			 (d->caps & SB_EGL_CAP_GPU_WAIT) ? "here or in the next flush" : "here");
	if (d->caps & SB_EGL_CAP_GPU_WAIT) {
		int dup_fd = sb_fd_dup(sync_file_fd);

		if (dup_fd >= 0) {
			const EGLint attribs[] = {
				EGL_SYNC_NATIVE_FENCE_FD_ANDROID, dup_fd, EGL_NONE,
			};
			/*
			 * EGL takes ownership of the fd only when the sync is created
			 * (and closes it when the sync is destroyed); on failure it is
			 * still ours to close.
			 */
			EGLSyncKHR sync = sync_create(d, EGL_SYNC_NATIVE_FENCE_ANDROID, attribs);

			if (sync != EGL_NO_SYNC_KHR) {
				bool ok = sync_server_wait(d, sync);

				/* Deletion is deferred until the server wait is done. */
				sync_destroy(d, sync);
				if (ok)
					return 0;
			} else {
				close(dup_fd);
			}
			if (warn_budget())
				sb_warn("egl: GPU-side wait failed (driver, EGL error 0x%x): "
					"waiting on the CPU", (unsigned)eglGetError());
		} else if (warn_budget()) {
			sb_warn("egl: cannot duplicate the sync_file (%s): waiting on the CPU",
				strerror(-dup_fd));
		}
	}
	return sb_sync_file_wait(sync_file_fd, SB_TIMEOUT_INFINITE);
}

static int
check_access(enum sb_access access)
{
	return access == SB_ACCESS_READ || access == SB_ACCESS_WRITE ? 0 : -EINVAL;
}

static int
check_dmabuf(int fd)
{
	int ret = sb_fd_check_open(fd);

	if (ret)
		return ret;
	return sb_dmabuf_is_valid(fd) ? 0 : -EINVAL;
}

static const char *
access_name(enum sb_access access)
{
	return access == SB_ACCESS_WRITE ? "write" : "read";
}

/* The display's checks of every call that works in the current context: the
 * display (*d describes it on success), then the current context. */
static int
current_display_check(EGLDisplay dpy, struct display_info *d)
{
	int ret = egl_display_get(dpy, d);

	if (ret)
		return ret;
	return check_current(dpy);
}

/*
 * The checks both dma-buf entry points make, in the order their errors are
 * documented (egl.h): the buffer, the access, the display, the current
 * context. On success *d describes the display, and the result is 1 when
 * the bridge is disabled (SYNCBRIDGE_DISABLE: the call is a no-op), else 0.
 */
static int
dmabuf_call_check(EGLDisplay dpy, int dmabuf_fd, enum sb_access access,
		  struct display_info *d)
{
	int ret = check_dmabuf(dmabuf_fd);

	if (ret)
		return ret;
	ret = check_access(access);
	if (ret)
		return ret;
	ret = current_display_check(dpy, d);
	if (ret)
		return ret;
	return (d->caps & SB_EGL_CAP_DISABLED) ? 1 : 0;
}

/* ---- public ---- */

int
sb_egl_display_get_caps(EGLDisplay dpy, uint32_t *caps)
{
	struct display_info d;
	int ret = caps ? egl_display_get(dpy, &d) : -EINVAL;

	if (caps)
		*caps = ret ? 0 : d.caps;
	return ret;
}

int
sb_egl_sync_file_export(EGLDisplay dpy, int *out_fd)
{
	struct display_info d;
	int ret;

	if (!out_fd)
		return -EINVAL;
	*out_fd = -1;
	ret = current_display_check(dpy, &d);
	if (ret)
		return ret;
	if (d.caps & SB_EGL_CAP_DISABLED)
		return 0;
	ret = export_fence(&d, out_fd);
	sb_trace("egl.export_sync_file ret=%d %s", ret, sb_trace_sync_file(*out_fd).s);
	return ret;
}

int
sb_egl_sync_file_wait(EGLDisplay dpy, int sync_file_fd)
{
	struct display_info d;
	int32_t status = 1;
	int ret;

	if (sync_file_fd != -1) {
		ret = sb_sync_file_check(sync_file_fd, &status, NULL);
		if (ret)
			return ret;
	}
	ret = current_display_check(dpy, &d);
	if (ret)
		return ret;
	if (sync_file_fd != -1 && !(d.caps & SB_EGL_CAP_DISABLED))
		sb_trace("egl.wait_sync_file how=%s %s",
			 (d.caps & SB_EGL_CAP_GPU_WAIT) ? "gpu" : "cpu",
			 sb_trace_sync_file(sync_file_fd).s);
	if (sync_file_fd == -1 || (d.caps & SB_EGL_CAP_DISABLED))
		return 0;
	return wait_fence(&d, sync_file_fd, status);
}

int
sb_egl_dmabuf_wait(EGLDisplay dpy, int dmabuf_fd, enum sb_access access)
{
	struct display_info d;
	int fence_fd = -1;
	int32_t status;
	int ret;

	ret = dmabuf_call_check(dpy, dmabuf_fd, access, &d);
	if (ret)
		return ret < 0 ? ret : 0; /* 1: disabled, a no-op */

	ret = sb_dmabuf_export_sync_file(dmabuf_fd, access, &fence_fd);
	if (ret) {
		/* Kernel < 6.0, or out of fds: poll() the buffer, same ordering. */
		if (ret != -EOPNOTSUPP && warn_budget())
			sb_warn("egl: cannot export the dma-buf's fences (%s): waiting on the CPU",
				strerror(-ret));
		sb_trace("egl.dmabuf_wait buf_ino=%lu access=%s how=cpu_poll export_ret=%d",
			 sb_trace_ino(dmabuf_fd), access_name(access), ret);
		return sb_dmabuf_wait(dmabuf_fd, access, SB_TIMEOUT_INFINITE);
	}
	sb_trace("begin egl.dmabuf_wait buf_ino=%lu access=%s how=%s %s", sb_trace_ino(dmabuf_fd),
		 access_name(access),
		 (d.caps & SB_EGL_CAP_GPU_WAIT) ? "gpu" : "cpu", sb_trace_sync_file(fence_fd).s);
	/* The snapshot's status: an error a fence on the buffer completed with. */
	ret = sb_sync_file_check(fence_fd, &status, NULL);
	if (ret == 0)
		ret = wait_fence(&d, fence_fd, status);
	else
		ret = sb_dmabuf_wait(dmabuf_fd, access, SB_TIMEOUT_INFINITE);
	sb_trace("end egl.dmabuf_wait ret=%d", ret);
	fd_clear(&fence_fd);
	return ret;
}

int
sb_egl_dmabuf_attach(EGLDisplay dpy, int dmabuf_fd, enum sb_access access)
{
	struct display_info d;
	int fence_fd = -1;
	int ret;

	ret = dmabuf_call_check(dpy, dmabuf_fd, access, &d);
	if (ret)
		return ret < 0 ? ret : 0; /* 1: disabled, a no-op */

	sb_trace("begin egl.dmabuf_attach_export buf_ino=%lu how=%s", sb_trace_ino(dmabuf_fd),
		 (d.caps & SB_EGL_CAP_NATIVE_FENCE) ? "native_fence" : "cpu_wait");
	ret = export_fence(&d, &fence_fd);
	sb_trace("end egl.dmabuf_attach_export ret=%d %s", ret, sb_trace_sync_file(fence_fd).s);
	if (ret || fence_fd < 0)
		return ret; /* error, or GL is already done (CPU wait): nothing to attach */

	ret = sb_dmabuf_import_sync_file(dmabuf_fd, access, fence_fd);
	sb_trace("egl.dmabuf_attach buf_ino=%lu access=%s ret=%d %s", sb_trace_ino(dmabuf_fd),
		 access_name(access), ret, sb_trace_sync_file(fence_fd).s);
	if (ret) {
		/* Kernel < 6.0 (or no memory): make the buffer safe by waiting here. */
		if (ret != -EOPNOTSUPP && warn_budget())
			sb_warn("egl: cannot attach GL's fence to the dma-buf (%s): "
				"waiting on the CPU", strerror(-ret));
		ret = sb_sync_file_wait(fence_fd, SB_TIMEOUT_INFINITE);
	}
	fd_clear(&fence_fd);
	return ret;
}
