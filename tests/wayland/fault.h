/* SPDX-License-Identifier: MIT */
/*
 * fault-wl's parts (fault.c tells the whole story): the schedule and what
 * both sides' cases share (fault_schedule.c), the compositor helper's cases
 * (fault_server.c) and the client helper's (fault_client.c).
 */
#ifndef SB_FAULT_WL_H
#define SB_FAULT_WL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernel.h"
#include "wlt.h"

#define SERVER_SCOPE "libsyncbridge-wayland-server"
#define CLIENT_SCOPE "libsyncbridge-wayland-client"
#define BOUND (2000 * WLT_MS)

/* The program's state (fault.c): the compositor on its thread, the devices,
 * the dma-buf every case attaches, the options, the cases' tallies. */
extern struct wlt_comp comp;
extern struct wlt_devices dev;
extern struct sbk_buf buf;
extern bool quick, all_errnos;
extern int cases, n_kept, n_reported;

/* ---- fault_schedule.c ------------------------------------------------------------ */

/* The compositor's sb_wl_commit_release() results: failures, and those the header does not list. */
extern atomic_uint release_errors, release_undocumented;
/* Hold the compositor thread in its next sb_wl_commit_release(), once the
 * release event is flushed, until hold_end() (fault.c's header says why). */
void hold_next(void);
void hold_end(void);

/* A new compositor (render fences unless immediate; fault.c's options). */
void start_comp(bool immediate);
/* Until the compositor thread holds nothing more of the case. */
void settle(void);
/* Whether the use recorded at index i came after t; its acquire status in *status. */
bool used_after(int i, int64_t t, int *status);
void syncobj_free(uint32_t h);

#define MAX_IOCTLS 64

/* What the dry run of a scenario counted in the armed thread's scope. */
struct counts {
	unsigned ioctl, eventfd, dup, pthread_create;
	unsigned long req[MAX_IOCTLS]; /* the dry run's ioctl requests, in order */
};
void counts_read(struct counts *n);
/* Say what the dry run `what` counted in `scope`. */
void counts_note(const struct counts *n, const char *what, const char *scope);

/* Run case_fn once for each fault of the schedule (fault.c's header). */
void fail_each(const struct counts *n,
	       void (*case_fn)(const void *ctx, const char *sched, bool invisible), const void *ctx);
/* The checks every case ends with: the scheduled fault was hit where the dry run saw
 * its call, no close() of a closed fd, and the fds are those of `before` (freed). */
struct tb_fd_snapshot;
void case_end(const char *what, struct tb_fd_snapshot *before);

/* ---- the two sides ------------------------------------------------------------------ */

void server_part(void);
void client_part(void);

/*
 * harness.h counts checks per file: each of the other files hands its count
 * over (FAULT_CHECKS_FN), and main() adds them to its own before it finishes.
 */
struct fault_checks {
	int checks, failures;
};
struct fault_checks fault_schedule_checks(void);
struct fault_checks fault_server_checks(void);
struct fault_checks fault_client_checks(void);
#define FAULT_CHECKS_FN(name)                                                          \
	struct fault_checks name(void)                                                 \
	{                                                                              \
		return (struct fault_checks){ tb_checks, tb_failures };      \
	}

#endif
