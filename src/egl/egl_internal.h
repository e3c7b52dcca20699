/* SPDX-License-Identifier: MIT */
/*
 * What the EGL bridge's files share: the sync entry points and a display's
 * probe result (display.c) and the foreign-fence rule (foreign.c). Hidden,
 * not part of the ABI; egl-mock links the bridge's static library and calls
 * egl_foreign_rule() directly.
 *
 * The files, top down; a file calls only files below it (no circles):
 *   egl.c       the sync paths: export, wait, the dma-buf calls
 *   blocking.c  the *_export_blocking calls (would a wait block?)
 *   display.c   the switches, the entry points, each display's probe
 *   foreign.c   the foreign-fence rule per kernel driver of the device
 */
#ifndef SB_EGL_INTERNAL_H
#define SB_EGL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <EGL/egl.h>
#include <EGL/eglext.h>

/* The GL entry points the fallbacks need (signatures of glFlush/glFinish). */
typedef void (*gl_void_proc)(void);

/*
 * The sync entry points, from eglGetProcAddress (NULL: not there). Resolved
 * once by the first egl_display_get(), which every user calls first.
 */
struct egl_procs {
	/* EGL_KHR_fence_sync, EGL_KHR_wait_sync (EGL 1.4) */
	PFNEGLCREATESYNCKHRPROC create_sync_khr;
	PFNEGLDESTROYSYNCKHRPROC destroy_sync_khr;
	PFNEGLCLIENTWAITSYNCKHRPROC client_wait_sync_khr;
	PFNEGLWAITSYNCKHRPROC wait_sync_khr;
	/* EGL 1.5 core */
	PFNEGLCREATESYNCPROC create_sync;
	PFNEGLDESTROYSYNCPROC destroy_sync;
	PFNEGLCLIENTWAITSYNCPROC client_wait_sync;
	PFNEGLWAITSYNCPROC wait_sync;
	/* EGL_ANDROID_native_fence_sync */
	PFNEGLDUPNATIVEFENCEFDANDROIDPROC dup_native_fence_fd;
	/* GL (valid only with EGL 1.5 or EGL_KHR_get_all_proc_addresses) */
	gl_void_proc gl_flush;
	gl_void_proc gl_finish;
};

extern struct egl_procs egl_procs;

/* A display's probe result (display.c: probed once, remembered in a table). */
struct display_info {
	EGLDisplay dpy;
	uint32_t caps;      /* enum sb_egl_caps */
	bool gl_procs;      /* eglGetProcAddress may be used for GL functions */
	/*
	 * The kernel driver of the display's DRM device ("virtio_gpu"), "" when
	 * unknown or when the display renders in software (foreign.c).
	 */
	char driver[32];
	/* Pending fences of `driver` itself do not block a GPU-side wait. */
	bool own_fences_async;
};

/* Whether the space-separated extension list `exts` (NULL: none) names `name`. */
bool egl_has_extension(const char *exts, const char *name);

/*
 * The display's info, probed on first use. -EINVAL for EGL_NO_DISPLAY or a
 * display that is not initialised.
 */
int egl_display_get(EGLDisplay dpy, struct display_info *out);

/*
 * Called by the probe once the sync caps are known, with the display's
 * device (display.c asked EGL_EXT_device_query): whether it renders in
 * software, its DRM render node (NULL: unknown). Finds the node's kernel
 * driver and adds SB_EGL_CAP_FOREIGN_WAIT_BLOCKS or _ASYNC to info->caps
 * by the rule.
 */
void egl_foreign_probe(EGLDisplay dpy, bool software, const char *node,
		       struct display_info *info);

/*
 * The rule alone: the FOREIGN_WAIT bit for a display with sync caps `caps`
 * that renders in software (`software`) or on the DRM device of kernel
 * driver `driver` (NULL or "": unknown). *own_fences_async (may be NULL):
 * whether that driver's own pending fences are exempt.
 */
uint32_t egl_foreign_rule(uint32_t caps, bool software, const char *driver,
			  bool *own_fences_async);

#endif
