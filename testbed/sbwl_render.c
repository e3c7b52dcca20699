/* SPDX-License-Identifier: MIT */
/* The CPU renderer and the screenshot (sbwl_internal.h). Stub. */
#include <errno.h>
#include <stddef.h>

#include "sbwl_internal.h"

struct sbwl_renderer *
sbwl_renderer_cpu_create(uint32_t width, uint32_t height, int *err)
{
	*err = -ENODEV;
	return NULL;
}

void
sbwl_renderer_destroy(struct sbwl_renderer *r)
{
	if (r)
		r->impl->destroy(r);
}

int
sbwl_renderer_screenshot(struct sbwl_renderer *r, const char *path)
{
	return -ENODEV;
}
