/* SPDX-License-Identifier: MIT */
#include <syncbridge/common.h>

const char *
sb_library_get_version(void)
{
	return SB_VERSION;
}
