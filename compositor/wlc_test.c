/* SPDX-License-Identifier: MIT */
/*
 * The example compositor's test interface (wlc_test.h): the hooks the tests
 * watch the commit path through, -v's lines, and the stand-ins they drive it
 * with (the vgem "GPU", the naive compositor's blocking wait, the buffer
 * kind). Nothing here decides how a commit is applied or released.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wayland-server-core.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>

#include "wl_gpu.h"
#include "wlc_internal.h"
#include "wlc_test.h"

/* ---- render fences (the tests' vgem "GPU") -------------------------------------- */

struct render_fence {
	struct wlc_test_fence pub;
	struct wl_list link; /* comp->render_fences */
	struct wlc_comp *comp;
	struct sbk_fence fence;
	struct wl_event_source *timer;
};

static int
render_fence_fire(void *data)
{
	struct render_fence *rf = data;
	struct wlc_comp *comp = rf->comp;

	wlgpu_fence_signal(&rf->fence, NULL);
	if (comp->opt.hooks && comp->opt.hooks->render_done)
		comp->opt.hooks->render_done(comp->opt.hook_data, now_ns());
	if (rf->pub.late_release)
		sb_wl_commit_release(rf->pub.late_release, -1);
	wl_event_source_remove(rf->timer);
	wl_list_remove(&rf->link);
	sbk_fence_destroy(&rf->fence);
	free(rf);
	return 0;
}

void
wlc_test_fences_fire_all(struct wlc_comp *comp)
{
	struct render_fence *rf, *tmp;

	wl_list_for_each_safe(rf, tmp, &comp->render_fences, link)
		render_fence_fire(rf);
}

/* A "GPU" fence for this render, signalled render_delay_ms later; NULL: none. */
static struct render_fence *
render_fence_create(struct wlc_comp *comp)
{
	int delay_ms = comp->opt.render_delay_ms > 0 ? comp->opt.render_delay_ms : 1;
	struct render_fence *rf;

	if (comp->opt.vgem_fd < 0)
		return NULL;
	rf = calloc(1, sizeof(*rf));
	if (!rf)
		return NULL;
	rf->comp = comp;
	if (sbk_fence_create(comp->opt.vgem_fd, true, &rf->fence) < 0)
		goto err_free;
	rf->timer = wl_event_loop_add_timer(comp->loop, render_fence_fire, rf);
	if (!rf->timer)
		goto err_fence;
	wl_event_source_timer_update(rf->timer, delay_ms);
	rf->pub.fd = rf->fence.sync_file;
	wl_list_insert(&comp->render_fences, &rf->link);
	return rf;

err_fence:
	wlgpu_fence_signal(&rf->fence, NULL);
	sbk_fence_destroy(&rf->fence);
err_free:
	free(rf);
	return NULL;
}

/* ---- what -v prints of a use ------------------------------------------------------ */

/* A sync_file's state, for -v; closes fd. */
static const char *
fence_state(int fd)
{
	int status = 0;

	if (sb_sync_file_get_status(fd, &status) < 0)
		status = -1;
	close(fd);
	return status == 0 ? "pending" : status == 1 ? "signalled" : "error";
}

/*
 * The acquire fence's state at use, for -v: an outside witness (a stock
 * client's fences are not ours to time) that nothing is used before it.
 * Under implicit sync the helper hands out no fence once it waited for its
 * snapshot (it keeps it for the status only), nor without one (--no-wait,
 * --no-implicit-wait): the compositor's own snapshot of the dma-buf's write
 * fences at commit (s->witness_fd, *implicit = true) stands in, the fences
 * implicit sync makes a reader wait for. Not the buffer's fences at use:
 * virtio_gpu fences every buffer a submission names as written, so a
 * client's later frames can put fences on a buffer it is not writing.
 */
static const char *
acquire_state(struct sb_wl_commit *commit, enum sb_wl_sync_protocol protocol,
	      const struct wlc_state *s, bool *implicit)
{
	int fd = -1;

	*implicit = false;
	if (commit && sb_wl_commit_export_acquire_fence(commit, &fd) == 0 && fd >= 0)
		return fence_state(fd);
	if (protocol != SB_WL_SYNC_IMPLICIT || s->witness_fd < 0)
		return "none";
	fd = fcntl(s->witness_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return "error";
	*implicit = true;
	return fence_state(fd);
}

static void
print_use(const struct wlc_used *u, const struct wlc_state *s, struct sb_wl_commit *commit)
{
	bool implicit;
	const char *state = acquire_state(commit, u->protocol, s, &implicit);

	printf("used client=%p surface=%u seq=%" PRIu64 " content=0x%08x acquire=%s%s sync=%d\n",
	       (void *)u->client, u->surface_id, u->seq, u->content, state,
	       implicit ? " of=commit-snapshot" : "", u->protocol);
}

/* ---- the hook points --------------------------------------------------------------- */

void
wlc_test_commit(struct wlc_comp *comp, struct sb_wl_surface_commit_info *info,
		struct wlc_state *snap)
{
	const struct wlc_comp_hooks *hooks = comp->opt.hooks;

	if (info->buffer && hooks && hooks->buffer_type)
		info->buffer_type = hooks->buffer_type(comp->opt.hook_data, info->buffer,
						       info->buffer_type);
	/* -v's witness under implicit sync (acquire_state()); none on failure. */
	if (comp->opt.verbose && snap->dmabuf &&
	    sb_dmabuf_export_sync_file(snap->dmabuf->fd, SB_ACCESS_READ, &snap->witness_fd) < 0)
		snap->witness_fd = -1;
}

/* The naive compositor (a control): wait here, stalling every client. */
static void
blocking_wait(struct wlc_comp *comp, struct sb_wl_commit *commit)
{
	int fd = -1;

	if (comp->opt.blocking_wait_ms <= 0 || !commit)
		return;
	if (sb_wl_commit_export_acquire_fence(commit, &fd) == 0 && fd >= 0) {
		sb_sync_file_wait(fd, (int64_t)comp->opt.blocking_wait_ms * 1000000);
		close(fd);
	}
}

/* The buffer's first word, read now (what the tests check against the client's). */
static uint32_t
content_of(const struct wlc_state *s)
{
	const struct dmabuf_buffer *b = s->dmabuf;

	if (!b)
		return s->shm_content;
	if (!b->map)
		return 0xdeadbeef;
	return *(const volatile uint32_t *)((const char *)b->map + b->offset);
}

struct wlc_test_fence *
wlc_test_use(struct wlc_surface *surf, const struct wlc_state *s, struct sb_wl_commit *commit)
{
	struct wlc_comp *comp = surf->comp;
	struct render_fence *rf;
	struct wlc_used u;

	blocking_wait(comp, commit);
	memset(&u, 0, sizeof(u));
	u.client = wl_resource_get_client(surf->resource);
	u.surface_id = wl_resource_get_id(surf->resource);
	u.seq = surf->seq;
	u.dmabuf = s->dmabuf != NULL;
	u.content = content_of(s);
	u.time_ns = now_ns();
	u.protocol = sb_wl_commit_get_protocol(commit);
	if (commit)
		sb_wl_commit_get_acquire_status(commit, &u.acquire_status);
	sb_wl_server_get_stats(comp->helper, &u.stats);
	if (comp->opt.verbose)
		print_use(&u, s, commit);
	if (comp->opt.hooks && comp->opt.hooks->buffer_used)
		comp->opt.hooks->buffer_used(comp->opt.hook_data, &u);
	rf = render_fence_create(comp);
	return rf ? &rf->pub : NULL;
}

void
wlc_test_released(struct wlc_surface *surf, int render_fence_fd)
{
	struct wlc_comp *comp = surf->comp;
	struct wlc_released r = {
		.client = wl_resource_get_client(surf->resource),
		.surface_id = wl_resource_get_id(surf->resource),
		.seq = surf->seq,
		.render_fence_fd = render_fence_fd,
	};

	if (comp->opt.hooks && comp->opt.hooks->released)
		comp->opt.hooks->released(comp->opt.hook_data, &r);
}
