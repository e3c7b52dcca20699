/* SPDX-License-Identifier: MIT */
/*
 * What the PipeWire test programs (tests/pipewire/pw_frames.c,
 * pw_screencast.c) share around their stream: a main loop that ends on
 * SIGINT and SIGTERM, and the stream's events from the handlers each
 * program names alike.
 */
#ifndef TB_PWT_H
#define TB_PWT_H

#include <pipewire/pipewire.h>

/*
 * A main loop that quits on SIGINT and SIGTERM (PipeWire takes them through
 * a signalfd: block them in every thread first where there are threads).
 * NULL when PipeWire cannot make one. pw_init() first.
 */
struct pw_main_loop *pwt_main_loop_new(void);

/*
 * A program's pw_stream_events, from the static handlers it names
 * on_state_changed, on_param_changed, on_add_buffer, on_remove_buffer and
 * on_process: every test stream registers its buffers with the bridge and
 * answers the format itself.
 */
#define PWT_STREAM_EVENTS                                                             \
	{ PW_VERSION_STREAM_EVENTS, .state_changed = on_state_changed,                  \
	  .param_changed = on_param_changed, .add_buffer = on_add_buffer,               \
	  .remove_buffer = on_remove_buffer, .process = on_process }

#endif
