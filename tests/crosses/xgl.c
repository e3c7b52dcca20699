/* SPDX-License-Identifier: MIT */
/*
 * EGL/GLES as exporter and importer of dma-bufs and fences: llvmpipe on the
 * EGL device platform's software device, virgl on the surfaceless platform
 * (crosses.h). Extensions are not checked up front: a missing entry point or
 * a refused call is what the cell records.
 */
#include "crosses.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <drm_fourcc.h>

static struct {
	PFNEGLCREATEIMAGEKHRPROC create_image;
	PFNEGLDESTROYIMAGEKHRPROC destroy_image;
	PFNGLEGLIMAGETARGETTEXTURE2DOESPROC image_target;
	PFNEGLEXPORTDMABUFIMAGEQUERYMESAPROC export_query;
	PFNEGLEXPORTDMABUFIMAGEMESAPROC export_image;
	PFNEGLCREATESYNCKHRPROC create_sync;
	PFNEGLDESTROYSYNCKHRPROC destroy_sync;
	PFNEGLWAITSYNCKHRPROC wait_sync;
	PFNEGLDUPNATIVEFENCEFDANDROIDPROC dup_fence;
} egl;

static void
load_procs(void)
{
#define P(field, type, name) egl.field = (type)eglGetProcAddress(name)
	P(create_image, PFNEGLCREATEIMAGEKHRPROC, "eglCreateImageKHR");
	P(destroy_image, PFNEGLDESTROYIMAGEKHRPROC, "eglDestroyImageKHR");
	P(image_target, PFNGLEGLIMAGETARGETTEXTURE2DOESPROC, "glEGLImageTargetTexture2DOES");
	P(export_query, PFNEGLEXPORTDMABUFIMAGEQUERYMESAPROC, "eglExportDMABUFImageQueryMESA");
	P(export_image, PFNEGLEXPORTDMABUFIMAGEMESAPROC, "eglExportDMABUFImageMESA");
	P(create_sync, PFNEGLCREATESYNCKHRPROC, "eglCreateSyncKHR");
	P(destroy_sync, PFNEGLDESTROYSYNCKHRPROC, "eglDestroySyncKHR");
	P(wait_sync, PFNEGLWAITSYNCKHRPROC, "eglWaitSyncKHR");
	P(dup_fence, PFNEGLDUPNATIVEFENCEFDANDROIDPROC, "eglDupNativeFenceFDANDROID");
#undef P
}

int
xgl_open(struct xgl *g, enum eglt_platform platform, bool virgl, char *why, size_t size)
{
	const char *renderer;
	int ret;

	memset(g, 0, sizeof(*g));
	g->t.dpy = EGL_NO_DISPLAY;
	ret = eglt_open(&g->t, platform);
	if (ret < 0) {
		snprintf(why, size, "no %s EGL display with GLES",
			 platform == EGLT_DEVICE_SW ? "software-device" : "surfaceless");
		return -ENODEV;
	}
	load_procs();
	renderer = (const char *)glGetString(GL_RENDERER);
	if (virgl && (!renderer || !strstr(renderer, "virgl"))) {
		/* The plain guest: surfaceless EGL is kms_swrast (llvmpipe) on 2D virtio_gpu. */
		snprintf(why, size, "no virgl: surfaceless EGL is %s", renderer ? renderer : "?");
		eglt_close(&g->t);
		return -ENODEV;
	}
	if (eglt_target_create(&g->t, XW, XH, &g->scratch) < 0 ||
	    (virgl && (eglt_target_create(&g->t, 256, 256, &g->work) < 0 ||
		       eglt_busy_pass_init(&g->heavy) < 0))) {
		snprintf(why, size, "GL setup on %s failed", renderer ? renderer : "?");
		xgl_close(g);
		return -EIO;
	}
	return 0;
}

void
xgl_current(struct xgl *g)
{
	eglMakeCurrent(g->t.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, g->t.ctx);
}

void
xgl_close(struct xgl *g)
{
	if (g->t.dpy == EGL_NO_DISPLAY)
		return;
	xgl_current(g);
	eglt_pass_finish(&g->heavy);
	eglt_target_destroy(&g->t, &g->work);
	eglt_target_destroy(&g->t, &g->scratch);
	eglt_close(&g->t);
}

void
xres_egl(struct xres *r, const char *step)
{
	static const char *const names[] = {
		"EGL_SUCCESS", "EGL_NOT_INITIALIZED", "EGL_BAD_ACCESS", "EGL_BAD_ALLOC",
		"EGL_BAD_ATTRIBUTE", "EGL_BAD_CONFIG", "EGL_BAD_CONTEXT", "EGL_BAD_CURRENT_SURFACE",
		"EGL_BAD_DISPLAY", "EGL_BAD_MATCH", "EGL_BAD_NATIVE_PIXMAP", "EGL_BAD_NATIVE_WINDOW",
		"EGL_BAD_PARAMETER", "EGL_BAD_SURFACE", "EGL_CONTEXT_LOST",
	};
	EGLint err = eglGetError();

	if (err >= EGL_SUCCESS && err <= EGL_CONTEXT_LOST)
		xres_set(r, "ERR %s %s", step, names[err - EGL_SUCCESS]);
	else
		xres_set(r, "ERR %s 0x%x", step, err);
}

/* Long draws into g->work: `iters` sin() per pixel of 256x256. */
static void
busy(struct xgl *g, int iters)
{
	if (iters <= 0 || !g->heavy.program)
		return;
	eglt_busy_pass_draw(&g->heavy, iters, &g->work);
}

void
xgl_export(struct xgl *g, struct xbuf *b)
{
	const EGLint attribs[] = { EGL_GL_TEXTURE_LEVEL_KHR, 0, EGL_NONE };
	struct eglt_target tgt;
	EGLuint64KHR modifier = DRM_FORMAT_MOD_INVALID;
	int fourcc = 0, planes = 0, fd = -1;
	EGLint stride = 0, offset = 0;

	xgl_current(g);
	if (!egl.export_query || !egl.export_image || !egl.create_image) {
		xres_set(&b->export, "ERR EGL_MESA_image_dma_buf_export absent");
		return;
	}
	if (eglt_target_create(&g->t, XW, XH, &tgt) < 0) {
		xres_set(&b->export, "ERR texture %s", eglt_gl_error());
		return;
	}
	b->tex = tgt.tex;
	b->fbo = tgt.fbo;
	b->image = egl.create_image(g->t.dpy, g->t.ctx, EGL_GL_TEXTURE_2D_KHR,
				    (EGLClientBuffer)(uintptr_t)b->tex, attribs);
	if (b->image == EGL_NO_IMAGE_KHR) {
		xres_egl(&b->export, "eglCreateImageKHR");
		return;
	}
	if (!egl.export_query(g->t.dpy, b->image, &fourcc, &planes, &modifier)) {
		xres_egl(&b->export, "eglExportDMABUFImageQueryMESA");
		return;
	}
	if (planes != 1) {
		xres_set(&b->export, "ERR planes %d", planes);
		return;
	}
	if (!egl.export_image(g->t.dpy, b->image, &fd, &stride, &offset)) {
		xres_egl(&b->export, "eglExportDMABUFImageMESA");
		return;
	}
	b->fd = fd;
	b->fourcc = (uint32_t)fourcc;
	b->stride = stride;
	b->offset = offset;
	b->modifier = modifier;
	xres_set(&b->export, "ok");
	xres_cloexec(&b->export, fd, "the exported fd");
}

void
xgl_write(struct xgl *g, struct xbuf *b, int iters)
{
	struct eglt_target tgt = { .image = EGL_NO_IMAGE_KHR, .tex = b->tex, .fbo = b->fbo,
				   .width = XW, .height = XH };

	xgl_current(g);
	busy(g, iters);
	eglt_fill(&tgt, b->value);
	glFlush();
}

void
xgl_import_read(struct xgl *g, const struct xbuf *b, uint8_t *rgba, struct xres *r)
{
	EGLint attribs[20] = {
		EGL_WIDTH, XW, EGL_HEIGHT, XH,
		EGL_LINUX_DRM_FOURCC_EXT, (EGLint)b->fourcc,
		EGL_DMA_BUF_PLANE0_FD_EXT, b->fd,
		EGL_DMA_BUF_PLANE0_OFFSET_EXT, b->offset,
		EGL_DMA_BUF_PLANE0_PITCH_EXT, b->stride,
		EGL_NONE,
	};
	struct eglt_target tgt = { .image = EGL_NO_IMAGE_KHR, .width = XW, .height = XH };
	GLenum status;
	int n = 12;

	xgl_current(g);
	if (!egl.create_image || !egl.image_target) {
		xres_set(r, "ERR EGL_EXT_image_dma_buf_import absent");
		return;
	}
	/* The exporter's modifier travels with the buffer (..._import_modifiers). */
	if (b->modifier != DRM_FORMAT_MOD_INVALID) {
		attribs[n++] = EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT;
		attribs[n++] = (EGLint)(b->modifier & 0xffffffff);
		attribs[n++] = EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT;
		attribs[n++] = (EGLint)(b->modifier >> 32);
		attribs[n] = EGL_NONE;
	}
	/* EGL takes its own reference to the dma-buf: b->fd stays the exporter's. */
	tgt.image = egl.create_image(g->t.dpy, EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, NULL, attribs);
	if (tgt.image == EGL_NO_IMAGE_KHR) {
		xres_egl(r, "eglCreateImageKHR");
		return;
	}
	glGenTextures(1, &tgt.tex);
	glBindTexture(GL_TEXTURE_2D, tgt.tex);
	egl.image_target(GL_TEXTURE_2D, (GLeglImageOES)tgt.image);
	if (glGetError() != GL_NO_ERROR) {
		xres_set(r, "ERR glEGLImageTargetTexture2DOES");
		goto out;
	}
	glGenFramebuffers(1, &tgt.fbo);
	glBindFramebuffer(GL_FRAMEBUFFER, tgt.fbo);
	glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tgt.tex, 0);
	status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
	if (status != GL_FRAMEBUFFER_COMPLETE) {
		xres_set(r, "ERR glCheckFramebufferStatus 0x%x", status);
		goto out;
	}
	if (eglt_read(&tgt, rgba) < 0)
		xres_set(r, "ERR glReadPixels");
	else
		xres_set(r, "ok");
out:
	eglt_target_destroy(&g->t, &tgt);
}

int
xgl_fence_export(struct xgl *g, int iters, struct xres *r)
{
	const EGLint none[] = { EGL_NONE };
	EGLSyncKHR sync;
	int fd;

	xgl_current(g);
	if (!egl.create_sync || !egl.dup_fence) {
		xres_set(r, "ERR EGL_ANDROID_native_fence_sync absent");
		return -1;
	}
	busy(g, iters);
	eglt_fill(&g->scratch, 0x10);
	sync = egl.create_sync(g->t.dpy, EGL_SYNC_NATIVE_FENCE_ANDROID, none);
	if (sync == EGL_NO_SYNC_KHR) {
		xres_egl(r, "eglCreateSyncKHR");
		return -1;
	}
	/* The native fence exists once the commands before it are flushed (the extension). */
	glFlush();
	fd = egl.dup_fence(g->t.dpy, sync);
	if (fd == EGL_NO_NATIVE_FENCE_FD_ANDROID)
		xres_egl(r, "eglDupNativeFenceFDANDROID");
	else
		xres_set(r, "ok");
	egl.destroy_sync(g->t.dpy, sync);
	xres_cloexec(r, fd, "the native fence fd");
	return fd;
}

void
xgl_fence_wait(struct xgl *g, int sync_file, struct xres *r)
{
	EGLint attribs[] = { EGL_SYNC_NATIVE_FENCE_FD_ANDROID, -1, EGL_NONE };
	EGLSyncKHR sync;

	xgl_current(g);
	if (!egl.create_sync || !egl.wait_sync) {
		xres_set(r, "ERR EGL_KHR_wait_sync absent");
		return;
	}
	/* EGL owns the fd only once the sync exists: pass a duplicate, close it on failure. */
	attribs[1] = fcntl(sync_file, F_DUPFD_CLOEXEC, 3);
	if (attribs[1] < 0) {
		xres_errno(r, "dup", errno);
		return;
	}
	sync = egl.create_sync(g->t.dpy, EGL_SYNC_NATIVE_FENCE_ANDROID, attribs);
	if (sync == EGL_NO_SYNC_KHR) {
		xres_egl(r, "eglCreateSyncKHR");
		close(attribs[1]);
		return;
	}
	if (!egl.wait_sync(g->t.dpy, sync, 0)) {
		xres_egl(r, "eglWaitSyncKHR");
	} else {
		/* GL work ordered after the fence; glFinish returns once it is done. */
		eglt_fill(&g->scratch, 0x20);
		glFinish();
		xres_set(r, "ok");
	}
	egl.destroy_sync(g->t.dpy, sync);
}

void
xgl_buffer_free(struct xgl *g, struct xbuf *b)
{
	struct eglt_target tgt = { .image = b->image, .tex = b->tex, .fbo = b->fbo };

	if (g->t.dpy == EGL_NO_DISPLAY)
		return;
	xgl_current(g);
	if (!egl.destroy_image)
		tgt.image = EGL_NO_IMAGE_KHR;
	eglt_target_destroy(&g->t, &tgt);
	b->image = EGL_NO_IMAGE_KHR;
	b->tex = b->fbo = 0;
}
