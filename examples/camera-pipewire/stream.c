/* SPDX-License-Identifier: MIT */
/*
 * What the producer's and the consumer's streams both offer: the format, the
 * buffers (through libsyncbridge-pipewire) and the DRM node its timelines
 * live on.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/buffer/buffer.h>
#include <spa/buffer/meta.h>
#include <spa/param/buffers.h>
#include <spa/param/video/format-utils.h>
#include <spa/pod/builder.h>

#include <syncbridge/pipewire.h>

#include "camera_pw.h"

const struct spa_pod *
stream_format(struct spa_pod_builder *b, uint32_t width, uint32_t height)
{
	return spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
		SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
		SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
		SPA_FORMAT_VIDEO_format, SPA_POD_Id(SPA_VIDEO_FORMAT_YUY2),
		SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&SPA_RECTANGLE(width, height)),
		SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&SPA_FRACTION(0, 1)));
}

int
stream_buffer_params(const struct sb_pw_sync *sync, struct spa_pod_builder *b,
		     const struct spa_pod **params, uint32_t max, uint32_t width, uint32_t height)
{
	uint32_t stride = width * 2;
	int n;

	if (max < 2)
		return -ENOSPC;
	/* One dma-buf plane: the consumer's EGL imports nothing else. */
	n = sb_pw_build_params(sync, b, params, max - 1, STREAM_BUFFERS, 1, stride * height,
			       stride, 1u << SPA_DATA_DmaBuf);
	if (n < 0)
		return n;
	params[n] = spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
		SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
		SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
	return params[n] ? n + 1 : -ENOSPC;
}

int
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
stream_quit_on_signals(struct pw_main_loop *loop)
{
	pw_loop_add_signal(pw_main_loop_get_loop(loop), SIGINT, on_signal, loop);
	pw_loop_add_signal(pw_main_loop_get_loop(loop), SIGTERM, on_signal, loop);
}
