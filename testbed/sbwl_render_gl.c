/* SPDX-License-Identifier: MIT */
/* The example compositor's GL renderer (sbwl_internal.h). Stub: being written. */
#include <errno.h>
#include <stddef.h>

#include "sbwl_internal.h"

struct sbwl_renderer *
sbwl_renderer_gl_create(uint32_t width, uint32_t height, int *err)
{
	*err = -ENODEV;
	return NULL;
}
