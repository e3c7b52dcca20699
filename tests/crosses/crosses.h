/* SPDX-License-Identifier: MIT */
/*
 * crosses: what crosses between the drivers of the test guests — which
 * dma-bufs one driver exports that another imports (and reads the exporter's
 * data from), and which fences one produces that another accepts and really
 * waits for. Every cell is measured (docs/crosses.md has the tables, the
 * header of main.c how each cell is judged).
 *
 * Files: table.c (cells, the expected table, the comparison), drivers.c
 * (opening the drivers, sync_file and pixel helpers), xgl.c (EGL/GLES on
 * llvmpipe and virgl), xvk.c (lavapipe), export.c (the buffer exporters and
 * the implicit cells), buffers.c (the buffer importers), fences.c (fence
 * exporters and importers), main.c.
 */
#ifndef CROSSES_H
#define CROSSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eglt.h"
#include "vk.h"

/* The drivers, as exporters of dma-bufs and fences. */
enum xdrv {
	XD_VGEM,
	XD_UDMABUF,
	XD_VIRTIO, /* virtio_gpu: dumb buffers, DRM_IOCTL_VIRTGPU_EXECBUFFER */
	XD_LAVAPIPE,
	XD_LLVMPIPE, /* EGL's software device (EGLT_DEVICE_SW) */
	XD_VIRGL,    /* EGL surfaceless on virtio_gpu with +virgl */
	XD_COUNT,
};

const char *xdrv_name(enum xdrv d);
/* Name the Vulkan column (default "lavapipe"): "venus" in the venus guest. */
void xdrv_set_vulkan_name(const char *name);

/* Every buffer is a 64x64 image of 4-byte pixels, all four bytes one value. */
#define XW 64
#define XH 64

/* ---- results and the table (table.c) ---- */

/* One cell's result: "ok …" / "ERR step CODE" / "not here"; the note is free text. */
struct xres {
	char head[96];
	char note[256];
};

void xres_set(struct xres *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "ERR step ENAME" from a negative (or positive) errno. */
void xres_errno(struct xres *r, const char *step, int err);
/* Append to the note ("; " between parts). */
void xres_note(struct xres *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool xres_failed(const struct xres *r);

/* Record and print "cell EXP -> IMP KIND: HEAD (NOTE)". */
void xcell(const char *exporter, const char *importer, const char *kind, const struct xres *r);
/*
 * Compare every recorded cell with the expected table in path; CHECKs each
 * measured cell and each expected one that was not measured, and adds the
 * checks and failures to *checks and *failures (harness.h's counters are
 * per file). Returns the number of cells measured (not "not here").
 */
int xtable_check(const char *path, int *checks, int *failures);
/* Forget every recorded cell (the table's own test). */
void xtable_reset(void);
/* Whether item is one of the sep-separated items of list (NULL: none). */
bool xlist_has(const char *list, const char *sep, const char *item);

/* ---- the drivers (drivers.c, xgl.c, xvk.c) ---- */

struct xgl {
	struct eglt t;
	struct eglt_target scratch; /* importers draw here after a fence wait */
	struct eglt_target work;    /* virgl: the long draws (256x256) */
	struct eglt_pass heavy;
};

struct xenv {
	bool here[XD_COUNT];
	char why[XD_COUNT][160]; /* why a driver is not here */
	int vgem;                /* vgem's card node */
	int virtio_card;         /* virtio_gpu's card node: dumb buffers, MAP_DUMB */
	int virtio_render;       /* its render node: syncobjs, EXECBUFFER */
	struct xgl gl[2];        /* llvmpipe, virgl */
	struct vkt vk;
	PFN_vkGetMemoryFdKHR GetMemoryFdKHR;
	bool vk_isolate;         /* import other virtio_gpu buffers in a child (venus: xvk_child.c) */
	int virgl_iters;         /* the long draws' loop count */
};

/* Open every driver of the guest but those named in `without` (comma-separated
 * names, "vulkan" for the Vulkan one; NULL: none), which are "not here". */
void xenv_open(struct xenv *e, const char *without);
void xenv_close(struct xenv *e);
struct xgl *xenv_gl(struct xenv *e, enum xdrv d);

/* An exported buffer and what its exporter needs to free it. */
struct xbuf {
	enum xdrv drv;
	struct xres export; /* "ok" or why the export failed */
	int fd;             /* the dma-buf (CLOEXEC), or -1 */
	size_t size;        /* the dma-buf's size (lseek) */
	uint32_t fourcc;
	int stride, offset;
	uint64_t modifier; /* DRM_FORMAT_MOD_INVALID: none given */
	uint8_t value;     /* what the exporter wrote into every byte of the image */
	/* the exporter's own objects */
	int drm_fd;         /* vgem / virtio_gpu card node (borrowed) */
	uint32_t handle;    /* its GEM handle */
	void *map;          /* a CPU mapping of the exporter's own (vgem, udmabuf, virtio_gpu) */
	size_t map_size;
	VkBuffer vk_buffer;
	VkDeviceMemory vk_memory;
	GLuint tex, fbo;
	EGLImageKHR image;
};

/* ---- helpers (drivers.c) ---- */

/* Bytes per pixel row the importers read back into (RGBA). */
#define XROW (XW * 4)
/* Whether every byte of the image (stride apart) is value; the first other byte into *seen. */
bool xpixels_are(const uint8_t *base, int stride, uint8_t value, int *seen);
/* A sync_file's status (1 signalled, 0 active, <0 error); driver/timeline of its first fence. */
int xsync_status(int fd, char *what, size_t size);
/* The kernel exporter's name of a dma-buf (exp_name in /proc/self/fdinfo), or "?". */
void xdmabuf_exporter(int fd, char *name, size_t size);
/* Mark fd close-on-exec; if it was not (a driver handed it out without), note
 * "WHAT was not close-on-exec" on r. Nothing for fd < 0. */
void xres_cloexec(struct xres *r, int fd, const char *what);
int64_t xnow(void);

/* ---- EGL/GLES (xgl.c) ---- */

int xgl_open(struct xgl *g, enum eglt_platform platform, bool virgl, char *why, size_t size);
void xgl_close(struct xgl *g);
void xgl_current(struct xgl *g);
void xres_egl(struct xres *r, const char *step);
/* A texture exported as a dma-buf (EGL_MESA_image_dma_buf_export). */
void xgl_export(struct xgl *g, struct xbuf *b);
/* The exporter's write: glClear to b->value (virgl: after `iters` long draws), then glFlush. */
void xgl_write(struct xgl *g, struct xbuf *b, int iters);
/* Import b (EGL_EXT_image_dma_buf_import) and read it back (XROW per row). */
void xgl_import_read(struct xgl *g, const struct xbuf *b, uint8_t *rgba, struct xres *r);
/* A native fence (EGL_ANDROID_native_fence_sync) after a draw (virgl: `iters` long draws). */
int xgl_fence_export(struct xgl *g, int iters, struct xres *r);
/* Import a sync_file as an EGLSync, eglWaitSyncKHR, draw, glFinish. sync_file: borrowed. */
void xgl_fence_wait(struct xgl *g, int sync_file, struct xres *r);
void xgl_buffer_free(struct xgl *g, struct xbuf *b);

/* ---- Vulkan: lavapipe, or venus in the venus guest (xvk.c) ---- */

int xvk_open(struct xenv *e, char *why, size_t size);
void xvk_close(struct xenv *e);
void xres_vk(struct xres *r, const char *step, VkResult vr);
/* Exportable memory as a dma-buf; the fill (b->value) is submitted, then implicit
 * (if not NULL) gets the dma-buf's fences, then the fill is waited for. */
void xvk_export(struct xenv *e, struct xbuf *b, struct xres *implicit);
void xvk_import_read(struct xenv *e, const struct xbuf *b, uint8_t *rgba, struct xres *r);
/* A SYNC_FD semaphore exported after an empty submit that signals it. */
int xvk_fence_export(struct xenv *e, struct xres *r);
/* Import a sync_file into a semaphore, submit a wait on it, wait for the submit. */
void xvk_fence_wait(struct xenv *e, int sync_file, struct xres *r);
void xvk_buffer_free(struct xenv *e, struct xbuf *b);
/* xvk_import_read(), in a child process where e->vk_isolate (xvk_child.c). */
void xvk_import_read_isolated(struct xenv *e, const struct xbuf *b, uint8_t *rgba, struct xres *r);
/* main() of that child: crosses --vk-import-child PIPE FD SIZE STRIDE OFFSET. */
int xvk_import_child(int argc, char **argv);

/* ---- the cells (export.c, buffers.c, fences.c) ---- */

/* Export a buffer from driver d, recording its "implicit" cell where d has work. */
void xbuf_export(struct xenv *e, enum xdrv d, struct xbuf *b);
void xbuf_free(struct xenv *e, struct xbuf *b);
/* Every exporter -> importer buffer cell. */
void xbuffers_run(struct xenv *e, struct xbuf *bufs);
/* Every exporter -> importer fence cell; bufs are the dma-buf importers' buffers. */
void xfences_run(struct xenv *e, struct xbuf *bufs);
/* A pending fence of the implicit cell's exporter on b's dma-buf: "pending"/"none". */
void ximplicit_judge(const struct xbuf *b, struct xres *r);

#endif
