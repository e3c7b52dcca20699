/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static enum sb_log_level threshold = SB_LOG_SILENT;
static pthread_once_t threshold_once = PTHREAD_ONCE_INIT;

static void
read_env(void)
{
	const char *v = getenv("SYNCBRIDGE_DEBUG");

	if (!v || !*v || strcmp(v, "0") == 0)
		threshold = SB_LOG_SILENT;
	else if (strcasecmp(v, "error") == 0)
		threshold = SB_LOG_ERROR;
	else if (strcasecmp(v, "warn") == 0 || strcasecmp(v, "warning") == 0)
		threshold = SB_LOG_WARN;
	else if (strcasecmp(v, "info") == 0)
		threshold = SB_LOG_INFO;
	else
		threshold = SB_LOG_DEBUG; /* "1", "debug", anything else */
}

enum sb_log_level
sb_log_level(void)
{
	pthread_once(&threshold_once, read_env);
	return threshold;
}

void
sb_log_printf(enum sb_log_level level, const char *file, int line, int err, const char *fmt, ...)
{
	static const char *const names[] = { "", "error", "warn", "info", "debug" };
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	/* One fprintf so lines from several threads do not interleave. */
	if (err)
		fprintf(stderr, "syncbridge: %s: %s:%d: %s: %s\n", names[level], file, line, msg,
			strerror(err < 0 ? -err : err));
	else
		fprintf(stderr, "syncbridge: %s: %s:%d: %s\n", names[level], file, line, msg);
}
