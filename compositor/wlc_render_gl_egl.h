/* SPDX-License-Identifier: MIT */
/*
 * The GL renderer's EGL side (wlc_render_gl_egl.c), the layer below the
 * renderer (wlc_render_gl.c, wlc_render_gl.h): dma-buf imports cached per
 * buffer, the format table, the main device, and the two GL state helpers
 * both use. Built only with WLC_HAVE_GL.
 */
#ifndef WLC_RENDER_GL_EGL_H
#define WLC_RENDER_GL_EGL_H

#include "eglt.h"
#include "wlc_internal.h"

/* The EGL display and what it imports. */
struct gl_display {
	struct eglt t;  /* the display and the renderer's context */
	bool modifiers; /* EGL_EXT_image_dma_buf_import_modifiers */
	PFNEGLCREATEIMAGEKHRPROC create_image;
	PFNEGLDESTROYIMAGEKHRPROC destroy_image;
	PFNGLEGLIMAGETARGETTEXTURE2DOESPROC image_target;
	struct wlc_format *formats; /* what it imports (wlc_gl_query_formats()) */
	size_t nformats;
	struct wl_list imports; /* gl_import.link */
	/*
	 * The renderer's, run after an import's texture was deleted: make the
	 * driver let go of what the last draw sampled (wlc_render_gl.c). NULL:
	 * nothing to do.
	 */
	void (*texture_deleted)(struct gl_display *gd);
};

/*
 * The compositor is single-threaded, but a test or an embedding may have
 * made another context current since.
 */
static inline void
wlc_gl_make_current(struct gl_display *gd)
{
	eglMakeCurrent(gd->t.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, gd->t.ctx);
	/* Errors left by others would fail our checks: drop them (a few, not forever). */
	for (int i = 0; i < 8 && glGetError() != GL_NO_ERROR; i++)
		;
}

/*
 * The bound GL_TEXTURE_2D: nearest texels, clamped (GLES2 samples
 * non-power-of-two textures only so).
 */
static inline void
wlc_gl_texture_params(void)
{
	glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
	glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
	glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
	glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
}

/*
 * b's texture (an EGLImage of the dma-buf), imported on first use and kept
 * in b->render_data. 0 or -errno (-EINVAL: the display refused it).
 */
int wlc_gl_import_get(struct gl_display *gd, struct dmabuf_buffer *b, GLuint *tex);
/* Free every import's GL objects (the renderer goes; buffers keep a husk). */
void wlc_gl_imports_release(struct gl_display *gd);
/* Fill gd->formats / nformats; 0 or -ENOMEM. */
int wlc_gl_query_formats(struct gl_display *gd);
/* The render node (else the primary node) of the display's DRM device; 0: none (llvmpipe). */
dev_t wlc_gl_main_device(struct gl_display *gd);

#endif
