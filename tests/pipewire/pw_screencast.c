/* SPDX-License-Identifier: MIT */
/*
 * pw-screencast: a consumer of a compositor's screencast stream (issue 35,
 * item 4): mutter's org.gnome.Mutter.ScreenCast node, which offers
 * SPA_META_SyncTimeline with two SPA_DATA_SyncObj planes where its render
 * node has timeline syncobjs (docs/syncobj-peers.md).
 *
 *   pw-screencast --target NODE_ID [--frames N] [--seconds S] [--never-release]
 *                 [--dump FILE]
 *
 * It asks for BGRx/BGRA dma-bufs with the implicit modifier (what mutter
 * offers on virgl) and the Buffers/Meta params of libsyncbridge-pipewire
 * (SyncTimeline mandatory first, the plain fallback after), on virtio_gpu's
 * render node (timeline syncobjs; vgem has none). For each frame: the
 * acquire point as a sync_file (was it still pending when the frame
 * arrived?), a CPU wait for it, then the release point signalled
 * (sb_pw_consumer_release) and the buffer queued back. mutter
 * reuses a buffer only after its release point, so frames that keep coming
 * past the buffer count mean the release points were signalled.
 *
 * --never-release: a consumer that takes the acquire point (promising a
 * release) and never signals the release point: mutter must then stop
 * reusing those buffers, so no more than the buffer count of frames come.
 *
 * --dump FILE: each frame, after its acquire point and before its release
 * point, is imported through EGL (a CPU mapping of a virgl dma-buf reads
 * zeros; docs/syncobj-peers.md) and read back into FILE: a line "SBRGBA W H
 * SEQ" (SEQ counts the frames) and W*H RGBA pixels, replaced whole (written
 * beside it, then renamed). tests/pipewire/screencast-shot.py reads it: the
 * screen as the compositor's own screencast shows it, for a client's pixel
 * checks (syncbridge-wl-client --hook).
 *
 * Prints "frames=N synced=N pending=N buffers=N" (synced: frames whose
 * buffer carried explicit sync; pending: acquire points not yet signalled
 * when the frame came) and exits 0 once N frames came, 1 on a failure or
 * after S seconds.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/buffer/meta.h>
#include <spa/param/video/format-utils.h>
#include <spa/pod/builder.h>

#include <syncbridge/pipewire.h>
#include <syncbridge/sync_file.h>

#include "kernel.h" /* sbk_drm_open_driver() */
#include "pwt.h"
#ifdef PW_SCREENCAST_EGL
#include "eglt.h"
#endif

#define BUFFERS 4
/* DRM_FORMAT_MOD_INVALID: "the implicit modifier" (drm_fourcc.h) */
#define MOD_INVALID ((int64_t)0x00ffffffffffffffULL)

struct app {
	struct pw_main_loop *loop;
	struct pw_stream *stream;
	struct sb_pw_sync *sync;
	int drm;
	uint32_t width, height, stride;
	int frames_wanted;
	bool never_release;
	int frames, synced, pending, buffers, errors;
	const char *dump; /* --dump FILE, or NULL */
#ifdef PW_SCREENCAST_EGL
	struct eglt egl;
	struct {
		int fd; /* the buffer's dma-buf (PipeWire's), -1: free slot */
		struct eglt_target t;
	} imported[BUFFERS * 2];
	uint8_t *px;
#endif
};

static void
fail(struct app *a, const char *what, int err)
{
	fprintf(stderr, "pw-screencast: %s: %s\n", what, strerror(err < 0 ? -err : err));
	a->errors++;
	pw_main_loop_quit(a->loop);
}

#ifdef PW_SCREENCAST_EGL
/* The buffer's dma-buf as an EGL target, imported at its first frame. */
static struct eglt_target *
target_of(struct app *a, int fd, int stride)
{
	size_t n = sizeof(a->imported) / sizeof(a->imported[0]);

	for (size_t i = 0; i < n; i++)
		if (a->imported[i].fd == fd)
			return &a->imported[i].t;
	for (size_t i = 0; i < n; i++) {
		if (a->imported[i].fd >= 0)
			continue;
		if (eglt_target_import(&a->egl, fd, (int)a->width, (int)a->height, stride,
				       &a->imported[i].t) < 0)
			return NULL;
		a->imported[i].fd = fd;
		return &a->imported[i].t;
	}
	return NULL;
}

static int
dump_frame(struct app *a, struct spa_buffer *buf)
{
	struct spa_data *d = &buf->datas[0];
	struct eglt_target *t;
	char tmp[4096];
	FILE *f;
	int stride = d->chunk && d->chunk->stride > 0 ? d->chunk->stride : (int)a->stride;

	if (d->type != SPA_DATA_DmaBuf || d->fd < 0)
		return -EINVAL;
	if (!a->px && !(a->px = malloc((size_t)a->width * a->height * 4)))
		return -ENOMEM;
	t = target_of(a, (int)d->fd, stride);
	if (!t)
		return -EIO;
	if (eglt_read(t, a->px) < 0)
		return -EIO;
	snprintf(tmp, sizeof(tmp), "%s.tmp", a->dump);
	f = fopen(tmp, "wbe");
	if (!f)
		return -errno;
	fprintf(f, "SBRGBA %u %u %d\n", a->width, a->height, a->frames);
	if (fwrite(a->px, 4, (size_t)a->width * a->height, f) != (size_t)a->width * a->height ||
	    fclose(f) != 0)
		return -EIO;
	return rename(tmp, a->dump) < 0 ? -errno : 0;
}
#else
static int
dump_frame(struct app *a, struct spa_buffer *buf)
{
	return -ENOTSUP;
}
#endif

static void
on_process(void *data)
{
	struct app *a = data;
	struct pw_buffer *pwb;

	while ((pwb = pw_stream_dequeue_buffer(a->stream))) {
		struct spa_buffer *buf = pwb->buffer;
		int fence = -1, ret, status = 1;

		if (sb_pw_buffer_is_synced(a->sync, buf)) {
			ret = sb_pw_consumer_acquire(a->sync, buf, &fence);
			if (ret) {
				fail(a, "sb_pw_consumer_acquire", ret);
				return;
			}
			a->synced++;
		}
		if (fence >= 0) {
			if (sb_sync_file_get_status(fence, &status) == 0 && status == 0)
				a->pending++;
			ret = sb_sync_file_wait(fence, INT64_C(5000000000));
			close(fence);
			if (ret) {
				fail(a, "the acquire point's wait", ret);
				return;
			}
		}
		a->frames++;
		if (a->dump && (ret = dump_frame(a, buf)) < 0) {
			fail(a, "--dump: the frame's read-back", ret);
			return;
		}
		/* Read (the CPU wait; with --dump, glReadPixels returned): done now. */
		ret = a->never_release ? 0 : sb_pw_consumer_release(a->sync, buf, -1);
		if (ret) {
			fail(a, "sb_pw_consumer_release", ret);
			return;
		}
		pw_stream_queue_buffer(a->stream, pwb);
		if (a->frames >= a->frames_wanted)
			pw_main_loop_quit(a->loop);
	}
}

static void
on_param_changed(void *data, uint32_t id, const struct spa_pod *param)
{
	struct app *a = data;
	struct spa_video_info_raw info = { 0 };
	uint8_t mem[2048];
	struct spa_pod_builder b = SPA_POD_BUILDER_INIT(mem, sizeof(mem));
	const struct spa_pod *params[4];
	int n;

	if (id != SPA_PARAM_Format || !param)
		return;
	if (spa_format_video_raw_parse(param, &info) < 0) {
		fail(a, "the negotiated format", EINVAL);
		return;
	}
	a->width = info.size.width;
	a->height = info.size.height;
	a->stride = a->width * 4;
	printf("# format: %s %ux%u, modifier 0x%" PRIx64 "\n",
	       info.format == SPA_VIDEO_FORMAT_BGRx ? "BGRx" : "BGRA", a->width, a->height,
	       (uint64_t)info.modifier);
	n = sb_pw_sync_build_params(a->sync, &b, params, 4, BUFFERS, 1, a->stride * a->height, a->stride,
			       1u << SPA_DATA_DmaBuf);
	if (n < 0) {
		fail(a, "the buffer params", n);
		return;
	}
	pw_stream_update_params(a->stream, params, (uint32_t)n);
}

static void
on_add_buffer(void *data, struct pw_buffer *pwb)
{
	struct app *a = data;
	int ret = sb_pw_buffer_add(a->sync, pwb->buffer, false);

	if (ret < 0) {
		fail(a, "sb_pw_buffer_add", ret);
		return;
	}
	a->buffers++;
	printf("# buffer %d: %u data planes, explicit sync: %s\n", a->buffers, pwb->buffer->n_datas,
	       ret == 1 ? "yes" : "no (the fallback)");
}

static void
on_remove_buffer(void *data, struct pw_buffer *pwb)
{
	sb_pw_buffer_remove(((struct app *)data)->sync, pwb->buffer);
}

static void
on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error)
{
	struct app *a = data;

	printf("# stream: %s\n", pw_stream_state_as_string(state));
	if (state == PW_STREAM_STATE_ERROR)
		fail(a, error ? error : "stream error", EIO);
}

static const struct pw_stream_events stream_events = PWT_STREAM_EVENTS;

static void
on_timeout(void *data, uint64_t expirations)
{
	struct app *a = data;

	fprintf(stderr, "pw-screencast: %d of %d frames by the deadline\n", a->frames, a->frames_wanted);
	a->errors++;
	pw_main_loop_quit(a->loop);
}

static const struct spa_pod *
enum_format(struct spa_pod_builder *b)
{
	struct spa_pod_frame f;

	spa_pod_builder_push_object(b, &f, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat);
	spa_pod_builder_add(b, SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
		SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
		SPA_FORMAT_VIDEO_format, SPA_POD_CHOICE_ENUM_Id(3, SPA_VIDEO_FORMAT_BGRx,
								 SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRA),
		SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(&SPA_RECTANGLE(1024, 768),
								       &SPA_RECTANGLE(1, 1),
								       &SPA_RECTANGLE(8192, 8192)),
		SPA_FORMAT_VIDEO_framerate, SPA_POD_CHOICE_RANGE_Fraction(&SPA_FRACTION(30, 1),
									   &SPA_FRACTION(0, 1),
									   &SPA_FRACTION(1000, 1)),
		0);
	/* dma-bufs only: the implicit modifier, as mutter offers on virgl */
	spa_pod_builder_prop(b, SPA_FORMAT_VIDEO_modifier, SPA_POD_PROP_FLAG_MANDATORY);
	spa_pod_builder_long(b, MOD_INVALID);
	return spa_pod_builder_pop(b, &f);
}

int
main(int argc, char **argv)
{
	struct app a = { .drm = -1, .frames_wanted = 20 };
	const char *target = NULL;
	int seconds = 60, ret;
	uint8_t mem[1024];
	struct spa_pod_builder b = SPA_POD_BUILDER_INIT(mem, sizeof(mem));
	const struct spa_pod *params[1];
	struct spa_source *timer;
	struct timespec ts;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--target") && i + 1 < argc)
			target = argv[++i];
		else if (!strcmp(argv[i], "--frames") && i + 1 < argc)
			a.frames_wanted = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--never-release"))
			a.never_release = true;
		else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
			a.dump = argv[++i];
		else {
			fprintf(stderr, "usage: pw-screencast --target NODE_ID [--frames N] [--seconds S] "
					"[--never-release] [--dump FILE]\n");
			return 2;
		}
	}
	if (!target || a.frames_wanted < 1 || seconds < 1) {
		fprintf(stderr, "usage: pw-screencast --target NODE_ID [--frames N] [--seconds S] "
				"[--never-release] [--dump FILE]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (a.dump) {
#ifdef PW_SCREENCAST_EGL
		for (size_t i = 0; i < sizeof(a.imported) / sizeof(a.imported[0]); i++)
			a.imported[i].fd = -1;
		ret = eglt_open(&a.egl, EGLT_SURFACELESS);
		if (ret < 0) {
			fprintf(stderr, "pw-screencast: --dump: no EGL display: %s\n", strerror(-ret));
			return 77;
		}
#else
		fprintf(stderr, "pw-screencast: --dump: built without EGL\n");
		return 77;
#endif
	}
	pw_init(&argc, &argv);
	/* Timelines: the virtio_gpu render node (vgem has no syncobjs). */
	a.drm = sbk_drm_open_driver("virtio_gpu", true);
	if (a.drm < 0 || (ret = sb_pw_sync_create(a.drm, &a.sync)) < 0) {
		fprintf(stderr, "pw-screencast: no virtio_gpu render node with timeline syncobjs\n");
		return 77;
	}
	a.loop = pwt_main_loop_new();
	if (!a.loop)
		return 1;
	timer = pw_loop_add_timer(pw_main_loop_get_loop(a.loop), on_timeout, &a);
	ts = (struct timespec){ .tv_sec = seconds };
	pw_loop_update_timer(pw_main_loop_get_loop(a.loop), timer, &ts, NULL, false);
	a.stream = pw_stream_new_simple(pw_main_loop_get_loop(a.loop), "sb-screencast",
		pw_properties_new(PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, "Capture",
				  PW_KEY_MEDIA_ROLE, "Screen", PW_KEY_NODE_NAME, "sb-screencast",
				  PW_KEY_TARGET_OBJECT, target, NULL),
		&stream_events, &a);
	if (!a.stream) {
		fprintf(stderr, "pw-screencast: cannot create the stream (is the PipeWire daemon running?)\n");
		return 1;
	}
	params[0] = enum_format(&b);
	ret = pw_stream_connect(a.stream, PW_DIRECTION_INPUT, PW_ID_ANY, PW_STREAM_FLAG_AUTOCONNECT, params, 1);
	if (ret < 0) {
		fprintf(stderr, "pw-screencast: pw_stream_connect: %s\n", strerror(-ret));
		return 1;
	}
	pw_main_loop_run(a.loop);
	printf("frames=%d synced=%d pending=%d buffers=%d\n", a.frames, a.synced, a.pending, a.buffers);
	pw_stream_destroy(a.stream);
	pw_loop_destroy_source(pw_main_loop_get_loop(a.loop), timer);
	pw_main_loop_destroy(a.loop);
	sb_pw_sync_destroy(a.sync);
	close(a.drm);
#ifdef PW_SCREENCAST_EGL
	if (a.dump) {
		for (size_t i = 0; i < sizeof(a.imported) / sizeof(a.imported[0]); i++)
			if (a.imported[i].fd >= 0)
				eglt_target_destroy(&a.egl, &a.imported[i].t);
		eglt_close(&a.egl);
		free(a.px);
	}
#endif
	pw_deinit();
	return a.errors || a.frames < a.frames_wanted ? 1 : 0;
}
