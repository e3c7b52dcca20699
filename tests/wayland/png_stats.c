/* SPDX-License-Identifier: MIT */
/*
 * png-stats FILE [BACKGROUND [COLOUR...]]: what a screenshot shows, read with
 * libpng (not with the compositor's code). Prints one line:
 *   "WIDTH HEIGHT NON_BACKGROUND DISTINCT [N_COLOUR...]"
 * NON_BACKGROUND: pixels whose RGB differs from BACKGROUND (hex RRGGBB,
 * default 202020, the example compositor's); DISTINCT: how many different
 * RGB values those pixels have (counted up to 4096); N_COLOUR: for each
 * COLOUR (hex RRGGBB), the pixels within 24 of it in every channel — a
 * client's own content (mpv's test pattern bars), which a wrong buffer,
 * an empty window or the background does not show.
 * Exit: 0, 1 when the file cannot be read as a PNG, 2 on usage errors.
 */
#include <png.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DISTINCT 4096
#define NEAR 24

static size_t
near_count(const uint8_t *px, size_t n, uint32_t rgb)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++) {
		bool near = true;

		for (int c = 0; c < 3; c++) {
			int want = (int)(rgb >> (16 - 8 * c)) & 0xff;

			near &= abs((int)px[i * 3 + c] - want) <= NEAR;
		}
		count += near;
	}
	return count;
}

int
main(int argc, char **argv)
{
	png_image img;
	uint8_t *px;
	uint32_t bg = 0x202020, seen[MAX_DISTINCT];
	size_t nseen = 0, nonbg = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: png-stats FILE [RRGGBB [RRGGBB...]]\n");
		return 2;
	}
	if (argc >= 3)
		bg = (uint32_t)strtoul(argv[2], NULL, 16);
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_file(&img, argv[1])) {
		fprintf(stderr, "png-stats: %s: %s\n", argv[1], img.message);
		return 1;
	}
	img.format = PNG_FORMAT_RGB;
	px = malloc(PNG_IMAGE_SIZE(img));
	if (!px || !png_image_finish_read(&img, NULL, px, 0, NULL)) {
		fprintf(stderr, "png-stats: %s: %s\n", argv[1], px ? img.message : "out of memory");
		free(px);
		return 1;
	}
	for (size_t i = 0; i < (size_t)img.width * img.height; i++) {
		uint32_t v = (uint32_t)px[i * 3] << 16 | (uint32_t)px[i * 3 + 1] << 8 | px[i * 3 + 2];
		size_t j;

		if (v == bg)
			continue;
		nonbg++;
		for (j = 0; j < nseen && seen[j] != v; j++)
			;
		if (j == nseen && nseen < MAX_DISTINCT)
			seen[nseen++] = v;
	}
	printf("%u %u %zu %zu", img.width, img.height, nonbg, nseen);
	for (int c = 3; c < argc; c++)
		printf(" %zu", near_count(px, (size_t)img.width * img.height,
					  (uint32_t)strtoul(argv[c], NULL, 16)));
	printf("\n");
	free(px);
	return 0;
}
