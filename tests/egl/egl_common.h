/* SPDX-License-Identifier: MIT */
/*
 * What the EGL bridge's VM-tier programs on a shared dma-buf have in common
 * (egl-attach, egl-dmabuf-wait, fault-egl): a vgem buffer that GL on the EGL
 * device platform's software device (llvmpipe) renders into and reads back
 * as an EGLImage target, and the CPU's side of the same pixels.
 *
 * The buffer is EGLC_SIZE x EGLC_SIZE pixels of 4 bytes, rows EGLC_PITCH
 * bytes apart (common/eglt.h: the imported image's pitch).
 */
#ifndef TB_EGL_COMMON_H
#define TB_EGL_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "eglt.h"
#include "kernel.h"

#define EGLC_SIZE 64
#define EGLC_PITCH 4096 /* the test helper's vgem buffers are 1024 px wide */

/*
 * The bridge's switches on the programs' command lines, each set in the
 * environment before the first bridge call: --control and --disabled
 * SYNCBRIDGE_DISABLE=1 (the bridge does nothing: a control shows the race),
 * --fallback SYNCBRIDGE_EGL_FALLBACK=1 (CPU waits), --core
 * SYNCBRIDGE_EGL_CORE=1 (the EGL 1.5 core entry points).
 */
struct eglc_switches {
	bool control, disabled, fallback, core;
};

struct eglc_switches eglc_switches_apply(int argc, char **argv);

struct eglc_app {
	int vgem;
	struct sbk_buf buf;        /* the vgem dma-buf, mapped */
	struct eglt t;             /* the software device's display and context */
	struct eglt_target target; /* the buffer as GL's render target / texture */
	uint32_t caps;             /* sb_egl_display_get_caps() of t.dpy */
};

/*
 * Open vgem, make the buffer, open the software device and import the buffer
 * into it. Skips the program (77) when vgem, the device or the import is
 * missing; any other failure bails out.
 */
void eglc_app_open(struct eglc_app *a);
void eglc_app_close(struct eglc_app *a);

/* The CPU's side: every byte of the pixels set to value. */
void eglc_cpu_fill(const struct sbk_buf *buf, uint8_t value);
/* How many bytes of the pixels are value. */
long eglc_cpu_count(const struct sbk_buf *buf, uint8_t value);

#endif
