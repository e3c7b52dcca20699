/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-camera-pw: a camera across processes through PipeWire,
 * with explicit sync from libsyncbridge-pipewire (docs/demo.md, "The camera
 * across processes"). What its parts share; main.c has the whole picture.
 *
 *   capture.c   vivid (V4L2, YUYV): the camera the producer reads
 *   gpu.c       the producer's "GPU": a thread that copies each frame into
 *               its PipeWire buffer slowly, then signals its fence
 *   producer.c  the producer's stream: the graph's driver
 *   consumer.c  the consumer's stream: wait, convert, release, check
 *   convert.c   the consumer's EGL/GLES stage (YUYV → RGB on llvmpipe)
 *   sheet.c     the contact sheet and single frames as PNG
 *   stream.c    what both streams offer (format, buffers, the timeline node)
 */
#ifndef SB_DEMO_CAMERA_PW_H
#define SB_DEMO_CAMERA_PW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "demo_util.h"

#define PROG "syncbridge-demo-camera-pw"
#define EXIT_USAGE 2
#define EXIT_SKIP 77

#define PRODUCER_NODE "sb-camera-producer"
#define CONSUMER_NODE "sb-camera-consumer"
/* Buffers of the stream: few, so that each is reused often. */
#define STREAM_BUFFERS 4
#define MAX_SLOTS 16

/*
 * The frame number is stamped into the image twice, as a 16-bit barcode of
 * white (1) and black (0) cells across STAMP_ROWS rows: at the top, written
 * with the first half of the frame, and at the bottom, written last. A
 * frame is whole when both read back as its header's seq.
 */
#define STAMP_BITS 16
#define STAMP_ROWS 4

struct options {
	bool producer;
	unsigned frames;   /* consumer: frames to check; producer: 0 = until stopped */
	uint32_t width, height;
	unsigned fps;      /* the camera's frame rate */
	unsigned write_ms; /* the GPU step: the pause between the two halves */
	bool expect_race;
	const char *output;
	bool verbose;
};

/* ---- main.c ---------------------------------------------------------- */

/* Whether SYNCBRIDGE_DISABLE is set (the control run). */
bool bridge_disabled(void);

/* ---- stream.c --------------------------------------------------------- */

struct spa_pod;
struct spa_pod_builder;
struct spa_source;
struct sb_pw_sync;
struct pw_main_loop;
struct pw_loop;
struct pw_stream;
struct pw_stream_events;

/* What each side's process holds the same way: the bridge, the loop, the stream. */
struct stream_side {
	const char *name;          /* "producer" or "consumer", for messages */
	int drm;                   /* the render node the bridge's timelines live on; -1 */
	struct sb_pw_sync *sync;
	struct pw_main_loop *loop;
	struct pw_stream *stream;
	int errors;
};

/* Say what failed (err: ±errno), count it and quit the loop. */
void stream_fail(struct stream_side *side, const char *what, int err);
struct pw_loop *stream_loop(struct stream_side *side);
/*
 * The bridge on the first DRM render node that has timeline syncobjs
 * (-ENODEV when none has: vgem has none, virtio_gpu has), then the main
 * loop, which SIGINT and SIGTERM quit (main() blocked them; the loop reads
 * them). side->name set and side->drm -1 before. Says why on failure.
 */
int stream_side_open(struct stream_side *side);
/*
 * The side's stream, node `node` of media category `category` ("Source",
 * "Capture"), offering the EnumFormat both sides offer (YUY2, width ×
 * height): pw_stream_new_simple() with events and data, then
 * pw_stream_connect() as an output or an input, with `flags`
 * (enum pw_stream_flags). Says why on failure.
 */
int stream_side_connect(struct stream_side *side, const char *node, const char *category,
			const struct pw_stream_events *events, void *data, bool output,
			uint32_t flags, uint32_t width, uint32_t height);
/*
 * Destroy the stream (which removes its buffers), then `own` (a source of
 * the side's on the loop; NULL: none), the loop, the bridge and the node's
 * fd. Safe on a side that stream_side_open() left half made.
 */
void stream_side_close(struct stream_side *side, struct spa_source *own);

/*
 * Answer the negotiated format (width × height) on the side's stream with
 * the Buffers and Meta params: the bridge's (sb_pw_sync_build_params(): explicit
 * sync first, the plain fallback after) and the Header meta that carries the
 * frame number. Fails the side (stream_fail()) if they cannot be built.
 */
void stream_answer_format(struct stream_side *side, uint32_t width, uint32_t height);

/*
 * A side's pw_stream_events, from the static handlers that producer.c and
 * consumer.c name alike: on_state_changed, on_param_changed, on_add_buffer,
 * on_remove_buffer, on_process.
 */
#define STREAM_EVENTS                                                                     \
	{ PW_VERSION_STREAM_EVENTS, .state_changed = on_state_changed,                      \
	  .param_changed = on_param_changed, .add_buffer = on_add_buffer,                   \
	  .remove_buffer = on_remove_buffer, .process = on_process }


/* ---- capture.c ---------------------------------------------------------- */

struct capture;

/*
 * Find vivid, capture YUYV at width × height and fps (best effort), with
 * its test pattern moving so that a torn frame shows. Prints why on failure.
 * Returns 0, -ENODEV (no vivid), or the V4L2 error.
 */
int capture_open(uint32_t width, uint32_t height, unsigned fps, struct capture **out);
/* The V4L2 fd (non-blocking), for the loop: readable when a frame is done. */
int capture_fd(const struct capture *c);
uint32_t capture_stride(const struct capture *c);
/*
 * Copy the newest finished frame (height rows of capture_stride() bytes)
 * into dst and give every finished buffer back to the driver. Returns 1
 * (copied), 0 (none finished), or the V4L2 error.
 */
int capture_take_latest(struct capture *c, uint8_t *dst);
/* Stop streaming and free. NULL is a no-op. */
void capture_close(struct capture *c);

/* ---- gpu.c -------------------------------------------------------------- */

struct gpu;

/* One frame's work for the GPU: copy src into dst, stamp seq, signal the fence. */
struct gpu_job {
	uint8_t *src;           /* owned by the job: freed when done */
	uint32_t src_stride;
	uint8_t *dst;           /* the PipeWire buffer's mapping */
	uint32_t dst_stride;
	uint32_t width, height; /* pixels */
	uint32_t seq;
	int vgem_fd;            /* borrowed */
	uint32_t fence_id;      /* the buffer's pending write fence; 0: none */
	struct gpu_job *next;
};

/* Start the thread. write_ms: its pause between the top and the bottom half. */
int gpu_start(unsigned write_ms, struct gpu **out);
/* Queue a job; the thread owns it now. */
void gpu_submit(struct gpu *g, struct gpu_job *job);
/* Wait until every queued job is done (before a buffer it writes goes away). */
void gpu_drain(struct gpu *g);
/* Finish the queued jobs, stop the thread, free. NULL is a no-op. */
void gpu_stop(struct gpu *g);

/* The barcode of seq into STAMP_ROWS rows of a YUYV image, from row y0. */
void stamp_write_yuyv(uint8_t *image, uint32_t stride, uint32_t width, uint32_t y0,
		      uint32_t seq);
/* The barcode read back from one RGBA row (width pixels). */
uint32_t stamp_read_rgba(const uint8_t *row, uint32_t width);

/* ---- convert.c ---------------------------------------------------------- */

struct convert;
struct convert_image;

/* An EGL/GLES 3 context on the software device (llvmpipe, which maps dma-bufs). */
int convert_create(struct convert **out);
const char *convert_describe(const struct convert *cv);
/* (Re)size the RGB target. */
int convert_set_size(struct convert *cv, uint32_t width, uint32_t height);
/* A YUYV dma-buf as a texture. dmabuf_fd: borrowed (EGL takes its own reference). */
int convert_import(struct convert *cv, int dmabuf_fd, uint32_t offset, uint32_t stride,
		   struct convert_image **out);
void convert_image_destroy(struct convert *cv, struct convert_image *img);
/*
 * GL waits for the frame's writer — the acquire sync_file (borrowed; -1:
 * nothing to wait for) or, for a buffer without explicit sync, the
 * dma-buf's own write fences — then converts it into the target. *read_fence
 * is the read's sync_file (the caller's; -1: done already) for the release.
 */
int convert_frame(struct convert *cv, struct convert_image *img, int acquire_fd,
		  int implicit_dmabuf_fd, int *read_fence);
/* The target's pixels, RGBA, width * 4 bytes per row, top row first. */
int convert_read(struct convert *cv, uint8_t *rgba);
/* NULL is a no-op. */
void convert_destroy(struct convert *cv);

/* ---- sheet.c ------------------------------------------------------------ */

struct sheet;

/* A contact sheet of SHEET_CELLS frames picked evenly over `frames`, into dir. */
int sheet_create(const char *dir, unsigned frames, uint32_t width, uint32_t height,
		 struct sheet **out);
/* Frame `index` of the run (0-based) was read: place it, save it if chosen. */
void sheet_add(struct sheet *s, unsigned index, const uint8_t *rgba, bool torn);
/* Write contact-sheet.png and free. NULL is a no-op. */
int sheet_finish(struct sheet *s);

/* ---- producer.c, consumer.c --------------------------------------------- */

int producer_run(const struct options *opt);
int consumer_run(const struct options *opt);

#endif
