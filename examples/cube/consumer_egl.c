/* SPDX-License-Identifier: MIT */
/*
 * The cube demo's EGL/GLES consumer: every ring buffer is imported once as an
 * EGLImage (EGL_EXT_image_dma_buf_import) on the EGL device platform's
 * software device — llvmpipe, which maps the dma-buf, the one EGL display in
 * the test guest that reads a vgem buffer — and each frame is composited into
 * a texture of the consumer's own:
 *
 *   sb_egl_dmabuf_wait(READ)    GL waits for the buffer's writers (GPU-side
 *                               when the display has native fences)
 *   draw: texelFetch → own FBO  the read
 *   sb_egl_dmabuf_attach(READ)  the buffer's next writer waits for this read
 *
 * With SYNCBRIDGE_DISABLE=1 the two bridge calls are no-ops.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl3.h>
#include <GLES2/gl2ext.h>

#include <syncbridge/egl.h>

#include "cube.h"
#include "demo_util.h"

#define PROG "syncbridge-demo-cube"

struct cube_consumer {
	EGLDisplay dpy;
	EGLContext ctx;
	struct cube_buffers bufs;
	EGLImageKHR images[CUBE_MAX_BUFFERS];
	GLuint textures[CUBE_MAX_BUFFERS];
	GLuint target_tex, target_fbo;
	GLuint program, vao;
	uint32_t caps;
	char description[160];
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

/* The EGL device whose extensions list EGL_MESA_device_software. */
static EGLDisplay
open_software_device(void)
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
	    !get_display || !query_devices(16, devs, &n))
		return EGL_NO_DISPLAY;
	for (EGLint i = 0; i < n; i++) {
		const char *exts = query_string(devs[i], EGL_EXTENSIONS);
		if (exts && has_ext(exts, "EGL_MESA_device_software"))
			return get_display(EGL_PLATFORM_DEVICE_EXT, devs[i], NULL);
	}
	return EGL_NO_DISPLAY;
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
		fprintf(stderr, PROG ": consumer: shader: %s\n", log);
		glDeleteShader(s);
		return 0;
	}
	return s;
}

static const char vs_src[] =
	"#version 300 es\n"
	"void main() {\n"
	"  vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);\n"
	"  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);\n"
	"}\n";
/* One texel per pixel, alpha (the stamp) included. Row y of the target is
 * row y of the buffer, so glReadPixels returns the buffer's memory order. */
static const char fs_src[] =
	"#version 300 es\n"
	"precision highp float;\n"
	"uniform highp sampler2D frame;\n"
	"out vec4 color;\n"
	"void main() {\n"
	"  color = texelFetch(frame, ivec2(gl_FragCoord.xy), 0);\n"
	"}\n";

static void
consumer_destroy(struct cube_consumer *c)
{
	if (!c)
		return;
	if (c->dpy != EGL_NO_DISPLAY) {
		PFNEGLDESTROYIMAGEKHRPROC destroy_image =
			(PFNEGLDESTROYIMAGEKHRPROC)eglGetProcAddress("eglDestroyImageKHR");
		if (c->ctx != EGL_NO_CONTEXT) {
			glDeleteTextures((GLsizei)c->bufs.count, c->textures);
			glDeleteTextures(1, &c->target_tex);
			glDeleteFramebuffers(1, &c->target_fbo);
			glDeleteProgram(c->program);
			glDeleteVertexArrays(1, &c->vao);
		}
		for (unsigned i = 0; i < c->bufs.count; i++)
			if (c->images[i] != EGL_NO_IMAGE_KHR && destroy_image)
				destroy_image(c->dpy, c->images[i]);
		eglMakeCurrent(c->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
		if (c->ctx != EGL_NO_CONTEXT)
			eglDestroyContext(c->dpy, c->ctx);
		eglTerminate(c->dpy);
		eglReleaseThread();
	}
	for (unsigned i = 0; i < c->bufs.count; i++)
		demo_fd_clear(&c->bufs.fds[i]);
	free(c);
}

static int
consumer_init(struct cube_consumer **out, struct cube_buffers *bufs, bool verbose)
{
	static const EGLint ctx_attribs[] = { EGL_CONTEXT_MAJOR_VERSION, 3, EGL_NONE };
	struct cube_consumer *c = calloc(1, sizeof(*c));
	int ret = -ENODEV;

	*out = NULL;
	if (!c) {
		for (unsigned i = 0; i < bufs->count; i++)
			demo_fd_clear(&bufs->fds[i]);
		return -ENOMEM;
	}
	c->bufs = *bufs; /* the fds are ours now */
	for (unsigned i = 0; i < bufs->count; i++)
		bufs->fds[i] = -1;
	c->ctx = EGL_NO_CONTEXT;
	for (unsigned i = 0; i < CUBE_MAX_BUFFERS; i++)
		c->images[i] = EGL_NO_IMAGE_KHR;

	c->dpy = open_software_device();
	if (c->dpy == EGL_NO_DISPLAY) {
		fprintf(stderr, PROG ": consumer: no EGL software device (EGL_MESA_device_software)\n");
		goto fail;
	}
	EGLint major, minor;
	if (!eglInitialize(c->dpy, &major, &minor)) {
		fprintf(stderr, PROG ": consumer: eglInitialize: 0x%x\n", eglGetError());
		c->dpy = EGL_NO_DISPLAY;
		goto fail;
	}
	const char *exts = eglQueryString(c->dpy, EGL_EXTENSIONS);
	if (!has_ext(exts, "EGL_KHR_no_config_context") ||
	    !has_ext(exts, "EGL_KHR_surfaceless_context") ||
	    !has_ext(exts, "EGL_EXT_image_dma_buf_import")) {
		fprintf(stderr, PROG ": consumer: the EGL software device lacks configless/"
			"surfaceless contexts or dma-buf import\n");
		goto fail;
	}
	if (!eglBindAPI(EGL_OPENGL_ES_API))
		goto fail_egl;
	c->ctx = eglCreateContext(c->dpy, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, ctx_attribs);
	if (c->ctx == EGL_NO_CONTEXT || !eglMakeCurrent(c->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, c->ctx))
		goto fail_egl;

	PFNEGLCREATEIMAGEKHRPROC create_image =
		(PFNEGLCREATEIMAGEKHRPROC)eglGetProcAddress("eglCreateImageKHR");
	PFNGLEGLIMAGETARGETTEXTURE2DOESPROC image_target =
		(PFNGLEGLIMAGETARGETTEXTURE2DOESPROC)eglGetProcAddress("glEGLImageTargetTexture2DOES");
	if (!create_image || !image_target)
		goto fail_egl;
	glGenTextures((GLsizei)c->bufs.count, c->textures);
	for (unsigned i = 0; i < c->bufs.count; i++) {
		const EGLint attribs[] = {
			EGL_WIDTH, (EGLint)c->bufs.width,
			EGL_HEIGHT, (EGLint)c->bufs.height,
			EGL_LINUX_DRM_FOURCC_EXT, (EGLint)c->bufs.drm_format,
			EGL_DMA_BUF_PLANE0_FD_EXT, c->bufs.fds[i],
			EGL_DMA_BUF_PLANE0_OFFSET_EXT, (EGLint)c->bufs.offset,
			EGL_DMA_BUF_PLANE0_PITCH_EXT, (EGLint)c->bufs.pitch,
			EGL_NONE,
		};
		/* EGL takes its own reference to the dma-buf; we keep our fd for
		 * the bridge's fence calls. */
		c->images[i] = create_image(c->dpy, EGL_NO_CONTEXT, EGL_LINUX_DMA_BUF_EXT, NULL,
					    attribs);
		if (c->images[i] == EGL_NO_IMAGE_KHR) {
			fprintf(stderr, PROG ": consumer: eglCreateImageKHR(dma-buf %u): 0x%x\n", i,
				eglGetError());
			goto fail;
		}
		glBindTexture(GL_TEXTURE_2D, c->textures[i]);
		glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
		glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
		image_target(GL_TEXTURE_2D, (GLeglImageOES)c->images[i]);
	}

	glGenTextures(1, &c->target_tex);
	glBindTexture(GL_TEXTURE_2D, c->target_tex);
	glTexStorage2D(GL_TEXTURE_2D, 1, GL_RGBA8, (GLsizei)c->bufs.width, (GLsizei)c->bufs.height);
	glGenFramebuffers(1, &c->target_fbo);
	glBindFramebuffer(GL_FRAMEBUFFER, c->target_fbo);
	glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, c->target_tex, 0);
	if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) {
		fprintf(stderr, PROG ": consumer: composite framebuffer incomplete\n");
		goto fail;
	}
	GLuint vs = compile(GL_VERTEX_SHADER, vs_src), fs = compile(GL_FRAGMENT_SHADER, fs_src);
	if (!vs || !fs)
		goto fail;
	c->program = glCreateProgram();
	glAttachShader(c->program, vs);
	glAttachShader(c->program, fs);
	glLinkProgram(c->program);
	glDeleteShader(vs);
	glDeleteShader(fs);
	GLint linked = 0;
	glGetProgramiv(c->program, GL_LINK_STATUS, &linked);
	if (!linked)
		goto fail;
	glGenVertexArrays(1, &c->vao);
	if (glGetError() != GL_NO_ERROR) {
		fprintf(stderr, PROG ": consumer: GL setup failed\n");
		goto fail;
	}

	sb_egl_display_get_caps(c->dpy, &c->caps);
	snprintf(c->description, sizeof(c->description),
		 "EGL %d.%d on %s; bridge: %s", major, minor,
		 (const char *)glGetString(GL_RENDERER),
		 (c->caps & SB_EGL_CAP_DISABLED) ? "off (SYNCBRIDGE_DISABLE=1)"
		 : (c->caps & SB_EGL_CAP_GPU_WAIT) ? "GPU-side waits (native fence sync)"
						   : "CPU waits (no native fence sync)");
	(void)verbose;
	*out = c;
	return 0;

fail_egl:
	fprintf(stderr, PROG ": consumer: EGL context setup failed: 0x%x\n", eglGetError());
fail:
	consumer_destroy(c);
	return ret;
}

static int
consumer_composite(struct cube_consumer *c, unsigned index)
{
	int fd = c->bufs.fds[index];
	int ret;

	/* GL must not read before the producer's writes are done. */
	ret = sb_egl_dmabuf_wait(c->dpy, fd, SB_ACCESS_READ);
	if (ret < 0) {
		fprintf(stderr, PROG ": consumer: sb_egl_dmabuf_wait: %s\n", strerror(-ret));
		return ret;
	}
	glBindFramebuffer(GL_FRAMEBUFFER, c->target_fbo);
	glViewport(0, 0, (GLsizei)c->bufs.width, (GLsizei)c->bufs.height);
	glDisable(GL_BLEND);
	glUseProgram(c->program);
	glBindVertexArray(c->vao);
	glActiveTexture(GL_TEXTURE0);
	glBindTexture(GL_TEXTURE_2D, c->textures[index]);
	glUniform1i(glGetUniformLocation(c->program, "frame"), 0);
	glDrawArrays(GL_TRIANGLES, 0, 3);
	/* The producer's next write to this buffer must wait for our read. */
	ret = sb_egl_dmabuf_attach(c->dpy, fd, SB_ACCESS_READ);
	if (ret < 0) {
		fprintf(stderr, PROG ": consumer: sb_egl_dmabuf_attach: %s\n", strerror(-ret));
		return ret;
	}
	return 0;
}

static int
consumer_finish(struct cube_consumer *c)
{
	(void)c;
	glFinish();
	return glGetError() == GL_NO_ERROR ? 0 : -EIO;
}

static int
consumer_read_back(struct cube_consumer *c, uint8_t *rgba)
{
	glBindFramebuffer(GL_FRAMEBUFFER, c->target_fbo);
	glPixelStorei(GL_PACK_ALIGNMENT, 4);
	glReadPixels(0, 0, (GLsizei)c->bufs.width, (GLsizei)c->bufs.height, GL_RGBA,
		     GL_UNSIGNED_BYTE, rgba);
	return glGetError() == GL_NO_ERROR ? 0 : -EIO;
}

static const char *
consumer_describe(struct cube_consumer *c)
{
	return c->description;
}

const struct cube_backend cube_backend_egl = {
	.name = "egl",
	.init = consumer_init,
	.composite = consumer_composite,
	.finish = consumer_finish,
	.read_back = consumer_read_back,
	.describe = consumer_describe,
	.destroy = consumer_destroy,
};
