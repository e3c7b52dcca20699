/* SPDX-License-Identifier: MIT */
/*
 * Every sb_dmabuf_* function, handed an fd that is not a dma-buf (or no fd
 * at all), fails with the documented error and leaves the caller's fd, the
 * output parameters and the process's fd table alone. See fd-kinds.h.
 * Also: an access value that is neither READ nor WRITE is -EINVAL.
 */
#include <syncbridge/dmabuf.h>

#include <unistd.h>

#include "harness.h"
#include "fd-kinds.h"

/* arg[0]: the access (enum sb_access), arg[1]: a timeout in ns. */
static int
call_export(int fd, const int64_t *arg, struct call_result *r)
{
	r->has_out_fd = true;
	return sb_dmabuf_export_sync_file(fd, (enum sb_access)arg[0], &r->out_fd);
}

/* The same bad fd as both the dma-buf and the sync_file. */
static int
call_import(int fd, const int64_t *arg, struct call_result *r)
{
	(void)r;
	return sb_dmabuf_import_sync_file(fd, (enum sb_access)arg[0], fd);
}

static int
call_is_busy(int fd, const int64_t *arg, struct call_result *r)
{
	bool busy = false;

	(void)r;
	return sb_dmabuf_is_busy(fd, (enum sb_access)arg[0], &busy);
}

/*
 * With SB_TIMEOUT_INFINITE: a pipe's read end never becomes readable, so it
 * must be rejected, not waited on.
 */
static int
call_wait(int fd, const int64_t *arg, struct call_result *r)
{
	(void)r;
	return sb_dmabuf_wait(fd, (enum sb_access)arg[0], arg[1]);
}

static const struct bad_call calls[] = {
	{ "sb_dmabuf_is_valid", NULL, { 0 }, sb_dmabuf_is_valid },
	{ "sb_dmabuf_export_sync_file(READ)", call_export, { SB_ACCESS_READ } },
	{ "sb_dmabuf_export_sync_file(WRITE)", call_export, { SB_ACCESS_WRITE } },
	{ "sb_dmabuf_import_sync_file(fd, READ, fd)", call_import, { SB_ACCESS_READ } },
	{ "sb_dmabuf_import_sync_file(fd, WRITE, fd)", call_import, { SB_ACCESS_WRITE } },
	{ "sb_dmabuf_is_busy(READ)", call_is_busy, { SB_ACCESS_READ } },
	{ "sb_dmabuf_is_busy(WRITE)", call_is_busy, { SB_ACCESS_WRITE } },
	{ "sb_dmabuf_wait(READ, 0)", call_wait, { SB_ACCESS_READ, 0 } },
	{ "sb_dmabuf_wait(WRITE, 0)", call_wait, { SB_ACCESS_WRITE, 0 } },
	{ "sb_dmabuf_wait(READ, SB_TIMEOUT_INFINITE)", call_wait,
	  { SB_ACCESS_READ, SB_TIMEOUT_INFINITE } },
	{ "sb_dmabuf_wait(WRITE, SB_TIMEOUT_INFINITE)", call_wait,
	  { SB_ACCESS_WRITE, SB_TIMEOUT_INFINITE } },
};

/*
 * Bad access values on an open non-dma-buf: -EINVAL whichever check comes
 * first. (On a real dma-buf they are checked in the VM tier.)
 */
static void
check_bad_access(void)
{
	static const int bad[] = { 0, 3, 4, -1, 0x7fffffff };
	int p[2];

	REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		enum sb_access a = (enum sb_access)bad[i];
		char what[128];
		int out = OUT_FD_SENTINEL;
		bool busy;

		snprintf(what, sizeof(what), "sb_dmabuf_export_sync_file(pipe, access %d)", bad[i]);
		CHECK_EQ(sb_dmabuf_export_sync_file(p[0], a, &out), -EINVAL, what);
		CHECK(out == -1, "%s: output fd %d, want -1", what, out);
		snprintf(what, sizeof(what), "sb_dmabuf_import_sync_file(pipe, access %d)", bad[i]);
		CHECK_EQ(sb_dmabuf_import_sync_file(p[0], a, p[1]), -EINVAL, what);
		snprintf(what, sizeof(what), "sb_dmabuf_is_busy(pipe, access %d)", bad[i]);
		CHECK_EQ(sb_dmabuf_is_busy(p[0], a, &busy), -EINVAL, what);
		snprintf(what, sizeof(what), "sb_dmabuf_wait(pipe, access %d)", bad[i]);
		CHECK_EQ(sb_dmabuf_wait(p[0], a, 0), -EINVAL, what);
	}
	close(p[0]);
	close(p[1]);
}

int
main(void)
{
	int runs = run_bad_fd_matrix("dmabuf", calls, ARRAY_LEN(calls));

	tb_note("%d (fd kind, call) pairs", runs);
	check_bad_access();
	return tb_finish();
}
