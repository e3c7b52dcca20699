/* SPDX-License-Identifier: MIT */
/* Markers for syncbridge-info trace (see trace.h). */
#include "trace.h"

#include <fcntl.h>
#include <inttypes.h>
#include <linux/sync_file.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

/* A marker line: tracefs takes up to a page per write; ours stay far below. */
#define LINE_MAX_LEN 512

static const char *const tracefs_markers[] = {
	"/sys/kernel/tracing/trace_marker",
	"/sys/kernel/debug/tracing/trace_marker",
};

static bool enabled;
static char marker_path[4096];
static atomic_bool write_failed_logged;
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;

/*
 * The file is opened for each line and closed at once: tracing must not
 * change what the traced program sees, and programs (the cube demo, the
 * tests) check that their fd count is the same at the end as at the start;
 * a marker fd kept open by each library copy would break that. An open of
 * tracefs' trace_marker costs microseconds, paid only while tracing.
 *
 * O_NONBLOCK: a marker must never hold the caller up (a FIFO without a reader
 * fails with ENXIO instead of blocking the open). O_APPEND: the processes of
 * one traced command may share a plain file. No O_CREAT: the variable names a
 * file that exists; nothing is created by accident.
 */
static int
open_marker(const char *path)
{
	return open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
}

/* Whether path can be opened for markers (opened once to check, then closed). */
static bool
try_path(const char *path)
{
	int fd = open_marker(path);

	if (fd < 0)
		return false;
	close(fd);
	if (snprintf(marker_path, sizeof(marker_path), "%s", path) >= (int)sizeof(marker_path)) {
		errno = ENAMETOOLONG;
		return false;
	}
	return true;
}

static void
read_env(void)
{
	const char *v = getenv("SYNCBRIDGE_TRACE");
	const char *path = getenv("SYNCBRIDGE_TRACE_MARKER");
	int saved = errno;

	if (!v || !*v || strcmp(v, "0") == 0)
		return;

	if (path && *path) {
		enabled = try_path(path);
		if (!enabled)
			sb_info("trace: cannot open SYNCBRIDGE_TRACE_MARKER=%s (%s): markers off",
				path, strerror(errno));
	} else {
		for (size_t i = 0; i < SB_ARRAY_SIZE(tracefs_markers) && !enabled; i++)
			enabled = try_path(tracefs_markers[i]);
		if (!enabled)
			sb_info("trace: SYNCBRIDGE_TRACE is set but no tracefs trace_marker can be "
				"opened (%s; tracefs needs root): markers off", strerror(errno));
	}
	if (enabled)
		sb_debug("trace: markers to %s", marker_path);
	errno = saved;
}

bool
sb_trace_enabled(void)
{
	pthread_once(&trace_once, read_env);
	return enabled;
}

void
sb_trace_printf(const char *fmt, ...)
{
	char line[LINE_MAX_LEN];
	int saved = errno;
	va_list ap;
	int n, fd;

	if (!sb_trace_enabled())
		return;
	memcpy(line, "syncbridge: ", 12);
	va_start(ap, fmt);
	n = vsnprintf(line + 12, sizeof(line) - 13, fmt, ap);
	va_end(ap);
	if (n < 0) {
		errno = saved;
		return;
	}
	n += 12;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2; /* cut: keep the line a line */
	line[n++] = '\n';

	/* One write() per line: one tracefs event, never interleaved with another thread's. */
	fd = open_marker(marker_path);
	if ((fd < 0 || write(fd, line, (size_t)n) != n) &&
	    !atomic_exchange(&write_failed_logged, true))
		sb_info("trace: a marker could not be written to %s (%s): dropping such lines",
			marker_path, strerror(errno));
	if (fd >= 0)
		close(fd);
	errno = saved;
}

static void
copy_word(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src[i] && i + 1 < len; i++)
		dst[i] = src[i] == ' ' || src[i] == '\t' || src[i] == '\n' ? '_' : src[i];
	dst[i] = '\0';
}

/*
 * The kernel names a sync_file made without a name after its fence:
 * "%s-%s%llu-%lld" of driver, timeline, context and seqno
 * (drivers/dma-buf/sync_file.c, sync_file_get_name()). Parse what follows
 * "DRIVER-TIMELINE". The name is cut at 31 characters, so a name that long
 * may have lost seqno digits: not used.
 */
static bool
parse_name(const char *name, const char *driver, const char *timeline, unsigned long long *ctx,
	   long long *seqno)
{
	size_t dl = strlen(driver), tl = strlen(timeline);
	char *end;

	if (strnlen(name, 32) >= 31 || strncmp(name, driver, dl) != 0 || name[dl] != '-' ||
	    strncmp(name + dl + 1, timeline, tl) != 0)
		return false;
	name += dl + 1 + tl;
	if (*name < '0' || *name > '9')
		return false;
	errno = 0;
	*ctx = strtoull(name, &end, 10);
	if (errno || *end != '-')
		return false;
	name = end + 1;
	*seqno = strtoll(name, &end, 10);
	return !errno && end != name && *end == '\0';
}

struct sb_trace_keys
sb_trace_sync_file(int fd)
{
	struct sb_trace_keys k = { "fence=none" };
	struct sync_file_info info;
	struct sync_fence_info fence;
	char driver[32], timeline[32], id[48], what[96];
	unsigned long long ctx = 0;
	long long seqno = 0;
	bool have_id = false;
	int saved = errno;

	if (fd < 0)
		return k;
	memset(&info, 0, sizeof(info));
	if (sb_ioctl(fd, SYNC_IOC_FILE_INFO, &info) < 0) {
		snprintf(k.s, sizeof(k.s), "fence=?");
		errno = saved;
		return k;
	}
	info.name[sizeof(info.name) - 1] = '\0';
	const char *status = info.status > 0 ? "signalled" : info.status == 0 ? "active" : "error";

	if (info.num_fences == 1) {
		/* The kernel fills as many entries as we offer room for, and needs room for all. */
		memset(&fence, 0, sizeof(fence));
		info.num_fences = 1;
		info.sync_fence_info = (uint64_t)(uintptr_t)&fence;
		if (sb_ioctl(fd, SYNC_IOC_FILE_INFO, &info) == 0) {
			fence.driver_name[sizeof(fence.driver_name) - 1] = '\0';
			fence.obj_name[sizeof(fence.obj_name) - 1] = '\0';
			have_id = parse_name(info.name, fence.driver_name, fence.obj_name, &ctx,
					     &seqno);
			copy_word(driver, sizeof(driver), fence.driver_name);
			copy_word(timeline, sizeof(timeline), fence.obj_name);
			snprintf(what, sizeof(what), "driver=%s timeline=%s", driver, timeline);
		} else {
			snprintf(what, sizeof(what), "fences=1");
		}
	} else {
		/* Several fences: one array (an export of a busy dma-buf) or a user-named merge. */
		have_id = parse_name(info.name, "dma_fence_array", "unbound", &ctx, &seqno) ||
			  parse_name(info.name, "dma_fence_chain", "unbound", &ctx, &seqno);
		snprintf(what, sizeof(what), "fences=%u", info.num_fences);
	}
	if (have_id)
		snprintf(id, sizeof(id), "fence=%llu:%lld", ctx, seqno);
	else
		snprintf(id, sizeof(id), "fence=?");
	snprintf(k.s, sizeof(k.s), "%s %s status=%s", id, what, status);
	errno = saved;
	return k;
}

unsigned long
sb_trace_ino(int fd)
{
	struct stat st;
	int saved = errno;
	unsigned long ino = fstat(fd, &st) == 0 ? (unsigned long)st.st_ino : 0;

	errno = saved;
	return ino;
}
