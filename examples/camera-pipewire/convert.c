/* SPDX-License-Identifier: MIT */
/*
 * The consumer's EGL/GLES stage, on the EGL device platform's software
 * device (llvmpipe: the one EGL display in the test guest that reads a vgem
 * dma-buf). Each PipeWire buffer is imported once as an EGLImage — YUYV as
 * ARGB8888 of half the width, one texel = Y0 U Y1 V — and each frame is
 * converted to RGB by a shader into a texture of the consumer's own:
 *
 *   sb_egl_sync_file_wait(acquire)   GL waits for the producer's write
 *   draw: YUYV → RGB                 the read of the buffer
 *   sb_egl_sync_file_export()        the read's fence: the release point's
 *
 * On llvmpipe a wait for another driver's pending fence blocks the calling
 * thread (SB_EGL_CAP_FOREIGN_WAIT_BLOCKS): the consumer's loop stalls until
 * the frame is written, which is all this consumer has to do meanwhile.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm_fourcc.h>
#include <syncbridge/egl.h>

#include "camera_pw.h"
#include "eglt.h"

struct convert {
	struct eglt egl;
	struct eglt_target target; /* RGB, what the consumer shows */
	struct eglt_pass pass;
	bool have_target;
	char description[200];
};

struct convert_image {
	struct eglt_target tex;
};


int
convert_create(struct convert **out)
{
	struct convert *cv = calloc(1, sizeof(*cv));
	int ret;

	*out = NULL;
	if (!cv)
		return -ENOMEM;
	eglt_set_log(stderr, PROG ": consumer: ");
	eglt_no_disk_cache();
	ret = eglt_open_gles(&cv->egl, EGLT_DEVICE_SW, 3);
	if (ret == 0)
		ret = eglt_pass_init(&cv->pass, eglt_yuyv_fs);
	if (ret == 0 && glGetError() != GL_NO_ERROR)
		ret = -EIO;
	if (ret < 0) {
		convert_destroy(cv);
		return ret;
	}
	eglt_describe(&cv->egl, cv->description, sizeof(cv->description));
	*out = cv;
	return 0;
}

const char *
convert_describe(const struct convert *cv)
{
	return cv->description;
}

int
convert_set_size(struct convert *cv, uint32_t width, uint32_t height)
{
	if (cv->have_target && cv->target.width == (int)width && cv->target.height == (int)height)
		return 0;
	if (cv->have_target)
		eglt_target_destroy(&cv->egl, &cv->target);
	cv->have_target = false;
	int ret = eglt_target_create(&cv->egl, (int)width, (int)height, &cv->target);
	if (ret < 0)
		return ret;
	cv->have_target = true;
	return 0;
}

int
convert_import(struct convert *cv, int dmabuf_fd, uint32_t offset, uint32_t stride,
	       struct convert_image **out)
{
	struct convert_image *img = calloc(1, sizeof(*img));
	int ret;

	*out = NULL;
	if (!img)
		return -ENOMEM;
	if (!cv->have_target) {
		free(img);
		return -EINVAL;
	}
	ret = eglt_image_import(&cv->egl, dmabuf_fd, cv->target.width / 2, cv->target.height,
				DRM_FORMAT_ARGB8888, (int)offset, (int)stride, &img->tex);
	if (ret < 0) {
		free(img);
		return ret;
	}
	*out = img;
	return 0;
}

void
convert_image_destroy(struct convert *cv, struct convert_image *img)
{
	if (!img)
		return;
	eglt_target_destroy(&cv->egl, &img->tex);
	free(img);
}

int
convert_frame(struct convert *cv, struct convert_image *img, int acquire_fd,
	      int implicit_dmabuf_fd, int *read_fence)
{
	int ret;

	*read_fence = -1;
	/* GL must not read before the producer's write is done. */
	if (acquire_fd >= 0) {
		ret = sb_egl_sync_file_wait(cv->egl.dpy, acquire_fd);
		if (ret < 0) {
			fprintf(stderr, PROG ": consumer: sb_egl_sync_file_wait: %s\n",
				strerror(-ret));
			return ret;
		}
	} else if (implicit_dmabuf_fd >= 0) {
		ret = sb_egl_dmabuf_wait(cv->egl.dpy, implicit_dmabuf_fd, SB_ACCESS_READ);
		if (ret < 0) {
			fprintf(stderr, PROG ": consumer: sb_egl_dmabuf_wait: %s\n",
				strerror(-ret));
			return ret;
		}
	}
	eglt_pass_draw(&cv->pass, img->tex.tex, &cv->target);
	/* The producer reuses the buffer once this read is done. */
	ret = sb_egl_sync_file_export(cv->egl.dpy, read_fence);
	if (ret < 0)
		fprintf(stderr, PROG ": consumer: sb_egl_sync_file_export: %s\n", strerror(-ret));
	return ret;
}

int
convert_read(struct convert *cv, uint8_t *rgba)
{
	return eglt_read(&cv->target, rgba) < 0 ? -EIO : 0;
}

void
convert_destroy(struct convert *cv)
{
	if (!cv)
		return;
	if (cv->egl.ctx != EGL_NO_CONTEXT) {
		if (cv->have_target)
			eglt_target_destroy(&cv->egl, &cv->target);
		eglt_pass_finish(&cv->pass);
	}
	eglt_close(&cv->egl);
	free(cv);
}
