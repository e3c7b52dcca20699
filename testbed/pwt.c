/* SPDX-License-Identifier: MIT */
#include <signal.h>

#include "pwt.h"

static void
on_signal(void *data, int signo)
{
	pw_main_loop_quit(data);
}

struct pw_main_loop *
pwt_main_loop_new(void)
{
	struct pw_main_loop *loop = pw_main_loop_new(NULL);

	if (!loop)
		return NULL;
	pw_loop_add_signal(pw_main_loop_get_loop(loop), SIGINT, on_signal, loop);
	pw_loop_add_signal(pw_main_loop_get_loop(loop), SIGTERM, on_signal, loop);
	return loop;
}
