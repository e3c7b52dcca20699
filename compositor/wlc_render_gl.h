/* SPDX-License-Identifier: MIT */
/*
 * The GL renderer (wlc_render_gl.c: take, compositing, read-back, set-up),
 * on its EGL side (wlc_render_gl_egl.h), which it calls down into. Built
 * only with WLC_HAVE_GL; a test reaches into struct gl_renderer.
 */
#ifndef WLC_RENDER_GL_H
#define WLC_RENDER_GL_H

#include "wlc_render_gl_egl.h"

/* ---- the renderer (wlc_render_gl.c; a test reaches into it) ---------------- */

struct gl_renderer {
	struct wlc_renderer base;
	struct gl_display gd; /* the EGL side */
	struct eglt_target output;
	GLuint program;
	GLint u_rect, u_tex, u_swizzle, u_opaque;
	bool bgra_ext;  /* GL_EXT_texture_format_BGRA8888 */
	bool row_length; /* GL_EXT_unpack_subimage: uploads of padded rows as they are */
};

#endif
