/* SPDX-License-Identifier: MIT */
/*
 * The shared set-up of the EGL programs on a vgem dma-buf (egl_common.h).
 * No CHECK here: the harness's counters are per program file (harness.h);
 * only REQUIRE (bail out) and skips.
 */
#include "egl_common.h"

#include <syncbridge/egl.h>

#include "harness.h"

struct eglc_switches
eglc_switches_apply(int argc, char **argv)
{
	struct eglc_switches sw = {
		.control = tb_has_arg(argc, argv, "--control"),
		.disabled = tb_has_arg(argc, argv, "--disabled"),
		.fallback = tb_has_arg(argc, argv, "--fallback"),
		.core = tb_has_arg(argc, argv, "--core"),
	};

	if (sw.control || sw.disabled)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);
	if (sw.fallback)
		setenv("SYNCBRIDGE_EGL_FALLBACK", "1", 1);
	if (sw.core)
		setenv("SYNCBRIDGE_EGL_CORE", "1", 1);
	return sw;
}

void
eglc_app_open(struct eglc_app *a)
{
	int ret;

	a->caps = 0;
	a->vgem = sbk_vgem_open();
	if (a->vgem < 0)
		tb_skip("no vgem node (%s): run in the VM tier as root", strerror(-a->vgem));
	a->buf = (struct sbk_buf)SBK_BUF_INIT;
	REQUIRE(sbk_buf_create(SBK_BUF_VGEM, a->vgem, (size_t)EGLC_SIZE * EGLC_PITCH, &a->buf) == 0,
		"vgem buffer");
	ret = eglt_open(&a->t, EGLT_DEVICE_SW);
	if (ret == -ENODEV)
		tb_skip("no EGL software device (EGL_MESA_device_software)");
	REQUIRE(ret == 0, "eglt_open");
	ret = eglt_target_import(&a->t, a->buf.fd, EGLC_SIZE, EGLC_SIZE, EGLC_PITCH, &a->target);
	if (ret == -ENODEV)
		tb_skip("the software device cannot import the vgem dma-buf");
	REQUIRE(ret == 0, "import the dma-buf");
	REQUIRE(sb_egl_display_get_caps(a->t.dpy, &a->caps) == 0, "caps");
}

void
eglc_app_close(struct eglc_app *a)
{
	eglt_target_destroy(&a->t, &a->target);
	eglt_close(&a->t);
	sbk_buf_destroy(&a->buf);
	close(a->vgem);
}

void
eglc_cpu_fill(const struct sbk_buf *buf, uint8_t value)
{
	for (int y = 0; y < EGLC_SIZE; y++)
		memset((uint8_t *)buf->map + (size_t)y * EGLC_PITCH, value, EGLC_SIZE * 4);
}

long
eglc_cpu_count(const struct sbk_buf *buf, uint8_t value)
{
	long n = 0;

	for (int y = 0; y < EGLC_SIZE; y++) {
		const uint8_t *row = (const uint8_t *)buf->map + (size_t)y * EGLC_PITCH;

		for (int x = 0; x < EGLC_SIZE * 4; x++)
			n += row[x] == value;
	}
	return n;
}
