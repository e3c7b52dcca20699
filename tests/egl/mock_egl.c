/* SPDX-License-Identifier: MIT */
/*
 * egl-mock-*: the bridge against a scripted EGL. This program defines the EGL
 * functions the bridge calls (eglQueryString, eglGetError,
 * eglGetCurrentContext, eglGetCurrentDisplay, eglGetProcAddress and, through
 * it, the sync entry points, glFlush and glFinish: mock_egl_fake.c, see
 * mock_egl.h) and links the bridge's static library, not libEGL. Its "GPU" is
 * a pending vgem fence that a helper thread signals after doing the "GL work"
 * on the CPU — a hardware GPU as far as fences go: exported fences are
 * pending, GPU-side waits return at once. That shows what llvmpipe cannot: a
 * pending GL fence attached to a dma-buf, a GPU-side wait that does not block,
 * and exactly which fds EGL got and when they were closed.
 *
 *   egl-mock probe            (host) entry-point choice per EGL version and
 *                             extensions, probing once per display, a full
 *                             display table, the glFinish fallback, the
 *                             foreign-wait rule per driver and device
 *   egl-mock wait [--core]    (vm) GPU-side wait: EGL gets a duplicate, owns
 *                             it, the call does not block; failed creation
 *                             closes the duplicate and waits on the CPU; a
 *                             failed server wait waits on the CPU; the
 *                             non-blocking path (*_export_blocking) hands a
 *                             pending fence out to poll as a new fd
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
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include <syncbridge/egl.h>
#include <syncbridge/syncbridge.h>

#include "gate.h"
#include "harness.h"
#include "kernel.h"
#include "egl_internal.h"
#include "mock_egl.h"

#define MS INT64_C(1000000)
#define DELAY_NS (500 * MS)
#define OLD 0x11
#define NEW 0xee
#define BUF_SIZE 4096

/* ---- helpers ---- */

static int
require_vgem(void)
{
	int fd = sbk_vgem_open();

	if (fd < 0)
		tb_skip("no vgem node (%s): run in the VM tier as root", strerror(-fd));
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
	bool on_go;
	struct tb_gate go;
	int64_t delay_ns;   /* on-go: set by later_go() before it opens the gate */
	atomic_bool signalling; /* set just before the signal */
	int64_t signalled_ns;
	int ret;
};

static void *
later_main(void *p)
{
	struct later *l = p;

	if (l->on_go)
		tb_gate_wait(&l->go);
	sbk_sleep_ns(l->delay_ns);
	if (l->work)
		l->work(l->arg);
	atomic_store(&l->signalling, true);
	l->ret = sbk_fence_signal(l->fence);
	l->signalled_ns = now_ns();
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
	tb_gate_init(&l->go);
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
	l->delay_ns = delay_ns;
	tb_gate_open(&l->go);
}

static int
later_join(struct later *l)
{
	pthread_join(l->thread, NULL);
	tb_gate_finish(&l->go);
	return l->ret;
}

/* The fence's status now (0 pending, 1 signalled), or -99 when the query failed. */
static int
fence_status(const struct sbk_fence *f)
{
	int st = -99;

	return sb_sync_file_get_status(f->sync_file, &st) == 0 ? st : -99;
}

/* A pending vgem write fence (the GPU job's, or the one a wait is handed). */
static void
pending_fence(int vgem, struct sbk_fence *f, const char *what)
{
	memset(f, 0, sizeof(*f));
	f->sync_file = -1;
	f->bo.fd = -1;
	f->bo.vgem_fd = -1;
	REQUIRE(sbk_fence_create(vgem, true, f) == 0, "%s", what);
}

/*
 * The bridge's CPU fallback of sb_egl_sync_file_wait() on f, which the helper
 * signals DELAY_NS after it starts: 0 (`what`), and not before the helper
 * started signalling (causal).
 */
static void
check_cpu_fallback_wait(EGLDisplay dpy, struct sbk_fence *f, const char *what)
{
	struct later l;
	int64_t t0, dt;
	bool after;
	int ret;

	later_start(&l, f, NULL, NULL);
	t0 = now_ns();
	ret = sb_egl_sync_file_wait(dpy, f->sync_file);
	dt = now_ns() - t0;
	after = atomic_load(&l.signalling);
	CHECK_EQ(later_join(&l), 0, "signalled");
	CHECK_EQ(ret, 0, what);
	CHECK(after, "the fallback waited until the fence signalled (%.1f ms)", (double)dt / 1e6);
}

/* ---- probe (host) ---- */

static void
expect_caps(const char *what, const char *version, const char *exts, uint32_t want)
{
	EGLDisplay dpy = fake_new_display();
	uint32_t caps = 0;

	fake_reset(version, exts);
	CHECK_EQ(sb_egl_display_get_caps(dpy, &caps), 0, what);
	CHECK(caps == want, "%s: caps 0x%x, want 0x%x", what, caps, want);
}

/*
 * A native-fence display whose device is scripted: `client` client
 * extensions, device extensions `dev_exts` (NULL: no device), DRM node
 * `node`. Returns the number of device queries the probe made.
 */
static int
expect_caps_device(const char *what, const char *client, const char *dev_exts, const char *node,
		   uint32_t want)
{
	EGLDisplay dpy = fake_new_display();
	uint32_t caps = 0;

	fake_reset("1.4 fake", NATIVE_EXTS);
	fake.client_exts = client;
	fake.device_exts = dev_exts;
	fake.device_node = node;
	CHECK_EQ(sb_egl_display_get_caps(dpy, &caps), 0, what);
	CHECK(caps == want, "%s: caps 0x%x, want 0x%x", what, caps, want);
	return fake.device_queries;
}

/* The foreign-wait rule per driver (foreign.c), and how the probe finds the driver. */
static void
probe_foreign(void)
{
	const uint32_t base = SB_EGL_CAP_NATIVE_FENCE | SB_EGL_CAP_GPU_WAIT | SB_EGL_CAP_FENCE_SYNC,
		       blocks = SB_EGL_CAP_FOREIGN_WAIT_BLOCKS, async = SB_EGL_CAP_FOREIGN_WAIT_ASYNC;
	const char *query = "EGL_EXT_client_extensions EGL_EXT_device_query";
	bool own = false;

	CHECK_EQ(egl_foreign_rule(base, false, "virtio_gpu", &own), blocks,
		 "virtio_gpu: waits for other drivers' fences block (the submit waits)");
	CHECK(own, "virtio_gpu: its own fences do not");
	CHECK_EQ(egl_foreign_rule(base, false, "i915", &own), async, "i915: asynchronous");
	CHECK_EQ(egl_foreign_rule(base, false, "amdgpu", NULL), async, "amdgpu: asynchronous");
	CHECK_EQ(egl_foreign_rule(base, false, "nouveau", &own), 0, "a driver not known: neither bit");
	CHECK(!own, "a driver not known: no fence is exempt");
	CHECK_EQ(egl_foreign_rule(base, false, "", NULL), 0, "no driver: neither bit");
	CHECK_EQ(egl_foreign_rule(base, false, NULL, NULL), 0, "no driver (NULL): neither bit");
	CHECK_EQ(egl_foreign_rule(base, true, "i915", NULL), blocks, "software rendering blocks");
	CHECK_EQ(egl_foreign_rule(base & ~SB_EGL_CAP_GPU_WAIT, false, "i915", &own), blocks,
		 "CPU waits block, whatever the driver");
	CHECK(!own, "CPU waits: no fence is exempt");

	expect_caps_device("software device", query, "EGL_MESA_device_software", NULL, base | blocks);
	expect_caps_device("DRM device whose node is not DRM (/dev/null)", query,
			   "EGL_EXT_device_drm EGL_EXT_device_drm_render_node", "/dev/null", base);
	expect_caps_device("DRM device whose render node is missing", query,
			   "EGL_EXT_device_drm EGL_EXT_device_drm_render_node", "/nonexistent/renderD200",
			   base);
	expect_caps_device("DRM device without a render node (a primary node is not opened)",
			   query, "EGL_EXT_device_drm", "/dev/null", base);
	expect_caps_device("no device for the display", query, NULL, NULL, base);
	CHECK_EQ(expect_caps_device("no EGL_EXT_device_query", "EGL_EXT_client_extensions",
				    "EGL_MESA_device_software", NULL, base), 0,
		 "no device queries without EGL_EXT_device_query");
	CHECK_EQ(fake.error, 0, "the probe leaves no EGL error behind");
}

static void
run_probe(void)
{
	const uint32_t native = SB_EGL_CAP_NATIVE_FENCE, gpu = SB_EGL_CAP_GPU_WAIT,
		       fence = SB_EGL_CAP_FENCE_SYNC, core = SB_EGL_CAP_CORE_SYNC,
		       blocks = SB_EGL_CAP_FOREIGN_WAIT_BLOCKS;
	EGLDisplay dpy;
	uint32_t caps;
	int fd;

	expect_caps("EGL 1.4 + KHR + native", "1.4 fake", NATIVE_EXTS, native | gpu | fence);
	expect_caps("EGL 1.5 + KHR + native: KHR preferred", "1.5 fake", NATIVE_EXTS,
		    native | gpu | fence);
	expect_caps("EGL 1.5, native only: core entry points", "1.5 fake",
		    "EGL_ANDROID_native_fence_sync", native | gpu | fence | core);
	/* CPU waits block the calling thread, whatever the fence: FOREIGN_WAIT_BLOCKS. */
	expect_caps("EGL 1.4, native without fence sync: unusable", "1.4 fake",
		    "EGL_ANDROID_native_fence_sync", blocks);
	expect_caps("EGL 1.4, fence + native, no wait sync: CPU waits", "1.4 fake",
		    "EGL_KHR_fence_sync EGL_ANDROID_native_fence_sync", native | fence | blocks);
	expect_caps("EGL 1.4, fence sync only", "1.4 fake", "EGL_KHR_fence_sync", fence | blocks);
	expect_caps("EGL 1.5, no extensions", "1.5 fake", "", fence | core | blocks);
	expect_caps("EGL 1.4, nothing", "1.4 fake", "", blocks);

	/* Probed once per display: many calls, one extension query. */
	fake_reset("1.4 fake", "EGL_KHR_fence_sync");
	dpy = fake_new_display();
	fake_make_current(dpy);
	for (int i = 0; i < 20; i++) {
		REQUIRE(sb_egl_display_get_caps(dpy, &caps) == 0, "caps");
		REQUIRE(sb_egl_sync_file_wait(dpy, -1) == 0, "wait(-1)");
	}
	CHECK_EQ(fake.ext_queries, 1, "extensions queried once for 40 calls");

	/* Fallback export through an EGL fence sync: flushed, client-waited, destroyed. */
	fd = 99;
	CHECK_EQ(sb_egl_sync_file_export(dpy, &fd), 0, "export without native fences");
	CHECK_EQ(fd, -1, "fd -1: GL done");
	CHECK_EQ(fake.creates_khr, 1, "one fence sync");
	CHECK_EQ(fake.flushes_by_wait, 1, "client wait with FLUSH_COMMANDS");
	CHECK_EQ(fake.live_syncs, 0, "destroyed");
	CHECK_EQ(fake.gl_finish, 0, "no glFinish needed");

	/* No fence sync at all: glFinish, when eglGetProcAddress may give GL functions. */
	fake_reset("1.4 fake", "EGL_KHR_get_all_proc_addresses");
	dpy = fake_new_display();
	fake_make_current(dpy);
	fd = 99;
	CHECK_EQ(sb_egl_sync_file_export(dpy, &fd), 0, "export with glFinish");
	CHECK_EQ(fd, -1, "fd -1");
	CHECK_EQ(fake.gl_finish, 1, "glFinish called once");
	fake_reset("1.4 fake", "");
	dpy = fake_new_display();
	fake_make_current(dpy);
	fd = 99;
	CHECK_EQ(sb_egl_sync_file_export(dpy, &fd), -EIO, "no fence sync, no GL entry points: -EIO");
	CHECK_EQ(fd, -1, "fd -1 on failure");
	CHECK_EQ(fake.gl_finish, 0, "glFinish not called without EGL_KHR_get_all_proc_addresses");

	/* More displays than the table holds (16): still correct, probed per call. */
	for (int i = 0; i < 17; i++)
		expect_caps("filling the table", "1.4 fake", "EGL_KHR_fence_sync", fence | blocks);
	fake_reset("1.4 fake", "EGL_KHR_fence_sync EGL_KHR_wait_sync");
	dpy = fake_new_display();
	for (int i = 0; i < 3; i++) {
		REQUIRE(sb_egl_display_get_caps(dpy, &caps) == 0, "caps");
		CHECK_EQ(caps, fence | blocks, "a display beyond the table");
	}
	CHECK_EQ(fake.ext_queries, 3, "a display beyond the table is probed on every call");
	CHECK_EQ(sb_egl_display_get_caps((EGLDisplay)&fake_context, &caps), -EINVAL,
		 "a pointer that is not a display (EGL_BAD_DISPLAY)");
	probe_foreign();
}

/* ---- wait (vm) ---- */

/*
 * What one *_export_blocking call returned (ret, and its out fd, read after
 * the call): 0, and a new close-on-exec sync_file (want_fd) or -1.
 */
static void
check_blocking_fd(int ret, int fd, bool want_fd, int before, const char *what)
{
	CHECK_EQ(ret, 0, what);
	if (!want_fd) {
		CHECK_EQ(fd, -1, what);
		CHECK_EQ(tb_count_fds(), before, "no fd made");
		return;
	}
	CHECK(fd >= 0 && sb_sync_file_is_valid(fd), "%s: a sync_file (fd %d)", what, fd);
	CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC), "%s: close-on-exec", what);
	CHECK_EQ(tb_count_fds(), before + 1, "exactly one new fd, the caller's");
	if (fd >= 0)
		close(fd);
}

/*
 * The non-blocking path on displays whose waits block (a software device) or
 * whose driver is not known: a pending vgem fence is handed out to poll (a new
 * fd of the caller's), a signalled one is -1; no context needed.
 */
static void
check_export_blocking(int vgem)
{
	static const char *devs[] = { "EGL_MESA_device_software", NULL };
	struct sbk_fence f;
	int before, fd, ret;

	pending_fence(vgem, &f, "pending vgem fence");
	for (int i = 0; i < 2; i++) {
		EGLDisplay dpy = fake_new_display();

		fake_reset("1.4 fake", NATIVE_EXTS);
		fake.client_exts = "EGL_EXT_client_extensions EGL_EXT_device_query";
		fake.device_exts = devs[i];
		tb_note("export_blocking on a display with %s", devs[i] ? "a software device" :
			     "no known driver");
		before = tb_count_fds();
		fd = 99;
		ret = sb_egl_sync_file_export_blocking_fence(dpy, f.sync_file, &fd);
		check_blocking_fd(ret, fd, true, before, "pending sync_file: handed out to poll");
		for (int a = SB_ACCESS_READ; a <= SB_ACCESS_WRITE; a++) {
			fd = 99;
			ret = sb_egl_dmabuf_export_blocking_fence(dpy, f.bo.fd, a, &fd);
			check_blocking_fd(ret, fd, true, before,
					  "dma-buf with a pending write fence: handed out");
		}
		fd = 99;
		ret = sb_egl_sync_file_export_blocking_fence(dpy, -1, &fd);
		check_blocking_fd(ret, fd, false, before, "-1 (signalled): nothing to poll");
		CHECK(sb_sync_file_is_valid(f.sync_file) && sb_dmabuf_is_valid(f.bo.fd),
		      "the caller's fds are untouched");
	}
	REQUIRE(sbk_fence_signal(&f) == 0, "signal");
	before = tb_count_fds();
	fd = 99;
	ret = sb_egl_sync_file_export_blocking_fence(fake_new_display(), f.sync_file, &fd);
	check_blocking_fd(ret, fd, false, before, "signalled sync_file: -1");
	fd = 99;
	ret = sb_egl_dmabuf_export_blocking_fence(fake_new_display(), f.bo.fd, SB_ACCESS_WRITE, &fd);
	check_blocking_fd(ret, fd, false, before, "idle dma-buf: -1");
	sbk_fence_destroy(&f);
}

static void
run_wait(bool core)
{
	int vgem = require_vgem();
	struct sbk_fence f;
	EGLDisplay dpy;
	int before, ret;
	int64_t t0, dt;

	fake_reset(core ? "1.5 fake" : "1.4 fake",
		   core ? "EGL_ANDROID_native_fence_sync" : NATIVE_EXTS);
	dpy = fake_new_display();
	fake_make_current(dpy);

	/* GPU-side: EGL gets a duplicate, owns it, and the call does not block. */
	pending_fence(vgem, &f, "pending vgem fence");
	before = tb_count_fds();
	t0 = now_ns();
	ret = sb_egl_sync_file_wait(dpy, f.sync_file);
	dt = now_ns() - t0;
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
	CHECK_EQ(tb_count_fds(), before, "fd count unchanged");
	CHECK(sb_sync_file_is_valid(f.sync_file), "the caller's fd is untouched");
	REQUIRE(sbk_fence_signal(&f) == 0, "signal");
	sbk_fence_destroy(&f);

	/* eglCreateSync fails: the bridge closes its duplicate and waits on the CPU. */
	pending_fence(vgem, &f, "pending vgem fence");
	fake.fail_create_with_fd = true;
	before = tb_count_fds();
	check_cpu_fallback_wait(dpy, &f, "failed create: CPU fallback");
	CHECK(fake.last_fd_in >= 0 && !sbk_fd_is_open(fake.last_fd_in),
	      "the duplicate EGL refused was closed by the bridge");
	CHECK_EQ(tb_count_fds(), before, "fd count unchanged");
	CHECK(sb_sync_file_is_valid(f.sync_file), "the caller's fd is untouched");
	fake.fail_create_with_fd = false;
	sbk_fence_destroy(&f);

	/* eglWaitSync fails: destroyed, CPU fallback. */
	pending_fence(vgem, &f, "pending vgem fence");
	fake.fail_server_wait = true;
	before = tb_count_fds();
	check_cpu_fallback_wait(dpy, &f, "failed server wait: CPU fallback");
	CHECK_EQ(fake.live_syncs, 0, "the sync was destroyed");
	CHECK_EQ(tb_count_fds(), before, "fd count unchanged");
	fake.fail_server_wait = false;
	sbk_fence_destroy(&f);
	check_export_blocking(vgem);
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
	dpy = fake_new_display();
	fake_make_current(dpy);
	pending_fence(vgem, &gpu, "the GPU job's fence");
	fake.gpu_fence = gpu.sync_file;

	before = tb_count_fds();
	fd = -2;
	CHECK_EQ(sb_egl_sync_file_export(dpy, &fd), 0, "export while the GPU is busy");
	CHECK(fd >= 0 && sb_sync_file_is_valid(fd), "a sync_file (fd %d)", fd);
	flags = fd >= 0 ? fcntl(fd, F_GETFD) : -1;
	CHECK(flags >= 0 && (flags & FD_CLOEXEC), "close-on-exec (the driver's dup had none)");
	status = 99;
	CHECK_EQ(sb_sync_file_get_status(fd, &status), 0, "status");
	CHECK_EQ(status, 0, "pending: it is the GPU job's fence");
	CHECK_EQ(fake.live_syncs, 0, "the EGLSync was destroyed");
	CHECK(fake.flushes_by_wait >= 1, "flushed");
	CHECK_EQ(tb_count_fds(), before + 1, "exactly one new fd: ours");
	REQUIRE(sbk_fence_signal(&gpu) == 0, "GPU done");
	CHECK_EQ(sb_sync_file_wait(fd, 5000 * MS), 0, "the exported fence signals with the GPU job");
	close(fd);
	sbk_fence_destroy(&gpu);

	/* The driver gives no fd even after glFlush: CPU wait for GL, fd -1. */
	pending_fence(vgem, &gpu, "the GPU job's fence");
	fake.gpu_fence = gpu.sync_file;
	fake.dup_gives_none = true;
	fake.gl_flush = 0;
	before = tb_count_fds();
	later_start(&l, &gpu, NULL, NULL);
	t0 = now_ns();
	fd = -2;
	ret = sb_egl_sync_file_export(dpy, &fd);
	dt = now_ns() - t0;
	after = atomic_load(&l.signalling);
	CHECK_EQ(later_join(&l), 0, "signalled");
	CHECK_EQ(ret, 0, "export falls back");
	CHECK_EQ(fd, -1, "fd -1: GL is done");
	CHECK_EQ(fake.gl_flush, core ? 1 : 0,
		 "glFlush tried as a second resort only where GL entry points may be resolved");
	CHECK(after, "waited on the CPU until the GPU job's fence signalled (%.1f ms)", (double)dt / 1e6);
	CHECK_EQ(fake.live_syncs, 0, "every EGLSync destroyed");
	CHECK_EQ(tb_count_fds(), before, "fd count unchanged");
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
	dpy = fake_new_display();
	fake_make_current(dpy);
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, vgem, BUF_SIZE, &buf) == 0, "vgem buffer");
	memset(buf.map, OLD, BUF_SIZE);
	pending_fence(vgem, &gpu, "the GPU job's fence");
	fake.gpu_fence = gpu.sync_file;
	before = tb_count_fds();

	/*
	 * GL's commands on the buffer are "submitted"; the GPU runs them when
	 * told: not before the attach returned (so a CPU wait in the attach
	 * would run into vgem's timer and leave the fence signalled), and in the
	 * control only after the next party's access.
	 */
	later_start_on_go(&l, &gpu, gpu_work, &job);
	t0 = now_ns();
	ret = sb_egl_dmabuf_attach(dpy, buf.fd, gl_writes ? SB_ACCESS_WRITE : SB_ACCESS_READ);
	dt = now_ns() - t0;
	CHECK_EQ(ret, 0, "attach");
	CHECK(fence_status(&gpu) == 0, "attach did not wait on the CPU (the GPU's fence still pending; %.1f ms)",
	      (double)dt / 1e6);

	/* What a later party sees on the buffer. */
	REQUIRE(sb_dmabuf_export_sync_file(buf.fd, gl_writes ? SB_ACCESS_READ : SB_ACCESS_WRITE,
					   &fd) == 0, "export the buffer's fences");
	REQUIRE(sb_sync_file_get_status(fd, &status) == 0, "status");
	tb_note("the buffer's fences for the next %s: status %d", gl_writes ? "reader" : "writer",
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
	t0 = now_ns();
	CHECK_EQ(sb_dmabuf_wait(buf.fd, gl_writes ? SB_ACCESS_READ : SB_ACCESS_WRITE, 5000 * MS), 0,
		 "the next party's poll");
	dt = now_ns() - t0;
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
	tb_note("the next party waited %.1f ms", (double)dt / 1e6);

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
	CHECK_EQ(tb_count_fds(), before, "fd count unchanged");
	sbk_fence_destroy(&gpu);
	sbk_buf_destroy(&buf);
	close(vgem);
}

int
main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	bool core = tb_has_arg(argc, argv, "--core");
	bool control = tb_has_arg(argc, argv, "--control");

	if (control)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);
	if (strcmp(what, "probe") == 0) {
		run_probe();
	} else if (strcmp(what, "wait") == 0) {
		run_wait(core);
	} else if (strcmp(what, "export") == 0) {
		run_export(core);
	} else if (strcmp(what, "attach") == 0) {
		const char *access = tb_arg_value(argc, argv, "--access", "write");

		run_attach(strcmp(access, "write") == 0, control);
	} else {
		fprintf(stderr, "usage: %s probe | wait [--core] | export [--core] | "
				"attach --access read|write [--control]\n", argv[0]);
		return 2;
	}
	return tb_finish();
}
