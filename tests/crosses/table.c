/* SPDX-License-Identifier: MIT */
/*
 * The cells and the expected table. Each cell prints as
 *   cell EXPORTER -> IMPORTER KIND: HEAD (NOTE)
 * where HEAD is what is compared ("ok", "ok pending", "ERR PRIME_FD_TO_HANDLE
 * ENODEV", "not here") and NOTE is free text (what was read, why a driver is
 * missing). The expected table (expected-*.txt next to this file) has the
 * same lines; '#' starts a comment, a note is ignored, and " | " separates
 * alternatives where the guest's timing decides (the file says why).
 */
#include "crosses.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAX_CELLS 256

struct xcell_rec {
	char key[96]; /* "EXP -> IMP KIND" */
	struct xres r;
	bool seen;    /* matched an expected line */
};

static struct xcell_rec cells[MAX_CELLS];
static int n_cells;

void
xres_set(struct xres *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->head, sizeof(r->head), fmt, ap);
	va_end(ap);
	r->note[0] = '\0';
}

void
xres_errno(struct xres *r, const char *step, int err)
{
	const char *name = strerrorname_np(err < 0 ? -err : err);

	xres_set(r, "ERR %s %s", step, name ? name : "E?");
}

void
xres_note(struct xres *r, const char *fmt, ...)
{
	size_t len = strlen(r->note);
	va_list ap;

	if (len && len + 2 < sizeof(r->note)) {
		strcat(r->note, "; ");
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(r->note + len, sizeof(r->note) - len, fmt, ap);
	va_end(ap);
}

bool
xres_failed(const struct xres *r)
{
	return strncmp(r->head, "ok", 2) != 0;
}

void
xcell(const char *exporter, const char *importer, const char *kind, const struct xres *r)
{
	REQUIRE(n_cells < MAX_CELLS, "more than %d cells", MAX_CELLS);
	struct xcell_rec *c = &cells[n_cells++];

	snprintf(c->key, sizeof(c->key), "%s -> %s %s", exporter, importer, kind);
	c->r = *r;
	c->seen = false;
	printf("cell %s: %s%s%s%s\n", c->key, r->head, r->note[0] ? " (" : "", r->note,
	       r->note[0] ? ")" : "");
	fflush(stdout);
}

void
xtable_reset(void)
{
	n_cells = 0;
}

static struct xcell_rec *
find(const char *key)
{
	for (int i = 0; i < n_cells; i++)
		if (strcmp(cells[i].key, key) == 0)
			return &cells[i];
	return NULL;
}

bool
xlist_has(const char *list, const char *sep, const char *item)
{
	size_t len = strlen(item), sep_len = strlen(sep);

	for (const char *p = list; p;) {
		const char *end = strstr(p, sep);
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == len && strncmp(p, item, n) == 0)
			return true;
		p = end ? end + sep_len : NULL;
	}
	return false;
}

/* Whether head is one of the " | "-separated alternatives in want. */
static bool
matches(const char *want, const char *head)
{
	return xlist_has(want, " | ", head);
}

/* "cell KEY: WANT (note)" → key and want (the note dropped); false for other lines. */
static bool
parse(char *line, char **key, char **want)
{
	char *colon, *paren;

	line[strcspn(line, "\r\n")] = '\0';
	if (strncmp(line, "cell ", 5) != 0)
		return false;
	colon = strstr(line, ": ");
	if (!colon)
		return false;
	*colon = '\0';
	*key = line + 5;
	*want = colon + 2;
	paren = strstr(*want, " (");
	if (paren)
		*paren = '\0';
	return true;
}

int
xtable_check(const char *path, int *checks, int *failures)
{
	FILE *f = fopen(path, "re");
	char line[512];
	int measured = 0, as_expected = 0, absent = 0, lines = 0;

	REQUIRE(f, "the expected table %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *key, *want;
		struct xcell_rec *c;

		if (!parse(line, &key, &want))
			continue;
		lines++;
		c = find(key);
		if (!c) {
			CHECK(0, "cell %s (expected: %s) was not measured", key, want);
			continue;
		}
		c->seen = true;
		if (strcmp(c->r.head, "not here") == 0) {
			absent++;
			/* Not a pass: a device this guest lacks. A device that went missing is a change. */
			if (strcmp(want, "not here") != 0)
				CHECK(0, "cell %s changed: expected %s, but it is not here (%s)", key, want,
				      c->r.note);
			continue;
		}
		measured++;
		CHECK(matches(want, c->r.head), "cell %s changed: expected %s, got %s%s%s%s", key, want,
		      c->r.head, c->r.note[0] ? " (" : "", c->r.note, c->r.note[0] ? ")" : "");
		as_expected += matches(want, c->r.head);
	}
	fclose(f);
	for (int i = 0; i < n_cells; i++)
		if (!cells[i].seen)
			CHECK(0, "cell %s: %s is not in the expected table %s", cells[i].key,
			      cells[i].r.head, path);
	printf("crosses: %d cells in %s; %d measured, %d of them as expected; %d not here "
	       "(not counted)\n", lines, path, measured, as_expected, absent);
	/* harness.h's counters are this file's own: hand them to the caller's. */
	*checks += tb_checks;
	*failures += tb_failures;
	tb_checks = tb_failures = 0;
	return measured;
}
