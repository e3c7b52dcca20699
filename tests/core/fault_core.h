/* SPDX-License-Identifier: MIT */
/*
 * fault-core's two halves (the program: fault_core.c):
 *  - fault_core_cases.c: what a case works on (the objects, set up afresh in
 *    every child) and the scenarios: one call of a public function each,
 *    the errors its header documents, and the cases whose result is
 *    dictated more precisely (struct strict);
 *  - fault_core.c: the runner (dry run, one child per injected fault, the
 *    checks on what the call left behind).
 * The cases report through return values only: the harness's CHECK counters
 * are per translation unit (harness.h), and the runner's are the ones that
 * count.
 */
#ifndef TB_FAULT_CORE_H
#define TB_FAULT_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include <syncbridge/syncbridge.h>

#include "kernel.h"

/* ---- the objects a case works on ---- */

struct env {
	int vgem;
	int drm;           /* virtio_gpu render node, or -1 */
	struct sbk_fence pending;   /* a pending vgem write fence */
	struct sbk_fence pending2;  /* another, read */
	int signalled;     /* a signalled sync_file */
	int merged;        /* pending + signalled: 2 fences */
	struct sbk_buf buf;         /* udmabuf, idle */
	uint32_t bin;      /* binary syncobj, signalled */
	uint32_t tl;       /* timeline syncobj: point 1 signalled, point 2 = pending fence */
};

/* What a call gave back, for the checks and the clean-up. */
struct out {
	int fds[2];                        /* new fds the caller owns (-1: none) */
	struct sb_sync_file_info *info;
	struct sb_syncobj_waiter *waiter;
	int acc_before, acc;               /* accumulate: the accumulator before/after */
};

int fault_env_setup(struct env *e, bool need_syncobj);
/* Signals the pending fences and closes everything fault_env_setup() made. */
void fault_env_teardown(struct env *e);

/* ---- the scenarios ---- */

#define ERRS(...) ((const int[]){ __VA_ARGS__, 0 })

struct scenario {
	const char *name;
	bool need_syncobj;
	const int *documented; /* negative errnos the header lists, 0-terminated */
	int (*call)(struct env *e, struct out *o);
	/* After a successful call: does the result work? (may be NULL) */
	int (*verify)(struct env *e, struct out *o);
	/* The accumulator starts as a dup of e->signalled (else -1). */
	bool acc_preset;
};

extern const struct scenario fault_scenarios[];
extern const int fault_n_scenarios;

/*
 * Cases whose result is dictated more precisely than "a documented error":
 * the kernel error must come through (not be mistaken for a validation
 * failure), or the library must absorb it. `known`: a finding written up as
 * open in docs/reliability.md; the case is then a note, not a failure.
 */
struct strict {
	const char *scenario, *schedule;
	int want;
	const char *why, *known;
};

/* The strict expectation for scenario s under `schedule` ("ioctl:2:ENOMEM"), or NULL. */
const struct strict *fault_strict_for(const struct scenario *s, const char *schedule);

/* The name of an ioctl request the library makes ("SYNCOBJ_WAIT"), or "?". */
const char *fault_ioctl_name(unsigned long req);

#endif
