/* SPDX-License-Identifier: MIT */
/*
 * What the example compositor's files share. Who does what, top down: a
 * file calls only files below it, and a lower one tells an upper one
 * through a wl_signal it emits (the surface's destroy_signal and
 * unmap_signal, the compositor's needs_repaint) or a callback it was given
 * (a surface role's hooks). testbed/check-layering.py checks the order
 * against the calls, so keep one file per line, first in the line:
 *
 *   wlc_embed.c           running it inside a host (wlc_embed.h: the wlcs
 *                         module): clients from fds, window placement,
 *                         injected pointer and touch
 *   wlc_compositor.c      life cycle: creates the rest, wires the helper to
 *                         the surfaces; the repaint clock
 *   wlc_shell.c           xdg-shell: xdg_wm_base, xdg_surface and the role
 *   wlc_shell_toplevel.c  xdg_toplevel (wlc_shell_internal.h)
 *   wlc_shell_popup.c     xdg_popup and xdg_positioner
 *   wlc_shell_configure.c the configure/ack sequence both roles share
 *   wlc_shell_ping.c      xdg_wm_base.ping: liveness, its counters
 *   wlc_seat.c            wl_seat: a keyboard with a keymap (libxkbcommon), a
 *                         pointer and a touch point (events only where an
 *                         embedding host injects them), the keyboard focus
 *   wlc_data_device.c     wl_data_device_manager: the seat's selection
 *   wlc_globals.c         wl_subcompositor, wp_presentation
 *   wlc_surface.c         wl_compositor/wl_surface: the commit path through
 *                         the helper, apply, release
 *   wlc_test.c            the test interface (wlc_test.h): hooks, -v's lines,
 *                         the vgem "GPU", the naive compositor's wait
 *   wlc_output.c          wl_output, and what a repaint answers: frame
 *                         callbacks, presentation feedback
 *   wlc_render_gl.c       the EGL/GLES renderer (the bridge's waits, render
 *                         fences)
 *   wlc_render_gl_egl.c   its EGL side: imports, formats (wlc_render_gl_egl.h)
 *   wlc_render.c          the output image: the CPU renderer, the screenshot
 *   wlc_dmabuf.c          zwp_linux_dmabuf_v1 (v4: default and surface
 *                         feedback)
 *   wlc_util.c            the shared destroy request, sealed memfds, client
 *                         allocations, resources kept on a list
 *
 * main.c, the program, sits above them all and uses wlc_compositor.h only.
 */
#ifndef WLC_INTERNAL_H
#define WLC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <drm_fourcc.h>
#include <wayland-server-core.h>

#include "wlc_compositor.h"

struct wlc_renderer;
struct wlc_surface;

/* ---- buffers (wlc_dmabuf.c) ------------------------------------------------ */

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
struct wlc_format {
	uint32_t format;
	uint64_t modifier;
};

/*
 * The zwp_linux_dmabuf_v1 global (version 4) with its feedback: main device
 * `main_device` (the render node the compositor uses; 0: none known, no
 * feedback is then offered and the global is version 3), and the formats
 * (copied). NULL on failure.
 */
struct wlc_dmabuf;
struct wlc_dmabuf *wlc_dmabuf_create(struct wl_display *display, dev_t main_device,
				       const struct wlc_format *formats, size_t nformats);
void wlc_dmabuf_destroy(struct wlc_dmabuf *d);

/* ---- surfaces (wlc_surface.c) ---------------------------------------------- */

/* Double-buffered state: what a commit carries. */
struct wlc_state {
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
	/*
	 * -v only (wlc_test_commit()): the dma-buf's write fences at commit
	 * (implicit sync's snapshot, DMA_BUF_IOCTL_EXPORT_SYNC_FILE), owned, or -1.
	 */
	int witness_fd;
};

/*
 * A surface role (wl_surface's "role" rule: one for life). precommit runs at
 * wl_surface.commit before the helper sees the commit and may refuse it with
 * a protocol error it posted (return false: the commit is dropped); applied
 * runs after a commit took effect (its content is the surface's now).
 */
struct wlc_role {
	const char *name;
	bool (*precommit)(struct wlc_surface *surf, const struct wlc_state *pending);
	void (*applied)(struct wlc_surface *surf, bool has_buffer);
};

struct wlc_surface {
	struct wlc_comp *comp;
	struct wl_resource *resource;
	struct wlc_state pending;
	uint64_t seq;

	const struct wlc_role *role; /* NULL until one is given */
	void *role_data;

	/* What it shows: the buffer size of its last applied buffer (0: none). */
	uint32_t width, height;
	bool mapped;                 /* the role put it on screen: in comp->stack */
	int32_t x, y;                /* on the output */
	struct wl_list link;         /* comp->stack (bottom first) when mapped */
	struct wl_list all_link;     /* comp->all_surfaces */
	/* the seat's (wlc_seat.c): its list of mapped toplevels, or empty, and
	 * its listener on unmap_signal while there */
	struct wl_list focus_link;
	struct wl_listener focus_unmap;
	void *render_data;           /* the renderer's copy of its content */

	/* answered at the next repaint */
	struct wl_list frames;
	struct wl_list feedbacks;

	/* options.hold_current: the commit shown now, released when a newer
	 * buffer replaces it (or the surface goes), with its render fence. */
	struct sb_wl_commit *held;
	int held_fence; /* a duplicate, or -1 */

	struct wl_signal destroy_signal; /* before it goes; data: the surface */
	struct wl_signal unmap_signal;   /* it leaves the screen; data: the surface */
};

/* wl_compositor's bind, and the helper's callbacks (wlc_surface.c) */
void wlc_compositor_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id);
void wlc_commit_ready(struct sb_wl_commit *commit, void *commit_data, void *data);
void wlc_commit_discard(void *commit_data, void *data);

/* The surface behind a wl_surface resource, or NULL if it is not one. */
struct wlc_surface *wlc_surface_from_resource(struct wl_resource *res);
/*
 * Give surf its role (again: the same role may be given anew, with new
 * data); false, after posting `error_code` on error_res, if it has another.
 */
bool wlc_surface_set_role(struct wlc_surface *surf, const struct wlc_role *role, void *data,
			   struct wl_resource *error_res, uint32_t error_code);
/* Put on / take off the output (the top of the stack). */
void wlc_surface_map(struct wlc_surface *surf);
void wlc_surface_unmap(struct wlc_surface *surf);
/* surf was mapped, unmapped or moved, or (applied) its state applied: tell who
 * follows it (comp->surface_placed; its sub-surfaces). */
void wlc_surface_tell_placed(struct wlc_surface *surf, bool applied);

/* ---- the compositor --------------------------------------------------------- */

struct wlc_comp {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct sb_wl_server *helper;
	struct wlc_comp_options opt;
	const char *socket;
	struct wl_global *compositor_global;
	struct wlc_dmabuf *dmabuf;
	struct wl_list render_fences; /* the test render fences pending (wlc_test.c) */

	struct wlc_renderer *renderer; /* NULL: nothing is drawn */
	struct wl_list stack;           /* wlc_surface.link, mapped, bottom first */
	struct wl_list all_surfaces;    /* wlc_surface.all_link */

	/* The repaint clock (opt.repaint_hz; 0: answer at apply, no clock) */
	struct wl_event_source *repaint_timer;
	struct wl_event_source *repaint_idle; /* a repaint at the end of this dispatch */
	bool repaint_scheduled;
	int64_t refresh_ns;
	int64_t last_repaint_ns;
	uint64_t msc;                   /* repaints so far (or presentations, without a clock) */
	uint64_t commits;               /* commits applied with a buffer */
	/* SB_WL_SERVER_WAIT_MATERIALIZED: "presented" once each repaint's fence
	 * signalled (presentation_wait.link, wlc_compositor.c) */
	struct wl_list presentation_waits;
	unsigned long screenshots;

	/*
	 * A surface's content, mapping or waiting frame callbacks changed:
	 * the repaint clock ticks (data: NULL). Emitted by the surfaces
	 * (wlc_surface.c), heard by the clock (wlc_compositor.c).
	 */
	struct wl_signal needs_repaint;
	struct wl_listener repaint_listener;
	/*
	 * A surface was mapped, unmapped, or had its state applied (data:
	 * struct wlc_surface_placed): its sub-surfaces follow. Emitted by the
	 * surfaces, heard by wl_subcompositor (wlc_globals.c).
	 */
	struct wl_signal surface_placed;

	struct wlc_output *output;     /* wlc_output.c */
	struct wlc_globals *globals;   /* wlc_globals.c */
	struct wlc_seat *seat;         /* wlc_seat.c */
	struct wlc_data_device *data_device; /* wlc_data_device.c */
	struct wlc_shell *shell;       /* wlc_shell.c */
};

/* ---- wl_subcompositor, wp_presentation (wlc_globals.c) --------------------- */

/* comp->surface_placed's data. */
struct wlc_surface_placed {
	struct wlc_surface *surface;
	bool applied; /* its state was applied (else mapped or unmapped) */
};

struct wlc_globals;
struct wlc_globals *wlc_globals_create(struct wlc_comp *comp);
void wlc_globals_destroy(struct wlc_globals *g);

/* ---- wl_seat and the keyboard focus (wlc_seat.c) ---------------------------- */

struct wlc_seat;
struct wlc_seat *wlc_seat_create(struct wlc_comp *comp);
void wlc_seat_destroy(struct wlc_seat *seat);
/*
 * A toplevel went on screen: it takes the keyboard focus (seat NULL:
 * nothing). When it leaves the screen (its unmap_signal), the focus goes to
 * the most recently mapped toplevel left, or nowhere.
 */
void wlc_seat_toplevel_mapped(struct wlc_seat *seat, struct wlc_surface *surf);
/* send(res, data) to each wl_pointer of `client` (the pointer events wlc_embed.c injects). */
void wlc_seat_pointer_send(struct wlc_seat *seat, struct wl_client *client,
			   void (*send)(struct wl_resource *res, void *data), void *data);
/* The same for wl_touch (only with opt.seat_touch has the seat any). */
void wlc_seat_touch_send(struct wlc_seat *seat, struct wl_client *client,
			 void (*send)(struct wl_resource *res, void *data), void *data);

/* ---- wl_data_device_manager (wlc_data_device.c) ------------------------------- */

struct wlc_data_device;
struct wlc_data_device *wlc_data_device_create(struct wlc_comp *comp);
void wlc_data_device_destroy(struct wlc_data_device *dd);
/*
 * The keyboard focus went to `client` (NULL: none): it gets the selection.
 * Called by the seat before its wl_keyboard.enter (dd NULL: nothing).
 */
void wlc_data_device_focus_changed(struct wlc_data_device *dd, struct wl_client *client);

/* ---- xdg-shell (wlc_shell.c) ----------------------------------------------- */

struct wlc_shell;
struct wlc_shell *wlc_shell_create(struct wlc_comp *comp);
void wlc_shell_destroy(struct wlc_shell *shell);
/* xdg_toplevel.close to every toplevel (the example program's first SIGINT); returns how many. */
int wlc_shell_close_all(struct wlc_shell *shell);

/* ---- the output: wl_output and what a repaint answers (wlc_output.c) ------- */

/* width, height: 0 is 640x480; repaint_hz: the refresh it tells (0: none). NULL on failure. */
struct wlc_output;
struct wlc_output *wlc_output_create(struct wl_display *display, uint32_t width, uint32_t height,
				     int repaint_hz);
void wlc_output_destroy(struct wlc_output *o);
/* Answer and destroy the wl_callbacks on `frames` (resource links), done at time_ns. */
void wlc_frames_done(struct wl_list *frames, int64_t time_ns);
/*
 * A repaint at time_ns (CLOCK_MONOTONIC), the msc'th, showed the content
 * these feedbacks wait for: "presented" (the list is emptied).
 */
void wlc_presentation_presented(struct wlc_output *o, struct wl_list *feedbacks, int64_t time_ns,
				uint64_t msc);
/* Content that was never shown: "discarded" (the list is emptied). */
void wlc_presentation_discarded(struct wl_list *feedbacks);
/* A surface (its resource) was mapped (shown) or unmapped: wl_surface.enter / leave
 * for its client's wl_outputs. o NULL: nothing. */
void wlc_output_surface_shown(struct wlc_output *o, struct wl_resource *surface, bool shown);

/* ---- the renderer (wlc_render.c, wlc_render_gl.c) ------------------------- */

enum wlc_renderer_kind {
	WLC_RENDERER_CPU,
	WLC_RENDERER_GL,
};

struct wlc_renderer_impl {
	const char *name;
	/*
	 * Take the content of an applied commit into surf (a copy: the buffer
	 * can be released after it). acquire_fd: the commit's acquire fence
	 * (borrowed; -1: none or signalled) for a renderer that orders its
	 * reads on it. *release_fd: a fence that signals when the copy is
	 * done (owned by the caller), or -1 when it is done already.
	 * Returns 0 or -errno (the surface keeps its previous content).
	 */
	int (*take)(struct wlc_renderer *r, struct wlc_surface *surf, const struct wlc_state *s,
		    int acquire_fd, int *release_fd);
	/* Forget surf's content (the surface goes). */
	void (*surface_destroy)(struct wlc_renderer *r, struct wlc_surface *surf);
	/* Draw the stack (bottom first) into the output image. */
	int (*repaint)(struct wlc_renderer *r, struct wl_list *stack);
	/* Send what repaint() drew on its way (GL: a flush); NULL: nothing to send. */
	void (*submit)(struct wlc_renderer *r);
	/*
	 * The same, with a fence that signals when the repaint is done (owned
	 * by the caller); 0 or -errno (then submitted without one). NULL: none.
	 */
	int (*submit_fence)(struct wlc_renderer *r, int *fence_fd);
	/* The output image as 8-bit RGBA rows, top first (malloc'd). */
	int (*read_pixels)(struct wlc_renderer *r, uint8_t **rgba);
	void (*destroy)(struct wlc_renderer *r);
};

struct wlc_renderer {
	const struct wlc_renderer_impl *impl;
	uint32_t width, height;        /* the output */
	uint32_t background;           /* 0xAARRGGBB */
	dev_t main_device;             /* the render node it imports on (0: none) */
	const struct wlc_format *formats; /* what it imports as dma-bufs */
	size_t nformats;
};

/* The CPU renderer (dma-bufs it can mmap, shm). NULL and *err on failure. */
struct wlc_renderer *wlc_renderer_cpu_create(uint32_t width, uint32_t height, int *err);
/*
 * The GL renderer on an EGL display that imports dma-bufs (common/eglt.c
 * picks it). NULL and *err (-ENODEV: no usable EGL here) on failure.
 */
struct wlc_renderer *wlc_renderer_gl_create(uint32_t width, uint32_t height, int *err);
void wlc_renderer_destroy(struct wlc_renderer *r);
/* Write the output image as a PNG; 0 or -errno. */
int wlc_renderer_screenshot(struct wlc_renderer *r, const char *path);

/* ---- small things --------------------------------------------------------- */

/* Every interface's destroy request: the resource goes (wlc_util.c). */
void wlc_destroy_request(struct wl_client *client, struct wl_resource *resource);

/*
 * Zeroed memory for an object `client` asked for, or NULL once the client
 * was told (wl_client_post_no_memory()) (wlc_util.c).
 */
void *wlc_client_zalloc(struct wl_client *client, size_t size);

/*
 * A new resource with its implementation, or NULL once the client was told
 * (wl_client_post_no_memory()): then data is still the caller's to free.
 */
static inline struct wl_resource *
wlc_resource_new(struct wl_client *client, const struct wl_interface *iface, int version,
		 uint32_t id, const void *impl, void *data, wl_resource_destroy_func_t destroy)
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
 * wlc_resource_new_linked() is wlc_resource_new() with the link inserted
 * after `after` (the list's head: first; head.prev: last) and
 * wlc_resource_unlink() as the destroy handler, which takes it off again
 * (wlc_util.c).
 */
void wlc_resource_unlink(struct wl_resource *res);
struct wl_resource *wlc_resource_new_linked(struct wl_client *client,
					    const struct wl_interface *iface, int version,
					    uint32_t id, const void *impl, void *data,
					    struct wl_list *after);
/*
 * The global that kept `list` goes and its resources stay until their
 * clients go: each is taken off the list (its destroy handler then unlinks
 * nothing) and its user data, which pointed at the global's state, is NULL.
 */
void wlc_resource_list_orphan(struct wl_list *list);
/*
 * send(res, data) for each resource on `list` that belongs to `client`; send
 * must not destroy any.
 */
void wlc_resource_list_send(struct wl_list *list, struct wl_client *client,
			     void (*send)(struct wl_resource *res, void *data), void *data);

/*
 * A memfd holding `size` bytes of `data`, sealed (no shrink, grow or write)
 * for clients to map read-only: the dma-buf format table, the keymap.
 * Returns the fd (CLOEXEC, the caller's) or -errno (nothing to close).
 */
int wlc_sealed_memfd(const char *name, const void *data, size_t size);

#endif
