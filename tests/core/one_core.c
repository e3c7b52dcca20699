/* SPDX-License-Identifier: MIT */
/*
 * One copy of the core per process (docs/core.md, "One core per process").
 *
 *   test-one-core CORE.so SIDE.so...
 *
 * dlopen()s libsyncbridge.so and every side library (EGL bridge, Wayland
 * helpers, PipeWire bridge: the paths come from meson) into this one process
 * and checks:
 *  - scope: from each side library's own lookup scope (dlsym on its handle),
 *    the core's shared state — the log level (sb_log_level@SYNCBRIDGE_PRIVATE),
 *    the trace switch, the syncobj waiter and its fallback thread pool
 *    (sb_syncobj_waiter_create) — is the one in libsyncbridge.so: same address,
 *    and dladdr() names the core. A side library that embeds a hidden copy of
 *    the core does not even reach it (NULL: it has no NEEDED on the core);
 *  - behaviour (when the EGL bridge is built): the log level is read from
 *    SYNCBRIDGE_DEBUG once per copy of the core. The core reads "info" first
 *    (a buffer queue created with SYNCBRIDGE_DISABLE says so at info level);
 *    then SYNCBRIDGE_DEBUG is set to "0" and the EGL bridge's first call,
 *    which says the same at info level, must still print: its log level is
 *    the core's. Control: run with the libraries of a build whose side
 *    libraries embed the core (the paths are arguments) and the second
 *    message is missing (the commit that added this test shows that run).
 *
 * Exit: 0 pass, 1 fail, 77 when the core cannot be loaded.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* The core's state that a side library must share, reached through a function. */
static const struct {
	const char *name;
	const char *version; /* NULL: default version */
} shared_state[] = {
	{ "sb_log_level", "SYNCBRIDGE_PRIVATE" },
	{ "sb_trace_enabled", "SYNCBRIDGE_PRIVATE" },
	{ "sb_syncobj_waiter_create", "SYNCBRIDGE_0" },
};

static void *
lookup(void *handle, const char *name, const char *version)
{
	return version ? dlvsym(handle, name, version) : dlsym(handle, name);
}

static bool
is_core_object(void *addr, const char *core_path)
{
	Dl_info info;
	char *want, *got;
	bool same;

	if (!addr || !dladdr(addr, &info) || !info.dli_fname)
		return false;
	want = realpath(core_path, NULL);
	got = realpath(info.dli_fname, NULL);
	same = want && got && strcmp(want, got) == 0;
	free(want);
	free(got);
	return same;
}

/* stderr into a temporary file while fn runs; returns what was written (malloc'd). */
static char *
capture_stderr(void (*fn)(void *), void *arg)
{
	char path[] = "/tmp/sb-one-core-XXXXXX";
	int fd = mkstemp(path), saved;
	char *buf;
	ssize_t n;

	REQUIRE(fd >= 0, "mkstemp");
	unlink(path);
	fflush(stderr);
	saved = dup(2);
	REQUIRE(saved >= 0 && dup2(fd, 2) == 2, "redirect stderr");
	fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	buf = calloc(1, 4096);
	REQUIRE(buf, "calloc");
	n = pread(fd, buf, 4095, 0);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return buf;
}

static void
core_first_call(void *core)
{
	int (*create)(unsigned, uint32_t, void **) = (int (*)(unsigned, uint32_t, void **))dlsym(core, "sb_buffer_queue_create");
	void (*destroy)(void *) = (void (*)(void *))dlsym(core, "sb_buffer_queue_destroy");
	void *q = NULL;

	REQUIRE(create && destroy, "sb_buffer_queue_create/destroy in the core");
	CHECK_EQ(create(2, 0, &q), 0, "sb_buffer_queue_create(2, 0)");
	destroy(q);
}

static void
egl_first_call(void *egl)
{
	int (*get_caps)(void *, uint32_t *) = (int (*)(void *, uint32_t *))dlsym(egl, "sb_egl_display_get_caps");
	static int not_a_display;
	uint32_t caps;

	REQUIRE(get_caps, "sb_egl_display_get_caps in the EGL bridge");
	/* Any display but EGL_NO_DISPLAY runs the bridge's once-only setup; this one is unknown to EGL. */
	get_caps(&not_a_display, &caps);
}

int
main(int argc, char **argv)
{
	void *core, *egl = NULL;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORE.so SIDE.so...\n", argv[0]);
		return 2;
	}
	core = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!core)
		tb_skip("cannot load the core %s: %s", argv[1], dlerror());

	for (int i = 2; i < argc; i++) {
		void *side = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);

		REQUIRE(side, "dlopen %s: %s", argv[i], dlerror());
		if (strstr(argv[i], "libsyncbridge-egl"))
			egl = side;
		for (size_t s = 0; s < sizeof(shared_state) / sizeof(shared_state[0]); s++) {
			const char *name = shared_state[s].name, *ver = shared_state[s].version;
			void *want = lookup(core, name, ver), *got = lookup(side, name, ver);

			CHECK(want, "the core exports %s@%s", name, ver ? ver : "");
			CHECK(want && got == want && is_core_object(got, argv[1]),
			      "%s: %s reaches the core's %s (%p, core's %p)", argv[i], name,
			      ver ? ver : "", got, want);
		}
	}

	if (egl) {
		char *core_log, *egl_log;

		setenv("SYNCBRIDGE_DISABLE", "1", 1);
		setenv("SYNCBRIDGE_DEBUG", "info", 1);
		core_log = capture_stderr(core_first_call, core);
		CHECK(strstr(core_log, "SYNCBRIDGE_DISABLE is set"),
		      "the core logs at info with SYNCBRIDGE_DEBUG=info (control: the capture sees it): [%s]",
		      core_log);
		/* Read once per process: a second copy of the core would read "0" now. */
		setenv("SYNCBRIDGE_DEBUG", "0", 1);
		egl_log = capture_stderr(egl_first_call, egl);
		CHECK(strstr(egl_log, "egl: SYNCBRIDGE_DISABLE is set"),
		      "the EGL bridge logs at the level the core read (one log level per process): [%s]",
		      egl_log);
		free(core_log);
		free(egl_log);
	} else {
		tb_note("the EGL bridge is not built: the log level is checked by address only");
	}
	return tb_finish();
}
