/* SPDX-License-Identifier: MIT */
/*
 * The example compositor (wlc_compositor.h): its life cycle and the repaint
 * clock. A repaint composites the mapped surfaces (the renderer), then
 * answers what waited for it: presentation feedback "presented" with the
 * repaint's time and counter, and frame callbacks. The clock only ticks
 * while something waits for it.
 */
#include "wlc_compositor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <drm_fourcc.h>
#include <syncbridge/sync_file.h>
#include <wayland-server-core.h>
#include <wayland-server-protocol.h>

#include "wl_gpu.h"
#include "wlc_internal.h"
#include "wlc_test.h"

#define COMPOSITOR_VERSION 5

/* ---- the repaint clock ------------------------------------------------------- */

static void
write_screenshot(struct wlc_comp *comp, const char *name)
{
	char path[PATH_MAX];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", comp->opt.screenshot_dir, name);
	ret = wlc_renderer_screenshot(comp->renderer, path);
	if (ret < 0)
		fprintf(stderr, "compositor: screenshot %s: %s\n", path, strerror(-ret));
	else if (comp->opt.verbose)
		printf("screenshot %s\n", path);
}

/*
 * SB_WL_SERVER_WAIT_MATERIALIZED: a repaint may sample buffers whose acquire
 * fences are still pending (the GPU waits for them), so "presented" waits
 * for the repaint's own fence — what a KMS compositor's page flip event
 * would tell it.
 */
struct presentation_wait {
	struct wlc_comp *comp;
	struct wl_list link;      /* comp->presentation_waits */
	struct wl_list feedbacks; /* the repaint's, moved here */
	uint64_t msc;
	int fd;
	struct wl_event_source *source;
};

static void
presentation_wait_free(struct presentation_wait *pw)
{
	wl_event_source_remove(pw->source);
	close(pw->fd);
	wl_list_remove(&pw->link);
	free(pw);
}

static int
presentation_wait_fire(int fd, uint32_t mask, void *data)
{
	struct presentation_wait *pw = data;

	wlc_presentation_presented(pw->comp->output, &pw->feedbacks, now_ns(), pw->msc);
	presentation_wait_free(pw);
	return 0;
}

/* Submit; with a fence, "presented" goes out when it signals. false: send it now. */
static bool
submit_and_wait(struct wlc_comp *comp)
{
	struct presentation_wait *pw;
	struct wlc_surface *surf;
	int fd = -1;

	if (!(comp->opt.helper_flags & SB_WL_SERVER_WAIT_MATERIALIZED) ||
	    !comp->renderer->impl->submit_fence) {
		comp->renderer->impl->submit(comp->renderer);
		return false;
	}
	if (comp->renderer->impl->submit_fence(comp->renderer, &fd) < 0 || fd < 0)
		return false; /* submitted; no fence: the work is done as far as we can tell */
	pw = calloc(1, sizeof(*pw));
	if (!pw)
		goto err_wait;
	pw->comp = comp;
	pw->fd = fd;
	pw->msc = comp->msc;
	wl_list_init(&pw->feedbacks);
	pw->source = wl_event_loop_add_fd(comp->loop, fd, WL_EVENT_READABLE, presentation_wait_fire,
					  pw);
	if (!pw->source)
		goto err_free;
	wl_list_for_each(surf, &comp->stack, link) {
		wl_list_insert_list(pw->feedbacks.prev, &surf->feedbacks);
		wl_list_init(&surf->feedbacks);
	}
	wl_list_insert(comp->presentation_waits.prev, &pw->link);
	return true;

err_free:
	free(pw);
err_wait:
	sb_sync_file_wait(fd, SB_TIMEOUT_INFINITE); /* never "presented" before the work */
	close(fd);
	return false;
}

static int
repaint(void *data)
{
	struct wlc_comp *comp = data;
	struct wlc_surface *surf;
	int64_t now = now_ns();
	bool drawn = false;

	comp->repaint_scheduled = false;
	comp->last_repaint_ns = now;
	comp->msc++;
	if (comp->renderer) {
		int ret = comp->renderer->impl->repaint(comp->renderer, &comp->stack);
		if (ret < 0 && comp->opt.verbose)
			printf("render: repaint failed: %s\n", strerror(-ret));
		drawn = ret == 0 && !wl_list_empty(&comp->stack);
		now = now_ns();
	}
	/*
	 * Every surface's frame callbacks, mapped or not: the repaint happened.
	 * They go out before the repaint is submitted (a command submission on
	 * virgl, ~0.3 ms under TCG): a client may start its next frame while
	 * the output's commands travel.
	 */
	wl_list_for_each(surf, &comp->all_surfaces, all_link) {
		if (!surf->mapped)
			wlc_presentation_discarded(&surf->feedbacks);
		wlc_frames_done(&surf->frames, now);
	}
	bool waiting = false;
	if (comp->renderer && comp->renderer->impl->submit) {
		wl_display_flush_clients(comp->display);
		waiting = submit_and_wait(comp);
		/* "presented": when the output image is on its way, not when we began */
		now = now_ns();
	}
	if (!waiting)
		wl_list_for_each(surf, &comp->stack, link)
			wlc_presentation_presented(comp->output, &surf->feedbacks, now, comp->msc);
	if (drawn && comp->opt.screenshot_dir && comp->opt.screenshot_every &&
	    ++comp->screenshots % comp->opt.screenshot_every == 0) {
		char name[64];

		snprintf(name, sizeof(name), "frame-%06lu.png", comp->screenshots);
		write_screenshot(comp, name);
	}
	return 0;
}

static void
repaint_idle(void *data)
{
	struct wlc_comp *comp = data;

	comp->repaint_idle = NULL;
	repaint(comp);
}

/* comp->needs_repaint: a repaint at the next tick of the clock. */
static void
schedule_repaint(struct wl_listener *l, void *data)
{
	struct wlc_comp *comp = wl_container_of(l, comp, repaint_listener);
	int64_t now, next;

	if (!comp->repaint_timer || comp->repaint_scheduled)
		return;
	/* the next tick of a clock that started at the last repaint */
	now = now_ns();
	next = comp->last_repaint_ns + comp->refresh_ns;
	if (next < now)
		next = now;
	comp->repaint_scheduled = true;
	/*
	 * A clock that has been idle for a period or more: repaint at the end of
	 * this dispatch, not on a timer (a timerfd rounds up to 1 ms and costs
	 * another epoll round). Fence signal -> frame callback, the project's
	 * client in the GPU guest, median of 39: 5.04 ms on the timer, 3.44 ms
	 * this way (docs/performance.md, figure 7).
	 */
	if (next == now) {
		comp->repaint_idle = wl_event_loop_add_idle(comp->loop, repaint_idle, comp);
		if (comp->repaint_idle)
			return;
	}
	wl_event_source_timer_update(comp->repaint_timer,
				     (int)((next - now + 999999) / 1000000) ?: 1);
}

/* ---- life cycle ---------------------------------------------------------------- */

static const struct sb_wl_server_impl helper_impl = {
	.commit_ready = wlc_commit_ready,
	.commit_discard = wlc_commit_discard,
};

static int
renderer_create(struct wlc_comp *comp)
{
	uint32_t w = comp->opt.output_width ? comp->opt.output_width : 640;
	uint32_t h = comp->opt.output_height ? comp->opt.output_height : 480;
	int err = 0;

	switch (comp->opt.renderer) {
	case WLC_RENDER_NONE:
		return 0;
	case WLC_RENDER_GL:
		comp->renderer = wlc_renderer_gl_create(w, h, &err);
		break;
	case WLC_RENDER_AUTO:
		comp->renderer = wlc_renderer_gl_create(w, h, &err);
		if (comp->renderer)
			break;
		fprintf(stderr, "compositor: no GL renderer (%s); drawing on the CPU\n",
			strerror(-err));
		/* fall through */
	case WLC_RENDER_CPU:
		comp->renderer = wlc_renderer_cpu_create(w, h, &err);
		break;
	}
	return comp->renderer ? 0 : err;
}

/* dev_t of the node the compositor imports on: the renderer's, else the syncobj node's. */
static dev_t
main_device(const struct wlc_comp *comp)
{
	struct stat st;

	if (comp->renderer && comp->renderer->main_device)
		return comp->renderer->main_device;
	if (comp->opt.drm_fd >= 0 && fstat(comp->opt.drm_fd, &st) == 0 && S_ISCHR(st.st_mode))
		return st.st_rdev;
	return 0;
}

/* The display and its socket (options.socket, else the first free wayland-N); 0 or -errno. */
static int
display_create(struct wlc_comp *comp)
{
	comp->display = wl_display_create();
	if (!comp->display)
		return -ENOMEM;
	comp->loop = wl_display_get_event_loop(comp->display);
	if (comp->opt.socket) {
		if (wl_display_add_socket(comp->display, comp->opt.socket) < 0)
			return -errno ? -errno : -EADDRINUSE;
		comp->socket = comp->opt.socket;
		return 0;
	}
	comp->socket = wl_display_add_socket_auto(comp->display);
	return comp->socket ? 0 : -EADDRINUSE;
}

/* Every global of ours, the formats the renderer imports offered as dma-bufs; 0 or -ENOMEM. */
static int
globals_create(struct wlc_comp *comp)
{
	static const struct wlc_format cpu_formats[] = {
		{ DRM_FORMAT_ARGB8888, DRM_FORMAT_MOD_LINEAR },
		{ DRM_FORMAT_XRGB8888, DRM_FORMAT_MOD_LINEAR },
	};
	const struct wlc_format *formats = cpu_formats;
	size_t nformats = sizeof(cpu_formats) / sizeof(cpu_formats[0]);

	if (wl_display_init_shm(comp->display) < 0)
		return -ENOMEM;
	comp->compositor_global = wl_global_create(comp->display, &wl_compositor_interface,
						   COMPOSITOR_VERSION, comp, wlc_compositor_bind);
	if (!comp->compositor_global)
		return -ENOMEM;
	if (comp->renderer) {
		formats = comp->renderer->formats;
		nformats = comp->renderer->nformats;
	}
	comp->dmabuf = wlc_dmabuf_create(comp->display, main_device(comp), formats, nformats);
	comp->output = wlc_output_create(comp->display, comp->opt.output_width,
					 comp->opt.output_height, comp->opt.repaint_hz);
	comp->globals = wlc_globals_create(comp);
	comp->seat = wlc_seat_create(comp);
	comp->data_device = wlc_data_device_create(comp);
	comp->shell = wlc_shell_create(comp);
	if (!comp->dmabuf || !comp->output || !comp->globals || !comp->seat || !comp->data_device ||
	    !comp->shell)
		return -ENOMEM;
	return 0;
}

/* The helper, last: it adds both explicit-sync globals. 0 or -errno. */
static int
helper_create(struct wlc_comp *comp)
{
	struct sb_wl_server_options hopt;

	memset(&hopt, 0, sizeof(hopt));
	hopt.drm_fd = comp->opt.drm_fd;
	hopt.flags = comp->opt.helper_flags;
	/* the naive compositor (wlc_test.h) waits itself */
	if (comp->opt.blocking_wait_ms > 0)
		hopt.flags |= SB_WL_SERVER_NO_WAIT;
	hopt.max_pending_commits = comp->opt.max_pending;
	hopt.max_client_pending_commits = comp->opt.max_client_pending;
	hopt.impl = &helper_impl;
	hopt.data = comp;
	return sb_wl_server_create(comp->display, &hopt, &comp->helper);
}

struct wlc_comp *
wlc_comp_create(const struct wlc_comp_options *options, int *err)
{
	struct wlc_comp *comp = calloc(1, sizeof(*comp));
	int ret = -ENOMEM;

	if (!comp)
		goto fail;
	comp->opt = *options;
	wl_list_init(&comp->render_fences);
	wl_list_init(&comp->presentation_waits);
	wl_list_init(&comp->stack);
	wl_list_init(&comp->all_surfaces);
	wl_signal_init(&comp->needs_repaint);
	wl_signal_init(&comp->surface_placed);
	comp->repaint_listener.notify = schedule_repaint;
	wl_signal_add(&comp->needs_repaint, &comp->repaint_listener);
	ret = display_create(comp);
	if (ret == 0)
		ret = renderer_create(comp);
	if (ret < 0)
		goto fail;
	if (options->repaint_hz > 0) {
		comp->refresh_ns = 1000000000LL / options->repaint_hz;
		comp->repaint_timer = wl_event_loop_add_timer(comp->loop, repaint, comp);
		if (!comp->repaint_timer) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	ret = globals_create(comp);
	if (ret == 0)
		ret = helper_create(comp);
	if (ret)
		goto fail;
	return comp;

fail:
	if (err)
		*err = ret;
	wlc_comp_destroy(comp);
	return NULL;
}

const char *
wlc_comp_get_socket(const struct wlc_comp *comp)
{
	return comp->socket;
}

struct wl_display *
wlc_comp_get_display(const struct wlc_comp *comp)
{
	return comp->display;
}

struct sb_wl_server *
wlc_comp_get_helper(const struct wlc_comp *comp)
{
	return comp->helper;
}

void
wlc_comp_drop_helper(struct wlc_comp *comp)
{
	sb_wl_server_destroy(comp->helper);
	comp->helper = NULL;
}

bool
wlc_comp_close_windows(struct wlc_comp *comp)
{
	return wlc_shell_close_all(comp->shell) > 0;
}

uint64_t
wlc_comp_get_commits(const struct wlc_comp *comp)
{
	return comp->commits;
}

uint64_t
wlc_comp_get_repaints(const struct wlc_comp *comp)
{
	return comp->msc;
}

const char *
wlc_comp_get_renderer_name(const struct wlc_comp *comp)
{
	return comp->renderer ? comp->renderer->impl->name : "none";
}

int
wlc_comp_screenshot(struct wlc_comp *comp, const char *path)
{
	if (!comp->renderer)
		return -ENODEV;
	return wlc_renderer_screenshot(comp->renderer, path);
}

void
wlc_comp_run(struct wlc_comp *comp)
{
	wl_display_run(comp->display);
	if (comp->renderer && comp->opt.screenshot_dir)
		write_screenshot(comp, "last.png");
}

void
wlc_comp_terminate(struct wlc_comp *comp)
{
	wl_display_terminate(comp->display);
}

void
wlc_comp_destroy(struct wlc_comp *comp)
{
	if (!comp)
		return;
	if (comp->display) {
		struct presentation_wait *pw, *pw_tmp;

		wl_display_destroy_clients(comp->display); /* their feedback resources too */
		wl_list_for_each_safe(pw, pw_tmp, &comp->presentation_waits, link)
			presentation_wait_free(pw);
		wlc_test_fences_fire_all(comp);
		wlc_shell_destroy(comp->shell);
		wlc_data_device_destroy(comp->data_device);
		wlc_seat_destroy(comp->seat);
		wlc_globals_destroy(comp->globals);
		wlc_output_destroy(comp->output);
		wlc_dmabuf_destroy(comp->dmabuf);
		if (comp->repaint_timer)
			wl_event_source_remove(comp->repaint_timer);
		if (comp->repaint_idle)
			wl_event_source_remove(comp->repaint_idle);
		wl_display_destroy(comp->display); /* destroys the helper too */
	}
	wlc_renderer_destroy(comp->renderer);
	free(comp);
}

int
wlc_open_syncobj_drm(void)
{
	return wlgpu_drm_open_syncobj();
}

int
wlc_open_vgem(void)
{
	return wlgpu_drm_open("vgem", false);
}
