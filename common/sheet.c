/* SPDX-License-Identifier: MIT */
/*
 * demo_sheet_*() (demo_util.h): the contact sheets the demos write, one
 * framed cell per picked frame. In common_png_lib beside demo_png_write(),
 * which writes them out.
 */
#include "demo_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A dark grey canvas: a cell no frame reached stands out from a black frame. */
#define SHEET_BACKGROUND 40

int
demo_sheet_alloc(struct demo_sheet *s)
{
	s->width = s->gap + s->cols * (s->frame_w + 2 * s->border + s->gap);
	s->height = s->gap + s->rows * (s->frame_h + 2 * s->border + s->gap);
	s->rgb = malloc((size_t)s->width * s->height * 3);
	if (!s->rgb)
		return -ENOMEM;
	memset(s->rgb, SHEET_BACKGROUND, (size_t)s->width * s->height * 3);
	return 0;
}

void
demo_sheet_put(struct demo_sheet *s, unsigned cell, const uint8_t *rgba,
	       const uint8_t border_rgb[3])
{
	uint32_t b = s->border;
	uint32_t cw = s->frame_w + 2 * b, ch = s->frame_h + 2 * b;
	uint32_t x0 = s->gap + (cell % s->cols) * (cw + s->gap);
	uint32_t y0 = s->gap + (cell / s->cols) * (ch + s->gap);

	for (uint32_t y = 0; y < ch; y++) {
		uint8_t *row = s->rgb + ((size_t)(y0 + y) * s->width + x0) * 3;
		for (uint32_t x = 0; x < cw; x++) {
			bool inside = x >= b && y >= b && x < cw - b && y < ch - b;
			const uint8_t *src =
				inside ? rgba + ((size_t)(y - b) * s->frame_w + (x - b)) * 4
				       : border_rgb;
			memcpy(row + 3 * x, src, 3);
		}
	}
}

int
demo_sheet_write(const struct demo_sheet *s, const char *path)
{
	return demo_png_write(path, s->rgb, s->width, s->height, s->width * 3, 3);
}
