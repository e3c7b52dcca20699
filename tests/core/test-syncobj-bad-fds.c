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

/* arg[]: the handle, point, timeout and flags each row passes (see calls[]). */
static int
call_export(int fd, const int64_t *arg, struct call_result *r)
{
	r->has_out_fd = true;
	return sb_syncobj_export_sync_file(fd, (uint32_t)arg[0], (uint64_t)arg[1], &r->out_fd);
}

/* The same bad fd as both the DRM device and the sync_file. */
static int
call_import(int fd, const int64_t *arg, struct call_result *r)
{
	(void)r;
	return sb_syncobj_import_sync_file(fd, 1, (uint64_t)arg[0], fd);
}

static int
call_signal(int fd, const int64_t *arg, struct call_result *r)
{
	(void)r;
	return sb_syncobj_signal(fd, 1, (uint64_t)arg[0]);
}

static int
call_query(int fd, const int64_t *arg, struct call_result *r)
{
	uint64_t point = 99;

	(void)arg;
	(void)r;
	return sb_syncobj_query(fd, 1, &point);
}

/* arg[]: point, timeout, flags. */
static int
call_wait(int fd, const int64_t *arg, struct call_result *r)
{
	(void)r;
	return sb_syncobj_wait(fd, 1, (uint64_t)arg[0], arg[1], (uint32_t)arg[2]);
}

/* arg[]: point, flags. */
static int
call_waiter(int fd, const int64_t *arg, struct call_result *r)
{
	struct sb_syncobj_waiter *w = OUT_PTR_SENTINEL;
	int ret = sb_syncobj_waiter_create(fd, 1, (uint64_t)arg[0], (uint32_t)arg[1], &w);

	r->has_out_ptr = true;
	r->out_ptr = w;
	if (ret == 0 && w && w != OUT_PTR_SENTINEL)
		sb_syncobj_waiter_destroy(w); /* wrongly succeeded: do not leak its fd/thread */
	return ret;
}

static const struct bad_call calls[] = {
	{ "sb_syncobj_export_sync_file(handle 1, point 0)", call_export, { 1, 0 } },
	{ "sb_syncobj_export_sync_file(handle 1, point 7)", call_export, { 1, 7 } },
	{ "sb_syncobj_export_sync_file(handle 0, point 0)", call_export, { 0, 0 } },
	{ "sb_syncobj_import_sync_file(fd, 1, 0, fd)", call_import, { 0 } },
	{ "sb_syncobj_import_sync_file(fd, 1, 7, fd)", call_import, { 7 } },
	{ "sb_syncobj_signal(point 0)", call_signal, { 0 } },
	{ "sb_syncobj_signal(point 7)", call_signal, { 7 } },
	{ "sb_syncobj_query", call_query, { 0 } },
	{ "sb_syncobj_wait(point 0, timeout 0)", call_wait, { 0, 0, 0 } },
	{ "sb_syncobj_wait(point 0, SB_TIMEOUT_INFINITE)", call_wait, { 0, SB_TIMEOUT_INFINITE, 0 } },
	{ "sb_syncobj_wait(point 7, INFINITE, WAIT_AVAILABLE)", call_wait,
	  { 7, SB_TIMEOUT_INFINITE, SB_SYNCOBJ_WAIT_AVAILABLE } },
};

static const struct bad_call waiter_calls[] = {
	{ "sb_syncobj_waiter_create(point 0)", call_waiter, { 0, 0 } },
	{ "sb_syncobj_waiter_create(point 7, WAIT_AVAILABLE)", call_waiter,
	  { 7, SB_SYNCOBJ_WAIT_AVAILABLE } },
};

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

	CHECK_EQ(tb_count_threads(), 1, "threads left after every waiter_create failed");
	tb_note("%d (fd kind, call) pairs", runs);
	return tb_finish();
}
