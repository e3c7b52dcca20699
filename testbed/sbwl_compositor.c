/* SPDX-License-Identifier: MIT */
/*
 * The example compositor (sbwl_compositor.h): how a libwayland-server
 * compositor embeds the syncbridge compositor helper.
 *
 * The one place that matters is surface_commit(): the compositor snapshots
 * its pending state, asks sb_wl_server_surface_commit() whether it may apply
 * it now, and otherwise gets it back through commit_ready() once the acquire
 * fence or point has signalled. After "rendering" (a CPU read here) it hands
 * each commit back with sb_wl_commit_release(commit, render_fence).
 */
#include "sbwl_compositor.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <drm.h>
#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include <syncbridge/sync_file.h>

#include "linux-dmabuf-v1-server-protocol.h"
#include "sbwl_gpu.h"
#include "sbwl_internal.h"

#define COMPOSITOR_VERSION 5
#define DMABUF_VERSION 3 /* sbwl_dmabuf.c */

struct sbwl_comp {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct sb_wl_server *helper;
	struct sbwl_comp_options opt;
	const char *socket;
	struct wl_global *compositor_global;
	struct wl_global *dmabuf_global;
	struct wl_list render_fences; /* render_fence.link */
};

/* ---- surfaces ------------------------------------------------------------------ */

/* Double-buffered state: what a commit carries. */
struct state {
	bool attached;
	struct wl_resource *buffer; /* the wl_buffer, NULL once destroyed */
	struct wl_listener buffer_destroy;
	struct dmabuf_buffer *dmabuf; /* a reference, for dmabuf buffers */
	uint32_t shm_content;         /* read at commit for shm (its pool may go) */
	bool shm;
	struct wl_list frames;        /* wl_callback resource links */
};

struct surface {
	struct sbwl_comp *comp;
	struct wl_resource *resource;
	struct state pending;
	uint64_t seq;
};

static void
state_buffer_destroyed(struct wl_listener *l, void *data)
{
	struct state *s = wl_container_of(l, s, buffer_destroy);

	s->buffer = NULL;
	wl_list_remove(&s->buffer_destroy.link);
	wl_list_init(&s->buffer_destroy.link);
}

static void
state_init(struct state *s)
{
	memset(s, 0, sizeof(*s));
	wl_list_init(&s->frames);
	wl_list_init(&s->buffer_destroy.link);
	s->buffer_destroy.notify = state_buffer_destroyed;
}

static void
state_set_buffer(struct state *s, struct wl_resource *buffer)
{
	wl_list_remove(&s->buffer_destroy.link);
	wl_list_init(&s->buffer_destroy.link);
	dmabuf_buffer_unref(s->dmabuf);
	s->dmabuf = NULL;
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
state_finish(struct state *s)
{
	struct wl_resource *cb, *tmp;

	state_set_buffer(s, NULL);
	wl_resource_for_each_safe(cb, tmp, &s->frames)
		wl_resource_destroy(cb);
}

/* Move pending into a new heap snapshot; pending starts over. */
static struct state *
state_snapshot(struct state *pending)
{
	struct state *s = malloc(sizeof(*s));

	if (!s)
		return NULL;
	state_init(s);
	s->attached = pending->attached;
	if (pending->attached) {
		state_set_buffer(s, pending->buffer);
		struct wl_shm_buffer *shm = pending->buffer ? wl_shm_buffer_get(pending->buffer) : NULL;
		if (shm) {
			s->shm = true;
			wl_shm_buffer_begin_access(shm);
			s->shm_content = wl_shm_buffer_get_stride(shm) >= 4 ?
					 *(const uint32_t *)wl_shm_buffer_get_data(shm) : 0xdeadbeef;
			wl_shm_buffer_end_access(shm);
		}
	}
	wl_list_insert_list(&s->frames, &pending->frames);
	wl_list_init(&pending->frames);
	pending->attached = false;
	state_set_buffer(pending, NULL);
	return s;
}

struct render_fence {
	struct wl_list link;
	struct sbwl_comp *comp;
	struct sbwl_fence fence;
	struct wl_event_source *timer;
	/* A commit sb_wl_commit_release() refused with this fence: released
	 * with -1 once the fence has signalled (what the header asks). */
	struct sb_wl_commit *late_release;
};

static int
render_fence_fire(void *data)
{
	struct render_fence *rf = data;
	struct sbwl_comp *comp = rf->comp;

	sbwl_fence_signal(&rf->fence);
	if (comp->opt.hooks && comp->opt.hooks->render_done)
		comp->opt.hooks->render_done(comp->opt.hook_data, sbwl_now_ns());
	if (rf->late_release)
		sb_wl_commit_release(rf->late_release, -1);
	wl_event_source_remove(rf->timer);
	wl_list_remove(&rf->link);
	sbwl_fence_destroy(&rf->fence);
	free(rf);
	return 0;
}

/* A "GPU" fence for this render, signalled render_delay_ms later; NULL: none. */
static struct render_fence *
render_fence_create(struct sbwl_comp *comp)
{
	struct render_fence *rf;

	if (comp->opt.vgem_fd < 0)
		return NULL;
	rf = calloc(1, sizeof(*rf));
	if (!rf)
		return NULL;
	rf->comp = comp;
	if (sbwl_fence_create(comp->opt.vgem_fd, &rf->fence) < 0) {
		free(rf);
		return NULL;
	}
	rf->timer = wl_event_loop_add_timer(comp->loop, render_fence_fire, rf);
	if (!rf->timer) {
		sbwl_fence_signal(&rf->fence);
		sbwl_fence_destroy(&rf->fence);
		free(rf);
		return NULL;
	}
	wl_event_source_timer_update(rf->timer, comp->opt.render_delay_ms > 0 ? comp->opt.render_delay_ms : 1);
	wl_list_insert(&comp->render_fences, &rf->link);
	return rf;
}

/* Apply a committed state: use the buffer, release it, answer frame callbacks. */
static void
apply(struct surface *surf, struct state *s, struct sb_wl_commit *commit)
{
	struct sbwl_comp *comp = surf->comp;
	struct wl_resource *cb, *tmp;
	uint32_t now_ms = (uint32_t)(sbwl_now_ns() / 1000000);
	int fence_fd = -1;
	struct render_fence *rf = NULL;
	bool used = s->attached && (s->dmabuf || s->shm);

	if (used) {
		struct sbwl_used u;

		memset(&u, 0, sizeof(u));
		u.client = wl_resource_get_client(surf->resource);
		u.surface_id = wl_resource_get_id(surf->resource);
		u.seq = ++surf->seq;
		u.dmabuf = s->dmabuf != NULL;
		if (s->dmabuf)
			u.content = s->dmabuf->map ?
				    *(const volatile uint32_t *)((const char *)s->dmabuf->map + s->dmabuf->offset) :
				    0xdeadbeef;
		else
			u.content = s->shm_content;
		u.time_ns = sbwl_now_ns();
		u.protocol = sb_wl_commit_get_protocol(commit);
		u.acquire_status = 0;
		if (commit)
			sb_wl_commit_get_acquire_status(commit, &u.acquire_status);
		sb_wl_server_get_stats(comp->helper, &u.stats);
		if (comp->opt.verbose)
			printf("used client=%p surface=%u seq=%" PRIu64 " content=0x%08x sync=%d\n",
			       (void *)u.client, u.surface_id, u.seq, u.content, u.protocol);
		if (comp->opt.hooks && comp->opt.hooks->buffer_used)
			comp->opt.hooks->buffer_used(comp->opt.hook_data, &u);

		rf = render_fence_create(comp);
		fence_fd = rf ? rf->fence.sync_file : -1;
		/* wl_buffer.release too (explicit-sync v1 says it is still sent). */
		if (s->buffer)
			wl_buffer_send_release(s->buffer);
	}
	/* Refused (the kernel would not describe our render fence): the commit
	 * is still ours; hand it back without a fence once the fence signalled. */
	bool released = sb_wl_commit_release(commit, fence_fd) == 0;
	if (!released) {
		if (rf)
			rf->late_release = commit;
		else
			sb_wl_commit_release(commit, -1);
	}

	wl_resource_for_each_safe(cb, tmp, &s->frames) {
		wl_callback_send_done(cb, now_ms);
		wl_resource_destroy(cb);
	}
	/* Last: every event of this apply is queued when the hook runs. */
	if (used && commit && released && comp->opt.hooks && comp->opt.hooks->released) {
		struct sbwl_released r = {
			.client = wl_resource_get_client(surf->resource),
			.surface_id = wl_resource_get_id(surf->resource), .seq = surf->seq,
			.render_fence_fd = fence_fd,
		};
		comp->opt.hooks->released(comp->opt.hook_data, &r);
	}
	state_finish(s);
	free(s);
}

static void
surface_attach(struct wl_client *client, struct wl_resource *resource, struct wl_resource *buffer,
	       int32_t x, int32_t y)
{
	struct surface *surf = wl_resource_get_user_data(resource);

	surf->pending.attached = true;
	state_set_buffer(&surf->pending, buffer);
}

static void
surface_damage(struct wl_client *client, struct wl_resource *resource, int32_t x, int32_t y,
	       int32_t w, int32_t h)
{
}

static void
callback_res_destroy(struct wl_resource *resource)
{
	wl_list_remove(wl_resource_get_link(resource));
}

static void
surface_frame(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct surface *surf = wl_resource_get_user_data(resource);
	struct wl_resource *cb = sbwl_resource_new(client, &wl_callback_interface, 1, id, NULL, NULL,
						   callback_res_destroy);

	if (cb)
		wl_list_insert(surf->pending.frames.prev, wl_resource_get_link(cb));
}

static void
surface_set_region(struct wl_client *client, struct wl_resource *resource, struct wl_resource *region)
{
}

static void
surface_commit(struct wl_client *client, struct wl_resource *resource)
{
	struct surface *surf = wl_resource_get_user_data(resource);
	struct sbwl_comp *comp = surf->comp;
	struct sb_wl_surface_commit_info info = {
		.buffer_attached = surf->pending.attached,
		.buffer = surf->pending.buffer,
		.buffer_supports_sync = dmabuf_buffer_from_resource(surf->pending.buffer) != NULL,
		.dmabuf_fd = dmabuf_buffer_from_resource(surf->pending.buffer) ?
			     dmabuf_buffer_from_resource(surf->pending.buffer)->fd : -1,
	};
	struct sb_wl_commit *commit;
	struct state *snap;
	int ret;

	snap = state_snapshot(&surf->pending);
	if (!snap) {
		wl_client_post_no_memory(client);
		return;
	}
	ret = sb_wl_server_surface_commit(comp->helper, resource, &info, snap, &commit);
	if (ret < 0) { /* a protocol error was sent: drop the commit */
		state_finish(snap);
		free(snap);
		return;
	}
	if (ret == SB_WL_COMMIT_DEFERRED)
		return; /* commit_ready() applies it */

	if (comp->opt.blocking_wait_ms > 0 && commit) {
		/* The naive compositor (a control): wait here, stalling every client. */
		int fd = -1;
		if (sb_wl_commit_export_acquire_fence(commit, &fd) == 0 && fd >= 0) {
			sb_sync_file_wait(fd, (int64_t)comp->opt.blocking_wait_ms * 1000000);
			close(fd);
		}
	}
	apply(surf, snap, commit);
}

static void
commit_ready(struct sb_wl_commit *commit, void *commit_data, void *data)
{
	struct wl_resource *res = sb_wl_commit_get_surface(commit);

	apply(wl_resource_get_user_data(res), commit_data, commit);
}

static void
commit_discard(void *commit_data, void *data)
{
	struct state *s = commit_data;

	state_finish(s);
	free(s);
}

static void
surface_noop_int(struct wl_client *client, struct wl_resource *resource, int32_t v)
{
}

static void
surface_offset(struct wl_client *client, struct wl_resource *resource, int32_t x, int32_t y)
{
}

void
sbwl_destroy_request(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

static const struct wl_surface_interface surface_impl = {
	.destroy = sbwl_destroy_request,
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

static void
surface_res_destroy(struct wl_resource *resource)
{
	struct surface *surf = wl_resource_get_user_data(resource);

	/* The helper already discarded this surface's waiting commits. */
	state_finish(&surf->pending);
	free(surf);
}

static void
compositor_create_surface(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	struct sbwl_comp *comp = wl_resource_get_user_data(resource);
	struct surface *surf = calloc(1, sizeof(*surf));

	if (!surf) {
		wl_client_post_no_memory(client);
		return;
	}
	surf->comp = comp;
	state_init(&surf->pending);
	surf->resource = sbwl_resource_new(client, &wl_surface_interface, wl_resource_get_version(resource),
					   id, &surface_impl, surf, surface_res_destroy);
	if (!surf->resource)
		free(surf);
}

static void
region_add(struct wl_client *client, struct wl_resource *resource, int32_t x, int32_t y, int32_t w,
	   int32_t h)
{
}

static const struct wl_region_interface region_impl = {
	.destroy = sbwl_destroy_request,
	.add = region_add,
	.subtract = region_add,
};

static void
compositor_create_region(struct wl_client *client, struct wl_resource *resource, uint32_t id)
{
	sbwl_resource_new(client, &wl_region_interface, 1, id, &region_impl, NULL, NULL);
}

static const struct wl_compositor_interface compositor_impl = {
	.create_surface = compositor_create_surface,
	.create_region = compositor_create_region,
};

static void
compositor_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	sbwl_resource_new(client, &wl_compositor_interface, (int)version, id, &compositor_impl, data, NULL);
}

static const struct sb_wl_server_impl helper_impl = {
	.commit_ready = commit_ready,
	.commit_discard = commit_discard,
};

/* ---- life cycle ---------------------------------------------------------------- */

struct sbwl_comp *
sbwl_comp_create(const struct sbwl_comp_options *options, int *err)
{
	struct sbwl_comp *comp = calloc(1, sizeof(*comp));
	struct sb_wl_server_options hopt;
	int ret = -ENOMEM;

	if (!comp)
		goto fail;
	comp->opt = *options;
	wl_list_init(&comp->render_fences);
	comp->display = wl_display_create();
	if (!comp->display)
		goto fail;
	comp->loop = wl_display_get_event_loop(comp->display);
	if (options->socket) {
		if (wl_display_add_socket(comp->display, options->socket) < 0) {
			ret = -errno ? -errno : -EADDRINUSE;
			goto fail;
		}
		comp->socket = options->socket;
	} else {
		comp->socket = wl_display_add_socket_auto(comp->display);
		if (!comp->socket) {
			ret = -EADDRINUSE;
			goto fail;
		}
	}
	if (wl_display_init_shm(comp->display) < 0)
		goto fail;
	comp->compositor_global = wl_global_create(comp->display, &wl_compositor_interface,
						   COMPOSITOR_VERSION, comp, compositor_bind);
	comp->dmabuf_global = wl_global_create(comp->display, &zwp_linux_dmabuf_v1_interface,
					       DMABUF_VERSION, comp, sbwl_dmabuf_bind);
	if (!comp->compositor_global || !comp->dmabuf_global)
		goto fail;

	memset(&hopt, 0, sizeof(hopt));
	hopt.drm_fd = options->drm_fd;
	hopt.flags = options->helper_flags;
	if (options->blocking_wait_ms > 0)
		hopt.flags |= SB_WL_SERVER_NO_WAIT;
	hopt.max_pending_commits = options->max_pending;
	hopt.max_client_pending_commits = options->max_client_pending;
	hopt.impl = &helper_impl;
	hopt.data = comp;
	ret = sb_wl_server_create(comp->display, &hopt, &comp->helper);
	if (ret)
		goto fail;
	return comp;

fail:
	if (err)
		*err = ret;
	sbwl_comp_destroy(comp);
	return NULL;
}

const char *
sbwl_comp_get_socket(const struct sbwl_comp *comp)
{
	return comp->socket;
}

struct wl_display *
sbwl_comp_get_display(const struct sbwl_comp *comp)
{
	return comp->display;
}

struct sb_wl_server *
sbwl_comp_get_helper(const struct sbwl_comp *comp)
{
	return comp->helper;
}

void
sbwl_comp_run(struct sbwl_comp *comp)
{
	wl_display_run(comp->display);
}

void
sbwl_comp_terminate(struct sbwl_comp *comp)
{
	wl_display_terminate(comp->display);
}

void
sbwl_comp_destroy(struct sbwl_comp *comp)
{
	struct render_fence *rf, *tmp;

	if (!comp)
		return;
	if (comp->display) {
		wl_display_destroy_clients(comp->display);
		wl_list_for_each_safe(rf, tmp, &comp->render_fences, link)
			render_fence_fire(rf);
		wl_display_destroy(comp->display); /* destroys the helper too */
	}
	free(comp);
}

int
sbwl_open_syncobj_drm(void)
{
	return sbwl_drm_open_syncobj();
}

int
sbwl_open_vgem(void)
{
	return sbwl_drm_open("vgem", false);
}
