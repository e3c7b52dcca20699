/* SPDX-License-Identifier: MIT */
/*
 * The example compositor on a thread of the test (wlt.h, "the example
 * compositor on a thread"): its hooks recorded under a lock, the gate that
 * holds its thread, calls run on it, and samples of what it holds.
 */
#include "wlt.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <wayland-server-core.h>

#include "wlt_internal.h"

static long
rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kib = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void
rec_used(void *data, const struct wlc_used *u)
{
	struct wlt_comp *w = data;

	pthread_mutex_lock(&w->lock);
	if (w->n_used < WLT_MAX_EVENTS)
		w->used[w->n_used++] = *u;
	w->total_used++;
	if (w->on_used)
		w->on_used(w->on_used_data, u);
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Under w->lock: close the gate; the compositor thread stops at it on its next
 * loop iteration (the pipe wakes it). */
static void
gate_close_locked(struct wlt_comp *w)
{
	w->gate_closed = true;
	if (write(w->gate_pipe[1], "g", 1) != 1)
		w->gate_closed = false; /* nothing would ever stop at it */
}

/* Under w->lock, on the compositor thread: sit at the closed gate until it opens. */
static void
gate_hold_locked(struct wlt_comp *w)
{
	w->gate_inside = true;
	pthread_cond_broadcast(&w->cond);
	while (w->gate_closed)
		pthread_cond_wait(&w->cond, &w->lock);
	w->gate_inside = false;
	pthread_cond_broadcast(&w->cond);
}

static void
rec_released(void *data, const struct wlc_released *r)
{
	struct wlt_comp *w = data;

	pthread_mutex_lock(&w->lock);
	w->total_released++;
	if (w->keep_first_render_fence && w->first_render_fence < 0 && r->render_fence_fd >= 0)
		w->first_render_fence = fcntl(r->render_fence_fd, F_DUPFD_CLOEXEC, 0);
	if (w->n_released < WLT_MAX_EVENTS) {
		w->released_time[w->n_released] = now_ns();
		w->released[w->n_released++] = *r;
	}
	pthread_cond_broadcast(&w->cond);
	if (w->gate_after_first_release) {
		/*
		 * Hold here, in the hook, not at the gate's fd source: the render
		 * timer was armed by this apply, and libwayland dispatches the
		 * timers of an epoll batch before its other sources, so a thread
		 * reaching its next epoll_wait late (valgrind, a loaded host) would
		 * signal the render fence before stopping at the gate. The release
		 * event goes out first (the hook runs after the helper queued it).
		 */
		w->gate_after_first_release = false;
		w->gate_closed = true;
		pthread_mutex_unlock(&w->lock);
		wl_display_flush_clients(wlc_comp_get_display(w->comp));
		pthread_mutex_lock(&w->lock);
		gate_hold_locked(w);
	}
	pthread_mutex_unlock(&w->lock);
}

static void
rec_render_done(void *data, int64_t t)
{
	struct wlt_comp *w = data;

	pthread_mutex_lock(&w->lock);
	if (w->n_render_done < WLT_MAX_EVENTS)
		w->render_done[w->n_render_done++] = t;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static uint32_t
rec_buffer_type(void *data, struct wl_resource *buffer, uint32_t found)
{
	struct wlt_comp *w = data;
	uint32_t type;

	pthread_mutex_lock(&w->lock);
	type = found == SB_WL_BUFFER_SHM && w->shm_buffer_type ? w->shm_buffer_type : found;
	pthread_mutex_unlock(&w->lock);
	return type;
}

static const struct wlc_comp_hooks recorder = {
	.buffer_used = rec_used,
	.released = rec_released,
	.render_done = rec_render_done,
	.buffer_type = rec_buffer_type,
};

static int
gate_cb(int fd, uint32_t mask, void *data)
{
	struct wlt_comp *w = data;
	char c;

	if (read(fd, &c, 1) != 1)
		return 0;
	pthread_mutex_lock(&w->lock);
	if (c == 'c') {
		void (*fn)(void *) = w->call_fn;
		void *arg = w->call_data;
		pthread_mutex_unlock(&w->lock);
		fn(arg);
		pthread_mutex_lock(&w->lock);
		w->call_fn = NULL;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
		return 0;
	}
	gate_hold_locked(w);
	pthread_mutex_unlock(&w->lock);
	return 0;
}

void
wlt_comp_gate_close(struct wlt_comp *w)
{
	pthread_mutex_lock(&w->lock);
	gate_close_locked(w);
	pthread_mutex_unlock(&w->lock);
	wlt_comp_gate_wait(w);
}

void
wlt_comp_call(struct wlt_comp *w, void (*fn)(void *data), void *data)
{
	pthread_mutex_lock(&w->lock);
	w->call_fn = fn;
	w->call_data = data;
	pthread_mutex_unlock(&w->lock);
	if (write(w->gate_pipe[1], "c", 1) != 1)
		return;
	pthread_mutex_lock(&w->lock);
	while (w->call_fn)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

void
wlt_comp_gate_wait(struct wlt_comp *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->gate_closed && !w->gate_inside)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

void
wlt_comp_gate_open(struct wlt_comp *w)
{
	pthread_mutex_lock(&w->lock);
	w->gate_closed = false;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void *
comp_thread(void *data)
{
	struct wlt_comp *w = data;

	wlc_comp_run(w->comp);
	return NULL;
}

void
wlt_comp_options_init(struct wlc_comp_options *opt, const struct wlt_devices *d, int render_delay_ms)
{
	memset(opt, 0, sizeof(*opt));
	opt->drm_fd = d->comp_drm;
	opt->vgem_fd = render_delay_ms > 0 ? d->vgem_render : -1;
	opt->render_delay_ms = render_delay_ms > 0 ? render_delay_ms : 0;
}

int
wlt_comp_start(struct wlt_comp *w, const struct wlc_comp_options *options)
{
	struct wlc_comp_options opt = *options;
	int ret = 0;

	memset(w, 0, sizeof(*w));
	w->first_render_fence = -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	ret = wlt_make_runtime_dir(w->runtime_dir, sizeof(w->runtime_dir));
	if (ret)
		return ret;
	snprintf(w->socket, sizeof(w->socket), "sbwl-thread");
	opt.socket = w->socket;
	opt.hooks = &recorder;
	opt.hook_data = w;
	w->comp = wlc_comp_create(&opt, &ret);
	if (!w->comp)
		return ret ? ret : -ENOMEM;
	setenv("WAYLAND_DISPLAY", w->socket, 1);
	if (pipe2(w->gate_pipe, O_CLOEXEC) < 0 ||
	    !(w->gate_source = wl_event_loop_add_fd(wl_display_get_event_loop(wlc_comp_get_display(w->comp)),
						    w->gate_pipe[0], WL_EVENT_READABLE, gate_cb, w))) {
		wlc_comp_destroy(w->comp);
		w->comp = NULL;
		return -ENOMEM;
	}
	ret = -pthread_create(&w->thread, NULL, comp_thread, w);
	if (ret) {
		wlc_comp_destroy(w->comp);
		w->comp = NULL;
	}
	return ret;
}

void
wlt_comp_stop(struct wlt_comp *w)
{
	if (!w->comp)
		return;
	wlc_comp_terminate(w->comp);
	pthread_join(w->thread, NULL);
	wl_event_source_remove(w->gate_source); /* it polls a duplicate of the pipe */
	wlc_comp_destroy(w->comp);
	w->comp = NULL;
	close(w->gate_pipe[0]);
	close(w->gate_pipe[1]);
	rmdir(w->runtime_dir);
	if (w->first_render_fence >= 0) /* the thread that made it has ended */
		close(w->first_render_fence);
	w->first_render_fence = -1;
}

int
wlt_comp_n_used(struct wlt_comp *w)
{
	int n;

	pthread_mutex_lock(&w->lock);
	n = w->n_used;
	pthread_mutex_unlock(&w->lock);
	return n;
}

bool
wlt_comp_find_used(struct wlt_comp *w, uint32_t surface_id, uint64_t seq, struct wlc_used *out)
{
	bool found = false;

	pthread_mutex_lock(&w->lock);
	for (int i = 0; i < w->n_used; i++) {
		if (w->used[i].surface_id == surface_id && (seq == 0 || w->used[i].seq == seq)) {
			*out = w->used[i];
			found = true;
			if (seq)
				break;
		}
	}
	pthread_mutex_unlock(&w->lock);
	return found;
}

void
wlt_comp_sample(struct wlt_comp *w, struct wlt_comp_sample *out)
{
	memset(out, 0, sizeof(*out));
	wlt_comp_gate_close(w);
	sb_wl_server_get_stats(wlc_comp_get_helper(w->comp), &out->stats);
	out->fds = wlt_count_fds();
	out->rss_kib = rss_kib();
	out->heap_in_use = mallinfo2().uordblks;
	wlt_comp_gate_open(w);
}

/*
 * Wait until done(w, n) holds, checked under w->lock whenever a hook has
 * recorded something; returns 0, or -ETIME when it still does not hold after
 * timeout_ns.
 */
static int
comp_wait(struct wlt_comp *w, bool (*done)(const struct wlt_comp *w, uint64_t n), uint64_t n,
	  int64_t timeout_ns)
{
	struct timespec ts;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ns / 1000000000;
	ts.tv_nsec += timeout_ns % 1000000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&w->lock);
	while (!done(w, n) && ret == 0)
		ret = pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	ret = done(w, n) ? 0 : -ETIME;
	pthread_mutex_unlock(&w->lock);
	return ret;
}

static bool
total_used_reached(const struct wlt_comp *w, uint64_t n)
{
	return w->total_used >= n;
}

static bool
n_used_reached(const struct wlt_comp *w, uint64_t n)
{
	return (uint64_t)w->n_used >= n;
}

static bool
renders_done(const struct wlt_comp *w, uint64_t n)
{
	return w->n_render_done >= w->n_used;
}

int
wlt_comp_wait_total_used(struct wlt_comp *w, uint64_t n, int64_t timeout_ns)
{
	return comp_wait(w, total_used_reached, n, timeout_ns);
}

int
wlt_comp_wait_used(struct wlt_comp *w, int n, int64_t timeout_ns)
{
	return comp_wait(w, n_used_reached, n > 0 ? (uint64_t)n : 0, timeout_ns);
}

int
wlt_comp_wait_renders(struct wlt_comp *w, int64_t timeout_ns)
{
	return comp_wait(w, renders_done, 0, timeout_ns);
}

static int
timer_noop(void *data)
{
	return 0;
}

static void
add_and_remove_timer(void *data)
{
	struct wl_event_loop *loop = wl_display_get_event_loop(wlc_comp_get_display(data));
	struct wl_event_source *s = wl_event_loop_add_timer(loop, timer_noop, NULL);

	if (s)
		wl_event_source_remove(s);
}

void
wlt_comp_keep_timerfd(struct wlt_comp *w)
{
	wlt_comp_call(w, add_and_remove_timer, w->comp);
}

int
wlt_count_fds_wait(int want, int64_t timeout_ns)
{
	int64_t end = now_ns() + timeout_ns;
	int n;

	while ((n = wlt_count_fds()) != want && now_ns() < end)
		sbk_sleep_ns(10 * WLT_MS);
	return n;
}
