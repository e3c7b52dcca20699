/* SPDX-License-Identifier: MIT */
/*
 * The example compositor's wl_compositor, wl_surface and wl_region: how a
 * libwayland-server compositor embeds the syncbridge compositor helper.
 *
 * The one place that matters is surface_commit(): the compositor snapshots
 * its pending state, asks sb_wl_server_surface_commit() whether it may apply
 * it now, and otherwise gets it back through commit_ready() once the acquire
 * fence or point has signalled. apply() then takes the buffer's content (the
 * renderer's copy) and hands the commit back with
 * sb_wl_commit_release(commit, render_fence): the client may reuse its
 * buffer once the copy is done. Frame callbacks and presentation feedback
 * wait for the next repaint (wlc_compositor.c). What the tests watch and
 * drive of this path (the wlc_test_*() calls) is wlc_test.c.
 * docs/wayland.md ("Adding explicit sync to a compositor") walks this file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include <syncbridge/sync_file.h>

#include "clock.h"
#include "wlc_internal.h"
#include "wlc_test.h"

/* ---- double-buffered state ------------------------------------------------------ */

static void
state_buffer_destroyed(struct wl_listener *l, void *data)
{
	struct wlc_state *s = wl_container_of(l, s, buffer_destroy);

	s->buffer = NULL;
	wl_list_remove(&s->buffer_destroy.link);
	wl_list_init(&s->buffer_destroy.link);
}

static void
state_init(struct wlc_state *s)
{
	memset(s, 0, sizeof(*s));
	s->witness_fd = -1;
	wl_list_init(&s->frames);
	wl_list_init(&s->feedbacks);
	wl_list_init(&s->buffer_destroy.link);
	s->buffer_destroy.notify = state_buffer_destroyed;
}

static void
state_set_buffer(struct wlc_state *s, struct wl_resource *buffer)
{
	wl_list_remove(&s->buffer_destroy.link);
	wl_list_init(&s->buffer_destroy.link);
	dmabuf_buffer_unref(s->dmabuf);
	s->dmabuf = NULL;
	if (!s->shm_pixels_borrowed)
		free(s->shm_pixels);
	s->shm_pixels = NULL;
	s->shm_pixels_borrowed = false;
	s->buffer = buffer;
	s->shm = false;
	if (!buffer)
		return;
	wl_resource_add_destroy_listener(buffer, &s->buffer_destroy);
	s->dmabuf = dmabuf_buffer_from_resource(buffer);
	if (s->dmabuf)
		s->dmabuf->refs++;
}

static void
state_finish(struct wlc_state *s)
{
	struct wl_resource *res, *tmp;

	state_set_buffer(s, NULL);
	if (s->witness_fd >= 0)
		close(s->witness_fd);
	s->witness_fd = -1;
	wl_resource_for_each_safe(res, tmp, &s->frames)
		wl_resource_destroy(res);
	wlc_presentation_discarded(&s->feedbacks);
}

static void
state_free(struct wlc_state *s)
{
	state_finish(s);
	free(s);
}

/* The shm buffer's geometry and first word (its pool may go before apply). */
static void
state_read_shm(struct wlc_state *s, struct wl_shm_buffer *shm)
{
	uint32_t stride = (uint32_t)wl_shm_buffer_get_stride(shm);
	uint32_t height = (uint32_t)wl_shm_buffer_get_height(shm);

	s->shm = true;
	s->shm_width = (uint32_t)wl_shm_buffer_get_width(shm);
	s->shm_height = height;
	s->shm_stride = stride;
	s->shm_format = wl_shm_buffer_get_format(shm);
	wl_shm_buffer_begin_access(shm);
	s->shm_content = 0xdeadbeef;
	if (stride >= 4 && height > 0)
		s->shm_content = *(const uint32_t *)wl_shm_buffer_get_data(shm);
	wl_shm_buffer_end_access(shm);
}

/* The state's shm buffer when it has pixels a renderer can take, else NULL. */
static struct wl_shm_buffer *
state_shm_buffer(const struct wlc_state *s)
{
	if (!s->shm || !s->buffer || s->shm_stride < 4 || s->shm_height == 0)
		return NULL;
	return wl_shm_buffer_get(s->buffer);
}

/* A held commit's shm pixels, copied now: its pool may be gone when it is applied. */
static void
state_copy_shm(struct wlc_state *s)
{
	struct wl_shm_buffer *shm = state_shm_buffer(s);
	size_t size = (size_t)s->shm_stride * s->shm_height;

	if (!shm)
		return;
	s->shm_pixels = malloc(size);
	if (!s->shm_pixels)
		return; /* the renderer has nothing to take: the surface keeps its content */
	wl_shm_buffer_begin_access(shm);
	memcpy(s->shm_pixels, wl_shm_buffer_get_data(shm), size);
	wl_shm_buffer_end_access(shm);
}

/* Move pending into a new heap snapshot; pending starts over. */
static struct wlc_state *
state_snapshot(struct wlc_state *pending)
{
	struct wlc_state *s = malloc(sizeof(*s));

	if (!s)
		return NULL;
	state_init(s);
	s->attached = pending->attached;
	if (pending->attached) {
		state_set_buffer(s, pending->buffer);
		struct wl_shm_buffer *shm =
			pending->buffer ? wl_shm_buffer_get(pending->buffer) : NULL;
		if (shm)
			state_read_shm(s, shm);
	}
	wl_list_insert_list(&s->frames, &pending->frames);
	wl_list_init(&pending->frames);
	wl_list_insert_list(&s->feedbacks, &pending->feedbacks);
	wl_list_init(&pending->feedbacks);
	pending->attached = false;
	state_set_buffer(pending, NULL);
	return s;
}

/* ---- apply ---------------------------------------------------------------------- */

/*
 * The renderer's copy of the buffer. The helper held the commit until its
 * acquire fence signalled; the renderer still gets the fence, as any
 * compositor that hands the wait to its GPU would (sb_egl_sync_file_wait).
 * Returns the copy's fence (owned) or -1 (done, or nothing copied).
 */
static int
take_content(struct wlc_surface *surf, struct wlc_state *s, struct sb_wl_commit *commit)
{
	struct wlc_renderer *r = surf->comp->renderer;
	int acquire = -1, done = -1, ret;

	if (!r)
		return -1;
	if (commit && sb_wl_commit_export_acquire_fence(commit, &acquire) < 0)
		acquire = -1;
	ret = r->impl->take(r, surf, s, acquire, &done);
	if (acquire >= 0)
		close(acquire);
	if (ret < 0) {
		if (surf->comp->opt.verbose)
			printf("render: surface %u: cannot take its buffer: %s\n",
			       wl_resource_get_id(surf->resource), strerror(-ret));
		return -1;
	}
	return done;
}

/* Frame callbacks and feedback: now, or at the next repaint. */
static void
answer_or_queue(struct wlc_surface *surf, struct wlc_state *s, bool new_content)
{
	struct wlc_comp *comp = surf->comp;

	if (comp->opt.repaint_hz <= 0) {
		int64_t now = now_ns();

		wlc_frames_done(&s->frames, now);
		wlc_presentation_presented(comp->output, &s->feedbacks, now, ++comp->msc);
		return;
	}
	/* content replaced before a repaint showed it: its feedback is discarded */
	if (new_content)
		wlc_presentation_discarded(&surf->feedbacks);
	wl_list_insert_list(surf->feedbacks.prev, &s->feedbacks);
	wl_list_init(&s->feedbacks);
	wl_list_insert_list(surf->frames.prev, &s->frames);
	wl_list_init(&s->frames);
	wl_signal_emit(&comp->needs_repaint, NULL);
}

/* options.hold_current: release the commit shown until now (after its render fence). */
static void
held_release(struct wlc_surface *surf)
{
	if (surf->held && sb_wl_commit_release(surf->held, surf->held_fence) != 0) {
		/* refused: as the header asks */
		sb_sync_file_wait(surf->held_fence, SB_TIMEOUT_INFINITE);
		sb_wl_commit_release(surf->held, -1);
	}
	surf->held = NULL;
	if (surf->held_fence >= 0)
		close(surf->held_fence);
	surf->held_fence = -1;
}

/*
 * Hand the commit back once the compositor no longer reads its buffer:
 * after fence_fd (borrowed; -1: now). The helper turns it into the v1
 * release event or the syncobj release point. false: refused (the kernel
 * would not describe the fence), and released without it once the fence
 * signalled, as the helper's header asks: the renderer's copy fence is
 * waited for here (as held_release() does), a test render fence, which this
 * loop signals, keeps the commit until it fires.
 */
static bool
release(struct sb_wl_commit *commit, int fence_fd, struct wlc_test_fence *gpu)
{
	if (sb_wl_commit_release(commit, fence_fd) == 0)
		return true;
	if (gpu) {
		gpu->late_release = commit;
		return false;
	}
	if (fence_fd >= 0)
		sb_sync_file_wait(fence_fd, SB_TIMEOUT_INFINITE);
	sb_wl_commit_release(commit, -1);
	return false;
}

void
wlc_surface_tell_placed(struct wlc_surface *surf, bool applied)
{
	struct wlc_surface_placed p = { .surface = surf, .applied = applied };

	wl_signal_emit(&surf->comp->surface_placed, &p);
}

/* Apply a committed state: use the buffer, release it, answer frame callbacks. */
static void
apply(struct wlc_surface *surf, struct wlc_state *s, struct sb_wl_commit *commit)
{
	struct wlc_comp *comp = surf->comp;
	int fence_fd = -1, copy_fence = -1;
	struct wlc_test_fence *gpu = NULL;
	bool used = s->attached && (s->dmabuf || s->shm), released;

	if (used) {
		surf->seq++;
		comp->commits++;
		gpu = wlc_test_use(surf, s, commit);
		copy_fence = take_content(surf, s, commit);
		fence_fd = gpu ? gpu->fd : copy_fence;
		/* wl_buffer.release too (explicit-sync v1 says it is still sent). */
		if (s->buffer)
			wl_buffer_send_release(s->buffer);
		/* the size read at commit: the wl_buffer may be gone by now */
		surf->width = s->dmabuf ? s->dmabuf->width : s->shm_width;
		surf->height = s->dmabuf ? s->dmabuf->height : s->shm_height;
	} else if (s->attached) {
		/* a NULL buffer: the surface shows nothing */
		surf->width = surf->height = 0;
	}
	if (comp->opt.hold_current && used) {
		/* This buffer replaces the one shown: that one goes back now. */
		held_release(surf);
		surf->held = commit;
		surf->held_fence = fence_fd >= 0 ? fcntl(fence_fd, F_DUPFD_CLOEXEC, 0) : -1;
		commit = NULL;
	}
	released = release(commit, fence_fd, gpu);
	if (copy_fence >= 0)
		close(copy_fence);

	answer_or_queue(surf, s, used);
	if (surf->role && surf->role->applied)
		surf->role->applied(surf, surf->width > 0);
	wlc_surface_tell_placed(surf, true);
	if (surf->mapped && used)
		wl_signal_emit(&comp->needs_repaint, NULL);
	/* Last: every event of this apply is queued when the test hears of it. */
	if (used && commit && released)
		wlc_test_released(surf, fence_fd);
	state_free(s);
}

/* ---- wl_surface ----------------------------------------------------------------- */

static void
surface_attach(struct wl_client *client, struct wl_resource *resource, struct wl_resource *buffer,
	       int32_t x, int32_t y)
{
	struct wlc_surface *surf = wl_resource_get_user_data(resource);

	surf->pending.attached = true;
	state_set_buffer(&surf->pending, buffer);
}

static void
surface_damage(struct wl_client *client, struct wl_resource *resource, int32_t x, int32_t y,
	       int32_t w, int32_t h)
{
}

static void
surface_frame(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct wlc_surface *surf = wl_resource_get_user_data(resource);

	/* last: done in the order asked for */
	wlc_resource_new_linked(client, &wl_callback_interface, 1, id, NULL, NULL,
				surf->pending.frames.prev);
}

static void
surface_set_region(struct wl_client *client, struct wl_resource *resource,
		   struct wl_resource *region)
{
}

/*
 * Apply a commit in its own request: the renderer reads shm pixels straight
 * from the client's pool (the buffer is alive: no request ran since the
 * commit), as it would from the copy of a held commit.
 */
static void
apply_now(struct wlc_surface *surf, struct wlc_state *s, struct sb_wl_commit *commit)
{
	struct wl_shm_buffer *shm = surf->comp->renderer ? state_shm_buffer(s) : NULL;

	if (shm) {
		wl_shm_buffer_begin_access(shm);
		s->shm_pixels = wl_shm_buffer_get_data(shm);
		s->shm_pixels_borrowed = true;
	}
	apply(surf, s, commit); /* frees s */
	if (shm)
		wl_shm_buffer_end_access(shm);
}

static void
surface_commit(struct wl_client *client, struct wl_resource *resource)
{
	struct wlc_surface *surf = wl_resource_get_user_data(resource);
	struct wlc_comp *comp = surf->comp;
	struct dmabuf_buffer *dmabuf = dmabuf_buffer_from_resource(surf->pending.buffer);
	struct sb_wl_surface_commit_info info = {
		.buffer_attached = surf->pending.attached,
		.buffer = surf->pending.buffer,
		.dmabuf_fd = dmabuf ? dmabuf->fd : -1,
		/* What buffer_type says already; for a helper from before that field. */
		.buffer_supports_sync = dmabuf != NULL,
		.buffer_type = !surf->pending.buffer ? SB_WL_BUFFER_UNKNOWN :
			       dmabuf ? SB_WL_BUFFER_DMABUF :
			       wl_shm_buffer_get(surf->pending.buffer) ? SB_WL_BUFFER_SHM :
			       SB_WL_BUFFER_OTHER,
	};
	struct sb_wl_commit *commit;
	struct wlc_state *snap;
	int ret;

	/* The role's rules first (xdg-shell: no buffer before the first configure). */
	if (surf->role && surf->role->precommit && !surf->role->precommit(surf, &surf->pending))
		return;
	snap = state_snapshot(&surf->pending);
	if (!snap) {
		wl_client_post_no_memory(client);
		return;
	}
	wlc_test_commit(comp, &info, snap);
	if (!comp->helper) { /* dropped (wlc_comp_drop_helper()): no explicit sync any more */
		apply_now(surf, snap, NULL);
		return;
	}
	ret = sb_wl_server_surface_commit(comp->helper, resource, &info, snap, &commit);
	if (ret < 0) { /* a protocol error was sent: drop the commit */
		state_free(snap);
		return;
	}
	if (ret == SB_WL_COMMIT_DEFERRED) {
		if (comp->renderer)
			state_copy_shm(snap);
		return; /* commit_ready() applies it */
	}

	apply_now(surf, snap, commit);
}

void
wlc_commit_ready(struct sb_wl_commit *commit, void *commit_data, void *data)
{
	struct wl_resource *res = sb_wl_commit_get_surface(commit);

	apply(wl_resource_get_user_data(res), commit_data, commit);
}

void
wlc_commit_discard(void *commit_data, void *data)
{
	state_free(commit_data);
}

static void
surface_noop_int(struct wl_client *client, struct wl_resource *resource, int32_t v)
{
}

static void
surface_offset(struct wl_client *client, struct wl_resource *resource, int32_t x, int32_t y)
{
}

static const struct wl_surface_interface surface_impl = {
	.destroy = wlc_destroy_request,
	.attach = surface_attach,
	.damage = surface_damage,
	.frame = surface_frame,
	.set_opaque_region = surface_set_region,
	.set_input_region = surface_set_region,
	.commit = surface_commit,
	.set_buffer_transform = surface_noop_int,
	.set_buffer_scale = surface_noop_int,
	.damage_buffer = surface_damage,
	.offset = surface_offset,
};

struct wlc_surface *
wlc_surface_from_resource(struct wl_resource *res)
{
	if (!res || !wl_resource_instance_of(res, &wl_surface_interface, &surface_impl))
		return NULL;
	return wl_resource_get_user_data(res);
}

bool
wlc_surface_set_role(struct wlc_surface *surf, const struct wlc_role *role, void *data,
		      struct wl_resource *error_res, uint32_t error_code)
{
	if (surf->role && surf->role != role) {
		wl_resource_post_error(error_res, error_code,
				       "wl_surface@%u already has the role %s",
				       wl_resource_get_id(surf->resource), surf->role->name);
		return false;
	}
	surf->role = role;
	surf->role_data = data;
	return true;
}

void
wlc_surface_map(struct wlc_surface *surf)
{
	if (surf->mapped)
		return;
	surf->mapped = true;
	wl_list_insert(surf->comp->stack.prev, &surf->link);
	wlc_output_surface_shown(surf->comp->output, surf->resource, true);
	wlc_surface_tell_placed(surf, false);
	wl_signal_emit(&surf->comp->needs_repaint, NULL);
}

void
wlc_surface_unmap(struct wlc_surface *surf)
{
	if (!surf->mapped)
		return;
	/* the seat forgets it as a toplevel to focus (and moves the focus on) */
	wl_signal_emit(&surf->unmap_signal, surf);
	surf->mapped = false;
	wl_list_remove(&surf->link);
	wl_list_init(&surf->link);
	wlc_output_surface_shown(surf->comp->output, surf->resource, false);
	wlc_surface_tell_placed(surf, false);
	wl_signal_emit(&surf->comp->needs_repaint, NULL);
}

static void
surface_res_destroy(struct wl_resource *resource)
{
	struct wlc_surface *surf = wl_resource_get_user_data(resource);
	struct wl_resource *res, *tmp;

	/* The helper already discarded this surface's waiting commits. */
	held_release(surf);
	wl_signal_emit(&surf->destroy_signal, surf);
	wlc_surface_unmap(surf);
	wl_list_remove(&surf->all_link);
	if (surf->comp->renderer)
		surf->comp->renderer->impl->surface_destroy(surf->comp->renderer, surf);
	wl_resource_for_each_safe(res, tmp, &surf->frames)
		wl_resource_destroy(res);
	wlc_presentation_discarded(&surf->feedbacks);
	state_finish(&surf->pending);
	free(surf);
}

static void
compositor_create_surface(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct wlc_comp *comp = wl_resource_get_user_data(resource);
	struct wlc_surface *surf = wlc_client_zalloc(client, sizeof(*surf));

	if (!surf)
		return;
	surf->comp = comp;
	surf->held_fence = -1;
	state_init(&surf->pending);
	wl_list_init(&surf->link);
	wl_list_init(&surf->focus_link);
	wl_list_init(&surf->focus_unmap.link);
	wl_list_init(&surf->frames);
	wl_list_init(&surf->feedbacks);
	wl_signal_init(&surf->destroy_signal);
	wl_signal_init(&surf->unmap_signal);
	surf->resource = wlc_resource_new(client, &wl_surface_interface,
					  wl_resource_get_version(resource), id, &surface_impl,
					  surf, surface_res_destroy);
	if (!surf->resource) {
		free(surf);
		return;
	}
	wl_list_insert(&comp->all_surfaces, &surf->all_link);
}

/* ---- wl_region (kept by nobody: input and opaque regions are not used) --------- */

static void
region_add(struct wl_client *client, struct wl_resource *resource, int32_t x, int32_t y, int32_t w,
	   int32_t h)
{
}

static const struct wl_region_interface region_impl = {
	.destroy = wlc_destroy_request,
	.add = region_add,
	.subtract = region_add,
};

static void
compositor_create_region(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	wlc_resource_new(client, &wl_region_interface, 1, id, &region_impl, NULL, NULL);
}

static const struct wl_compositor_interface compositor_impl = {
	.create_surface = compositor_create_surface,
	.create_region = compositor_create_region,
};

void
wlc_compositor_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	wlc_resource_new(client, &wl_compositor_interface, (int)version, id, &compositor_impl, data,
			 NULL);
}
