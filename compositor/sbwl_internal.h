/* SPDX-License-Identifier: MIT */
/*
 * What the example compositor's files share, bottom up:
 *   sbwl_util.c     sealed memfds, client allocations, resources kept on a list
 *   sbwl_dmabuf.c   zwp_linux_dmabuf_v1 (v4: default and surface feedback)
 *   sbwl_render.c   the output image: the CPU renderer and the screenshot
 *   sbwl_render_gl.c  the EGL/GLES renderer (EGLImages, the bridge's waits
 *                   and render fences)
 *   sbwl_compositor.c  wl_compositor/wl_surface: the commit path through the
 *                   helper, apply, the repaint clock, frame callbacks
 *   sbwl_globals.c  wl_output, wl_subcompositor, wp_presentation
 *   sbwl_seat.c     wl_seat: a keyboard with a keymap (libxkbcommon), a
 *                   pointer without events, the keyboard focus
 *   sbwl_data_device.c  wl_data_device_manager: the seat's selection
 *   sbwl_shell.c    xdg-shell (with sbwl_shell_toplevel.c, sbwl_shell_popup.c,
 *                   sbwl_shell_configure.c: sbwl_shell_internal.h)
 */
#ifndef SBWL_INTERNAL_H
#define SBWL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <drm_fourcc.h>
#include <wayland-server-core.h>

#include "sbwl_compositor.h"

struct sbwl_renderer;
struct sbwl_surface;

/* ---- buffers (sbwl_dmabuf.c) ------------------------------------------------ */

/* Our side of a linux-dmabuf wl_buffer; refcounted so a commit outlives the resource. */
struct dmabuf_buffer {
	int refs;
	struct wl_resource *resource; /* NULL once destroyed */
	int fd;
	uint32_t width, height, format, offset, stride;
	uint64_t modifier;
	size_t size;
	void *map; /* PROT_READ mapping, NULL where the dma-buf cannot be mapped */
	/* The GL renderer's import (an EGLImage and texture), made on first use. */
	void *render_data;
	void (*render_data_free)(void *render_data);
};

/* Drop a reference (NULL: nothing); the last one unmaps and closes. */
void dmabuf_buffer_unref(struct dmabuf_buffer *b);
/* The dma-buf behind a wl_buffer, or NULL for any other buffer (shm) or NULL. */
struct dmabuf_buffer *dmabuf_buffer_from_resource(struct wl_resource *res);

/* A (format, modifier) pair the compositor imports. */
struct sbwl_format {
	uint32_t format;
	uint64_t modifier;
};

/*
 * The zwp_linux_dmabuf_v1 global (version 4) with its feedback: main device
 * `main_device` (the render node the compositor uses; 0: none known, no
 * feedback is then offered and the global is version 3), and the formats
 * (copied). NULL on failure.
 */
struct sbwl_dmabuf;
struct sbwl_dmabuf *sbwl_dmabuf_create(struct wl_display *display, dev_t main_device,
				       const struct sbwl_format *formats, size_t nformats);
void sbwl_dmabuf_destroy(struct sbwl_dmabuf *d);

/* ---- surfaces (sbwl_compositor.c) ------------------------------------------- */

/* Double-buffered state: what a commit carries. */
struct sbwl_state {
	bool attached;
	struct wl_resource *buffer; /* the wl_buffer, NULL once destroyed */
	struct wl_listener buffer_destroy;
	struct dmabuf_buffer *dmabuf; /* a reference, for dmabuf buffers */
	bool shm;
	uint32_t shm_content;         /* first word, read at commit (its pool may go) */
	uint32_t shm_width, shm_height, shm_stride, shm_format; /* read at commit */
	/*
	 * With a renderer, while it takes them: the shm pixels, rows of
	 * shm_stride bytes. A commit applied at once reads the client's pool
	 * (borrowed, inside wl_shm_buffer_begin/end_access: one copy, the
	 * renderer's); one the helper holds gets its own copy (malloc'd) when
	 * it is held, so that it does not depend on the pool still being there
	 * when it is applied.
	 */
	void *shm_pixels;
	bool shm_pixels_borrowed;
	struct wl_list frames;        /* wl_callback resource links */
	struct wl_list feedbacks;     /* wp_presentation_feedback resource links */
};

/*
 * A surface role (wl_surface's "role" rule: one for life). precommit runs at
 * wl_surface.commit before the helper sees the commit and may refuse it with
 * a protocol error it posted (return false: the commit is dropped); applied
 * runs after a commit took effect (its content is the surface's now).
 */
struct sbwl_role {
	const char *name;
	bool (*precommit)(struct sbwl_surface *surf, const struct sbwl_state *pending);
	void (*applied)(struct sbwl_surface *surf, bool has_buffer);
};

struct sbwl_surface {
	struct sbwl_comp *comp;
	struct wl_resource *resource;
	struct sbwl_state pending;
	uint64_t seq;

	const struct sbwl_role *role; /* NULL until one is given */
	void *role_data;

	/* What it shows: the buffer size of its last applied buffer (0: none). */
	uint32_t width, height;
	bool mapped;                 /* the role put it on screen: in comp->stack */
	int32_t x, y;                /* on the output */
	struct wl_list link;         /* comp->stack (bottom first) when mapped */
	struct wl_list all_link;     /* comp->all_surfaces */
	struct wl_list focus_link;   /* the seat's mapped toplevels (sbwl_seat.c), or empty */
	void *render_data;           /* the renderer's copy of its content */

	/* answered at the next repaint */
	struct wl_list frames;
	struct wl_list feedbacks;

	/* options.hold_current: the commit shown now, released when a newer
	 * buffer replaces it (or the surface goes), with its render fence. */
	struct sb_wl_commit *held;
	int held_fence; /* a duplicate, or -1 */

	struct wl_signal destroy_signal; /* before it goes; data: the surface */
};

/* wl_compositor's bind, and the helper's callbacks (sbwl_surface.c) */
void sbwl_compositor_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id);
void sbwl_commit_ready(struct sb_wl_commit *commit, void *commit_data, void *data);
void sbwl_commit_discard(void *commit_data, void *data);
/* Signal every pending test render fence now (the compositor's teardown). */
void sbwl_render_fences_fire_all(struct sbwl_comp *comp);

/* The surface behind a wl_surface resource, or NULL if it is not one. */
struct sbwl_surface *sbwl_surface_from_resource(struct wl_resource *res);
/*
 * Give surf its role (again: the same role may be given anew, with new
 * data); false, after posting `error_code` on error_res, if it has another.
 */
bool sbwl_surface_set_role(struct sbwl_surface *surf, const struct sbwl_role *role, void *data,
			   struct wl_resource *error_res, uint32_t error_code);
/* Put on / take off the output (the top of the stack). */
void sbwl_surface_map(struct sbwl_surface *surf);
void sbwl_surface_unmap(struct sbwl_surface *surf);
/* Answer and destroy the wl_callbacks on `frames` (resource links), done at time_ns. */
void sbwl_frames_done(struct wl_list *frames, int64_t time_ns);
/* Ask for a repaint at the next tick of the clock. */
void sbwl_comp_schedule_repaint(struct sbwl_comp *comp);

/* ---- the compositor --------------------------------------------------------- */

struct sbwl_comp {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct sb_wl_server *helper;
	struct sbwl_comp_options opt;
	const char *socket;
	struct wl_global *compositor_global;
	struct sbwl_dmabuf *dmabuf;
	struct wl_list render_fences; /* render_fence.link */

	struct sbwl_renderer *renderer; /* NULL: nothing is drawn */
	struct wl_list stack;           /* sbwl_surface.link, mapped, bottom first */
	struct wl_list all_surfaces;    /* sbwl_surface.all_link */

	/* The repaint clock (opt.repaint_hz; 0: answer at apply, no clock) */
	struct wl_event_source *repaint_timer;
	struct wl_event_source *repaint_idle; /* a repaint at the end of this dispatch */
	bool repaint_scheduled;
	int64_t refresh_ns;
	int64_t last_repaint_ns;
	uint64_t msc;                   /* repaints so far (or presentations, without a clock) */
	uint64_t commits;               /* commits applied with a buffer */
	/* SB_WL_SERVER_WAIT_MATERIALIZED: "presented" once each repaint's fence
	 * signalled (presentation_wait.link, sbwl_compositor.c) */
	struct wl_list presentation_waits;
	unsigned long screenshots;

	struct sbwl_globals *globals;   /* sbwl_globals.c */
	struct sbwl_seat *seat;         /* sbwl_seat.c */
	struct sbwl_data_device *data_device; /* sbwl_data_device.c */
	struct sbwl_shell *shell;       /* sbwl_shell.c */
};

/* ---- wl_output, wl_subcompositor, wp_presentation (sbwl_globals.c) --------- */

struct sbwl_globals;
struct sbwl_globals *sbwl_globals_create(struct sbwl_comp *comp);
void sbwl_globals_destroy(struct sbwl_globals *g);
/*
 * A repaint at time_ns (CLOCK_MONOTONIC) showed surf's current content:
 * send its waiting feedbacks "presented" (the list is emptied).
 */
void sbwl_presentation_presented(struct sbwl_comp *comp, struct wl_list *feedbacks,
				 int64_t time_ns, uint64_t msc);
/* Content that was never shown: "discarded" (the list is emptied). */
void sbwl_presentation_discarded(struct wl_list *feedbacks);

/* ---- wl_seat and the keyboard focus (sbwl_seat.c) ---------------------------- */

struct sbwl_seat;
struct sbwl_seat *sbwl_seat_create(struct sbwl_comp *comp);
void sbwl_seat_destroy(struct sbwl_seat *seat);
/* A toplevel went on screen: it takes the keyboard focus (seat NULL: nothing). */
void sbwl_seat_toplevel_mapped(struct sbwl_seat *seat, struct sbwl_surface *surf);
/*
 * surf left the screen (sbwl_surface_unmap, its destroy too): with the focus,
 * the focus goes to the most recently mapped toplevel left, or nowhere.
 */
void sbwl_seat_surface_unmapped(struct sbwl_seat *seat, struct sbwl_surface *surf);

/* ---- wl_data_device_manager (sbwl_data_device.c) ------------------------------- */

struct sbwl_data_device;
struct sbwl_data_device *sbwl_data_device_create(struct sbwl_comp *comp);
void sbwl_data_device_destroy(struct sbwl_data_device *dd);
/*
 * The keyboard focus went to `client` (NULL: none): it gets the selection.
 * Called by the seat before its wl_keyboard.enter (dd NULL: nothing).
 */
void sbwl_data_device_focus_changed(struct sbwl_data_device *dd, struct wl_client *client);

/* ---- xdg-shell (sbwl_shell.c) ----------------------------------------------- */

struct sbwl_shell;
struct sbwl_shell *sbwl_shell_create(struct sbwl_comp *comp);
void sbwl_shell_destroy(struct sbwl_shell *shell);
/* xdg_toplevel.close to every toplevel (the example program's first SIGINT); returns how many. */
int sbwl_shell_close_all(struct sbwl_shell *shell);

/* ---- the renderer (sbwl_render.c, sbwl_render_gl.c) ------------------------- */

enum sbwl_renderer_kind {
	SBWL_RENDERER_CPU,
	SBWL_RENDERER_GL,
};

struct sbwl_renderer_impl {
	const char *name;
	/*
	 * Take the content of an applied commit into surf (a copy: the buffer
	 * can be released after it). acquire_fd: the commit's acquire fence
	 * (borrowed; -1: none or signalled) for a renderer that orders its
	 * reads on it. *release_fd: a fence that signals when the copy is
	 * done (owned by the caller), or -1 when it is done already.
	 * Returns 0 or -errno (the surface keeps its previous content).
	 */
	int (*take)(struct sbwl_renderer *r, struct sbwl_surface *surf, const struct sbwl_state *s,
		    int acquire_fd, int *release_fd);
	/* Forget surf's content (the surface goes). */
	void (*surface_destroy)(struct sbwl_renderer *r, struct sbwl_surface *surf);
	/* Draw the stack (bottom first) into the output image. */
	int (*repaint)(struct sbwl_renderer *r, struct wl_list *stack);
	/* Send what repaint() drew on its way (GL: a flush); NULL: nothing to send. */
	void (*submit)(struct sbwl_renderer *r);
	/*
	 * The same, with a fence that signals when the repaint is done (owned
	 * by the caller); 0 or -errno (then submitted without one). NULL: none.
	 */
	int (*submit_fence)(struct sbwl_renderer *r, int *fence_fd);
	/* The output image as 8-bit RGBA rows, top first (malloc'd). */
	int (*read_pixels)(struct sbwl_renderer *r, uint8_t **rgba);
	void (*destroy)(struct sbwl_renderer *r);
};

struct sbwl_renderer {
	const struct sbwl_renderer_impl *impl;
	uint32_t width, height;        /* the output */
	uint32_t background;           /* 0xAARRGGBB */
	dev_t main_device;             /* the render node it imports on (0: none) */
	const struct sbwl_format *formats; /* what it imports as dma-bufs */
	size_t nformats;
};

/* The CPU renderer (dma-bufs it can mmap, shm). NULL and *err on failure. */
struct sbwl_renderer *sbwl_renderer_cpu_create(uint32_t width, uint32_t height, int *err);
/*
 * The GL renderer on an EGL display that imports dma-bufs (common/eglt.c
 * picks it). NULL and *err (-ENODEV: no usable EGL here) on failure.
 */
struct sbwl_renderer *sbwl_renderer_gl_create(uint32_t width, uint32_t height, int *err);
void sbwl_renderer_destroy(struct sbwl_renderer *r);
/* Write the output image as a PNG; 0 or -errno. */
int sbwl_renderer_screenshot(struct sbwl_renderer *r, const char *path);

/* ---- small things --------------------------------------------------------- */

/* Every interface's destroy request: the resource goes (sbwl_compositor.c). */
void sbwl_destroy_request(struct wl_client *client, struct wl_resource *resource);

/*
 * Zeroed memory for an object `client` asked for, or NULL once the client
 * was told (wl_client_post_no_memory()) (sbwl_util.c).
 */
void *sbwl_client_zalloc(struct wl_client *client, size_t size);

/*
 * A new resource with its implementation, or NULL once the client was told
 * (wl_client_post_no_memory()): then data is still the caller's to free.
 */
static inline struct wl_resource *
sbwl_resource_new(struct wl_client *client, const struct wl_interface *iface, int version, uint32_t id,
		  const void *impl, void *data, wl_resource_destroy_func_t destroy)
{
	struct wl_resource *res = wl_resource_create(client, iface, version, id);

	if (!res) {
		wl_client_post_no_memory(client);
		return NULL;
	}
	wl_resource_set_implementation(res, impl, data, destroy);
	return res;
}

/*
 * Resources kept on a list by their own link (wl_resource_get_link()):
 * sbwl_resource_new_linked() is sbwl_resource_new() with the link inserted
 * after `after` (the list's head: first; head.prev: last) and
 * sbwl_resource_unlink() as the destroy handler, which takes it off again
 * (sbwl_util.c).
 */
void sbwl_resource_unlink(struct wl_resource *res);
struct wl_resource *sbwl_resource_new_linked(struct wl_client *client, const struct wl_interface *iface,
					     int version, uint32_t id, const void *impl, void *data,
					     struct wl_list *after);
/*
 * The global that kept `list` goes and its resources stay until their
 * clients go: each is taken off the list (its destroy handler then unlinks
 * nothing) and its user data, which pointed at the global's state, is NULL.
 */
void sbwl_resource_list_orphan(struct wl_list *list);
/* send(res, data) for each resource on `list` that belongs to `client`; send must not destroy any. */
void sbwl_resource_list_send(struct wl_list *list, struct wl_client *client,
			     void (*send)(struct wl_resource *res, void *data), void *data);

/*
 * A memfd holding `size` bytes of `data`, sealed (no shrink, grow or write)
 * for clients to map read-only: the dma-buf format table, the keymap.
 * Returns the fd (CLOEXEC, the caller's) or -errno (nothing to close).
 */
int sbwl_sealed_memfd(const char *name, const void *data, size_t size);

#endif
