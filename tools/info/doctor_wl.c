/* SPDX-License-Identifier: MIT */
/*
 * doctor's Wayland probe. The socket is connected here rather than by
 * wl_display_connect() so that the connect is non-blocking, the peer's
 * credentials can be read, and the path tried can be reported; the path is
 * resolved as libwayland 1.23 resolves it (wayland-client.c, connect_to_socket):
 * an absolute WAYLAND_DISPLAY is used as it is, a relative one only under an
 * absolute XDG_RUNTIME_DIR (libwayland refuses with "XDG_RUNTIME_DIR is
 * invalid or not set"). The roundtrip is libwayland's prepare_read / poll /
 * read_events loop with a deadline, so a server that never answers costs at
 * most timeout_ms.
 */
#include "doctor_wl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <wayland-client.h>

#include "json_out.h"

/* Milliseconds of CLOCK_MONOTONIC (64-bit: an int wraps after 24.8 days of uptime). */
static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What is left until deadline, for poll(): 0 once it passed. */
static int
ms_left(int64_t deadline)
{
	int64_t left = deadline - now_ms();

	return left > 0 ? (int)left : 0;
}

static void
on_global(void *data, struct wl_registry *reg, uint32_t name, const char *iface, uint32_t version)
{
	struct doctor_wl *wl = data;

	(void)reg;
	(void)name;
	wl->globals++;
	if (strcmp(iface, "wp_linux_drm_syncobj_manager_v1") == 0)
		wl->syncobj_v1 = version;
	else if (strcmp(iface, "zwp_linux_explicit_synchronization_v1") == 0)
		wl->explicit_v1 = version;
	else if (strcmp(iface, "zwp_linux_dmabuf_v1") == 0)
		wl->dmabuf = version;
}

static void
on_global_remove(void *data, struct wl_registry *reg, uint32_t name)
{
	(void)data;
	(void)reg;
	(void)name;
}

static const struct wl_registry_listener registry_listener = {
	.global = on_global,
	.global_remove = on_global_remove,
};

static void
on_sync_done(void *data, struct wl_callback *cb, uint32_t serial)
{
	(void)cb;
	(void)serial;
	*(bool *)data = true;
}

static const struct wl_callback_listener sync_listener = { .done = on_sync_done };

/*
 * WAYLAND_SOCKET: an fd the parent handed over. Returns it (now ours:
 * close-on-exec set, the variable unset, as libwayland does) or -1 with why.
 */
static int
take_wayland_socket(struct doctor_wl *wl, const char *val)
{
	char *end;
	long fd;

	errno = 0;
	fd = strtol(val, &end, 10);
	snprintf(wl->socket, sizeof(wl->socket), "WAYLAND_SOCKET=%s", val);
	if (errno || end == val || *end || fd < 0 || fd > 65535) {
		snprintf(wl->why, sizeof(wl->why), "WAYLAND_SOCKET=%s is not an fd number", val);
		return -1;
	}
	unsetenv("WAYLAND_SOCKET");
	if (fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0) {
		snprintf(wl->why, sizeof(wl->why), "WAYLAND_SOCKET=%ld: %s", fd, strerror(errno));
		return -1;
	}
	return (int)fd;
}

/* The socket path for WAYLAND_DISPLAY into wl->socket: 0, or -1 with why. */
static int
resolve_display(struct doctor_wl *wl, const char *name)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	int n;

	if (name[0] == '/') {
		n = snprintf(wl->socket, sizeof(wl->socket), "%s", name);
	} else if (!rt || rt[0] != '/') {
		snprintf(wl->why, sizeof(wl->why),
			 "WAYLAND_DISPLAY=%.64s is relative and XDG_RUNTIME_DIR is %s: "
			 "no socket path (libwayland refuses it too)",
			 name, rt ? "not an absolute path" : "not set");
		return -1;
	} else {
		n = snprintf(wl->socket, sizeof(wl->socket), "%s/%s", rt, name);
	}
	if (n < 0 || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(wl->why, sizeof(wl->why),
			 "the socket path is longer than a unix socket's %zu bytes",
			 sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		return -1;
	}
	return 0;
}

/* Connect to wl->socket without blocking past deadline: the fd (ours), or -1 with why. */
static int
connect_socket(struct doctor_wl *wl, int64_t deadline)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct pollfd p;
	socklen_t len = sizeof(int);
	int fd, err = 0;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(wl->why, sizeof(wl->why), "socket: %s", strerror(errno));
		return -1;
	}
	memcpy(addr.sun_path, wl->socket, strlen(wl->socket) + 1);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
		return fd;
	err = errno;
	if (err == EINPROGRESS) {
		p = (struct pollfd){ .fd = fd, .events = POLLOUT };
		if (poll(&p, 1, ms_left(deadline)) == 1 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
			return fd;
		err = err ? err : ETIMEDOUT;
	}
	if (err == EAGAIN) /* a unix socket's full listen queue */
		snprintf(wl->why, sizeof(wl->why), "the compositor did not accept the connection "
			 "(its listen queue is full)");
	else
		snprintf(wl->why, sizeof(wl->why), "cannot connect: %s", strerror(err));
	close(fd);
	return -1;
}

/* The server's pid and name, from the connection's credentials. */
static void
read_peer(struct doctor_wl *wl, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char path[64];
	ssize_t n;
	int comm;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0)
		return;
	wl->compositor_pid = cred.pid;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)cred.pid);
	comm = open(path, O_RDONLY | O_CLOEXEC);
	if (comm < 0)
		return;
	n = read(comm, wl->compositor, sizeof(wl->compositor) - 1);
	close(comm);
	if (n <= 0) {
		wl->compositor[0] = '\0';
		return;
	}
	wl->compositor[n] = '\0';
	wl->compositor[strcspn(wl->compositor, "\n")] = '\0';
}

/* Read and dispatch until *done or the deadline: 0, -ETIMEDOUT, or -errno. */
static int
dispatch_until(struct wl_display *d, const bool *done, int64_t deadline)
{
	struct pollfd p = { .fd = wl_display_get_fd(d), .events = POLLIN };
	int left, r;

	while (!*done) {
		if (wl_display_prepare_read(d) != 0) {
			if (wl_display_dispatch_pending(d) < 0)
				return -(wl_display_get_error(d) ? wl_display_get_error(d)
								 : EPROTO);
			continue;
		}
		if (wl_display_flush(d) < 0 && errno != EAGAIN) {
			wl_display_cancel_read(d);
			return -errno;
		}
		left = ms_left(deadline);
		r = left > 0 ? poll(&p, 1, left) : 0;
		if (r <= 0) {
			wl_display_cancel_read(d);
			if (r < 0 && errno == EINTR)
				continue;
			return r < 0 ? -errno : -ETIMEDOUT;
		}
		if (wl_display_read_events(d) < 0 || wl_display_dispatch_pending(d) < 0)
			return -(wl_display_get_error(d) ? wl_display_get_error(d) : EPIPE);
	}
	return 0;
}

/* The registry roundtrip on fd (consumed: libwayland owns it from here, and closes it). */
static void
list_globals(struct doctor_wl *wl, int fd, int timeout_ms, int64_t deadline)
{
	struct wl_display *d = wl_display_connect_to_fd(fd);
	struct wl_registry *reg;
	struct wl_callback *cb;
	bool done = false;
	int r;

	if (!d) {
		snprintf(wl->why, sizeof(wl->why), "libwayland could not take the connection: %s",
			 strerror(errno));
		return;
	}
	reg = wl_display_get_registry(d);
	cb = wl_display_sync(d);
	if (!reg || !cb) {
		snprintf(wl->why, sizeof(wl->why), "out of memory");
	} else {
		wl_registry_add_listener(reg, &registry_listener, wl);
		wl_callback_add_listener(cb, &sync_listener, &done);
		r = dispatch_until(d, &done, deadline);
		wl->connected = r == 0;
		if (r == -ETIMEDOUT)
			snprintf(wl->why, sizeof(wl->why), "the compositor did not answer in %d ms",
				 timeout_ms);
		else if (r < 0)
			snprintf(wl->why, sizeof(wl->why), "the connection failed: %s",
				 strerror(-r));
	}
	if (cb)
		wl_callback_destroy(cb);
	if (reg)
		wl_registry_destroy(reg);
	wl_display_disconnect(d);
}

void
doctor_wl_probe(struct doctor_wl *wl, int timeout_ms)
{
	const char *sock_env = getenv("WAYLAND_SOCKET");
	const char *name = getenv("WAYLAND_DISPLAY");
	int64_t t0 = now_ms(), deadline = t0 + (timeout_ms > 0 ? timeout_ms : 0);
	int fd;

	memset(wl, 0, sizeof(*wl));
	if ((!sock_env || !*sock_env) && (!name || !*name)) {
		snprintf(wl->why, sizeof(wl->why),
			 "WAYLAND_DISPLAY is not set: no Wayland session here");
		return;
	}
	wl->asked = true;
	if (sock_env && *sock_env) {
		fd = take_wayland_socket(wl, sock_env);
	} else {
		fd = resolve_display(wl, name) < 0 ? -1 : connect_socket(wl, deadline);
	}
	if (fd >= 0) {
		read_peer(wl, fd);
		list_globals(wl, fd, timeout_ms, deadline);
	}
	wl->elapsed_ms = (int)(now_ms() - t0);
}

struct json_object *
doctor_wl_json(const struct doctor_wl *wl)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "asked", json_object_new_boolean(wl->asked));
	json_object_object_add(o, "connected", json_object_new_boolean(wl->connected));
	json_object_object_add(o, "socket", info_json_str(wl->socket));
	json_object_object_add(o, "compositor", info_json_str(wl->compositor));
	json_object_object_add(o, "compositor_pid", json_object_new_int(wl->compositor_pid));
	json_object_object_add(o, "syncobj_v1", json_object_new_int64(wl->syncobj_v1));
	json_object_object_add(o, "explicit_v1", json_object_new_int64(wl->explicit_v1));
	json_object_object_add(o, "dmabuf", json_object_new_int64(wl->dmabuf));
	json_object_object_add(o, "globals", json_object_new_int64(wl->globals));
	json_object_object_add(o, "elapsed_ms", json_object_new_int(wl->elapsed_ms));
	json_object_object_add(o, "why", info_json_str(wl->why));
	return o;
}

static void
print_global(FILE *f, const char *iface, uint32_t version)
{
	if (version)
		fprintf(f, "  %-40s version %u\n", iface, version);
	else
		fprintf(f, "  %-40s not offered\n", iface);
}

void
doctor_wl_print(FILE *f, const struct doctor_wl *wl)
{
	if (!wl->asked) {
		fprintf(f, "Wayland: not checked: %s\n", wl->why);
		return;
	}
	if (!wl->connected) {
		fprintf(f, "Wayland: not connected%s%s", wl->socket[0] ? " to " : "", wl->socket);
		if (wl->compositor[0])
			fprintf(f, " (%s, pid %d)", wl->compositor, wl->compositor_pid);
		fprintf(f, ": %s\n", wl->why);
		return;
	}
	fprintf(f, "Wayland: %s (pid %d) on %s, %u globals\n",
		wl->compositor[0] ? wl->compositor : "a compositor", wl->compositor_pid, wl->socket,
		wl->globals);
	print_global(f, "wp_linux_drm_syncobj_manager_v1", wl->syncobj_v1);
	print_global(f, "zwp_linux_explicit_synchronization_v1", wl->explicit_v1);
	print_global(f, "zwp_linux_dmabuf_v1", wl->dmabuf);
}
