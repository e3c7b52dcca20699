/* SPDX-License-Identifier: MIT */
/*
 * The cube demo's GLES producer (--producer gles): the same cube and the same
 * frame stamp as the Vulkan producer, drawn with GLES 3 on the GPU's own
 * textures — Mesa virgl in the GPU guest, whose buffers no other driver there
 * can import (docs/testing.md, "The GPU guest"). Every ring buffer is a
 * texture of this context exported as a dma-buf (EGL_MESA_image_dma_buf_export)
 * and sent to the consumer once; the consumer imports it on the same GPU.
 * Per frame N into buffer I:
 *
 *   wait until the consumer released I
 *   sb_egl_dmabuf_wait(WRITE)     GL waits for the buffer's readers (the
 *                                 consumer's read fence), GPU-side
 *   clear, cube, stamp pass       alpha = stamp, written last
 *   sb_egl_dmabuf_attach(WRITE)   the frame's fence on the dma-buf; flushes
 *   "frame N in I" ─────────────► consumer
 *
 * The frame is handed off while the GPU (the host, for virgl) still draws it:
 * the fence on the buffer is what the consumer's wait waits for.
 * --no-bridge (SYNCBRIDGE_DISABLE=1): the same program, the two bridge calls
 * do nothing; --flush adds a glFlush() before each hand-off, as a producer
 * written for implicit sync does (docs/demo.md, "On virgl", has what each
 * shows). --cpu-sync: glFinish() before the hand-off instead (figure 6's
 * floor).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm_fourcc.h>
#include <syncbridge/egl.h>

#include "cube.h"
#include "demo_util.h"
#include "eglt.h"

#define PROG "syncbridge-demo-cube"

/* cube.vert in GLSL ES: Vulkan's clip space kept (y down, depth 0..w), so
 * that row 0 of the buffer is the top of the picture as with Vulkan. */
static const char cube_vs[] =
	"#version 300 es\n"
	"uniform vec4 params; // angle, aspect, stamp, work\n"
	"out vec3 v_normal;\n"
	"out vec2 v_uv;\n"
	"out vec3 v_color;\n"
	"out vec3 v_pos;\n"
	"const vec3 normals[6] = vec3[](vec3(1, 0, 0), vec3(-1, 0, 0), vec3(0, 1, 0),\n"
	"                               vec3(0, -1, 0), vec3(0, 0, 1), vec3(0, 0, -1));\n"
	"const vec3 colors[6] = vec3[](vec3(0.95, 0.30, 0.25), vec3(0.25, 0.80, 0.35),\n"
	"                              vec3(0.30, 0.45, 0.95), vec3(0.95, 0.80, 0.25),\n"
	"                              vec3(0.80, 0.35, 0.90), vec3(0.25, 0.85, 0.90));\n"
	"const vec2 corners[6] = vec2[](vec2(-1, -1), vec2(1, -1), vec2(1, 1),\n"
	"                               vec2(-1, -1), vec2(1, 1), vec2(-1, 1));\n"
	"mat3 rot_x(float a) { float c = cos(a), s = sin(a);\n"
	"                      return mat3(1, 0, 0, 0, c, s, 0, -s, c); }\n"
	"mat3 rot_y(float a) { float c = cos(a), s = sin(a);\n"
	"                      return mat3(c, 0, -s, 0, 1, 0, s, 0, c); }\n"
	"void main() {\n"
	"  int face = gl_VertexID / 6;\n"
	"  vec2 c = corners[gl_VertexID % 6];\n"
	"  vec3 n = normals[face];\n"
	"  vec3 u = n.zxy;\n"
	"  vec3 v = abs(n).yzx;\n"
	"  vec3 p = n + c.x * u + c.y * v;\n"
	"  mat3 model = rot_y(0.6 + params.x) * rot_x(0.45 + params.x * 0.7);\n"
	"  vec3 world = model * (p * 0.9);\n"
	"  v_normal = model * n;\n"
	"  v_uv = c;\n"
	"  v_color = colors[face];\n"
	"  v_pos = world;\n"
	"  vec3 view = world - vec3(0, 0, 4);\n"
	"  float f = 1.0 / tan(radians(20.0));\n"
	"  float near = 0.5, far = 10.0;\n"
	"  gl_Position = vec4(view.x * f / params.y, -view.y * f,\n"
	"                     view.z * far / (near - far) + far * near / (near - far), -view.z);\n"
	"}\n";

/* cube.frag in GLSL ES: a lit face with a Julia-set pattern, `work` iterations. */
static const char cube_fs[] =
	"#version 300 es\n"
	"precision highp float;\n"
	"uniform vec4 params;\n"
	"in vec3 v_normal;\n"
	"in vec2 v_uv;\n"
	"in vec3 v_color;\n"
	"in vec3 v_pos;\n"
	"out vec4 o_color;\n"
	"void main() {\n"
	"  vec2 z = v_uv * 1.5;\n"
	"  vec2 c = vec2(-0.75 + 0.08 * sin(params.x * 2.0), 0.16 + 0.05 * cos(params.x * 3.0));\n"
	"  float glow = 0.0;\n"
	"  int iters = int(params.w);\n"
	"  for (int i = 0; i < iters; i++) {\n"
	"    z = clamp(vec2(z.x * z.x - z.y * z.y, 2.0 * z.x * z.y) + c, -4.0, 4.0);\n"
	"    glow += exp(-4.0 * dot(z, z));\n"
	"  }\n"
	"  float pattern = iters > 0 ? clamp(glow / float(iters) * 6.0, 0.0, 1.0) : 0.5;\n"
	"  vec3 base = mix(v_color * 0.25, v_color, pattern);\n"
	"  float edge = max(abs(v_uv.x), abs(v_uv.y));\n"
	"  base = mix(base, vec3(0.95), smoothstep(0.90, 0.94, edge));\n"
	"  vec3 n = normalize(v_normal);\n"
	"  vec3 l = normalize(vec3(0.5, 0.8, 0.9));\n"
	"  vec3 e = normalize(vec3(0.0, 0.0, 4.0) - v_pos);\n"
	"  float diffuse = max(dot(n, l), 0.0);\n"
	"  float specular = pow(max(dot(reflect(-l, n), e), 0.0), 24.0);\n"
	"  o_color = vec4(base * (0.25 + 0.75 * diffuse) + vec3(0.5 * specular), 0.0);\n"
	"}\n";

/* stamp.vert + stamp.frag: one triangle over the frame, alpha only (the mask). */
static const char stamp_vs[] =
	"#version 300 es\n"
	"void main() {\n"
	"  vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);\n"
	"  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);\n"
	"}\n";
static const char stamp_fs[] =
	"#version 300 es\n"
	"precision highp float;\n"
	"uniform vec4 params;\n"
	"out vec4 o_color;\n"
	"void main() {\n"
	"  o_color = vec4(0.0, 0.0, 0.0, params.z / 255.0);\n"
	"}\n";

struct gles_producer {
	const struct cube_options *opt;
	struct eglt egl;
	struct eglt_target ring[CUBE_MAX_BUFFERS];
	int fds[CUBE_MAX_BUFFERS];
	bool free[CUBE_MAX_BUFFERS];
	struct eglt_dmabuf_layout layout;
	GLuint depth, vao, cube_prog, stamp_prog;
	GLint cube_params, stamp_params;
};

static void
producer_finish(struct gles_producer *p)
{
	if (p->egl.ctx != EGL_NO_CONTEXT) {
		glFinish();
		for (unsigned i = 0; i < CUBE_MAX_BUFFERS; i++)
			eglt_target_destroy(&p->egl, &p->ring[i]);
		if (p->depth)
			glDeleteRenderbuffers(1, &p->depth);
		if (p->vao)
			glDeleteVertexArrays(1, &p->vao);
		if (p->cube_prog)
			glDeleteProgram(p->cube_prog);
		if (p->stamp_prog)
			glDeleteProgram(p->stamp_prog);
	}
	eglt_close(&p->egl);
	for (unsigned i = 0; i < CUBE_MAX_BUFFERS; i++)
		demo_fd_clear(&p->fds[i]);
}

/* The ring: textures with a shared depth buffer, exported, "no frame yet". */
static int
create_ring(struct gles_producer *p)
{
	const struct cube_options *opt = p->opt;
	int ret;

	glGenRenderbuffers(1, &p->depth);
	glBindRenderbuffer(GL_RENDERBUFFER, p->depth);
	glRenderbufferStorage(GL_RENDERBUFFER, GL_DEPTH_COMPONENT24, (GLsizei)opt->width,
			      (GLsizei)opt->height);
	for (unsigned i = 0; i < opt->buffers; i++) {
		struct eglt_dmabuf_layout layout;

		ret = eglt_target_create(&p->egl, (int)opt->width, (int)opt->height, &p->ring[i]);
		if (ret == 0)
			ret = eglt_target_export(&p->egl, &p->ring[i], &p->fds[i], &layout);
		if (ret < 0) {
			fprintf(stderr, PROG ": producer: exporting a texture as a dma-buf: %s\n",
				strerror(-ret));
			return ret;
		}
		if (i > 0 && memcmp(&layout, &p->layout, sizeof(layout)) != 0) {
			fprintf(stderr, PROG ": producer: the ring's textures export with "
				"different layouts\n");
			return -ENODEV;
		}
		p->layout = layout;
		glBindFramebuffer(GL_FRAMEBUFFER, p->ring[i].fbo);
		glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER,
					  p->depth);
		if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) {
			fprintf(stderr, PROG ": producer: incomplete framebuffer with depth\n");
			return -EIO;
		}
		/* Black, alpha CUBE_ALPHA_INITIAL: "no frame yet". */
		glClearColor(0.0f, 0.0f, 0.0f, CUBE_ALPHA_INITIAL / 255.0f);
		glClear(GL_COLOR_BUFFER_BIT);
		p->free[i] = true;
	}
	/* Complete before anyone else sees the buffers. */
	glFinish();
	return glGetError() == GL_NO_ERROR ? 0 : -EIO;
}

static int
create_programs(struct gles_producer *p)
{
	p->cube_prog = eglt_program(cube_vs, cube_fs);
	p->stamp_prog = eglt_program(stamp_vs, stamp_fs);
	if (!p->cube_prog || !p->stamp_prog)
		return -EIO;
	p->cube_params = glGetUniformLocation(p->cube_prog, "params");
	p->stamp_params = glGetUniformLocation(p->stamp_prog, "params");
	glGenVertexArrays(1, &p->vao);
	return glGetError() == GL_NO_ERROR ? 0 : -EIO;
}

static void
draw(struct gles_producer *p, unsigned i, unsigned frame)
{
	const struct cube_options *opt = p->opt;
	float angle = (float)frame * 0.05f, aspect = (float)opt->width / (float)opt->height;
	float stamp = (float)cube_stamp(frame), work = (float)opt->work;

	glBindFramebuffer(GL_FRAMEBUFFER, p->ring[i].fbo);
	glViewport(0, 0, (GLsizei)opt->width, (GLsizei)opt->height);
	glBindVertexArray(p->vao);
	glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
	glDepthMask(GL_TRUE);
	/* Alpha CUBE_ALPHA_CLEAR: "frame in progress". */
	glClearColor(0.06f, 0.07f, 0.12f, CUBE_ALPHA_CLEAR / 255.0f);
	glClearDepthf(1.0f);
	glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
	glEnable(GL_DEPTH_TEST);
	glDepthFunc(GL_LESS);
	glUseProgram(p->cube_prog);
	glUniform4f(p->cube_params, angle, aspect, stamp, work);
	glDrawArrays(GL_TRIANGLES, 0, 36);
	/* The stamp, last, over every pixel, into alpha only. */
	glDisable(GL_DEPTH_TEST);
	glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_TRUE);
	glUseProgram(p->stamp_prog);
	glUniform4f(p->stamp_params, angle, aspect, stamp, work);
	glDrawArrays(GL_TRIANGLES, 0, 3);
	glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
}

/* Hand the frame in buffer i over: the bridge's attach, or a flush, or a finish. */
static int
hand_off(struct gles_producer *p, unsigned i)
{
	const struct cube_options *opt = p->opt;
	int ret;

	if (opt->cpu_sync) {
		glFinish();
		return glGetError() == GL_NO_ERROR ? 0 : -EIO;
	}
	/* A no-op with SYNCBRIDGE_DISABLE=1. */
	ret = sb_egl_dmabuf_attach(p->egl.dpy, p->fds[i], SB_ACCESS_WRITE);
	if (ret < 0) {
		fprintf(stderr, PROG ": producer: sb_egl_dmabuf_attach: %s\n", strerror(-ret));
		return ret;
	}
	if (opt->no_bridge && opt->flush)
		glFlush();
	return 0;
}

int
cube_producer_gles_run(int sock, const struct cube_options *opt)
{
	struct gles_producer p = { .opt = opt };
	char description[160];
	int ret;

	for (unsigned i = 0; i < CUBE_MAX_BUFFERS; i++)
		p.fds[i] = -1;
	eglt_set_log(stderr, PROG ": producer: ");
	eglt_no_disk_cache();
	/* Surfaceless: the GPU's driver (virgl in the GPU guest), not the
	 * software device the Vulkan pipeline's consumer uses. */
	ret = eglt_open_gles(&p.egl, EGLT_SURFACELESS, 3);
	if (ret < 0)
		goto out;
	eglt_describe(&p.egl, description, sizeof(description));
	printf("producer: GLES, %s\n", description);
	fflush(stdout);
	ret = create_ring(&p);
	if (ret == 0)
		ret = create_programs(&p);
	if (ret < 0)
		goto out;

	struct cube_msg m = {
		.pitch = (uint32_t)p.layout.pitch,
		.offset = (uint32_t)p.layout.offset,
		.drm_format = p.layout.fourcc,
		.modifier = p.layout.modifier,
	};
	ret = cube_send_ring(sock, opt, &m, p.fds);
	if (ret < 0)
		goto out;

	double handoff_ms = 0;
	for (unsigned frame = 0; frame < opt->frames; frame++) {
		unsigned i = frame % opt->buffers;

		ret = cube_wait_free(sock, opt, p.free, i);
		if (ret < 0)
			goto out;
		int64_t t0 = now_ns();
		/* The consumer's read of this buffer before GL writes it again. */
		if (!opt->cpu_sync) {
			ret = sb_egl_dmabuf_wait(p.egl.dpy, p.fds[i], SB_ACCESS_WRITE);
			if (ret < 0) {
				fprintf(stderr, PROG ": producer: sb_egl_dmabuf_wait: %s\n",
					strerror(-ret));
				goto out;
			}
		}
		draw(&p, i, frame);
		ret = hand_off(&p, i);
		if (ret == 0 && glGetError() != GL_NO_ERROR)
			ret = -EIO;
		if (ret < 0)
			goto out;
		int64_t t1 = now_ns();
		handoff_ms += (double)(t1 - t0) / 1e6;
		if (opt->verbose)
			printf("producer: frame %u → buffer %u, issued and handed off in %.1f ms\n",
			       frame, i, (double)(t1 - t0) / 1e6);
		p.free[i] = false;
		ret = cube_send_frame(sock, frame, i, t1);
		if (ret < 0)
			goto out;
	}
	printf("producer: %u frames issued, %.1f ms per frame from the buffer's wait to the "
	       "hand-off\n", opt->frames, opt->frames ? handoff_ms / opt->frames : 0.0);
	fflush(stdout);
	ret = cube_send_end(sock, opt);
out:
	producer_finish(&p);
	return ret;
}
