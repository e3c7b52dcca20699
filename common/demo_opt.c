/* SPDX-License-Identifier: MIT */
/*
 * Command-line options from a table (demo_util.h, "options"): every program
 * in examples/, the compositor and syncbridge-info's trace had the same
 * getopt_long loop, a longopts table beside a switch that parsed each value
 * and a "bad value" path; the table holds what differed.
 */
#include "demo_util.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 32
/* getopt_long's val for the table's row i: above every short option. */
#define ROW_VAL 256
/* getopt_long's val for --version: no short option has it, no row either. */
#define VERSION_VAL (ROW_VAL - 1)

/* DEMO_VERSION: the meson project's version (common/meson.build). */
#ifndef DEMO_VERSION
#define DEMO_VERSION "unknown"
#endif

/* A whole decimal number in [min, max], nothing else in s. */
static bool
parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool
demo_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	long v;

	/* No sign at all: "-0" is not a count either. */
	if (s[0] == '-' || !parse_long(s, (long)min, (long)max, &v))
		return false;
	*out = (unsigned)v;
	return true;
}

int
demo_parse_word(const char *s, const char *const *words)
{
	for (int i = 0; words[i]; i++)
		if (strcmp(s, words[i]) == 0)
			return i;
	return -1;
}

static bool
parse_int(const char *s, long min, long max, int *out)
{
	long v;

	if (!parse_long(s, min, max, &v))
		return false;
	*out = (int)v;
	return true;
}

/* "WxH", each in [min, max]. */
static bool
parse_size(const char *s, unsigned min, unsigned max, uint32_t *w, uint32_t *h)
{
	unsigned a, b;
	char *x = strchr(s, 'x'), first[16];

	if (!x || (size_t)(x - s) >= sizeof(first))
		return false;
	memcpy(first, s, (size_t)(x - s));
	first[x - s] = '\0';
	if (!demo_parse_uint(first, min, max, &a) || !demo_parse_uint(x + 1, min, max, &b))
		return false;
	*w = a;
	*h = b;
	return true;
}

static bool
store(const struct demo_opt *o, const char *arg)
{
	int k;

	switch (o->kind) {
	case DEMO_OPT_FLAG:
		*(bool *)o->dst = true;
		return true;
	case DEMO_OPT_STRING:
		*(const char **)o->dst = arg;
		return true;
	case DEMO_OPT_UINT:
		return demo_parse_uint(arg, (unsigned)o->min, (unsigned)o->max, o->dst);
	case DEMO_OPT_INT:
		return parse_int(arg, o->min, o->max, o->dst);
	case DEMO_OPT_WORD:
		k = demo_parse_word(arg, o->words);
		if (k < 0)
			return false;
		*(int *)o->dst = k;
		return true;
	case DEMO_OPT_SIZE:
		return parse_size(arg, (unsigned)o->min, (unsigned)o->max, o->dst, o->dst2);
	}
	return false;
}

/* "PROG: bad value 'ARG' for --NAME (want ...)" */
static void
bad_value(const char *prog, const struct demo_opt *o, const char *arg)
{
	fprintf(stderr, "%s: bad value '%s' for --%s (want ", prog, arg, o->name);
	switch (o->kind) {
	case DEMO_OPT_WORD:
		for (int i = 0; o->words[i]; i++)
			fprintf(stderr, "%s%s", i ? "|" : "", o->words[i]);
		break;
	case DEMO_OPT_SIZE:
		fprintf(stderr, "WxH, each %ld-%ld", o->min, o->max);
		break;
	default:
		fprintf(stderr, "%ld-%ld", o->min, o->max);
		break;
	}
	fprintf(stderr, ")\n");
}

/* "PROG VERSION" on stdout: prog's first word ("syncbridge-info trace" is syncbridge-info). */
static void
print_version(const char *prog)
{
	printf("%.*s %s\n", (int)strcspn(prog, " "), prog, DEMO_VERSION);
}

/*
 * What getopt_long() did not like, said with prog's prefix rather than
 * getopt's own message, which names argv[0] (a path, or a command's name).
 */
static void
bad_option(const char *prog, int c, char **argv)
{
	const char *arg = argv[optind - 1];
	char shortname[3] = { '-', (char)optopt, '\0' };

	/* optopt: the short option's letter, a long option's val, or 0 for an unknown long one */
	if (optopt > 0 && optopt < 128 && strncmp(arg, "--", 2) != 0)
		arg = shortname;
	if (c == ':')
		fprintf(stderr, "%s: option '%s' needs a value\n", prog, arg);
	else
		fprintf(stderr, "%s: unknown option '%s'\n", prog, arg);
}

/*
 * getopt_long()'s tables from opts: longopts (MAX_OPTS + 3) and shorts
 * (2 * MAX_OPTS + 4). Returns 0, or -EINVAL for a table too long.
 */
static int
getopt_tables(const char *prog, const struct demo_opt *opts, unsigned flags,
	      struct option *longopts, char *shorts)
{
	size_t n = 0, ns = 0;

	/* '+': stop at the first operand, so that a command's own options stay its */
	if (flags & DEMO_OPT_OPERANDS)
		shorts[ns++] = '+';
	shorts[ns++] = ':'; /* a missing value is ':', not '?': bad_option() tells them apart */
	for (; opts[n].name; n++) {
		if (n == MAX_OPTS) {
			fprintf(stderr, "%s: more than %d options\n", prog, MAX_OPTS);
			return -EINVAL;
		}
		longopts[n] = (struct option){ opts[n].name,
					       opts[n].kind == DEMO_OPT_FLAG ? no_argument
									     : required_argument,
					       NULL, ROW_VAL + (int)n };
		if (opts[n].short_name) {
			shorts[ns++] = opts[n].short_name;
			if (opts[n].kind != DEMO_OPT_FLAG)
				shorts[ns++] = ':';
		}
	}
	longopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	longopts[n++] = (struct option){ "version", no_argument, NULL, VERSION_VAL };
	longopts[n] = (struct option){ 0 };
	shorts[ns++] = 'h';
	shorts[ns] = '\0';
	return 0;
}

int
demo_opt_parse(const char *prog, int argc, char **argv, const struct demo_opt *opts,
	       void (*usage)(FILE *f), unsigned flags)
{
	struct option longopts[MAX_OPTS + 3]; /* the rows, help, version, the end */
	char shorts[2 * MAX_OPTS + 4];
	bool seen[MAX_OPTS] = { false };
	int c;

	if (getopt_tables(prog, opts, flags, longopts, shorts) < 0)
		return -EINVAL;
	optind = 1;
	opterr = 0; /* bad_option() says it, with prog's prefix */
	while ((c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
		const struct demo_opt *o = NULL;

		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == VERSION_VAL) {
			print_version(prog);
			exit(0);
		}
		if (c >= ROW_VAL)
			o = &opts[c - ROW_VAL];
		for (size_t i = 0; !o && c != '?' && c != ':' && opts[i].name; i++)
			if (opts[i].short_name == c)
				o = &opts[i];
		if (!o) {
			bad_option(prog, c, argv);
			usage(stderr);
			return -EINVAL;
		}
		if (!store(o, optarg)) {
			bad_value(prog, o, optarg);
			return -EINVAL;
		}
		seen[o - opts] = true;
	}
	for (size_t i = 0; opts[i].name; i++) {
		if (opts[i].required && !seen[i]) {
			fprintf(stderr, "%s: --%s is required\n", prog, opts[i].name);
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc && !(flags & DEMO_OPT_OPERANDS)) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
		usage(stderr);
		return -EINVAL;
	}
	return optind;
}
