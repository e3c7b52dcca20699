/* SPDX-License-Identifier: MIT */
#include "egl_display.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm_fourcc.h>
#include <syncbridge/egl.h>

#include "eglt.h"

#define PROG "syncbridge-demo-camera"
#define MAX 16

struct egl_display {
	struct eglt egl;
	unsigned count;
	uint32_t width, height;
	int fds[MAX]; /* borrowed */
	struct eglt_target images[MAX]; /* the capture buffers, imported */
	struct eglt_target target;      /* what is shown */
	struct eglt_pass pass;
	uint8_t *rgba;
	char description[200];
};


static int
setup(struct egl_display *d, uint32_t stride)
{
	eglt_set_log(stderr, PROG ": display: ");
	int ret = eglt_open_gles(&d->egl, EGLT_DEVICE_SW, 3);
	for (unsigned i = 0; ret == 0 && i < d->count; i++)
		ret = eglt_image_import(&d->egl, d->fds[i], (int)(d->width / 2), (int)d->height,
					DRM_FORMAT_ARGB8888, 0, (int)stride, &d->images[i]);
	if (ret == 0)
		ret = eglt_target_create(&d->egl, (int)d->width, (int)d->height, &d->target);
	if (ret == 0)
		ret = eglt_pass_init(&d->pass, eglt_yuyv_fs);
	if (ret < 0)
		return ret;
	d->rgba = malloc((size_t)d->width * d->height * 4);
	if (!d->rgba)
		return -ENOMEM;
	eglt_describe(&d->egl, d->description, sizeof(d->description));
	return glGetError() == GL_NO_ERROR ? 0 : -EIO;
}

int
egl_display_create(const int *fds, unsigned count, uint32_t width, uint32_t height,
		   uint32_t stride, struct egl_display **out)
{
	*out = NULL;
	if (count > MAX || width % 2)
		return -EINVAL;
	struct egl_display *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->count = count;
	d->width = width;
	d->height = height;
	memcpy(d->fds, fds, count * sizeof(int));
	int ret = setup(d, stride);
	if (ret < 0) {
		egl_display_destroy(d);
		return ret;
	}
	*out = d;
	return 0;
}

int
egl_display_show(struct egl_display *d, unsigned i)
{
	if (i >= d->count)
		return -EINVAL;
	int ret = sb_egl_dmabuf_wait(d->egl.dpy, d->fds[i], SB_ACCESS_READ);
	if (ret < 0)
		return ret;
	eglt_pass_draw(&d->pass, d->images[i].tex, &d->target);
	/* The capture buffer's next writer (the camera, via the queue) waits for this read. */
	return sb_egl_dmabuf_attach(d->egl.dpy, d->fds[i], SB_ACCESS_READ);
}

int
egl_display_read(struct egl_display *d, uint8_t *rgb)
{
	if (eglt_read(&d->target, d->rgba) < 0)
		return -EIO;
	/* Row y of the target is row y of the buffer: memory order, top row first. */
	size_t n = (size_t)d->width * d->height;
	for (size_t k = 0; k < n; k++)
		memcpy(rgb + 3 * k, d->rgba + 4 * k, 3);
	return 0;
}

const char *
egl_display_describe(const struct egl_display *d)
{
	return d->description;
}

void
egl_display_destroy(struct egl_display *d)
{
	if (!d)
		return;
	if (d->egl.ctx != EGL_NO_CONTEXT) {
		for (unsigned i = 0; i < d->count; i++)
			eglt_target_destroy(&d->egl, &d->images[i]);
		eglt_target_destroy(&d->egl, &d->target);
		eglt_pass_finish(&d->pass);
	}
	eglt_close(&d->egl);
	free(d->rgba);
	free(d);
}
