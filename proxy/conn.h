/* SPDX-License-Identifier: MIT */
/*
 * One client of the proxy: its socket, the proxy's own connection to the
 * compositor for it, the four buffers between them, and the object map both
 * sides share (docs/wl-proxy.md, "Object ids").
 *
 * The files, top down (each calls only those below it): main.c (options,
 * sockets, poll), relay.c (a connection's life, the compositor's events),
 * client.c (the client's requests), sync.c (linux-drm-syncobj-v1 by the
 * proxy), conn.c (the object map, protocol errors), then io.c, wire.c,
 * proto.c and log.c.
 */
#ifndef PXY_CONN_H
#define PXY_CONN_H

#include "proxy.h"

/* Ids the server allocates start here (libwayland's WL_SERVER_ID_START). */
#define PXY_SERVER_ID_START 0xff000000u
/* The registry name of the proxy's own wp_linux_drm_syncobj_manager_v1. */
#define PXY_SYNCOBJ_GLOBAL_NAME 0xff5b0001u

/* How much a side may have buffered: a held client fills cin, then its socket. */
#define PXY_IN_LIMIT (256 * 1024)
#define PXY_OUT_LIMIT (4 * 1024 * 1024)
#define PXY_IN_FD_LIMIT 256

/* wl_display's error codes (wayland.xml). */
#define PXY_ERR_INVALID_OBJECT 0
#define PXY_ERR_INVALID_METHOD 1
#define PXY_ERR_IMPLEMENTATION 3

struct sb_syncobj_waiter;

/* What the proxy knows about the protocols, shared by every connection. */
struct pxy_ctx {
	struct pxy_protocols protocols;
	const struct pxy_iface *display, *registry, *callback, *surface, *buffer;
	const struct pxy_iface *params, *sync_manager, *sync_timeline, *sync_surface;
	int op_bind, op_attach, op_commit, op_surface_destroy;
	int op_params_add, op_params_create_immed;
	int op_buffer_release, op_params_created, op_global;
	bool emulate;   /* offer wp_linux_drm_syncobj_manager_v1 ourselves */
	bool no_wait;   /* --no-wait: forward commits at once */
	int drm_fd;     /* owned: the render node timelines are imported on, or -1 */
};

/* Looks the interfaces and opcodes up; 0, or -ENOENT when wayland.xml is missing. */
int pxy_ctx_init(struct pxy_ctx *ctx);

struct pxy_obj {
	const struct pxy_iface *iface; /* NULL: no object */
	uint32_t version;
	bool local;                    /* implemented by the proxy (sync.c) */
	void *data;                    /* sync.c's state for it, or NULL */
	/* placeholder wl_callbacks (see conn.c) whose done / delete_id are due */
	uint16_t ph_done, ph_delete;
};

struct pxy_conn {
	struct pxy_ctx *ctx;
	unsigned serial;            /* for the log */
	int cfd, sfd;               /* owned: the client's socket, ours to the compositor */
	struct pxy_buf cin, cout, sin, sout;
	struct pxy_obj *cmap, *smap; /* indexed by id, and by id - PXY_SERVER_ID_START */
	size_t n_cmap, n_smap;
	uint32_t cnext, snext;      /* the highest new id of each range + 1 (as libwayland) */
	struct sb_syncobj_waiter *held; /* the commit at cin's front waits for it */
	bool resume;                /* forward the message at cin's front as it is */
	size_t scan_off, scan_fds;  /* held: how far pass_pongs() has looked (bytes, fds) */
	unsigned pongs_passed;      /* held: pongs (and round trips) sent ahead of the commit */
	bool closing;               /* cut off: flush cout, then close */
	bool dead;                  /* closed: free it */
	void *sync;                 /* sync.c's per-connection state */
	/* What an object's data needs when it leaves the map (relay.c sets sync.c's). */
	void (*obj_gone)(struct pxy_conn *c, struct pxy_obj *o);
};

/* A connection for the accepted socket cfd (owned from now on, also on failure). */
struct pxy_conn *pxy_conn_create(struct pxy_ctx *ctx, int cfd, const char *display,
				 unsigned serial);
/* The same with the compositor's socket sfd already connected (owned from now on). */
struct pxy_conn *pxy_conn_create_fds(struct pxy_ctx *ctx, int cfd, int sfd, unsigned serial);
void pxy_conn_destroy(struct pxy_conn *c);
/* poll() events for the two sockets and the held commit's waiter fd (-1: none). */
void pxy_conn_poll_events(const struct pxy_conn *c, short *cev, short *sev, int *waiter_fd);
/* Act on poll()'s revents; afterwards c->dead says whether to destroy it. */
void pxy_conn_dispatch(struct pxy_conn *c, short crev, short srev, bool waiter_ready);
/* Process what cin (client.c) / sin (relay.c) hold (used by dispatch and by the fuzz target). */
void pxy_conn_process_client(struct pxy_conn *c);
void pxy_conn_process_server(struct pxy_conn *c);

struct pxy_obj *pxy_conn_obj(struct pxy_conn *c, uint32_t id);
/* Raise a protocol error on the client: wl_display.error, then cut off. */
void pxy_conn_fatal(struct pxy_conn *c, uint32_t object, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* An object of the proxy's own (client id space), with its placeholder at the compositor. */
int pxy_conn_add_local(struct pxy_conn *c, uint32_t id, const struct pxy_iface *iface,
		       void *data);
/* Its destructor: gone from the map, wl_display.delete_id to the client. */
void pxy_conn_remove_local(struct pxy_conn *c, uint32_t id);
/* The new objects a message creates, in the map. 0, or <0 after pxy_conn_fatal. */
int pxy_conn_add_new_ids(struct pxy_conn *c, const struct pxy_obj *parent,
			 const struct pxy_msg *m, const struct pxy_parsed *p, bool from_client);
/* An object leaves the map (its placeholder counters stay). */
void pxy_conn_obj_clear(struct pxy_conn *c, struct pxy_obj *o);
/* A message of the proxy's own to the client. */
void pxy_conn_send_client(struct pxy_conn *c, const uint8_t *msg, size_t n);

/* sync.c: linux-drm-syncobj-v1 by the proxy. */
int pxy_sync_init(struct pxy_conn *c);
void pxy_sync_finish(struct pxy_conn *c);
/* A request to one of its objects (all consumed here). 0, or <0 after pxy_conn_fatal. */
int pxy_sync_local_request(struct pxy_conn *c, uint32_t id, struct pxy_obj *o,
			   const struct pxy_parsed *p);
/* wl_registry.bind of PXY_SYNCOBJ_GLOBAL_NAME. */
int pxy_sync_bind(struct pxy_conn *c, const struct pxy_parsed *p);
/* A request forwarded to the compositor: 0 forward, 1 hold (c->held set), <0 cut off. */
int pxy_sync_client_msg(struct pxy_conn *c, struct pxy_obj *o, const struct pxy_parsed *p);
/* An event from the compositor, before it is forwarded. 0, or <0 cut off. */
int pxy_sync_server_msg(struct pxy_conn *c, struct pxy_obj *o, const struct pxy_parsed *p);
/* The held commit's waiter fired: drop it (and forward the commit). */
void pxy_sync_unhold(struct pxy_conn *c);
/* An object leaves the map: free what sync.c kept for it. */
void pxy_sync_obj_gone(struct pxy_conn *c, struct pxy_obj *o);

#endif
