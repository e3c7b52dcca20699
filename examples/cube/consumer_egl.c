/* SPDX-License-Identifier: MIT */
/*
 * The cube demo's EGL/GLES consumer: every ring buffer is imported once as an
 * EGLImage (EGL_EXT_image_dma_buf_import) — for the Vulkan producer's vgem
 * ring on the EGL device platform's software device (llvmpipe, which maps the
 * dma-buf, the one EGL display in the test guest that reads a vgem buffer),
 * for the GLES producer's textures on the surfaceless display, the GPU that
 * made them (virgl buffers import nowhere else) — and each frame is
 * composited into a texture of the consumer's own:
 *
 *   sb_egl_dmabuf_wait(READ)    GL waits for the buffer's writers (GPU-side
 *                               when the display has native fences)
 *   draw: texelFetch → own FBO  the read
 *   sb_egl_dmabuf_attach(READ)  the buffer's next writer waits for this read
 *
 * With SYNCBRIDGE_DISABLE=1 the two bridge calls are no-ops.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm_fourcc.h>
#include <syncbridge/egl.h>

#include "cube.h"
#include "demo_util.h"
#include "eglt.h"

#define PROG "syncbridge-demo-cube"

struct cube_consumer {
	struct eglt egl;
	struct cube_buffers bufs;
	struct eglt_target images[CUBE_MAX_BUFFERS]; /* the ring, imported */
	struct eglt_target target;                   /* what is composited */
	struct eglt_pass pass;
	char description[160];
};

/* One texel per pixel, alpha (the stamp) included. Row y of the target is
 * row y of the buffer, so glReadPixels returns the buffer's memory order. */
static const char fs_src[] = EGLT_PASS_FS_HEAD
	"void main() {\n"
	"  color = texelFetch(frame, ivec2(gl_FragCoord.xy), 0);\n"
	"}\n";

static void
consumer_destroy(struct cube_consumer *c)
{
	if (!c)
		return;
	if (c->egl.ctx != EGL_NO_CONTEXT) {
		for (unsigned i = 0; i < c->bufs.count; i++)
			eglt_target_destroy(&c->egl, &c->images[i]);
		eglt_target_destroy(&c->egl, &c->target);
		eglt_pass_finish(&c->pass);
	}
	eglt_close(&c->egl);
	cube_buffers_close(&c->bufs);
	free(c);
}

static int
consumer_open(struct cube_consumer **out, const struct cube_options *opt)
{
	struct cube_consumer *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return -ENOMEM;
	eglt_set_log(stderr, PROG ": consumer: ");
	bool gpu = strcmp(opt->producer, "gles") == 0;
	if (eglt_open_gles(&c->egl, gpu ? EGLT_SURFACELESS : EGLT_DEVICE_SW, 3) < 0) {
		consumer_destroy(c);
		return -ENODEV; /* no EGL consumer here: the demo skips */
	}
	*out = c;
	return 0;
}

static int
consumer_import(struct cube_consumer *c, struct cube_buffers *bufs)
{
	int ret = 0;

	cube_buffers_take(&c->bufs, bufs); /* the fds are ours now */

	const struct eglt_dmabuf_layout layout = {
		.fourcc = c->bufs.drm_format,
		.offset = (int32_t)c->bufs.offset,
		.pitch = (int32_t)c->bufs.pitch,
		.modifier = c->bufs.modifier,
	};
	for (unsigned i = 0; ret == 0 && i < c->bufs.count; i++) {
		/* EGL takes its own reference to the dma-buf; we keep our fd for
		 * the bridge's fence calls. */
		ret = eglt_image_import_layout(&c->egl, c->bufs.fds[i], (int)c->bufs.width,
					       (int)c->bufs.height, &layout, &c->images[i]);
	}
	if (ret == 0)
		ret = eglt_target_create(&c->egl, (int)c->bufs.width, (int)c->bufs.height,
					 &c->target);
	if (ret == 0)
		ret = eglt_pass_init(&c->pass, fs_src);
	if (ret == 0 && glGetError() != GL_NO_ERROR) {
		fprintf(stderr, PROG ": consumer: GL setup failed\n");
		ret = -EIO;
	}
	if (ret < 0)
		return -ENODEV; /* no EGL consumer of these buffers here: the demo skips */
	eglt_describe(&c->egl, c->description, sizeof(c->description));
	return 0;
}

static int
consumer_composite(struct cube_consumer *c, unsigned index)
{
	int fd = c->bufs.fds[index];
	int ret;

	/* GL must not read before the producer's writes are done. */
	ret = sb_egl_dmabuf_wait(c->egl.dpy, fd, SB_ACCESS_READ);
	if (ret < 0) {
		fprintf(stderr, PROG ": consumer: sb_egl_dmabuf_wait: %s\n", strerror(-ret));
		return ret;
	}
	eglt_pass_draw(&c->pass, c->images[index].tex, &c->target);
	/* The producer's next write to this buffer must wait for our read. */
	ret = sb_egl_dmabuf_attach(c->egl.dpy, fd, SB_ACCESS_READ);
	if (ret < 0) {
		fprintf(stderr, PROG ": consumer: sb_egl_dmabuf_attach: %s\n", strerror(-ret));
		return ret;
	}
	return 0;
}

static int
consumer_finish(struct cube_consumer *c)
{
	(void)c;
	glFinish();
	return glGetError() == GL_NO_ERROR ? 0 : -EIO;
}

static int
consumer_read_back(struct cube_consumer *c, uint8_t *rgba)
{
	return eglt_read(&c->target, rgba);
}

static const char *
consumer_describe(struct cube_consumer *c)
{
	return c->description;
}

/* Venus is Vulkan only; GL on virtio-gpu is virgl. */
static bool
consumer_on_venus(const struct cube_consumer *c)
{
	(void)c;
	return false;
}

const struct cube_backend cube_backend_egl = CUBE_BACKEND("egl");
