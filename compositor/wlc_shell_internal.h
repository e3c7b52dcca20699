/* SPDX-License-Identifier: MIT */
/*
 * What the example compositor's xdg-shell files share and nobody else uses,
 * bottom up:
 *   wlc_shell_ping.c       xdg_wm_base.ping: the timer and the pong
 *   wlc_shell_configure.c  an xdg_surface's configure sequence and its reset
 *                           (what the role objects share)
 *   wlc_shell_toplevel.c   xdg_toplevel
 *   wlc_shell_popup.c      xdg_positioner and xdg_popup
 *   wlc_shell.c            the global, xdg_wm_base (ping), xdg_surface, the
 *                           role hooks: calls down into the others
 * The toplevel and popup files call only the configure file, never each
 * other or wlc_shell.c.
 */
#ifndef WLC_SHELL_INTERNAL_H
#define WLC_SHELL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <wayland-server-core.h>

#include "wlc_internal.h"

enum {
	STATE_MAXIMIZED = 1u << 0,
	STATE_FULLSCREEN = 1u << 1,
};

struct wlc_shell {
	struct wlc_comp *comp;
	struct wl_global *global;
	struct wl_list toplevels; /* toplevel.link */
	struct wl_list popups;    /* popup.link */
	unsigned placed;          /* toplevels placed so far: the cascade */
	struct wlc_ping_stats pings;
};

/* One bound xdg_wm_base. */
struct wm_base {
	struct wlc_shell *shell;
	struct wl_resource *resource;
	struct wl_list surfaces; /* xdg_surface.link */
	struct wl_event_source *ping_timer;
	uint32_t ping_serial;
	bool ping_pending;
	int ping_rechecks;    /* shell_ping_timer(): looks for a pong sent but unread */
	int64_t ping_sent_ns; /* now_ns() at the pending ping */
	bool not_responding;  /* the pending ping is past the timeout (no disconnect) */
	bool unresponsive;    /* disconnected for it (opt.ping_disconnect) */
};

struct positioner_rules {
	int32_t width, height;
	int32_t anchor_x, anchor_y, anchor_w, anchor_h;
	bool has_size, has_anchor_rect;
	uint32_t anchor, gravity, constraint_adjustment;
	int32_t offset_x, offset_y;
	bool reactive;
	int32_t parent_w, parent_h;
	uint32_t parent_configure;
};

struct configure {
	struct wl_list link;
	uint32_t serial;
	uint32_t states; /* STATE_* */
};

struct geometry {
	int32_t x, y, width, height;
	bool set;
};

struct xdg_surface {
	struct wlc_shell *shell;
	struct wm_base *base;       /* NULL once the xdg_wm_base is gone */
	struct wl_list link;        /* base->surfaces */
	struct wl_resource *resource;
	struct wlc_surface *surf;  /* NULL once the wl_surface is gone */
	struct wl_listener surface_destroy;
	struct toplevel *toplevel;  /* the role object, NULL: none (yet) */
	struct popup *popup;
	bool initial_committed;     /* the initial commit came: configures flow */
	bool configured;            /* a configure was acked since */
	struct wl_list configures;  /* struct configure, oldest first: sent, not acked */
	unsigned n_configures;
	uint32_t acked_states;      /* what the last ack answered, latched at commit */
	uint32_t states;            /* the committed ones */
	struct geometry pending_geom, geom;
};

struct toplevel {
	struct wlc_shell *shell;
	struct xdg_surface *xs;     /* NULL once the xdg_surface is gone */
	struct wl_resource *resource;
	struct wl_list link;        /* shell->toplevels */
	struct toplevel *parent;
	char *title, *app_id;
	uint32_t requested;         /* STATE_* the client asked for */
	int32_t pending_min[2], pending_max[2], min[2], max[2];
	bool placed;                /* x, y: its place when neither maximized nor fullscreen */
	int32_t x, y;
	bool caps_sent;
};

struct popup {
	struct wlc_shell *shell;
	struct xdg_surface *xs;     /* NULL once the xdg_surface is gone */
	struct wl_resource *resource;
	struct wl_list link;        /* shell->popups */
	struct xdg_surface *parent; /* NULL: none, or it went */
	bool parent_given;          /* at get_popup */
	struct positioner_rules rules;
	bool dismissed;             /* popup_done sent: never mapped again */
};


/* An xdg_wm_base error about xs: on its xdg_wm_base, or where that went on xs itself
 * (wlc_shell_configure.c, the shell's bottom). */
void shell_post_base_error(struct xdg_surface *xs, uint32_t code, const char *msg);

/* ---- xdg_wm_base.ping (wlc_shell_ping.c) ------------------------------------ */

/* The next ping, ping_timeout_ms / 2 from now (after the first xdg_surface, the last pong). */
void shell_ping_arm(struct wm_base *b);
/* wm_base.ping_timer's handler: a ping due, or one unanswered for too long. */
int shell_ping_timer(void *data);
/* xdg_wm_base.pong */
void shell_ping_pong(struct wl_client *client, struct wl_resource *res, uint32_t serial);

/* ---- configure sequences (wlc_shell_configure.c) ----------------------------- */

/*
 * A configure sequence is the role's events between these two:
 * shell_configure_begin() gives the new configure (with its serial), or NULL
 * where none is sent (no initial commit yet, no role object, or out of
 * memory: the client was told); shell_configure_end() remembers it until
 * acked and sends xdg_surface.configure.
 */
struct configure *shell_configure_begin(struct xdg_surface *xs);
void shell_configure_end(struct xdg_surface *xs, struct configure *c);
/* Forget the configures sent and not acked. */
void shell_configure_clear(struct xdg_surface *xs);
/*
 * Back to the state right after get_toplevel / get_popup, as far as the
 * xdg_surface goes (the toplevel's part: shell_toplevel_reset()).
 */
void shell_configure_reset(struct xdg_surface *xs);

/* ---- xdg_toplevel (wlc_shell_toplevel.c) ------------------------------------- */

/* get_toplevel's role object, once the request was checked and the role given. */
void shell_toplevel_create(struct xdg_surface *xs, struct wl_client *client, int version,
			   uint32_t id);
/* A configure sequence with the requested states. */
void shell_toplevel_configure(struct toplevel *tl);
/* Put it on the output (surf->x, y), on each applied commit with a buffer. */
void shell_toplevel_place(struct toplevel *tl);
/* The toplevel's part of a reset: its attributes are discarded. */
void shell_toplevel_reset(struct toplevel *tl);

/* ---- xdg_positioner, xdg_popup (wlc_shell_popup.c) --------------------------- */

/* xdg_wm_base.create_positioner */
void shell_positioner_create(struct wl_client *client, struct wl_resource *res, uint32_t id);
/* A complete positioner's rules into *out; false after posting invalid_positioner. */
bool shell_positioner_take(struct xdg_surface *xs, struct wl_resource *res,
			   struct positioner_rules *out);
/* get_popup's role object, once the request was checked and the role given. */
void shell_popup_create(struct xdg_surface *xs, struct wl_client *client, int version, uint32_t id,
			struct xdg_surface *parent, const struct positioner_rules *rules);
/* A configure sequence with the popup's place. */
void shell_popup_configure(struct popup *popup);
/* Put it on the output (surf->x, y), on each applied commit with a buffer. */
void shell_popup_place(struct popup *popup);
/* parent's xdg_surface goes: the popups on it lose their parent, and the screen. */
void shell_popup_parent_gone(struct wlc_shell *shell, struct xdg_surface *parent);

#endif
