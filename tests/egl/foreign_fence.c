/* SPDX-License-Identifier: MIT */
/*
 * egl-foreign-fence: GL made to wait for another driver's pending fence (a
 * vgem fence) by a thread that runs an event loop, on a display where such
 * waits block the calling thread (SB_EGL_CAP_FOREIGN_WAIT_BLOCKS): Mesa
 * virgl in the GPU group's guest (--gpu: the kernel's virtio_gpu submit
 * waits for foreign in-fences on the CPU, so the flush after the wait
 * blocks), llvmpipe on the software device in the plain guest (its
 * eglWaitSyncKHR blocks).
 *
 * A helper thread signals the vgem fence `--pending-ms` (2000) after the
 * start. The main thread is the loop: every call it makes into the bridge
 * and GL is timed (its poll() is the loop's idle wait, not a stall), and
 * while it waits it renders a frame of other work every 16 ms. The write
 * that must come after the fence is a clear to NEW of a target of its own.
 *
 *  - egl-foreign-fence (--via sync-file, the default) / -dmabuf (--via
 *    dmabuf, the vgem buffer's fences): the non-blocking path.
 *    sb_egl_*_export_blocking_fence() hands the pending fence out to poll; when it
 *    has signalled the loop asks again (-1), waits with sb_egl_sync_file_wait
 *    / sb_egl_dmabuf_wait, clears, flushes. Judged: the display reports
 *    FOREIGN_WAIT_BLOCKS; the fence was handed out; the longest call is
 *    under half the pending time; the loop rendered at least 2 frames while
 *    the fence was pending; GL's write ran after the vgem fence signalled;
 *    every pixel is NEW.
 *    With --gpu also: virgl's own pending fence is not handed out (the
 *    kernel does not wait for its own fences), and the flush after waiting
 *    for it is timed (logged).
 *  - -control (--naive): the same loop without the non-blocking path — it
 *    waits and submits at once. Judged: a call stalls for at least half the
 *    pending time (virgl: the glFlush; llvmpipe: the wait), and the write is
 *    still ordered. This is the stall the non-blocking path avoids: were it
 *    to block again, the first run would fail where this one passes.
 *  - -disabled (--disabled: SYNCBRIDGE_DISABLE=1): export_blocking gives -1
 *    and the waits order nothing. Judged: GL's write was done *before* the
 *    vgem fence signalled — the ordering check of the other runs can fail.
 *
 * When GL's write ran: on virgl, the signal timestamp (SYNC_IOC_FILE_INFO)
 * of GL's native fence, taken straight from EGL, not through the bridge, so
 * the disabled run has one too; against the vgem fence's timestamp. llvmpipe
 * hands out the kernel's signalled stub fence (its timestamp is not GL's), so
 * there the write ran between the clear's issue and the glFinish after it.
 * Durations are judged against the pending time with a factor of 2 either
 * way; nothing else depends on timing.
 *
 *   egl-foreign-fence [--gpu] [--via sync-file|dmabuf] [--naive] [--disabled]
 *                     [--pending-ms N]
 */
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/egl.h>
#include <syncbridge/sync_file.h>

#include "eglt.h"
#include "harness.h"
#include "kernel.h"
#include "kernel_raw.h"

#define SIZE 64
#define OLD 0x11
#define NEW 0xee
#define MS INT64_C(1000000)
#define TICK_MS 16

struct options {
	bool gpu, dmabuf, naive, disabled;
	int64_t pending_ns;
};

/* The loop thread's calls: the longest, and which. */
struct stalls {
	int64_t longest;
	const char *what;
};

#define TIMED(st, name, stmt)                                     \
	do {                                                      \
		int64_t t0_ = now_ns();                       \
		stmt;                                             \
		stall_record((st), (name), now_ns() - t0_);   \
	} while (0)

static void
stall_record(struct stalls *st, const char *what, int64_t dt)
{
	if (dt > st->longest) {
		st->longest = dt;
		st->what = what;
	}
}

/* The helper that signals the vgem fence delay_ns after it starts. */
struct signaller {
	pthread_t thread;
	struct sbk_fence *fence;
	int64_t delay_ns;
	int ret;
};

static void *
signaller_main(void *p)
{
	struct signaller *s = p;

	sbk_sleep_ns(s->delay_ns);
	s->ret = sbk_fence_signal(s->fence);
	return NULL;
}

/* GL's work so far as a sync_file, from EGL itself (not the bridge); -1 if none. */
static int
gl_fence(struct eglt *t)
{
	struct eglt_procs egl;
	const EGLint attribs[] = {
		EGL_SYNC_NATIVE_FENCE_FD_ANDROID, EGL_NO_NATIVE_FENCE_FD_ANDROID, EGL_NONE,
	};
	EGLSyncKHR sync;
	int fd;

	eglt_procs_load(&egl);
	if (!egl.create_sync || !egl.destroy_sync || !egl.dup_native_fence_fd)
		return -1;
	sync = egl.create_sync(t->dpy, EGL_SYNC_NATIVE_FENCE_ANDROID, attribs);
	if (sync == EGL_NO_SYNC_KHR)
		return -1;
	glFlush();
	fd = egl.dup_native_fence_fd(t->dpy, sync);
	egl.destroy_sync(t->dpy, sync);
	return fd;
}

static int
status_of(int sync_file)
{
	int st = -99;

	return sb_sync_file_get_status(sync_file, &st) == 0 ? st : -99;
}

/* What the loop saw. */
struct run {
	struct stalls st;
	int handed_out;    /* the first export_blocking gave an fd: 1, -1: 0 */
	int frames, frames_pending;
	int wait_ret;
	int64_t t_clear;   /* when the ordered clear was issued */
};

/*
 * When GL's write ran, as far as the machine can tell: bounds in
 * CLOCK_MONOTONIC ns. A real fence of GL's (virgl) signals when the write
 * has completed: both bounds are its timestamp. llvmpipe finishes before its
 * native fence exists and hands out the kernel's signalled stub fence, whose
 * timestamp is not the write's: then the write ran between the clear's issue
 * and the glFinish after it.
 */
struct write_time {
	int64_t after, before;
	char driver[32];
};

static int
export_blocking(struct eglt *t, const struct options *o, struct sbk_fence *f, int *fd,
		struct stalls *st)
{
	int ret;

	TIMED(st, "export_blocking",
	      ret = o->dmabuf ? sb_egl_dmabuf_export_blocking_fence(t->dpy, f->bo.fd, SB_ACCESS_READ, fd)
			      : sb_egl_sync_file_export_blocking_fence(t->dpy, f->sync_file, fd));
	return ret;
}

/* The ordered write: wait (the bridge), clear to NEW, flush. */
static void
submit(struct eglt *t, const struct options *o, struct sbk_fence *f, struct eglt_target *tgt,
       struct run *r)
{
	if (o->dmabuf)
		TIMED(&r->st, "sb_egl_dmabuf_wait",
		      r->wait_ret = sb_egl_dmabuf_wait(t->dpy, f->bo.fd, SB_ACCESS_READ));
	else
		TIMED(&r->st, "sb_egl_sync_file_wait",
		      r->wait_ret = sb_egl_sync_file_wait(t->dpy, f->sync_file));
	r->t_clear = now_ns();
	TIMED(&r->st, "glClear", eglt_fill(tgt, NEW));
	TIMED(&r->st, "glFlush", glFlush());
}

/*
 * The loop: poll what export_blocking hands out, a frame of other work each
 * tick meanwhile, ask again once it signalled, then submit (--naive: submit
 * at once).
 */
static void
run_loop(struct eglt *t, const struct options *o, struct sbk_fence *f, struct eglt_target *tgt,
	 struct eglt_target *other, struct run *r)
{
	int fd = -1;

	if (!o->naive) {
		REQUIRE(export_blocking(t, o, f, &fd, &r->st) == 0, "export_blocking");
		r->handed_out = fd >= 0;
	}
	while (fd >= 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, TICK_MS) > 0) {
			close(fd);
			fd = -1;
			/* A new fence may have come meanwhile: ask again. */
			REQUIRE(export_blocking(t, o, f, &fd, &r->st) == 0, "export_blocking");
			continue;
		}
		r->frames++;
		r->frames_pending += status_of(f->sync_file) == 0;
		TIMED(&r->st, "other frame: glClear", eglt_fill(other, (uint8_t)r->frames));
		TIMED(&r->st, "other frame: glFlush", glFlush());
		REQUIRE(r->frames < 100000, "the vgem fence never signalled");
	}
	submit(t, o, f, tgt, r);
}

/*
 * virgl's own pending fence: export_blocking does not hand it out (the
 * kernel skips fences of its own context); the flush after waiting for it
 * is timed and logged.
 */
static void
own_fence(struct eglt *t, struct eglt_target *tgt)
{
	struct eglt_target big;
	struct eglt_pass pass;
	int own, out = 99, status;
	int64_t t0, dt_flush;

	REQUIRE(eglt_target_create(t, 256, 256, &big) == 0, "the heavy pass's target");
	REQUIRE(eglt_busy_pass_init(&pass) == 0, "the heavy pass");
	for (int i = 0; i < 2; i++)
		eglt_busy_pass_draw(&pass, 3000, &big);
	own = gl_fence(t);
	REQUIRE(own >= 0, "virgl's native fence");
	status = status_of(own);
	CHECK_EQ(sb_egl_sync_file_export_blocking_fence(t->dpy, own, &out), 0, "export_blocking(own)");
	CHECK_EQ(out, -1, "virgl's own fence is not handed out to poll (the kernel skips it)");
	t0 = now_ns();
	CHECK_EQ(sb_egl_sync_file_wait(t->dpy, own), 0, "wait for virgl's own fence");
	eglt_fill(tgt, OLD);
	glFlush();
	dt_flush = now_ns() - t0;
	tb_note("own fence: status %d at export_blocking; wait + clear + glFlush %.1f ms, "
		     "the fence %s when the flush returned", status, (double)dt_flush / 1e6,
		     status_of(own) == 0 ? "still pending" : "signalled");
	glFinish();
	close(own);
	if (out >= 0)
		close(out);
	eglt_pass_finish(&pass);
	eglt_target_destroy(t, &big);
}

/* GL's write's time from its fence (see struct write_time); t_finish: glFinish returned. */
static void
write_time(int render, int64_t t_clear, int64_t t_finish, struct write_time *w)
{
	struct sb_sync_file_info *info = NULL;

	snprintf(w->driver, sizeof(w->driver), "?");
	if (sb_sync_file_info_create(render, &info) == 0 && info->num_fences > 0)
		snprintf(w->driver, sizeof(w->driver), "%s", info->fences[0].driver);
	sb_sync_file_info_destroy(info);
	if (strcmp(w->driver, "stub") != 0) {
		w->after = w->before = tb_sync_file_signal_time(render);
	} else {
		w->after = t_clear;
		w->before = t_finish;
	}
}

static void
check_run(const struct options *o, const struct run *r, int64_t ts_vgem, const struct write_time *w,
	  long n_new)
{
	const int64_t half = o->pending_ns / 2;
	const char *what = r->st.what ? r->st.what : "-";

	tb_note("pending %.0f ms; longest call %.1f ms (%s); %d other frames, %d while the "
		     "fence was pending; GL's write (fence: %s) ran %+.1f..%+.1f ms from the vgem "
		     "fence's signal", (double)o->pending_ns / 1e6, (double)r->st.longest / 1e6, what,
		     r->frames, r->frames_pending, w->driver, (double)(w->after - ts_vgem) / 1e6,
		     (double)(w->before - ts_vgem) / 1e6);
	CHECK_EQ(r->wait_ret, 0, "the bridge's wait");
	CHECK_EQ(n_new, SIZE * SIZE, "GL's write landed (every pixel NEW)");
	if (o->disabled) {
		CHECK_EQ(r->handed_out, 0, "disabled: nothing handed out to poll");
		CHECK(w->before < ts_vgem, "control (disabled): GL's write was done before the vgem "
		      "fence signalled (%+.1f ms): nothing ordered it", (double)(w->before - ts_vgem) / 1e6);
		CHECK(r->st.longest < half, "disabled: no call stalled (longest %.1f ms, %s)",
		      (double)r->st.longest / 1e6, what);
		return;
	}
	CHECK(w->after >= ts_vgem, "GL's write ran after the vgem fence signalled (%+.1f ms)",
	      (double)(w->after - ts_vgem) / 1e6);
	if (o->naive) {
		CHECK(r->st.longest >= half, "control (naive): the loop thread stalled %.1f ms in %s "
		      "(at least half the %.0f ms the fence was pending)",
		      (double)r->st.longest / 1e6, what, (double)o->pending_ns / 1e6);
		return;
	}
	CHECK_EQ(r->handed_out, 1, "export_blocking handed the pending foreign fence out to poll");
	CHECK(r->st.longest < half, "no call on the loop thread stalled: longest %.1f ms (%s), "
	      "under half the %.0f ms the fence was pending", (double)r->st.longest / 1e6, what,
	      (double)o->pending_ns / 1e6);
	CHECK(r->frames_pending >= 2, "the loop rendered while the fence was pending (%d frames)",
	      r->frames_pending);
}

int
main(int argc, char **argv)
{
	struct options o = {
		.gpu = tb_has_arg(argc, argv, "--gpu"),
		.dmabuf = strcmp(tb_arg_value(argc, argv, "--via", "sync-file"), "dmabuf") == 0,
		.naive = tb_has_arg(argc, argv, "--naive"),
		.disabled = tb_has_arg(argc, argv, "--disabled"),
		.pending_ns = atoi(tb_arg_value(argc, argv, "--pending-ms", "2000")) * MS,
	};
	struct eglt t = {0};
	struct eglt_target tgt, other;
	struct sbk_fence f = { .sync_file = -1, .bo = SBK_BUF_INIT };
	struct signaller sig = {0};
	struct run r = {0};
	const char *renderer;
	uint32_t caps = 0;
	int vgem, ret, render, before;
	struct write_time w;
	int64_t ts_vgem, t_finish;
	long n_new;

	if (o.disabled)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);
	vgem = sbk_vgem_open();
	if (vgem < 0)
		tb_skip("no vgem node (%s): run in the VM tier as root", strerror(-vgem));
	ret = eglt_open(&t, o.gpu ? EGLT_SURFACELESS : EGLT_DEVICE_SW);
	if (ret == -ENODEV)
		tb_skip("no %s EGL display", o.gpu ? "surfaceless" : "software device");
	REQUIRE(ret == 0, "eglt_open");
	renderer = (const char *)glGetString(GL_RENDERER);
	if (o.gpu && !(renderer && strstr(renderer, "virgl")))
		tb_skip("GL_RENDERER is %s, not Mesa virgl: run in the GPU group's guest "
			     "(SYNCBRIDGE_VM_GPU=virgl)", renderer ? renderer : "?");
	REQUIRE(sb_egl_display_get_caps(t.dpy, &caps) == 0, "caps");
	tb_note("%s: caps 0x%x; via %s%s%s", renderer, caps, o.dmabuf ? "dmabuf" : "sync-file",
		     o.naive ? ", NAIVE" : "", o.disabled ? ", DISABLED" : "");
	REQUIRE(caps & SB_EGL_CAP_GPU_WAIT, "the display waits GPU-side (native fences)");
	CHECK(caps & SB_EGL_CAP_FOREIGN_WAIT_BLOCKS, "the display reports that waits for other "
	      "drivers' fences block the calling thread (caps 0x%x)", caps);
	CHECK(!(caps & SB_EGL_CAP_FOREIGN_WAIT_ASYNC), "and not that they are asynchronous");

	REQUIRE(eglt_target_create(&t, SIZE, SIZE, &tgt) == 0, "the target");
	REQUIRE(eglt_target_create(&t, SIZE, SIZE, &other) == 0, "the other frame's target");
	if (o.gpu && !o.naive && !o.disabled)
		own_fence(&t, &tgt);
	/* Warm up every call the loop makes, then nothing pending. */
	eglt_fill(&other, OLD);
	eglt_fill(&tgt, OLD);
	glFlush();
	glFinish();
	REQUIRE(eglt_count(&tgt, OLD, NULL) == SIZE * SIZE, "the target reads OLD");
	REQUIRE(!eglt_disk_cache_running(), "no Mesa shader disk-cache thread (fd counts)");
	before = tb_count_fds();

	REQUIRE(sbk_fence_create(vgem, true, &f) == 0, "a pending vgem fence");
	sig.fence = &f;
	sig.delay_ns = o.pending_ns;
	REQUIRE(pthread_create(&sig.thread, NULL, signaller_main, &sig) == 0, "the signaller");

	run_loop(&t, &o, &f, &tgt, &other, &r);
	TIMED(&r.st, "GL's fence", render = gl_fence(&t));
	REQUIRE(render >= 0, "GL's write fence (EGL_ANDROID_native_fence_sync)");
	glFinish(); /* the check's, not the loop's: not timed */
	t_finish = now_ns();

	REQUIRE(sb_sync_file_wait(f.sync_file, 15000 * MS) == 0, "the vgem fence signals");
	pthread_join(sig.thread, NULL);
	CHECK_EQ(sig.ret, 0, "the helper signalled the vgem fence (not vgem's own timer)");
	REQUIRE(sb_sync_file_wait(render, 15000 * MS) == 0, "GL's write completes");
	ts_vgem = tb_sync_file_signal_time(f.sync_file);
	write_time(render, r.t_clear, t_finish, &w);
	close(render);
	n_new = eglt_count(&tgt, NEW, NULL);
	check_run(&o, &r, ts_vgem, &w, n_new);
	sbk_fence_destroy(&f);
	CHECK_EQ(tb_count_fds(), before, "no fd left behind by the loop");

	eglt_target_destroy(&t, &other);
	eglt_target_destroy(&t, &tgt);
	eglt_close(&t);
	close(vgem);
	return tb_finish();
}
