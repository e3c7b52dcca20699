/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-wl-proxy: a Wayland proxy between clients and the compositor
 * that offers linux-drm-syncobj-v1 where the compositor lacks it
 * (docs/wl-proxy.md).
 *
 *   syncbridge-wl-proxy [--socket NAME] [--no-wait] [--drm PATH|auto|none]
 *       [--xml-dir DIR]... [--ready-fd FD] [-- CLIENT ARGS...]
 *
 *   --socket NAME   listen on $XDG_RUNTIME_DIR/NAME (default: the first free
 *                   syncbridge-proxy-N)
 *   --no-wait       forward commits at once (the control): release points are
 *                   still signalled at the buffer's release
 *   --drm           the render node timelines are imported on (default auto:
 *                   the first with timeline syncobjs); none: offer nothing
 *   --xml-dir DIR   read protocol XML from DIR too (also: the colon-separated
 *                   SYNCBRIDGE_PROXY_XML_DIRS replaces the built-in list)
 *   --ready-fd FD   write the socket name and a newline to FD once listening
 *   CLIENT          run it with WAYLAND_DISPLAY=NAME; exit with its status
 *
 * The compositor is $WAYLAND_DISPLAY (default wayland-0). Exit: the client's
 * status (a SIGTERM/SIGINT is passed on to it; a second one ends the proxy
 * with 128 + the signal), else 0 on SIGTERM/SIGINT, 1 on failure, 2 on usage
 * errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wayland-client.h>

#include <syncbridge/syncbridge.h>

#include "conn.h"
#include "demo_util.h"
#include "wl_gpu.h"

#ifndef PXY_XML_DIRS
#define PXY_XML_DIRS "/usr/share/wayland:/usr/share/wayland-protocols"
#endif

static void
usage(FILE *f)
{
	fprintf(f, "usage: syncbridge-wl-proxy [--socket NAME] [--no-wait] [--drm PATH|auto|none] "
		   "[--xml-dir DIR] [--ready-fd FD] [-- CLIENT ARGS...]\n");
}

static void
on_global(void *data, struct wl_registry *r, uint32_t name, const char *iface, uint32_t v)
{
	(void)r, (void)name, (void)v;
	if (strcmp(iface, "wp_linux_drm_syncobj_manager_v1") == 0)
		*(bool *)data = true;
}

static void
on_global_remove(void *data, struct wl_registry *r, uint32_t name)
{
	(void)data, (void)r, (void)name;
}

/* Does the compositor offer linux-drm-syncobj-v1? 1, 0, or -errno (unreachable). */
static int
compositor_has_syncobj(const char *display)
{
	static const struct wl_registry_listener listener = { on_global, on_global_remove };
	struct wl_display *d = wl_display_connect(display);
	struct wl_registry *r;
	bool has = false;
	int ret;

	if (!d)
		return -errno ? -errno : -ECONNREFUSED;
	r = wl_display_get_registry(d);
	wl_registry_add_listener(r, &listener, &has);
	ret = wl_display_roundtrip(d) < 0 ? -EPROTO : has;
	wl_registry_destroy(r);
	wl_display_disconnect(d);
	return ret;
}

/* Listen on $XDG_RUNTIME_DIR/name (a lock file beside it, as libwayland). fd or -errno. */
static int
listen_at(const char *dir, const char *name, int *lock_fd)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char lock[sizeof(addr.sun_path) + 8];
	int fd, n = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	snprintf(lock, sizeof(lock), "%s.lock", addr.sun_path);
	*lock_fd = open(lock, O_CREAT | O_RDWR | O_CLOEXEC, 0660);
	if (*lock_fd < 0)
		return -errno;
	if (flock(*lock_fd, LOCK_EX | LOCK_NB) != 0) {
		close(*lock_fd);
		*lock_fd = -1;
		return -EADDRINUSE;
	}
	unlink(addr.sun_path); /* a stale socket: its lock was free */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    listen(fd, 128) != 0) {
		n = -errno;
		if (fd >= 0)
			close(fd);
		return n;
	}
	return fd;
}

/* The client: WAYLAND_DISPLAY=name, the signals the proxy blocked unblocked. */
static pid_t
spawn(char **argv, const char *name)
{
	sigset_t none;
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setenv("WAYLAND_DISPLAY", name, 1);
	execvp(argv[0], argv);
	fprintf(stderr, "syncbridge-wl-proxy: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

struct loop {
	struct pxy_ctx *ctx;
	int listen_fd, signal_fd; /* owned */
	const char *display;
	struct pxy_conn **conns;
	size_t n, cap;
	unsigned serial;
	pid_t child;
	unsigned signalled; /* SIGTERM/SIGINT received */
	int status; /* the exit status once known, else -1 */
};

static void
accept_client(struct loop *l)
{
	int fd = accept4(l->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	struct pxy_conn *c;

	if (fd < 0)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct pxy_conn **grown = realloc(l->conns, cap * sizeof(*grown));

		if (!grown) {
			close(fd);
			return;
		}
		l->conns = grown;
		l->cap = cap;
	}
	c = pxy_conn_create(l->ctx, fd, l->display, ++l->serial);
	if (c)
		l->conns[l->n++] = c;
}

static void
on_signal(struct loop *l)
{
	struct signalfd_siginfo si;
	int st;

	while (read(l->signal_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo != SIGCHLD) {
			/* The client gets the first SIGTERM/SIGINT, and its status is ours. */
			if (l->child <= 0)
				l->status = 0;
			else if (!l->signalled++)
				kill(l->child, (int)si.ssi_signo);
			else
				l->status = 128 + (int)si.ssi_signo;
			continue;
		}
		if (l->child > 0 && waitpid(l->child, &st, WNOHANG) == l->child)
			l->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
}

/* One poll() round over the listening socket, the signals and every connection. */
static int
loop_once(struct loop *l)
{
	size_t n = 2 + 3 * l->n, k = 0;
	struct pollfd *fds = calloc(n, sizeof(*fds));

	if (!fds)
		return -ENOMEM;
	fds[0] = (struct pollfd){ l->listen_fd, POLLIN, 0 };
	fds[1] = (struct pollfd){ l->signal_fd, POLLIN, 0 };
	for (size_t i = 0; i < l->n; i++) {
		struct pollfd *p = &fds[2 + 3 * i];
		int wfd;

		pxy_conn_poll_events(l->conns[i], &p[0].events, &p[1].events, &wfd);
		p[0].fd = l->conns[i]->cfd;
		p[1].fd = l->conns[i]->sfd;
		p[2] = (struct pollfd){ wfd, POLLIN, 0 };
	}
	if (poll(fds, n, -1) < 0 && errno != EINTR) {
		free(fds);
		return -errno;
	}
	if (fds[1].revents)
		on_signal(l);
	for (size_t i = 0; i < l->n; i++) {
		struct pollfd *p = &fds[2 + 3 * i];

		pxy_conn_dispatch(l->conns[i], p[0].revents, p[1].revents, p[2].revents != 0);
	}
	for (size_t i = 0; i < l->n; i++) { /* the closed ones go */
		if (l->conns[i]->dead)
			pxy_conn_destroy(l->conns[i]);
		else
			l->conns[k++] = l->conns[i];
	}
	l->n = k;
	if (fds[0].revents)
		accept_client(l);
	free(fds);
	return 0;
}

/* The XML, the compositor's globals and a render node: what the proxy will do. */
static int
ctx_setup(struct pxy_ctx *ctx, const char *display, const char *drm, const char *xml_dir)
{
	const char *dirs = getenv("SYNCBRIDGE_PROXY_XML_DIRS");
	int has;

	pxy_protocols_load(&ctx->protocols, dirs && *dirs ? dirs : PXY_XML_DIRS);
	if (xml_dir)
		pxy_protocols_load(&ctx->protocols, xml_dir);
	pxy_protocols_resolve(&ctx->protocols);
	pxy_log("%zu interfaces from %u XML files (%u not protocols)", ctx->protocols.n,
		ctx->protocols.files_read, ctx->protocols.files_failed);
	if (pxy_ctx_init(ctx) != 0) {
		fprintf(stderr, "syncbridge-wl-proxy: no wayland.xml found "
				"(SYNCBRIDGE_PROXY_XML_DIRS, --xml-dir)\n");
		return -ENOENT;
	}
	has = compositor_has_syncobj(display);
	if (has < 0) {
		fprintf(stderr, "syncbridge-wl-proxy: cannot reach the compositor (%s): %s\n",
			display, strerror(-has));
		return has;
	}
	ctx->drm_fd = -1;
	if (has) {
		pxy_log("the compositor has linux-drm-syncobj-v1: passing it through");
	} else if (!ctx->sync_manager || !ctx->sync_surface || !ctx->sync_timeline ||
		   !ctx->params) {
		pxy_log("no linux-drm-syncobj-v1 / linux-dmabuf XML: nothing to offer");
	} else if (strcmp(drm, "auto") == 0) {
		ctx->drm_fd = wlgpu_drm_open_syncobj();
		if (ctx->drm_fd < 0)
			pxy_log("no render node with timeline syncobjs: nothing to offer");
	} else if (strcmp(drm, "none") != 0) {
		/* A device the user named: one that cannot be opened is an error,
		 * not a quiet pass-through. */
		ctx->drm_fd = open(drm, O_RDWR | O_CLOEXEC);
		if (ctx->drm_fd < 0) {
			int err = errno;

			fprintf(stderr, "syncbridge-wl-proxy: --drm %s: %s\n", drm, strerror(err));
			return -err;
		}
	}
	ctx->emulate = ctx->drm_fd >= 0;
	if (ctx->emulate)
		pxy_log("offering wp_linux_drm_syncobj_manager_v1 (%s)",
			ctx->no_wait ? "--no-wait: commits forwarded at once" : "commits held");
	return 0;
}

/* Listen where asked, or at the first free syncbridge-proxy-N. */
static int
listen_named(const char *socket_name, char *name, size_t size, int *lock_fd)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");
	int fd = -ENOENT;

	if (!dir) {
		fprintf(stderr, "syncbridge-wl-proxy: XDG_RUNTIME_DIR is not set\n");
		return -ENOENT;
	}
	for (int k = 0; k < 32; k++) {
		if (socket_name)
			snprintf(name, size, "%s", socket_name);
		else
			snprintf(name, size, "syncbridge-proxy-%d", k);
		fd = listen_at(dir, name, lock_fd);
		if (fd >= 0 || socket_name || fd != -EADDRINUSE)
			break;
	}
	if (fd < 0)
		fprintf(stderr, "syncbridge-wl-proxy: cannot listen on %s/%s: %s\n", dir, name,
			strerror(-fd));
	return fd;
}

static int
run(struct loop *l, char **client, const char *name, int ready_fd)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	l->signal_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (l->signal_fd < 0)
		return 1;
	if (ready_fd >= 0) {
		dprintf(ready_fd, "%s\n", name);
		close(ready_fd);
	}
	if (client && (l->child = spawn(client, name)) < 0)
		return 1;
	while (l->status < 0)
		if (loop_once(l) < 0)
			return 1;
	return l->status;
}

int
main(int argc, char **argv)
{
	const char *socket_name = NULL, *drm = "auto", *xml_dir = NULL;
	const char *display = getenv("WAYLAND_DISPLAY");
	struct pxy_ctx ctx = { .drm_fd = -1 };
	struct loop l = { .ctx = &ctx, .status = -1, .listen_fd = -1, .signal_fd = -1 };
	int ready_fd = -1, lock_fd = -1, first, ret;
	char name[108];
	const struct demo_opt opts[] = {
		{ "socket", DEMO_OPT_STRING, &socket_name },
		{ "no-wait", DEMO_OPT_FLAG, &ctx.no_wait },
		{ "drm", DEMO_OPT_STRING, &drm },
		{ "xml-dir", DEMO_OPT_STRING, &xml_dir },
		{ "ready-fd", DEMO_OPT_INT, &ready_fd, 0, 65535 },
		{ NULL },
	};

	first = demo_opt_parse("syncbridge-wl-proxy", argc, argv, opts, usage, DEMO_OPT_OPERANDS);
	if (first < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	l.display = display && *display ? display : "wayland-0";
	if (ctx_setup(&ctx, l.display, drm, xml_dir) != 0) {
		pxy_protocols_finish(&ctx.protocols);
		return 1;
	}
	l.listen_fd = listen_named(socket_name, name, sizeof(name), &lock_fd);
	ret = l.listen_fd < 0 ? 1 : run(&l, first < argc ? argv + first : NULL, name, ready_fd);
	for (size_t i = 0; i < l.n; i++)
		pxy_conn_destroy(l.conns[i]);
	free(l.conns);
	if (l.listen_fd >= 0) {
		char path[200];

		snprintf(path, sizeof(path), "%s/%s", getenv("XDG_RUNTIME_DIR"), name);
		unlink(path);
		close(l.listen_fd);
	}
	if (lock_fd >= 0)
		close(lock_fd);
	if (l.signal_fd >= 0)
		close(l.signal_fd);
	if (ctx.drm_fd >= 0)
		close(ctx.drm_fd);
	pxy_protocols_finish(&ctx.protocols);
	return ret;
}
