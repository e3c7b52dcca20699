/* SPDX-License-Identifier: MIT */
/*
 * tracefs for `syncbridge-info trace` (tracefs.h). Two instances of its own:
 * instances/syncbridge-info.PID records the dma_fence events with the clock
 * "mono" (CLOCK_MONOTONIC, the clock of sync_file timestamps);
 * ….PID.sys the poll-family syscalls of the command and its descendants.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "info.h"
#include "trace_model.h"
#include "tracefs.h"

#define INSTANCE_PREFIX "syncbridge-info."

static int
write_file(const char *dir, const char *name, const char *value)
{
	char path[PATH_MAX];
	size_t len = strlen(value);
	ssize_t n;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_TRUNC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, len);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != len)
		ret = -EIO;
	close(fd);
	return ret;
}

static bool
is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 0 if dir/name exists, else -errno (-EACCES: dir not searchable by us). */
static int
has_file(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0 ? 0 : -errno;
}

int
tracefs_find(struct tracefs *tfs)
{
	const char *env = getenv("SYNCBRIDGE_TRACEFS");
	const char *candidates[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[PATH_MAX];
	bool denied = false;
	int ret;

	if (env && *env) {
		if (strlen(env) >= sizeof(tfs->root)) {
			info_err("SYNCBRIDGE_TRACEFS is too long");
			return -ENAMETOOLONG;
		}
		ret = has_file(env, "trace");
		if (ret == -EACCES || ret == -EPERM) {
			info_err("%s: permission denied: tracing needs root", env);
			return ret;
		}
		if (ret < 0) {
			info_err("SYNCBRIDGE_TRACEFS=%s is not a tracefs mount (no 'trace' "
				 "file there)", env);
			return -ENOENT;
		}
		snprintf(tfs->root, sizeof(tfs->root), "%s", env);
	} else {
		tfs->root[0] = '\0';
		for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
			ret = has_file(candidates[i], "trace");
			if (ret == 0) {
				snprintf(tfs->root, sizeof(tfs->root), "%s", candidates[i]);
				break;
			}
			denied |= ret == -EACCES || ret == -EPERM;
		}
		if (!tfs->root[0]) {
			if (denied)
				info_err("tracefs: permission denied: tracing needs root");
			else
				info_err("tracefs is not mounted (as root: mount -t tracefs nodev "
					 "/sys/kernel/tracing), or this kernel has no tracing "
					 "(CONFIG_FTRACE)");
			return denied ? -EACCES : -ENOENT;
		}
	}
	snprintf(path, sizeof(path), "%s/trace", tfs->root);
	if (access(path, R_OK | W_OK) != 0) {
		int err = errno;

		info_err("%s: %s: tracing needs root (or write access to tracefs)", path,
			 strerror(err));
		return -err;
	}
	snprintf(path, sizeof(path), "%s/events/dma_fence", tfs->root);
	if (!is_dir(path)) {
		info_err("%s is missing: this kernel has no dma_fence tracepoints (it needs "
			 "CONFIG_DMA_SHARED_BUFFER and CONFIG_TRACING)",
			 path);
		return -ENOENT;
	}
	return 0;
}

void
tracefs_remove_stale_instances(const struct tracefs *tfs)
{
	char dir[PATH_MAX], path[PATH_MAX * 2];
	DIR *d;
	struct dirent *e;

	snprintf(dir, sizeof(dir), "%s/instances", tfs->root);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(e->d_name, INSTANCE_PREFIX, strlen(INSTANCE_PREFIX)) != 0)
			continue;
		pid = strtol(e->d_name + strlen(INSTANCE_PREFIX), &end, 10);
		if ((*end && strcmp(end, ".sys") != 0) || pid <= 0 || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		rmdir(path);
	}
	closedir(d);
}

static void
read_clock(struct tracefs *tfs)
{
	char path[PATH_MAX + 16], *text, *l, *r;

	snprintf(tfs->clock, sizeof(tfs->clock), "unknown");
	snprintf(path, sizeof(path), "%s/trace_clock", tfs->instance);
	if (read_text_file(path, &text, NULL) < 0)
		return;
	l = strchr(text, '[');
	r = l ? strchr(l, ']') : NULL;
	if (l && r) {
		*r = '\0';
		snprintf(tfs->clock, sizeof(tfs->clock), "%s", l + 1);
	}
	free(text);
}

int
tracefs_instance_create(struct tracefs *tfs, unsigned long buffer_kb)
{
	char buf[32];
	int ret;

	snprintf(tfs->instance, sizeof(tfs->instance), "%s/instances/" INSTANCE_PREFIX "%d",
		 tfs->root, (int)getpid());
	if (mkdir(tfs->instance, 0700) < 0 && errno != EEXIST) {
		ret = -errno;
		info_err("cannot create the tracefs instance %s: %s%s", tfs->instance,
			 strerror(-ret),
			 ret == -EACCES || ret == -EPERM ? " (tracing needs root)" : "");
		tfs->instance[0] = '\0';
		return ret;
	}
	/* CLOCK_MONOTONIC, like sync_file timestamps; older kernels: keep the default */
	write_file(tfs->instance, "trace_clock", "mono");
	read_clock(tfs);
	write_file(tfs->instance, "options/record-tgid", "1");
	snprintf(buf, sizeof(buf), "%lu", buffer_kb);
	if (write_file(tfs->instance, "buffer_size_kb", buf) < 0)
		info_err("warning: could not set the ring buffer to %lu KiB per CPU", buffer_kb);
	write_file(tfs->instance, "trace", "");
	ret = write_file(tfs->instance, "events/dma_fence/enable", "1");
	if (ret < 0) {
		info_err("%s/events/dma_fence/enable: %s", tfs->instance, strerror(-ret));
		return ret;
	}
	ret = write_file(tfs->instance, "tracing_on", "1");
	if (ret < 0) {
		info_err("%s/tracing_on: %s", tfs->instance, strerror(-ret));
		return ret;
	}
	return 0;
}

void
tracefs_sys_instance_create(struct tracefs *tfs, unsigned long buffer_kb)
{
	char buf[64];
	int enabled = 0;

	snprintf(tfs->sys_instance, sizeof(tfs->sys_instance),
		 "%s/instances/" INSTANCE_PREFIX "%d.sys", tfs->root, (int)getpid());
	if (mkdir(tfs->sys_instance, 0700) < 0 && errno != EEXIST) {
		tfs->sys_instance[0] = '\0';
		return;
	}
	write_file(tfs->sys_instance, "tracing_on", "0");
	write_file(tfs->sys_instance, "trace_clock", tfs->clock);
	write_file(tfs->sys_instance, "options/record-tgid", "1");
	snprintf(buf, sizeof(buf), "%lu", buffer_kb / 4 > 256 ? buffer_kb / 4 : 256);
	write_file(tfs->sys_instance, "buffer_size_kb", buf);
	/*
	 * Not set_event_pid + options/event-fork: the pid filter hooks the
	 * scheduler's own tracepoints (sched_switch, sched_wakeup…), and
	 * turning those on live-patches the hottest code in the kernel. A
	 * TCG guest was seen to oops (int3 in ttwu_do_activate) doing that.
	 * sched_process_fork only patches fork; the model follows the tree.
	 */
	if (write_file(tfs->sys_instance, "events/sched/sched_process_fork/enable", "1") == 0) {
		for (size_t i = 0; i < TR_NPOLL_SYSCALLS; i++) {
			snprintf(buf, sizeof(buf), "events/syscalls/sys_enter_%s/enable",
				 tr_poll_syscalls[i]);
			if (write_file(tfs->sys_instance, buf, "1") < 0)
				continue;
			snprintf(buf, sizeof(buf), "events/syscalls/sys_exit_%s/enable",
				 tr_poll_syscalls[i]);
			if (write_file(tfs->sys_instance, buf, "1") == 0)
				enabled++;
		}
	}
	if (!enabled) {
		rmdir(tfs->sys_instance);
		tfs->sys_instance[0] = '\0';
	}
}

void
tracefs_sys_instance_start(struct tracefs *tfs)
{
	if (!tfs->sys_instance[0])
		return;
	if (write_file(tfs->sys_instance, "tracing_on", "1") < 0) {
		rmdir(tfs->sys_instance);
		tfs->sys_instance[0] = '\0';
	}
}

void
tracefs_instance_stop(struct tracefs *tfs)
{
	if (tfs->instance[0]) {
		write_file(tfs->instance, "tracing_on", "0");
		write_file(tfs->instance, "events/dma_fence/enable", "0");
	}
	if (tfs->sys_instance[0]) {
		write_file(tfs->sys_instance, "tracing_on", "0");
		write_file(tfs->sys_instance, "events/enable", "0");
	}
}

void
tracefs_instance_remove(struct tracefs *tfs)
{
	tracefs_instance_stop(tfs);
	if (tfs->instance[0] && rmdir(tfs->instance) < 0)
		info_err("warning: could not remove %s: %s", tfs->instance, strerror(errno));
	if (tfs->sys_instance[0] && rmdir(tfs->sys_instance) < 0)
		info_err("warning: could not remove %s: %s", tfs->sys_instance, strerror(errno));
	tfs->instance[0] = tfs->sys_instance[0] = '\0';
}
