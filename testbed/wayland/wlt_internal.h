/* SPDX-License-Identifier: MIT */
/* What wlt.c and wlt_comp.c share and nobody else uses. */
#ifndef SB_WLT_INTERNAL_H
#define SB_WLT_INTERNAL_H

#include <stddef.h>

/* A fresh /tmp/sbwl-test-XXXXXX into out, set as XDG_RUNTIME_DIR; 0 or -errno. */
int wlt_make_runtime_dir(char *out, size_t len);

#endif
