/* SPDX-License-Identifier: MIT */
/*
 * crosses-table (host): the comparison that turns crosses red can fail. Made-up
 * cells against a made-up expected table: a changed result, a changed errno, a
 * changed pending state, a device gone missing, a cell the table lacks and a
 * table cell never measured must each be reported by name; a match, an
 * alternative ("ok pending | ok signalled"), a note in either line and a cell
 * "not here" on both sides must not. "not here" cells are not counted.
 */
#include "crosses.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static const char expected[] =
	"# a comment, and a line that is not a cell\n"
	"same as before\n"
	"cell a -> b buffer: ok\n"
	"cell a -> c buffer: ERR mmap EINVAL (a note)\n"
	"cell a -> d fence: ok pending | ok signalled\n"
	"cell a -> e buffer: ERR PRIME_FD_TO_HANDLE ENODEV\n"
	"cell a -> f buffer: not here\n"
	"cell a -> g buffer: ok\n"
	"cell a -> h buffer: ERR x EINVAL\n"
	"cell a -> i fence: ok pending\n"
	"cell a -> k buffer: ok\n"
	"cell a -> l buffer: ok (the note is ignored)\n";

static void
cell(const char *importer, const char *kind, const char *head, const char *note)
{
	struct xres r;

	xres_set(&r, "%s", head);
	if (note)
		xres_note(&r, "%s", note);
	xcell("a", importer, kind, &r);
}

int
main(void)
{
	char table[] = "/tmp/crosses-table-XXXXXX", out[] = "/tmp/crosses-out-XXXXXX";
	static char report[16384];
	int checks = 0, failures = 0, measured, fd, saved;
	ssize_t n;

	fd = mkstemp(table);
	REQUIRE(fd >= 0 && write(fd, expected, strlen(expected)) == (ssize_t)strlen(expected),
		"write the expected table");
	close(fd);

	cell("b", "buffer", "ok", NULL);
	cell("c", "buffer", "ERR mmap EINVAL", "another note");
	cell("d", "fence", "ok signalled", NULL);
	cell("e", "buffer", "ok", NULL);              /* changed: now crosses */
	cell("f", "buffer", "not here", "no f here"); /* absent on both sides */
	cell("g", "buffer", "not here", "no g here"); /* the device went missing */
	cell("h", "buffer", "ERR x ENODEV", NULL);    /* another errno */
	cell("i", "fence", "ok signalled", NULL);     /* no longer pending */
	cell("j", "buffer", "ok", NULL);              /* not in the table */
	cell("l", "buffer", "ok", NULL);

	/* The comparison's report goes to a file, to be read back. */
	fflush(stdout);
	fd = mkstemp(out);
	REQUIRE(fd >= 0, "mkstemp");
	saved = dup(1);
	dup2(fd, 1);
	measured = xtable_check(table, &checks, &failures);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	n = pread(fd, report, sizeof(report) - 1, 0);
	report[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(out);
	unlink(table);
	tb_note("the comparison's report (its 'not ok' lines are the ones this test wants):");
	printf("%s", report);

	CHECK_EQ(measured, 7, "table cells measured (b c d e h i l; f and g are not here)");
	CHECK_EQ(checks, 10, "checks: 7 measured, g gone missing, j not in the table, k never measured");
	CHECK_EQ(failures, 6, "failures: e g h i j k");
	/* Each failure named by a line of the report. */
	static const struct {
		const char *line, *what;
	} named[] = {
		{ "cell a -> e buffer changed: expected ERR PRIME_FD_TO_HANDLE ENODEV, got ok",
		  "a cell that now crosses is named" },
		{ "cell a -> g buffer changed: expected ok, but it is not here (no g here)",
		  "a device gone missing is named" },
		{ "cell a -> h buffer changed: expected ERR x EINVAL, got ERR x ENODEV",
		  "another errno is named" },
		{ "cell a -> i fence changed: expected ok pending, got ok signalled",
		  "a fence no longer pending is named" },
		{ "cell a -> j buffer: ok is not in the expected table",
		  "a cell the table lacks is named" },
		{ "cell a -> k buffer (expected: ok) was not measured",
		  "a table cell never measured is named" },
	};
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		CHECK(strstr(report, named[i].line), "%s", named[i].what);
	CHECK(!strstr(report, "a -> b buffer changed") && !strstr(report, "a -> c buffer changed") &&
	      !strstr(report, "a -> d fence changed") && !strstr(report, "a -> f buffer") &&
	      !strstr(report, "a -> l buffer changed"),
	      "matches, alternatives, notes and 'not here' on both sides are not reported");
	return tb_finish();
}
