/* SPDX-License-Identifier: MIT */
#include "egl_display.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl3.h>
#include <GLES2/gl2ext.h>
#include <drm_fourcc.h>

#include <syncbridge/egl.h>

#define PROG "syncbridge-demo-camera"
#define MAX 16

struct egl_display {
	EGLDisplay dpy;
	EGLContext ctx;
	unsigned count;
	uint32_t width, height;
	int fds[MAX]; /* borrowed */
	EGLImageKHR images[MAX];
	GLuint textures[MAX];
	GLuint target, fbo, program, vao;
	uint8_t *rgba;
	char description[200];
};

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
open_software_device(void)
{
	PFNEGLQUERYDEVICESEXTPROC query_devices =
		(PFNEGLQUERYDEVICESEXTPROC)eglGetProcAddress("eglQueryDevicesEXT");
	PFNEGLQUERYDEVICESTRINGEXTPROC query_string =
		(PFNEGLQUERYDEVICESTRINGEXTPROC)eglGetProcAddress("eglQueryDeviceStringEXT");
	PFNEGLGETPLATFORMDISPLAYEXTPROC get_display =
		(PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
	EGLDeviceEXT devs[16];
	EGLint n = 0;

	if (!query_devices || !query_string || !get_display || !query_devices(16, devs, &n))
		return EGL_NO_DISPLAY;
	for (EGLint i = 0; i < n; i++) {
		const char *exts = query_string(devs[i], EGL_EXTENSIONS);
		if (exts && has_ext(exts, "EGL_MESA_device_software"))
			return get_display(EGL_PLATFORM_DEVICE_EXT, devs[i], NULL);
	}
	return EGL_NO_DISPLAY;
}

static const char vs_src[] =
	"#version 300 es\n"
	"void main() {\n"
	"  vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);\n"
	"  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);\n"
	"}\n";
/* YUYV (BT.601, limited range) read as ARGB8888 texels of two pixels each:
 * .b = Y0, .g = U, .r = Y1, .a = V. */
static const char fs_src[] =
	"#version 300 es\n"
	"precision highp float;\n"
	"uniform highp sampler2D frame;\n"
	"out vec4 color;\n"
	"void main() {\n"
	"  ivec2 p = ivec2(gl_FragCoord.xy);\n"
	"  vec4 t = texelFetch(frame, ivec2(p.x / 2, p.y), 0);\n"
	"  float y = ((p.x & 1) == 0 ? t.b : t.r) - 16.0 / 255.0;\n"
	"  float u = t.g - 0.5, v = t.a - 0.5;\n"
	"  color = vec4(clamp(vec3(1.164 * y + 1.596 * v, 1.164 * y - 0.392 * u - 0.813 * v,\n"
	"                          1.164 * y + 2.017 * u), 0.0, 1.0), 1.0);\n"
	"}\n";

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
		fprintf(stderr, PROG ": display: shader: %s\n", log);
		glDeleteShader(s);
		return 0;
	}
	return s;
}

static int
setup(struct egl_display *d, uint32_t stride)
{
	static const EGLint ctx_attribs[] = { EGL_CONTEXT_MAJOR_VERSION, 3, EGL_NONE };
	EGLint major, minor;

	d->dpy = open_software_device();
	if (d->dpy == EGL_NO_DISPLAY) {
		fprintf(stderr, PROG ": display: no EGL software device\n");
		return -ENODEV;
	}
	if (!eglInitialize(d->dpy, &major, &minor)) {
		d->dpy = EGL_NO_DISPLAY;
		return -ENODEV;
	}
	const char *exts = eglQueryString(d->dpy, EGL_EXTENSIONS);
	if (!has_ext(exts, "EGL_KHR_no_config_context") ||
	    !has_ext(exts, "EGL_KHR_surfaceless_context") ||
	    !has_ext(exts, "EGL_EXT_image_dma_buf_import"))
		return -ENODEV;
	if (!eglBindAPI(EGL_OPENGL_ES_API))
		return -EIO;
	d->ctx = eglCreateContext(d->dpy, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, ctx_attribs);
	if (d->ctx == EGL_NO_CONTEXT || !eglMakeCurrent(d->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, d->ctx))
		return -EIO;

	PFNEGLCREATEIMAGEKHRPROC create_image =
		(PFNEGLCREATEIMAGEKHRPROC)eglGetProcAddress("eglCreateImageKHR");
	PFNGLEGLIMAGETARGETTEXTURE2DOESPROC image_target =
		(PFNGLEGLIMAGETARGETTEXTURE2DOESPROC)eglGetProcAddress("glEGLImageTargetTexture2DOES");
	if (!create_image || !image_target)
		return -EIO;
	glGenTextures((GLsizei)d->count, d->textures);
	for (unsigned i = 0; i < d->count; i++) {
		const EGLint attribs[] = {
			EGL_WIDTH, (EGLint)(d->width / 2),
			EGL_HEIGHT, (EGLint)d->height,
			EGL_LINUX_DRM_FOURCC_EXT, DRM_FORMAT_ARGB8888,
			EGL_DMA_BUF_PLANE0_FD_EXT, d->fds[i],
			EGL_DMA_BUF_PLANE0_OFFSET_EXT, 0,
			EGL_DMA_BUF_PLANE0_PITCH_EXT, (EGLint)stride,
			EGL_NONE,
		};
		d->images[i] = create_image(d->dpy, EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, NULL, attribs);
		if (d->images[i] == EGL_NO_IMAGE_KHR) {
			fprintf(stderr, PROG ": display: eglCreateImageKHR: 0x%x\n", eglGetError());
			return -EIO;
		}
		glBindTexture(GL_TEXTURE_2D, d->textures[i]);
		glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
		glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
		image_target(GL_TEXTURE_2D, (GLeglImageOES)d->images[i]);
	}
	glGenTextures(1, &d->target);
	glBindTexture(GL_TEXTURE_2D, d->target);
	glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, (GLsizei)d->width, (GLsizei)d->height);
	glGenFramebuffers(1, &d->fbo);
	glBindFramebuffer(GL_FRAMEBUFFER, d->fbo);
	glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, d->target, 0);
	if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE)
		return -EIO;
	GLuint vs = compile(GL_VERTEX_SHADER, vs_src), fs = compile(GL_FRAGMENT_SHADER, fs_src);
	if (!vs || !fs)
		return -EIO;
	d->program = glCreateProgram();
	glAttachShader(d->program, vs);
	glAttachShader(d->program, fs);
	glLinkProgram(d->program);
	glDeleteShader(vs);
	glDeleteShader(fs);
	GLint linked = 0;
	glGetProgramiv(d->program, GL_LINK_STATUS, &linked);
	if (!linked)
		return -EIO;
	glGenVertexArrays(1, &d->vao);
	d->rgba = malloc((size_t)d->width * d->height * 4);
	if (!d->rgba)
		return -ENOMEM;
	uint32_t caps = 0;
	sb_egl_display_get_caps(d->dpy, &caps);
	snprintf(d->description, sizeof(d->description), "EGL %d.%d on %s; bridge: %s", major,
		 minor, (const char *)glGetString(GL_RENDERER),
		 (caps & SB_EGL_CAP_DISABLED) ? "off (SYNCBRIDGE_DISABLE=1)"
		 : (caps & SB_EGL_CAP_GPU_WAIT) ? "GPU-side waits" : "CPU waits");
	return glGetError() == GL_NO_ERROR ? 0 : -EIO;
}

int
egl_display_create(const int *fds, unsigned count, uint32_t width, uint32_t height,
		   uint32_t stride, struct egl_display **out)
{
	*out = NULL;
	if (count > MAX || width % 2)
		return -EINVAL;
	struct egl_display *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->dpy = EGL_NO_DISPLAY;
	d->ctx = EGL_NO_CONTEXT;
	d->count = count;
	d->width = width;
	d->height = height;
	for (unsigned i = 0; i < MAX; i++)
		d->images[i] = EGL_NO_IMAGE_KHR;
	memcpy(d->fds, fds, count * sizeof(int));
	int ret = setup(d, stride);
	if (ret < 0) {
		egl_display_destroy(d);
		return ret;
	}
	*out = d;
	return 0;
}

int
egl_display_show(struct egl_display *d, unsigned i)
{
	if (i >= d->count)
		return -EINVAL;
	int ret = sb_egl_dmabuf_wait(d->dpy, d->fds[i], SB_ACCESS_READ);
	if (ret < 0)
		return ret;
	glBindFramebuffer(GL_FRAMEBUFFER, d->fbo);
	glViewport(0, 0, (GLsizei)d->width, (GLsizei)d->height);
	glUseProgram(d->program);
	glBindVertexArray(d->vao);
	glActiveTexture(GL_TEXTURE0);
	glBindTexture(GL_TEXTURE_2D, d->textures[i]);
	glUniform1i(glGetUniformLocation(d->program, "frame"), 0);
	glDrawArrays(GL_TRIANGLES, 0, 3);
	/* The capture buffer's next writer (the camera, via the queue) waits for this read. */
	return sb_egl_dmabuf_attach(d->dpy, d->fds[i], SB_ACCESS_READ);
}

int
egl_display_read(struct egl_display *d, uint8_t *rgb)
{
	glBindFramebuffer(GL_FRAMEBUFFER, d->fbo);
	glReadPixels(0, 0, (GLsizei)d->width, (GLsizei)d->height, GL_RGBA, GL_UNSIGNED_BYTE, d->rgba);
	if (glGetError() != GL_NO_ERROR)
		return -EIO;
	/* Row y of the target is row y of the buffer: memory order, top row first. */
	size_t n = (size_t)d->width * d->height;
	for (size_t k = 0; k < n; k++)
		memcpy(rgb + 3 * k, d->rgba + 4 * k, 3);
	return 0;
}

const char *
egl_display_describe(const struct egl_display *d)
{
	return d->description;
}

void
egl_display_destroy(struct egl_display *d)
{
	if (!d)
		return;
	if (d->dpy != EGL_NO_DISPLAY) {
		PFNEGLDESTROYIMAGEKHRPROC destroy_image =
			(PFNEGLDESTROYIMAGEKHRPROC)eglGetProcAddress("eglDestroyImageKHR");
		if (d->ctx != EGL_NO_CONTEXT) {
			glDeleteTextures((GLsizei)d->count, d->textures);
			glDeleteTextures(1, &d->target);
			glDeleteFramebuffers(1, &d->fbo);
			glDeleteProgram(d->program);
			glDeleteVertexArrays(1, &d->vao);
		}
		for (unsigned i = 0; i < d->count; i++)
			if (d->images[i] != EGL_NO_IMAGE_KHR && destroy_image)
				destroy_image(d->dpy, d->images[i]);
		eglMakeCurrent(d->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
		if (d->ctx != EGL_NO_CONTEXT)
			eglDestroyContext(d->dpy, d->ctx);
		eglTerminate(d->dpy);
		eglReleaseThread();
	}
	free(d->rgba);
	free(d);
}
