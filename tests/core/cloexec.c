/* SPDX-License-Identifier: MIT */
/*
 * hardening-cloexec (VM tier): every fd the library creates is close-on-exec.
 * Calls each public function that returns a new fd (or owns one: the syncobj
 * waiter's eventfd, on both of its paths), keeps them all open, checks
 * FD_CLOEXEC on each, then fork+execs this program as a child that lists the
 * fds it inherited: none of the library's may be there, and the child must
 * see exactly the parent's fds that lack FD_CLOEXEC (which shows the method
 * itself works).
 *
 * Later components add their creators in main()'s "later components" block:
 * the buffer queue (its eventfd; fences it takes over without FD_CLOEXEC and
 * holds or hands on) and, when built, the EGL bridge's export; the Wayland
 * helpers' fds.
 */

#include "vmtest.h"
#include "fd_snapshot.h"

#ifdef SB_CLOEXEC_EGL
#include <syncbridge/egl.h>

#include "eglt.h"
#endif

#define MAX_FDS 64

struct made {
	const char *what;
	int fd;
};

static struct made made[MAX_FDS];
static int n_made;

static void
keep(const char *what, int ret, int fd)
{
	CHECK(ret == 0 && fd >= 0, "%s: %s (fd %d)", what, ret ? strerror(-ret) : "ok", fd);
	if (ret == 0 && fd >= 0 && n_made < MAX_FDS)
		made[n_made++] = (struct made){ what, fd };
}

static bool
queue_owned(int i, const int *owned, int n)
{
	for (int k = 0; k < n; k++)
		if (owned[k] == i)
			return true;
	return false;
}

/* This program's path, for the exec'ed lister: argv[0] when it is one (under
 * valgrind /proc/self/exe is valgrind's tool). */
static const char *self_path = "/proc/self/exe";

int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--list-fds") == 0)
		return tb_fd_list_inherited();
	if (strchr(argv[0], '/'))
		self_path = argv[0];

	int vgem = vm_require_vgem();
	struct sbk_fence f1, f2;
	struct sbk_buf vbuf, ubuf;
	struct sb_syncobj_waiter *w1 = NULL, *w2 = NULL;
	int fd, ret, drm;

	vm_require_buf(SBK_BUF_VGEM, vgem, 4096, &vbuf);
	vm_require_buf(SBK_BUF_UDMABUF, vgem, 4096, &ubuf);
	vm_require_fence(vgem, true, &f1);
	vm_require_fence(vgem, false, &f2);

	/* ---- sync_file ---- */
	fd = -1;
	ret = sb_sync_file_merge(f1.sync_file, f2.sync_file, &fd);
	keep("sb_sync_file_merge", ret, fd);
	{
		int in[3] = { f1.sync_file, f2.sync_file, f1.sync_file };

		fd = -1;
		ret = sb_sync_file_merge_array(in, 1, &fd);
		keep("sb_sync_file_merge_array(n=1, a dup)", ret, fd);
		fd = -1;
		ret = sb_sync_file_merge_array(in, 3, &fd);
		keep("sb_sync_file_merge_array(n=3)", ret, fd);
	}
	fd = -1;
	ret = sb_sync_file_accumulate(&fd, f1.sync_file);
	keep("sb_sync_file_accumulate(-1, fd) (a dup)", ret, fd);
	{
		int acc = -1;

		ret = sb_sync_file_accumulate(&acc, f1.sync_file);
		if (ret == 0)
			ret = sb_sync_file_accumulate(&acc, f2.sync_file);
		keep("sb_sync_file_accumulate(acc, fd) (a merge)", ret, acc);
	}

	/* ---- dma-buf ---- */
	fd = -1;
	ret = sb_dmabuf_export_sync_file(f1.bo.fd, SB_ACCESS_READ, &fd);
	keep("sb_dmabuf_export_sync_file(vgem, READ)", ret, fd);
	fd = -1;
	ret = sb_dmabuf_export_sync_file(vbuf.fd, SB_ACCESS_WRITE, &fd);
	keep("sb_dmabuf_export_sync_file(vgem idle, WRITE)", ret, fd);
	fd = -1;
	ret = sb_dmabuf_export_sync_file(ubuf.fd, SB_ACCESS_WRITE, &fd);
	keep("sb_dmabuf_export_sync_file(udmabuf, WRITE)", ret, fd);

	/* ---- syncobj ---- */
	drm = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);
	if (drm >= 0) {
		uint32_t bin, tl;

		REQUIRE(drmSyncobjCreate(drm, DRM_SYNCOBJ_CREATE_SIGNALED, &bin) == 0, "syncobj create");
		REQUIRE(drmSyncobjCreate(drm, 0, &tl) == 0, "syncobj create");
		REQUIRE(sb_syncobj_import_sync_file(drm, tl, 3, f1.sync_file) == 0, "import point 3");

		fd = -1;
		ret = sb_syncobj_export_sync_file(drm, bin, 0, &fd);
		keep("sb_syncobj_export_sync_file(binary)", ret, fd);
		fd = -1;
		ret = sb_syncobj_export_sync_file(drm, tl, 3, &fd);
		keep("sb_syncobj_export_sync_file(timeline point)", ret, fd);

		ret = sb_syncobj_waiter_create(drm, tl, 3, 0, &w1);
		keep("sb_syncobj_waiter_create (kernel eventfd path)", ret,
		     ret ? -1 : sb_syncobj_waiter_get_fd(w1));
		setenv("SYNCBRIDGE_SYNCOBJ_EVENTFD", "0", 1);
		ret = sb_syncobj_waiter_create(drm, tl, 3, 0, &w2);
		unsetenv("SYNCBRIDGE_SYNCOBJ_EVENTFD");
		keep("sb_syncobj_waiter_create (thread fallback)", ret,
		     ret ? -1 : sb_syncobj_waiter_get_fd(w2));
		if (w2)
			CHECK(!sb_syncobj_waiter_uses_eventfd(w2), "the second waiter runs a thread");

		/* Everything stays open through the exec below. */
	} else {
		tb_note("no virtio_gpu render node: syncobj creators not covered here");
	}

	/* ---- (later components: EGL export, Wayland helpers) ---- */

	/*
	 * Buffer queue: its eventfd, and the fences it takes over — given
	 * without FD_CLOEXEC (a plain dup()), as a producer or consumer may:
	 * the queue makes them close-on-exec, so the acquire fence it hands out
	 * and the release fence it holds are. Queue-owned fds stay the queue's
	 * (their indices in made[]: bq_owned, freed by destroy).
	 */
	struct sb_buffer_queue *bq = NULL;
	int bq_owned[4], n_bq_owned = 0;
	{
		struct tb_fd_snapshot pre;
		unsigned slot;
		int acq = -1, plain;

		REQUIRE(tb_fd_snapshot_take(&pre) == 0, "snapshot");
		ret = sb_buffer_queue_create(2, 0, &bq);
		CHECK_EQ(ret, 0, "sb_buffer_queue_create");
		for (int f = 3; ret == 0 && f < 1024 && n_bq_owned < 2; f++) {
			if (sbk_fd_is_open(f) && !tb_fd_snapshot_find(&pre, f)) {
				bq_owned[n_bq_owned++] = n_made;
				keep("sb_buffer_queue_create (its eventfd)", 0, f);
			}
		}
		tb_fd_snapshot_free(&pre);
		if (bq) {
			plain = dup(f2.sync_file); /* pending, no FD_CLOEXEC */
			REQUIRE(sb_buffer_queue_dequeue(bq, 0, &slot) == 0, "dequeue");
			REQUIRE(sb_buffer_queue_queue(bq, slot, plain) == 0, "queue");
			REQUIRE(sb_buffer_queue_acquire(bq, 0, &slot, &acq) == 0, "acquire");
			keep("sb_buffer_queue_acquire (a plain producer fd handed on)", 0, acq);
			plain = dup(f2.sync_file);
			ret = sb_buffer_queue_release(bq, slot, plain);
			bq_owned[n_bq_owned++] = n_made;
			keep("sb_buffer_queue_release (a plain fd the queue holds)", ret, plain);
		}
	}

#ifdef SB_CLOEXEC_EGL
	/* EGL bridge: the sync_file of sb_egl_sync_file_export() (native fences). */
	struct eglt egl_t = { 0 };
	bool egl_open = eglt_open(&egl_t, EGLT_ANY) == 0;

	if (egl_open) {
		uint32_t caps = 0;

		sb_egl_display_get_caps(egl_t.dpy, &caps);
		if (caps & SB_EGL_CAP_NATIVE_FENCE) {
			glClearColor(0, 0, 0, 1);
			glClear(GL_COLOR_BUFFER_BIT);
			fd = -1;
			ret = sb_egl_sync_file_export(egl_t.dpy, &fd);
			keep("sb_egl_sync_file_export (native fence)", ret, fd);
		} else {
			tb_note("EGL display %s has no native fences: export gives -1, nothing to check",
				     egl_t.platform);
		}
	} else {
		tb_note("no EGL display: the EGL bridge's export not covered here");
	}
#else
	tb_note("built without the EGL bridge: its export not covered here");
#endif

	for (int i = 0; i < n_made; i++) {
		struct tb_fd_entry e;

		CHECK(tb_fd_describe(made[i].fd, &e) && e.cloexec, "%s: fd %d (%s) has FD_CLOEXEC",
		      made[i].what, made[i].fd, e.what);
	}

	{
		bool inherited[4096] = { false };
		struct tb_fd_snapshot now;
		int n = tb_fd_exec_inherited(self_path, inherited, 4096), expected = 0;

		tb_note("%d library fds open; the exec'ed child inherited %d fds besides 0-2",
			     n_made, n);
		for (int i = 0; i < n_made; i++)
			CHECK(made[i].fd >= 4096 || !inherited[made[i].fd],
			      "%s: fd %d not inherited across exec", made[i].what, made[i].fd);
		/* The method: the child sees exactly our fds without FD_CLOEXEC. */
		REQUIRE(tb_fd_snapshot_take(&now) == 0, "snapshot");
		for (int i = 0; i < now.n; i++) {
			int fdn = now.e[i].fd;

			if (fdn <= 2 || fdn >= 4096)
				continue;
			expected += !now.e[i].cloexec;
			CHECK(inherited[fdn] == !now.e[i].cloexec,
			      "fd %d (%s, %s): child %s it", fdn, now.e[i].what,
			      now.e[i].cloexec ? "CLOEXEC" : "no CLOEXEC",
			      inherited[fdn] ? "inherited" : "did not inherit");
		}
		CHECK_EQ(n, expected, "the child inherited exactly our fds without FD_CLOEXEC");
		tb_fd_snapshot_free(&now);
	}

	/* The waiters and the queue own their fds: close the others, then destroy those. */
	for (int i = 0; i < n_made; i++)
		if ((!w1 || made[i].fd != sb_syncobj_waiter_get_fd(w1)) &&
		    (!w2 || made[i].fd != sb_syncobj_waiter_get_fd(w2)) &&
		    !queue_owned(i, bq_owned, n_bq_owned))
			close(made[i].fd);
	sb_syncobj_waiter_destroy(w1);
	sb_syncobj_waiter_destroy(w2);
	sb_buffer_queue_destroy(bq);
#ifdef SB_CLOEXEC_EGL
	if (egl_open)
		eglt_close(&egl_t);
#endif
	sbk_fence_signal(&f1);
	sbk_fence_signal(&f2);
	sbk_fence_destroy(&f1);
	sbk_fence_destroy(&f2);
	sbk_buf_destroy(&vbuf);
	sbk_buf_destroy(&ubuf);
	if (drm >= 0)
		close(drm);
	close(vgem);
	return tb_finish();
}
