/* SPDX-License-Identifier: MIT */
/*
 * What wl-xdg-shell's files share (xdg_shell.c: the raw client, its windows,
 * the compositor-side lookup, main; xdg_shell_cases.c: the life of toplevels
 * and popups, pings, fds; xdg_shell_errors.c: every protocol error).
 */
#ifndef XDG_SHELL_TEST_H
#define XDG_SHELL_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include "wlt.h"
#include "xdg-shell-client-protocol.h"

#define WANT_VERSION 6
#define PING_MS 200

struct xc {
	struct wlt_client c;
	struct wl_registry *registry;
	struct xdg_wm_base *base;
	uint32_t base_version, advertised;
	struct wl_seat *seat;
	enum { PONG, NO_PONG, WRONG_PONG } pong;
	int pings;
	uint32_t last_ping; /* its serial */
};

struct win {
	struct wl_surface *s;
	struct xdg_surface *xs;
	struct xdg_toplevel *tl;
	struct xdg_popup *popup;
	int configures;              /* xdg_surface.configure events */
	uint32_t serial;             /* the last one's */
	int32_t width, height;       /* the last role configure's */
	bool activated, maximized, fullscreen;
	int caps, bounds;            /* wm_capabilities, configure_bounds events */
	bool role_event_first;       /* the role's events came before xdg_surface.configure */
	int role_events;             /* since the last xdg_surface.configure */
	bool closed, popup_done;
	int32_t px, py;              /* xdg_popup.configure */
	uint32_t repositioned;       /* its token, 0: none */
	uint32_t content;            /* the last buffer's first word */
};

struct lookup {
	struct wl_client *client;
	uint32_t id;
	bool found, mapped;
	int32_t x, y;
};

extern struct wlt_comp *comp; /* the compositor the cases talk to */
extern uint32_t next_content;
extern int connect_pong; /* how the next xc_connect()'s client answers pings */
extern const struct xdg_toplevel_listener tl_listener; /* a struct win's toplevel events */

void xc_connect(struct xc *x, uint32_t version);
void xc_disconnect(struct xc *x);
void xc_connect_toplevel(struct xc *x, struct win *w);
void expect_error(struct xc *x, const char *what, const struct wl_interface *iface, uint32_t id, uint32_t code);
bool expect_ok(struct xc *x, const char *what);
uint32_t id_of(void *proxy);
void destroy_keeping_proxy(void *proxy, uint32_t opcode);
void win_xdg(struct xc *x, struct win *w);
void win_toplevel(struct xc *x, struct win *w);
void win_ack_commit(struct xc *x, struct win *w);
void win_mapped(struct xc *x, struct win *w);
void win_destroy(struct win *w);
void xc_destroy_base(struct xc *x);
struct xdg_positioner *positioner(struct xc *x, int32_t w, int32_t h, int32_t ax, int32_t ay, int32_t aw, int32_t ah);
void win_popup(struct xc *x, struct win *w, struct win *parent, struct xdg_positioner *pos);
bool comp_surface(uint32_t content, struct lookup *l);
void comp_surface_again(struct lookup *l);
void xc_connect_popup(struct xc *x, struct win *t, struct win *p, bool anchored);

/*
 * harness.h's counters are per file: each file's runner hands its checks and
 * failures to these at its end (XDGT_FLUSH), main() adds them before it
 * finishes, so a failure anywhere fails the program.
 */
extern int xdgt_checks, xdgt_failures;
#define XDGT_FLUSH()                                   \
	do {                                           \
		xdgt_checks += tb_checks;         \
		xdgt_failures += tb_failures;     \
		tb_checks = tb_failures = 0; \
	} while (0)

void xdgt_cases(void);
void xdgt_errors(void);
void xdgt_pings(void);
void xdgt_ping_marks(void);
void xdgt_fds(void);

#endif
