/* SPDX-License-Identifier: MIT */
/*
 * The EGL bridge (libsyncbridge-egl, pkg-config syncbridge-egl): GL work as
 * sync_files, sync_files as GL waits, and dma-buf hand-off between GL and
 * everybody else who uses the buffer's kernel fences. See docs/egl.md.
 *
 * Conventions, on top of those in <syncbridge/common.h>:
 *  - Every function takes the app's initialised EGLDisplay. Functions that
 *    order GL work need a context of that display current on the calling
 *    thread (they act on that context); without one they return -ENOENT.
 *  - A sync_file fd of -1 stands for "already signalled", as in Vulkan's
 *    SYNC_FD handles: sb_egl_sync_file_export() may return it and
 *    sb_egl_sync_file_wait() accepts it. Any other negative fd is -EBADF.
 *  - GPU-side when the display can (EGL_ANDROID_native_fence_sync +
 *    EGL_KHR_wait_sync or EGL 1.5), else on the CPU: the ordering is the same,
 *    only the calling thread blocks. sb_egl_display_get_caps() says which.
 *    "GPU-side" is the driver's word: on some (virtio_gpu, llvmpipe) a wait
 *    for another driver's pending fence still blocks the calling thread,
 *    in the wait or in the next flush (SB_EGL_CAP_FOREIGN_WAIT_BLOCKS); the
 *    *_export_blocking() calls at the end are the way around it.
 *  - SYNCBRIDGE_DISABLE (set to any value) turns the bridge off for tests and
 *    bug hunts: waits and attaches check their arguments and return 0 without
 *    ordering anything, and exports return the fd -1 without waiting.
 *  - The bridge's own EGL calls change what eglGetError() returns next.
 *
 * Works with EGL 1.4 + KHR extensions and with EGL 1.5 core entry points.
 */
#ifndef SYNCBRIDGE_EGL_H
#define SYNCBRIDGE_EGL_H

#include <stdint.h>

#include <EGL/egl.h>

#include <syncbridge/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What the bridge does on a display; bits of sb_egl_display_get_caps(). */
enum sb_egl_caps {
	/** Exports are real sync_files (EGL_ANDROID_native_fence_sync). */
	SB_EGL_CAP_NATIVE_FENCE = 1 << 0,
	/** Waits are GPU-side (native fences + EGL_KHR_wait_sync or EGL 1.5). */
	SB_EGL_CAP_GPU_WAIT = 1 << 1,
	/**
	 * CPU fallbacks wait for GL with an EGL fence sync (EGL_KHR_fence_sync or
	 * EGL 1.5); without it they call glFinish().
	 */
	SB_EGL_CAP_FENCE_SYNC = 1 << 2,
	/** Sync objects go through EGL 1.5 core entry points (no KHR extension). */
	SB_EGL_CAP_CORE_SYNC = 1 << 3,
	/** SYNCBRIDGE_DISABLE is set: waits and attaches are no-ops. */
	SB_EGL_CAP_DISABLED = 1 << 4,
	/**
	 * Making GL wait for a pending fence of another driver (a camera's, a
	 * vgem or V4L2 fence, a Vulkan driver's on another device) blocks the
	 * calling thread until that fence signals: in the wait itself (CPU
	 * waits; llvmpipe and other software renderers) or in the next flush of
	 * the context (virtio_gpu: the kernel waits for foreign in-fences on the
	 * CPU when the work is submitted). For a caller that must not stall (an
	 * event loop), sb_egl_sync_file_export_blocking_fence() and
	 * sb_egl_dmabuf_export_blocking_fence() give the fence to poll first.
	 * Exclusive with SB_EGL_CAP_FOREIGN_WAIT_ASYNC; neither bit: the bridge
	 * does not know this display's driver (docs/egl.md, "Foreign fences").
	 */
	SB_EGL_CAP_FOREIGN_WAIT_BLOCKS = 1 << 5,
	/**
	 * GPU-side waits on other drivers' fences are asynchronous here: neither
	 * the wait nor the flush after it blocks the calling thread (the kernel
	 * driver queues them as dependencies of the submission). Set only for
	 * the drivers whose submit path is known to do so (docs/egl.md).
	 */
	SB_EGL_CAP_FOREIGN_WAIT_ASYNC = 1 << 6,
};

/**
 * What the bridge can do on `dpy` (a mask of enum sb_egl_caps). The display's
 * extensions are probed once and remembered; no context is needed.
 * Returns 0; -EINVAL (EGL_NO_DISPLAY, not an initialised display, or NULL
 * caps; *caps is then 0).
 */
SB_EXPORT int sb_egl_display_get_caps(EGLDisplay dpy, uint32_t *caps);

/**
 * A sync_file that signals when the GL work issued so far on the current
 * context has completed. Flushes the context.
 * On success *out_fd is either a new sync_file (close-on-exec) owned by the
 * caller, or -1 — "already signalled" — when the display has no native fence
 * sync (the bridge then waited on the CPU until GL was done) or the bridge is
 * disabled. Vulkan accepts -1 for SYNC_FD imports. On failure *out_fd is -1.
 * Returns 0; -EINVAL (bad display, NULL out_fd); -ENOENT (no context of dpy
 * current); -ENOMEM; -EMFILE; -EIO (the driver failed to give a fence).
 */
SB_EXPORT int sb_egl_sync_file_export(EGLDisplay dpy, int *out_fd);

/**
 * Make GL commands issued on the current context after this call wait until
 * the sync_file has signalled: GPU-side (eglWaitSyncKHR on a native-fence
 * EGLSync), or on the CPU (this call blocks until it signals).
 * sync_file_fd: borrowed, never closed (EGL gets and consumes a duplicate);
 * -1 means already signalled (returns 0 at once), and so does a sync_file
 * whose fence has signalled when the call reads its status (no EGLSync, no
 * command submitted).
 * On a display with SB_EGL_CAP_FOREIGN_WAIT_BLOCKS a pending fence of another
 * driver blocks the calling thread until it signals, in this call or in the
 * context's next flush (virtio_gpu): the ordering is right, the thread
 * stalls. A caller that must not stall polls what
 * sb_egl_sync_file_export_blocking_fence() gives first.
 * Returns 0; a negative fence error — the fence had completed with an error
 * when the call looked at it (then GL is not made to wait: there is nothing
 * left to wait for), or completed with one during a CPU wait; a fence still
 * pending when GL is told to wait GPU-side cannot report it (EGL's server
 * waits have no status); -EBADF; -EINVAL (not a sync_file, bad display);
 * -ENOENT (no context of dpy current); -ENOMEM; -EMFILE.
 */
SB_EXPORT int sb_egl_sync_file_wait(EGLDisplay dpy, int sync_file_fd);

/**
 * Before GL accesses a dma-buf: make the current context's later commands
 * wait for the buffer's earlier users — its writers for SB_ACCESS_READ,
 * everybody for SB_ACCESS_WRITE (a snapshot of the buffer's fences, exported
 * and waited on as sb_egl_sync_file_wait() does; a CPU poll on kernels
 * before 6.0).
 * Blocks the calling thread like sb_egl_sync_file_wait() on a display with
 * SB_EGL_CAP_FOREIGN_WAIT_BLOCKS; sb_egl_dmabuf_export_blocking_fence() is the
 * non-blocking path.
 * dmabuf_fd: borrowed, never closed.
 * Returns 0; a negative fence error (one of the buffer's fences completed
 * with an error, as for sb_egl_sync_file_wait(); a kernel before 6.0 cannot
 * tell); -EBADF; -EINVAL (not a dma-buf, bad access or display); -ENOENT (no
 * context of dpy current); -ENOMEM; -EMFILE.
 */
SB_EXPORT int sb_egl_dmabuf_wait(EGLDisplay dpy, int dmabuf_fd, enum sb_access access);

/**
 * After GL commands that read (SB_ACCESS_READ) or wrote (SB_ACCESS_WRITE) a
 * dma-buf were issued on the current context: attach their fence to the
 * buffer as a read (shared) or write (exclusive) fence, so that later users
 * who wait for the buffer's fences wait for GL. Flushes the context. Without
 * native fence sync (or on kernels before 6.0) it waits on the CPU until GL
 * is done instead and attaches nothing: the buffer is then already safe.
 * dmabuf_fd: borrowed, never closed.
 * Returns 0; -EBADF; -EINVAL (not a dma-buf, bad access or display); -ENOENT
 * (no context of dpy current); -ENOMEM; -EMFILE; -EIO.
 */
SB_EXPORT int sb_egl_dmabuf_attach(EGLDisplay dpy, int dmabuf_fd, enum sb_access access);

/**
 * The non-blocking path, for a caller that must not stall (an event loop):
 * before sb_egl_sync_file_wait(dpy, sync_file_fd), ask for the fence that
 * would block the calling thread, poll it (POLLIN) on the loop, and make the
 * wait when it has signalled (or when this returns -1 at once).
 * No context needs to be current. sync_file_fd: borrowed, never closed; -1
 * (already signalled) is accepted.
 * On success *out_fd is -1 when the wait would not block the calling thread
 * now: every fence in it has signalled (or completed with an error, which the
 * wait reports at once); the display waits on other drivers' fences
 * asynchronously (SB_EGL_CAP_FOREIGN_WAIT_ASYNC); every pending fence is the
 * display's own driver's on a driver that orders its own fences without
 * blocking (virtio_gpu); or the bridge is disabled. Otherwise it is a new
 * sync_file (a duplicate of sync_file_fd, close-on-exec) owned by the caller,
 * also when the bridge does not know the driver (neither FOREIGN_WAIT cap:
 * every pending fence is assumed to block). On failure *out_fd is -1.
 * Returns 0; -EBADF; -EINVAL (not a sync_file, bad display, NULL out_fd);
 * -ENOMEM; -EMFILE.
 */
SB_EXPORT int sb_egl_sync_file_export_blocking_fence(EGLDisplay dpy, int sync_file_fd, int *out_fd);

/**
 * The same for sb_egl_dmabuf_wait(dpy, dmabuf_fd, access): a snapshot of the
 * buffer's fences that `access` waits for (sb_dmabuf_export_sync_file()),
 * handed out when waiting for it would block the calling thread (the rules
 * above), else -1. The snapshot does not see fences added to the buffer
 * later; after it has signalled, sb_egl_dmabuf_wait() takes a new one — ask
 * again until this gives -1 if others may add fences meanwhile.
 * No context needs to be current. dmabuf_fd: borrowed, never closed.
 * On success *out_fd is -1 or a new sync_file (close-on-exec) owned by the
 * caller; on failure -1.
 * Returns 0; -EBADF; -EINVAL (not a dma-buf, bad access or display, NULL
 * out_fd); -EOPNOTSUPP (kernel before 6.0, no fence export: poll() the
 * dma-buf itself, POLLIN for SB_ACCESS_READ, POLLOUT for SB_ACCESS_WRITE);
 * -ENOMEM; -EMFILE.
 */
SB_EXPORT int sb_egl_dmabuf_export_blocking_fence(EGLDisplay dpy, int dmabuf_fd,
						  enum sb_access access, int *out_fd);

#ifdef __cplusplus
}
#endif

#endif
