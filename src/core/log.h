/* SPDX-License-Identifier: MIT */
/*
 * The one logging macro family. Silent unless SYNCBRIDGE_DEBUG is set:
 *   SYNCBRIDGE_DEBUG=error|warn|info|debug (or 1 = debug) → that level and above.
 * Messages go to stderr as "syncbridge: LEVEL: file:line: message".
 * Say whose problem it is in the message (kernel / driver / caller / ours).
 */
#ifndef SB_LOG_H
#define SB_LOG_H

#include "private.h"

#include <errno.h>

enum sb_log_level {
	SB_LOG_SILENT = 0,
	SB_LOG_ERROR,
	SB_LOG_WARN,
	SB_LOG_INFO,
	SB_LOG_DEBUG,
};

/* Current threshold, read once from the environment. */
SB_PRIVATE enum sb_log_level sb_log_level(void);
SB_PRIVATE void sb_log_printf(enum sb_log_level level, const char *file, int line, int err,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define sb_log(level, ...)                                                        \
	do {                                                                      \
		if ((level) <= sb_log_level())                                    \
			sb_log_printf((level), __FILE__, __LINE__, 0, __VA_ARGS__); \
	} while (0)

/* Appends ": strerror(err)"; err is a positive or negative errno value. */
#define sb_log_errno(level, err, ...)                                                  \
	do {                                                                           \
		if ((level) <= sb_log_level())                                         \
			sb_log_printf((level), __FILE__, __LINE__, (err), __VA_ARGS__); \
	} while (0)

#define sb_error(...) sb_log(SB_LOG_ERROR, __VA_ARGS__)
#define sb_warn(...) sb_log(SB_LOG_WARN, __VA_ARGS__)
#define sb_info(...) sb_log(SB_LOG_INFO, __VA_ARGS__)
#define sb_debug(...) sb_log(SB_LOG_DEBUG, __VA_ARGS__)

#endif
