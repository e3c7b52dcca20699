/* SPDX-License-Identifier: MIT */
/*
 * EGL/GLES scaffolding for the EGL bridge's tests: a display with a current
 * GLES2 context and no surface, dma-bufs imported as render targets, uniform
 * fills and readbacks. Every function returns 0 or a negative errno;
 * -ENODEV means "not possible on this machine" (the caller skips).
 *
 * Platforms (see docs/egl.md and the shared facts):
 *  - EGLT_DEVICE_SW: the EGL device platform's software device (the one whose
 *    extensions list EGL_MESA_device_software): pure llvmpipe, which maps
 *    dma-bufs — the only display on which a vgem dma-buf imported as an
 *    EGLImage reads back what the CPU wrote.
 *  - EGLT_SURFACELESS: EGL_PLATFORM_SURFACELESS_MESA (the host's default).
 *  - EGLT_ANY: the software device if there is one, else surfaceless.
 */
#ifndef SB_TEST_EGLT_H
#define SB_TEST_EGLT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES2/gl2.h>
#include <GLES2/gl2ext.h>

enum eglt_platform {
	EGLT_ANY,
	EGLT_DEVICE_SW,
	EGLT_SURFACELESS,
};

struct eglt {
	EGLDisplay dpy;
	EGLContext ctx;
	const char *platform; /* "device-sw" or "surfaceless" */
};

/*
 * Open, initialise, create a GLES2 context without config and make it current.
 * Calls eglt_no_disk_cache() first.
 */
int eglt_open(struct eglt *t, enum eglt_platform platform);
/* Release the context, terminate the display. Safe on a failed/zeroed struct. */
void eglt_close(struct eglt *t);

/*
 * fd-leak checks count or list this process's fds at two points; that is exact
 * only while no other thread can be between an open() and its close() at
 * either point. Mesa's shader disk cache breaks that: each llvmpipe screen and
 * lavapipe device runs a "<prog>:disk$N" thread that writes every newly
 * compiled shader into the cache in the background, opening and closing
 * mesa_cache.db and mesa_cache.idx (two fds) per write, whenever the
 * scheduler runs it. A baseline taken during such a write is two too high
 * (egl-dmabuf-wait-sample: "got 11, want 13"). No API drains that queue short
 * of destroying the screen, and counting after eglTerminate() would hide an
 * fd that EGL still held for us (an EGLSync never destroyed), so the cache is
 * turned off instead: MESA_SHADER_CACHE_DISABLE=true, read when a screen or
 * device is created. Call this before the program's first EGL or Vulkan call
 * (eglt_open() does; a program that creates a Vulkan device first calls it
 * itself).
 */
void eglt_no_disk_cache(void);
/*
 * Whether a thread of Mesa's shader disk cache runs in this process: a
 * program REQUIREs that it does not before it takes an fd baseline, so that
 * a Mesa that ignored the variable fails with that reason, not by chance.
 */
bool eglt_disk_cache_running(void);

/* A colour target: a texture (own storage or an imported dma-buf) in an FBO. */
struct eglt_target {
	EGLImageKHR image; /* EGL_NO_IMAGE_KHR for own storage */
	GLuint tex;
	GLuint fbo;
	int width, height;
};

/* A width x height RGBA texture of GL's own, in an FBO. */
int eglt_target_create(struct eglt *t, int width, int height, struct eglt_target *out);

/*
 * A dma-buf (ARGB8888, LINEAR, `pitch` bytes per row, offset 0) imported as an
 * EGLImage (EGL_EXT_image_dma_buf_import), bound to a texture in an FBO.
 * dmabuf_fd: borrowed (EGL takes its own reference). -ENODEV when the display
 * cannot import dma-bufs.
 */
int eglt_target_import(struct eglt *t, int dmabuf_fd, int width, int height, int pitch,
		       struct eglt_target *out);
void eglt_target_destroy(struct eglt *t, struct eglt_target *target);

/* Fill the whole target with one byte value in every channel (glClear). */
void eglt_fill(struct eglt_target *target, uint8_t value);

/*
 * Read the target back (glReadPixels, RGBA) and count the pixels whose four
 * channels all equal `value`. Returns that count, or -1 on a GL error; the
 * first pixel's red channel goes to *first when first is not NULL.
 */
long eglt_count(struct eglt_target *target, uint8_t value, int *first);

/*
 * Sampling: a GLES2 program that draws `src` (a texture) over the whole of
 * `dst` with a textured quad — what a compositor does with a client's buffer.
 */
struct eglt_blit {
	GLuint program;
};
int eglt_blit_init(struct eglt_blit *b);
void eglt_blit(struct eglt_blit *b, GLuint src_tex, struct eglt_target *dst);
void eglt_blit_finish(struct eglt_blit *b);

/* The GL error, if any, as a string ("GL_NO_ERROR" when none). */
const char *eglt_gl_error(void);

#endif
