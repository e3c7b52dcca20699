/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for the kernel objects the compositor helper talks to, for the
 * in-process fuzz target (wl_server_requests.c) on a host that has no DRM, no
 * sw_sync and no dma-buf exporter (/work/shared/facts.md): this file defines
 * ioctl(), fstat() and readlink(), which the executable's references resolve
 * to before libc's (the helper and the core are linked into the executable).
 *
 * Every fake object is a real fd of an ordinary kind, recognised by its
 * (st_dev, st_ino), so the copies libwayland passes over the socket are the
 * same object:
 *   sync_file: the read end of a pipe; signalled = a byte written into the
 *              pipe (so poll() says POLLIN exactly when SYNC_IOC_FILE_INFO
 *              says status 1, or -EIO for an "errored" fence);
 *   syncobj:   a memfd; a timeline with a materialised and a signalled value;
 *   DRM fd:    a memfd that fstat() reports as a char device of major 226;
 *              it answers GET_CAP and the SYNCOBJ ioctls the core issues;
 *   dma-buf:   a memfd that readlink(/proc/self/fd/N) calls "/dmabuf:";
 *              EXPORT_SYNC_FILE returns its "busy" fence or a signalled one.
 * Every other fd gets the real kernel. What it cannot fake: the real
 * kernel's corner cases (the VM tier's tests use real vgem/virtio_gpu).
 */
#ifndef SB_FAKE_KERNEL_H
#define SB_FAKE_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

/* A new fake sync_file; returns the caller's fd (close it) or -1. *id names it. */
int fk_sync_file(bool signalled, bool errored, int *id);
void fk_sync_file_signal(int id);
bool fk_sync_file_is_signalled(int id);
bool fk_sync_file_is_errored(int id);
/* Another fd of the same fake sync_file / syncobj (the caller closes it), or -1. */
int fk_sync_file_dup(int id);
int fk_syncobj_dup(int id);
/* The syncobj's signalled value. */
uint64_t fk_syncobj_signalled(int id);
/* The dma-buf's implicit write fence (a sync_file id) or -1. */
int fk_dmabuf_fence(int id);
/* A new fake DRM syncobj (timeline at 0); returns the caller's fd or -1. */
int fk_syncobj(int *id);
/* Raise a syncobj's materialised / signalled values (never lowers them). */
void fk_syncobj_advance(int id, uint64_t materialised, uint64_t signalled);
/* A new fake dma-buf of 4096 bytes; returns the caller's fd or -1. */
int fk_dmabuf(int *id);
/* Its implicit write fence: a fake sync_file id, or -1 (idle). */
void fk_dmabuf_set_fence(int id, int sync_file_id);
/* The fake DRM device fd (created once, never reset). */
int fk_drm_fd(void);
/* Forget every object and close the fake kernel's own fds (pipe write ends,
 * eventfd registrations). */
void fk_reset(void);

#endif
