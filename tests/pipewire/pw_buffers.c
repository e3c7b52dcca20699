/* SPDX-License-Identifier: MIT */
/*
 * pw-buffers: libsyncbridge-pipewire on buffers laid out as PipeWire lays
 * them out (a SPA_META_SyncTimeline meta, the image plane, two SyncObj
 * planes), without a daemon: the producer's and the consumer's views of one
 * buffer share the meta and carry duplicates of the planes' fds, as
 * PipeWire's client-node passes them. Real vgem fences and virtio_gpu
 * timelines (VM tier).
 *
 *   - round trip: the acquire point follows the producer's pending fence;
 *     the consumer's sync_file of it is pending until the fence signals;
 *   - reuse: a second frame before the release is -EBUSY; the release watch
 *     fd stays quiet while the consumer's read fence is pending and fires
 *     after it; then the next frame uses point 2;
 *   - a frame the consumer never took (UNSCHEDULED_RELEASE still set) is
 *     free at once; taking it clears the flag;
 *   - a producer breaking the contract: an acquire point not after the
 *     last frame read, a release point behind its timeline (-EPROTO);
 *   - the fallback: a buffer without the meta gets the fence as the
 *     dma-buf's implicit write fence;
 *   - bad inputs: SyncObj planes that are not syncobjs, the meta without
 *     the planes, a fence fd that is not a sync_file (left open), unknown
 *     buffers, NULLs; SYNCBRIDGE_DISABLE offers the fallback only;
 *   - fds: back where they were once everything is destroyed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <spa/buffer/buffer.h>
#include <spa/buffer/meta.h>
#include <spa/pod/builder.h>

#include <syncbridge/pipewire.h>
#include <syncbridge/sync_file.h>

#include "fd_snapshot.h"
#include "harness.h"
#include "kernel.h"
#include "kernel_raw.h"

#define SIZE 1024

/* One buffer as both sides see it. */
struct pair {
	struct spa_meta_sync_timeline timeline;
	struct spa_meta meta;
	struct spa_chunk chunks[3];
	struct spa_data pdatas[3], cdatas[3];
	struct spa_buffer producer, consumer;
	struct sbk_buf image;
};

static void
pair_init(struct pair *p, int vgem, bool with_meta)
{
	memset(p, 0, sizeof(*p));
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, vgem, SIZE, &p->image) == 0, "vgem buffer");
	p->meta = (struct spa_meta){ .type = SPA_META_SyncTimeline, .size = sizeof(p->timeline),
				     .data = &p->timeline };
	for (int i = 0; i < 3; i++) {
		p->pdatas[i].chunk = &p->chunks[i];
		p->cdatas[i].chunk = &p->chunks[i];
		p->pdatas[i].fd = p->cdatas[i].fd = -1;
	}
	p->pdatas[0] = (struct spa_data){ .type = SPA_DATA_DmaBuf, .fd = p->image.fd, .maxsize = SIZE,
					  .chunk = &p->chunks[0] };
	p->producer = (struct spa_buffer){ .n_metas = with_meta ? 1 : 0, .n_datas = with_meta ? 3 : 1,
					   .metas = &p->meta, .datas = p->pdatas };
	p->consumer = (struct spa_buffer){ .n_metas = with_meta ? 1 : 0, .n_datas = with_meta ? 3 : 1,
					   .metas = &p->meta, .datas = p->cdatas };
}

/* What client-node does: the consumer gets its own fds for the planes. */
static void
pass_to_consumer(struct pair *p)
{
	for (uint32_t i = 0; i < p->producer.n_datas; i++) {
		p->cdatas[i] = p->pdatas[i];
		p->cdatas[i].fd = fcntl((int)p->pdatas[i].fd, F_DUPFD_CLOEXEC, 0);
		REQUIRE(p->cdatas[i].fd >= 0, "dup a plane's fd");
	}
}

static void
pair_finish(struct pair *p)
{
	for (uint32_t i = 0; i < p->consumer.n_datas; i++)
		if (p->cdatas[i].fd >= 0)
			close((int)p->cdatas[i].fd);
	sbk_buf_destroy(&p->image);
}

static int
fence_status(int fd)
{
	int st = -1;

	return sb_sync_file_get_status(fd, &st) == 0 ? st : -1;
}

static bool
readable(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1;
}

int
main(void)
{
	struct sb_pw_sync *prod, *cons;
	struct sbk_fence f1, f2, f3;
	struct pair p, plain;
	struct tb_fd_snapshot fds0;
	int vgem, drm, fd = -1, watch = -1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	vgem = sbk_vgem_open();
	if (vgem < 0)
		tb_skip("no vgem");
	drm = sbk_drm_open_driver("virtio_gpu", true);
	if (drm < 0)
		tb_skip("no DRM render node with timeline syncobjs");
	tb_fd_snapshot_take(&fds0);

	CHECK_EQ(sb_pw_sync_create(vgem, &prod), -EOPNOTSUPP, "a DRM node without timelines (vgem)");
	CHECK(prod == NULL, "no object on failure");
	CHECK_EQ(sb_pw_sync_create(-1, &prod), -EBADF, "fd -1");
	REQUIRE(sb_pw_sync_create(drm, &prod) == 0 && sb_pw_sync_create(drm, &cons) == 0, "create");

	/* ---- the params ---- */
	uint8_t mem[1024];
	struct spa_pod_builder b = SPA_POD_BUILDER_INIT(mem, sizeof(mem));
	const struct spa_pod *params[3];
	CHECK_EQ(sb_pw_sync_build_params(prod, &b, params, 3, 4, 1, SIZE, 64, 1 << SPA_DATA_DmaBuf), 3,
		 "params: Buffers with the SyncObj planes, the Meta, the fallback Buffers");
	CHECK_EQ(sb_pw_sync_build_params(prod, &b, params, 2, 4, 1, SIZE, 64, 1 << SPA_DATA_DmaBuf), -ENOSPC,
		 "params: no room for 3");
	uint8_t small[16];
	struct spa_pod_builder sb = SPA_POD_BUILDER_INIT(small, sizeof(small));
	CHECK_EQ(sb_pw_sync_build_params(prod, &sb, params, 3, 4, 1, SIZE, 64, 1 << SPA_DATA_DmaBuf), -ENOSPC,
		 "params: a builder too small");

	/* ---- round trip ---- */
	pair_init(&p, vgem, true);
	CHECK_EQ(sb_pw_buffer_add(prod, &p.producer, true), 1, "producer: explicit sync");
	CHECK(p.pdatas[1].type == SPA_DATA_SyncObj && p.pdatas[2].type == SPA_DATA_SyncObj &&
	      p.pdatas[1].fd >= 0 && p.pdatas[2].fd >= 0, "the two SyncObj planes carry fds");
	pass_to_consumer(&p);
	CHECK_EQ(sb_pw_buffer_add(cons, &p.consumer, false), 1, "consumer: the planes import");
	CHECK(sb_pw_buffer_is_synced(cons, &p.consumer), "consumer: synced");

	REQUIRE(sbk_fence_create(vgem, true, &f1) == 0, "vgem fence");
	CHECK_EQ(sb_pw_producer_set_acquire(prod, &p.producer, f1.sync_file), 0, "set the acquire");
	CHECK(p.timeline.acquire_point == 1 && p.timeline.release_point == 1, "points 1/1 (%llu/%llu)",
	      (unsigned long long)p.timeline.acquire_point, (unsigned long long)p.timeline.release_point);
	CHECK_EQ(sb_pw_consumer_acquire(cons, &p.consumer, &fd), 0, "consumer: acquire");
	CHECK(fd >= 0 && fence_status(fd) == 0, "the acquire sync_file is pending while the write is");
	sbk_fence_signal(&f1);
	CHECK(fd >= 0 && sb_sync_file_wait(fd, 2000000000LL) == 0, "and signals after it");
	if (fd >= 0)
		close(fd);

	/* ---- reuse ---- */
	REQUIRE(sbk_fence_create(vgem, true, &f2) == 0, "vgem fence");
	CHECK_EQ(sb_pw_producer_set_acquire(prod, &p.producer, f2.sync_file), -EBUSY,
		 "a second frame before the consumer released the first");
	CHECK_EQ(sb_pw_producer_watch_release(prod, &p.producer, &watch), 0, "watch the release");
	CHECK(watch >= 0 && !readable(watch, 100), "the watch is quiet before the release");
	REQUIRE(sbk_fence_create(vgem, true, &f3) == 0, "vgem fence");
	CHECK_EQ(sb_pw_consumer_release(cons, &p.consumer, f3.sync_file), 0, "release with a pending read");
	CHECK(watch >= 0 && !readable(watch, 200), "still quiet while the read's fence is pending");
	sbk_fence_signal(&f3);
	CHECK(watch >= 0 && readable(watch, 2000), "the watch fires once the read's fence signals");
	CHECK_EQ(sb_pw_producer_wait_release(prod, &p.producer, 0), 1, "released");
	CHECK_EQ(sb_pw_producer_set_acquire(prod, &p.producer, f2.sync_file), 0, "the next frame");
	CHECK(p.timeline.acquire_point == 2, "on point 2");
	sbk_fence_signal(&f2);
	CHECK_EQ(sb_pw_consumer_release(cons, &p.consumer, -1), 0, "release now");
	CHECK_EQ(sb_pw_producer_wait_release(prod, &p.producer, 1000000000LL), 1, "released again");
	sbk_fence_destroy(&f1);
	sbk_fence_destroy(&f2);
	sbk_fence_destroy(&f3);

	/* ---- a frame the consumer never took (PipeWire recycled it unseen) ---- */
	REQUIRE(sbk_fence_create(vgem, true, &f1) == 0, "vgem fence");
	CHECK_EQ(sb_pw_producer_set_acquire(prod, &p.producer, f1.sync_file), 0, "frame 3");
	CHECK(p.timeline.flags & 1, "the meta says UNSCHEDULED_RELEASE until the consumer takes it");
	CHECK_EQ(sb_pw_producer_wait_release(prod, &p.producer, 0), 1,
		 "never acquired: free at once, nobody will signal its release point");
	sbk_fence_signal(&f1);
	sbk_fence_destroy(&f1);
	CHECK_EQ(sb_pw_producer_set_acquire(prod, &p.producer, -1), 0, "frame 4 on it");
	CHECK_EQ(sb_pw_consumer_acquire(cons, &p.consumer, &fd), 0, "the consumer takes frame 4");
	CHECK(!(p.timeline.flags & 1), "and clears the flag: its promise to signal the release");
	if (fd >= 0)
		close(fd);
	CHECK_EQ(sb_pw_producer_wait_release(prod, &p.producer, 0), 0, "so the producer waits for it");
	CHECK_EQ(sb_pw_consumer_release(cons, &p.consumer, -1), 0, "release point 4 (3 was skipped)");
	CHECK_EQ(sb_pw_producer_wait_release(prod, &p.producer, 1000000000LL), 1, "released");

	/* ---- a producer that breaks the contract (its meta, as the consumer gets it) ---- */
	p.timeline.acquire_point = 4; /* the frame just released, again */
	p.timeline.release_point = 5;
	CHECK_EQ(sb_pw_consumer_acquire(cons, &p.consumer, &fd), -EPROTO,
		 "an acquire point not after the last frame read: refused");
	CHECK(fd == -1, "and no sync_file");
	p.timeline.acquire_point = 5;
	p.timeline.release_point = 3; /* the release timeline is at 4 */
	CHECK_EQ(sb_pw_consumer_release(cons, &p.consumer, -1), -EPROTO,
		 "a release point behind its timeline's value: refused");
	CHECK_EQ(sb_pw_producer_wait_release(prod, &p.producer, 0), 1,
		 "the producer's view is unchanged (point 4 released)");
	p.timeline.acquire_point = p.timeline.release_point = 4;

	/* ---- bad inputs ---- */
	int pipefd[2];
	REQUIRE(pipe2(pipefd, O_CLOEXEC) == 0, "pipe");
	CHECK_EQ(sb_pw_producer_set_acquire(prod, &p.producer, pipefd[0]), -EINVAL,
		 "a fence fd that is not a sync_file");
	CHECK(sbk_fd_is_open(pipefd[0]), "and it stays open (the caller's)");
	CHECK_EQ(sb_pw_consumer_release(cons, &p.consumer, pipefd[0]), -EINVAL,
		 "a read fence that is not a sync_file");
	struct pair bad;
	pair_init(&bad, vgem, true);
	bad.cdatas[0] = bad.pdatas[0];
	bad.cdatas[0].fd = -1;
	bad.cdatas[1] = (struct spa_data){ .type = SPA_DATA_SyncObj, .fd = pipefd[0] };
	bad.cdatas[2] = (struct spa_data){ .type = SPA_DATA_SyncObj, .fd = pipefd[1] };
	CHECK_EQ(sb_pw_buffer_add(cons, &bad.consumer, false), -EINVAL, "SyncObj planes that are pipes");
	bad.cdatas[1].type = SPA_DATA_MemFd;
	CHECK_EQ(sb_pw_buffer_add(cons, &bad.consumer, false), -EINVAL, "the meta without SyncObj planes");
	bad.consumer.n_datas = 1;
	CHECK_EQ(sb_pw_buffer_add(cons, &bad.consumer, false), -EINVAL, "the meta with one plane");
	bad.cdatas[1].fd = bad.cdatas[2].fd = -1; /* the pipe is closed below */
	pair_finish(&bad);
	close(pipefd[0]);
	close(pipefd[1]);
	CHECK_EQ(sb_pw_producer_set_acquire(prod, &bad.producer, -1), -ENOENT, "an unknown buffer");
	CHECK_EQ(sb_pw_consumer_acquire(cons, &bad.consumer, &fd), -ENOENT, "an unknown buffer");
	CHECK(fd == -1, "*out_fd -1 on failure");
	CHECK_EQ(sb_pw_buffer_add(NULL, &p.producer, true), -EINVAL, "NULL sync");
	sb_pw_buffer_remove(prod, &bad.producer); /* unknown: a no-op */
	sb_pw_sync_destroy(NULL);

	/* ---- the fallback ---- */
	pair_init(&plain, vgem, false);
	CHECK_EQ(sb_pw_buffer_add(prod, &plain.producer, true), 0, "a buffer without the meta: fallback");
	REQUIRE(sbk_fence_create(vgem, true, &f1) == 0, "vgem fence");
	CHECK_EQ(sb_pw_producer_set_acquire(prod, &plain.producer, f1.sync_file), 0,
		 "fallback: the fence goes onto the dma-buf");
	CHECK_EQ(tb_dmabuf_poll_raw(plain.image.fd) & POLLIN, 0,
		 "the dma-buf is busy for readers while the write is pending");
	sbk_fence_signal(&f1);
	CHECK(tb_dmabuf_poll_raw(plain.image.fd) & POLLIN, "and idle once it signalled");
	sbk_fence_destroy(&f1);
	sb_pw_buffer_remove(prod, &plain.producer);
	pair_finish(&plain);

	/* ---- SYNCBRIDGE_DISABLE ---- */
	struct sb_pw_sync *off;
	setenv("SYNCBRIDGE_DISABLE", "1", 1);
	REQUIRE(sb_pw_sync_create(drm, &off) == 0, "create (disabled)");
	unsetenv("SYNCBRIDGE_DISABLE");
	CHECK_EQ(sb_pw_sync_build_params(off, &b, params, 3, 4, 1, SIZE, 64, 1 << SPA_DATA_DmaBuf), 1,
		 "disabled: the fallback Buffers only");
	sb_pw_sync_destroy(off);

	/* ---- teardown: every fd back ---- */
	sb_pw_buffer_remove(cons, &p.consumer);
	sb_pw_sync_destroy(cons);
	sb_pw_sync_destroy(prod); /* closes the producer's plane fds */
	pair_finish(&p);
	tb_fd_snapshot_check(&fds0, NULL, 0, "after everything is destroyed");
	tb_fd_snapshot_free(&fds0);
	close(drm);
	close(vgem);
	return tb_finish();
}
