/* SPDX-License-Identifier: MIT */
/* xdg-shell for the example compositor (sbwl_internal.h). Stub: being written. */
#include <stdlib.h>

#include "sbwl_internal.h"

struct sbwl_shell {
	struct sbwl_comp *comp;
};

struct sbwl_shell *
sbwl_shell_create(struct sbwl_comp *comp)
{
	struct sbwl_shell *shell = calloc(1, sizeof(*shell));

	if (shell)
		shell->comp = comp;
	return shell;
}

void
sbwl_shell_destroy(struct sbwl_shell *shell)
{
	free(shell);
}

int
sbwl_shell_close_all(struct sbwl_shell *shell)
{
	return 0;
}
