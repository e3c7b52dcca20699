/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: how the library decodes the kernel's SYNC_IOC_FILE_INFO
 * answers — sb_sync_file_info_create(), sb_sync_file_get_status(),
 * sb_sync_file_wait(fd, 0) and sb_sync_file_merge()'s validation.
 *
 * The input is the kernel's side of the conversation: this file defines
 * ioctl() (the executable's definition wins over libc's for the statically
 * linked core), and every SYNC_IOC_FILE_INFO is answered from the input:
 *
 *   per call: mode byte — odd: fail with an errno picked by the next byte;
 *             even: status (int8), count (uint16, mod 4097), name (32 bytes,
 *             not necessarily NUL-terminated), then for each fence slot the
 *             caller asked for (up to count): driver (32), timeline (32),
 *             status (int8), timestamp (8)
 *   an exhausted input answers "signalled, no fences" (so waits end).
 *
 * Invariants (abort = a finding): a successful get_info returns NUL-terminated
 * strings, no more fences than the kernel listed, and the kernel's statuses;
 * a failed one returns NULL and a documented error; get_status returns what
 * the kernel said; nothing reads or writes out of bounds (ASan).
 * The kernel's answers are trusted to be sane in size: at most 4096 fences.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sync_file.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <syncbridge/sync_file.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *in;
static size_t in_len, in_pos;
static uint32_t last_count;
static int32_t last_status;

static uint8_t
byte(void)
{
	return in_pos < in_len ? in[in_pos++] : 0;
}

static void
bytes(void *dst, size_t n)
{
	size_t k = in_pos < in_len ? (in_len - in_pos < n ? in_len - in_pos : n) : 0;

	memcpy(dst, in + in_pos, k);
	memset((uint8_t *)dst + k, 0, n - k);
	in_pos += k;
}

int
ioctl(int fd, unsigned long request, ...)
{
	static const int errs[] = { EINVAL, ENOMEM, EFAULT, ENOTTY, EINTR, EAGAIN, EBADF, EIO };
	struct sync_file_info *info;
	struct sync_fence_info *f;
	uint32_t count, asked;
	va_list ap;

	va_start(ap, request);
	info = va_arg(ap, struct sync_file_info *);
	va_end(ap);

	if (request == SYNC_IOC_MERGE) {
		struct sync_merge_data *m = (struct sync_merge_data *)info;
		m->fence = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		return m->fence < 0 ? -1 : 0;
	}
	if (request != SYNC_IOC_FILE_INFO) {
		errno = ENOTTY;
		return -1;
	}
	if (in_pos >= in_len) {
		/* Exhausted: signalled, no fences. */
		memset(info->name, 0, sizeof(info->name));
		info->status = 1;
		info->num_fences = 0;
		last_status = 1;
		last_count = 0;
		return 0;
	}
	if (byte() & 1) {
		errno = errs[byte() % (sizeof(errs) / sizeof(errs[0]))];
		return -1;
	}
	info->status = (int8_t)byte();
	count = byte();
	count |= (uint32_t)byte() << 8;
	count %= 4097;
	bytes(info->name, sizeof(info->name));
	asked = info->num_fences;
	f = (struct sync_fence_info *)(uintptr_t)info->sync_fence_info;
	if (asked && asked < count) {
		/* The kernel refuses a too small array. */
		errno = EINVAL;
		return -1;
	}
	for (uint32_t i = 0; f && i < asked && i < count; i++) {
		memset(&f[i], 0, sizeof(f[i]));
		bytes(f[i].driver_name, sizeof(f[i].driver_name));
		bytes(f[i].obj_name, sizeof(f[i].obj_name));
		f[i].status = (int8_t)byte();
		bytes(&f[i].timestamp_ns, sizeof(f[i].timestamp_ns));
	}
	info->num_fences = count;
	last_count = count;
	last_status = info->status;
	return 0;
}

static void
check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz invariant broken: %s\n", what);
		abort();
	}
}

static int
terminated(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct sb_sync_file_info *info = (void *)1;
	int ret, st, out = -1;

	if (fd < 0)
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	in = data;
	in_len = size;
	in_pos = 0;

	ret = sb_sync_file_info_create(fd, &info);
	if (ret == 0) {
		check(info != NULL, "get_info: 0 with a NULL result");
		check(terminated(info->name, sizeof(info->name)), "get_info: name not terminated");
		check(info->num_fences <= last_count, "get_info: more fences than the kernel listed");
		check(info->status == last_status, "get_info: aggregate status changed");
		for (uint32_t i = 0; i < info->num_fences; i++) {
			check(terminated(info->fences[i].driver, sizeof(info->fences[i].driver)),
			      "get_info: driver not terminated");
			check(terminated(info->fences[i].timeline, sizeof(info->fences[i].timeline)),
			      "get_info: timeline not terminated");
		}
		sb_sync_file_info_destroy(info);
	} else {
		check(info == NULL, "get_info: failed but *out is not NULL");
		check(ret == -EINVAL || ret == -ENOMEM || ret == -EFAULT || ret == -EBADF,
		      "get_info: undocumented error");
	}

	st = 99;
	ret = sb_sync_file_get_status(fd, &st);
	if (ret == 0)
		check(st == last_status, "get_status: not the kernel's status");
	else
		check(ret == -EINVAL || ret == -EBADF, "get_status: undocumented error");

	/* /dev/null polls readable at once: each loop turn consumes input, so it ends. */
	ret = sb_sync_file_wait(fd, 0);
	check(ret <= 0, "wait: positive result");

	ret = sb_sync_file_merge(fd, fd, &out);
	if (ret == 0)
		close(out);
	else
		check(out == -1, "merge: failed but *out_fd is not -1");
	return 0;
}
