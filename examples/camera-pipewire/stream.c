/* SPDX-License-Identifier: MIT */
/*
 * What the producer's and the consumer's streams both offer and hold: the
 * format, the buffers (through libsyncbridge-pipewire), the DRM node its
 * timelines live on, the loop and the stream, and how a side fails.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/buffer/buffer.h>
#include <spa/buffer/meta.h>
#include <spa/param/buffers.h>
#include <spa/param/video/format-utils.h>
#include <spa/pod/builder.h>

#include <syncbridge/pipewire.h>

#include "camera_pw.h"

static const struct spa_pod *
stream_format(struct spa_pod_builder *b, uint32_t width, uint32_t height)
{
	return spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
		SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
		SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
		SPA_FORMAT_VIDEO_format, SPA_POD_Id(SPA_VIDEO_FORMAT_YUY2),
		SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&SPA_RECTANGLE(width, height)),
		SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&SPA_FRACTION(0, 1)));
}

/* The Buffers and Meta params; how many went to params[] (max), or -errno. */
static int
stream_buffer_params(const struct sb_pw_sync *sync, struct spa_pod_builder *b,
		     const struct spa_pod **params, uint32_t max, uint32_t width, uint32_t height)
{
	uint32_t stride = width * 2;
	int n;

	if (max < 2)
		return -ENOSPC;
	/* One dma-buf plane: the consumer's EGL imports nothing else. */
	n = sb_pw_sync_build_params(sync, b, params, max - 1, STREAM_BUFFERS, 1, stride * height,
			       stride, 1u << SPA_DATA_DmaBuf);
	if (n < 0)
		return n;
	params[n] = spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
		SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
		SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
	return params[n] ? n + 1 : -ENOSPC;
}

/*
 * The first DRM render node that has timeline syncobjs, with the bridge's
 * state on it: *drm_fd (the caller's) must outlive *sync. Returns 0, or
 * -ENODEV when no node has them.
 */
static int
stream_sync_open(int *drm_fd, struct sb_pw_sync **sync)
{
	*drm_fd = -1;
	*sync = NULL;
	for (int i = 128; i < 192; i++) {
		char path[32];
		int fd;

		snprintf(path, sizeof(path), "/dev/dri/renderD%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (sb_pw_sync_create(fd, sync) == 0) {
			*drm_fd = fd;
			return 0;
		}
		close(fd);
	}
	return -ENODEV;
}

static void
on_signal(void *data, int signo)
{
	pw_main_loop_quit(data);
}

void
stream_answer_format(struct stream_side *side, uint32_t width, uint32_t height)
{
	uint8_t mem[2048];
	struct spa_pod_builder b = SPA_POD_BUILDER_INIT(mem, sizeof(mem));
	const struct spa_pod *params[4];
	int n = stream_buffer_params(side->sync, &b, params, 4, width, height);

	if (n < 0) {
		stream_fail(side, "the buffer params", n);
		return;
	}
	pw_stream_update_params(side->stream, params, (uint32_t)n);
}

void
stream_fail(struct stream_side *side, const char *what, int err)
{
	fprintf(stderr, PROG ": %s: %s: %s\n", side->name, what, strerror(err < 0 ? -err : err));
	side->errors++;
	pw_main_loop_quit(side->loop);
}

struct pw_loop *
stream_loop(struct stream_side *side)
{
	return pw_main_loop_get_loop(side->loop);
}

int
stream_side_open(struct stream_side *side)
{
	int ret = stream_sync_open(&side->drm, &side->sync);

	if (ret < 0) {
		fprintf(stderr, PROG ": %s: no DRM render node with timeline syncobjs\n",
			side->name);
		return ret;
	}
	side->loop = pw_main_loop_new(NULL);
	if (!side->loop)
		return -ENOMEM;
	pw_loop_add_signal(stream_loop(side), SIGINT, on_signal, side->loop);
	pw_loop_add_signal(stream_loop(side), SIGTERM, on_signal, side->loop);
	return 0;
}

int
stream_side_connect(struct stream_side *side, const char *node, const char *category,
		    const struct pw_stream_events *events, void *data, bool output,
		    uint32_t flags, uint32_t width, uint32_t height)
{
	uint8_t mem[1024];
	struct spa_pod_builder b = SPA_POD_BUILDER_INIT(mem, sizeof(mem));
	const struct spa_pod *params[1];
	int ret;

	side->stream = pw_stream_new_simple(stream_loop(side), node,
		pw_properties_new(PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, category,
				  PW_KEY_MEDIA_ROLE, "Camera", PW_KEY_NODE_NAME, node, NULL),
		events, data);
	if (!side->stream) {
		fprintf(stderr, PROG ": %s: cannot create the stream (is the PipeWire daemon "
			"running?)\n", side->name);
		return -EIO;
	}
	params[0] = stream_format(&b, width, height);
	ret = pw_stream_connect(side->stream, output ? PW_DIRECTION_OUTPUT : PW_DIRECTION_INPUT,
				PW_ID_ANY, (enum pw_stream_flags)flags, params, 1);
	if (ret < 0) {
		fprintf(stderr, PROG ": %s: pw_stream_connect: %s\n", side->name, strerror(-ret));
		return ret;
	}
	return 0;
}

void
stream_side_close(struct stream_side *side, struct spa_source *own)
{
	if (side->stream)
		pw_stream_destroy(side->stream); /* removes the buffers */
	if (own)
		pw_loop_destroy_source(stream_loop(side), own);
	if (side->loop)
		pw_main_loop_destroy(side->loop);
	sb_pw_sync_destroy(side->sync);
	demo_fd_clear(&side->drm);
}
