/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous syncobj waiter's inside, shared by its two files:
 * syncobj_waiter.c (the public calls, the kernel's eventfd path) and
 * syncobj_hub.c (the fallback for kernels without DRM_IOCTL_SYNCOBJ_EVENTFD:
 * one thread per DRM fd and wait mode serving every waiter on it).
 */
#ifndef SB_SYNCOBJ_WAITER_H
#define SB_SYNCOBJ_WAITER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct syncobj_hub;

struct sb_syncobj_waiter {
	int drm_fd; /* borrowed */
	uint32_t handle;
	uint64_t point;
	uint32_t flags;
	int event_fd; /* owned; what the caller polls */
	bool uses_eventfd;
	struct syncobj_hub *hub; /* the fallback thread serving it, or NULL */
	uint64_t hub_id;         /* its registration there (a freed waiter's address may come back) */
	atomic_int error;        /* 0, or why the wait failed (fallback path) */
};

/* Write the waiter's eventfd (once: the callers make sure). */
void sb_syncobj_waiter_fire(struct sb_syncobj_waiter *w);

/*
 * Serve w (its point not signalled yet) from the fallback thread of its DRM
 * fd and flags, starting that thread if it is the first. 0, -ENOMEM, -EAGAIN
 * (no thread could be started), or an error creating the thread's own syncobj.
 */
int sb_syncobj_hub_add(struct sb_syncobj_waiter *w);
/* Stop serving w; once this returns the thread never touches w again. */
void sb_syncobj_hub_remove(struct sb_syncobj_waiter *w);

#endif
