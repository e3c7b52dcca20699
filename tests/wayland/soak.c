/* SPDX-License-Identifier: MIT */
/*
 * wl-soak (VM tier): N commits through the compositor helper with random
 * fence timings, against the example compositor on a thread of this process.
 *
 * One client, two surfaces: one on explicit-sync v1 (a vgem sync_file per
 * commit, with a release object), one on linux-drm-syncobj (virtio_gpu; an
 * acquire point per commit, either materialised with a pending vgem fence or
 * left unmaterialised and signalled from the CPU — the syncobj waiter's path —
 * and a release point). Per commit, seeded xorshift: a quarter are signalled
 * before the commit, the rest 0-10 ms after it (times the setup's slowdown);
 * up to WINDOW commits per surface wait at once, so the helper's queues are
 * exercised, and signals complete out of commit order.
 *
 * Whether the compositor sees a commit before its 0-10 ms fence signalled
 * depends on how fast its thread runs (under TSan it mostly did not: 73 of
 * 2,000 held), so the premise "a good part of the commits were held" rests on
 * commits that are held for certain: one in eight of the later-signalled
 * ones is signalled only after a roundtrip, i.e. after the compositor took
 * the commit with its fence pending (seeded: the same commits every run).
 *
 * Every use of a buffer is checked (on the compositor thread, as it happens):
 * the surface's uses come in commit order and never before that commit's
 * fence was signalled. After a warm-up (500 commits) and at the end, with
 * nothing in flight: open fds, RSS, the glibc heap in use (mallinfo2) and the
 * helper's counters (waits, queued commits, threads). fds, waits and queued
 * commits must come back exactly, the heap within 256 KiB; RSS is reported.
 *
 *   wl-soak [--commits N] [--seed S]
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <drm.h>
#include <linux/dma-buf.h>
#include <sys/ioctl.h>

#include <syncbridge/syncbridge.h>
#include <wayland-server-core.h>

#include "harness.h"
#include "kernel.h"
#include "kernel_raw.h"
#include "wlt.h"
#include "xorshift.h"

#define WINDOW 6   /* commits waiting per surface at most */
#define BEHIND 12  /* commits not yet used per surface at most (the helper allows 16 queued) */
#define RING 64

/*
 * Fences signal 0 to max_delay_us after their commit: 10 ms, times the test
 * setup's slowdown (SYNCBRIDGE_VM_TIMEOUT_SCALE: 2 asan, 3 tsan, 20
 * valgrind). Under TSan the compositor thread took longer than 10 ms to see
 * a commit, so most fences had signalled by then and too few commits were
 * held for the soak to mean anything (73 of 2,000).
 */
static int64_t max_delay_us = 10000;

struct pend {      /* one commit's acquire, until its buffer was used */
	uint64_t seq;
	int64_t due_ns;        /* when to signal it (0: signalled before the commit) */
	int64_t signalled_ns;  /* set under the compositor's lock just before the signal */
	bool signalled;
	/* v1, or the syncobj's materialised fence: a vgem WRITE fence on the
	 * slot's own buffer (bos[seq % RING], reused once that slot's previous
	 * commit was used, so its fence has signalled) and its sync_file. */
	uint32_t fence_id;
	int sync_file;
	bool has_fence;
	uint64_t point;        /* syncobj: the acquire point */
	bool held;             /* signalled only after the compositor took the commit */
};

struct surf {
	struct wl_surface *surf;
	struct wl_buffer *buf;
	uint32_t id;
	bool syncobj;
	struct zwp_linux_surface_synchronization_v1 *sync;
	struct wp_linux_drm_syncobj_surface_v1 *so;
	struct wp_linux_drm_syncobj_timeline_v1 *acq_tl, *rel_tl;
	uint32_t acq_handle;
	uint64_t point;
	struct pend ring[RING]; /* commits not yet used, by seq % RING */
	struct sbk_buf bos[RING];
	uint64_t committed, used;
	int waiting;            /* committed, fence not yet signalled */
};

static struct wlt_comp comp;
static struct surf surfs[2];
static int n_surfs;
static struct wlt_devices dev;
static uint64_t rng = SB_XORSHIFT_SEED;
static int order_errors, early_uses;
static uint64_t releases, held_commits;

/* Compositor thread, under comp.lock. */
static void
on_used(void *data, const struct wlc_used *u)
{
	for (int i = 0; i < n_surfs; i++) {
		struct surf *s = &surfs[i];
		struct pend *p;

		if (u->surface_id != s->id)
			continue;
		p = &s->ring[u->seq % RING];
		if (u->seq != s->used + 1 || p->seq != u->seq) {
			if (order_errors++ < 5)
				fprintf(stderr, "surface %u: use seq %llu, expected %llu (ring has %llu)\n",
					s->id, (unsigned long long)u->seq, (unsigned long long)s->used + 1,
					(unsigned long long)p->seq);
		} else if (!p->signalled || u->time_ns < p->signalled_ns) {
			if (early_uses++ < 5)
				fprintf(stderr, "surface %u: commit %llu used before its fence was signalled\n",
					s->id, (unsigned long long)u->seq);
		}
		s->used = u->seq;
	}
}

static void
release_fenced(void *data, struct zwp_linux_buffer_release_v1 *r, int32_t fd)
{
	close(fd);
	zwp_linux_buffer_release_v1_destroy(r);
	releases++;
}

static void
release_immediate(void *data, struct zwp_linux_buffer_release_v1 *r)
{
	zwp_linux_buffer_release_v1_destroy(r);
	releases++;
}

static const struct zwp_linux_buffer_release_v1_listener release_listener = {
	release_fenced, release_immediate,
};

static void
pend_signal(struct surf *s, struct pend *p)
{
	if (p->signalled)
		return;
	pthread_mutex_lock(&comp.lock);
	p->signalled_ns = now_ns();
	p->signalled = true;
	pthread_mutex_unlock(&comp.lock);
	if (p->has_fence)
		REQUIRE(sbk_vgem_fence_signal(dev.vgem, p->fence_id) == 0, "signal a vgem fence");
	else
		REQUIRE(sb_syncobj_signal(dev.client_drm, s->acq_handle, p->point) == 0, "signal point %llu",
			(unsigned long long)p->point);
	s->waiting--;
}

static bool
unmaterialised_pending(struct surf *s)
{
	pthread_mutex_lock(&comp.lock);
	uint64_t used = s->used;
	pthread_mutex_unlock(&comp.lock);
	for (uint64_t q = used + 1; q <= s->committed; q++) {
		struct pend *p = &s->ring[q % RING];
		if (p->seq == q && !p->signalled && !p->has_fence)
			return true;
	}
	return false;
}

/*
 * Signal what is due (all: everything). v1 fences in any order; timeline
 * points in point order (a later point signalled first would complete the
 * earlier unmaterialised ones with it).
 */
static void
signal_due(bool all)
{
	int64_t now = now_ns();

	for (int i = 0; i < n_surfs; i++) {
		struct surf *s = &surfs[i];
		pthread_mutex_lock(&comp.lock);
		uint64_t used = s->used;
		pthread_mutex_unlock(&comp.lock);
		for (uint64_t q = used + 1; q <= s->committed; q++) {
			struct pend *p = &s->ring[q % RING];
			if (p->signalled)
				continue;
			if (all || p->due_ns <= now)
				pend_signal(s, p);
			else if (s->syncobj)
				break;
		}
	}
}

/* Fences of used commits are no longer needed: free them. */
static void
reap(void)
{
	for (int i = 0; i < n_surfs; i++) {
		struct surf *s = &surfs[i];
		pthread_mutex_lock(&comp.lock);
		uint64_t used = s->used;
		pthread_mutex_unlock(&comp.lock);
		for (uint64_t q = used > RING ? used - RING + 1 : 1; q <= used; q++) {
			struct pend *p = &s->ring[q % RING];
			if (p->seq == q && p->has_fence) {
				close(p->sync_file);
				p->has_fence = false;
			}
		}
	}
}

/* A pending vgem fence for commit seq, as a sync_file (p->sync_file). */
static void
fence_new(struct surf *s, struct pend *p, uint64_t seq)
{
	struct sbk_buf *bo = &s->bos[seq % RING]; /* made up front, in main() */

	REQUIRE(sbk_vgem_fence_attach(dev.vgem, bo->handle, true, &p->fence_id) == 0, "vgem fence");
	REQUIRE(tb_dmabuf_export_raw(bo->fd, DMA_BUF_SYNC_READ, &p->sync_file) == 0, "export");
	p->has_fence = true;
}

/* Returns the commit's record when it is to be held until the compositor took it. */
static struct pend *
commit_one(struct wlt_client *c, struct surf *s)
{
	uint64_t r = tb_xorshift64(&rng);
	uint64_t seq = s->committed + 1;
	struct pend *p = &s->ring[seq % RING];

	if (p->has_fence) /* the slot's previous commit, used and not reaped yet */
		close(p->sync_file);
	pthread_mutex_lock(&comp.lock);
	REQUIRE(seq - s->used < RING, "ring overflow");
	memset(p, 0, sizeof(*p));
	p->seq = seq;
	pthread_mutex_unlock(&comp.lock);
	p->due_ns = (r & 3) == 0 ? 0 : now_ns() + (int64_t)((r >> 8) % max_delay_us) * 1000;
	/*
	 * Timeline points are signalled in point order: signalling this one
	 * now, with earlier ones pending, would complete the earlier
	 * unmaterialised ones with it (a wait for an unmaterialised point
	 * resolves to the next point that has a fence). Then it is signalled
	 * right after the commit, in its turn.
	 */
	if (p->due_ns == 0 && s->syncobj && s->waiting > 0)
		p->due_ns = now_ns();
	/* One in eight of the later ones: due only after a roundtrip (header). */
	if (p->due_ns != 0 && ((r >> 20) & 7) == 0) {
		p->held = true;
		p->due_ns = INT64_MAX;
	}
	s->waiting++; /* pend_signal() counts it down */

	wl_surface_attach(s->surf, s->buf, 0, 0);
	if (!s->syncobj) {
		fence_new(s, p, seq);
		if (p->due_ns == 0)
			pend_signal(s, p);
		zwp_linux_surface_synchronization_v1_set_acquire_fence(s->sync, p->sync_file);
		struct zwp_linux_buffer_release_v1 *rel = zwp_linux_surface_synchronization_v1_get_release(s->sync);
		zwp_linux_buffer_release_v1_add_listener(rel, &release_listener, NULL);
	} else {
		p->point = ++s->point;
		/*
		 * Materialised (a pending vgem fence imported at the point) or not
		 * (signalled from the CPU later). Never a materialised point after
		 * an unmaterialised one that is still pending: on a timeline,
		 * waiting for an unmaterialised point resolves to the next
		 * materialised one, and signalling the lower point afterwards would
		 * add it out of order.
		 */
		if (((r >> 4) & 1) && !unmaterialised_pending(s)) {
			fence_new(s, p, seq);
			REQUIRE(sb_syncobj_import_sync_file(dev.client_drm, s->acq_handle, p->point,
							    p->sync_file) == 0, "import at point");
		}
		if (p->due_ns == 0)
			pend_signal(s, p);
		wp_linux_drm_syncobj_surface_v1_set_acquire_point(s->so, s->acq_tl, (uint32_t)(p->point >> 32),
								  (uint32_t)p->point);
		wp_linux_drm_syncobj_surface_v1_set_release_point(s->so, s->rel_tl, (uint32_t)(p->point >> 32),
								  (uint32_t)p->point);
	}
	wl_surface_commit(s->surf);
	s->committed = seq;
	return p->held ? p : NULL;
}

static void
drain(struct wlt_client *c, uint64_t total)
{
	signal_due(true);
	wl_display_flush(c->display);
	REQUIRE(wlt_comp_wait_total_used(&comp, total, 30000 * WLT_MS) == 0, "all %llu commits used",
		(unsigned long long)total);
	/* Every release was sent when its commit was used (no render fences
	 * here): the roundtrip's answer comes after them. */
	wl_display_roundtrip(c->display);
	reap();
}

int
main(int argc, char **argv)
{
	long commits = 3000, warmup = 500;
	struct wlc_comp_options opt;
	struct wlt_client c;
	struct wlt_comp_sample s0, s1;
	struct sbk_buf buf;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--commits") == 0 && i + 1 < argc)
			commits = atol(argv[++i]);
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			rng = strtoull(argv[++i], NULL, 0) | 1;
		else
			REQUIRE(false, "unknown argument %s", argv[i]);
	}
	const char *scale = getenv("SYNCBRIDGE_VM_TIMEOUT_SCALE");
	if (scale && atoi(scale) > 1)
		max_delay_us *= atoi(scale);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!wlt_devices_open(&dev, WLT_DEV_DRM))
		tb_note("no virtio_gpu: explicit-sync v1 only");

	wlt_comp_options_init(&opt, &dev, 0);
	ret = wlt_comp_start(&comp, &opt);
	REQUIRE(ret == 0, "start the compositor: %s", strerror(-ret));
	pthread_mutex_lock(&comp.lock);
	comp.on_used = on_used;
	pthread_mutex_unlock(&comp.lock);
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, dev.vgem, 16 * 64, &buf) == 0, "vgem buffer");
	REQUIRE(wlt_client_connect(&c, comp.socket) == 0, "connect");

	for (int i = 0; i < (dev.client_drm >= 0 && c.syncobj ? 2 : 1); i++) {
		struct surf *s = &surfs[i];
		s->surf = wl_compositor_create_surface(c.compositor);
		s->buf = wlt_dmabuf_buffer(&c, buf.fd, 16, 16, 64);
		s->syncobj = i == 1;
		if (s->syncobj) {
			s->so = wp_linux_drm_syncobj_manager_v1_get_surface(c.syncobj, s->surf);
			s->acq_tl = wlt_timeline_new(&c, dev.client_drm, &s->acq_handle);
			s->rel_tl = wlt_timeline_new(&c, dev.client_drm, NULL);
		} else {
			s->sync = zwp_linux_explicit_synchronization_v1_get_synchronization(c.explicit_sync, s->surf);
		}
	}
	REQUIRE(wl_display_roundtrip(c.display) >= 0, "setup");
	pthread_mutex_lock(&comp.lock);
	n_surfs = dev.client_drm >= 0 && c.syncobj ? 2 : 1;
	for (int i = 0; i < n_surfs; i++)
		surfs[i].id = wl_proxy_get_id((struct wl_proxy *)surfs[i].surf);
	pthread_mutex_unlock(&comp.lock);
	/*
	 * Every ring slot's buffer up front: the fd and heap samples are the
	 * whole process's (the compositor runs on a thread of it), so the
	 * test's own buffers must not appear between the warm-up and the end.
	 */
	for (int i = 0; i < n_surfs; i++) {
		for (int k = 0; k < RING; k++) {
			REQUIRE(sbk_buf_create(SBK_BUF_VGEM, dev.vgem, 4096, &surfs[i].bos[k]) == 0, "vgem buffer");
		}
	}

	int64_t t0 = 0;
	uint64_t total = 0, max_queued = 0;
	for (long n = 0; n < commits; n++) {
		struct surf *s = &surfs[tb_xorshift64(&rng) % (uint64_t)n_surfs];

		/* At most WINDOW commits of a surface wait: else signal the oldest first. */
		while (s->waiting >= WINDOW) {
			pthread_mutex_lock(&comp.lock);
			uint64_t used = s->used;
			pthread_mutex_unlock(&comp.lock);
			for (uint64_t q = used + 1; q <= s->committed; q++) {
				struct pend *p = &s->ring[q % RING];
				if (!p->signalled) {
					pend_signal(s, p);
					break;
				}
			}
		}
		/*
		 * Signalled commits the compositor has not used yet also take ring
		 * slots: a loaded guest can fall behind a client that only waits
		 * for its WINDOW of unsignalled ones. Let it catch up (bounded).
		 */
		for (int64_t t_lag = now_ns();;) {
			pthread_mutex_lock(&comp.lock);
			uint64_t used = s->used;
			pthread_mutex_unlock(&comp.lock);
			if (s->committed + 1 - used <= BEHIND)
				break;
			REQUIRE(now_ns() - t_lag < 30 * 1000000000LL,
				"compositor used nothing for 30 s with %d commits behind",
				(int)(s->committed - used));
			signal_due(false);
			wlt_dispatch_for(&c, 1000000);
		}
		struct pend *held = commit_one(&c, s);
		total++;
		wl_display_flush(c.display);
		if (held) {
			/* The compositor has taken the commit, with its fence pending. */
			REQUIRE(wl_display_roundtrip(c.display) >= 0, "roundtrip after a held commit");
			held->due_ns = now_ns();
			held_commits++;
		}
		signal_due(false);
		wlt_dispatch_for(&c, 0);
		if (n % 16 == 0)
			reap();
		if (n + 1 == warmup) {
			drain(&c, total);
			wlt_comp_sample(&comp, &s0);
			t0 = now_ns();
			tb_note("after %ld commits: fds %d, heap %zu B, RSS %ld KiB, waits %u, queued %u, "
				     "threads %u", warmup, s0.fds, s0.heap_in_use, s0.rss_kib,
				     s0.stats.waits_pending, s0.stats.commits_queued, s0.stats.waits_threaded);
		}
		if ((n + 1) % 10000 == 0) {
			struct wlt_comp_sample m;
			wlt_comp_sample(&comp, &m);
			if (m.stats.commits_queued > max_queued)
				max_queued = m.stats.commits_queued;
			tb_note("%ld commits: fds %d, heap %zu B, RSS %ld KiB, queued %u, deferred %llu",
				     n + 1, m.fds, m.heap_in_use, m.rss_kib, m.stats.commits_queued,
				     (unsigned long long)m.stats.commits_deferred);
		}
	}
	drain(&c, total);
	int64_t dt = now_ns() - t0;
	wlt_comp_sample(&comp, &s1);
	tb_note("after %llu commits: fds %d, heap %zu B, RSS %ld KiB, waits %u, queued %u, threads %u; "
		     "%llu deferred, %llu wake-ups, %llu releases (v1)",
		     (unsigned long long)total, s1.fds, s1.heap_in_use, s1.rss_kib, s1.stats.waits_pending,
		     s1.stats.commits_queued, s1.stats.waits_threaded,
		     (unsigned long long)s1.stats.commits_deferred, (unsigned long long)s1.stats.wakeups,
		     (unsigned long long)releases);
	tb_note("%.3f ms per commit after the warm-up", (double)dt / 1e6 / (double)(total - warmup));

	CHECK_EQ(order_errors, 0, "uses out of commit order");
	CHECK_EQ(early_uses, 0, "uses before the commit's fence was signalled");
	CHECK(held_commits > total / 20 && s1.stats.commits_deferred >= held_commits,
	      "a good part of the commits were held (%llu of %llu; %llu for certain)",
	      (unsigned long long)s1.stats.commits_deferred, (unsigned long long)total,
	      (unsigned long long)held_commits);
	CHECK_EQ(s1.fds, s0.fds, "fds after the soak (vs after the warm-up)");
	CHECK_EQ(s1.stats.waits_pending, 0, "waits left");
	CHECK_EQ(s1.stats.commits_queued, 0, "queued commits left");
	CHECK_EQ(s1.stats.waits_threaded, 0, "waiter threads left");
	CHECK(s1.heap_in_use <= s0.heap_in_use + 256 * 1024, "heap in use flat (%zu → %zu B)",
	      s0.heap_in_use, s1.heap_in_use);

	for (int i = 0; i < n_surfs; i++) {
		struct surf *s = &surfs[i];
		if (s->so) {
			wp_linux_drm_syncobj_timeline_v1_destroy(s->acq_tl);
			wp_linux_drm_syncobj_timeline_v1_destroy(s->rel_tl);
			wp_linux_drm_syncobj_surface_v1_destroy(s->so);
		} else {
			zwp_linux_surface_synchronization_v1_destroy(s->sync);
		}
		wl_buffer_destroy(s->buf);
		wl_surface_destroy(s->surf);
		for (int k = 0; k < RING; k++) {
			if (s->ring[k].has_fence)
				close(s->ring[k].sync_file);
			sbk_buf_destroy(&s->bos[k]);
		}
	}
	wlt_client_disconnect(&c);
	wlt_comp_stop(&comp);
	sbk_buf_destroy(&buf);
	wlt_devices_close(&dev);
	return tb_finish();
}
