/* SPDX-License-Identifier: MIT */
#include "wlt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
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

#include "harness.h"
#include "kernel.h"
#include "wlt_internal.h"

int
wlt_count_fds(void)
{
	return tb_count_fds();
}

/* ---- raw client ----------------------------------------------------------------- */

/* The globals a test client binds: where each goes, and at which version at most. */
static const struct {
	const struct wl_interface *iface;
	uint32_t version;
	size_t offset;
} client_globals[] = {
	{ &wl_subcompositor_interface, 1, offsetof(struct wlt_client, subcompositor) },
	{ &wl_compositor_interface, 4, offsetof(struct wlt_client, compositor) },
	{ &wl_shm_interface, 1, offsetof(struct wlt_client, shm) },
	{ &zwp_linux_dmabuf_v1_interface, 3, offsetof(struct wlt_client, dmabuf) },
	{ &zwp_linux_explicit_synchronization_v1_interface, 2,
	  offsetof(struct wlt_client, explicit_sync) },
	{ &wp_linux_drm_syncobj_manager_v1_interface, 1, offsetof(struct wlt_client, syncobj) },
};

/* A global announced: bound when client_globals lists it. */
static void
bind_known_global(void *data, struct wl_registry *registry, uint32_t name, const char *iface,
		  uint32_t version)
{
	struct wlt_client *c = data;

	for (size_t i = 0; i < sizeof(client_globals) / sizeof(client_globals[0]); i++) {
		uint32_t max = client_globals[i].version;

		if (strcmp(iface, client_globals[i].iface->name) == 0) {
			*(void **)((char *)c + client_globals[i].offset) =
				wl_registry_bind(registry, name, client_globals[i].iface,
						 version < max ? version : max);
			return;
		}
	}
}

/* The tests' compositor removes no global while a test runs. */
static void
ignore_global_remove(void *data, struct wl_registry *registry, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {
	.global = bind_known_global,
	.global_remove = ignore_global_remove,
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
	if (c->subcompositor)
		wl_subcompositor_destroy(c->subcompositor);
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

static void
release_fenced(void *data, struct zwp_linux_buffer_release_v1 *r, int32_t fd)
{
	struct wlt_release *rel = data;

	rel->arrived = rel->fenced = true;
	if (rel->close_fence)
		close(fd);
	else
		rel->fd = fd;
	zwp_linux_buffer_release_v1_destroy(r);
	rel->proxy = NULL;
}

static void
release_immediate(void *data, struct zwp_linux_buffer_release_v1 *r)
{
	struct wlt_release *rel = data;

	rel->arrived = true;
	zwp_linux_buffer_release_v1_destroy(r);
	rel->proxy = NULL;
}

static const struct zwp_linux_buffer_release_v1_listener release_listener = {
	.fenced_release = release_fenced,
	.immediate_release = release_immediate,
};

void
wlt_release_get(struct wlt_release *rel, struct zwp_linux_surface_synchronization_v1 *sync,
		bool close_fence)
{
	memset(rel, 0, sizeof(*rel));
	rel->fd = -1;
	rel->close_fence = close_fence;
	rel->proxy = zwp_linux_surface_synchronization_v1_get_release(sync);
	zwp_linux_buffer_release_v1_add_listener(rel->proxy, &release_listener, rel);
}

/*
 * Send what is queued, wait for events up to left_ns (none: take only what
 * is there) and dispatch them; returns 0 or -EPIPE.
 */
static int
dispatch_once(struct wlt_client *c, int64_t left_ns)
{
	struct pollfd p = { .fd = wl_display_get_fd(c->display), .events = POLLIN };

	while (wl_display_prepare_read(c->display) != 0)
		if (wl_display_dispatch_pending(c->display) < 0)
			return -EPIPE;
	wl_display_flush(c->display);
	if (poll(&p, 1, left_ns > 0 ? (int)((left_ns + 999999) / 1000000) : 0) > 0) {
		if (wl_display_read_events(c->display) < 0)
			return -EPIPE;
	} else {
		wl_display_cancel_read(c->display);
	}
	return wl_display_dispatch_pending(c->display) < 0 ? -EPIPE : 0;
}

int
wlt_dispatch_for(struct wlt_client *c, int64_t timeout_ns)
{
	int64_t deadline = now_ns() + timeout_ns;

	for (;;) {
		int64_t left = deadline - now_ns();

		if (dispatch_once(c, left) < 0)
			return -EPIPE;
		if (left <= 0)
			return 0;
	}
}

int
wlt_wait_flag(struct wlt_client *c, bool *flag, int64_t timeout_ns)
{
	int64_t deadline = now_ns() + timeout_ns;

	while (!*flag) {
		int64_t left = deadline - now_ns();

		if (left <= 0)
			return -ETIME;
		if (dispatch_once(c, left) < 0)
			return -EPIPE;
	}
	return 0;
}

/* ---- child compositor --------------------------------------------------------------- */

int
wlt_make_runtime_dir(char *out, size_t len)
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
	ret = wlt_make_runtime_dir(ch->runtime_dir, sizeof(ch->runtime_dir));
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
	return tb_count_entries(path);
}

/* ---- kernel objects ------------------------------------------------------------------ */

bool
wlt_devices_open(struct wlt_devices *d, unsigned flags)
{
	d->vgem = sbk_vgem_open();
	if (d->vgem < 0)
		tb_skip("no vgem node: %s", strerror(-d->vgem));
	d->vgem_render = (flags & WLT_DEV_RENDER_VGEM) ? sbk_vgem_open() : -1;
	d->client_drm = d->comp_drm = -1;
	if (!(flags & (WLT_DEV_DRM | WLT_DEV_DRM_REQUIRED)))
		return false;
	d->client_drm = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);
	d->comp_drm = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);
	if (d->client_drm >= 0 && d->comp_drm >= 0)
		return true;
	if (flags & WLT_DEV_DRM_REQUIRED)
		tb_skip("no DRM node with timeline syncobjs (virtio_gpu)");
	return false;
}

void
wlt_devices_close(struct wlt_devices *d)
{
	int *fds[] = { &d->vgem, &d->vgem_render, &d->client_drm, &d->comp_drm };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
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

struct wp_linux_drm_syncobj_timeline_v1 *
wlt_timeline_new(struct wlt_client *c, int drm_fd, uint32_t *handle)
{
	uint32_t h = wlt_syncobj_create(drm_fd);
	struct wp_linux_drm_syncobj_timeline_v1 *tl = wlt_timeline_import(c, drm_fd, h);

	if (handle)
		*handle = h;
	else /* the compositor's import keeps the syncobj */
		wlt_syncobj_destroy(drm_fd, h);
	return tl;
}

void
wlt_sync_proxies_destroy(struct zwp_linux_buffer_release_v1 *release,
			 struct zwp_linux_surface_synchronization_v1 *sync,
			 struct wp_linux_drm_syncobj_surface_v1 *so,
			 struct wp_linux_drm_syncobj_timeline_v1 *acquire_timeline,
			 struct wp_linux_drm_syncobj_timeline_v1 *release_timeline)
{
	if (release)
		zwp_linux_buffer_release_v1_destroy(release);
	if (sync)
		zwp_linux_surface_synchronization_v1_destroy(sync);
	if (so)
		wp_linux_drm_syncobj_surface_v1_destroy(so);
	if (acquire_timeline)
		wp_linux_drm_syncobj_timeline_v1_destroy(acquire_timeline);
	if (release_timeline)
		wp_linux_drm_syncobj_timeline_v1_destroy(release_timeline);
}
