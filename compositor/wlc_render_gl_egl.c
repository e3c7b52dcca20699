/* SPDX-License-Identifier: MIT */
/*
 * The GL renderer's EGL side (wlc_render_gl.h), the layer below it: the
 * display, dma-bufs imported as EGLImages once per buffer, the (format,
 * modifier) table it advertises, and the DRM device it imports on. It tells
 * the renderer through gl_display.texture_deleted, never calls it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "wlc_render_gl_egl.h"

/*
 * A dma-buf's EGLImage and texture (its dmabuf_buffer's render_data). The
 * buffer may outlive the renderer (a commit still holding it at teardown):
 * the renderer then frees the GL objects and leaves gd NULL.
 */
struct gl_import {
	struct gl_display *gd;
	struct wl_list link;
	EGLImageKHR image;
	GLuint tex;
};

/* ---- dma-buf imports ------------------------------------------------------- */

static void
import_release(struct gl_import *imp)
{
	struct gl_display *gd = imp->gd;

	if (!gd)
		return;
	wlc_gl_make_current(gd);
	glDeleteTextures(1, &imp->tex);
	gd->destroy_image(gd->t.dpy, imp->image);
	if (gd->texture_deleted)
		gd->texture_deleted(gd);
	wl_list_remove(&imp->link);
	imp->gd = NULL;
}

static void
import_free(void *data)
{
	struct gl_import *imp = data;

	import_release(imp);
	free(imp);
}

/* Not eglt_image_import(): it passes no modifier, and a client may use any we advertised. */
int
wlc_gl_import_get(struct gl_display *gd, struct dmabuf_buffer *b, GLuint *tex)
{
	EGLint attribs[32];
	int n = 0;
	struct gl_import *imp;

	if (b->render_data) {
		imp = b->render_data;
		if (b->render_data_free != import_free || imp->gd != gd)
			return -EBUSY; /* another renderer's (none exists today) */
		*tex = imp->tex;
		return 0;
	}
	attribs[n++] = EGL_WIDTH;
	attribs[n++] = (EGLint)b->width;
	attribs[n++] = EGL_HEIGHT;
	attribs[n++] = (EGLint)b->height;
	attribs[n++] = EGL_LINUX_DRM_FOURCC_EXT;
	attribs[n++] = (EGLint)b->format;
	attribs[n++] = EGL_DMA_BUF_PLANE0_FD_EXT;
	attribs[n++] = b->fd;
	attribs[n++] = EGL_DMA_BUF_PLANE0_OFFSET_EXT;
	attribs[n++] = (EGLint)b->offset;
	attribs[n++] = EGL_DMA_BUF_PLANE0_PITCH_EXT;
	attribs[n++] = (EGLint)b->stride;
	if (gd->modifiers && b->modifier != DRM_FORMAT_MOD_INVALID) {
		attribs[n++] = EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT;
		attribs[n++] = (EGLint)(b->modifier & 0xffffffffu);
		attribs[n++] = EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT;
		attribs[n++] = (EGLint)(b->modifier >> 32);
	}
	attribs[n++] = EGL_NONE;

	imp = calloc(1, sizeof(*imp));
	if (!imp)
		return -ENOMEM;
	imp->image = gd->create_image(gd->t.dpy, EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, NULL,
				      attribs);
	if (imp->image == EGL_NO_IMAGE_KHR) {
		fprintf(stderr, "render-gl: cannot import a %ux%u dma-buf (format 0x%08x, "
				"modifier 0x%llx): EGL error 0x%x\n",
			b->width, b->height, b->format, (unsigned long long)b->modifier,
			eglGetError());
		free(imp);
		return -EINVAL;
	}
	glGenTextures(1, &imp->tex);
	glBindTexture(GL_TEXTURE_2D, imp->tex);
	wlc_gl_texture_params();
	gd->image_target(GL_TEXTURE_2D, (GLeglImageOES)imp->image);
	if (glGetError() != GL_NO_ERROR) {
		glDeleteTextures(1, &imp->tex);
		gd->destroy_image(gd->t.dpy, imp->image);
		free(imp);
		return -EINVAL;
	}
	imp->gd = gd;
	wl_list_insert(&gd->imports, &imp->link);
	b->render_data = imp;
	b->render_data_free = import_free;
	*tex = imp->tex;
	return 0;
}

void
wlc_gl_imports_release(struct gl_display *gd)
{
	struct gl_import *imp, *tmp;

	wl_list_for_each_safe(imp, tmp, &gd->imports, link)
		import_release(imp);
}

/* ---- what it imports ------------------------------------------------------- */

static const uint32_t wanted_formats[] = {
	DRM_FORMAT_ARGB8888, DRM_FORMAT_XRGB8888, DRM_FORMAT_ABGR8888, DRM_FORMAT_XBGR8888,
};

static int
add_format(struct gl_display *gd, size_t *cap, uint32_t format, uint64_t modifier)
{
	if (gd->nformats == *cap) {
		size_t n = *cap ? *cap * 2 : 16;
		struct wlc_format *f = realloc(gd->formats, n * sizeof(*f));

		if (!f)
			return -ENOMEM;
		gd->formats = f;
		*cap = n;
	}
	gd->formats[gd->nformats++] = (struct wlc_format){ format, modifier };
	return 0;
}

static int
add_implicit(struct gl_display *gd, size_t *cap, uint32_t format)
{
	int ret = add_format(gd, cap, format, DRM_FORMAT_MOD_INVALID);

	return ret ? ret : add_format(gd, cap, format, DRM_FORMAT_MOD_LINEAR);
}

/*
 * The wanted formats the display imports, with the modifiers it samples as
 * GL_TEXTURE_2D (external-only ones would need samplerExternalOES). Without
 * the query (no _modifiers extension), or for a format the driver lists with
 * no modifiers, the implicit modifier (DRM_FORMAT_MOD_INVALID: "the server can
 * support the format with an implicit modifier", linux-dmabuf-v1.xml) and
 * LINEAR (dumb buffers, which every importer of these formats reads).
 *
 * The implicit one is what a driver without modifiers allocates with: Mesa's
 * EGL on Wayland hands the surface feedback's modifiers for the format to the
 * driver's create-with-modifiers, and treats a list that is only INVALID as
 * "no modifiers" (a plain allocation). Mesa virgl lists no modifiers and
 * cannot allocate a window buffer with explicit LINEAR: offered LINEAR alone,
 * every Mesa EGL client on virgl failed eglMakeCurrent with EGL_BAD_ALLOC
 * ("failed to allocate color buffer") and weston-simple-egl, glmark2 and mpv
 * crashed on it (issue 26).
 */
int
wlc_gl_query_formats(struct gl_display *gd)
{
	struct eglt_procs egl;
	EGLint formats[256], n = 0;
	size_t cap = 0;
	int ret = 0;

	eglt_procs_load(&egl);
	if (!gd->modifiers || !egl.query_dmabuf_formats || !egl.query_dmabuf_modifiers) {
		for (size_t i = 0;
		     i < sizeof(wanted_formats) / sizeof(wanted_formats[0]) && ret == 0; i++)
			ret = add_implicit(gd, &cap, wanted_formats[i]);
		return ret;
	}
	if (!egl.query_dmabuf_formats(gd->t.dpy, 256, formats, &n))
		n = 0;
	for (EGLint i = 0; i < n && ret == 0; i++) {
		uint32_t format = (uint32_t)formats[i];
		EGLuint64KHR mods[64];
		/* Mesa's llvmpipe leaves external_only unwritten: unwritten means no. */
		EGLBoolean external[64] = { EGL_FALSE };
		EGLint nmods = 0;
		bool wanted = false;

		for (size_t j = 0; j < sizeof(wanted_formats) / sizeof(wanted_formats[0]); j++)
			wanted |= wanted_formats[j] == format;
		if (!wanted)
			continue;
		if (!egl.query_dmabuf_modifiers(gd->t.dpy, formats[i], 64, mods, external, &nmods))
			nmods = 0;
		if (nmods == 0)
			ret = add_implicit(gd, &cap, format);
		for (EGLint j = 0; j < nmods && ret == 0; j++)
			if (!external[j])
				ret = add_format(gd, &cap, format, mods[j]);
	}
	return ret;
}

dev_t
wlc_gl_main_device(struct gl_display *gd)
{
	struct eglt_procs egl;
	const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
	const char *exts, *path = NULL;
	EGLAttrib attr = 0;
	struct stat st;

	eglt_procs_load(&egl);
	if (!eglt_has_ext(client, "EGL_EXT_device_query") || !egl.query_display_attrib ||
	    !egl.query_device_string ||
	    !egl.query_display_attrib(gd->t.dpy, EGL_DEVICE_EXT, &attr) || !attr)
		return 0;
	exts = egl.query_device_string((EGLDeviceEXT)attr, EGL_EXTENSIONS);
	if (eglt_has_ext(exts, "EGL_EXT_device_drm_render_node"))
		path = egl.query_device_string((EGLDeviceEXT)attr, EGL_DRM_RENDER_NODE_FILE_EXT);
	if (!path && eglt_has_ext(exts, "EGL_EXT_device_drm"))
		path = egl.query_device_string((EGLDeviceEXT)attr, EGL_DRM_DEVICE_FILE_EXT);
	if (!path || stat(path, &st) < 0 || !S_ISCHR(st.st_mode))
		return 0;
	return st.st_rdev;
}
