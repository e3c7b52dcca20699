/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-camera's consumer (the main thread): every frame is read
 * through Vulkan and the layer (or the CPU), shown by the EGL display stage,
 * checked, maybe held on, and released with its fences as the release fence.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "camera.h"

/* ---- the consumer ------------------------------------------------------- */

static void
save_frame(struct app *a, const uint8_t *data, uint64_t frame)
{
	if (!a->opt.output || a->opt.source != SOURCE_VIVID)
		return;
	uint8_t *rgb = malloc((size_t)a->width * a->height * 3);
	if (!rgb)
		return;
#ifdef CAMERA_HAVE_EGL
	/* What the display stage showed. */
	if (a->disp && egl_display_read(a->disp, rgb) == 0)
		goto write;
#endif
	/* YUYV (BT.601 limited range) → RGB. */
	for (uint32_t y = 0; y < a->height; y++) {
		const uint8_t *s = data + (size_t)y * a->stride;
		uint8_t *d = rgb + (size_t)y * a->width * 3;
		for (uint32_t x = 0; x < a->width; x++) {
			int Y = s[(x & ~1u) * 2 + (x & 1) * 2], U = s[(x & ~1u) * 2 + 1],
			    V = s[(x & ~1u) * 2 + 3];
			int c = Y - 16, dd = U - 128, e = V - 128;
			int r = (298 * c + 409 * e + 128) >> 8;
			int g = (298 * c - 100 * dd - 208 * e + 128) >> 8;
			int bl = (298 * c + 516 * dd + 128) >> 8;
			d[3 * x] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
			d[3 * x + 1] = (uint8_t)(g < 0 ? 0 : g > 255 ? 255 : g);
			d[3 * x + 2] = (uint8_t)(bl < 0 ? 0 : bl > 255 ? 255 : bl);
		}
	}
#ifdef CAMERA_HAVE_EGL
write:;
#endif
	char path[4096];
	snprintf(path, sizeof(path), "%s/camera-%03" PRIu64 ".png", a->opt.output, frame);
	int ret = demo_png_write(path, rgb, a->width, a->height, a->width * 3, 3);
	if (ret < 0)
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(-ret));
	free(rgb);
}

/* Buffer i's pixels into copy: through Vulkan (the layer waits) or the CPU (after fence). */
static int
read_frame(struct app *a, unsigned i, int *fence, uint8_t *copy)
{
	struct buffer *b = &a->bufs[i];
	int ret = 0;

	if (a->vk) {
		/* The layer makes the copy wait for the dma-buf's write fence:
		 * the acquire fence is the same fence, not needed here. */
		demo_fd_clear(fence);
		return vk_reader_read(a->vk, i, copy);
	}
	if (*fence >= 0)
		ret = sb_sync_file_wait(*fence, TIMEOUT_NS);
	demo_fd_clear(fence);
	cpu_access(b->dmabuf, true);
	memcpy(copy, b->map, b->size);
	cpu_access(b->dmabuf, false);
	return ret;
}

/* vgem frames carry a known pattern: a pixel off it is a frame read while written. */
static void
check_vgem_frame(struct app *a, const struct buffer *b, const uint8_t *copy)
{
	const uint32_t *px = (const uint32_t *)copy;
	size_t bad = 0;

	for (size_t k = 0; k < b->size / 4; k++)
		bad += px[k] != vgem_pattern(b->frame, k);
	if (bad) {
		pthread_mutex_lock(&a->lock);
		a->c.torn++;
		pthread_mutex_unlock(&a->lock);
	}
}

int
camera_consume(struct app *a)
{
	uint8_t *copy = NULL;
	size_t copy_size = 0;
	for (unsigned i = 0; i < a->count; i++)
		if (a->bufs[i].size > copy_size)
			copy_size = a->bufs[i].size;
	copy = malloc(copy_size);
	if (!copy)
		return -ENOMEM;

	int ret;
	for (;;) {
		unsigned i;
		int fence = -1;
		ret = sb_buffer_queue_acquire(a->queue, TIMEOUT_NS, &i, &fence);
		if (ret == -EPIPE) {
			ret = 0;
			break;
		}
		if (ret < 0) {
			fprintf(stderr, PROG ": consumer: acquire: %s\n", strerror(-ret));
			break;
		}
		struct buffer *b = &a->bufs[i];
		ret = read_frame(a, i, &fence, copy);
		if (ret < 0) {
			fprintf(stderr, PROG ": consumer: read: %s\n", strerror(-ret));
			break;
		}
#ifdef CAMERA_HAVE_EGL
		/* The second consumer of the same buffer: the display stage. */
		if (a->disp && (ret = egl_display_show(a->disp, i)) < 0) {
			fprintf(stderr, PROG ": display: %s\n", strerror(-ret));
			break;
		}
#endif
		if (a->opt.source == SOURCE_VGEM)
			check_vgem_frame(a, b, copy);
		uint64_t sum = checksum(copy, b->size);
		if (a->c.frames % (a->opt.frames / 4 ? a->opt.frames / 4 : 1) == 0)
			save_frame(a, copy, b->frame);
		if (a->opt.verbose)
			printf("consumer: frame %" PRIu64 " in buffer %u (sequence %u)\n", b->frame,
			       i, b->sequence);

		unsigned hold_ms = a->opt.hold_ms ? (unsigned)rand() % (a->opt.hold_ms + 1) : 0;
		if (hold_ms > 0) {
			ret = camera_hold_start(a, i, sum, (int64_t)hold_ms * 1000000);
			if (ret < 0)
				break;
		}
		/* Done on our side: the buffer's fences (the layer's READ fence,
		 * the hold's) are the release fence. */
		ret = sb_buffer_queue_release_dmabuf(a->queue, i);
		if (ret < 0) {
			fprintf(stderr, PROG ": consumer: release: %s\n", strerror(-ret));
			break;
		}
		pthread_mutex_lock(&a->lock);
		a->c.frames++;
		pthread_mutex_unlock(&a->lock);
	}
	free(copy);
	return ret;
}
