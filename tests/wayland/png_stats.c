/* SPDX-License-Identifier: MIT */
/*
 * png-stats FILE [BACKGROUND]: what a screenshot shows, read with libpng
 * (not with the compositor's code). Prints one line:
 *   "WIDTH HEIGHT NON_BACKGROUND DISTINCT"
 * NON_BACKGROUND: pixels whose RGB differs from BACKGROUND (hex RRGGBB,
 * default 202020, the example compositor's); DISTINCT: how many different
 * RGB values those pixels have (counted up to 4096).
 * Exit: 0, 1 when the file cannot be read as a PNG, 2 on usage errors.
 */
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DISTINCT 4096

int
main(int argc, char **argv)
{
	png_image img;
	uint8_t *px;
	uint32_t bg = 0x202020, seen[MAX_DISTINCT];
	size_t nseen = 0, nonbg = 0;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: png-stats FILE [RRGGBB]\n");
		return 2;
	}
	if (argc == 3)
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
	printf("%u %u %zu %zu\n", img.width, img.height, nonbg, nseen);
	free(px);
	return 0;
}
