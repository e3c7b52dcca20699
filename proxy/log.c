/* SPDX-License-Identifier: MIT */
/*
 * The proxy's one log line: stderr when SYNCBRIDGE_DEBUG asks for it, read
 * once, as the library reads it (docs/wl-proxy.md); silent
 * otherwise. The bottom of the proxy: everything may call it.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "proxy.h"

/* Any level (1, debug, info, ...) but off. */
static bool
debug_wanted(const char *v)
{
	static const char *const off[] = { "0", "no", "false", "off", "none" };

	if (!v || !*v)
		return false;
	for (size_t k = 0; k < sizeof(off) / sizeof(off[0]); k++)
		if (strcasecmp(v, off[k]) == 0)
			return false;
	return true;
}

void
pxy_log(const char *fmt, ...)
{
	static int on = -1; /* not read yet */
	va_list ap;

	if (on < 0)
		on = debug_wanted(getenv("SYNCBRIDGE_DEBUG"));
	if (!on)
		return;
	fprintf(stderr, "syncbridge-wl-proxy: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
