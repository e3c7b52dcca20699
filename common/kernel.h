/* SPDX-License-Identifier: MIT */
/*
 * Helpers that make real kernel objects for the VM test tier: DRM nodes found
 * by driver name, vgem buffers and vgem fences, udmabuf and dma-heap buffers,
 * and raw sync_file / dma-buf ioctls that do not go through libsyncbridge (so
 * a test's setup and its cross-checks do not depend on the code under test).
 *
 * Every function returns 0 (or a new fd) on success and a negative errno on
 * failure; -ENODEV means "the device is not present on this machine" (the
 * caller should skip, not fail). Every fd made here is close-on-exec.
 */
#ifndef SB_COMMON_KERNEL_H
#define SB_COMMON_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h" /* now_ns() */

/* Driver names as DRM_IOCTL_VERSION reports them. */
#define SBK_DRIVER_VGEM "vgem"
#define SBK_DRIVER_VIRTIO_GPU "virtio_gpu"

/*
 * Open the first /dev/dri node whose driver is `driver`: a primary node
 * (cardN) or, with render, a render node (renderDN). Returns the fd
 * (O_RDWR | O_CLOEXEC), -ENODEV if there is none, or -errno.
 */
int sbk_drm_open_driver(const char *driver, bool render);

/* The driver name of a DRM fd (DRM_IOCTL_VERSION) into buf. */
int sbk_drm_driver_name(int fd, char *buf, size_t len);

/*
 * Whether the kernel has DRM_IOCTL_SYNCOBJ_EVENTFD (Linux 6.6): probed with
 * an unknown handle, which such a kernel answers ENOENT (older ones EINVAL).
 */
bool sbk_drm_has_syncobj_eventfd(int drm_fd);

/* vgem's primary node (dumb buffers need it: the render node gives EACCES). */
int sbk_vgem_open(void);

/* The kinds of dma-buf exporter the tests use. */
enum sbk_buf_kind {
	SBK_BUF_VGEM,    /* vgem dumb buffer, PRIME-exported */
	SBK_BUF_UDMABUF, /* memfd (F_SEAL_SHRINK) wrapped by /dev/udmabuf */
	SBK_BUF_HEAP,    /* /dev/dma_heap/system allocation */
};

const char *sbk_buf_kind_name(enum sbk_buf_kind kind);
/* "vgem" / "udmabuf" / "heap" → kind; returns -EINVAL for anything else. */
int sbk_buf_kind_parse(const char *name, enum sbk_buf_kind *kind);

/* A dma-buf with a CPU mapping. */
struct sbk_buf {
	enum sbk_buf_kind kind;
	int fd;          /* the dma-buf (O_RDWR, close-on-exec) */
	size_t size;
	void *map;       /* MAP_SHARED mapping of the dma-buf, PROT_READ|WRITE */
	int vgem_fd;     /* SBK_BUF_VGEM: borrowed vgem fd; else -1 */
	uint32_t handle; /* SBK_BUF_VGEM: GEM handle; else 0 */
};

/*
 * Make a buffer of at least `size` bytes. vgem_fd is needed (borrowed) for
 * SBK_BUF_VGEM only and must stay open while the buffer lives. Returns 0,
 * -ENODEV when the exporter is missing, or -errno; on failure *buf has fd -1.
 */
int sbk_buf_create(enum sbk_buf_kind kind, int vgem_fd, size_t size, struct sbk_buf *buf);
/*
 * Unmap, close the dma-buf, close the GEM handle. Safe on a buf that
 * sbk_buf_create() filled (even when it failed: it presets the fds to -1) or
 * one initialised with SBK_BUF_INIT; NOT on a zeroed struct, whose fd 0 is a
 * real descriptor (stdin).
 */
#define SBK_BUF_INIT { .fd = -1, .vgem_fd = -1 }
void sbk_buf_destroy(struct sbk_buf *buf);

/*
 * vgem fences (DRM_IOCTL_VGEM_FENCE_ATTACH / _SIGNAL). A fence attached with
 * write = false is a read (shared) fence, with write = true a write
 * (exclusive) one. Attaching over a conflicting pending fence is -EBUSY.
 * A fence that is not signalled within ~10 s signals itself; signalling it
 * afterwards returns -ETIMEDOUT; signalling twice returns -ENOENT.
 * Closing the vgem fd signals all its pending fences.
 */
int sbk_vgem_fence_attach(int vgem_fd, uint32_t handle, bool write, uint32_t *fence_id);
int sbk_vgem_fence_signal(int vgem_fd, uint32_t fence_id);

/*
 * A pending vgem fence as a sync_file: a private 4 KiB vgem buffer gets a
 * fence, and the fence is exported with the core's sb_dmabuf_export_sync_file().
 */
struct sbk_fence {
	int vgem_fd;      /* borrowed */
	struct sbk_buf bo;
	uint32_t fence_id;
	bool write;
	bool signalled;
	int sync_file;    /* owned: closed by sbk_fence_destroy */
};

int sbk_fence_create(int vgem_fd, bool write, struct sbk_fence *f);
/* Signal the fence (idempotent from the caller's view: a second call is 0). */
int sbk_fence_signal(struct sbk_fence *f);
/* Close everything (does not signal; the fence signals itself eventually). */
void sbk_fence_destroy(struct sbk_fence *f);

/* ioctl() retried on EINTR / EAGAIN: the result, or -errno. */
int sbk_ioctl(int fd, unsigned long req, void *arg);

/*
 * The id of one of this process's threads whose name (comm, as
 * pthread_setname_np() set it) contains `name`, or -1.
 */
int sbk_thread_find(const char *name);
/* How many threads this process has now (/proc/self/task), or -1. */
int sbk_thread_count(void);
/*
 * The same, once it is `want` or timeout_ns passed: the last count. A
 * thread stays in /proc/self/task a moment after pthread_join() returned —
 * the kernel wakes the joiner when it clears the thread's tid (exit_mm()),
 * before it releases the task (exit_notify()) — so a count right after a
 * join may still include it.
 */
int sbk_thread_count_wait(int want, int64_t timeout_ns);
/*
 * /proc/self/task/TID/syscall: the number of the system call thread `tid`
 * sleeps in (the kernel reads it only once the task is off the CPU:
 * proc_pid_syscall()), -1 while it runs, -2 when unreadable (gone).
 */
long sbk_thread_syscall(int tid);
/*
 * Wait until every other thread of this process sleeps in system call `nr`
 * (/proc/self/task/T/syscall, e.g. SYS_ioctl): 0, or -ETIME after
 * timeout_ns. A thread asleep there holds no lock of the C library's or a
 * sanitizer's allocator.
 */
int sbk_threads_wait_in_syscall(long nr, int64_t timeout_ns);

/* Sleep for ns nanoseconds (resumes after signals). */
void sbk_sleep_ns(int64_t ns);

/* Whether fd is an open descriptor (F_GETFD succeeds). */
bool sbk_fd_is_open(int fd);

#endif
