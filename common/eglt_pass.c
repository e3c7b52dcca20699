/* SPDX-License-Identifier: MIT */
/*
 * GLES programs and the full-screen passes on them: a blit, a pass with a
 * caller's fragment shader, a busy pass that keeps the GPU working (see
 * eglt.h; displays and render targets are in eglt.c).
 */
#include "eglt.h"

#include <errno.h>

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
		eglt_note("shader compile failed: %s", log);
		glDeleteShader(s);
		return 0;
	}
	return s;
}

GLuint
eglt_program(const char *vs, const char *fs)
{
	GLuint v = compile(GL_VERTEX_SHADER, vs), f = compile(GL_FRAGMENT_SHADER, fs);
	GLuint program = 0;
	GLint ok = 0;

	if (v && f) {
		program = glCreateProgram();
		glAttachShader(program, v);
		glAttachShader(program, f);
		glBindAttribLocation(program, 0, "pos");
		glLinkProgram(program);
		glGetProgramiv(program, GL_LINK_STATUS, &ok);
		if (!ok) {
			eglt_note("program link failed");
			glDeleteProgram(program);
			program = 0;
		}
	}
	glDeleteShader(v);
	glDeleteShader(f);
	return program;
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

	b->program = eglt_program(vs, fs);
	return b->program ? 0 : -EIO;
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

const char eglt_yuyv_fs[] = EGLT_PASS_FS_HEAD
	"void main() {\n"
	"  ivec2 p = ivec2(gl_FragCoord.xy);\n"
	"  vec4 t = texelFetch(frame, ivec2(p.x / 2, p.y), 0);\n"
	"  float y = ((p.x & 1) == 0 ? t.b : t.r) - 16.0 / 255.0;\n"
	"  float u = t.g - 0.5, v = t.a - 0.5;\n"
	"  color = vec4(clamp(vec3(1.164 * y + 1.596 * v, 1.164 * y - 0.392 * u - 0.813 * v,\n"
	"                          1.164 * y + 2.017 * u), 0.0, 1.0), 1.0);\n"
	"}\n";

int
eglt_pass_init(struct eglt_pass *p, const char *fs)
{
	static const char vs[] =
		"#version 300 es\n"
		"void main() {\n"
		"  vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);\n"
		"  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);\n"
		"}\n";

	p->vao = 0;
	p->program = eglt_program(vs, fs);
	if (!p->program)
		return -EIO;
	glGenVertexArrays(1, &p->vao);
	return 0;
}

void
eglt_pass_draw(struct eglt_pass *p, GLuint src_tex, struct eglt_target *dst)
{
	glBindFramebuffer(GL_FRAMEBUFFER, dst->fbo);
	glViewport(0, 0, dst->width, dst->height);
	glDisable(GL_BLEND);
	glUseProgram(p->program);
	glBindVertexArray(p->vao);
	glActiveTexture(GL_TEXTURE0);
	glBindTexture(GL_TEXTURE_2D, src_tex);
	glUniform1i(glGetUniformLocation(p->program, "frame"), 0);
	glDrawArrays(GL_TRIANGLES, 0, 3);
}

void
eglt_pass_finish(struct eglt_pass *p)
{
	if (p->vao)
		glDeleteVertexArrays(1, &p->vao);
	if (p->program)
		glDeleteProgram(p->program);
	p->vao = p->program = 0;
}

int
eglt_busy_pass_init(struct eglt_pass *p)
{
	static const char fs[] = EGLT_PASS_FS_HEAD
		"uniform int iters;\n"
		"void main() {\n"
		"  float a = gl_FragCoord.x * 0.001 + gl_FragCoord.y;\n"
		"  for (int i = 0; i < iters; i++)\n"
		"    a = sin(a * 1.0001 + float(i));\n"
		"  color = vec4(a);\n"
		"}\n";

	return eglt_pass_init(p, fs);
}

void
eglt_busy_pass_draw(struct eglt_pass *p, int iters, struct eglt_target *dst)
{
	glUseProgram(p->program);
	glUniform1i(glGetUniformLocation(p->program, "iters"), iters);
	eglt_pass_draw(p, 0, dst);
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
