/* SPDX-License-Identifier: MIT */
/*
 * demo_png_write() (demo_util.h): PNG files through libpng, in a library of
 * its own (common_png_lib) so that only the programs that write PNGs link
 * libpng.
 */
#include "demo_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>

#include <png.h>

/* libpng reports its errors by longjmp (after printing them): nothing here
 * lives across the setjmp. */
static int
write_png(png_structp png, png_infop info, FILE *f, const uint8_t *pixels,
		uint32_t width, uint32_t height, uint32_t stride, int channels)
{
	if (setjmp(png_jmpbuf(png)))
		return -EIO;
	png_init_io(png, f);
	png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	if (channels == 4)
		png_set_filler(png, 0, PNG_FILLER_AFTER); /* the input's 4th byte: dropped */
	for (uint32_t y = 0; y < height; y++)
		png_write_row(png, pixels + (size_t)y * stride);
	png_write_end(png, NULL);
	return 0;
}

int
demo_png_write(const char *path, const uint8_t *pixels, uint32_t width, uint32_t height,
	       uint32_t stride, int channels)
{
	png_structp png;
	png_infop info = NULL;
	FILE *f;
	int ret = -ENOMEM;

	if (channels != 3 && channels != 4)
		return -EINVAL;
	f = fopen(path, "wbe");
	if (!f)
		return -errno;
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	if (png)
		info = png_create_info_struct(png);
	if (info)
		ret = write_png(png, info, f, pixels, width, height, stride, channels);
	png_destroy_write_struct(&png, &info);
	if (fclose(f) != 0 && ret == 0)
		ret = -EIO;
	return ret;
}

