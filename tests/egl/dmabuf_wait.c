/* SPDX-License-Identifier: MIT */
/*
 * egl-dmabuf-wait: GL uses a vgem dma-buf (an EGLImage on the EGL device
 * platform's software device) that another party is still using, after the
 * bridge made GL wait for that party's fence.
 *
 *  --access read (GL samples; the other party writes): the buffer holds OLD
 *    and a pending vgem WRITE fence; another thread writes NEW, then signals.
 *    GL waits (sb_egl_dmabuf_wait READ), then reads back: all NEW.
 *  --access write (GL renders; the other party reads): the buffer holds OLD
 *    and a pending vgem READ fence; another thread reads the buffer, then
 *    signals. GL waits (sb_egl_dmabuf_wait WRITE), then clears to NEW: the
 *    reader saw all OLD, and the buffer ends all NEW.
 *
 *  --sample (with --access read): GL samples the buffer as a texture in a
 *    shader (a textured quad into a render target of its own, as a
 *    compositor does) instead of reading the imported image back directly;
 *    the shader is compiled and run once before the fence is attached (the
 *    JIT's time is outside the fence's life).
 *  --via sync-file: the same through sb_dmabuf_export_sync_file() +
 *    sb_egl_sync_file_wait() instead of sb_egl_dmabuf_wait().
 *  --fallback: SYNCBRIDGE_EGL_FALLBACK=1 (CPU waits); --core:
 *    SYNCBRIDGE_EGL_CORE=1 (EGL 1.5 core entry points); otherwise the display
 *    must wait GPU-side (native fence sync + wait sync, as in the guest).
 *  --control: SYNCBRIDGE_DISABLE=1 — the bridge's wait is a no-op, and the
 *    program asserts the race: GL completed its access while the other
 *    party's fence was still pending (GL did not wait by itself), and that
 *    access was real: GL read OLD / the reader then saw GL's NEW.
 *
 * Timing (issue 19): nothing passes or fails by how fast GL runs under TCG.
 *  - With the bridge, the other party acts DELAY_NS (500 ms) after it starts.
 *    That delay is not a synchronisation: GL's access is ordered after the
 *    signal, which comes after the other party's access, however late either
 *    runs. It only gives a bridge that does not wait the time to show (GL
 *    reads OLD / writes under the reader); a slow main thread can make such
 *    a bug go unseen in one run, never make a correct bridge fail.
 *  - A CPU wait (--fallback) is checked causally: when it returned, the other
 *    party had set `signalling` (just before its FENCE_SIGNAL). No duration.
 *  - In the control the other party does not act on a clock: it waits until
 *    GL's access is done (readback / glFinish) and checked, then writes or
 *    reads, then signals. "GL did not wait" is state, not time: the fence was
 *    still pending when GL's access returned (nobody signals it before; had GL
 *    waited by itself it would have waited for vgem's ~10 s self-signal).
 *  - The vgem fence lives from the attach to the signal: ~0.5 s with the
 *    bridge, GL's one access in the control (ms to ~100 ms), far below vgem's
 *    10 s.
 *
 * Needs root, vgem and the software EGL device (the VM tier); else exit 77.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <syncbridge/egl.h>
#include <syncbridge/syncbridge.h>

#include "egl_common.h"
#include "kernel_raw.h"
#include "fd_snapshot.h"
#include "gate.h"
#include "harness.h"

#define SIZE EGLC_SIZE
#define OLD 0x11
#define NEW 0xee
#define MS INT64_C(1000000)
#define DELAY_NS (500 * MS)

struct other {
	pthread_t thread;
	struct sbk_buf *buf;
	int vgem;
	uint32_t fence_id;
	bool writer;        /* writes NEW; else reads (snapshot) */
	bool when_told;     /* control: act once `go` opens, not after DELAY_NS */
	struct tb_gate go;
	long old_seen;      /* reader: bytes of OLD in the rows it read */
	long new_seen;      /* reader: bytes of NEW */
	atomic_bool signalling; /* set just before FENCE_SIGNAL */
	int signal_ret;
};

static void *
other_main(void *p)
{
	struct other *o = p;

	if (o->when_told)
		tb_gate_wait(&o->go); /* the control: only after GL's access, however long that takes */
	else
		sbk_sleep_ns(DELAY_NS); /* not a synchronisation: the window for a bridge that does not wait */
	if (o->writer) {
		eglc_cpu_fill(o->buf, NEW);
	} else {
		o->old_seen = eglc_cpu_count(o->buf, OLD);
		o->new_seen = eglc_cpu_count(o->buf, NEW);
	}
	atomic_store(&o->signalling, true);
	o->signal_ret = sbk_vgem_fence_signal(o->vgem, o->fence_id);
	return NULL;
}

/*
 * Whether the other party's fence is still pending: a pending write fence
 * gives a dma-buf neither POLLIN nor POLLOUT, a pending read fence no POLLOUT.
 */
static bool
fence_pending(int dmabuf_fd)
{
	int revents = tb_dmabuf_poll_raw(dmabuf_fd);

	REQUIRE(revents >= 0, "poll the dma-buf: %s", strerror(-revents));
	return !(revents & POLLOUT);
}

int
main(int argc, char **argv)
{
	const char *access_name = tb_arg_value(argc, argv, "--access", "read");
	const char *via = tb_arg_value(argc, argv, "--via", "dmabuf");
	struct eglc_switches sw = eglc_switches_apply(argc, argv);
	bool control = sw.control, fallback = sw.fallback, core = sw.core;
	bool sample = tb_has_arg(argc, argv, "--sample");
	bool read = strcmp(access_name, "read") == 0;
	enum sb_access access = read ? SB_ACCESS_READ : SB_ACCESS_WRITE;
	struct eglc_app a;
	struct other other;
	struct eglt_target dst = { 0 };
	struct eglt_blit blit = { 0 };
	struct tb_fd_snapshot before;
	int ret, first = -1;
	int64_t t0, waited;
	bool signalling_at_return, pending;
	long n;

	if ((!read && strcmp(access_name, "write") != 0) || (sample && !read)) {
		fprintf(stderr, "usage: %s [--access read [--sample] | --access write] "
				"[--via dmabuf|sync-file] [--fallback] [--core] [--control]\n", argv[0]);
		return 2;
	}

	eglc_app_open(&a);
	eglc_cpu_fill(&a.buf, OLD);
	tb_note("caps 0x%x; access %s via %s%s%s%s", a.caps, access_name, via,
		     fallback ? ", fallback" : "", core ? ", core" : "", control ? ", CONTROL" : "");
	if (!fallback && !control)
		REQUIRE(a.caps & SB_EGL_CAP_GPU_WAIT, "the display waits GPU-side (native fence + wait sync)");
	if (fallback)
		CHECK(!(a.caps & SB_EGL_CAP_GPU_WAIT), "fallback: CPU waits");
	if (core)
		CHECK(a.caps & SB_EGL_CAP_CORE_SYNC, "EGL 1.5 core entry points");

	/* GL sees what the CPU wrote: otherwise the test proves nothing. */
	n = eglt_count(&a.target, OLD, &first);
	REQUIRE(n == SIZE * SIZE, "readback of the imported buffer shows OLD (%ld pixels, first %d)",
		n, first);
	if (sample) {
		REQUIRE(eglt_blit_init(&blit) == 0, "the sampling program");
		REQUIRE(eglt_target_create(&a.t, SIZE, SIZE, &dst) == 0, "a render target");
		eglt_blit(&blit, a.target.tex, &dst);
		n = eglt_count(&dst, OLD, &first);
		REQUIRE(n == SIZE * SIZE, "sampling the imported buffer gives OLD (%ld, first %d)", n,
			first);
	}
	/*
	 * The fd baseline: every fd of the setup is open, and no thread but this
	 * one can open or close one until the end check (Mesa's disk cache is
	 * off, see eglt.h; llvmpipe's own threads open none; the other party's
	 * thread starts after this and is joined before the check).
	 */
	REQUIRE(!eglt_disk_cache_running(), "no Mesa shader disk-cache thread (it opens fds behind "
		"the fd check: MESA_SHADER_CACHE_DISABLE)");
	REQUIRE(tb_fd_snapshot_take(&before) == 0, "fd snapshot");

	memset(&other, 0, sizeof(other));
	other.buf = &a.buf;
	other.vgem = a.vgem;
	other.writer = read; /* GL reads: the other party writes; and vice versa */
	other.when_told = control;
	atomic_init(&other.signalling, false);
	tb_gate_init(&other.go);
	REQUIRE(sbk_vgem_fence_attach(a.vgem, a.buf.handle, other.writer, &other.fence_id) == 0,
		"attach a pending vgem %s fence", other.writer ? "write" : "read");
	REQUIRE(pthread_create(&other.thread, NULL, other_main, &other) == 0, "pthread_create");

	t0 = now_ns();
	if (strcmp(via, "sync-file") == 0) {
		int fence_fd = -1;

		REQUIRE(sb_dmabuf_export_sync_file(a.buf.fd, access, &fence_fd) == 0, "export");
		ret = sb_egl_sync_file_wait(a.t.dpy, fence_fd);
		CHECK(sb_sync_file_is_valid(fence_fd), "the wait borrowed the sync_file");
		close(fence_fd);
	} else {
		ret = sb_egl_dmabuf_wait(a.t.dpy, a.buf.fd, access);
	}
	signalling_at_return = atomic_load(&other.signalling);
	waited = now_ns() - t0;
	CHECK_EQ(ret, 0, "the bridge's wait");
	tb_note("the wait returned after %.1f ms", (double)waited / 1e6);

	if (read) {
		/* GL's reads after the wait. */
		if (sample) {
			eglt_blit(&blit, a.target.tex, &dst);
			n = eglt_count(&dst, NEW, &first);
		} else {
			n = eglt_count(&a.target, NEW, &first);
		}
		pending = fence_pending(a.buf.fd);
		if (control)
			tb_gate_open(&other.go);
		pthread_join(other.thread, NULL);
		tb_note("GL read %ld NEW pixels of %d (first byte 0x%02x)%s", n, SIZE * SIZE, first,
			     pending ? " while the writer's fence was pending" : "");
		if (control) {
			CHECK(pending, "control: GL's read returned while the writer's fence was pending "
			      "(GL does not wait by itself)");
			CHECK(n == 0 && first == OLD,
			      "control: without the wait GL reads OLD — the race the bridge prevents");
		} else
			CHECK_EQ(n, SIZE * SIZE, "GL reads the data written before the fence signalled");
	} else {
		/* GL's writes after the wait. */
		eglt_fill(&a.target, NEW);
		glFinish();
		pending = fence_pending(a.buf.fd);
		if (control)
			tb_gate_open(&other.go);
		pthread_join(other.thread, NULL);
		tb_note("the reader saw %ld OLD and %ld NEW bytes of %d%s", other.old_seen,
			     other.new_seen, SIZE * SIZE * 4,
			     pending ? "; GL finished while its fence was pending" : "");
		if (control) {
			CHECK(pending, "control: GL's write finished while the reader's fence was "
			      "pending (GL does not wait by itself)");
			CHECK(other.new_seen > 0,
			      "control: without the wait GL overwrote the buffer under its reader");
		} else
			CHECK_EQ(other.old_seen, SIZE * SIZE * 4,
				 "the reader read OLD untouched: GL wrote after it was done");
		CHECK_EQ(eglt_count(&a.target, NEW, NULL), SIZE * SIZE, "GL's NEW is in the buffer");
	}
	CHECK_EQ(other.signal_ret, 0, "the other party signalled its fence");
	/*
	 * A CPU wait blocks until the signal; a GPU-side one need not (llvmpipe's
	 * does). Causal: the other party had started to signal when it returned.
	 */
	if (!control && !(a.caps & SB_EGL_CAP_GPU_WAIT))
		CHECK(signalling_at_return, "the CPU wait returned after the other party started "
		      "to signal (%.1f ms)", (double)waited / 1e6);
	tb_gate_finish(&other.go);
	tb_fd_snapshot_check(&before, NULL, 0, "no fd leaked");
	tb_fd_snapshot_free(&before);

	if (sample) {
		eglt_target_destroy(&a.t, &dst);
		eglt_blit_finish(&blit);
	}
	eglc_app_close(&a);
	return tb_finish();
}
