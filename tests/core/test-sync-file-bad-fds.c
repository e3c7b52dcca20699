/* SPDX-License-Identifier: MIT */
/*
 * Every sb_sync_file_* function, handed an fd that is not a sync_file (or no
 * fd at all), fails with the documented error and leaves the caller's fd,
 * the output parameters and the process's fd table alone. See fd-kinds.h.
 */
#include <syncbridge/sync_file.h>

#include "harness.h"
#include "fd-kinds.h"

/* arg[0]: a timeout in ns (wait), or how many times the fd is passed (merge_array). */
static int
call_wait(int fd, const int64_t *arg, struct call_result *r)
{
	(void)r;
	return sb_sync_file_wait(fd, arg[0]);
}

static int
call_get_status(int fd, const int64_t *arg, struct call_result *r)
{
	int status = 12345;

	(void)arg;
	(void)r;
	return sb_sync_file_get_status(fd, &status);
}

static int
call_get_info(int fd, const int64_t *arg, struct call_result *r)
{
	struct sb_sync_file_info *info = OUT_PTR_SENTINEL;
	int ret = sb_sync_file_info_create(fd, &info);

	(void)arg;
	r->has_out_ptr = true;
	r->out_ptr = info;
	return ret;
}

static int
call_merge_self(int fd, const int64_t *arg, struct call_result *r)
{
	(void)arg;
	r->has_out_fd = true;
	return sb_sync_file_merge(fd, fd, &r->out_fd);
}

static int
call_merge_array(int fd, const int64_t *arg, struct call_result *r)
{
	int fds[3] = { fd, fd, fd };

	r->has_out_fd = true;
	return sb_sync_file_merge_array(fds, (size_t)arg[0], &r->out_fd);
}

/*
 * arg[0] 0: an empty accumulator (-1), which must validate fd, not just dup
 * it; 1: the bad fd as both accumulator and input: *acc_fd stays, and stays open.
 */
static int
call_accumulate(int fd, const int64_t *arg, struct call_result *r)
{
	r->has_acc = true;
	r->acc_before = r->acc_after = arg[0] ? fd : -1;
	return sb_sync_file_accumulate(&r->acc_after, fd);
}

static int
call_set_deadline(int fd, const int64_t *arg, struct call_result *r)
{
	(void)arg;
	(void)r;
	/* A kernel without SYNC_IOC_SET_DEADLINE must not make a non-sync_file "fine". */
	return sb_sync_file_set_deadline(fd, 1000000000ull);
}

static const struct bad_call calls[] = {
	{ "sb_sync_file_is_valid", NULL, { 0 }, sb_sync_file_is_valid },
	{ "sb_sync_file_wait(timeout 0)", call_wait, { 0 } },
	{ "sb_sync_file_wait(timeout 1 ms)", call_wait, { 1000000 } },
	{ "sb_sync_file_wait(SB_TIMEOUT_INFINITE)", call_wait, { SB_TIMEOUT_INFINITE } },
	{ "sb_sync_file_get_status", call_get_status, { 0 } },
	{ "sb_sync_file_info_create", call_get_info, { 0 } },
	{ "sb_sync_file_merge(fd, fd)", call_merge_self, { 0 } },
	{ "sb_sync_file_merge_array([fd], 1)", call_merge_array, { 1 } },
	{ "sb_sync_file_merge_array([fd, fd, fd], 3)", call_merge_array, { 3 } },
	{ "sb_sync_file_accumulate(&-1, fd)", call_accumulate, { 0 } },
	{ "sb_sync_file_accumulate(&fd, fd)", call_accumulate, { 1 } },
	{ "sb_sync_file_set_deadline", call_set_deadline, { 0 } },
};

int
main(void)
{
	int runs = run_bad_fd_matrix("sync_file", calls, ARRAY_LEN(calls));

	tb_note("%d (fd kind, call) pairs", runs);
	return tb_finish();
}
