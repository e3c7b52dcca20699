/* SPDX-License-Identifier: MIT */
/*
 * The fuzz target's two halves (wl_server_requests.c tells the story): the
 * client the input drives (wl_server_requests.c) and the compositor under
 * test with the invariants it is held to (wl_fuzz_server.c).
 */
#ifndef SB_WL_FUZZ_H
#define SB_WL_FUZZ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct wl_client;

#define NS 4  /* surfaces */
#define NT 4  /* timelines */
#define NB 4  /* buffers */
#define NR 8  /* release objects */
#define NC 8  /* frame callbacks */
#define NF 64 /* fences per input */
#define NQ 32 /* commits with a buffer remembered per surface */

#define fail(...) do { fprintf(stderr, "INVARIANT: " __VA_ARGS__); fputc('\n', stderr); abort(); } while (0)

struct acq {          /* what a commit's buffer must wait for */
	int sync_file;    /* fake sync_file id, or -1 */
	bool implicit_done; /* an implicit fence already complete at commit: not reported */
	int syncobj;      /* fake syncobj id, or -1 */
	uint64_t point;
};

struct surf_queue {   /* per surface id: commits with a buffer, in order */
	uint32_t id;
	struct wl_client *client;
	struct acq q[NQ];
	int head, n;
};

struct server {
	struct wlc_comp *comp;
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct sb_wl_server *helper;
	bool holds;
	struct surf_queue queues[NS * 4];
};

/* The compositor of this input (server_get()). */
extern struct server *srv;

/* Compositor `variant` (0: holding, 1: SB_WL_SERVER_NO_WAIT), made on first use. */
struct server *server_get(int variant);
/* The commits tracked for a client's surface (create: a free queue for it), or NULL. */
struct surf_queue *queue_of(struct wl_client *client, uint32_t id, bool create);
/* Forget every queue of a client that is gone. */
void queues_forget(struct wl_client *client);
/* Remember this process's fds before an input ... */
void fds_baseline(void);
/* ... and after it, with the client gone: nothing left in the helper, the same fds. */
void check_clean(void);

#endif
