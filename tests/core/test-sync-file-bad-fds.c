/* SPDX-License-Identifier: MIT */
/*
 * Every sb_sync_file_* function, handed an fd that is not a sync_file (or no
 * fd at all), fails with the documented error and leaves the caller's fd,
 * the output parameters and the process's fd table alone. See fd-kinds.h.
 */
#include <syncbridge/sync_file.h>

#include "harness.h"
#include "fd-kinds.h"

static int
call_is_valid(int fd, struct call_result *r)
{
	r->returns_bool = true;
	return sb_sync_file_is_valid(fd);
}

static int
call_wait_poll(int fd, struct call_result *r)
{
	(void)r;
	return sb_sync_file_wait(fd, 0);
}

static int
call_wait_1ms(int fd, struct call_result *r)
{
	(void)r;
	return sb_sync_file_wait(fd, 1000000);
}

static int
call_wait_infinite(int fd, struct call_result *r)
{
	(void)r;
	return sb_sync_file_wait(fd, SB_TIMEOUT_INFINITE);
}

static int
call_get_status(int fd, struct call_result *r)
{
	int status = 12345;
	int ret = sb_sync_file_get_status(fd, &status);

	(void)r;
	return ret;
}

static int
call_get_info(int fd, struct call_result *r)
{
	struct sb_sync_file_info *info = OUT_PTR_SENTINEL;
	int ret = sb_sync_file_get_info(fd, &info);

	r->has_out_ptr = true;
	r->out_ptr = info;
	return ret;
}

static int
call_merge_self(int fd, struct call_result *r)
{
	int out = OUT_FD_SENTINEL;
	int ret = sb_sync_file_merge(fd, fd, &out);

	r->has_out_fd = true;
	r->out_fd = out;
	return ret;
}

static int
call_merge_array_1(int fd, struct call_result *r)
{
	int fds[1] = { fd };
	int out = OUT_FD_SENTINEL;
	int ret = sb_sync_file_merge_array(fds, 1, &out);

	r->has_out_fd = true;
	r->out_fd = out;
	return ret;
}

static int
call_merge_array_3(int fd, struct call_result *r)
{
	int fds[3] = { fd, fd, fd };
	int out = OUT_FD_SENTINEL;
	int ret = sb_sync_file_merge_array(fds, 3, &out);

	r->has_out_fd = true;
	r->out_fd = out;
	return ret;
}

/* Empty accumulator: must validate fd, not just dup it. */
static int
call_accumulate_into_empty(int fd, struct call_result *r)
{
	int acc = -1;
	int ret = sb_sync_file_accumulate(&acc, fd);

	r->has_acc = true;
	r->acc_before = -1;
	r->acc_after = acc;
	return ret;
}

/* The bad fd as both accumulator and input: *acc_fd stays, and stays open. */
static int
call_accumulate_self(int fd, struct call_result *r)
{
	int acc = fd;
	int ret = sb_sync_file_accumulate(&acc, fd);

	r->has_acc = true;
	r->acc_before = fd;
	r->acc_after = acc;
	return ret;
}

static int
call_set_deadline(int fd, struct call_result *r)
{
	(void)r;
	/* A kernel without SYNC_IOC_SET_DEADLINE must not make a non-sync_file "fine". */
	return sb_sync_file_set_deadline(fd, 1000000000ull);
}

static const struct bad_call calls[] = {
	{ "sb_sync_file_is_valid", call_is_valid },
	{ "sb_sync_file_wait(timeout 0)", call_wait_poll },
	{ "sb_sync_file_wait(timeout 1 ms)", call_wait_1ms },
	{ "sb_sync_file_wait(SB_TIMEOUT_INFINITE)", call_wait_infinite },
	{ "sb_sync_file_get_status", call_get_status },
	{ "sb_sync_file_get_info", call_get_info },
	{ "sb_sync_file_merge(fd, fd)", call_merge_self },
	{ "sb_sync_file_merge_array([fd], 1)", call_merge_array_1 },
	{ "sb_sync_file_merge_array([fd, fd, fd], 3)", call_merge_array_3 },
	{ "sb_sync_file_accumulate(&-1, fd)", call_accumulate_into_empty },
	{ "sb_sync_file_accumulate(&fd, fd)", call_accumulate_self },
	{ "sb_sync_file_set_deadline", call_set_deadline },
};

int
main(void)
{
	int runs = run_bad_fd_matrix("sync_file", calls, ARRAY_LEN(calls));

	sb_test_note("%d (fd kind, call) pairs", runs);
	return sb_test_finish();
}
