/* SPDX-License-Identifier: MIT */
#include "eglt.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm_fourcc.h>

static bool
has_ext(const char *exts, const char *name)
{
	size_t len = strlen(name);

	while (exts && *exts) {
		const char *end = strchr(exts, ' ');
		size_t n = end ? (size_t)(end - exts) : strlen(exts);

		if (n == len && strncmp(exts, name, len) == 0)
			return true;
		exts = end ? end + 1 : NULL;
	}
	return false;
}

static EGLDisplay
open_device_sw(void)
{
	PFNEGLQUERYDEVICESEXTPROC query_devices =
		(PFNEGLQUERYDEVICESEXTPROC)eglGetProcAddress("eglQueryDevicesEXT");
	PFNEGLQUERYDEVICESTRINGEXTPROC query_string =
		(PFNEGLQUERYDEVICESTRINGEXTPROC)eglGetProcAddress("eglQueryDeviceStringEXT");
	PFNEGLGETPLATFORMDISPLAYEXTPROC get_display =
		(PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
	const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
	EGLDeviceEXT devs[16];
	EGLint n = 0;

	if (!client || !has_ext(client, "EGL_EXT_device_enumeration") ||
	    !has_ext(client, "EGL_EXT_platform_device") || !query_devices || !query_string ||
	    !get_display)
		return EGL_NO_DISPLAY;
	if (!query_devices(16, devs, &n))
		return EGL_NO_DISPLAY;
	for (EGLint i = 0; i < n; i++) {
		const char *exts = query_string(devs[i], EGL_EXTENSIONS);

		if (exts && has_ext(exts, "EGL_MESA_device_software"))
			return get_display(EGL_PLATFORM_DEVICE_EXT, devs[i], NULL);
	}
	return EGL_NO_DISPLAY;
}

static EGLDisplay
open_surfaceless(void)
{
	PFNEGLGETPLATFORMDISPLAYEXTPROC get_display =
		(PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
	const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);

	if (!client || !has_ext(client, "EGL_MESA_platform_surfaceless") || !get_display)
		return EGL_NO_DISPLAY;
	return get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
}

void
eglt_no_disk_cache(void)
{
	setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
}

bool
eglt_disk_cache_running(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue; /* the thread has just ended */
		if (fgets(comm, sizeof(comm), f))
			found = strstr(comm, "disk$") != NULL; /* util_queue "disk$": "<prog>:disk$0" */
		fclose(f);
	}
	closedir(d);
	return found;
}

int
eglt_open(struct eglt *t, enum eglt_platform platform)
{
	static const EGLint ctx_attribs[] = { EGL_CONTEXT_CLIENT_VERSION, 2, EGL_NONE };
	EGLint major, minor;
	const char *exts;

	eglt_no_disk_cache();
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
		printf("# eglt: no %s EGL display\n",
		       platform == EGLT_DEVICE_SW ? "software-device" : "usable");
		return -ENODEV;
	}
	if (!eglInitialize(t->dpy, &major, &minor)) {
		printf("# eglt: eglInitialize(%s) failed: 0x%x\n", t->platform, eglGetError());
		t->dpy = EGL_NO_DISPLAY;
		return -ENODEV;
	}
	exts = eglQueryString(t->dpy, EGL_EXTENSIONS);
	if (!has_ext(exts, "EGL_KHR_no_config_context") ||
	    !has_ext(exts, "EGL_KHR_surfaceless_context")) {
		printf("# eglt: %s display lacks configless/surfaceless contexts\n", t->platform);
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
	printf("# eglt: %s display, EGL %d.%d, GL_RENDERER %s\n", t->platform, major, minor,
	       (const char *)glGetString(GL_RENDERER));
	return 0;

fail:
	printf("# eglt: context setup on %s failed: 0x%x\n", t->platform, eglGetError());
	eglt_close(t);
	return -ENODEV;
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

static int
finish_fbo(struct eglt_target *out)
{
	glGenFramebuffers(1, &out->fbo);
	glBindFramebuffer(GL_FRAMEBUFFER, out->fbo);
	glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, out->tex, 0);
	GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
	if (status != GL_FRAMEBUFFER_COMPLETE) {
		printf("# eglt: framebuffer incomplete: 0x%x\n", status);
		return -EIO;
	}
	glViewport(0, 0, out->width, out->height);
	return 0;
}

int
eglt_target_create(struct eglt *t, int width, int height, struct eglt_target *out)
{
	(void)t;
	memset(out, 0, sizeof(*out));
	out->image = EGL_NO_IMAGE_KHR;
	out->width = width;
	out->height = height;
	glGenTextures(1, &out->tex);
	glBindTexture(GL_TEXTURE_2D, out->tex);
	glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
	glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
	glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
	return finish_fbo(out);
}

int
eglt_target_import(struct eglt *t, int dmabuf_fd, int width, int height, int pitch,
		   struct eglt_target *out)
{
	PFNEGLCREATEIMAGEKHRPROC create_image =
		(PFNEGLCREATEIMAGEKHRPROC)eglGetProcAddress("eglCreateImageKHR");
	PFNGLEGLIMAGETARGETTEXTURE2DOESPROC image_target =
		(PFNGLEGLIMAGETARGETTEXTURE2DOESPROC)eglGetProcAddress("glEGLImageTargetTexture2DOES");
	const char *exts = eglQueryString(t->dpy, EGL_EXTENSIONS);
	const EGLint attribs[] = {
		EGL_WIDTH, width,
		EGL_HEIGHT, height,
		EGL_LINUX_DRM_FOURCC_EXT, DRM_FORMAT_ARGB8888,
		EGL_DMA_BUF_PLANE0_FD_EXT, dmabuf_fd,
		EGL_DMA_BUF_PLANE0_OFFSET_EXT, 0,
		EGL_DMA_BUF_PLANE0_PITCH_EXT, pitch,
		EGL_NONE,
	};

	memset(out, 0, sizeof(*out));
	out->image = EGL_NO_IMAGE_KHR;
	out->width = width;
	out->height = height;
	if (!has_ext(exts, "EGL_EXT_image_dma_buf_import") || !create_image || !image_target) {
		printf("# eglt: %s display cannot import dma-bufs\n", t->platform);
		return -ENODEV;
	}
	out->image = create_image(t->dpy, EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, NULL, attribs);
	if (out->image == EGL_NO_IMAGE_KHR) {
		printf("# eglt: eglCreateImageKHR(dma-buf) on %s failed: 0x%x\n", t->platform,
		       eglGetError());
		return -ENODEV;
	}
	glGenTextures(1, &out->tex);
	glBindTexture(GL_TEXTURE_2D, out->tex);
	glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
	glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
	image_target(GL_TEXTURE_2D, (GLeglImageOES)out->image);
	if (glGetError() != GL_NO_ERROR) {
		printf("# eglt: glEGLImageTargetTexture2DOES failed\n");
		return -EIO;
	}
	return finish_fbo(out);
}

void
eglt_target_destroy(struct eglt *t, struct eglt_target *target)
{
	PFNEGLDESTROYIMAGEKHRPROC destroy_image =
		(PFNEGLDESTROYIMAGEKHRPROC)eglGetProcAddress("eglDestroyImageKHR");

	if (target->fbo)
		glDeleteFramebuffers(1, &target->fbo);
	if (target->tex)
		glDeleteTextures(1, &target->tex);
	if (target->image != EGL_NO_IMAGE_KHR && destroy_image)
		destroy_image(t->dpy, target->image);
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

long
eglt_count(struct eglt_target *target, uint8_t value, int *first)
{
	size_t n = (size_t)target->width * (size_t)target->height;
	uint8_t *px = malloc(n * 4);
	long count = 0;

	if (!px)
		return -1;
	glBindFramebuffer(GL_FRAMEBUFFER, target->fbo);
	glReadPixels(0, 0, target->width, target->height, GL_RGBA, GL_UNSIGNED_BYTE, px);
	if (glGetError() != GL_NO_ERROR) {
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

static GLuint
compile(GLenum type, const char *src)
{
	GLuint s = glCreateShader(type);
	GLint ok = 0;

	glShaderSource(s, 1, &src, NULL);
	glCompileShader(s);
	glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
	if (!ok) {
		char log[512] = "";

		glGetShaderInfoLog(s, sizeof(log), NULL, log);
		printf("# eglt: shader compile failed: %s\n", log);
		glDeleteShader(s);
		return 0;
	}
	return s;
}

int
eglt_blit_init(struct eglt_blit *b)
{
	static const char vs[] =
		"attribute vec2 pos;\n"
		"varying vec2 uv;\n"
		"void main() { uv = pos * 0.5 + 0.5; gl_Position = vec4(pos, 0.0, 1.0); }\n";
	static const char fs[] =
		"precision mediump float;\n"
		"varying vec2 uv;\n"
		"uniform sampler2D tex;\n"
		"void main() { gl_FragColor = texture2D(tex, uv); }\n";
	GLuint v = compile(GL_VERTEX_SHADER, vs), f = compile(GL_FRAGMENT_SHADER, fs);
	GLint ok = 0;

	b->program = 0;
	if (!v || !f)
		return -EIO;
	b->program = glCreateProgram();
	glAttachShader(b->program, v);
	glAttachShader(b->program, f);
	glBindAttribLocation(b->program, 0, "pos");
	glLinkProgram(b->program);
	glDeleteShader(v);
	glDeleteShader(f);
	glGetProgramiv(b->program, GL_LINK_STATUS, &ok);
	if (!ok) {
		printf("# eglt: program link failed\n");
		glDeleteProgram(b->program);
		b->program = 0;
		return -EIO;
	}
	return 0;
}

void
eglt_blit(struct eglt_blit *b, GLuint src_tex, struct eglt_target *dst)
{
	static const GLfloat quad[] = { -1, -1, 1, -1, -1, 1, 1, 1 };

	glBindFramebuffer(GL_FRAMEBUFFER, dst->fbo);
	glViewport(0, 0, dst->width, dst->height);
	glUseProgram(b->program);
	glActiveTexture(GL_TEXTURE0);
	glBindTexture(GL_TEXTURE_2D, src_tex);
	glUniform1i(glGetUniformLocation(b->program, "tex"), 0);
	glBindBuffer(GL_ARRAY_BUFFER, 0);
	glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, quad);
	glEnableVertexAttribArray(0);
	glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
	glDisableVertexAttribArray(0);
}

void
eglt_blit_finish(struct eglt_blit *b)
{
	if (b->program)
		glDeleteProgram(b->program);
	b->program = 0;
}

const char *
eglt_gl_error(void)
{
	switch (glGetError()) {
	case GL_NO_ERROR:
		return "GL_NO_ERROR";
	case GL_INVALID_ENUM:
		return "GL_INVALID_ENUM";
	case GL_INVALID_VALUE:
		return "GL_INVALID_VALUE";
	case GL_INVALID_OPERATION:
		return "GL_INVALID_OPERATION";
	case GL_INVALID_FRAMEBUFFER_OPERATION:
		return "GL_INVALID_FRAMEBUFFER_OPERATION";
	case GL_OUT_OF_MEMORY:
		return "GL_OUT_OF_MEMORY";
	default:
		return "GL error";
	}
}
