/* SPDX-License-Identifier: MIT */
/*
 * Scaffolding of the Wayland tests (tests/wayland): a raw-protocol client
 * (libwayland-client and the generated protocol code only — never the client
 * helper, so it speaks to the compositor the way an unknown client would),
 * the example compositor as a child process, or on a thread of this process
 * with its hooks recorded (wlt_comp.c), and the kernel objects the VM-tier
 * programs share.
 */
#ifndef SB_WLT_H
#define SB_WLT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <wayland-client.h>

struct wl_event_source;

#include "linux-dmabuf-v1-client-protocol.h"
#include "linux-drm-syncobj-v1-client-protocol.h"
#include "linux-explicit-synchronization-unstable-v1-client-protocol.h"
#include "kernel.h" /* now_ns(): the clock every wlt timeout is on */
#include "wlc_compositor.h"
#include "wlc_test.h"

#define WLT_MS (INT64_C(1000000))

/* ---- a raw client ---------------------------------------------------------- */

struct wlt_client {
	struct wl_display *display;
	struct wl_registry *registry;
	struct wl_compositor *compositor;
	struct wl_subcompositor *subcompositor;
	struct wl_shm *shm;
	struct zwp_linux_dmabuf_v1 *dmabuf;
	struct zwp_linux_explicit_synchronization_v1 *explicit_sync;
	struct wp_linux_drm_syncobj_manager_v1 *syncobj;
};

/* Connect to `socket` (NULL: $WAYLAND_DISPLAY) and bind every global we know. */
int wlt_client_connect(struct wlt_client *c, const char *socket);
void wlt_client_disconnect(struct wlt_client *c);

/*
 * A new DRM syncobj on drm_fd (its handle), and a syncobj imported as a
 * wp_linux_drm_syncobj_timeline_v1 (through a temporary fd). Each bails out
 * of the program ("Bail out! ...", exit status 1, as REQUIRE does) when the
 * kernel refuses: the tests using them cannot go on without.
 */
uint32_t wlt_syncobj_create(int drm_fd);
void wlt_syncobj_destroy(int drm_fd, uint32_t handle);
struct wp_linux_drm_syncobj_timeline_v1 *wlt_timeline_import(struct wlt_client *c, int drm_fd,
							     uint32_t handle);
/* Both: a new syncobj imported as a timeline. Its handle goes to *handle, or
 * with handle NULL is destroyed again (the compositor's import keeps it). */
struct wp_linux_drm_syncobj_timeline_v1 *wlt_timeline_new(struct wlt_client *c, int drm_fd,
							  uint32_t *handle);

/*
 * The VM tier's devices: vgem's card node (buffers, fences) and two
 * virtio_gpu render nodes, the client's and the compositor's (timeline
 * syncobjs). wlt_devices_open() skips the test (exit 77, "no vgem node")
 * without vgem; the flags say what else to open; it returns whether both
 * virtio_gpu nodes are open. A node not opened or missing is -1.
 */
struct wlt_devices {
	int vgem;
	int vgem_render; /* WLT_DEV_RENDER_VGEM: another vgem fd, the compositor's render fences */
	int client_drm, comp_drm;
};
#define WLT_DEV_RENDER_VGEM (1u << 0)
#define WLT_DEV_DRM (1u << 1)          /* the virtio_gpu nodes where there are some */
#define WLT_DEV_DRM_REQUIRED (1u << 2) /* ... else skip the test: "no DRM node with timeline syncobjs" */
bool wlt_devices_open(struct wlt_devices *d, unsigned flags);
/* Close what is open (after the compositor and the buffers that borrow them). */
void wlt_devices_close(struct wlt_devices *d);

/* A 16x16 XRGB8888 wl_shm buffer whose first word is `content`. */
struct wl_buffer *wlt_shm_buffer(struct wlt_client *c, uint32_t content);
/* A wl_buffer over a single-plane LINEAR XRGB8888 dma-buf (create_immed); NULL on failure. */
struct wl_buffer *wlt_dmabuf_buffer(struct wlt_client *c, int dmabuf_fd, uint32_t width,
				    uint32_t height, uint32_t stride);

/*
 * A roundtrip that reports a protocol error: returns 0 when the connection is
 * healthy, else fills iface/code/id and returns -1. When the connection
 * failed without a protocol error, iface names the errno instead, e.g.
 * "(no protocol error: ECONNRESET)", and code is 0.
 */
int wlt_roundtrip_error(struct wlt_client *c, const char **iface, uint32_t *code, uint32_t *id);

/* Wait for a wl_callback (frame) to be done, dispatching; returns 0 or -ETIME/-EPIPE. */
int wlt_wait_flag(struct wlt_client *c, bool *flag, int64_t timeout_ns);
/* Create a frame callback that sets *flag when done. */
struct wl_callback *wlt_frame(struct wl_surface *s, bool *flag);

/*
 * A zwp_linux_buffer_release_v1 asked for on `sync` (get_release) and its
 * event recorded: arrived, fenced, and the fence in fd (-1 until then) — the
 * caller's to close, or with close_fence closed at once. proxy is NULL once
 * the event destroyed it.
 */
struct wlt_release {
	struct zwp_linux_buffer_release_v1 *proxy;
	bool arrived, fenced, close_fence;
	int fd;
};
void wlt_release_get(struct wlt_release *rel, struct zwp_linux_surface_synchronization_v1 *sync,
		     bool close_fence);

/* Dispatch whatever arrives within timeout_ns (0: what is there already). */
int wlt_dispatch_for(struct wlt_client *c, int64_t timeout_ns);

/* ---- the example compositor as a child process -------------------------------- */

struct wlt_child {
	pid_t pid;
	char runtime_dir[64];
	char socket[64];
};

/*
 * Start `path` (syncbridge-wl-compositor) with extra args (NULL-terminated)
 * in a fresh XDG_RUNTIME_DIR (this process's XDG_RUNTIME_DIR is set to it
 * too), and wait until it listens. Returns 0 or -errno.
 */
int wlt_child_start(struct wlt_child *ch, const char *path, const char *const *args);
/* SIGTERM, wait; returns the exit status (or 128+signal). */
int wlt_child_stop(struct wlt_child *ch);
/* Open fds of the child (from /proc/PID/fd), or -1. */
int wlt_child_count_fds(const struct wlt_child *ch);

/* ---- the example compositor on a thread (wlt_comp.c) ------------------------------- */

#define WLT_MAX_EVENTS 8192

struct wlt_comp {
	struct wlc_comp *comp;
	pthread_t thread;
	char runtime_dir[64];
	char socket[64];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Recorded by the hooks, under lock. */
	struct wlc_used used[WLT_MAX_EVENTS];
	int n_used;
	struct wlc_released released[WLT_MAX_EVENTS];
	int64_t released_time[WLT_MAX_EVENTS];
	int n_released;
	int64_t render_done[WLT_MAX_EVENTS];
	int n_render_done;
	/* Set keep_first_render_fence (under lock, after wlt_comp_start()) to get
	 * in first_render_fence a close-on-exec duplicate of the first released
	 * commit's render fence (-1 until then; closed by wlt_comp_stop()): the
	 * hook's time is taken after the fence signalled, so only the fence's own
	 * state can tell whether a release came after it. */
	bool keep_first_render_fence;
	int first_render_fence;
	/* Set gate_after_first_release (under lock) to have the compositor
	 * thread close its own gate in the first release hook and hold there,
	 * once the release event is flushed to the clients, before any timer of
	 * its own can fire (wlt_comp_gate_wait() waits for it there;
	 * wlt_comp_gate_open() lets it go on). */
	bool gate_after_first_release;
	/* Totals past WLT_MAX_EVENTS (long runs), and a per-use callback run on
	 * the compositor thread under lock (set it under lock after
	 * wlt_comp_start()). */
	uint64_t total_used, total_released;
	void (*on_used)(void *data, const struct wlc_used *u);
	void *on_used_data;
	/* The gate: while closed, the compositor thread sits in a callback. */
	int gate_pipe[2];
	struct wl_event_source *gate_source;
	bool gate_closed, gate_inside;
	void (*call_fn)(void *data); /* wlt_comp_call() */
	void *call_data;
	/* Set (under lock) to have the compositor tell the helper that its
	 * wl_shm buffers are of this enum sb_wl_buffer_type (0: they are shm),
	 * e.g. SB_WL_BUFFER_EGL: a stand-in for wl_drm buffers. */
	uint32_t shm_buffer_type;
};

/*
 * Options for a compositor on d's devices: its linux-drm-syncobj global on
 * d->comp_drm (-1: none); with render_delay_ms > 0 each use "renders" with a
 * vgem fence on d->vgem_render that signals that much later and is the
 * release's fence (0: released without one); the rest 0, the defaults.
 */
void wlt_comp_options_init(struct wlc_comp_options *opt, const struct wlt_devices *d,
			   int render_delay_ms);
/*
 * Create the compositor (options' hooks are replaced by the recorder) and run
 * it on a new thread. Sets XDG_RUNTIME_DIR and WAYLAND_DISPLAY for this process.
 */
int wlt_comp_start(struct wlt_comp *w, const struct wlc_comp_options *options);
void wlt_comp_stop(struct wlt_comp *w);
/*
 * Stop the compositor thread (it blocks inside an event-loop callback, having
 * finished what it was doing) / let it go on. While closed it reads nothing.
 */
void wlt_comp_gate_close(struct wlt_comp *w);
void wlt_comp_gate_open(struct wlt_comp *w);
/* Wait until the compositor thread is held at the gate (gate_after_first_release). */
void wlt_comp_gate_wait(struct wlt_comp *w);
/* Run fn(data) on the compositor thread (from an event-loop callback) and wait for it. */
void wlt_comp_call(struct wlt_comp *w, void (*fn)(void *data), void *data);
/* Number of buffer uses recorded so far. */
int wlt_comp_n_used(struct wlt_comp *w);
/* Copy the used event for (surface_id, seq) if there is one; returns whether. */
bool wlt_comp_find_used(struct wlt_comp *w, uint32_t surface_id, uint64_t seq, struct wlc_used *out);
/* Wait until at least n uses were recorded; returns 0 or -ETIME. */
int wlt_comp_wait_used(struct wlt_comp *w, int n, int64_t timeout_ns);
/* The same over total_used (not capped at WLT_MAX_EVENTS). */
int wlt_comp_wait_total_used(struct wlt_comp *w, uint64_t n, int64_t timeout_ns);
/* Wait until every use's render fence has fired (the render_done hook); 0 or -ETIME. */
int wlt_comp_wait_renders(struct wlt_comp *w, int64_t timeout_ns);

/* What the compositor thread holds, read with the gate closed (no race). */
struct wlt_comp_sample {
	struct sb_wl_server_stats stats;
	int fds;              /* open fds of this process */
	long rss_kib;         /* VmRSS of this process */
	size_t heap_in_use;   /* mallinfo2().uordblks */
};
void wlt_comp_sample(struct wlt_comp *w, struct wlt_comp_sample *out);
/* Open fds of this process. */
int wlt_count_fds(void);
/* The same, polled until it is `want` or timeout_ns passed: the last count. */
int wlt_count_fds_wait(int want, int64_t timeout_ns);
/*
 * libwayland-server keeps one timerfd per event loop from its first timer on
 * (the render fences' timers): make it now, so that fd counts taken after
 * this do not see it appear.
 */
void wlt_comp_keep_timerfd(struct wlt_comp *w);

/*
 * Destroy whichever of a surface's explicit-sync proxies were made (NULL:
 * skipped), in this order: the v1 buffer release, the v1 surface
 * synchronization, the syncobj surface, the acquire and release timelines.
 */
void wlt_sync_proxies_destroy(struct zwp_linux_buffer_release_v1 *release,
			      struct zwp_linux_surface_synchronization_v1 *sync,
			      struct wp_linux_drm_syncobj_surface_v1 *so,
			      struct wp_linux_drm_syncobj_timeline_v1 *acquire_timeline,
			      struct wp_linux_drm_syncobj_timeline_v1 *release_timeline);

#endif
