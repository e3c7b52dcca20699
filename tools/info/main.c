/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-info: inspect fences on sync_files and dma-bufs, and draw fence
 * timelines. See docs/inspect.md.
 */
#include <stdio.h>
#include <string.h>

#include "info.h"

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: " INFO_PROG " [--json] COMMAND [ARGS]\n"
		"\n"
		"  fence FD|/proc/PID/fd/N     the fences in a sync_file: driver, timeline, status,\n"
		"                              completion time and age\n"
		"  dmabuf FD|/proc/PID/fd/N    a dma-buf: size, exporter, name, attached fences\n"
		"                              (debugfs) and what a reader / a writer would wait for\n"
		"  ps [PID]                    every dma-buf and sync_file a process (default: every\n"
		"                              process) holds, one line each\n"
		"  trace [-o FILE] -- CMD...   record dma_fence events while CMD runs; write a\n"
		"                              Perfetto/Chrome trace JSON and an SVG timeline\n"
		"                              (" INFO_PROG " trace --help for options)\n"
		"  doctor [--timeout-ms N]     what keeps frames ordered here: fence uapi, Vulkan and\n"
		"                              EGL measured by live probes, the layer, verdicts\n"
		"\n"
		"  --json      machine-readable output (one JSON document on stdout)\n"
		"  --version   print the version\n"
		"\n"
		"FD is an fd this program inherited, e.g.  " INFO_PROG " fence 3 3<file.\n"
		"/proc/PID/fd/N is another process's fd: it is copied with pidfd_getfd(), which\n"
		"needs ptrace access to PID (same user, or root). Nothing is waited on, imported\n"
		"or changed: the tool only looks.\n"
		"\n"
		"Exit status: 0 ok, 1 error, 2 usage; trace: the command's status.\n");
}

int
main(int argc, char **argv)
{
	struct info_opts o = { 0 };
	char *args[argc + 1];
	int n = 0, i;

	/* global options may come before or after the command (not after trace's "--") */
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			break;
		} else if (strcmp(argv[i], "--json") == 0) {
			o.json = true;
		} else if (n == 0 && (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)) {
			usage(stdout);
			return INFO_EXIT_OK;
		} else if (n == 0 && strcmp(argv[i], "--version") == 0) {
			printf(INFO_PROG " %s\n", sb_version());
			return INFO_EXIT_OK;
		} else if (n == 0 && argv[i][0] == '-') {
			info_err("unknown option '%s'", argv[i]);
			usage(stderr);
			return INFO_EXIT_USAGE;
		} else {
			args[n++] = argv[i];
		}
	}
	for (; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;

	if (n == 0) {
		usage(stderr);
		return INFO_EXIT_USAGE;
	}
	if (strcmp(args[0], "fence") == 0)
		return info_cmd_fence(n, args, &o);
	if (strcmp(args[0], "dmabuf") == 0 || strcmp(args[0], "dma-buf") == 0)
		return info_cmd_dmabuf(n, args, &o);
	if (strcmp(args[0], "ps") == 0)
		return info_cmd_ps(n, args, &o);
	if (strcmp(args[0], "trace") == 0)
		return info_cmd_trace(n, args, &o);
	if (strcmp(args[0], "doctor") == 0)
		return info_cmd_doctor(n, args, &o);
	info_err("unknown command '%s'", args[0]);
	usage(stderr);
	return INFO_EXIT_USAGE;
}
