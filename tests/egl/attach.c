/* SPDX-License-Identifier: MIT */
/*
 * egl-attach: GL renders into a vgem dma-buf (an EGLImage on the EGL device
 * platform's software device) and the bridge attaches GL's fence to it
 * (sb_egl_dmabuf_attach WRITE); then the buffer is handed to a consumer
 * thread that does what every implicit-sync consumer does — poll() the
 * dma-buf for reading (sb_dmabuf_wait READ) — and reads it with the CPU: it
 * must see GL's complete frame. No GL call happens between the attach and
 * the consumer's read, so nothing but the bridge can have pushed GL's work out.
 *
 * llvmpipe finishes its work before its native fence exists, so the attached
 * fence is already signalled (the buffer's export then holds a stub): what the
 * bridge contributes here is the flush and the fence that bounds the work.
 * (egl-mock-attach-* shows a pending GL fence on the buffer.)
 *
 *   egl-attach [--fallback] [--control]
 * --fallback: SYNCBRIDGE_EGL_FALLBACK=1 (CPU wait instead of a fence);
 * --control: SYNCBRIDGE_DISABLE=1 — the attach is a no-op and the program
 * asserts that the consumer then reads a frame GL has not rendered yet.
 */
#include <pthread.h>
#include <stdbool.h>

#include <syncbridge/egl.h>
#include <syncbridge/syncbridge.h>

#include "egl_common.h"
#include "fd_snapshot.h"
#include "gate.h"
#include "harness.h"

#define SIZE EGLC_SIZE
#define OLD 0x11
#define NEW 0xee
#define MS INT64_C(1000000)

struct consumer {
	pthread_t thread;
	struct sbk_buf *buf;
	struct tb_gate handed_over;
	int wait_ret;
	long new_bytes, old_bytes;
};

static void *
consumer_main(void *p)
{
	struct consumer *c = p;

	tb_gate_wait(&c->handed_over);
	c->wait_ret = sb_dmabuf_wait(c->buf->fd, SB_ACCESS_READ, 10000 * MS);
	c->new_bytes = eglc_cpu_count(c->buf, NEW);
	c->old_bytes = eglc_cpu_count(c->buf, OLD);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct eglc_switches sw = eglc_switches_apply(argc, argv);
	bool control = sw.control, fallback = sw.fallback;
	struct consumer c;
	struct eglc_app a;
	struct sb_sync_file_info *info = NULL;
	struct tb_fd_snapshot before;
	int ret, fence_fd = -1;

	eglc_app_open(&a);
	eglc_cpu_fill(&a.buf, OLD);
	tb_note("caps 0x%x%s%s", a.caps, fallback ? ", fallback" : "", control ? ", CONTROL" : "");
	REQUIRE(eglt_count(&a.target, OLD, NULL) == SIZE * SIZE, "GL sees the buffer's OLD contents");
	if (!fallback && !control)
		REQUIRE(a.caps & SB_EGL_CAP_NATIVE_FENCE, "the display has native fences");

	/*
	 * The fd baseline, before the consumer thread exists (it is joined before
	 * the check): no thread but this one can open or close an fd in between
	 * (Mesa's disk cache is off, see eglt.h; llvmpipe's threads open none).
	 */
	REQUIRE(!eglt_disk_cache_running(), "no Mesa shader disk-cache thread (it opens fds behind "
		"the fd check: MESA_SHADER_CACHE_DISABLE)");
	REQUIRE(tb_fd_snapshot_take(&before) == 0, "fd snapshot");
	memset(&c, 0, sizeof(c));
	c.buf = &a.buf;
	tb_gate_init(&c.handed_over);
	REQUIRE(pthread_create(&c.thread, NULL, consumer_main, &c) == 0, "pthread_create");

	/* GL renders NEW (issued, not flushed), then the bridge attaches its fence. */
	eglt_fill(&a.target, NEW);
	ret = sb_egl_dmabuf_attach(a.t.dpy, a.buf.fd, SB_ACCESS_WRITE);
	CHECK_EQ(ret, 0, "attach GL's write");

	/* What a reader of the buffer now waits for (a snapshot, for the log). */
	REQUIRE(sb_dmabuf_export_sync_file(a.buf.fd, SB_ACCESS_READ, &fence_fd) == 0, "export");
	if (sb_sync_file_info_create(fence_fd, &info) == 0) {
		tb_note("the buffer's write fences: %u, status %d", info->num_fences, info->status);
		for (uint32_t i = 0; i < info->num_fences; i++)
			tb_note("  fence %u: %s / %s, status %d", i, info->fences[i].driver,
				     info->fences[i].timeline, info->fences[i].status);
		sb_sync_file_info_destroy(info);
	}
	close(fence_fd);

	/* Hand over; no GL call until the consumer is done. */
	tb_gate_open(&c.handed_over);
	pthread_join(c.thread, NULL);
	tb_gate_finish(&c.handed_over);

	CHECK_EQ(c.wait_ret, 0, "the consumer's poll");
	tb_note("the consumer read %ld NEW and %ld OLD bytes of %d", c.new_bytes, c.old_bytes,
		     SIZE * SIZE * 4);
	if (control)
		CHECK(c.new_bytes < SIZE * SIZE * 4,
		      "control: without the attach the consumer reads a frame GL has not rendered");
	else
		CHECK_EQ(c.new_bytes, SIZE * SIZE * 4, "the consumer reads GL's complete frame");
	tb_fd_snapshot_check(&before, NULL, 0, "no fd leaked");
	tb_fd_snapshot_free(&before);
	CHECK_EQ(eglt_count(&a.target, NEW, NULL), SIZE * SIZE, "GL's frame is NEW in the end");

	eglc_app_close(&a);
	return tb_finish();
}
