/* SPDX-License-Identifier: MIT */
/*
 * fault-egl (VM tier): the EGL bridge under failing kernel, libc and EGL
 * calls. Four scenarios on a vgem dma-buf imported as an EGLImage on the EGL
 * device platform's software device (llvmpipe, native fences, GPU-side waits):
 *
 *   export          GL clears the buffer to NEW; sb_egl_sync_file_export();
 *                   the fd (if any) signals and the buffer holds NEW;
 *   wait-sync-file  the buffer holds OLD and a pending vgem WRITE fence; a
 *                   producer thread writes NEW and signals after 100 ms;
 *                   sb_egl_sync_file_wait() on the fence exported from the
 *                   buffer; GL then reads the buffer back: all NEW;
 *   dmabuf-wait     the same through sb_egl_dmabuf_wait(READ);
 *   attach          GL clears to NEW; sb_egl_dmabuf_attach(WRITE); with no GL
 *                   call in between, a CPU consumer polls the buffer and reads
 *                   it: all NEW.
 *
 * A dry run counts the calls made from libsyncbridge-egl's own object during
 * the public call (libsbfault scoped to it: ioctl, dup) and the EGL sync entry
 * points it calls (this program's eglGetProcAddress hands out counting
 * wrappers: eglCreateSync*, eglClientWaitSync*, eglWaitSync*,
 * eglDupNativeFenceFDANDROID); then each is failed in turn — ioctl with
 * EINVAL, ENOMEM and ENOTTY, dup with EMFILE, an EGL call by returning its
 * failure value (EGL_NO_SYNC, EGL_FALSE, EGL_NO_NATIVE_FENCE_FD_ANDROID) —
 * and the call must end "kept" (0 and the ordering held) or "reported" (a
 * documented error, *out_fd -1); "broken" (0, wrong data) and an undocumented
 * error fail. No fd may leak or be closed under us, no close() may hit a
 * closed fd. An ENOTTY from a dma-buf ioctl marks the kernel "< 6.0" for the
 * whole process (NEWS.md, F4), so those cases each run in a
 * process of their own.
 *
 *   fault-egl            all scenarios
 *   fault-egl --errored  fences that completed with an error (see errored())
 *   fault-egl --child SCENARIO N   (internal) ENOTTY on ioctl N of SCENARIO
 *
 * Under ASan its interceptors hide the caller from libsbfault's scope: only
 * the EGL failures are injected there (the program says so).
 *
 * Timing (issue 19): the producer's 100 ms is not a synchronisation. A call
 * that returns 0 must have ordered GL's readback after the producer's signal,
 * which comes after its write, however late anything runs; the 100 ms only
 * give a bridge that returns 0 without waiting the time to show (GL reads OLD
 * before the producer writes). Under TCG a slow readback can make such a bug
 * go unseen in one case, never fail a correct bridge. The 10 s waits (the
 * exported or attached fence signals, the dma-buf is idle) are bounds on
 * events that must happen: typically ms, ~100 ms where the producer is due.
 */
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include <linux/dma-buf.h>

#include <syncbridge/egl.h>
#include <syncbridge/syncbridge.h>

#include "egl_common.h"
#include "fd_snapshot.h"
#include "harness.h"
#include "sbfault.h"

#define SCOPE "libsyncbridge-egl"
#define SIZE EGLC_SIZE
#define OLD 0x11
#define NEW 0xee
#define MS INT64_C(1000000)

/* ---- EGL sync entry points that fail on schedule ---- */

static struct {
	bool armed;
	unsigned calls;   /* counted while armed */
	unsigned fail_at; /* 1-based; 0: none */
	unsigned injected;
	const char *names[32];
} eglf;

static bool
egl_fault(const char *name)
{
	if (!eglf.armed)
		return false;
	if (eglf.calls < 32)
		eglf.names[eglf.calls] = name;
	if (++eglf.calls == eglf.fail_at) {
		eglf.injected++;
		return true;
	}
	return false;
}

static PFNEGLCREATESYNCKHRPROC real_create_sync_khr;
static PFNEGLCREATESYNCPROC real_create_sync;
static PFNEGLCLIENTWAITSYNCKHRPROC real_client_wait_sync_khr;
static PFNEGLCLIENTWAITSYNCPROC real_client_wait_sync;
static PFNEGLWAITSYNCKHRPROC real_wait_sync_khr;
static PFNEGLWAITSYNCPROC real_wait_sync;
static PFNEGLDUPNATIVEFENCEFDANDROIDPROC real_dup_native_fence_fd;

/* A refused create leaves the native-fence fd in the attributes unconsumed, as EGL does. */
static EGLSyncKHR EGLAPIENTRY
f_create_sync_khr(EGLDisplay d, EGLenum type, const EGLint *a)
{
	return egl_fault("eglCreateSyncKHR") ? EGL_NO_SYNC_KHR : real_create_sync_khr(d, type, a);
}
static EGLSync EGLAPIENTRY
f_create_sync(EGLDisplay d, EGLenum type, const EGLAttrib *a)
{
	return egl_fault("eglCreateSync") ? EGL_NO_SYNC : real_create_sync(d, type, a);
}
static EGLint EGLAPIENTRY
f_client_wait_sync_khr(EGLDisplay d, EGLSyncKHR s, EGLint flags, EGLTimeKHR t)
{
	return egl_fault("eglClientWaitSyncKHR") ? EGL_FALSE : real_client_wait_sync_khr(d, s, flags, t);
}
static EGLint EGLAPIENTRY
f_client_wait_sync(EGLDisplay d, EGLSync s, EGLint flags, EGLTime t)
{
	return egl_fault("eglClientWaitSync") ? EGL_FALSE : real_client_wait_sync(d, s, flags, t);
}
static EGLint EGLAPIENTRY
f_wait_sync_khr(EGLDisplay d, EGLSyncKHR s, EGLint flags)
{
	return egl_fault("eglWaitSyncKHR") ? EGL_FALSE : real_wait_sync_khr(d, s, flags);
}
static EGLBoolean EGLAPIENTRY
f_wait_sync(EGLDisplay d, EGLSync s, EGLint flags)
{
	return egl_fault("eglWaitSync") ? EGL_FALSE : real_wait_sync(d, s, flags);
}
static EGLint EGLAPIENTRY
f_dup_native_fence_fd(EGLDisplay d, EGLSyncKHR s)
{
	return egl_fault("eglDupNativeFenceFDANDROID") ? EGL_NO_NATIVE_FENCE_FD_ANDROID
							: real_dup_native_fence_fd(d, s);
}

/*
 * Ours comes first in symbol lookup (libsyncbridge-egl.so resolves its sync
 * entry points through it once, at its first call); everything else is the
 * real one's answer.
 */
__attribute__((visibility("default"))) __eglMustCastToProperFunctionPointerType EGLAPIENTRY
eglGetProcAddress(const char *name)
{
	static __eglMustCastToProperFunctionPointerType (*real)(const char *);
	__eglMustCastToProperFunctionPointerType p;

	if (!real)
		real = (__typeof__(real))dlsym(RTLD_NEXT, "eglGetProcAddress");
	p = real ? real(name) : NULL;
	if (!p)
		return NULL;
#define WRAP(n, field, wrapper)                         \
	if (strcmp(name, n) == 0) {                     \
		field = (__typeof__(field))p;           \
		return (__eglMustCastToProperFunctionPointerType)wrapper; \
	}
	WRAP("eglCreateSyncKHR", real_create_sync_khr, f_create_sync_khr);
	WRAP("eglCreateSync", real_create_sync, f_create_sync);
	WRAP("eglClientWaitSyncKHR", real_client_wait_sync_khr, f_client_wait_sync_khr);
	WRAP("eglClientWaitSync", real_client_wait_sync, f_client_wait_sync);
	WRAP("eglWaitSyncKHR", real_wait_sync_khr, f_wait_sync_khr);
	WRAP("eglWaitSync", real_wait_sync, f_wait_sync);
	WRAP("eglDupNativeFenceFDANDROID", real_dup_native_fence_fd, f_dup_native_fence_fd);
#undef WRAP
	return p;
}

/* ---- the scenarios ---- */

struct producer {
	struct eglc_app *a;
	uint32_t fence_id;
	pthread_t thread;
};

static void *
producer_main(void *arg)
{
	struct producer *p = arg;

	/* A negative-check window, not a synchronisation (see the header). */
	sbk_sleep_ns(100 * MS);
	eglc_cpu_fill(&p->a->buf, NEW);
	sbk_vgem_fence_signal(p->a->vgem, p->fence_id);
	return NULL;
}

enum outcome { KEPT, REPORTED, BROKEN };
static const char *const outcome_names[] = { "kept", "reported", "BROKEN" };

/* Each scenario: the public call alone is armed. *ret: its result. */
typedef enum outcome (*scenario_fn)(struct eglc_app *a, const char *schedule, unsigned egl_at,
				    int *ret);

static void
arm(const char *schedule, unsigned egl_at)
{
	eglf.calls = 0;
	eglf.injected = 0;
	eglf.fail_at = egl_at;
	eglf.armed = true;
	sbfault_arm_scoped(schedule, SCOPE);
}

static void
disarm(void)
{
	sbfault_disarm();
	eglf.armed = false;
}

/*
 * After a call that returned 0 with GL's clear to NEW issued before it: a
 * CPU reader that polls the buffer must find all NEW. Nothing but the bridge
 * (or GL's fence) can have pushed the clear out.
 */
static enum outcome
reader_outcome(struct eglc_app *a)
{
	bool all_new = sb_dmabuf_wait(a->buf.fd, SB_ACCESS_READ, 10000 * MS) == 0 &&
		       eglc_cpu_count(&a->buf, NEW) == SIZE * SIZE * 4;

	glFinish();
	return all_new ? KEPT : BROKEN;
}

static enum outcome
run_export(struct eglc_app *a, const char *schedule, unsigned egl_at, int *ret)
{
	int fd = -1;

	eglc_cpu_fill(&a->buf, OLD);
	eglt_fill(&a->target, NEW);
	arm(schedule, egl_at);
	*ret = sb_egl_sync_file_export(a->t.dpy, &fd);
	disarm();
	if (*ret != 0) {
		CHECK_EQ(fd, -1, "a failed export leaves *out_fd -1");
		glFinish();
		return REPORTED;
	}
	if (fd >= 0) {
		struct tb_fd_entry e;

		CHECK(tb_fd_describe(fd, &e) && e.cloexec, "the exported fd is close-on-exec");
		CHECK_EQ(sb_sync_file_wait(fd, 10000 * MS), 0, "the exported fence signals");
		close(fd);
	}
	return reader_outcome(a);
}

static enum outcome
run_wait(struct eglc_app *a, const char *schedule, unsigned egl_at, int *ret, bool via_sync_file)
{
	struct producer p = { .a = a };
	int fence = -1;
	long n;

	eglc_cpu_fill(&a->buf, OLD);
	REQUIRE(sbk_vgem_fence_attach(a->vgem, a->buf.handle, true, &p.fence_id) == 0, "vgem fence");
	if (via_sync_file)
		REQUIRE(sb_dmabuf_export_sync_file(a->buf.fd, SB_ACCESS_READ, &fence) == 0, "export");
	REQUIRE(pthread_create(&p.thread, NULL, producer_main, &p) == 0, "pthread_create");
	arm(schedule, egl_at);
	if (via_sync_file)
		*ret = sb_egl_sync_file_wait(a->t.dpy, fence);
	else
		*ret = sb_egl_dmabuf_wait(a->t.dpy, a->buf.fd, SB_ACCESS_READ);
	disarm();
	n = *ret == 0 ? eglt_count(&a->target, NEW, NULL) : 0;
	pthread_join(p.thread, NULL);
	if (fence >= 0)
		close(fence);
	if (*ret != 0)
		return REPORTED;
	return n == SIZE * SIZE ? KEPT : BROKEN;
}

static enum outcome
run_wait_sync_file(struct eglc_app *a, const char *schedule, unsigned egl_at, int *ret)
{
	return run_wait(a, schedule, egl_at, ret, true);
}

static enum outcome
run_dmabuf_wait(struct eglc_app *a, const char *schedule, unsigned egl_at, int *ret)
{
	return run_wait(a, schedule, egl_at, ret, false);
}

static enum outcome
run_attach(struct eglc_app *a, const char *schedule, unsigned egl_at, int *ret)
{
	eglc_cpu_fill(&a->buf, OLD);
	eglt_fill(&a->target, NEW);
	arm(schedule, egl_at);
	*ret = sb_egl_dmabuf_attach(a->t.dpy, a->buf.fd, SB_ACCESS_WRITE);
	disarm();
	if (*ret != 0) {
		glFinish();
		return REPORTED;
	}
	return reader_outcome(a);
}

/* The documented errors of each call (include/syncbridge/egl.h). */
static const struct {
	const char *name;
	scenario_fn run;
	int errors[8];
} scenarios[] = {
	{ "export", run_export, { -ENOMEM, -EMFILE, -EIO } },
	{ "wait-sync-file", run_wait_sync_file, { -EBADF, -EINVAL, -ENOMEM, -EMFILE } },
	{ "dmabuf-wait", run_dmabuf_wait, { -EBADF, -EINVAL, -ENOMEM, -EMFILE } },
	{ "attach", run_attach, { -EBADF, -EINVAL, -ENOMEM, -EMFILE, -EIO } },
};
#define N_SCENARIOS ((int)(sizeof(scenarios) / sizeof(scenarios[0])))

static bool
documented(int s, int ret)
{
	for (int i = 0; scenarios[s].errors[i]; i++)
		if (scenarios[s].errors[i] == ret)
			return true;
	return false;
}

static int cases, n_kept, n_reported;

static void
one_case(struct eglc_app *a, int s, const char *schedule, unsigned egl_at)
{
	struct tb_fd_snapshot before;
	char what[128];
	int ret, bad_fd = -1;
	enum outcome o;

	snprintf(what, sizeof(what), "%s [%s%s%.0u]", scenarios[s].name, schedule,
		 egl_at ? "egl:" : "", egl_at);
	REQUIRE(tb_fd_snapshot_take(&before) == 0, "snapshot");
	o = scenarios[s].run(a, schedule, egl_at, &ret);
	cases++;
	n_kept += o == KEPT;
	n_reported += o == REPORTED;
	tb_note("%s: %s (%d %s)", what, outcome_names[o], ret, ret ? strerror(-ret) : "");
	CHECK(o != BROKEN, "%s: the ordering is kept or an error reported", what);
	if (o == REPORTED)
		CHECK(documented(s, ret), "%s: %d (%s) is a documented error", what, ret, strerror(-ret));
	CHECK_EQ(sbfault_injected() + eglf.injected, 1, "the fault was hit");
	CHECK_EQ(sbfault_bad_closes(&bad_fd), 0, "no close() of a closed fd");
	tb_fd_snapshot_check(&before, NULL, 0, what);
	tb_fd_snapshot_free(&before);
}

/* The vgem buffer on the software device (egl_common.h), with GPU-side waits. */
static void
app_open(struct eglc_app *a)
{
	eglc_app_open(a);
	REQUIRE(a->caps & SB_EGL_CAP_GPU_WAIT, "native fences and GPU-side waits (caps 0x%x)", a->caps);
	REQUIRE(real_create_sync_khr || real_create_sync, "the bridge's sync entry points are ours");
	/* The fd snapshots of the cases need it (eglt.h, eglt_no_disk_cache()). */
	REQUIRE(!eglt_disk_cache_running(), "no Mesa shader disk-cache thread (it opens fds behind "
		"the fd snapshots: MESA_SHADER_CACHE_DISABLE)");
}

static bool
is_dmabuf_ioctl(unsigned long req)
{
	return req == DMA_BUF_IOCTL_EXPORT_SYNC_FILE || req == DMA_BUF_IOCTL_IMPORT_SYNC_FILE;
}

/* Dry run of scenario s: counts; a warm-up first (lazy driver state). */
static void
dry_run(struct eglc_app *a, int s, unsigned *ioctls, unsigned *dups, unsigned *egls,
	unsigned long *reqs)
{
	int ret;
	enum outcome o = scenarios[s].run(a, NULL, 0, &ret);

	REQUIRE(o == KEPT && ret == 0, "%s without faults: %s (%d)", scenarios[s].name,
		outcome_names[o], ret);
	o = scenarios[s].run(a, "", 0, &ret);
	REQUIRE(o == KEPT && ret == 0, "%s dry run: %s (%d)", scenarios[s].name, outcome_names[o], ret);
	*ioctls = sbfault_calls("ioctl");
	*dups = sbfault_calls("dup");
	*egls = eglf.calls;
	for (unsigned i = 0; i < *ioctls && i < 16; i++)
		reqs[i] = sbfault_ioctl_request(i);
}

static int
child(int s, unsigned n)
{
	struct eglc_app a;
	unsigned ioctls, dups, egls;
	unsigned long reqs[16] = { 0 };
	char sched[64];

	app_open(&a);
	dry_run(&a, s, &ioctls, &dups, &egls, reqs);
	REQUIRE(n >= 1 && n <= ioctls, "ioctl %u of %s exists", n, scenarios[s].name);
	snprintf(sched, sizeof(sched), "ioctl:%u:ENOTTY", n);
	one_case(&a, s, sched, 0);
	eglc_app_close(&a);
	return tb_finish();
}

static int
spawn(const char *self, int s, unsigned n)
{
	char nbuf[16];
	char *argv[] = { "fault-egl", "--child", (char *)scenarios[s].name, nbuf, NULL };
	int status;

	snprintf(nbuf, sizeof(nbuf), "%u", n);
	status = tb_run(self, argv);
	if (WIFSIGNALED(status)) {
		printf("# %s ENOTTY %u: killed by signal %d\n", scenarios[s].name, n, WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}

/*
 * Errored fences (--errored): libsbfault's fence_error rule makes the
 * kernel's SYNC_IOC_FILE_INFO answers say that signalled fences completed
 * with -EIO (no driver in the test kernel makes such fences:
 * docs/reliability.md). The bridge must report it: sb_egl_sync_file_wait()
 * and sb_egl_dmabuf_wait() on a fence that completed with an error return
 * that error. Control: the same calls without the rule return 0.
 */
static int
errored(void)
{
	struct eglc_app a;
	uint32_t id;
	int fence = -1, ret;

	app_open(&a);
	eglc_cpu_fill(&a.buf, NEW);
	REQUIRE(sbk_vgem_fence_attach(a.vgem, a.buf.handle, true, &id) == 0, "vgem fence");
	REQUIRE(sbk_vgem_fence_signal(a.vgem, id) == 0, "signal");
	REQUIRE(sb_dmabuf_export_sync_file(a.buf.fd, SB_ACCESS_READ, &fence) == 0, "export");

	for (int rule = 0; rule < 2; rule++) {
		const char *what = rule ? "fence_error rule" : "control, no rule";
		int want = rule ? -EIO : 0;

		if (rule)
			sbfault_arm("fence_error:*:EIO");
		ret = sb_egl_sync_file_wait(a.t.dpy, fence);
		CHECK_EQ(ret, want, rule ? "sb_egl_sync_file_wait: the fence's error"
					 : "control: sb_egl_sync_file_wait: 0");
		tb_note("%s: sb_egl_sync_file_wait -> %d", what, ret);
		ret = sb_egl_dmabuf_wait(a.t.dpy, a.buf.fd, SB_ACCESS_READ);
		CHECK_EQ(ret, want, rule ? "sb_egl_dmabuf_wait: the error of the buffer's fence"
					 : "control: sb_egl_dmabuf_wait: 0");
		tb_note("%s: sb_egl_dmabuf_wait(READ) -> %d", what, ret);
		ret = sb_egl_dmabuf_wait(a.t.dpy, a.buf.fd, SB_ACCESS_WRITE);
		CHECK_EQ(ret, want, rule ? "sb_egl_dmabuf_wait(WRITE): the error"
					 : "control: sb_egl_dmabuf_wait(WRITE): 0");
		if (rule) {
			sbfault_disarm();
			CHECK(sbfault_calls("fence_error") > 0, "the rule was applied (%u answers)",
			      sbfault_calls("fence_error"));
		}
	}
	CHECK_EQ(eglt_count(&a.target, NEW, NULL), SIZE * SIZE, "GL still works and reads the data");
	close(fence);
	eglc_app_close(&a);
	return tb_finish();
}

int
main(int argc, char **argv)
{
	/* argv[0] when it is a path: under valgrind /proc/self/exe is valgrind's tool. */
	const char *self = strchr(argv[0], '/') ? argv[0] : "/proc/self/exe";
	struct {
		unsigned long req[16];
		unsigned n;
	} enotty_later[N_SCENARIOS] = { 0 };
	struct eglc_app a;

	if (!dlsym(RTLD_DEFAULT, "sbfault_arm_scoped"))
		tb_skip("libsbfault is not loaded");
	/* The bridge's fallback warnings go to the log. */
	setenv("SYNCBRIDGE_DEBUG", "warn", 0);
	if (argc == 2 && strcmp(argv[1], "--errored") == 0)
		return errored();
	if (argc == 4 && strcmp(argv[1], "--child") == 0) {
		for (int s = 0; s < N_SCENARIOS; s++)
			if (strcmp(scenarios[s].name, argv[2]) == 0)
				return child(s, (unsigned)strtoul(argv[3], NULL, 10));
		REQUIRE(false, "unknown scenario %s", argv[2]);
	}

	app_open(&a);
	for (int s = 0; s < N_SCENARIOS; s++) {
		unsigned ioctls, dups, egls;
		unsigned long reqs[16] = { 0 };
		char sched[64];

		dry_run(&a, s, &ioctls, &dups, &egls, reqs);
		tb_note("%s: the bridge made ioctl=%u dup=%u and %u EGL sync calls", scenarios[s].name,
			     ioctls, dups, egls);
		for (unsigned i = 0; i < egls && i < 32; i++)
			tb_note("  EGL call %u: %s", i + 1, eglf.names[i]);
		if (ioctls + dups == 0)
			tb_note("%s: no ioctl/dup from %s counted (under ASan its interceptors hide "
				     "the caller): EGL failures only", scenarios[s].name, SCOPE);
		for (unsigned i = 1; i <= ioctls; i++) {
			static const char *const errs[] = { "EINVAL", "ENOMEM", "ENOTTY" };

			for (int e = 0; e < 3; e++) {
				if (e == 2 && is_dmabuf_ioctl(reqs[i - 1])) {
					/* F4: in a process of its own, below. */
					enotty_later[s].req[enotty_later[s].n++] = i;
					continue;
				}
				snprintf(sched, sizeof(sched), "ioctl:%u:%s", i, errs[e]);
				one_case(&a, s, sched, 0);
			}
		}
		for (unsigned i = 1; i <= dups; i++) {
			snprintf(sched, sizeof(sched), "dup:%u:EMFILE", i);
			one_case(&a, s, sched, 0);
		}
		for (unsigned i = 1; i <= egls; i++)
			one_case(&a, s, "", i);
	}
	eglc_app_close(&a);

	for (int s = 0; s < N_SCENARIOS; s++) {
		for (unsigned k = 0; k < enotty_later[s].n; k++) {
			unsigned n = (unsigned)enotty_later[s].req[k];
			int rc = spawn(self, s, n);

			cases++;
			tb_note("%s [ioctl:%u:ENOTTY] (dma-buf ioctl, own process): exit %d",
				     scenarios[s].name, n, rc);
			CHECK(rc == 0, "%s: ENOTTY on ioctl %u (exit status %d)", scenarios[s].name, n, rc);
		}
	}
	tb_note("%d fault cases: %d kept the ordering, %d reported a documented error "
		     "(own-process ENOTTY cases counted, not classified)", cases, n_kept, n_reported);
	return tb_finish();
}
