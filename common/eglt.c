/* SPDX-License-Identifier: MIT */
/*
 * EGL displays, GLES contexts and dma-buf render targets (see eglt.h; GLES
 * programs and full-screen passes are in eglt_pass.c).
 */
#include "eglt.h"
#include "kernel.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm_fourcc.h>

#include <syncbridge/egl.h>

static FILE *log_file;
static const char *log_prefix = "# eglt: ";

void
eglt_set_log(FILE *f, const char *prefix)
{
	log_file = f;
	log_prefix = prefix;
}

void
eglt_note(const char *fmt, ...)
{
	FILE *f = log_file ? log_file : stdout;
	va_list ap;

	/* Ruled out for GCC 12, which under -fsanitize=undefined sees a null
	 * format on a path it cannot follow (-Werror=format-overflow). */
	if (!fmt)
		return;
	fputs(log_prefix, f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fflush(f);
}

bool
eglt_has_ext(const char *exts, const char *name)
{
	size_t len = strlen(name);

	/* A match must be a whole word of the list. */
	for (const char *p = exts; p && (p = strstr(p, name)); p += len)
		if ((p == exts || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
			return true;
	return false;
}

void
eglt_procs_load(struct eglt_procs *p)
{
#define LOAD(field, name) p->field = (__typeof__(p->field))eglGetProcAddress(name)
	LOAD(query_devices, "eglQueryDevicesEXT");
	LOAD(query_device_string, "eglQueryDeviceStringEXT");
	LOAD(query_display_attrib, "eglQueryDisplayAttribEXT");
	LOAD(get_platform_display, "eglGetPlatformDisplayEXT");
	LOAD(create_image, "eglCreateImageKHR");
	LOAD(destroy_image, "eglDestroyImageKHR");
	LOAD(image_target_texture_2d, "glEGLImageTargetTexture2DOES");
	LOAD(export_dmabuf_image_query, "eglExportDMABUFImageQueryMESA");
	LOAD(export_dmabuf_image, "eglExportDMABUFImageMESA");
	LOAD(query_dmabuf_formats, "eglQueryDmaBufFormatsEXT");
	LOAD(query_dmabuf_modifiers, "eglQueryDmaBufModifiersEXT");
	LOAD(create_sync, "eglCreateSyncKHR");
	LOAD(destroy_sync, "eglDestroySyncKHR");
	LOAD(dup_native_fence_fd, "eglDupNativeFenceFDANDROID");
#undef LOAD
}

static EGLDisplay
open_device_sw(void)
{
	struct eglt_procs egl;
	const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
	EGLDeviceEXT devs[16];
	EGLint n = 0;

	eglt_procs_load(&egl);
	if (!eglt_has_ext(client, "EGL_EXT_device_enumeration") ||
	    !eglt_has_ext(client, "EGL_EXT_platform_device") || !egl.query_devices ||
	    !egl.query_device_string || !egl.get_platform_display)
		return EGL_NO_DISPLAY;
	if (!egl.query_devices(16, devs, &n))
		return EGL_NO_DISPLAY;
	for (EGLint i = 0; i < n; i++) {
		const char *exts = egl.query_device_string(devs[i], EGL_EXTENSIONS);

		if (eglt_has_ext(exts, "EGL_MESA_device_software"))
			return egl.get_platform_display(EGL_PLATFORM_DEVICE_EXT, devs[i], NULL);
	}
	return EGL_NO_DISPLAY;
}

static EGLDisplay
open_surfaceless(void)
{
	struct eglt_procs egl;
	const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);

	eglt_procs_load(&egl);
	if (!eglt_has_ext(client, "EGL_MESA_platform_surfaceless") || !egl.get_platform_display)
		return EGL_NO_DISPLAY;
	return egl.get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
}

void
eglt_no_disk_cache(void)
{
	setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
}

bool
eglt_disk_cache_running(void)
{
	/* Mesa's util_queue names the cache's thread "<prog>:disk$0". */
	return sbk_thread_find("disk$") >= 0;
}

int
eglt_open_gles(struct eglt *t, enum eglt_platform platform, int gles_version)
{
	const EGLint ctx_attribs[] = { EGL_CONTEXT_MAJOR_VERSION, gles_version, EGL_NONE };
	const char *exts;

	memset(t, 0, sizeof(*t));
	t->dpy = EGL_NO_DISPLAY;
	t->ctx = EGL_NO_CONTEXT;
	if (platform != EGLT_SURFACELESS) {
		t->dpy = open_device_sw();
		t->platform = "device-sw";
	}
	if (t->dpy == EGL_NO_DISPLAY && platform != EGLT_DEVICE_SW) {
		t->dpy = open_surfaceless();
		t->platform = "surfaceless";
	}
	if (t->dpy == EGL_NO_DISPLAY) {
		eglt_note("no %s EGL display",
		     platform == EGLT_DEVICE_SW ? "software-device" : "usable");
		return -ENODEV;
	}
	if (!eglInitialize(t->dpy, &t->major, &t->minor)) {
		eglt_note("eglInitialize(%s) failed: 0x%x", t->platform, eglGetError());
		t->dpy = EGL_NO_DISPLAY;
		return -ENODEV;
	}
	exts = eglQueryString(t->dpy, EGL_EXTENSIONS);
	if (!eglt_has_ext(exts, "EGL_KHR_no_config_context") ||
	    !eglt_has_ext(exts, "EGL_KHR_surfaceless_context")) {
		eglt_note("%s display lacks configless/surfaceless contexts", t->platform);
		eglt_close(t);
		return -ENODEV;
	}
	if (!eglBindAPI(EGL_OPENGL_ES_API))
		goto fail;
	t->ctx = eglCreateContext(t->dpy, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, ctx_attribs);
	if (t->ctx == EGL_NO_CONTEXT)
		goto fail;
	if (!eglMakeCurrent(t->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, t->ctx))
		goto fail;
	return 0;

fail:
	eglt_note("GLES %d context setup on %s failed: 0x%x", gles_version, t->platform,
		  eglGetError());
	eglt_close(t);
	return -ENODEV;
}

int
eglt_open(struct eglt *t, enum eglt_platform platform)
{
	int ret;

	eglt_no_disk_cache();
	ret = eglt_open_gles(t, platform, 2);
	if (ret == 0)
		eglt_note("%s display, EGL %d.%d, GL_RENDERER %s", t->platform, t->major, t->minor,
		     (const char *)glGetString(GL_RENDERER));
	return ret;
}

void
eglt_close(struct eglt *t)
{
	if (t->dpy == EGL_NO_DISPLAY)
		return;
	eglMakeCurrent(t->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
	if (t->ctx != EGL_NO_CONTEXT)
		eglDestroyContext(t->dpy, t->ctx);
	eglTerminate(t->dpy);
	eglReleaseThread();
	t->dpy = EGL_NO_DISPLAY;
	t->ctx = EGL_NO_CONTEXT;
}

void
eglt_describe(struct eglt *t, char *buf, size_t size)
{
	uint32_t caps = 0;

	sb_egl_display_get_caps(t->dpy, &caps);
	snprintf(buf, size, "EGL %d.%d on %s; bridge: %s", t->major, t->minor,
		 (const char *)glGetString(GL_RENDERER),
		 (caps & SB_EGL_CAP_DISABLED) ? "off (SYNCBRIDGE_DISABLE=1)"
		 : (caps & SB_EGL_CAP_GPU_WAIT) ? "GPU-side waits (native fence sync)"
						: "CPU waits (no native fence sync)");
}

static void
texture_init(struct eglt_target *out, int width, int height)
{
	memset(out, 0, sizeof(*out));
	out->image = EGL_NO_IMAGE_KHR;
	out->width = width;
	out->height = height;
	glGenTextures(1, &out->tex);
	glBindTexture(GL_TEXTURE_2D, out->tex);
	glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
	glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
}

static int
finish_fbo(struct eglt_target *out)
{
	glGenFramebuffers(1, &out->fbo);
	glBindFramebuffer(GL_FRAMEBUFFER, out->fbo);
	glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, out->tex, 0);
	GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
	if (status != GL_FRAMEBUFFER_COMPLETE) {
		eglt_note("framebuffer incomplete: 0x%x", status);
		return -EIO;
	}
	glViewport(0, 0, out->width, out->height);
	return 0;
}

int
eglt_target_create(struct eglt *t, int width, int height, struct eglt_target *out)
{
	(void)t;
	texture_init(out, width, height);
	glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
	return finish_fbo(out);
}

int
eglt_image_import_layout(struct eglt *t, int dmabuf_fd, int width, int height,
			 const struct eglt_dmabuf_layout *layout, struct eglt_target *out)
{
	struct eglt_procs egl;
	const char *exts = eglQueryString(t->dpy, EGL_EXTENSIONS);
	EGLint attribs[17] = {
		EGL_WIDTH, width,
		EGL_HEIGHT, height,
		EGL_LINUX_DRM_FOURCC_EXT, (EGLint)layout->fourcc,
		EGL_DMA_BUF_PLANE0_FD_EXT, dmabuf_fd,
		EGL_DMA_BUF_PLANE0_OFFSET_EXT, layout->offset,
		EGL_DMA_BUF_PLANE0_PITCH_EXT, layout->pitch,
		EGL_NONE,
	};

	eglt_procs_load(&egl);
	memset(out, 0, sizeof(*out));
	out->image = EGL_NO_IMAGE_KHR;
	if (!eglt_has_ext(exts, "EGL_EXT_image_dma_buf_import") || !egl.create_image ||
	    !egl.image_target_texture_2d) {
		eglt_note("%s display cannot import dma-bufs", t->platform);
		return -ENODEV;
	}
	if (layout->modifier != DRM_FORMAT_MOD_INVALID) {
		attribs[12] = EGL_DMA_BUF_PLANE0_MODIFIER_LO_EXT;
		attribs[13] = (EGLint)(layout->modifier & 0xffffffff);
		attribs[14] = EGL_DMA_BUF_PLANE0_MODIFIER_HI_EXT;
		attribs[15] = (EGLint)(layout->modifier >> 32);
		attribs[16] = EGL_NONE;
	}
	EGLImageKHR image =
		egl.create_image(t->dpy, EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, NULL, attribs);
	if (image == EGL_NO_IMAGE_KHR) {
		eglt_note("eglCreateImageKHR(dma-buf) on %s failed: 0x%x", t->platform,
			  eglGetError());
		return -EIO;
	}
	texture_init(out, width, height);
	out->image = image;
	egl.image_target_texture_2d(GL_TEXTURE_2D, (GLeglImageOES)out->image);
	if (glGetError() != GL_NO_ERROR) {
		eglt_note("glEGLImageTargetTexture2DOES failed");
		return -EIO;
	}
	return 0;
}

int
eglt_image_import(struct eglt *t, int dmabuf_fd, int width, int height, uint32_t fourcc,
		  int offset, int pitch, struct eglt_target *out)
{
	const struct eglt_dmabuf_layout layout = {
		.fourcc = fourcc,
		.offset = offset,
		.pitch = pitch,
		.modifier = DRM_FORMAT_MOD_INVALID,
	};

	return eglt_image_import_layout(t, dmabuf_fd, width, height, &layout, out);
}

int
eglt_target_export(struct eglt *t, struct eglt_target *target, int *out_fd,
		   struct eglt_dmabuf_layout *layout)
{
	struct eglt_procs egl;
	const EGLint attribs[] = { EGL_GL_TEXTURE_LEVEL_KHR, 0, EGL_NONE };
	EGLuint64KHR modifier = DRM_FORMAT_MOD_INVALID;
	EGLint stride = 0, offset = 0;
	int fourcc = 0, planes = 0, fd = -1;

	*out_fd = -1;
	eglt_procs_load(&egl);
	if (!eglt_has_ext(eglQueryString(t->dpy, EGL_EXTENSIONS),
			  "EGL_MESA_image_dma_buf_export") ||
	    !egl.create_image || !egl.export_dmabuf_image_query || !egl.export_dmabuf_image) {
		eglt_note("%s display cannot export dma-bufs", t->platform);
		return -ENODEV;
	}
	if (target->image == EGL_NO_IMAGE_KHR)
		target->image = egl.create_image(t->dpy, t->ctx, EGL_GL_TEXTURE_2D_KHR,
					     (EGLClientBuffer)(uintptr_t)target->tex, attribs);
	if (target->image == EGL_NO_IMAGE_KHR ||
	    !egl.export_dmabuf_image_query(t->dpy, target->image, &fourcc, &planes, &modifier)) {
		eglt_note("EGLImage of a texture on %s: 0x%x", t->platform, eglGetError());
		return -EIO;
	}
	if (planes != 1) {
		eglt_note("the texture exports as %d planes", planes);
		return -ENODEV;
	}
	if (!egl.export_dmabuf_image(t->dpy, target->image, &fd, &stride, &offset) || fd < 0) {
		eglt_note("eglExportDMABUFImageMESA on %s: 0x%x", t->platform, eglGetError());
		return -EIO;
	}
	*layout = (struct eglt_dmabuf_layout){
		.fourcc = (uint32_t)fourcc, .offset = offset, .pitch = stride, .modifier = modifier,
	};
	*out_fd = fd;
	return 0;
}

int
eglt_target_import(struct eglt *t, int dmabuf_fd, int width, int height, int pitch,
		   struct eglt_target *out)
{
	int ret =
		eglt_image_import(t, dmabuf_fd, width, height, DRM_FORMAT_ARGB8888, 0, pitch, out);

	if (ret == -EIO && out->image == EGL_NO_IMAGE_KHR)
		ret = -ENODEV; /* an import the display refused: not possible here */
	return ret < 0 ? ret : finish_fbo(out);
}

void
eglt_target_destroy(struct eglt *t, struct eglt_target *target)
{
	struct eglt_procs egl;

	eglt_procs_load(&egl);
	if (target->fbo)
		glDeleteFramebuffers(1, &target->fbo);
	if (target->tex)
		glDeleteTextures(1, &target->tex);
	if (target->image != EGL_NO_IMAGE_KHR && egl.destroy_image)
		egl.destroy_image(t->dpy, target->image);
	memset(target, 0, sizeof(*target));
	target->image = EGL_NO_IMAGE_KHR;
}

void
eglt_fill(struct eglt_target *target, uint8_t value)
{
	float v = (float)value / 255.0f;

	glBindFramebuffer(GL_FRAMEBUFFER, target->fbo);
	glViewport(0, 0, target->width, target->height);
	glClearColor(v, v, v, v);
	glClear(GL_COLOR_BUFFER_BIT);
}

int
eglt_read(struct eglt_target *target, uint8_t *rgba)
{
	glBindFramebuffer(GL_FRAMEBUFFER, target->fbo);
	glPixelStorei(GL_PACK_ALIGNMENT, 4);
	glReadPixels(0, 0, target->width, target->height, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
	return glGetError() == GL_NO_ERROR ? 0 : -EIO;
}

long
eglt_count(struct eglt_target *target, uint8_t value, int *first)
{
	size_t n = (size_t)target->width * (size_t)target->height;
	uint8_t *px = malloc(n * 4);
	long count = 0;

	if (!px)
		return -1;
	if (eglt_read(target, px) < 0) {
		free(px);
		return -1;
	}
	if (first)
		*first = px[0];
	for (size_t i = 0; i < n; i++)
		if (px[4 * i] == value && px[4 * i + 1] == value && px[4 * i + 2] == value &&
		    px[4 * i + 3] == value)
			count++;
	free(px);
	return count;
}
