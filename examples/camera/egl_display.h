/* SPDX-License-Identifier: MIT */
/*
 * The camera demo's display stage: EGL/GLES on the EGL device platform's
 * software device. Each YUYV capture buffer is imported once as an EGLImage
 * (as ARGB8888 of half the width: one texel = Y0 U Y1 V) and converted to RGB
 * by a shader into the stage's own texture. Around the draw, the EGL bridge
 * makes GL wait for the buffer's writers and attaches GL's read fence to it —
 * so the buffer queue's release fence (sb_buffer_queue_release_dmabuf) covers
 * this consumer too.
 */
#ifndef SB_DEMO_EGL_DISPLAY_H
#define SB_DEMO_EGL_DISPLAY_H

#include <stdint.h>

struct egl_display;

/* fds: borrowed (EGL takes its own references; the stage keeps the numbers
 * for the bridge calls, so they must stay open). Returns 0, -ENODEV, -EIO. */
int egl_display_create(const int *fds, unsigned count, uint32_t width, uint32_t height,
		       uint32_t stride, struct egl_display **out);
/* Show buffer i: bridge wait, convert + draw, bridge attach. */
int egl_display_show(struct egl_display *d, unsigned i);
/* What was shown last, RGB, width*3 bytes per row, top row first. */
int egl_display_read(struct egl_display *d, uint8_t *rgb);
const char *egl_display_describe(const struct egl_display *d);
/* NULL is a no-op. */
void egl_display_destroy(struct egl_display *d);

#endif
