/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-info: inspect fences on sync_files and dma-bufs, and draw fence
 * timelines. See docs/inspect.md and syncbridge-info(1).
 *
 * The subcommands are rows of one table (struct info_command, info.h): the
 * overview, `help COMMAND`, `COMMAND --help` and the dispatch read it, so a
 * new command is a row here plus its run and help functions.
 *
 * The conventions of drm_info, wayland-info, vulkaninfo and pw-dump: help on
 * stdout with exit 0; errors on stderr, one line each with one prefix
 * ("syncbridge-info: "), stdout left empty; exit 0 ok, 1 a runtime error
 * (no such process or fd, no permission, a kernel without the ioctl), 2 a
 * command line that can never work.
 */
#include <stdio.h>
#include <string.h>

#include "info.h"

static int cmd_help(int argc, char **argv, const struct info_opts *o);
static void help_help(FILE *f);

static const struct info_command commands[] = {
	{.name = "fence",
	 .args = "FD|/proc/PID/fd/N",
	 .summary = "the fences in a sync_file: driver, timeline, status, completion time",
	 .run = info_cmd_fence,
	 .help = info_help_fence},
	{.name = "dmabuf",
	 .alias = "dma-buf",
	 .args = "FD|/proc/PID/fd/N",
	 .summary = "a dma-buf: size, exporter, attached fences, what readers/writers wait for",
	 .run = info_cmd_dmabuf,
	 .help = info_help_dmabuf},
	{.name = "ps",
	 .args = "[PID]",
	 .summary = "every dma-buf, sync_file and syncobj fd of a process (or of all)",
	 .run = info_cmd_ps,
	 .help = info_help_ps},
	{.name = "trace",
	 .args = "[OPTIONS] -- CMD...",
	 .summary = "record dma_fence events while CMD runs: Perfetto JSON and an SVG timeline",
	 .run = info_cmd_trace,
	 .help = info_help_trace,
	 .own_options = true},
	{.name = "doctor",
	 .args = "[--timeout-ms N]",
	 .summary =
		 "what keeps frames ordered here: fence uapi, Vulkan/EGL probes, layer, verdicts",
	 .run = info_cmd_doctor,
	 .help = info_doctor_usage},
	{.name = "help",
	 .args = "[COMMAND]",
	 .summary = "this overview, or a command's help",
	 .run = cmd_help,
	 .help = help_help},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct info_command *
find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0 ||
		    (commands[i].alias && strcmp(commands[i].alias, name) == 0))
			return &commands[i];
	return NULL;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: " INFO_PROG " [--json] COMMAND [ARGS]\n"
		   "       " INFO_PROG " help COMMAND | COMMAND --help\n\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %s %s\n      %s\n", commands[i].name, commands[i].args,
			commands[i].summary);
	fprintf(f,
		"\n"
		"  --json      machine-readable output (one JSON document on stdout)\n"
		"  --version   print the version\n"
		"  -h, --help  this help\n"
		"\n"
		"FD is an fd this program inherited, e.g.  " INFO_PROG " fence 3 3<file.\n"
		"/proc/PID/fd/N is another process's fd: it is copied with pidfd_getfd(), which\n"
		"needs ptrace access to PID (same user, or root). Nothing is waited on, imported\n"
		"or changed: the tool only looks.\n"
		"\n");
	info_help_exit_status(f);
	fprintf(f, "trace exits with CMD's own status instead (" INFO_PROG " help trace).\n"
		   "See syncbridge-info(1) and docs/inspect.md.\n");
}

/* "fence, dmabuf, ps, trace, help" */
static void
command_list(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NCOMMANDS && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
					 commands[i].name);
}

static int
unknown_command(const char *name)
{
	char list[256];

	command_list(list, sizeof(list));
	info_err("unknown command '%s' (commands: %s; see: " INFO_PROG " --help)", name, list);
	return INFO_EXIT_USAGE;
}

static void
help_help(FILE *f)
{
	fprintf(f, "usage: " INFO_PROG " help [COMMAND]\n"
		   "Prints the overview of every command, or COMMAND's help (the same as\n"
		   INFO_PROG " COMMAND --help), on stdout.\n");
	info_help_exit_status(f);
}

static int
cmd_help(int argc, char **argv, const struct info_opts *o)
{
	const struct info_command *c;

	if (argc == 1) {
		usage(stdout);
		return info_stdout_status();
	}
	if (argc > 2) {
		info_usage_err("help", "takes one COMMAND, not %d arguments", argc - 1);
		return INFO_EXIT_USAGE;
	}
	c = find_command(argv[1]);
	if (!c)
		return unknown_command(argv[1]);
	c->help(stdout);
	return info_stdout_status();
}

/* -h or --help among argv[1..argc) */
static bool
asks_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return true;
	return false;
}

int
main(int argc, char **argv)
{
	struct info_opts o = { 0 };
	const struct info_command *c;
	char *args[argc + 1];
	char list[256];
	int n = 0, i;

	/* global options may come before or after the command (not after trace's "--") */
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			break;
		} else if (strcmp(argv[i], "--json") == 0) {
			o.json = true;
		} else if (n == 0 &&
			   (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)) {
			usage(stdout);
			return info_stdout_status();
		} else if (n == 0 && strcmp(argv[i], "--version") == 0) {
			printf(INFO_PROG " %s\n", sb_library_get_version());
			return info_stdout_status();
		} else if (n == 0 && argv[i][0] == '-') {
			info_err("unknown option '%s' (see: " INFO_PROG " --help)", argv[i]);
			return INFO_EXIT_USAGE;
		} else {
			args[n++] = argv[i];
		}
	}
	for (; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;

	if (n == 0) {
		command_list(list, sizeof(list));
		info_err("no command given (commands: %s; see: " INFO_PROG " --help)", list);
		return INFO_EXIT_USAGE;
	}
	c = find_command(args[0]);
	if (!c)
		return unknown_command(args[0]);
	if (!c->own_options && asks_help(n, args)) {
		c->help(stdout);
		return info_stdout_status();
	}
	return c->run(n, args, &o);
}
