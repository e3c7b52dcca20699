/* SPDX-License-Identifier: MIT */
/* wl_output, wl_seat, wl_subcompositor, wp_presentation (sbwl_internal.h). Stub. */
#include <stdlib.h>

#include "sbwl_internal.h"

struct sbwl_globals {
	int unused;
};

struct sbwl_globals *
sbwl_globals_create(struct sbwl_comp *comp)
{
	return calloc(1, sizeof(struct sbwl_globals));
}

void
sbwl_globals_destroy(struct sbwl_globals *g)
{
	free(g);
}

void
sbwl_presentation_presented(struct sbwl_comp *comp, struct wl_list *feedbacks, int64_t time_ns,
			    uint64_t msc)
{
}

void
sbwl_presentation_discarded(struct wl_list *feedbacks)
{
}
