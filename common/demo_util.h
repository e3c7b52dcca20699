/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the demos (examples/): fds, unix-socket messages
 * carrying fds, two processes, vgem dumb buffers and fences, PNG files
 * and contact sheets (png.c, sheet.c: common_png_lib). The kernel objects are kernel.h's
 * (common_kernel_lib), under the names the demos use; the clock is
 * clock.h's now_ns().
 *
 * Every function returns 0 (or a new fd) on success and a negative errno on
 * failure, and says what it does with the fds it is given. Every fd made
 * here is close-on-exec.
 */
#ifndef SB_DEMO_UTIL_H
#define SB_DEMO_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/types.h>

#include "kernel.h"

/* ---- fds and time ------------------------------------------------------ */

/* Close *fd if it is open and set it to -1. */
void demo_fd_clear(int *fd);
/* Open descriptors of this process, or -1 without /proc. */
int demo_count_fds(void);
/* Each open descriptor as "<prefix>fd N -> TARGET" (for a leak report). */
void demo_list_fds(FILE *f, const char *prefix);
/*
 * Open sync_files whose only fence is a signalled virtio_gpu one: what Mesa's
 * venus keeps for the life of a process once it has made a sync object
 * (demo_util.c). For a leak check on venus.
 */
int demo_count_signalled_virtio_sync_files(void);
/* Sleep for ns nanoseconds (resumes after signals). */
static inline void
demo_sleep_ns(int64_t ns)
{
	sbk_sleep_ns(ns);
}
/* Sleep until CLOCK_MONOTONIC reads t ns (resumes after signals). */
void demo_sleep_until_ns(int64_t t);
/* ioctl() retried on EINTR/EAGAIN; 0/-errno. */
int demo_ioctl(int fd, unsigned long request, void *arg);

/* ---- messages over a SOCK_SEQPACKET socket ------------------------------ */

#define DEMO_MAX_FDS 16

/*
 * Send one datagram of len bytes with n_fds descriptors (SCM_RIGHTS).
 * fds: borrowed; the receiver gets its own copies. Returns 0 or -errno
 * (-EPIPE when the peer went away).
 */
int demo_send(int sock, const void *msg, size_t len, const int *fds, int n_fds);

/*
 * Receive one datagram of exactly len bytes. Up to max_fds descriptors go
 * to fds[] (owned by the caller, close-on-exec); *n_fds says how many (pass
 * NULL/0 when none may come: any received fd is then closed and -EPROTO
 * returned). timeout_ms < 0 waits forever. Returns 0, -EPIPE (peer gone),
 * -ETIME, -EPROTO (wrong size, truncated fds) or -errno.
 */
int demo_recv(int sock, void *msg, size_t len, int *fds, int max_fds, int *n_fds,
	      int timeout_ms);

/* ---- two processes ------------------------------------------------------ */

/*
 * Run child(sock, arg) in a forked process, connected to this one by a
 * SOCK_SEQPACKET socket pair; the child _exit()s with what child returns.
 * *sock: this process's end (owned by the caller), -1 on failure. Returns
 * the child's pid, or -errno (nothing forked).
 */
pid_t demo_fork_peer(int (*child)(int sock, void *arg), void *arg, int *sock);
/* Wait for the child: its exit status, 128 + the signal that killed it, or -errno. */
int demo_wait_peer(pid_t pid);

/* ---- V4L2 --------------------------------------------------------------- */

/*
 * Open the first vivid (V4L2 test driver) node that captures and streams,
 * O_RDWR | O_CLOEXEC | O_NONBLOCK. Returns the fd (the caller's) or -ENODEV.
 */
int demo_vivid_open(void);

/* ---- vgem --------------------------------------------------------------- */

/*
 * Open vgem's card node (dumb buffers are refused on its render node).
 * Returns the fd, -ENODEV when there is no vgem, -EACCES when a card node
 * could not be opened and none of the others is vgem.
 */
int demo_vgem_open(void);
/* The same, and the node's path goes to path (size bytes) when path is not NULL. */
int demo_vgem_open_path(char *path, size_t size);
/* Whether the DRM node fd belongs to the driver `name`: 1, 0, or -errno when it
 * does not answer DRM_IOCTL_VERSION. */
int demo_drm_driver_is(int fd, const char *name);

/* A vgem dumb buffer exported as a dma-buf. */
struct demo_vgem_buf {
	int vgem_fd;     /* borrowed */
	uint32_t handle; /* GEM handle, 0: none */
	int dmabuf_fd;   /* owned, -1: none */
	uint32_t width, height, pitch;
	uint64_t size;
	void *map;       /* NULL unless demo_vgem_buf_map() */
};

/*
 * Create a width×height buffer of bpp bits per pixel and export it
 * (O_RDWR | O_CLOEXEC). vgem_fd: borrowed, must outlive the buffer.
 * On failure *buf holds nothing to free (handle 0, dmabuf_fd -1).
 */
int demo_vgem_buf_create(int vgem_fd, uint32_t width, uint32_t height, uint32_t bpp,
			 struct demo_vgem_buf *buf);
/* mmap the buffer (MAP_SHARED, read/write) into buf->map. */
int demo_vgem_buf_map(struct demo_vgem_buf *buf);
/* Unmap, close the dma-buf, close the GEM handle. Safe on a zeroed buf. */
void demo_vgem_buf_destroy(struct demo_vgem_buf *buf);

/*
 * Attach a pending vgem fence to the buffer: a write (exclusive) fence, or a
 * read (shared) one. It signals on demo_vgem_fence_signal(), when the vgem
 * fd closes, or by itself after ~10 s. -EBUSY over a conflicting fence.
 */
static inline int
demo_vgem_fence_attach(int vgem_fd, uint32_t handle, bool write, uint32_t *fence_id)
{
	return sbk_vgem_fence_attach(vgem_fd, handle, write, fence_id);
}
/* -ETIMEDOUT: the fence had expired already; -ENOENT: signalled twice. */
static inline int
demo_vgem_fence_signal(int vgem_fd, uint32_t fence_id)
{
	return sbk_vgem_fence_signal(vgem_fd, fence_id);
}

/* ---- PNG ---------------------------------------------------------------- */

/*
 * Write an 8-bit RGB PNG (libpng) from rows of `channels` (3 or 4; alpha is
 * dropped) bytes per pixel, `stride` bytes apart, top row first. Returns 0,
 * -EINVAL, -ENOMEM, -EIO (libpng printed why) or the -errno of fopen.
 */
int demo_png_write(const char *path, const uint8_t *pixels, uint32_t width, uint32_t height,
		   uint32_t stride, int channels);

/*
 * A contact sheet (sheet.c): cols × rows cells, each a frame_w × frame_h
 * frame inside a border of one colour, gap pixels apart, on an RGB canvas.
 * Fill in the layout, then demo_sheet_alloc() sets width, height and rgb
 * (free() it); cells are numbered row by row.
 */
struct demo_sheet {
	unsigned cols, rows;
	uint32_t frame_w, frame_h, border, gap;
	uint32_t width, height;
	uint8_t *rgb;
};

/* 0 or -ENOMEM. */
int demo_sheet_alloc(struct demo_sheet *s);
/* Copy a tightly packed RGBA frame into `cell`, framed in border_rgb. */
void demo_sheet_put(struct demo_sheet *s, unsigned cell, const uint8_t *rgba,
		    const uint8_t border_rgb[3]);
/* demo_png_write() of the whole sheet. */
int demo_sheet_write(const struct demo_sheet *s, const char *path);

/* Sort ascending (for medians and percentiles of times). */
void demo_sort_i64(int64_t *v, size_t n);

/* ---- options ------------------------------------------------------------ */

/*
 * Options from a table: each row a long option, what its value is and where
 * it goes. --help (-h) is always there: usage(stdout), exit 0; so is
 * --version: "PROG VERSION" (prog's first word, the project's version) on
 * stdout, exit 0. An unknown option or a missing value prints "PROG: unknown
 * option '--x'" (or "PROG: option '--x' needs a value") and usage to stderr;
 * a bad value "PROG: bad value 'ARG' for --NAME (want ...)"; a required row
 * that argv lacks "PROG: --NAME is required" and usage to stderr. Returns
 * the index of the first operand (argc when none), or -EINVAL after saying
 * why. Operands are an error unless flags has DEMO_OPT_OPERANDS, which also
 * stops at the first one (a command's own options stay its). A row's value
 * is stored as it is parsed: after a failure some may be set.
 */
enum demo_opt_kind {
	DEMO_OPT_FLAG,   /* no value: *(bool *)dst = true */
	DEMO_OPT_STRING, /* *(const char **)dst = the value (argv's) */
	DEMO_OPT_UINT,   /* a decimal in [min, max] into *(unsigned *)dst */
	DEMO_OPT_INT,    /* a decimal, maybe negative, in [min, max] into *(int *)dst */
	DEMO_OPT_WORD,   /* the value's index in words into *(int *)dst */
	DEMO_OPT_SIZE,   /* WxH, each in [min, max], into *(uint32_t *)dst and *(uint32_t *)dst2 */
};

struct demo_opt {
	const char *name;         /* without "--"; NULL ends the table */
	enum demo_opt_kind kind;
	void *dst;
	long min, max;            /* UINT, INT, SIZE */
	const char *const *words; /* WORD: NULL-terminated */
	void *dst2;               /* SIZE: the height */
	char short_name;          /* 0: none */
	bool required;            /* argv must have it */
};

#define DEMO_OPT_OPERANDS 1u

int demo_opt_parse(const char *prog, int argc, char **argv, const struct demo_opt *opts,
		   void (*usage)(FILE *f), unsigned flags);

/* A decimal number in [min, max] (no sign, nothing after it) into *out. */
bool demo_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out);

/* The index of s in the NULL-terminated list words, or -1 when it is none of them. */
int demo_parse_word(const char *s, const char *const *words);

/*
 * Put a folder holding vulkan/implicit_layer.d/ first on XDG_DATA_DIRS (Debian
 * 12's loader finds implicit layers only there): the demos' --layer-dir, which
 * the tests and scripts/run-demo.sh give as the build tree's manifest/. An
 * installed demo is given none and uses the layer the loader finds. Returns
 * dir, or NULL (dir NULL or not a folder).
 */
const char *demo_layer_env(const char *dir);

/* mkdir -p; 0 or -errno. */
int demo_mkdir_p(const char *path);

#endif
