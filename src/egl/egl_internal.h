/* SPDX-License-Identifier: MIT */
/*
 * What the EGL bridge's files share: a display's probe result (egl.c) and
 * the foreign-fence rule (foreign.c). Hidden, not part of the ABI; egl-mock
 * links the bridge's static library and calls egl_foreign_rule() directly.
 */
#ifndef SB_EGL_INTERNAL_H
#define SB_EGL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <EGL/egl.h>

/* A display's probe result (egl.c: probed once, remembered in a table). */
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
 * Called by the probe once the sync caps are known: finds the display's
 * device (EGL_EXT_device_query) and its kernel driver, and adds
 * SB_EGL_CAP_FOREIGN_WAIT_BLOCKS or _ASYNC to info->caps by the rule.
 * client_exts: the client extension string ("" when none).
 */
void egl_foreign_probe(EGLDisplay dpy, const char *client_exts, struct display_info *info);

/*
 * The rule alone: the FOREIGN_WAIT bit for a display with sync caps `caps`
 * that renders in software (`software`) or on the DRM device of kernel
 * driver `driver` (NULL or "": unknown). *own_fences_async (may be NULL):
 * whether that driver's own pending fences are exempt.
 */
uint32_t egl_foreign_rule(uint32_t caps, bool software, const char *driver,
			  bool *own_fences_async);

#endif
