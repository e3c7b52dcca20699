/* SPDX-License-Identifier: MIT */
/*
 * doctor's Wayland probe (docs/inspect.md, "doctor: the compositor and
 * PipeWire"): which explicit-sync protocols the running compositor offers.
 * It connects where a client of this environment would (WAYLAND_SOCKET, else
 * WAYLAND_DISPLAY, resolved as libwayland resolves it), lists the globals in
 * one roundtrip and disconnects. Bounded: a compositor that accepts and never
 * answers is given up after the timeout.
 */
#ifndef INFO_DOCTOR_WL_H
#define INFO_DOCTOR_WL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct json_object;

struct doctor_wl {
	bool asked;                 /* WAYLAND_DISPLAY (or WAYLAND_SOCKET) was set */
	bool connected;             /* the compositor answered the registry roundtrip */
	char socket[256];           /* the socket path tried ("WAYLAND_SOCKET=N" for an fd) */
	char compositor[64];  /* the server process's name (SO_PEERCRED -> /proc/PID/comm), or "" */
	uint32_t syncobj_v1;  /* wp_linux_drm_syncobj_manager_v1 version offered, 0 when absent */
	uint32_t explicit_v1; /* zwp_linux_explicit_synchronization_v1 version, 0 when absent */
	uint32_t dmabuf;            /* zwp_linux_dmabuf_v1 version, 0 when absent */
	char why[256];              /* why not asked / not connected; "" otherwise */
	/* additions */
	int compositor_pid;         /* SO_PEERCRED's pid, 0 when unknown (another pid namespace) */
	uint32_t globals;           /* how many globals the registry listed */
	int elapsed_ms;             /* connect to answer (or to giving up) */
};

/*
 * Fill *wl (zeroed first). timeout_ms bounds the connect and the roundtrip
 * together. May consume WAYLAND_SOCKET (takes the fd and unsets the
 * variable, as wl_display_connect(NULL) does). Never fails: what could not be
 * learnt is said in wl->why. Opens and closes its own socket; no fd survives.
 */
void doctor_wl_probe(struct doctor_wl *wl, int timeout_ms);

/* A new JSON object, keys the field names; the caller owns it. */
struct json_object *doctor_wl_json(const struct doctor_wl *wl);

/* A few lines of text for a person. */
void doctor_wl_print(FILE *f, const struct doctor_wl *wl);

#endif
