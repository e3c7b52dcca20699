/* SPDX-License-Identifier: MIT */
/*
 * Every sb_syncobj_* function, handed a drm_fd that is not a DRM device (or
 * no fd at all), fails with the documented error and leaves the caller's
 * fd, the output parameters and the process's fd table alone. See
 * fd-kinds.h.
 *
 * The kernel answers DRM ioctls on a non-DRM file with ENOTTY, which the
 * header does not list: the library reports "drm_fd is not a DRM device" as
 * -EINVAL (a bad argument), like "not a sync_file" elsewhere.
 */
#include <syncbridge/syncobj.h>

#include "harness.h"
#include "fd-kinds.h"

static int
export(int fd, uint32_t handle, uint64_t point, struct call_result *r)
{
	int out = OUT_FD_SENTINEL;
	int ret = sb_syncobj_export_sync_file(fd, handle, point, &out);

	r->has_out_fd = true;
	r->out_fd = out;
	return ret;
}

static int
call_export_binary(int fd, struct call_result *r)
{
	return export(fd, 1, 0, r);
}

static int
call_export_point(int fd, struct call_result *r)
{
	return export(fd, 1, 7, r);
}

static int
call_export_handle0(int fd, struct call_result *r)
{
	return export(fd, 0, 0, r);
}

/* The same bad fd as both the DRM device and the sync_file. */
static int
call_import_binary(int fd, struct call_result *r)
{
	(void)r;
	return sb_syncobj_import_sync_file(fd, 1, 0, fd);
}

static int
call_import_point(int fd, struct call_result *r)
{
	(void)r;
	return sb_syncobj_import_sync_file(fd, 1, 7, fd);
}

static int
call_signal_binary(int fd, struct call_result *r)
{
	(void)r;
	return sb_syncobj_signal(fd, 1, 0);
}

static int
call_signal_point(int fd, struct call_result *r)
{
	(void)r;
	return sb_syncobj_signal(fd, 1, 7);
}

static int
call_query(int fd, struct call_result *r)
{
	uint64_t point = 99;

	(void)r;
	return sb_syncobj_query(fd, 1, &point);
}

static int
call_wait_binary_poll(int fd, struct call_result *r)
{
	(void)r;
	return sb_syncobj_wait(fd, 1, 0, 0, 0);
}

static int
call_wait_binary_infinite(int fd, struct call_result *r)
{
	(void)r;
	return sb_syncobj_wait(fd, 1, 0, SB_TIMEOUT_INFINITE, 0);
}

static int
call_wait_point_available(int fd, struct call_result *r)
{
	(void)r;
	return sb_syncobj_wait(fd, 1, 7, SB_TIMEOUT_INFINITE, SB_SYNCOBJ_WAIT_AVAILABLE);
}

static int
waiter(int fd, uint64_t point, uint32_t flags, struct call_result *r)
{
	struct sb_syncobj_waiter *w = OUT_PTR_SENTINEL;
	int ret = sb_syncobj_waiter_create(fd, 1, point, flags, &w);

	r->has_out_ptr = true;
	r->out_ptr = w;
	if (ret == 0 && w && w != OUT_PTR_SENTINEL)
		sb_syncobj_waiter_destroy(w); /* wrongly succeeded: do not leak its fd/thread */
	return ret;
}

static int
call_waiter_binary(int fd, struct call_result *r)
{
	return waiter(fd, 0, 0, r);
}

static int
call_waiter_point_available(int fd, struct call_result *r)
{
	return waiter(fd, 7, SB_SYNCOBJ_WAIT_AVAILABLE, r);
}

static const struct bad_call calls[] = {
	{ "sb_syncobj_export_sync_file(handle 1, point 0)", call_export_binary },
	{ "sb_syncobj_export_sync_file(handle 1, point 7)", call_export_point },
	{ "sb_syncobj_export_sync_file(handle 0, point 0)", call_export_handle0 },
	{ "sb_syncobj_import_sync_file(fd, 1, 0, fd)", call_import_binary },
	{ "sb_syncobj_import_sync_file(fd, 1, 7, fd)", call_import_point },
	{ "sb_syncobj_signal(point 0)", call_signal_binary },
	{ "sb_syncobj_signal(point 7)", call_signal_point },
	{ "sb_syncobj_query", call_query },
	{ "sb_syncobj_wait(point 0, timeout 0)", call_wait_binary_poll },
	{ "sb_syncobj_wait(point 0, SB_TIMEOUT_INFINITE)", call_wait_binary_infinite },
	{ "sb_syncobj_wait(point 7, INFINITE, WAIT_AVAILABLE)", call_wait_point_available },
};

static const struct bad_call waiter_calls[] = {
	{ "sb_syncobj_waiter_create(point 0)", call_waiter_binary },
	{ "sb_syncobj_waiter_create(point 7, WAIT_AVAILABLE)", call_waiter_point_available },
};

/* Threads of this process (/proc/self/task): a failed waiter must not leave one behind. */
static int
count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

int
main(void)
{
	int runs;

	unsetenv("SYNCBRIDGE_SYNCOBJ_EVENTFD");
	runs = run_bad_fd_matrix("syncobj", calls, ARRAY_LEN(calls));
	runs += run_bad_fd_matrix("syncobj waiter", waiter_calls, ARRAY_LEN(waiter_calls));
	/* The waiter's fallback path too: no kernel eventfd attempt first. */
	setenv("SYNCBRIDGE_SYNCOBJ_EVENTFD", "0", 1);
	runs += run_bad_fd_matrix("syncobj waiter (SYNCBRIDGE_SYNCOBJ_EVENTFD=0)", waiter_calls,
				  ARRAY_LEN(waiter_calls));

	CHECK_EQ(count_threads(), 1, "threads left after every waiter_create failed");
	sb_test_note("%d (fd kind, call) pairs", runs);
	return sb_test_finish();
}
