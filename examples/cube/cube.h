/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-cube: what the producer and the consumer processes share
 * (see cube.c for the whole picture).
 */
#ifndef SB_DEMO_CUBE_H
#define SB_DEMO_CUBE_H

#include <stdbool.h>
#include <stdint.h>

#include "demo_util.h" /* struct demo_sheet */

#define CUBE_MAX_BUFFERS 8

struct cube_options {
	unsigned frames;
	unsigned buffers;   /* ring size */
	uint32_t width, height;
	unsigned work;      /* fragment shader iterations */
	unsigned refresh_ms; /* the consumer composites on this clock (0: at once) */
	bool no_bridge;     /* SYNCBRIDGE_DISABLE=1: no layer, EGL bridge off */
	bool cpu_sync;      /* no bridge; CPU stalls instead: vkQueueWaitIdle after the
			     * producer's submit, glFinish before the consumer's release */
	bool flush;         /* gles, no bridge: glFlush before the hand-off */
	bool no_check;      /* no read back: only count and time the frames */
	bool intervals;     /* print every frame-to-frame interval (bench/vk_cube.c) */
	bool expect_race;   /* exit 0 only if torn + stale > 0 (the control) */
	const char *consumer; /* "egl" or "vulkan" */
	const char *producer; /* "vulkan" (vgem ring, lavapipe) or "gles" (the GPU's
			       * own textures: Mesa virgl in the GPU guest) */
	bool ring_device;   /* vulkan producer: the driver's own images, exported
			     * (venus cannot import vgem buffers), not vgem's */
	const char *output; /* folder for PNGs, or NULL */
	const char *layer_dir; /* XDG data dir with the layer's manifest, or NULL */
	bool verbose;
};

/* Messages on the SOCK_SEQPACKET socket between the two processes. */
enum cube_msg_type {
	CUBE_MSG_BUFFERS = 1, /* producer → consumer: the ring, fds attached */
	CUBE_MSG_FRAME,       /* producer → consumer: frame N is in buffer I */
	CUBE_MSG_RELEASE,     /* consumer → producer: done with buffer I */
	CUBE_MSG_END,         /* producer → consumer: no more frames */
	CUBE_MSG_READY,       /* consumer → producer: buffers imported */
};

struct cube_msg {
	uint32_t type;
	uint32_t frame;
	uint32_t index;
	uint32_t count;       /* BUFFERS: number of fds */
	uint32_t width, height;
	uint32_t pitch, offset; /* BUFFERS: LINEAR layout of every buffer */
	uint32_t drm_format;  /* BUFFERS: DRM_FORMAT_ARGB8888 (vulkan) or the GPU's */
	uint32_t pad;
	uint64_t size;        /* BUFFERS: bytes per buffer (0: not known) */
	uint64_t modifier;    /* BUFFERS: DRM_FORMAT_MOD_INVALID (none given) or the GPU's */
	int64_t submit_ns;    /* FRAME: when the frame was handed off: vkQueueSubmit or
			       * sb_egl_dmabuf_attach returned (CLOCK_MONOTONIC) */
};

/*
 * Every pixel's alpha says which frame finished it: frame N's stamp pass,
 * drawn last, writes cube_stamp(N) (1..254). The clear writes CUBE_ALPHA_CLEAR
 * (a frame in progress), and the producer fills new buffers with
 * CUBE_ALPHA_INITIAL (nothing rendered yet).
 */
#define CUBE_ALPHA_CLEAR 0
#define CUBE_ALPHA_INITIAL 255

static inline uint8_t
cube_stamp(unsigned frame)
{
	return (uint8_t)(frame % 254 + 1);
}

/*
 * The producers: run until all frames are sent; 0 or a negative errno
 * (-ENODEV: cannot run here). Vulkan (producer.c) or GLES (producer_gles.c).
 */
/* The consumer's counts and pictures over a run (consume.c). */
struct cube_run {
	const struct cube_options *opt;
	unsigned frames, torn, stale;
	double latency_ms_sum;     /* vkQueueSubmit returned → consumer started reading */
	int64_t *done_ns;          /* per frame: composited (and finished), before its release */
	int first_torn, first_stale;
	unsigned torn_saved; /* torn frames saved that show part of their frame */
	struct demo_sheet sheet;
	unsigned sheet_cells;
	bool venus; /* the consumer's Vulkan device is Mesa's venus */
};

/* done_ns for every frame; with --output, the folder and the contact sheet. 0 or -errno. */
int cube_run_init(struct cube_run *run, const struct cube_options *opt);
/* With --output, contact-sheet.png from the cells filled; frees the sheet. */
void cube_run_write_sheet(struct cube_run *run);
/*
 * The consumer (the parent process), on sock to the producer: until the
 * producer's END, or an error (said on stderr; -ENODEV: no such consumer here).
 */
int cube_consume(int sock, const struct cube_options *opt, struct cube_run *run);
/* `rate: fps=F frames=N seconds=S interval_ms median M p90 P` (and --intervals). */
void cube_print_rate(const struct cube_options *opt, const struct cube_run *run);

int cube_producer_run(int sock, const struct cube_options *opt);
int cube_producer_gles_run(int sock, const struct cube_options *opt);

/* How long a producer waits for the consumer before it gives up. */
#define CUBE_RELEASE_TIMEOUT_MS 60000
/*
 * How long each side waits for the other to start (its Vulkan or EGL device
 * up, the ring made or imported): venus under TCG in TCG took over 60 s per
 * device. A side that dies is seen at once (the socket closes), so this
 * bound only matters for a hung one.
 */
#define CUBE_START_TIMEOUT_MS 600000

/*
 * The producers' side of the protocol: `free[i]` says whether the consumer
 * has released buffer i (or never had it); read RELEASE messages until buffer
 * `want` is free. 0 or a negative errno (said on stderr).
 */
int cube_wait_free(int sock, const struct cube_options *opt, bool *free, unsigned want);
/* Send BUFFERS (m, with opt->buffers fds; the type, count and size in pixels
 * filled in from opt here, the layout the caller's) and wait for READY.
 * 0 or a negative errno. */
int cube_send_ring(int sock, const struct cube_options *opt, struct cube_msg *m, const int *fds);
/* Send FRAME: frame number `frame` is in buffer `index`, handed off at
 * submit_ns. 0 or a negative errno (said on stderr). */
int cube_send_frame(int sock, unsigned frame, unsigned index, int64_t submit_ns);
/* Send END and keep the socket open until the consumer closes its end. */
int cube_send_end(int sock, const struct cube_options *opt);

/* What a consumer reads for one frame: the composited pixels, RGBA, rows top first. */
struct cube_consumer;
struct cube_buffers {
	int fds[CUBE_MAX_BUFFERS]; /* owned by the consumer backend after init */
	unsigned count;
	uint32_t width, height, pitch, offset, drm_format;
	uint64_t size, modifier;
};

/* Move from's fds into *to (to's to close now; from keeps none). */
void cube_buffers_take(struct cube_buffers *to, struct cube_buffers *from);
/* Close every fd of b (each -1 after). */
void cube_buffers_close(struct cube_buffers *b);

/* A consumer backend: EGL/GLES (consumer_egl.c) or Vulkan (consumer_vk.c). */
struct cube_backend {
	const char *name;
	/*
	 * Bring the device up (Vulkan instance and device, or EGL display and
	 * context) before the ring arrives, while the producer brings up its
	 * own: on venus each takes minutes under TCG. 0 or -errno (-ENODEV:
	 * no such consumer here, the demo skips).
	 */
	int (*open)(struct cube_consumer **out, const struct cube_options *opt);
	/* Import the ring; takes ownership of bufs->fds on success and failure. */
	int (*import)(struct cube_consumer *c, struct cube_buffers *bufs);
	/*
	 * Before reading buffer `index`: wait for its writers (through the
	 * bridge), composite it into the backend's own target, and make the
	 * buffer's later writers wait for this read. Returns 0 or -errno.
	 */
	int (*composite)(struct cube_consumer *c, unsigned index);
	/* --cpu-sync: wait on the CPU until the composite is done (glFinish). */
	int (*finish)(struct cube_consumer *c);
	/* The composited pixels (RGBA8, width*4 bytes per row, memory row order). */
	int (*read_back)(struct cube_consumer *c, uint8_t *rgba);
	/* One line describing the bridge path (e.g. GPU-side waits). */
	const char *(*describe)(struct cube_consumer *c);
	/* Whether the consumer's device is Mesa's venus (its driverID): venus
	 * keeps one signalled sync_file per process (cube.c's fd check). */
	bool (*on_venus)(const struct cube_consumer *c);
	void (*destroy)(struct cube_consumer *c);
};

/*
 * A backend's table from its file's static functions, which every consumer
 * file names alike: consumer_init, consumer_composite, consumer_finish,
 * consumer_read_back, consumer_describe, consumer_on_venus, consumer_destroy.
 */
#define CUBE_BACKEND(backend_name)                                                         \
	{ .name = (backend_name), .open = consumer_open, .import = consumer_import,        \
	  .composite = consumer_composite, .finish = consumer_finish,                      \
	  .read_back = consumer_read_back,                                                 \
	  .describe = consumer_describe, .on_venus = consumer_on_venus,                    \
	  .destroy = consumer_destroy }

extern const struct cube_backend cube_backend_egl;
extern const struct cube_backend cube_backend_vulkan;

#endif
