/* SPDX-License-Identifier: MIT */
/*
 * Naming fds on the command line.
 *
 * A number is an fd this process inherited (`syncbridge-info fence 3 3<&...`).
 * /proc/PID/fd/N names another process's fd. Opening that path does not work
 * for sync_files and dma-bufs: both live on pseudo file systems without an
 * open() of their own, and open() of the link fails with ENXIO (measured on
 * Linux 6.12). pidfd_getfd() (Linux 5.6) instead duplicates the very file the
 * process holds; it needs ptrace access to the process (same user with a
 * permissive kernel.yama.ptrace_scope, or CAP_SYS_PTRACE).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "info.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

static bool
parse_int(const char *s, const char *end, int *out)
{
	long v = 0;

	if (s == end)
		return false;
	for (const char *p = s; p < end; p++) {
		if (!isdigit((unsigned char)*p))
			return false;
		v = v * 10 + (*p - '0');
		if (v > INT_MAX)
			return false;
	}
	*out = (int)v;
	return true;
}

/* "/proc/PID/fd/N" or "/proc/self/fd/N" */
static bool
parse_proc_path(const char *arg, pid_t *pid, int *fd)
{
	const char *p, *slash;
	int v;

	if (strncmp(arg, "/proc/", 6) != 0)
		return false;
	p = arg + 6;
	slash = strchr(p, '/');
	if (!slash || strncmp(slash, "/fd/", 4) != 0)
		return false;
	if ((size_t)(slash - p) == 4 && strncmp(p, "self", 4) == 0)
		*pid = getpid();
	else if (parse_int(p, slash, &v))
		*pid = v;
	else
		return false;
	p = slash + 4;
	return parse_int(p, p + strlen(p), fd);
}

static int
pidfd_getfd_of(pid_t pid, int fd, int *out)
{
	int pidfd, ret;

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -errno;
	ret = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (ret < 0) {
		ret = -errno;
		close(pidfd);
		return ret;
	}
	close(pidfd);
	*out = ret; /* the kernel sets FD_CLOEXEC on it */
	return 0;
}

/* Why /proc/PID/fd/FD could not be read (ret, from readlink()), for the user. */
static void
say_unreadable(const struct info_target *t, const char *path, int ret)
{
	if (ret == -ENOENT) {
		char dir[32];

		snprintf(dir, sizeof(dir), "/proc/%d", (int)t->pid);
		if (access(dir, F_OK) != 0)
			info_err("no process %d", (int)t->pid);
		else if (t->self)
			info_err("fd %d is not open in %s (pass it as %d<&OTHER_FD, or name "
				 "another process's fd as /proc/PID/fd/N)",
				 t->remote_fd, INFO_PROG, t->remote_fd);
		else
			info_err("process %d has no fd %d", (int)t->pid, t->remote_fd);
	} else if (ret == -EACCES || ret == -EPERM) {
		info_err("%s: permission denied (only the process's owner or root may look "
			 "at its fds)", path);
	} else {
		info_err("%s: %s", path, strerror(-ret));
	}
}

/* Why pidfd_getfd() could not copy the fd (ret), for the user. */
static void
say_not_copied(const struct info_target *t, const char *path, int ret)
{
	if (ret == -ENOSYS)
		/*
		 * Opening the /proc link is no substitute: for sync_files and
		 * dma-bufs it fails with ENXIO (measured on 6.12).
		 */
		info_err("%s: this kernel has no pidfd_getfd() (Linux 5.6), and a sync_file "
			 "or dma-buf cannot be re-opened through /proc (ENXIO): run " INFO_PROG
			 " inside that process's fd table instead (FD number)", path);
	else if (ret == -EPERM || ret == -EACCES)
		info_err("%s: pidfd_getfd() needs ptrace access to process %d (run as its "
			 "user with kernel.yama.ptrace_scope=0, or as root): %s",
			 path, (int)t->pid, strerror(-ret));
	else if (ret == -ESRCH)
		info_err("process %d exited", (int)t->pid);
	else if (ret == -EBADF)
		info_err("process %d closed fd %d", (int)t->pid, t->remote_fd);
	else
		info_err("%s: pidfd_getfd(): %s", path, strerror(-ret));
}

int
info_target_get(pid_t pid, int fd, struct info_target *t, bool quiet)
{
	char path[64];
	ssize_t n;
	int ret, got = -1;

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	t->pid = pid;
	t->remote_fd = fd;
	t->self = pid == getpid();

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	n = readlink(path, t->link, sizeof(t->link) - 1);
	if (n < 0) {
		ret = -errno;
		if (!quiet)
			say_unreadable(t, path, ret);
		return ret;
	}
	t->link[n] = '\0';
	t->kind = fd_kind_from_link(t->link);

	if (t->self) {
		t->fd = fd;
		t->via = "inherited";
		return 0;
	}

	ret = pidfd_getfd_of(pid, fd, &got);
	if (ret < 0) {
		if (!quiet)
			say_not_copied(t, path, ret);
		return ret;
	}
	t->fd = got;
	t->owned = true;
	t->via = "pidfd_getfd";
	return 0;
}

/*
 * Write arg to buf quoted for a POSIX shell where it needs quoting (as
 * 'arg', each ' as '\''), for a command line the user can paste.
 */
static const char *
shell_quote(const char *arg, char *buf, size_t len)
{
	static const char plain[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				    "0123456789/._-+,:=@%";
	size_t used = 0;

	if (*arg && strspn(arg, plain) == strlen(arg)) {
		snprintf(buf, len, "%s", arg);
		return buf;
	}
	buf[used++] = '\'';
	for (const char *p = arg; *p && used + 6 < len; p++) {
		if (*p == '\'') {
			memcpy(buf + used, "'\\''", 4);
			used += 4;
		} else {
			buf[used++] = *p;
		}
	}
	buf[used++] = '\'';
	buf[used] = '\0';
	return buf;
}

/*
 * Say why arg names no fd: a path gets the redirection that gives the tool
 * that file as fd 3 (a sync_file or dma-buf has no path to open, and a
 * regular file's fd is what the tool then checks).
 */
static void
not_an_fd(const char *cmd, const char *arg)
{
	char quoted[PATH_MAX + 64];

	if (strchr(arg, '/') || access(arg, F_OK) == 0)
		info_usage_err(cmd, "'%s' is a path, not an fd; open it as fd 3: " INFO_PROG
			       " %s 3 3<%s",
			       arg, cmd, shell_quote(arg, quoted, sizeof(quoted)));
	else if (arg[0] == '-' && isdigit((unsigned char)arg[1]))
		info_usage_err(cmd, "'%s' is not an fd: fd numbers are 0 or more", arg);
	else if (arg[0] == '-')
		info_usage_err(cmd, "unknown option '%s'", arg);
	else
		info_usage_err(cmd, "'%s' is neither an fd number nor /proc/PID/fd/N", arg);
}

void
info_target_release(struct info_target *t)
{
	if (t->owned && t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->owned = false;
}

const char *
info_target_name(const struct info_target *t, char *buf, size_t len)
{
	char comm[32];

	if (t->self)
		snprintf(buf, len, "fd %d", t->remote_fd);
	else
		snprintf(buf, len, "/proc/%d/fd/%d (%s)", (int)t->pid, t->remote_fd,
			 proc_comm(t->pid, comm, sizeof(comm)));
	return buf;
}

char *
info_target_fdinfo(const struct info_target *t, int *err)
{
	char path[64], *text;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)t->pid, t->remote_fd);
	ret = read_text_file(path, &text, NULL);
	if (err)
		*err = ret;
	return ret < 0 ? NULL : text;
}

/* "a sync_file", "a dma-buf": what a command wants, for messages. */
static const char *
kind_phrase(enum fd_kind kind)
{
	return kind == FD_KIND_DMABUF ? "a dma-buf" : "a sync_file";
}

void
info_wrong_kind(const struct info_target *t, const char *arg, enum fd_kind want)
{
	char name[96], what[PATH_MAX + 64];
	const char *wanted = kind_phrase(want);

	info_target_name(t, name, sizeof(name));
	fd_link_describe(t->link, what, sizeof(what));
	if (t->kind == FD_KIND_DMABUF)
		info_err("%s is a dma-buf, not %s (try: " INFO_PROG " dmabuf %s)", name, wanted,
			 arg);
	else if (t->kind == FD_KIND_SYNC_FILE)
		info_err("%s is a sync_file, not %s (try: " INFO_PROG " fence %s)", name, wanted,
			 arg);
	else
		info_err("%s is %s, not %s", name, what, wanted);
}

int
info_target_from_args(int argc, char **argv, enum fd_kind want, struct info_target *t)
{
	const char *cmd = want == FD_KIND_DMABUF ? "dmabuf" : "fence";
	pid_t pid;
	int fd;

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	if (argc != 2) {
		info_usage_err(cmd, "takes one FD or /proc/PID/fd/N, not %d arguments", argc - 1);
		return INFO_EXIT_USAGE;
	}
	if (parse_int(argv[1], argv[1] + strlen(argv[1]), &fd))
		pid = getpid();
	else if (!parse_proc_path(argv[1], &pid, &fd)) {
		not_an_fd(cmd, argv[1]);
		return INFO_EXIT_USAGE;
	}
	if (info_target_get(pid, fd, t, false) < 0)
		return INFO_EXIT_FAIL;
	if (t->kind != want) {
		info_wrong_kind(t, argv[1], want);
		info_target_release(t);
		return INFO_EXIT_FAIL;
	}
	return INFO_EXIT_OK;
}

struct json_object *
info_json_target(const struct info_target *t)
{
	struct json_object *o = json_object_new_object();
	char comm[32];

	json_object_object_add(o, "pid", json_object_new_int(t->pid));
	json_object_object_add(o, "comm", info_json_str(proc_comm(t->pid, comm, sizeof(comm))));
	json_object_object_add(o, "fd", json_object_new_int(t->remote_fd));
	json_object_object_add(o, "link", info_json_str(t->link));
	json_object_object_add(o, "via", info_json_str(t->via));
	return o;
}
