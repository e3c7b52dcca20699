/* SPDX-License-Identifier: MIT */
#include "wlt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <drm.h>
#include <drm_fourcc.h>
#include <sys/ioctl.h>
#include <wayland-server-core.h>

int64_t
wlt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

int
wlt_count_threads(void)
{
	return count_dir("/proc/self/task");
}

int
wlt_count_fds(void)
{
	return count_dir("/proc/self/fd") - 1; /* opendir's own */
}

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

/* ---- raw client ----------------------------------------------------------------- */

static void
registry_global(void *data, struct wl_registry *registry, uint32_t name, const char *iface,
		uint32_t version)
{
	struct wlt_client *c = data;

	if (strcmp(iface, wl_compositor_interface.name) == 0)
		c->compositor = wl_registry_bind(registry, name, &wl_compositor_interface, 4);
	else if (strcmp(iface, wl_shm_interface.name) == 0)
		c->shm = wl_registry_bind(registry, name, &wl_shm_interface, 1);
	else if (strcmp(iface, zwp_linux_dmabuf_v1_interface.name) == 0)
		c->dmabuf = wl_registry_bind(registry, name, &zwp_linux_dmabuf_v1_interface, 3);
	else if (strcmp(iface, zwp_linux_explicit_synchronization_v1_interface.name) == 0)
		c->explicit_sync = wl_registry_bind(registry, name,
						    &zwp_linux_explicit_synchronization_v1_interface,
						    version < 2 ? version : 2);
	else if (strcmp(iface, wp_linux_drm_syncobj_manager_v1_interface.name) == 0)
		c->syncobj = wl_registry_bind(registry, name, &wp_linux_drm_syncobj_manager_v1_interface, 1);
}

static void
registry_global_remove(void *data, struct wl_registry *registry, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {
	.global = registry_global,
	.global_remove = registry_global_remove,
};

int
wlt_client_connect(struct wlt_client *c, const char *socket)
{
	memset(c, 0, sizeof(*c));
	c->display = wl_display_connect(socket);
	if (!c->display)
		return -errno ? -errno : -ECONNREFUSED;
	c->registry = wl_display_get_registry(c->display);
	wl_registry_add_listener(c->registry, &registry_listener, c);
	if (wl_display_roundtrip(c->display) < 0) {
		wlt_client_disconnect(c);
		return -EPIPE;
	}
	return 0;
}

void
wlt_client_disconnect(struct wlt_client *c)
{
	if (!c->display)
		return;
	/* The globals' proxies (objects a script made are the script's to leak). */
	if (c->syncobj)
		wp_linux_drm_syncobj_manager_v1_destroy(c->syncobj);
	if (c->explicit_sync)
		zwp_linux_explicit_synchronization_v1_destroy(c->explicit_sync);
	if (c->dmabuf)
		zwp_linux_dmabuf_v1_destroy(c->dmabuf);
	if (c->shm)
		wl_shm_destroy(c->shm);
	if (c->compositor)
		wl_compositor_destroy(c->compositor);
	if (c->registry)
		wl_registry_destroy(c->registry);
	wl_display_disconnect(c->display);
	memset(c, 0, sizeof(*c));
}

struct wl_buffer *
wlt_shm_buffer(struct wlt_client *c, uint32_t content)
{
	const int w = 16, h = 16, stride = w * 4, size = stride * h;
	struct wl_shm_pool *pool;
	struct wl_buffer *buf;
	uint32_t *map;
	int fd;

	fd = memfd_create("wlt-shm", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, size) < 0)
		goto err;
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto err;
	map[0] = content;
	munmap(map, size);
	pool = wl_shm_create_pool(c->shm, fd, size);
	buf = wl_shm_pool_create_buffer(pool, 0, w, h, stride, WL_SHM_FORMAT_XRGB8888);
	wl_shm_pool_destroy(pool);
	close(fd);
	return buf;
err:
	if (fd >= 0)
		close(fd);
	return NULL;
}

struct wl_buffer *
wlt_dmabuf_buffer(struct wlt_client *c, int dmabuf_fd, uint32_t width, uint32_t height,
		  uint32_t stride)
{
	struct zwp_linux_buffer_params_v1 *params;
	struct wl_buffer *buf;

	if (!c->dmabuf)
		return NULL;
	params = zwp_linux_dmabuf_v1_create_params(c->dmabuf);
	zwp_linux_buffer_params_v1_add(params, dmabuf_fd, 0, 0, stride,
				       (uint32_t)(DRM_FORMAT_MOD_LINEAR >> 32),
				       (uint32_t)DRM_FORMAT_MOD_LINEAR);
	buf = zwp_linux_buffer_params_v1_create_immed(params, (int32_t)width, (int32_t)height,
						      DRM_FORMAT_XRGB8888, 0);
	zwp_linux_buffer_params_v1_destroy(params);
	return buf;
}

int
wlt_roundtrip_error(struct wlt_client *c, const char **iface, uint32_t *code, uint32_t *id)
{
	const struct wl_interface *intf = NULL;

	*iface = "";
	*code = 0;
	*id = 0;
	if (wl_display_roundtrip(c->display) >= 0)
		return 0;
	int err = wl_display_get_error(c->display);
	if (err == EPROTO) {
		*code = wl_display_get_protocol_error(c->display, &intf, id);
		*iface = intf ? intf->name : "(unknown)";
	} else {
		/* Say how the connection failed instead: a lost protocol error
		 * shows up here as EPIPE or ECONNRESET. */
		static _Thread_local char why[64];
		snprintf(why, sizeof(why), "(no protocol error: %s)", strerrorname_np(err) ? strerrorname_np(err) : "?");
		*iface = why;
	}
	return -1;
}

static void
frame_done(void *data, struct wl_callback *cb, uint32_t t)
{
	*(bool *)data = true;
	wl_callback_destroy(cb);
}

static const struct wl_callback_listener frame_listener = { .done = frame_done };

struct wl_callback *
wlt_frame(struct wl_surface *s, bool *flag)
{
	struct wl_callback *cb = wl_surface_frame(s);

	*flag = false;
	wl_callback_add_listener(cb, &frame_listener, flag);
	return cb;
}

int
wlt_dispatch_for(struct wlt_client *c, int64_t timeout_ns)
{
	int64_t deadline = wlt_now_ns() + timeout_ns;

	for (;;) {
		struct pollfd p = { .fd = wl_display_get_fd(c->display), .events = POLLIN };
		int64_t left = deadline - wlt_now_ns();
		int r;

		while (wl_display_prepare_read(c->display) != 0)
			if (wl_display_dispatch_pending(c->display) < 0)
				return -EPIPE;
		wl_display_flush(c->display);
		r = poll(&p, 1, left > 0 ? (int)((left + 999999) / 1000000) : 0);
		if (r > 0) {
			if (wl_display_read_events(c->display) < 0)
				return -EPIPE;
		} else {
			wl_display_cancel_read(c->display);
		}
		if (wl_display_dispatch_pending(c->display) < 0)
			return -EPIPE;
		if (left <= 0)
			return 0;
	}
}

int
wlt_wait_flag(struct wlt_client *c, bool *flag, int64_t timeout_ns)
{
	int64_t deadline = wlt_now_ns() + timeout_ns;

	while (!*flag) {
		struct pollfd p = { .fd = wl_display_get_fd(c->display), .events = POLLIN };
		int64_t left = deadline - wlt_now_ns();
		int r;

		if (left <= 0)
			return -ETIME;
		while (wl_display_prepare_read(c->display) != 0)
			if (wl_display_dispatch_pending(c->display) < 0)
				return -EPIPE;
		wl_display_flush(c->display);
		r = poll(&p, 1, (int)((left + 999999) / 1000000));
		if (r > 0) {
			if (wl_display_read_events(c->display) < 0)
				return -EPIPE;
		} else {
			wl_display_cancel_read(c->display);
		}
		if (wl_display_dispatch_pending(c->display) < 0)
			return -EPIPE;
	}
	return 0;
}

/* ---- child compositor --------------------------------------------------------------- */

static int
make_runtime_dir(char *out, size_t len)
{
	snprintf(out, len, "/tmp/sbwl-test-XXXXXX");
	if (!mkdtemp(out))
		return -errno;
	setenv("XDG_RUNTIME_DIR", out, 1);
	return 0;
}

int
wlt_child_start(struct wlt_child *ch, const char *path, const char *const *args)
{
	const char *argv[32];
	int pipefd[2], n = 0, ret;
	char fdarg[16];
	ssize_t r;
	size_t got = 0;

	memset(ch, 0, sizeof(*ch));
	ret = make_runtime_dir(ch->runtime_dir, sizeof(ch->runtime_dir));
	if (ret)
		return ret;
	if (pipe2(pipefd, 0) < 0) /* the child inherits the write end */
		return -errno;
	snprintf(fdarg, sizeof(fdarg), "%d", pipefd[1]);
	argv[n++] = path;
	argv[n++] = "--socket";
	argv[n++] = "sbwl-test";
	argv[n++] = "--ready-fd";
	argv[n++] = fdarg;
	for (int i = 0; args && args[i] && n < 30; i++)
		argv[n++] = args[i];
	argv[n] = NULL;

	ch->pid = fork();
	if (ch->pid < 0)
		return -errno;
	if (ch->pid == 0) {
		close(pipefd[0]);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	close(pipefd[1]);
	/* Wait (60 s at most: valgrind under TCG is slow) for "SOCKET\n". */
	for (;;) {
		struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
		if (poll(&p, 1, 60000) <= 0)
			break;
		r = read(pipefd[0], ch->socket + got, sizeof(ch->socket) - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		if (memchr(ch->socket, '\n', got))
			break;
	}
	close(pipefd[0]);
	ch->socket[got] = 0;
	char *nl = strchr(ch->socket, '\n');
	if (!nl) {
		wlt_child_stop(ch);
		return -ETIME;
	}
	*nl = 0;
	setenv("WAYLAND_DISPLAY", ch->socket, 1);
	return 0;
}

int
wlt_child_stop(struct wlt_child *ch)
{
	int status = 0;

	if (ch->pid <= 0)
		return -1;
	kill(ch->pid, SIGTERM);
	while (waitpid(ch->pid, &status, 0) < 0 && errno == EINTR)
		;
	ch->pid = 0;
	if (ch->runtime_dir[0]) {
		char path[160];
		snprintf(path, sizeof(path), "%s/%s", ch->runtime_dir, ch->socket);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s.lock", ch->runtime_dir, ch->socket);
		unlink(path);
		rmdir(ch->runtime_dir);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int
wlt_child_count_fds(const struct wlt_child *ch)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)ch->pid);
	return count_dir(path);
}

/* ---- compositor thread ---------------------------------------------------------------- */

static void
rec_used(void *data, const struct sbwl_used *u)
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
rec_released(void *data, const struct sbwl_released *r)
{
	struct wlt_comp *w = data;

	pthread_mutex_lock(&w->lock);
	w->total_released++;
	if (w->keep_first_render_fence && w->first_render_fence < 0 && r->render_fence_fd >= 0)
		w->first_render_fence = fcntl(r->render_fence_fd, F_DUPFD_CLOEXEC, 0);
	if (w->n_released < WLT_MAX_EVENTS) {
		w->released_time[w->n_released] = wlt_now_ns();
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
		wl_display_flush_clients(sbwl_comp_get_display(w->comp));
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

static const struct sbwl_comp_hooks recorder = {
	.buffer_used = rec_used,
	.released = rec_released,
	.render_done = rec_render_done,
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

	sbwl_comp_run(w->comp);
	return NULL;
}

int
wlt_comp_start(struct wlt_comp *w, const struct sbwl_comp_options *options)
{
	struct sbwl_comp_options opt = *options;
	int ret = 0;

	memset(w, 0, sizeof(*w));
	w->first_render_fence = -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	ret = make_runtime_dir(w->runtime_dir, sizeof(w->runtime_dir));
	if (ret)
		return ret;
	snprintf(w->socket, sizeof(w->socket), "sbwl-thread");
	opt.socket = w->socket;
	opt.hooks = &recorder;
	opt.hook_data = w;
	w->comp = sbwl_comp_create(&opt, &ret);
	if (!w->comp)
		return ret ? ret : -ENOMEM;
	setenv("WAYLAND_DISPLAY", w->socket, 1);
	if (pipe2(w->gate_pipe, O_CLOEXEC) < 0 ||
	    !(w->gate_source = wl_event_loop_add_fd(wl_display_get_event_loop(sbwl_comp_get_display(w->comp)),
						    w->gate_pipe[0], WL_EVENT_READABLE, gate_cb, w))) {
		sbwl_comp_destroy(w->comp);
		w->comp = NULL;
		return -ENOMEM;
	}
	ret = -pthread_create(&w->thread, NULL, comp_thread, w);
	if (ret) {
		sbwl_comp_destroy(w->comp);
		w->comp = NULL;
	}
	return ret;
}

void
wlt_comp_stop(struct wlt_comp *w)
{
	if (!w->comp)
		return;
	sbwl_comp_terminate(w->comp);
	pthread_join(w->thread, NULL);
	wl_event_source_remove(w->gate_source); /* it polls a duplicate of the pipe */
	sbwl_comp_destroy(w->comp);
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
wlt_comp_find_used(struct wlt_comp *w, uint32_t surface_id, uint64_t seq, struct sbwl_used *out)
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
	sb_wl_server_get_stats(sbwl_comp_get_helper(w->comp), &out->stats);
	out->fds = wlt_count_fds();
	out->rss_kib = rss_kib();
	out->heap_in_use = mallinfo2().uordblks;
	wlt_comp_gate_open(w);
}

int
wlt_comp_wait_total_used(struct wlt_comp *w, uint64_t n, int64_t timeout_ns)
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
	while (w->total_used < n && ret == 0)
		ret = pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	ret = w->total_used >= n ? 0 : -ETIME;
	pthread_mutex_unlock(&w->lock);
	return ret;
}

int
wlt_comp_wait_used(struct wlt_comp *w, int n, int64_t timeout_ns)
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
	while (w->n_used < n && ret == 0)
		ret = pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	ret = w->n_used >= n ? 0 : -ETIME;
	pthread_mutex_unlock(&w->lock);
	return ret;
}

static void __attribute__((noreturn))
bail_out(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

uint32_t
wlt_syncobj_create(int drm_fd)
{
	struct drm_syncobj_create c = { 0 };

	if (ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_CREATE, &c) != 0)
		bail_out("DRM_IOCTL_SYNCOBJ_CREATE");
	return c.handle;
}

void
wlt_syncobj_destroy(int drm_fd, uint32_t handle)
{
	struct drm_syncobj_destroy d = { .handle = handle };

	ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_DESTROY, &d);
}

struct wp_linux_drm_syncobj_timeline_v1 *
wlt_timeline_import(struct wlt_client *c, int drm_fd, uint32_t handle)
{
	struct drm_syncobj_handle h = { .handle = handle, .fd = -1 };
	struct wp_linux_drm_syncobj_timeline_v1 *tl;

	if (ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h) != 0)
		bail_out("DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD");
	tl = wp_linux_drm_syncobj_manager_v1_import_timeline(c->syncobj, h.fd);
	close(h.fd);
	return tl;
}
