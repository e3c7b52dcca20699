/* SPDX-License-Identifier: MIT */
/*
 * The scripted EGL of egl-mock-* (mock_egl.c): mock_egl_fake.c defines the
 * EGL functions the bridge calls (eglQueryString, eglGetError,
 * eglGetCurrentContext, eglGetCurrentDisplay, eglGetProcAddress and, through
 * it, the sync entry points, glFlush and glFinish), so the program links the
 * bridge's static library and no libEGL. Its "GPU" is `gpu_fence`, a pending
 * vgem sync_file: a fence a sync creates is a duplicate of it, GPU-side waits
 * return at once. What the bridge did is in the records.
 */
#ifndef TB_MOCK_EGL_H
#define TB_MOCK_EGL_H

#include <stdbool.h>

#include <EGL/egl.h>
#include <EGL/eglext.h>

#define NATIVE_EXTS "EGL_KHR_fence_sync EGL_KHR_wait_sync EGL_ANDROID_native_fence_sync"

struct fake_egl {
	const char *version;
	const char *exts;
	const char *client_exts;
	EGLDisplay current_dpy;
	EGLContext current_ctx;
	EGLint error;

	/* behaviour */
	bool fail_create_with_fd;   /* eglCreateSync(NATIVE_FENCE, fd) → EGL_BAD_ALLOC */
	bool fail_server_wait;      /* eglWaitSync → EGL_FALSE */
	bool dup_gives_none;        /* eglDupNativeFenceFDANDROID → -1 */
	int gpu_fence;              /* the "GPU job": a pending sync_file (borrowed), or -1 */
	/*
	 * The display's device (EGL_EXT_device_query, when client_exts lists
	 * it): NULL device_exts = eglQueryDisplayAttribEXT fails; device_node
	 * answers EGL_DRM_RENDER_NODE_FILE_EXT and EGL_DRM_DEVICE_FILE_EXT.
	 */
	const char *device_exts;
	const char *device_node;

	/* records */
	int ext_queries;            /* eglQueryString(dpy, EGL_EXTENSIONS) for a display */
	int creates_khr, creates_core;
	int live_syncs;
	int server_waits, client_waits, flushes_by_wait;
	int gl_flush, gl_finish;
	int last_fd_in;             /* the fd the last NATIVE_FENCE create got */
	bool last_fd_in_was_sync_file;
	int device_queries;         /* eglQueryDisplayAttribEXT + eglQueryDeviceStringEXT calls */
};

extern struct fake_egl fake;
/* Not a display: for "a pointer that is not a display". */
extern char fake_context;

/* Forget every record and behaviour: EGL `version` with display extensions `exts`. */
void fake_reset(const char *version, const char *exts);
/* A display pointer the bridge has never seen (its probe cache is per process). */
EGLDisplay fake_new_display(void);
/* Make a context of dpy current. */
void fake_make_current(EGLDisplay dpy);

#endif
