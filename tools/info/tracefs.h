/* SPDX-License-Identifier: MIT */
/*
 * The tracefs side of `syncbridge-info trace`: finding tracefs, and instances
 * of its own (instances/syncbridge-info.PID) so the global buffer and anyone
 * else tracing are left alone. Messages go through info_err().
 */
#ifndef INFO_TRACEFS_H
#define INFO_TRACEFS_H

#include <limits.h>
#include <sys/types.h>

struct tracefs {
	char root[PATH_MAX / 2]; /* the tracefs mount (room left for the paths below it) */
	char instance[PATH_MAX]; /* our instance directory, "" if none */
	char sys_instance[PATH_MAX]; /* the syscall instance, "" if none */
	char clock[32];
};

/*
 * Find a mounted tracefs ($SYNCBRIDGE_TRACEFS, /sys/kernel/tracing,
 * /sys/kernel/debug/tracing) with dma_fence events; explain what is missing
 * otherwise. Returns 0 or -errno.
 */
int tracefs_find(struct tracefs *tfs);

/* Remove instances left behind by a syncbridge-info that was killed. */
void tracefs_remove_stale_instances(const struct tracefs *tfs);

/*
 * The dma_fence instance: clock "mono" where the kernel has it (tfs->clock
 * says which), tgids recorded, buffer_kb per CPU, tracing on.
 * Returns 0 or -errno (said); call tracefs_instance_remove() either way.
 */
int tracefs_instance_create(struct tracefs *tfs, unsigned long buffer_kb);

/*
 * The syscall instance: poll-family enter/exit events of every task, and
 * sched_process_fork so that the model (tr_model_follow) can keep only the
 * command's tree. Created stopped. Optional: without
 * syscall tracepoints (CONFIG_FTRACE_SYSCALLS) the trace just lacks them
 * (tfs->sys_instance stays "").
 */
void tracefs_sys_instance_create(struct tracefs *tfs, unsigned long buffer_kb);

/* Called after the command forked, before it may exec: start recording. */
void tracefs_sys_instance_start(struct tracefs *tfs);

/* Stop recording (the buffers stay readable). */
void tracefs_instance_stop(struct tracefs *tfs);
/* Stop and remove both instances. */
void tracefs_instance_remove(struct tracefs *tfs);

#endif
