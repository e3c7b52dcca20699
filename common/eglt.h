/* SPDX-License-Identifier: MIT */
/*
 * EGL/GLES setup shared by the EGL bridge's tests and the demos (the one
 * place that opens an EGL display): a display with a current GLES context and
 * no surface, dma-bufs imported as textures or render targets, full-screen
 * passes, uniform fills and readbacks. Every function returns 0 or a negative
 * errno; -ENODEV means "not possible on this machine" (the caller skips).
 * What went wrong is said on the log (eglt_set_log): a test's stdout as TAP
 * comments by default.
 *
 * Platforms (see docs/egl.md and the shared facts):
 *  - EGLT_DEVICE_SW: the EGL device platform's software device (the one whose
 *    extensions list EGL_MESA_device_software): pure llvmpipe, which maps
 *    dma-bufs — the only display on which a vgem dma-buf imported as an
 *    EGLImage reads back what the CPU wrote.
 *  - EGLT_SURFACELESS: EGL_PLATFORM_SURFACELESS_MESA (the host's default).
 *  - EGLT_ANY: the software device if there is one, else surfaceless.
 */
#ifndef SB_COMMON_EGLT_H
#define SB_COMMON_EGLT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl3.h>
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
	EGLint major, minor;  /* the display's EGL version */
};

/*
 * Where eglt says what went wrong: `prefix` then the message, on f. The
 * default is stdout and "# eglt: " (TAP comments); a demo passes stderr and
 * "<program>: <stage>: ".
 */
void eglt_set_log(FILE *f, const char *prefix);
/* One line on that log: the prefix, the message, a newline. */
void eglt_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Open and initialise a display, create a GLES `gles_version` (2 or 3)
 * context without config or surface (EGL_KHR_no_config_context,
 * EGL_KHR_surfaceless_context) and make it current. Quiet on success.
 */
int eglt_open_gles(struct eglt *t, enum eglt_platform platform, int gles_version);
/*
 * A test's display: eglt_no_disk_cache(), then eglt_open_gles(t, platform, 2),
 * and one line on the log that says which display and renderer it got.
 */
int eglt_open(struct eglt *t, enum eglt_platform platform);
/* Release the context, terminate the display. Safe on a failed/zeroed struct. */
void eglt_close(struct eglt *t);

/*
 * "EGL 1.5 on <GL_RENDERER>; bridge: GPU-side waits (native fence sync)" —
 * what libsyncbridge-egl does on this display (sb_egl_display_get_caps).
 */
void eglt_describe(struct eglt *t, char *buf, size_t size);

/* Whether the space-separated extension list exts (NULL: none) names `name`. */
bool eglt_has_ext(const char *exts, const char *name);

/*
 * The extension entry points eglt, the compositor and the tests look up, each
 * from eglGetProcAddress (NULL where the implementation has none). Whether the
 * display or the client extensions list the extension is still the caller's
 * check. Filled at each call, not cached: a program that interposes
 * eglGetProcAddress (tests/egl/fault_egl.c) sees every lookup.
 */
struct eglt_procs {
	PFNEGLQUERYDEVICESEXTPROC query_devices;
	PFNEGLQUERYDEVICESTRINGEXTPROC query_device_string;
	PFNEGLQUERYDISPLAYATTRIBEXTPROC query_display_attrib;
	PFNEGLGETPLATFORMDISPLAYEXTPROC get_platform_display;
	PFNEGLCREATEIMAGEKHRPROC create_image;
	PFNEGLDESTROYIMAGEKHRPROC destroy_image;
	PFNGLEGLIMAGETARGETTEXTURE2DOESPROC image_target_texture_2d;
	PFNEGLEXPORTDMABUFIMAGEQUERYMESAPROC export_dmabuf_image_query;
	PFNEGLEXPORTDMABUFIMAGEMESAPROC export_dmabuf_image;
	PFNEGLQUERYDMABUFFORMATSEXTPROC query_dmabuf_formats;
	PFNEGLQUERYDMABUFMODIFIERSEXTPROC query_dmabuf_modifiers;
	PFNEGLCREATESYNCKHRPROC create_sync;
	PFNEGLDESTROYSYNCKHRPROC destroy_sync;
	PFNEGLDUPNATIVEFENCEFDANDROIDPROC dup_native_fence_fd;
};
void eglt_procs_load(struct eglt_procs *p);

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
	GLuint fbo;        /* 0: a texture to sample only (eglt_image_import) */
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
/*
 * A one-plane dma-buf of DRM format `fourcc` imported as an EGLImage bound to
 * a texture (GL_NEAREST) that a pass samples, without an FBO. dmabuf_fd:
 * borrowed (EGL takes its own reference). -ENODEV when the display cannot
 * import dma-bufs, -EIO when this one was refused.
 */
int eglt_image_import(struct eglt *t, int dmabuf_fd, int width, int height, uint32_t fourcc,
		      int offset, int pitch, struct eglt_target *out);
/*
 * A one-plane dma-buf's layout as its exporter gave it: what an importer needs
 * besides the fd and the size. modifier DRM_FORMAT_MOD_INVALID: none given.
 */
struct eglt_dmabuf_layout {
	uint32_t fourcc;
	int32_t offset, pitch;
	uint64_t modifier;
};

/*
 * The target's texture as a dma-buf (EGL_MESA_image_dma_buf_export): *out_fd
 * is a new dma-buf fd owned by the caller on success, -1 on failure; the
 * target keeps the EGLImage (eglt_target_destroy frees it). -ENODEV when the
 * display cannot export one-plane dma-bufs, -EIO when the export failed.
 */
int eglt_target_export(struct eglt *t, struct eglt_target *target, int *out_fd,
		       struct eglt_dmabuf_layout *layout);

/*
 * eglt_image_import() with an exporter's layout: its modifier travels too
 * (EGL_EXT_image_dma_buf_import_modifiers) unless it is DRM_FORMAT_MOD_INVALID.
 */
int eglt_image_import_layout(struct eglt *t, int dmabuf_fd, int width, int height,
			     const struct eglt_dmabuf_layout *layout, struct eglt_target *out);

/* Either kind of target. Safe on a zeroed one. */
void eglt_target_destroy(struct eglt *t, struct eglt_target *target);

/* The target's pixels, RGBA8, width*4 bytes per row, rows in memory order. */
int eglt_read(struct eglt_target *target, uint8_t *rgba);

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

/* A program from two shaders' sources (attribute 0 is "pos"); 0 on failure. */
GLuint eglt_program(const char *vs, const char *fs);

/*
 * A full-screen pass (GLES 3): one triangle over the whole target, whose
 * fragment shader (EGLT_PASS_FS_HEAD, then its main()) samples the texture
 * `frame` and writes `color` — texelFetch at gl_FragCoord keeps rows in
 * memory order.
 */
struct eglt_pass {
	GLuint program, vao;
};
/* How a pass's fragment shader begins: its version, the texture, the output. */
#define EGLT_PASS_FS_HEAD                                                       \
	"#version 300 es\n"                                                      \
	"precision highp float;\n"                                               \
	"uniform highp sampler2D frame;\n"                                       \
	"out vec4 color;\n"

/*
 * A pass's fragment shader for YUYV frames (BT.601, limited range), the
 * frame imported as ARGB8888 texels of two pixels each (.b = Y0, .g = U,
 * .r = Y1, .a = V): draw it into a target twice the texture's width. The
 * camera demos' display stages use it.
 */
extern const char eglt_yuyv_fs[];

int eglt_pass_init(struct eglt_pass *p, const char *fs);
/* Draw src_tex through the pass into dst (blending off). */
void eglt_pass_draw(struct eglt_pass *p, GLuint src_tex, struct eglt_target *dst);
void eglt_pass_finish(struct eglt_pass *p);
/* A pass that keeps the GPU busy: `iters` dependent sin() per pixel, so that
 * a driver's fence is still pending a while; what it writes means nothing. */
int eglt_busy_pass_init(struct eglt_pass *p);
void eglt_busy_pass_draw(struct eglt_pass *p, int iters, struct eglt_target *dst);

/* The GL error, if any, as a string ("GL_NO_ERROR" when none). */
const char *eglt_gl_error(void);

#endif
