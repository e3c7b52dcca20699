/* SPDX-License-Identifier: MIT */
/*
 * sb_library_get_version(), called through the shared library as an application would,
 * returns the meson project version ("MAJOR.MINOR.PATCH"), the same static
 * string every time.
 */
#include <syncbridge/common.h>

#include <ctype.h>
#include <stdbool.h>

#include "harness.h"

#ifndef EXPECTED_VERSION
#error "build with -DEXPECTED_VERSION=\"<meson.project_version()>\""
#endif

static bool
is_semver(const char *v)
{
	for (int part = 0; part < 3; part++) {
		if (!isdigit((unsigned char)*v))
			return false;
		while (isdigit((unsigned char)*v))
			v++;
		if (part < 2 && *v++ != '.')
			return false;
	}
	return *v == '\0';
}

int
main(void)
{
	const char *v = sb_library_get_version();

	REQUIRE(v != NULL, "sb_library_get_version() returned NULL");
	CHECK(strcmp(v, EXPECTED_VERSION) == 0, "sb_library_get_version() = \"%s\", meson project version \"%s\"",
	      v, EXPECTED_VERSION);
	CHECK(is_semver(v), "sb_library_get_version() = \"%s\" is not MAJOR.MINOR.PATCH", v);
	CHECK(sb_library_get_version() == v, "sb_library_get_version() returned a different pointer the second time");
	return tb_finish();
}
