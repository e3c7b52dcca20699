/* SPDX-License-Identifier: MIT */
/* syncbridge-info: shared declarations of the subcommands. */
#ifndef INFO_H
#define INFO_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <syncbridge/syncbridge.h>

#include "json_out.h"
#include "procfs.h"
#include "clock.h" /* now_ns() (common/) */

#define INFO_PROG "syncbridge-info"

/* Exit statuses (trace passes the command's own status through). */
#define INFO_EXIT_OK 0
#define INFO_EXIT_FAIL 1
#define INFO_EXIT_USAGE 2

struct info_opts {
	bool json;
};

/*
 * A subcommand: one row of main.c's table, which the overview (--help),
 * `help COMMAND`, `COMMAND --help` and the dispatch all read.
 *
 * run gets argv[0] = the command's name and the arguments after it (global
 * options removed). It validates every argument before it prints anything on
 * stdout; a usage error is INFO_EXIT_USAGE after info_usage_err(). Unless
 * own_options is set, main.c answers --help / -h anywhere among the
 * arguments with help(stdout) and never calls run.
 */
struct info_command {
	const char *name;
	const char *alias;    /* another name that runs it, or NULL */
	const char *args;     /* its arguments in the overview, e.g. "FD|/proc/PID/fd/N" */
	const char *summary;  /* one line */
	int (*run)(int argc, char **argv, const struct info_opts *o);
	void (*help)(FILE *f); /* the whole help: usage, what it shows, options, exit status */
	bool own_options;     /* run parses its options itself, --help included (trace) */
};

/*
 * "syncbridge-info: " + message + newline, to stderr: every error and warning
 * of the tool has this one prefix.
 */
void info_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * A usage error of command cmd, on one line: "syncbridge-info: CMD: message
 * (see: syncbridge-info help CMD)". The caller returns INFO_EXIT_USAGE.
 */
void info_usage_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The lines every command's help ends with: the exit statuses. */
void info_help_exit_status(FILE *f);

/* The exit status after printing the output: INFO_EXIT_FAIL if stdout could not be written. */
int info_stdout_status(void);
/*
 * Print doc (a command's whole --json output) on stdout, pretty, and free it;
 * NULL stands for a document that could not be built. Returns the exit status.
 */
int info_json_print(struct json_object *doc);

/*
 * An fd named on the command line: a number (an fd this process inherited)
 * or /proc/PID/fd/N (another process's fd, fetched with pidfd_getfd()).
 */
struct info_target {
	int fd;          /* usable in this process */
	bool owned;      /* fd was created here and must be closed */
	pid_t pid;       /* the process holding it (ours for a plain number) */
	int remote_fd;   /* its number in that process */
	bool self;       /* pid is this process */
	char link[PATH_MAX]; /* readlink() of /proc/PID/fd/N */
	enum fd_kind kind;
	const char *via; /* "inherited" or "pidfd_getfd" */
};


/*
 * Like info_target_resolve() for fd `fd` of process `pid`, but only to look
 * (quiet: no messages). Returns -errno when the fd cannot be had.
 */
int info_target_get(pid_t pid, int fd, struct info_target *t, bool quiet);

void info_target_release(struct info_target *t);

/* "fd 3" or "/proc/123/fd/4 (comm)" into buf. */
const char *info_target_name(const struct info_target *t, char *buf, size_t len);

/* /proc/PID/fdinfo/N of the target, NUL-terminated text (free()), or NULL. */
char *info_target_fdinfo(const struct info_target *t, int *err);

/*
 * The argument of `fence` / `dmabuf` (argv[1], the only one), resolved and
 * checked to be of kind `want` (FD_KIND_SYNC_FILE or FD_KIND_DMABUF).
 * Returns INFO_EXIT_OK, t then to be released, or the exit status after
 * saying what is wrong; t holds no fd then. INFO_EXIT_USAGE: not one
 * argument, or one that is neither an fd number nor /proc/PID/fd/N (a path
 * gets the `CMD 3 3<PATH` hint); INFO_EXIT_FAIL: no such process or fd, no
 * permission, another kind of fd.
 */
int info_target_from_args(int argc, char **argv, enum fd_kind want, struct info_target *t);
/* Report that the fd is not of kind `want`, saying what it is and what to run instead. */
void info_wrong_kind(const struct info_target *t, const char *arg, enum fd_kind want);
/* The "target" member: pid, comm, fd, link, via. */
struct json_object *info_json_target(const struct info_target *t);

/* "signalled", "active" or "error -ETIMEDOUT (Timer expired)" for a sync_file status. */
const char *info_status_text(int32_t status, char *buf, size_t len);
/* "signalled"/"active"/"error" */
const char *info_status_word(int32_t status);

/* The fences of a sync_file, human form: one line per fence, each prefixed by indent. */
void info_print_fences(FILE *f, const struct sb_sync_file_info *info, const char *indent);
/* JSON form: "status", "status_code", "status_text", "num_fences", "now_ns", "fences" into o. */
void info_json_fences(struct json_object *o, const struct sb_sync_file_info *info);

/*
 * What a reader ([0]) and a writer ([1]) of dma-buf fd would wait for: READ
 * and WRITE sync_files exported and decoded (nothing is added to the buffer).
 * out[i] is NULL and err[i] < 0 where that failed; free with sb_sync_file_info_destroy().
 */
void info_dmabuf_export_access(int fd, struct sb_sync_file_info *out[2], int err[2]);

int info_cmd_fence(int argc, char **argv, const struct info_opts *o);
int info_cmd_dmabuf(int argc, char **argv, const struct info_opts *o);
int info_cmd_ps(int argc, char **argv, const struct info_opts *o);
int info_cmd_trace(int argc, char **argv, const struct info_opts *o);
int info_cmd_doctor(int argc, char **argv, const struct info_opts *o);
/* doctor's usage text (for `help doctor` and `doctor --help`). */
void info_doctor_usage(FILE *f);

void info_help_fence(FILE *f);
void info_help_dmabuf(FILE *f);
void info_help_ps(FILE *f);
void info_help_trace(FILE *f);

#endif
