/* SPDX-License-Identifier: MIT */
/*
 * Markers for `syncbridge-info trace` (docs/inspect.md, "Markers"): one line
 * per event, so a fence timeline shows which library call made which fence.
 *
 *   SYNCBRIDGE_TRACE unset, empty or "0"  off: sb_trace() is one cached
 *                                         check, its arguments are not evaluated
 *   SYNCBRIDGE_TRACE=1 (anything else)    on: lines go to the file named by
 *                                         $SYNCBRIDGE_TRACE_MARKER (what
 *                                         `syncbridge-info trace` sets), else to
 *                                         tracefs' global trace_marker
 *
 * Lines are "syncbridge: NAME key=value ..." (an instant), "syncbridge: begin
 * NAME ..." / "syncbridge: end NAME ..." (a span on the writing thread), each
 * written with one write(): tracefs makes every write one event, and writes
 * from several threads never interleave. Values hold no blanks.
 *
 * The file is opened (O_CLOEXEC) for each line and closed again, so tracing
 * never changes the program's fd count. Never fails the caller: a marker file
 * that cannot be opened at the first marker turns markers off, a later failed
 * open or write drops the line; each is logged once at info level.
 * Internal (SYNCBRIDGE_PRIVATE, private.h): the EGL bridge, the Wayland and
 * PipeWire helpers share libsyncbridge.so's state; the Vulkan layer links the
 * static core, so it has its own copy (and its own fd).
 */
#ifndef SB_TRACE_H
#define SB_TRACE_H

#include "private.h"

#include <stdbool.h>
#include <stddef.h>

/* Whether markers are on (the environment is read once per process). */
SB_PRIVATE bool sb_trace_enabled(void);

/* Write "syncbridge: " + the formatted text + "\n" with one write(). */
SB_PRIVATE void sb_trace_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define sb_trace(...)                                    \
	do {                                             \
		if (sb_trace_enabled())                  \
			sb_trace_printf(__VA_ARGS__);    \
	} while (0)

/*
 * Marker keys describing a sync_file (borrowed, never closed), for use inside
 * sb_trace()'s arguments (the struct lives until the end of the statement):
 *   "fence=CTX:SEQNO driver=D timeline=T status=signalled|active|error"
 * CTX:SEQNO is the fence's (context, seqno), as the dma_fence tracepoints
 * print it, decoded from the sync_file's kernel-made name when the file holds
 * one fence (or is one fence array / chain); "fences=N" replaces the driver
 * and timeline when it holds several; "fence=none" for fd -1, "fence=?" when
 * fd is not a sync_file.
 */
struct sb_trace_keys {
	char s[192];
};
SB_PRIVATE struct sb_trace_keys sb_trace_sync_file(int fd);

/* The inode number of a dma-buf fd ("buf_ino=", as in syncbridge-info dmabuf), 0 on error. */
SB_PRIVATE unsigned long sb_trace_ino(int fd);

#endif
