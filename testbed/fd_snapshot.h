/* SPDX-License-Identifier: MIT */
/*
 * fd hygiene for tests (docs/reliability.md): a snapshot of this process's
 * open fds — number, identity (st_dev/st_ino of the open file) and what
 * /proc/self/fd says it is — and a comparison that fails the test on
 *  - a leak: an fd open now that was not open before (other than the ones the
 *    call under test was documented to return, which the caller excludes);
 *  - a stolen fd: one open before that is now closed (a borrowed fd closed
 *    by the callee, or a double close that hit it);
 *  - a swapped fd: same number, different open file (closed, then the number
 *    was reused by something else);
 *  - (optionally) a new fd without FD_CLOEXEC.
 * Header-only, like harness.h; include it after harness.h.
 *
 *   struct tb_fd_snapshot before;
 *   tb_fd_snapshot_take(&before);
 *   ... call under test; close what it returned ...
 *   tb_fd_snapshot_check(&before, NULL, 0, "merge failure path");
 *   tb_fd_snapshot_free(&before);
 */
#ifndef TB_FD_SNAPSHOT_H
#define TB_FD_SNAPSHOT_H

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

struct tb_fd_entry {
	int fd;
	dev_t dev;
	ino_t ino;
	bool cloexec;
	char what[96]; /* readlink of /proc/self/fd/N: "anon_inode:sync_file", "/dmabuf:", ... */
};

struct tb_fd_snapshot {
	int n;
	struct tb_fd_entry *e; /* sorted by fd */
};

static inline int
tb_fd_entry_cmp(const void *a, const void *b)
{
	const struct tb_fd_entry *x = a, *y = b;
	return (x->fd > y->fd) - (x->fd < y->fd);
}

/* Describe one fd of this process into *e. Returns false if it is not open. */
static inline bool
tb_fd_describe(int fd, struct tb_fd_entry *e)
{
	char path[64];
	struct stat st;
	ssize_t len;
	int flags;

	flags = fcntl(fd, F_GETFD);
	if (flags < 0 || fstat(fd, &st) < 0)
		return false;
	memset(e, 0, sizeof(*e));
	e->fd = fd;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->cloexec = flags & FD_CLOEXEC;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	len = readlink(path, e->what, sizeof(e->what) - 1);
	if (len < 0)
		snprintf(e->what, sizeof(e->what), "?");
	else
		e->what[len] = '\0';
	return true;
}

/* Fill *s with every fd open now (the directory's own fd excluded). Returns 0 or -1. */
static inline int
tb_fd_snapshot_take(struct tb_fd_snapshot *s)
{
	int cap = 64, dir_fd;
	DIR *d;
	struct dirent *ent;

	s->n = 0;
	s->e = malloc((size_t)cap * sizeof(*s->e));
	if (!s->e)
		return -1;
	d = opendir("/proc/self/fd");
	if (!d) {
		free(s->e);
		s->e = NULL;
		return -1;
	}
	dir_fd = dirfd(d);
	while ((ent = readdir(d))) {
		char *end;
		long fd = strtol(ent->d_name, &end, 10);

		if (ent->d_name[0] == '.' || *end || fd == dir_fd)
			continue;
		if (s->n == cap) {
			struct tb_fd_entry *ne = realloc(s->e, (size_t)cap * 2 * sizeof(*s->e));
			if (!ne)
				break;
			s->e = ne;
			cap *= 2;
		}
		if (tb_fd_describe((int)fd, &s->e[s->n]))
			s->n++;
	}
	closedir(d);
	qsort(s->e, (size_t)s->n, sizeof(*s->e), tb_fd_entry_cmp);
	return 0;
}

static inline void
tb_fd_snapshot_free(struct tb_fd_snapshot *s)
{
	free(s->e);
	s->e = NULL;
	s->n = 0;
}

static inline const struct tb_fd_entry *
tb_fd_snapshot_find(const struct tb_fd_snapshot *s, int fd)
{
	struct tb_fd_entry key = { .fd = fd };
	return bsearch(&key, s->e, (size_t)s->n, sizeof(*s->e), tb_fd_entry_cmp);
}

/*
 * Compare the fds open now with `before`. `expected` lists fds that may be
 * new (the documented outputs of the call; entries < 0 are ignored).
 * Records one CHECK per problem (leak, closed, swapped), or one passing CHECK
 * when there is none, labelled with `what`. Returns the number of problems.
 */
static inline int
tb_fd_snapshot_check(const struct tb_fd_snapshot *before, const int *expected, int n_expected,
		     const char *what)
{
	struct tb_fd_snapshot now;
	int problems = 0;

	if (tb_fd_snapshot_take(&now) < 0) {
		CHECK(0, "%s: cannot read /proc/self/fd", what);
		return 1;
	}
	for (int i = 0; i < now.n; i++) {
		const struct tb_fd_entry *e = &now.e[i];
		const struct tb_fd_entry *old = tb_fd_snapshot_find(before, e->fd);
		bool allowed = false;

		for (int k = 0; k < n_expected; k++)
			allowed |= expected[k] >= 0 && expected[k] == e->fd;
		if (!old && !allowed) {
			problems++;
			CHECK(0, "%s: fd %d (%s) leaked", what, e->fd, e->what);
		} else if (old && (old->dev != e->dev || old->ino != e->ino)) {
			problems++;
			CHECK(0, "%s: fd %d was %s, is now %s (closed and reused: a double close?)", what,
			      e->fd, old->what, e->what);
		}
	}
	for (int i = 0; i < before->n; i++) {
		if (!tb_fd_snapshot_find(&now, before->e[i].fd)) {
			problems++;
			CHECK(0, "%s: fd %d (%s) was closed by the code under test", what,
			      before->e[i].fd, before->e[i].what);
		}
	}
	if (!problems)
		CHECK(1, "%s: no fd leaked, closed or swapped", what);
	tb_fd_snapshot_free(&now);
	return problems;
}

/*
 * CLOEXEC checks: fork + exec LISTER as "LISTER --list-fds" (hardening-cloexec
 * has that mode: tb_fd_list_inherited() in its main()), which prints "FD
 * TARGET" for each fd it inherited but 0-2; marks inherited[fd] for each (fd <
 * max), notes each line, and returns how many it printed. Fails the test when
 * the lister did not run.
 */
static inline int
tb_fd_exec_inherited(const char *lister, bool *inherited, int max)
{
	int p[2], status, n = 0;
	char line[512];
	FILE *f;
	pid_t pid;

	REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe2");
	pid = tb_fork();
	if (pid == 0) {
		/* dup2 clears FD_CLOEXEC on fd 1 only. */
		dup2(p[1], 1);
		execl(lister, "hardening-cloexec", "--list-fds", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	REQUIRE(f, "fdopen");
	while (fgets(line, sizeof(line), f)) {
		int fd = atoi(line);

		line[strcspn(line, "\n")] = '\0';
		tb_note("child inherited: %s", line);
		if (fd >= 0 && fd < max)
			inherited[fd] = true;
		n++;
	}
	fclose(f);
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the exec'ed lister ran (status %#x)",
		status);
	return n;
}

/* The lister's side: print "FD TARGET" for every fd but 0, 1, 2; exit status. */
static inline int
tb_fd_list_inherited(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return 1;
	while ((e = readdir(d))) {
		char path[64], target[256];
		int fd = atoi(e->d_name);
		ssize_t len;

		if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, target, sizeof(target) - 1);
		target[len < 0 ? 0 : len] = '\0';
		printf("%d %s\n", fd, target);
	}
	closedir(d);
	return 0;
}

#endif
