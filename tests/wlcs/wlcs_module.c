/* SPDX-License-Identifier: MIT */
/*
 * The integration module that runs the Wayland conformance suite (wlcs,
 * Debian's package) against syncbridge-wl-compositor: wlcs loads this
 * library and finds `wlcs_server_integration` (<wlcs/display_server.h>).
 *
 * Each test creates a server, starts it, connects its clients through
 * create_client_socket, moves windows and a pointer, and stops it. The
 * compositor is the example one with nothing but the CPU: no renderer, no
 * DRM device, no repaint clock (frame callbacks answered at apply), its
 * event loop on a thread of ours, which also runs wlcs's calls
 * (libwayland-server is not thread-safe, and wlcs calls from its test
 * thread). What the compositor does for the calls is compositor/wlc_embed.h.
 *
 * wlcs 1.5.0's windows (create_visible_surface: xdg_wm_base) attach their
 * first buffer right after the initial commit, before the configure it
 * brings is acked, which xdg-shell makes a protocol error (unconfigured_buffer,
 * what the compositor posts): nearly every test would end there. So the
 * compositor runs with accept_unacked_buffer, which takes such a buffer as
 * if the configure had been acked; the compositor's options after wlcs's
 * (`wlcs MODULE [GTEST OPTIONS] --strict-configure`) run it without.
 *
 * The compositor's seat has touch here (opt.seat_touch): the program's has
 * no touch device, this module injects one.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <wayland-client-core.h>
#include <wayland-server-core.h>
#include <wlcs/display_server.h>
#include <wlcs/pointer.h>
#include <wlcs/touch.h>

#include "wlc_compositor.h"
#include "wlc_embed.h"

/* What the compositor advertises with no DRM device (docs/wayland.md). */
static const WlcsExtensionDescriptor extensions[] = {
	{ "wl_compositor", 5 },
	{ "wl_shm", 1 },
	{ "wl_output", 4 },
	{ "wl_seat", 7 },
	{ "wl_data_device_manager", 3 },
	{ "wl_subcompositor", 1 },
	{ "xdg_wm_base", 6 },
	{ "wp_presentation", 1 },
	{ "zwp_linux_dmabuf_v1", 3 },
	{ "zwp_linux_explicit_synchronization_v1", 2 },
};

static const WlcsIntegrationDescriptor descriptor = {
	.version = 1,
	.num_extensions = sizeof(extensions) / sizeof(extensions[0]),
	.supported_extensions = extensions,
};

/* wlcs's client fd and our end of the same socket pair: which wl_client a wl_display is. */
struct client_fds {
	int client_fd, server_fd;
};

#define MAX_CLIENTS 64
#define MAX_POINTERS 8

struct server {
	WlcsDisplayServer base; /* first: wlcs hands it back */
	bool strict_configure;  /* --strict-configure: no accept_unacked_buffer */
	struct wlc_comp *comp;  /* NULL while stopped */
	char runtime_dir[64];   /* where its (unused) socket goes */
	pthread_t thread;
	/* the call slot (call_on_thread): wakes the loop through wake[] */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int wake[2];
	struct wl_event_source *wake_source;
	void (*call_fn)(void *data);
	void *call_data;
	bool quit;              /* the thread's, set by a call */
	struct client_fds clients[MAX_CLIENTS];
	unsigned n_clients;     /* ever made: the newest at (n - 1) % MAX_CLIENTS */
	/* on the compositor thread: repicked after each dispatch */
	struct wlc_embed_pointer *pointers[MAX_POINTERS];
};

/* ---- the compositor's thread ----------------------------------------------------- */

static int
wake_cb(int fd, uint32_t mask, void *data)
{
	struct server *s = data;
	void (*fn)(void *);
	void *arg;
	char c;

	if (read(fd, &c, 1) != 1)
		return 0;
	pthread_mutex_lock(&s->lock);
	fn = s->call_fn;
	arg = s->call_data;
	pthread_mutex_unlock(&s->lock);
	if (fn)
		fn(arg);
	pthread_mutex_lock(&s->lock);
	s->call_fn = NULL;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/*
 * wl_display_run(), with the pointers' focus looked at after each dispatch:
 * whatever the dispatch did to the windows (moved, mapped, resized) moves
 * the focus before the events go out.
 */
static void *
comp_thread(void *data)
{
	struct server *s = data;
	struct wl_display *display = wlc_comp_get_display(s->comp);
	struct wl_event_loop *loop = wl_display_get_event_loop(display);

	while (!s->quit) {
		wl_display_flush_clients(display);
		if (wl_event_loop_dispatch(loop, -1) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < MAX_POINTERS; i++)
			if (s->pointers[i])
				wlc_embed_pointer_repick(s->pointers[i]);
	}
	return NULL;
}

/* Run fn(data) on the compositor's thread and wait for it. */
static void
call_on_thread(struct server *s, void (*fn)(void *data), void *data)
{
	pthread_mutex_lock(&s->lock);
	s->call_fn = fn;
	s->call_data = data;
	pthread_mutex_unlock(&s->lock);
	if (write(s->wake[1], "c", 1) != 1)
		return;
	pthread_mutex_lock(&s->lock);
	while (s->call_fn)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

static void
do_quit(void *data)
{
	struct server *s = data;

	s->quit = true;
}

/* ---- calls on the compositor thread --------------------------------------------- */

struct call {
	struct server *s;
	int fd;
	int server_fd;
	uint32_t surface_id;
	int32_t x, y;
	int ret;
	struct wlc_embed_pointer *pointer;
	struct wlc_embed_touch *touch;
	uint32_t button;
	bool pressed;
};

static void
do_client_create(void *data)
{
	struct call *c = data;

	errno = 0;
	if (!wlc_embed_client_create(c->s->comp, c->fd))
		c->ret = errno ? -errno : -ENOMEM;
}

/* The wl_client on our end `server_fd`, or NULL (it went). */
static struct wl_client *
client_by_fd(struct wlc_comp *comp, int server_fd)
{
	struct wl_list *list = wl_display_get_client_list(wlc_comp_get_display(comp));
	struct wl_client *client;

	wl_client_for_each(client, list)
		if (wl_client_get_fd(client) == server_fd)
			return client;
	return NULL;
}

static void
do_place(void *data)
{
	struct call *c = data;
	struct wl_client *client = client_by_fd(c->s->comp, c->server_fd);

	c->ret = -ENOENT;
	if (client)
		c->ret = wlc_embed_place_window(c->s->comp, client, c->surface_id, c->x, c->y);
}

static void
do_pointer_create(void *data)
{
	struct call *c = data;

	for (int i = 0; i < MAX_POINTERS; i++) {
		if (!c->s->pointers[i]) {
			c->pointer = c->s->pointers[i] = wlc_embed_pointer_create(c->s->comp);
			return;
		}
	}
}

static void
do_pointer_destroy(void *data)
{
	struct call *c = data;

	for (int i = 0; i < MAX_POINTERS; i++)
		if (c->s->pointers[i] == c->pointer)
			c->s->pointers[i] = NULL;
	wlc_embed_pointer_destroy(c->pointer);
}

static void
do_pointer_move_to(void *data)
{
	struct call *c = data;

	wlc_embed_pointer_move_to(c->pointer, c->x, c->y);
}

static void
do_pointer_move_by(void *data)
{
	struct call *c = data;

	wlc_embed_pointer_move_by(c->pointer, c->x, c->y);
}

static void
do_pointer_button(void *data)
{
	struct call *c = data;

	wlc_embed_pointer_button(c->pointer, c->button, c->pressed);
}

/* ---- the display server ---------------------------------------------------------- */

static void
server_start(WlcsDisplayServer *base)
{
	struct server *s = (struct server *)base;
	struct wl_event_loop *loop;
	struct wlc_comp_options opt;
	int ret;

	memset(&opt, 0, sizeof(opt));
	opt.drm_fd = -1;
	opt.vgem_fd = -1;
	opt.renderer = WLC_RENDER_CPU;
	opt.accept_unacked_buffer = !s->strict_configure;
	opt.seat_touch = true;
	s->quit = false;
	/* wlc_comp_create() listens on a socket too; nobody connects to it */
	snprintf(s->runtime_dir, sizeof(s->runtime_dir), "/tmp/sbwl-wlcs-XXXXXX");
	ret = -errno;
	if (!mkdtemp(s->runtime_dir))
		goto err;
	setenv("XDG_RUNTIME_DIR", s->runtime_dir, 1);
	s->comp = wlc_comp_create(&opt, &ret);
	if (!s->comp)
		goto err_dir;
	loop = wl_display_get_event_loop(wlc_comp_get_display(s->comp));
	ret = -ENOMEM;
	if (pipe2(s->wake, O_CLOEXEC) < 0)
		goto err_comp;
	s->wake_source = wl_event_loop_add_fd(loop, s->wake[0], WL_EVENT_READABLE, wake_cb, s);
	if (!s->wake_source)
		goto err_pipe;
	ret = -pthread_create(&s->thread, NULL, comp_thread, s);
	if (ret == 0)
		return;
	wl_event_source_remove(s->wake_source);
err_pipe:
	close(s->wake[0]);
	close(s->wake[1]);
err_comp:
	wlc_comp_destroy(s->comp);
	s->comp = NULL;
err_dir:
	rmdir(s->runtime_dir);
err:
	/* wlcs has no way to hear of it: every call after this fails instead */
	fprintf(stderr, "wlcs module: compositor: %s\n", strerror(ret ? -ret : ENOMEM));
}

static void
server_stop(WlcsDisplayServer *base)
{
	struct server *s = (struct server *)base;

	if (!s->comp)
		return;
	call_on_thread(s, do_quit, s);
	pthread_join(s->thread, NULL);
	for (int i = 0; i < MAX_POINTERS; i++) {
		/* wlcs destroys its pointers first; one it kept goes with the compositor */
		wlc_embed_pointer_destroy(s->pointers[i]);
		s->pointers[i] = NULL;
	}
	wl_event_source_remove(s->wake_source);
	close(s->wake[0]);
	close(s->wake[1]);
	wlc_comp_destroy(s->comp);
	s->comp = NULL;
	rmdir(s->runtime_dir);
	s->n_clients = 0;
}

/* Returns wlcs's end of a new connection (its to close), or -1 with errno. */
static int
server_create_client_socket(WlcsDisplayServer *base)
{
	struct server *s = (struct server *)base;
	struct call c = { .s = s };
	int fds[2];

	if (!s->comp) {
		errno = ENOTCONN;
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
		return -1;
	c.fd = fds[0];
	call_on_thread(s, do_client_create, &c);
	if (c.ret < 0) {
		close(fds[0]);
		close(fds[1]);
		errno = -c.ret;
		return -1;
	}
	s->clients[s->n_clients++ % MAX_CLIENTS] = (struct client_fds){ fds[1], fds[0] };
	return fds[1];
}

static void
server_position_window(WlcsDisplayServer *base, struct wl_display *client,
		       struct wl_surface *surface, int x, int y)
{
	struct server *s = (struct server *)base;
	struct call c = { .s = s, .server_fd = -1, .x = x, .y = y };
	int fd = wl_display_get_fd(client);

	if (!s->comp)
		return;
	/* newest first: an fd number wlcs closed may have come back */
	for (unsigned i = s->n_clients; i-- > 0 && s->n_clients - i <= MAX_CLIENTS;) {
		if (s->clients[i % MAX_CLIENTS].client_fd == fd) {
			c.server_fd = s->clients[i % MAX_CLIENTS].server_fd;
			break;
		}
	}
	c.surface_id = wl_proxy_get_id((struct wl_proxy *)surface);
	call_on_thread(s, do_place, &c);
	if (c.ret < 0)
		fprintf(stderr, "wlcs module: position_window_absolute: surface %u: %s\n",
			c.surface_id, strerror(-c.ret));
}

/* ---- the pointer and the touch device ------------------------------------------- */

struct pointer {
	WlcsPointer base;
	struct server *s;
	struct wlc_embed_pointer *p;
};

static void
pointer_call(WlcsPointer *base, void (*fn)(void *data), struct call *c)
{
	struct pointer *ptr = (struct pointer *)base;

	c->s = ptr->s;
	c->pointer = ptr->p;
	if (ptr->s->comp && ptr->p)
		call_on_thread(ptr->s, fn, c);
}

static void
pointer_move_absolute(WlcsPointer *base, wl_fixed_t x, wl_fixed_t y)
{
	struct call c = { .x = x, .y = y };

	pointer_call(base, do_pointer_move_to, &c);
}

static void
pointer_move_relative(WlcsPointer *base, wl_fixed_t dx, wl_fixed_t dy)
{
	struct call c = { .x = dx, .y = dy };

	pointer_call(base, do_pointer_move_by, &c);
}

static void
pointer_button_up(WlcsPointer *base, int button)
{
	struct call c = { .button = (uint32_t)button, .pressed = false };

	pointer_call(base, do_pointer_button, &c);
}

static void
pointer_button_down(WlcsPointer *base, int button)
{
	struct call c = { .button = (uint32_t)button, .pressed = true };

	pointer_call(base, do_pointer_button, &c);
}

static void
pointer_destroy(WlcsPointer *base)
{
	struct call c = { 0 };

	pointer_call(base, do_pointer_destroy, &c);
	free(base);
}

static WlcsPointer *
server_create_pointer(WlcsDisplayServer *base)
{
	struct server *s = (struct server *)base;
	struct pointer *ptr = calloc(1, sizeof(*ptr));
	struct call c = { .s = s };

	if (!ptr)
		return NULL;
	ptr->base = (WlcsPointer){
		.version = WLCS_POINTER_VERSION,
		.move_absolute = pointer_move_absolute,
		.move_relative = pointer_move_relative,
		.button_up = pointer_button_up,
		.button_down = pointer_button_down,
		.destroy = pointer_destroy,
	};
	ptr->s = s;
	if (s->comp)
		call_on_thread(s, do_pointer_create, &c);
	ptr->p = c.pointer;
	return &ptr->base;
}

struct touch {
	WlcsTouch base;
	struct server *s;
	struct wlc_embed_touch *t;
};

static void
do_touch_create(void *data)
{
	struct call *c = data;

	c->touch = wlc_embed_touch_create(c->s->comp);
}

static void
do_touch_destroy(void *data)
{
	struct call *c = data;

	wlc_embed_touch_destroy(c->touch);
}

static void
do_touch_down(void *data)
{
	struct call *c = data;

	wlc_embed_touch_down(c->touch, c->x, c->y);
}

static void
do_touch_move(void *data)
{
	struct call *c = data;

	wlc_embed_touch_move(c->touch, c->x, c->y);
}

static void
do_touch_up(void *data)
{
	struct call *c = data;

	wlc_embed_touch_up(c->touch);
}

static void
touch_call(WlcsTouch *base, void (*fn)(void *data), struct call *c)
{
	struct touch *tch = (struct touch *)base;

	c->s = tch->s;
	c->touch = tch->t;
	if (tch->s->comp && tch->t)
		call_on_thread(tch->s, fn, c);
}

/*
 * wlcs 1.5.0 hands touch positions over as whole pixels, not as the
 * wl_fixed_t its header declares (Touch::down_at(91, 15) arrives as 91, 15:
 * measured), unlike the pointer's.
 */
static void
touch_down(WlcsTouch *base, wl_fixed_t x, wl_fixed_t y)
{
	struct call c = { .x = wl_fixed_from_int(x), .y = wl_fixed_from_int(y) };

	touch_call(base, do_touch_down, &c);
}

static void
touch_move(WlcsTouch *base, wl_fixed_t x, wl_fixed_t y)
{
	struct call c = { .x = wl_fixed_from_int(x), .y = wl_fixed_from_int(y) };

	touch_call(base, do_touch_move, &c);
}

static void
touch_up(WlcsTouch *base)
{
	struct call c = { 0 };

	touch_call(base, do_touch_up, &c);
}

static void
touch_destroy(WlcsTouch *base)
{
	struct call c = { 0 };

	touch_call(base, do_touch_destroy, &c);
	free(base);
}

static WlcsTouch *
server_create_touch(WlcsDisplayServer *base)
{
	struct server *s = (struct server *)base;
	struct touch *tch = calloc(1, sizeof(*tch));
	struct call c = { .s = s };

	if (!tch)
		return NULL;
	tch->base = (WlcsTouch){
		.version = WLCS_TOUCH_VERSION,
		.touch_down = touch_down,
		.touch_move = touch_move,
		.touch_up = touch_up,
		.destroy = touch_destroy,
	};
	tch->s = s;
	if (s->comp)
		call_on_thread(s, do_touch_create, &c);
	tch->t = c.touch;
	return &tch->base;
}

static const WlcsIntegrationDescriptor *
server_get_descriptor(const WlcsDisplayServer *base)
{
	return &descriptor;
}

/* ---- the integration ------------------------------------------------------------- */

static WlcsDisplayServer *
create_server(int argc, const char **argv)
{
	struct server *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	for (int i = 1; i < argc; i++)
		s->strict_configure |= strcmp(argv[i], "--strict-configure") == 0;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->base = (WlcsDisplayServer){
		.version = 2, /* start() on a thread of ours; get_descriptor */
		.start = server_start,
		.stop = server_stop,
		.create_client_socket = server_create_client_socket,
		.position_window_absolute = server_position_window,
		.create_pointer = server_create_pointer,
		.create_touch = server_create_touch,
		.get_descriptor = server_get_descriptor,
	};
	return &s->base;
}

static void
destroy_server(WlcsDisplayServer *base)
{
	struct server *s = (struct server *)base;

	server_stop(base);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

__attribute__((visibility("default"))) const WlcsServerIntegration wlcs_server_integration = {
	.version = 1,
	.create_server = create_server,
	.destroy_server = destroy_server,
};
