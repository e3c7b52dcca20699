/* SPDX-License-Identifier: MIT */
/*
 * egl-mock-*: the bridge against a scripted EGL. This program defines the EGL
 * functions the bridge calls (eglQueryString, eglGetError,
 * eglGetCurrentContext, eglGetCurrentDisplay, eglGetProcAddress and, through
 * it, the sync entry points, glFlush and glFinish) and links the bridge's
 * static library, not libEGL. Its "GPU" is a pending vgem fence that a
 * helper thread signals after doing the "GL work" on the CPU — a hardware
 * GPU as far as fences go: exported fences are pending, GPU-side waits return
 * at once. That shows what llvmpipe cannot: a pending GL fence attached to a
 * dma-buf, a GPU-side wait that does not block, and exactly which fds EGL got
 * and when they were closed.
 *
 *   egl-mock probe            (host) entry-point choice per EGL version and
 *                             extensions, probing once per display, a full
 *                             display table, the glFinish fallback
 *   egl-mock wait [--core]    (vm) GPU-side wait: EGL gets a duplicate, owns
 *                             it, the call does not block; failed creation
 *                             closes the duplicate and waits on the CPU; a
 *                             failed server wait waits on the CPU
 *   egl-mock export [--core]  (vm) a pending GL fence comes back as a
 *                             close-on-exec sync_file; a driver with no fd falls
 *                             back to a CPU wait and -1
 *   egl-mock attach --access read|write [--control]
 *                             (vm) GL's pending fence is attached to a vgem
 *                             dma-buf: a consumer that polls the buffer waits
 *                             for GL's write (reads NEW) / a writer waits for
 *                             GL's read (GL read OLD); the control
 *                             (SYNCBRIDGE_DISABLE=1) shows the race
 *
 * No check depends on timing. "Did not wait on the CPU" is the GPU fence
 * still pending when the call returned, nobody being due to signal it until
 * then (a CPU wait would have lasted until vgem's own timer, ~10 s); "waited
 * until the fence signalled" is the helper's `signalling` flag, set just
 * before its signal, found set when the call returned. The helper's 500 ms
 * only gives a CPU wait the chance to block; in the attach control the "GPU"
 * runs only after the next party's access, however slowly the test runs.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include <EGL/egl.h>
#include <EGL/eglext.h>

#include <syncbridge/egl.h>
#include <syncbridge/syncbridge.h>

#include "harness.h"
#include "kernel.h"

#define MS INT64_C(1000000)
#define DELAY_NS (500 * MS)
#define OLD 0x11
#define NEW 0xee
#define BUF_SIZE 4096

/* ---- the scripted EGL ---- */

struct fake_sync {
	EGLenum type;
	int fd; /* owned by the fake EGL */
};

static struct {
	const char *version;
	const char *exts;
	const char *client_exts;
	EGLDisplay current_dpy;
	EGLContext current_ctx;
	EGLint error;

	/* behaviour */
	bool fail_create_with_fd;   /* eglCreateSync(NATIVE_FENCE, fd) → EGL_BAD_ALLOC */
	bool fail_server_wait;      /* eglWaitSync → EGL_FALSE */
	bool dup_gives_none;        /* eglDupNativeFenceFDANDROID → -1 */
	int gpu_fence;              /* the "GPU job": a pending sync_file (borrowed), or -1 */

	/* records */
	int ext_queries;            /* eglQueryString(dpy, EGL_EXTENSIONS) for a display */
	int creates_khr, creates_core;
	int live_syncs;
	int server_waits, client_waits, flushes_by_wait;
	int gl_flush, gl_finish;
	int last_fd_in;             /* the fd the last NATIVE_FENCE create got */
	bool last_fd_in_was_sync_file;
} fake;

static char fake_displays[40];
static char fake_context;

static void
fake_reset(const char *version, const char *exts)
{
	memset(&fake, 0, sizeof(fake));
	fake.version = version;
	fake.exts = exts;
	fake.client_exts = "EGL_EXT_client_extensions";
	fake.gpu_fence = -1;
	fake.last_fd_in = -1;
}

static bool
fake_valid(EGLDisplay dpy)
{
	return (char *)dpy >= fake_displays && (char *)dpy < fake_displays + sizeof(fake_displays);
}

EGLAPI const char *EGLAPIENTRY
eglQueryString(EGLDisplay dpy, EGLint name)
{
	if (dpy == EGL_NO_DISPLAY) {
		if (name == EGL_EXTENSIONS)
			return fake.client_exts;
		fake.error = EGL_BAD_DISPLAY;
		return NULL;
	}
	if (!fake_valid(dpy)) {
		fake.error = EGL_BAD_DISPLAY;
		return NULL;
	}
	switch (name) {
	case EGL_VERSION:
		return fake.version;
	case EGL_EXTENSIONS:
		fake.ext_queries++;
		return fake.exts;
	default:
		fake.error = EGL_BAD_PARAMETER;
		return NULL;
	}
}

EGLAPI EGLint EGLAPIENTRY
eglGetError(void)
{
	EGLint e = fake.error ? fake.error : EGL_SUCCESS;

	fake.error = 0;
	return e;
}

EGLAPI EGLContext EGLAPIENTRY
eglGetCurrentContext(void)
{
	return fake.current_ctx;
}

EGLAPI EGLDisplay EGLAPIENTRY
eglGetCurrentDisplay(void)
{
	return fake.current_dpy;
}

static EGLSync
fake_create(EGLDisplay dpy, EGLenum type, EGLint fd_attr)
{
	struct fake_sync *s;

	if (!fake_valid(dpy)) {
		fake.error = EGL_BAD_DISPLAY;
		return EGL_NO_SYNC;
	}
	if (fake.current_dpy != dpy || fake.current_ctx == EGL_NO_CONTEXT) {
		fake.error = EGL_BAD_MATCH;
		return EGL_NO_SYNC;
	}
	if (type == EGL_SYNC_NATIVE_FENCE_ANDROID && fd_attr != EGL_NO_NATIVE_FENCE_FD_ANDROID) {
		fake.last_fd_in = fd_attr;
		fake.last_fd_in_was_sync_file = sbk_sync_file_info_raw(fd_attr, NULL, NULL, 0, NULL) == 0;
		if (fake.fail_create_with_fd) {
			/* Not created: the fd stays the caller's. */
			fake.error = EGL_BAD_ALLOC;
			return EGL_NO_SYNC;
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		fake.error = EGL_BAD_ALLOC;
		return EGL_NO_SYNC;
	}
	s->type = type;
	s->fd = -1;
	if (type == EGL_SYNC_NATIVE_FENCE_ANDROID && fd_attr != EGL_NO_NATIVE_FENCE_FD_ANDROID)
		s->fd = fd_attr; /* created: EGL owns it now */
	else if (fake.gpu_fence >= 0)
		s->fd = fcntl(fake.gpu_fence, F_DUPFD_CLOEXEC, 0); /* a fence on the GPU job */
	fake.live_syncs++;
	return (EGLSync)s;
}

static EGLint
attrib_fd(const EGLint *attribs)
{
	for (; attribs && attribs[0] != EGL_NONE; attribs += 2)
		if (attribs[0] == EGL_SYNC_NATIVE_FENCE_FD_ANDROID)
			return attribs[1];
	return EGL_NO_NATIVE_FENCE_FD_ANDROID;
}

static EGLSyncKHR EGLAPIENTRY
fake_create_sync_khr(EGLDisplay dpy, EGLenum type, const EGLint *attribs)
{
	fake.creates_khr++;
	return fake_create(dpy, type, attrib_fd(attribs));
}

static EGLSync EGLAPIENTRY
fake_create_sync(EGLDisplay dpy, EGLenum type, const EGLAttrib *attribs)
{
	EGLint fd = EGL_NO_NATIVE_FENCE_FD_ANDROID;

	fake.creates_core++;
	for (; attribs && attribs[0] != EGL_NONE; attribs += 2)
		if (attribs[0] == EGL_SYNC_NATIVE_FENCE_FD_ANDROID)
			fd = (EGLint)attribs[1];
	return fake_create(dpy, type, fd);
}

static EGLBoolean EGLAPIENTRY
fake_destroy_sync(EGLDisplay dpy, EGLSync sync)
{
	struct fake_sync *s = sync;

	(void)dpy;
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	fake.live_syncs--;
	return EGL_TRUE;
}

static EGLint
fake_client_wait_common(EGLSync sync, EGLint flags, uint64_t timeout)
{
	struct fake_sync *s = sync;
	struct pollfd p;
	int ms;

	fake.client_waits++;
	if (flags & EGL_SYNC_FLUSH_COMMANDS_BIT_KHR)
		fake.flushes_by_wait++;
	if (s->fd < 0)
		return EGL_CONDITION_SATISFIED_KHR;
	p.fd = s->fd;
	p.events = POLLIN;
	ms = timeout == EGL_FOREVER_KHR ? -1 : (int)(timeout / 1000000);
	while (poll(&p, 1, ms) < 0)
		;
	return (p.revents & POLLIN) ? EGL_CONDITION_SATISFIED_KHR : EGL_TIMEOUT_EXPIRED_KHR;
}

static EGLint EGLAPIENTRY
fake_client_wait_sync_khr(EGLDisplay dpy, EGLSyncKHR sync, EGLint flags, EGLTimeKHR timeout)
{
	(void)dpy;
	return fake_client_wait_common(sync, flags, timeout);
}

static EGLint EGLAPIENTRY
fake_client_wait_sync(EGLDisplay dpy, EGLSync sync, EGLint flags, EGLTime timeout)
{
	(void)dpy;
	return fake_client_wait_common(sync, flags, timeout);
}

static EGLint EGLAPIENTRY
fake_wait_sync_khr(EGLDisplay dpy, EGLSyncKHR sync, EGLint flags)
{
	(void)dpy;
	(void)sync;
	if (flags != 0) {
		fake.error = EGL_BAD_PARAMETER;
		return EGL_FALSE;
	}
	if (fake.fail_server_wait) {
		fake.error = EGL_BAD_ALLOC;
		return EGL_FALSE;
	}
	fake.server_waits++; /* a GPU would wait; the CPU goes on */
	return EGL_TRUE;
}

static EGLBoolean EGLAPIENTRY
fake_wait_sync(EGLDisplay dpy, EGLSync sync, EGLint flags)
{
	return fake_wait_sync_khr(dpy, sync, flags) == EGL_TRUE;
}

static EGLint EGLAPIENTRY
fake_dup_native_fence_fd(EGLDisplay dpy, EGLSyncKHR sync)
{
	struct fake_sync *s = sync;

	(void)dpy;
	if (fake.dup_gives_none || s->fd < 0)
		return EGL_NO_NATIVE_FENCE_FD_ANDROID;
	return dup(s->fd); /* plain dup: no close-on-exec, the bridge must set it */
}

static void
fake_gl_flush(void)
{
	fake.gl_flush++;
}

static void
fake_gl_finish(void)
{
	fake.gl_finish++;
}

EGLAPI __eglMustCastToProperFunctionPointerType EGLAPIENTRY
eglGetProcAddress(const char *name)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} procs[] = {
#define P(n, f) { n, (void (*)(void))(f) }
		P("eglCreateSyncKHR", fake_create_sync_khr),
		P("eglDestroySyncKHR", fake_destroy_sync),
		P("eglClientWaitSyncKHR", fake_client_wait_sync_khr),
		P("eglWaitSyncKHR", fake_wait_sync_khr),
		P("eglCreateSync", fake_create_sync),
		P("eglDestroySync", fake_destroy_sync),
		P("eglClientWaitSync", fake_client_wait_sync),
		P("eglWaitSync", fake_wait_sync),
		P("eglDupNativeFenceFDANDROID", fake_dup_native_fence_fd),
		P("glFlush", fake_gl_flush),
		P("glFinish", fake_gl_finish),
#undef P
	};

	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
		if (strcmp(procs[i].name, name) == 0)
			return procs[i].fn;
	return NULL;
}

/* ---- helpers ---- */

#define NATIVE_EXTS "EGL_KHR_fence_sync EGL_KHR_wait_sync EGL_ANDROID_native_fence_sync"

static unsigned next_display;

/* A display pointer the bridge has never seen (its probe cache is per process). */
static EGLDisplay
new_display(void)
{
	REQUIRE(next_display < sizeof(fake_displays), "out of fake displays");
	return (EGLDisplay)&fake_displays[next_display++];
}

static void
make_current(EGLDisplay dpy)
{
	fake.current_dpy = dpy;
	fake.current_ctx = (EGLContext)&fake_context;
}

static bool
has_arg(int argc, char **argv, const char *arg)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], arg) == 0)
			return true;
	return false;
}

static const char *
arg_value(int argc, char **argv, const char *opt, const char *def)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], opt) == 0)
			return argv[i + 1];
	return def;
}

static int
require_vgem(void)
{
	int fd = sbk_vgem_open();

	if (fd < 0)
		sb_test_skip("no vgem node (%s): run in the VM tier as root", strerror(-fd));
	return fd;
}

/*
 * Another thread signals a vgem fence, doing `work` first: DELAY_NS after
 * later_start(), or, after later_start_on_go(), once later_go() says so (and
 * its delay has passed).
 */
struct later {
	pthread_t thread;
	struct sbk_fence *fence;
	void (*work)(void *);
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool on_go, go;
	int64_t delay_ns;
	atomic_bool signalling; /* set just before the signal */
	int64_t signalled_ns;
	int ret;
};

static void *
later_main(void *p)
{
	struct later *l = p;

	pthread_mutex_lock(&l->lock);
	while (l->on_go && !l->go)
		pthread_cond_wait(&l->cond, &l->lock);
	pthread_mutex_unlock(&l->lock);
	sbk_sleep_ns(l->delay_ns);
	if (l->work)
		l->work(l->arg);
	atomic_store(&l->signalling, true);
	l->ret = sbk_fence_signal(l->fence);
	l->signalled_ns = sbk_now_ns();
	return NULL;
}

static void
later_start_common(struct later *l, struct sbk_fence *fence, void (*work)(void *), void *arg,
		   bool on_go)
{
	memset(l, 0, sizeof(*l));
	l->fence = fence;
	l->work = work;
	l->arg = arg;
	l->on_go = on_go;
	l->delay_ns = DELAY_NS;
	atomic_init(&l->signalling, false);
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	REQUIRE(pthread_create(&l->thread, NULL, later_main, l) == 0, "pthread_create");
}

static void
later_start(struct later *l, struct sbk_fence *fence, void (*work)(void *), void *arg)
{
	later_start_common(l, fence, work, arg, false);
}

static void
later_start_on_go(struct later *l, struct sbk_fence *fence, void (*work)(void *), void *arg)
{
	later_start_common(l, fence, work, arg, true);
}

/* Let an on-go helper run, delay_ns from now. */
static void
later_go(struct later *l, int64_t delay_ns)
{
	pthread_mutex_lock(&l->lock);
	l->delay_ns = delay_ns;
	l->go = true;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

static int
later_join(struct later *l)
{
	pthread_join(l->thread, NULL);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	return l->ret;
}

/* The fence's status now (0 pending, 1 signalled), or -99 when the query failed. */
static int
fence_status(const struct sbk_fence *f)
{
	int st = -99;

	return sb_sync_file_get_status(f->sync_file, &st) == 0 ? st : -99;
}

static void
fence_init(struct sbk_fence *f)
{
	memset(f, 0, sizeof(*f));
	f->sync_file = -1;
	f->bo.fd = -1;
	f->bo.vgem_fd = -1;
}

/* ---- probe (host) ---- */

static void
expect_caps(const char *what, const char *version, const char *exts, uint32_t want)
{
	EGLDisplay dpy = new_display();
	uint32_t caps = 0;

	fake_reset(version, exts);
	CHECK_EQ(sb_egl_display_get_caps(dpy, &caps), 0, what);
	CHECK(caps == want, "%s: caps 0x%x, want 0x%x", what, caps, want);
}

static void
run_probe(void)
{
	const uint32_t native = SB_EGL_CAP_NATIVE_FENCE, gpu = SB_EGL_CAP_GPU_WAIT,
		       fence = SB_EGL_CAP_FENCE_SYNC, core = SB_EGL_CAP_CORE_SYNC;
	EGLDisplay dpy;
	uint32_t caps;
	int fd;

	expect_caps("EGL 1.4 + KHR + native", "1.4 fake", NATIVE_EXTS, native | gpu | fence);
	expect_caps("EGL 1.5 + KHR + native: KHR preferred", "1.5 fake", NATIVE_EXTS,
		    native | gpu | fence);
	expect_caps("EGL 1.5, native only: core entry points", "1.5 fake",
		    "EGL_ANDROID_native_fence_sync", native | gpu | fence | core);
	expect_caps("EGL 1.4, native without fence sync: unusable", "1.4 fake",
		    "EGL_ANDROID_native_fence_sync", 0);
	expect_caps("EGL 1.4, fence + native, no wait sync: CPU waits", "1.4 fake",
		    "EGL_KHR_fence_sync EGL_ANDROID_native_fence_sync", native | fence);
	expect_caps("EGL 1.4, fence sync only", "1.4 fake", "EGL_KHR_fence_sync", fence);
	expect_caps("EGL 1.5, no extensions", "1.5 fake", "", fence | core);
	expect_caps("EGL 1.4, nothing", "1.4 fake", "", 0);

	/* Probed once per display: many calls, one extension query. */
	fake_reset("1.4 fake", "EGL_KHR_fence_sync");
	dpy = new_display();
	make_current(dpy);
	for (int i = 0; i < 20; i++) {
		REQUIRE(sb_egl_display_get_caps(dpy, &caps) == 0, "caps");
		REQUIRE(sb_egl_wait_sync_file(dpy, -1) == 0, "wait(-1)");
	}
	CHECK_EQ(fake.ext_queries, 1, "extensions queried once for 40 calls");

	/* Fallback export through an EGL fence sync: flushed, client-waited, destroyed. */
	fd = 99;
	CHECK_EQ(sb_egl_export_sync_file(dpy, &fd), 0, "export without native fences");
	CHECK_EQ(fd, -1, "fd -1: GL done");
	CHECK_EQ(fake.creates_khr, 1, "one fence sync");
	CHECK_EQ(fake.flushes_by_wait, 1, "client wait with FLUSH_COMMANDS");
	CHECK_EQ(fake.live_syncs, 0, "destroyed");
	CHECK_EQ(fake.gl_finish, 0, "no glFinish needed");

	/* No fence sync at all: glFinish, when eglGetProcAddress may give GL functions. */
	fake_reset("1.4 fake", "EGL_KHR_get_all_proc_addresses");
	dpy = new_display();
	make_current(dpy);
	fd = 99;
	CHECK_EQ(sb_egl_export_sync_file(dpy, &fd), 0, "export with glFinish");
	CHECK_EQ(fd, -1, "fd -1");
	CHECK_EQ(fake.gl_finish, 1, "glFinish called once");
	fake_reset("1.4 fake", "");
	dpy = new_display();
	make_current(dpy);
	fd = 99;
	CHECK_EQ(sb_egl_export_sync_file(dpy, &fd), -EIO, "no fence sync, no GL entry points: -EIO");
	CHECK_EQ(fd, -1, "fd -1 on failure");
	CHECK_EQ(fake.gl_finish, 0, "glFinish not called without EGL_KHR_get_all_proc_addresses");

	/* More displays than the table holds (16): still correct, probed per call. */
	for (int i = 0; i < 17; i++)
		expect_caps("filling the table", "1.4 fake", "EGL_KHR_fence_sync", fence);
	fake_reset("1.4 fake", "EGL_KHR_fence_sync EGL_KHR_wait_sync");
	dpy = new_display();
	for (int i = 0; i < 3; i++) {
		REQUIRE(sb_egl_display_get_caps(dpy, &caps) == 0, "caps");
		CHECK_EQ(caps, fence, "a display beyond the table");
	}
	CHECK_EQ(fake.ext_queries, 3, "a display beyond the table is probed on every call");
	CHECK_EQ(sb_egl_display_get_caps((EGLDisplay)&fake_context, &caps), -EINVAL,
		 "a pointer that is not a display (EGL_BAD_DISPLAY)");
}

/* ---- wait (vm) ---- */

static void
run_wait(bool core)
{
	int vgem = require_vgem();
	struct sbk_fence f;
	struct later l;
	EGLDisplay dpy;
	int before, ret;
	int64_t t0, dt;
	bool after;

	fake_reset(core ? "1.5 fake" : "1.4 fake",
		   core ? "EGL_ANDROID_native_fence_sync" : NATIVE_EXTS);
	dpy = new_display();
	make_current(dpy);

	/* GPU-side: EGL gets a duplicate, owns it, and the call does not block. */
	fence_init(&f);
	REQUIRE(sbk_fence_create(vgem, true, &f) == 0, "pending vgem fence");
	before = sb_test_count_fds();
	t0 = sbk_now_ns();
	ret = sb_egl_wait_sync_file(dpy, f.sync_file);
	dt = sbk_now_ns() - t0;
	CHECK_EQ(ret, 0, "GPU-side wait");
	/* Nobody signals it before this check: a CPU wait would have run into vgem's timer. */
	CHECK(fence_status(&f) == 0, "returned without waiting on the CPU (fence still pending; %.1f ms)",
	      (double)dt / 1e6);
	CHECK_EQ(fake.server_waits, 1, "one server wait");
	CHECK_EQ(core ? fake.creates_core : fake.creates_khr, 1,
		 core ? "through eglCreateSync (1.5)" : "through eglCreateSyncKHR");
	CHECK(fake.last_fd_in >= 0 && fake.last_fd_in != f.sync_file,
	      "EGL got a duplicate (fd %d), not the caller's fd %d", fake.last_fd_in, f.sync_file);
	CHECK(fake.last_fd_in_was_sync_file, "the duplicate is a sync_file");
	CHECK_EQ(fake.live_syncs, 0, "the EGLSync was destroyed after the wait");
	CHECK(!sbk_fd_is_open(fake.last_fd_in) || fake.last_fd_in == f.sync_file,
	      "EGL closed its duplicate with the sync");
	CHECK_EQ(sb_test_count_fds(), before, "fd count unchanged");
	CHECK(sb_sync_file_is_valid(f.sync_file), "the caller's fd is untouched");
	REQUIRE(sbk_fence_signal(&f) == 0, "signal");
	sbk_fence_destroy(&f);

	/* eglCreateSync fails: the bridge closes its duplicate and waits on the CPU. */
	fence_init(&f);
	REQUIRE(sbk_fence_create(vgem, true, &f) == 0, "pending vgem fence");
	fake.fail_create_with_fd = true;
	before = sb_test_count_fds();
	later_start(&l, &f, NULL, NULL);
	t0 = sbk_now_ns();
	ret = sb_egl_wait_sync_file(dpy, f.sync_file);
	dt = sbk_now_ns() - t0;
	after = atomic_load(&l.signalling);
	CHECK_EQ(later_join(&l), 0, "signalled");
	CHECK_EQ(ret, 0, "failed create: CPU fallback");
	CHECK(after, "the fallback waited until the fence signalled (%.1f ms)", (double)dt / 1e6);
	CHECK(fake.last_fd_in >= 0 && !sbk_fd_is_open(fake.last_fd_in),
	      "the duplicate EGL refused was closed by the bridge");
	CHECK_EQ(sb_test_count_fds(), before, "fd count unchanged");
	CHECK(sb_sync_file_is_valid(f.sync_file), "the caller's fd is untouched");
	fake.fail_create_with_fd = false;
	sbk_fence_destroy(&f);

	/* eglWaitSync fails: destroyed, CPU fallback. */
	fence_init(&f);
	REQUIRE(sbk_fence_create(vgem, true, &f) == 0, "pending vgem fence");
	fake.fail_server_wait = true;
	before = sb_test_count_fds();
	later_start(&l, &f, NULL, NULL);
	t0 = sbk_now_ns();
	ret = sb_egl_wait_sync_file(dpy, f.sync_file);
	dt = sbk_now_ns() - t0;
	after = atomic_load(&l.signalling);
	CHECK_EQ(later_join(&l), 0, "signalled");
	CHECK_EQ(ret, 0, "failed server wait: CPU fallback");
	CHECK(after, "the fallback waited until the fence signalled (%.1f ms)", (double)dt / 1e6);
	CHECK_EQ(fake.live_syncs, 0, "the sync was destroyed");
	CHECK_EQ(sb_test_count_fds(), before, "fd count unchanged");
	fake.fail_server_wait = false;
	sbk_fence_destroy(&f);
	close(vgem);
}

/* ---- export (vm) ---- */

static void
run_export(bool core)
{
	int vgem = require_vgem();
	struct sbk_fence gpu;
	struct later l;
	EGLDisplay dpy;
	int before, fd, status, flags, ret;
	int64_t t0, dt;
	bool after;

	fake_reset(core ? "1.5 fake" : "1.4 fake",
		   core ? "EGL_ANDROID_native_fence_sync" : NATIVE_EXTS);
	dpy = new_display();
	make_current(dpy);
	fence_init(&gpu);
	REQUIRE(sbk_fence_create(vgem, true, &gpu) == 0, "the GPU job's fence");
	fake.gpu_fence = gpu.sync_file;

	before = sb_test_count_fds();
	fd = -2;
	CHECK_EQ(sb_egl_export_sync_file(dpy, &fd), 0, "export while the GPU is busy");
	CHECK(fd >= 0 && sb_sync_file_is_valid(fd), "a sync_file (fd %d)", fd);
	flags = fd >= 0 ? fcntl(fd, F_GETFD) : -1;
	CHECK(flags >= 0 && (flags & FD_CLOEXEC), "close-on-exec (the driver's dup had none)");
	status = 99;
	CHECK_EQ(sb_sync_file_get_status(fd, &status), 0, "status");
	CHECK_EQ(status, 0, "pending: it is the GPU job's fence");
	CHECK_EQ(fake.live_syncs, 0, "the EGLSync was destroyed");
	CHECK(fake.flushes_by_wait >= 1, "flushed");
	CHECK_EQ(sb_test_count_fds(), before + 1, "exactly one new fd: ours");
	REQUIRE(sbk_fence_signal(&gpu) == 0, "GPU done");
	CHECK_EQ(sb_sync_file_wait(fd, 5000 * MS), 0, "the exported fence signals with the GPU job");
	close(fd);
	sbk_fence_destroy(&gpu);

	/* The driver gives no fd even after glFlush: CPU wait for GL, fd -1. */
	fence_init(&gpu);
	REQUIRE(sbk_fence_create(vgem, true, &gpu) == 0, "the GPU job's fence");
	fake.gpu_fence = gpu.sync_file;
	fake.dup_gives_none = true;
	fake.gl_flush = 0;
	before = sb_test_count_fds();
	later_start(&l, &gpu, NULL, NULL);
	t0 = sbk_now_ns();
	fd = -2;
	ret = sb_egl_export_sync_file(dpy, &fd);
	dt = sbk_now_ns() - t0;
	after = atomic_load(&l.signalling);
	CHECK_EQ(later_join(&l), 0, "signalled");
	CHECK_EQ(ret, 0, "export falls back");
	CHECK_EQ(fd, -1, "fd -1: GL is done");
	CHECK_EQ(fake.gl_flush, core ? 1 : 0,
		 "glFlush tried as a second resort only where GL entry points may be resolved");
	CHECK(after, "waited on the CPU until the GPU job's fence signalled (%.1f ms)", (double)dt / 1e6);
	CHECK_EQ(fake.live_syncs, 0, "every EGLSync destroyed");
	CHECK_EQ(sb_test_count_fds(), before, "fd count unchanged");
	sbk_fence_destroy(&gpu);
	close(vgem);
}

/* ---- attach (vm) ---- */

struct attach_job {
	struct sbk_buf *buf;
	bool gl_writes;
	long old_seen, new_seen; /* what GL's read saw */
};

/* The "GL work" the GPU does before its fence signals. */
static void
gpu_work(void *p)
{
	struct attach_job *j = p;
	uint8_t *m = j->buf->map;

	if (j->gl_writes) {
		memset(m, NEW, BUF_SIZE);
		return;
	}
	for (int i = 0; i < BUF_SIZE; i++) {
		j->old_seen += m[i] == OLD;
		j->new_seen += m[i] == NEW;
	}
}

static void
run_attach(bool gl_writes, bool control)
{
	int vgem = require_vgem();
	struct sbk_buf buf = { .fd = -1, .vgem_fd = -1 };
	struct sbk_fence gpu;
	struct attach_job job = { .buf = &buf, .gl_writes = gl_writes };
	struct later l;
	EGLDisplay dpy;
	int before, ret, fd = -1, status = 99;
	int64_t t0, dt;

	fake_reset("1.4 fake", NATIVE_EXTS);
	dpy = new_display();
	make_current(dpy);
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, vgem, BUF_SIZE, &buf) == 0, "vgem buffer");
	memset(buf.map, OLD, BUF_SIZE);
	fence_init(&gpu);
	REQUIRE(sbk_fence_create(vgem, true, &gpu) == 0, "the GPU job's fence");
	fake.gpu_fence = gpu.sync_file;
	before = sb_test_count_fds();

	/*
	 * GL's commands on the buffer are "submitted"; the GPU runs them when
	 * told: not before the attach returned (so a CPU wait in the attach
	 * would run into vgem's timer and leave the fence signalled), and in the
	 * control only after the next party's access.
	 */
	later_start_on_go(&l, &gpu, gpu_work, &job);
	t0 = sbk_now_ns();
	ret = sb_egl_dmabuf_attach(dpy, buf.fd, gl_writes ? SB_ACCESS_WRITE : SB_ACCESS_READ);
	dt = sbk_now_ns() - t0;
	CHECK_EQ(ret, 0, "attach");
	CHECK(fence_status(&gpu) == 0, "attach did not wait on the CPU (the GPU's fence still pending; %.1f ms)",
	      (double)dt / 1e6);

	/* What a later party sees on the buffer. */
	REQUIRE(sb_dmabuf_export_sync_file(buf.fd, gl_writes ? SB_ACCESS_READ : SB_ACCESS_WRITE,
					   &fd) == 0, "export the buffer's fences");
	REQUIRE(sb_sync_file_get_status(fd, &status) == 0, "status");
	sb_test_note("the buffer's fences for the next %s: status %d", gl_writes ? "reader" : "writer",
		     status);
	if (control)
		CHECK_EQ(status, 1, "control: nothing attached, the buffer looks idle");
	else
		CHECK_EQ(status, 0, "GL's pending fence is on the buffer");
	close(fd);

	/* With the fence attached the GPU finishes in 500 ms: the next party blocks till then. */
	if (!control)
		later_go(&l, DELAY_NS);
	/* The next party: a reader after GL's write, a writer after GL's read. */
	t0 = sbk_now_ns();
	CHECK_EQ(sb_dmabuf_wait(buf.fd, gl_writes ? SB_ACCESS_READ : SB_ACCESS_WRITE, 5000 * MS), 0,
		 "the next party's poll");
	dt = sbk_now_ns() - t0;
	long news = 0;
	if (gl_writes) {
		for (int i = 0; i < BUF_SIZE; i++)
			news += ((uint8_t *)buf.map)[i] == NEW;
	} else {
		memset(buf.map, NEW, BUF_SIZE);
	}
	/* The control: the GPU runs only now, after the next party went ahead. */
	if (control)
		later_go(&l, 0);
	CHECK_EQ(later_join(&l), 0, "the GPU job signalled");
	sb_test_note("the next party waited %.1f ms", (double)dt / 1e6);

	if (gl_writes) {
		if (control)
			CHECK(news == 0, "control: the reader read OLD before GL's write landed (%ld NEW)", news);
		else
			CHECK_EQ(news, BUF_SIZE, "the reader read GL's complete write");
	} else {
		if (control)
			CHECK(job.new_seen > 0, "control: the writer overwrote what GL was still reading");
		else
			CHECK_EQ(job.old_seen, BUF_SIZE, "GL read the buffer before the writer wrote");
	}
	CHECK_EQ(fake.live_syncs, 0, "every EGLSync destroyed");
	CHECK_EQ(sb_test_count_fds(), before, "fd count unchanged");
	sbk_fence_destroy(&gpu);
	sbk_buf_destroy(&buf);
	close(vgem);
}

int
main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	bool core = has_arg(argc, argv, "--core");
	bool control = has_arg(argc, argv, "--control");

	if (control)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);
	if (strcmp(what, "probe") == 0) {
		run_probe();
	} else if (strcmp(what, "wait") == 0) {
		run_wait(core);
	} else if (strcmp(what, "export") == 0) {
		run_export(core);
	} else if (strcmp(what, "attach") == 0) {
		const char *access = arg_value(argc, argv, "--access", "write");

		run_attach(strcmp(access, "write") == 0, control);
	} else {
		fprintf(stderr, "usage: %s probe | wait [--core] | export [--core] | "
				"attach --access read|write [--control]\n", argv[0]);
		return 2;
	}
	return sb_test_finish();
}
