/* SPDX-License-Identifier: MIT */
/*
 * libsbfault's scope through the shared core (testbed/sbfault.c, in_scope()):
 * the side libraries call libsyncbridge.so for their kernel work, and the
 * fault tests scope libsbfault to a side library (fault-egl, fault-wl). A
 * call the core makes on the scoped library's behalf must count; the
 * program's own calls into the core must not (as when each side library
 * carried its own copy of the core).
 *
 *   test-fault-scope   scope "libsbtest_side": the core's SYNC_IOC_FILE_INFO
 *                      made for the stand-in side library fails (ENOMEM
 *                      injected, counted 1); the same call made by this
 *                      program directly is neither counted nor failed
 *                      (control: it reaches the kernel, ENOTTY on a pipe)
 */
#include <dlfcn.h>
#include <unistd.h>

#include <syncbridge/sync_file.h>

#include "harness.h"
#include "sbfault.h"

int sbtest_side_is_valid(int fd);

int
main(void)
{
	int p[2];

	if (!dlsym(RTLD_DEFAULT, "sbfault_arm_scoped"))
		tb_skip("libsbfault is not first in symbol lookup");
	if (dlsym(RTLD_DEFAULT, "__asan_init"))
		tb_skip("under ASan its interceptors hide the caller from libsbfault's scope");
	REQUIRE(pipe(p) == 0, "pipe");

	sbfault_arm_scoped("ioctl:*:ENOMEM", "libsbtest_side");
	CHECK(!sb_sync_file_is_valid(p[0]), "a pipe is no sync_file (direct call)");
	CHECK_EQ(sbfault_calls("ioctl"), 0, "ioctls counted for the program's own call into the core");
	CHECK(!sbtest_side_is_valid(p[0]), "a pipe is no sync_file (through the side library)");
	CHECK_EQ(sbfault_calls("ioctl"), 1, "ioctls counted for the core's call on the side library's behalf");
	CHECK_EQ(sbfault_injected(), 1, "faults injected");
	sbfault_disarm();

	close(p[0]);
	close(p[1]);
	return tb_finish();
}
