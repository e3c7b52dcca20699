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
static int marker_fd = -1;
static atomic_bool write_failed_logged;
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;

static int
open_marker(const char *path)
{
	/*
	 * O_NONBLOCK: a marker must never hold the caller up (a FIFO without a
	 * reader fails with ENXIO instead of blocking the open). O_APPEND: the
	 * processes of one traced command may share a plain file. No O_CREAT:
	 * the variable names a file that exists, nothing is created by accident.
	 */
	return open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
}

static void
read_env(void)
{
	const char *v = getenv("SYNCBRIDGE_TRACE");
	const char *path = getenv("SYNCBRIDGE_TRACE_MARKER");

	if (!v || !*v || strcmp(v, "0") == 0)
		return;

	if (path && *path) {
		marker_fd = open_marker(path);
		if (marker_fd < 0)
			sb_info("trace: cannot open SYNCBRIDGE_TRACE_MARKER=%s (%s): markers off", path,
				strerror(errno));
	} else {
		for (size_t i = 0; i < SB_ARRAY_SIZE(tracefs_markers) && marker_fd < 0; i++) {
			path = tracefs_markers[i];
			marker_fd = open_marker(path);
		}
		if (marker_fd < 0)
			sb_info("trace: SYNCBRIDGE_TRACE is set but no tracefs trace_marker can be "
				"opened (%s; tracefs needs root): markers off", strerror(errno));
	}
	enabled = marker_fd >= 0;
	if (enabled)
		sb_debug("trace: markers to %s (fd %d)", path, marker_fd);
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
	int n;

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
	if (write(marker_fd, line, (size_t)n) != n && !atomic_exchange(&write_failed_logged, true))
		sb_info("trace: a marker write failed (%s): dropping such lines",
			strerror(errno));
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
	char driver[32], timeline[32];
	unsigned long long ctx = 0;
	long long seqno = 0;
	bool have_id = false;
	int saved = errno;
	size_t n;

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
			n = (size_t)snprintf(k.s, sizeof(k.s), "driver=%s timeline=%s", driver,
					     timeline);
		} else {
			n = (size_t)snprintf(k.s, sizeof(k.s), "fences=1");
		}
	} else {
		/* Several fences: one array (an export of a busy dma-buf) or a user-named merge. */
		have_id = parse_name(info.name, "dma_fence_array", "unbound", &ctx, &seqno) ||
			  parse_name(info.name, "dma_fence_chain", "unbound", &ctx, &seqno);
		n = (size_t)snprintf(k.s, sizeof(k.s), "fences=%u", info.num_fences);
	}
	if (n < sizeof(k.s)) {
		char rest[sizeof(k.s)];

		snprintf(rest, sizeof(rest), "%s", k.s);
		if (have_id)
			snprintf(k.s, sizeof(k.s), "fence=%llu:%lld %s status=%s", ctx, seqno, rest,
				 status);
		else
			snprintf(k.s, sizeof(k.s), "fence=? %s status=%s", rest, status);
	}
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
