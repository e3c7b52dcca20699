/* SPDX-License-Identifier: MIT */
/*
 * The consumer's pictures: a contact sheet of SHEET_COLS × SHEET_ROWS frames
 * picked evenly over the run, each framed green (whole) or red (torn), and
 * a few single frames — evenly spaced ones and the first torn ones — as PNG.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "camera_pw.h"

#define SHEET_COLS 6
#define SHEET_ROWS 4
#define SHEET_CELLS (SHEET_COLS * SHEET_ROWS)
#define SHEET_BORDER 4
#define SHEET_GAP 4
#define SAVED_FRAMES 4
#define SAVED_TORN 3

static const uint8_t whole_rgb[3] = { 60, 200, 90 };
static const uint8_t torn_rgb[3] = { 230, 50, 50 };

struct sheet {
	const char *dir;
	unsigned frames;
	uint32_t width, height;
	struct demo_sheet pic;
	unsigned torn_saved;
	bool placed;
};

int
sheet_create(const char *dir, unsigned frames, uint32_t width, uint32_t height,
	     struct sheet **out)
{
	struct sheet *s;
	int ret;

	*out = NULL;
	ret = demo_mkdir_p(dir);
	if (ret < 0) {
		fprintf(stderr, PROG ": consumer: cannot create %s: %s\n", dir, strerror(-ret));
		return ret;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->dir = dir;
	s->frames = frames;
	s->width = width;
	s->height = height;
	s->pic = (struct demo_sheet){ .cols = SHEET_COLS, .rows = SHEET_ROWS, .frame_w = width,
				      .frame_h = height, .border = SHEET_BORDER, .gap = SHEET_GAP };
	if (demo_sheet_alloc(&s->pic) < 0) {
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

/* The run's frame shown in cell k. */
static unsigned
cell_frame(const struct sheet *s, unsigned k)
{
	return (unsigned)((uint64_t)k * s->frames / SHEET_CELLS);
}

static void
save(const struct sheet *s, const char *name, unsigned index, const uint8_t *rgba)
{
	char path[4096];
	int ret;

	snprintf(path, sizeof(path), "%s/%s-%03u.png", s->dir, name, index);
	ret = demo_png_write(path, rgba, s->width, s->height, s->width * 4, 4);
	if (ret < 0)
		fprintf(stderr, PROG ": consumer: writing %s: %s\n", path, strerror(-ret));
}

void
sheet_add(struct sheet *s, unsigned index, const uint8_t *rgba, bool torn)
{
	if (!s)
		return;
	for (unsigned k = 0; k < SHEET_CELLS; k++)
		if (cell_frame(s, k) == index) {
			demo_sheet_put(&s->pic, k, rgba, torn ? torn_rgb : whole_rgb);
			s->placed = true;
		}
	for (unsigned k = 0; k < SAVED_FRAMES && s->frames > 1; k++)
		if (index == (unsigned)((uint64_t)k * (s->frames - 1) / (SAVED_FRAMES - 1)))
			save(s, "frame", index, rgba);
	if (torn && s->torn_saved < SAVED_TORN) {
		s->torn_saved++;
		save(s, "torn", index, rgba);
	}
}

int
sheet_finish(struct sheet *s)
{
	char path[4096];
	int ret = 0;

	if (!s)
		return 0;
	if (s->placed) {
		snprintf(path, sizeof(path), "%s/contact-sheet.png", s->dir);
		ret = demo_sheet_write(&s->pic, path);
		if (ret < 0)
			fprintf(stderr, PROG ": consumer: writing %s: %s\n", path, strerror(-ret));
	}
	free(s->pic.rgb);
	free(s);
	return ret;
}
