/* SPDX-License-Identifier: MIT */
#include <syncbridge/common.h>

const char *
sb_version(void)
{
	return SB_VERSION;
}
