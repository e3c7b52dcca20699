/* SPDX-License-Identifier: MIT */
/*
 * The example compositor's GL renderer (wlc_internal.h), on an eglt display
 * (the EGL device platform's software device where there is one: pure
 * llvmpipe, which maps dma-bufs, so vgem / udmabuf / dumb buffers import).
 *
 * take() copies each applied buffer into the surface's own texture: a dma-buf
 * through an EGLImage (made once per buffer, cached in its render_data),
 * after GL was made to wait for the commit's acquire fence (or the buffer's
 * implicit fences) through the EGL bridge; the copy's fence goes back as the
 * release fence. shm pixels are uploaded. repaint() composites the stack
 * into an output texture; read_pixels() reads it back.
 *
 * Every texture and FBO here holds its rows top first: GL's row 0 (window
 * y = 0, texture t = 0) is the image's top row, as in memory. Nothing is
 * ever shown on a screen, so nothing needs GL's bottom-up convention and no
 * row is flipped anywhere, glReadPixels included.
 *
 * Every entry point makes the context current (wlc_gl_make_current()).
 * The EGL side (imports, formats, the device) is wlc_render_gl_egl.c.
 */
#include <errno.h>
#include <stddef.h>

#include "wlc_internal.h"

#ifndef WLC_HAVE_GL

struct wlc_renderer *
wlc_renderer_gl_create(uint32_t width, uint32_t height, int *err)
{
	(void)width;
	(void)height;
	*err = -ENODEV; /* built without EGL/GLES or the EGL bridge */
	return NULL;
}

#else

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <syncbridge/egl.h>
#include <syncbridge/syncbridge.h>

#include "wlc_render_gl.h"

/*
 * Make the driver let go of the last texture a draw sampled. Mesa keeps the
 * sampler views of the last draw until a later draw replaces them, and a
 * deleted texture's view holds its resource — for an imported dma-buf, a
 * duplicate of the buffer's fd, kept past the client's buffer (the
 * compositor's fd count grew by one in wl-protocol-errors). A draw of
 * nothing with no texture bound replaces them (gl_display.texture_deleted).
 */
static void
unbind_sampled(struct gl_display *gd)
{
	static const GLfloat quad[] = { 0, 0, 1, 0, 0, 1, 1, 1 };
	struct gl_renderer *r = wl_container_of(gd, r, gd);

	if (!r->program || !r->output.fbo)
		return;
	glBindFramebuffer(GL_FRAMEBUFFER, r->output.fbo);
	glUseProgram(r->program);
	glUniform4f(r->u_rect, 0, 0, 0, 0); /* zero area: nothing drawn */
	glActiveTexture(GL_TEXTURE0);
	glBindTexture(GL_TEXTURE_2D, 0);
	glBindBuffer(GL_ARRAY_BUFFER, 0);
	glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, quad);
	glEnableVertexAttribArray(0);
	glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
	glDisableVertexAttribArray(0);
}

/* A surface's content (wlc_surface.render_data). */
struct gl_surface {
	struct eglt_target target; /* fbo 0: shm storage, not rendered into */
	bool bgra_storage;         /* stored as GL_BGRA_EXT */
	bool swizzle;              /* B,G,R,A bytes stored as RGBA: swap when drawn */
	bool opaque;               /* X formats: alpha is padding */
};

static bool
format_opaque(uint32_t format)
{
	return format == DRM_FORMAT_XRGB8888 || format == DRM_FORMAT_XBGR8888;
}

/*
 * Draw tex (swapping R and B, forcing alpha 1 as asked) into the fbo of
 * fb_w x fb_h at (x, y), w x h. Blending is the caller's.
 */
static void
draw(struct gl_renderer *r, GLuint tex, GLuint fbo, uint32_t fb_w, uint32_t fb_h, int32_t x,
     int32_t y, uint32_t w, uint32_t h, bool swizzle, bool opaque)
{
	static const GLfloat quad[] = { 0, 0, 1, 0, 0, 1, 1, 1 };

	glBindFramebuffer(GL_FRAMEBUFFER, fbo);
	glViewport(0, 0, (GLsizei)fb_w, (GLsizei)fb_h);
	glUseProgram(r->program);
	glUniform4f(r->u_rect, 2.0f * (float)x / (float)fb_w - 1.0f,
		    2.0f * (float)y / (float)fb_h - 1.0f, 2.0f * (float)w / (float)fb_w,
		    2.0f * (float)h / (float)fb_h);
	glUniform1i(r->u_swizzle, swizzle);
	glUniform1i(r->u_opaque, opaque);
	glActiveTexture(GL_TEXTURE0);
	glBindTexture(GL_TEXTURE_2D, tex);
	glUniform1i(r->u_tex, 0);
	glBindBuffer(GL_ARRAY_BUFFER, 0);
	glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, quad);
	glEnableVertexAttribArray(0);
	glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
	glDisableVertexAttribArray(0);
}

/* ---- take ------------------------------------------------------------------ */

static struct gl_surface *
surface_get(struct wlc_surface *surf)
{
	if (!surf->render_data)
		surf->render_data = calloc(1, sizeof(struct gl_surface));
	return surf->render_data;
}

/* Give gs a width x height RGBA texture in an FBO (kept when it has one already). */
static int
surface_target(struct gl_renderer *r, struct gl_surface *gs, uint32_t width, uint32_t height)
{
	if (gs->target.fbo && !gs->bgra_storage && gs->target.width == (int)width &&
	    gs->target.height == (int)height)
		return 0;
	eglt_target_destroy(&r->gd.t, &gs->target);
	gs->bgra_storage = false;
	if (eglt_target_create(&r->gd.t, (int)width, (int)height, &gs->target) < 0) {
		eglt_target_destroy(&r->gd.t, &gs->target);
		return -EIO;
	}
	return 0;
}

static int
take_dmabuf(struct gl_renderer *r, struct gl_surface *gs, struct dmabuf_buffer *b, int acquire_fd,
	    int *release_fd)
{
	GLuint tex;
	int ret = wlc_gl_import_get(&r->gd, b, &tex);

	if (ret < 0)
		return ret;
	/*
	 * GL's reads of the buffer go after the client's writes: its acquire
	 * fence, or without one (implicit sync) the fences on the buffer.
	 */
	ret = acquire_fd >= 0 ? sb_egl_sync_file_wait(r->gd.t.dpy, acquire_fd)
			      : sb_egl_dmabuf_wait(r->gd.t.dpy, b->fd, SB_ACCESS_READ);
	if (ret < 0)
		return ret;
	ret = surface_target(r, gs, b->width, b->height);
	if (ret < 0)
		return ret;
	glDisable(GL_BLEND);
	draw(r, tex, gs->target.fbo, b->width, b->height, 0, 0, b->width, b->height, false,
	     format_opaque(b->format));
	gs->swizzle = gs->opaque = false; /* the copy is plain premultiplied RGBA */
	if (glGetError() != GL_NO_ERROR)
		return -EIO;
	/* The release waits for the copy; -1 where the bridge waited on the CPU. */
	if (sb_egl_sync_file_export(r->gd.t.dpy, release_fd) < 0) {
		glFinish(); /* no fence to give: the copy must be done before the release */
		*release_fd = -1;
	}
	return 0;
}

static int
take_shm(struct gl_renderer *r, struct gl_surface *gs, const struct wlc_state *s)
{
	uint32_t w = s->shm_width, h = s->shm_height, format = s->shm_format;
	const uint8_t *pixels = s->shm_pixels;
	uint8_t *packed = NULL;
	bool bgra, swizzle, row_length = false;
	GLenum gl_format;

	if (format == 0)
		format = DRM_FORMAT_ARGB8888; /* wl_shm's two non-fourcc codes */
	else if (format == 1)
		format = DRM_FORMAT_XRGB8888;
	switch (format) {
	case DRM_FORMAT_ARGB8888:
	case DRM_FORMAT_XRGB8888: /* little-endian: B, G, R, A bytes */
		bgra = r->bgra_ext;
		swizzle = !r->bgra_ext;
		break;
	case DRM_FORMAT_ABGR8888:
	case DRM_FORMAT_XBGR8888: /* R, G, B, A bytes: GL's RGBA */
		bgra = swizzle = false;
		break;
	default:
		return -EINVAL;
	}
	if (!w || !h || s->shm_stride < w * 4)
		return -EINVAL;
	/*
	 * Padded rows (a Vulkan WSI's shm buffers have them): GLES2 reads them
	 * as they are only with GL_EXT_unpack_subimage's row length; without
	 * it they are packed first, one more copy of the buffer.
	 */
	if (s->shm_stride != w * 4 && r->row_length && s->shm_stride % 4 == 0) {
		glPixelStorei(GL_UNPACK_ROW_LENGTH_EXT, (GLint)(s->shm_stride / 4));
		row_length = true;
	} else if (s->shm_stride != w * 4) {
		packed = malloc((size_t)w * h * 4);
		if (!packed)
			return -ENOMEM;
		for (uint32_t y = 0; y < h; y++)
			memcpy(packed + (size_t)y * w * 4, pixels + (size_t)y * s->shm_stride,
			       (size_t)w * 4);
		pixels = packed;
	}
	gl_format = bgra ? GL_BGRA_EXT : GL_RGBA;
	if (gs->target.tex && !gs->target.fbo && gs->bgra_storage == bgra &&
	    gs->target.width == (int)w && gs->target.height == (int)h) {
		glBindTexture(GL_TEXTURE_2D, gs->target.tex);
		glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, (GLsizei)w, (GLsizei)h, gl_format,
				GL_UNSIGNED_BYTE, pixels);
	} else {
		/* A new texture: the old one may be an FBO's of another size or format. */
		eglt_target_destroy(&r->gd.t, &gs->target);
		glGenTextures(1, &gs->target.tex);
		glBindTexture(GL_TEXTURE_2D, gs->target.tex);
		wlc_gl_texture_params();
		glTexImage2D(GL_TEXTURE_2D, 0, (GLint)gl_format, (GLsizei)w, (GLsizei)h, 0,
			     gl_format, GL_UNSIGNED_BYTE, pixels);
		gs->target.width = (int)w;
		gs->target.height = (int)h;
		gs->bgra_storage = bgra;
	}
	free(packed);
	if (row_length)
		glPixelStorei(GL_UNPACK_ROW_LENGTH_EXT, 0);
	gs->swizzle = swizzle;
	gs->opaque = format_opaque(format);
	return glGetError() == GL_NO_ERROR ? 0 : -EIO;
}

static int
gl_take(struct wlc_renderer *base, struct wlc_surface *surf, const struct wlc_state *s,
	int acquire_fd, int *release_fd)
{
	struct gl_renderer *r = (struct gl_renderer *)base;
	struct gl_surface *gs = surface_get(surf);

	*release_fd = -1;
	if (!gs)
		return -ENOMEM;
	wlc_gl_make_current(&r->gd);
	if (s->shm_pixels)
		return take_shm(r, gs, s); /* shm: no fence to wait for */
	if (!s->dmabuf)
		return -EINVAL;
	return take_dmabuf(r, gs, s->dmabuf, acquire_fd, release_fd);
}

static void
gl_surface_destroy(struct wlc_renderer *base, struct wlc_surface *surf)
{
	struct gl_renderer *r = (struct gl_renderer *)base;
	struct gl_surface *gs = surf->render_data;

	if (!gs)
		return;
	wlc_gl_make_current(&r->gd);
	eglt_target_destroy(&r->gd.t, &gs->target);
	free(gs);
	surf->render_data = NULL;
}

/* ---- the output ------------------------------------------------------------ */

static int
gl_repaint(struct wlc_renderer *base, struct wl_list *stack)
{
	struct gl_renderer *r = (struct gl_renderer *)base;
	uint32_t bg = base->background;
	struct wlc_surface *surf;

	wlc_gl_make_current(&r->gd);
	glBindFramebuffer(GL_FRAMEBUFFER, r->output.fbo);
	glViewport(0, 0, (GLsizei)base->width, (GLsizei)base->height);
	glDisable(GL_BLEND);
	glClearColor((float)((bg >> 16) & 0xff) / 255.0f, (float)((bg >> 8) & 0xff) / 255.0f,
		     (float)(bg & 0xff) / 255.0f, (float)(bg >> 24) / 255.0f);
	glClear(GL_COLOR_BUFFER_BIT);
	/* Wayland's pixels are premultiplied: source over is ONE, 1 - src alpha. */
	glEnable(GL_BLEND);
	glBlendFunc(GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
	wl_list_for_each(surf, stack, link) {
		struct gl_surface *gs = surf->render_data;

		if (!gs || !gs->target.tex)
			continue;
		/* At the content's own size: a failed take() left the previous one. */
		draw(r, gs->target.tex, r->output.fbo, base->width, base->height, surf->x, surf->y,
		     (uint32_t)gs->target.width, (uint32_t)gs->target.height, gs->swizzle,
		     gs->opaque);
	}
	glDisable(GL_BLEND);
	return glGetError() == GL_NO_ERROR ? 0 : -EIO;
}

/*
 * Submit the repaint (after its frame callbacks are out: wlc_compositor.c).
 * Left in the context's command buffer, its reads of each surface's texture
 * made the next wl_shm upload into that texture (vkcube: every frame) find it
 * busy, and Mesa virgl then gave the texture a new resource: a 1 MB
 * allocation the guest kernel zeroes (perf: 21 % of the compositor's time in
 * clear_page from virtio_gpu_resource_create). With the flush, CPU per
 * vkcube frame went from 6.9 to 3.0 ms in the GPU guest.
 */
static void
gl_submit(struct wlc_renderer *base)
{
	wlc_gl_make_current(&((struct gl_renderer *)base)->gd);
	glFlush();
}

/* The submit with a fence of the repaint (it flushes). */
static int
gl_submit_fence(struct wlc_renderer *base, int *fence_fd)
{
	struct gl_renderer *r = (struct gl_renderer *)base;

	wlc_gl_make_current(&r->gd);
	return sb_egl_sync_file_export(r->gd.t.dpy, fence_fd);
}

static int
gl_read_pixels(struct wlc_renderer *base, uint8_t **rgba)
{
	struct gl_renderer *r = (struct gl_renderer *)base;
	uint8_t *p = malloc((size_t)base->width * base->height * 4);

	if (!p)
		return -ENOMEM;
	wlc_gl_make_current(&r->gd);
	/* Rows top first already: see the top of the file. */
	if (eglt_read(&r->output, p) < 0) {
		free(p);
		return -EIO;
	}
	*rgba = p;
	return 0;
}

static void
gl_destroy(struct wlc_renderer *base)
{
	struct gl_renderer *r = (struct gl_renderer *)base;

	if (r->gd.t.dpy != EGL_NO_DISPLAY) {
		wlc_gl_make_current(&r->gd);
		/* Buffers still holding an import keep only its struct. */
		wlc_gl_imports_release(&r->gd);
		eglt_target_destroy(&r->gd.t, &r->output);
		if (r->program)
			glDeleteProgram(r->program);
	}
	eglt_close(&r->gd.t);
	free(r->gd.formats);
	free(r);
}

static const struct wlc_renderer_impl gl_impl = {
	.name = "gl",
	.take = gl_take,
	.surface_destroy = gl_surface_destroy,
	.repaint = gl_repaint,
	.submit = gl_submit,
	.submit_fence = gl_submit_fence,
	.read_pixels = gl_read_pixels,
	.destroy = gl_destroy,
};

static int
program_init(struct gl_renderer *r)
{
	/* pos: the unit square; rect: where it goes, in clip space (x, y, w, h). */
	static const char vs[] =
		"attribute vec2 pos;\n"
		"uniform vec4 rect;\n"
		"varying vec2 uv;\n"
		"void main() {\n"
		"  uv = pos;\n"
		"  gl_Position = vec4(rect.xy + pos * rect.zw, 0.0, 1.0);\n"
		"}\n";
	/* highp where there is one: mediump texture coordinates miss texels on wide surfaces. */
	static const char fs[] =
		"#ifdef GL_FRAGMENT_PRECISION_HIGH\n"
		"precision highp float;\n"
		"#else\n"
		"precision mediump float;\n"
		"#endif\n"
		"varying vec2 uv;\n"
		"uniform sampler2D tex;\n"
		"uniform bool swizzle;\n"
		"uniform bool opaque;\n"
		"void main() {\n"
		"  vec4 c = texture2D(tex, uv);\n"
		"  if (swizzle) c = c.bgra;\n"
		"  if (opaque) c.a = 1.0;\n"
		"  gl_FragColor = c;\n"
		"}\n";

	r->program = eglt_program(vs, fs);
	if (!r->program)
		return -EIO;
	r->u_rect = glGetUniformLocation(r->program, "rect");
	r->u_tex = glGetUniformLocation(r->program, "tex");
	r->u_swizzle = glGetUniformLocation(r->program, "swizzle");
	r->u_opaque = glGetUniformLocation(r->program, "opaque");
	return 0;
}

/* What the display lacks for this renderer (NULL: nothing). */
static const char *
missing_ext(struct gl_renderer *r)
{
	const char *egl = eglQueryString(r->gd.t.dpy, EGL_EXTENSIONS);
	const char *gl = (const char *)glGetString(GL_EXTENSIONS);

	if (!eglt_has_ext(egl, "EGL_EXT_image_dma_buf_import"))
		return "EGL_EXT_image_dma_buf_import";
	if (!eglt_has_ext(gl, "GL_OES_EGL_image"))
		return "GL_OES_EGL_image";
	if (!r->gd.create_image || !r->gd.destroy_image || !r->gd.image_target)
		return "eglCreateImageKHR / glEGLImageTargetTexture2DOES";
	return NULL;
}

/*
 * A GPU if there is one (the surfaceless platform picks the DRM device's
 * driver: Mesa's virgl in a virgl guest), else llvmpipe on the EGL device
 * platform's software device — the one that maps dma-bufs, so vgem,
 * udmabuf and dumb buffers import (on the surfaceless platform a 2D
 * virtio-gpu gets kms_swrast, which cannot import vgem's).
 */
static int
open_display(struct eglt *t)
{
	const char *renderer;

	if (eglt_open_gles(t, EGLT_SURFACELESS, 2) == 0) {
		renderer = (const char *)glGetString(GL_RENDERER);
		if (renderer && !strstr(renderer, "llvmpipe") && !strstr(renderer, "softpipe"))
			return 0;
		eglt_close(t);
	}
	return eglt_open_gles(t, EGLT_ANY, 2);
}

struct wlc_renderer *
wlc_renderer_gl_create(uint32_t width, uint32_t height, int *err)
{
	struct gl_renderer *r;
	struct wl_list nothing;
	const char *missing;
	int ret;

	if (!width || !height) {
		*err = -EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		*err = -ENOMEM;
		return NULL;
	}
	wl_list_init(&r->gd.imports);
	r->gd.t.dpy = EGL_NO_DISPLAY;
	r->gd.texture_deleted = unbind_sampled;
	ret = open_display(&r->gd.t);
	if (ret < 0) {
		fprintf(stderr, "render-gl: no EGL display with a GLES 2 context\n");
		goto fail;
	}
	r->gd.create_image = (PFNEGLCREATEIMAGEKHRPROC)eglGetProcAddress("eglCreateImageKHR");
	r->gd.destroy_image = (PFNEGLDESTROYIMAGEKHRPROC)eglGetProcAddress("eglDestroyImageKHR");
	r->gd.image_target = (PFNGLEGLIMAGETARGETTEXTURE2DOESPROC)
		eglGetProcAddress("glEGLImageTargetTexture2DOES");
	missing = missing_ext(r);
	if (missing) {
		fprintf(stderr, "render-gl: the %s EGL display lacks %s: cannot import dma-bufs\n",
			r->gd.t.platform, missing);
		ret = -ENODEV;
		goto fail;
	}
	r->gd.modifiers = eglt_has_ext(eglQueryString(r->gd.t.dpy, EGL_EXTENSIONS),
				    "EGL_EXT_image_dma_buf_import_modifiers");
	r->bgra_ext = eglt_has_ext((const char *)glGetString(GL_EXTENSIONS),
				   "GL_EXT_texture_format_BGRA8888");
	r->row_length = eglt_has_ext((const char *)glGetString(GL_EXTENSIONS),
				     "GL_EXT_unpack_subimage");
	ret = wlc_gl_query_formats(&r->gd);
	if (ret == 0 && r->gd.nformats == 0) {
		fprintf(stderr,
			"render-gl: the %s EGL display imports none of ARGB/XRGB/ABGR/XBGR8888\n",
			r->gd.t.platform);
		ret = -ENODEV;
	}
	if (ret == 0)
		ret = program_init(r);
	if (ret == 0 && eglt_target_create(&r->gd.t, (int)width, (int)height, &r->output) < 0)
		ret = -EIO;
	if (ret < 0)
		goto fail;
	r->base.impl = &gl_impl;
	r->base.width = width;
	r->base.height = height;
	r->base.background = 0xff202020u;
	r->base.main_device = wlc_gl_main_device(&r->gd);
	r->base.formats = r->gd.formats;
	r->base.nformats = r->gd.nformats;
	/* the background, before any repaint */
	wl_list_init(&nothing);
	gl_repaint(&r->base, &nothing);
	return &r->base;

fail:
	gl_destroy(&r->base);
	*err = ret;
	return NULL;
}

#endif
