/* SPDX-License-Identifier: MIT */
#ifndef XDG_SHELL_SEAT_H
#define XDG_SHELL_SEAT_H

/* Add a bare wl_seat global to a server wl_display (on its thread: wlt_comp_call). */
void xdgt_seat_add(void *display);

#endif
