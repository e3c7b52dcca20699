/* SPDX-License-Identifier: MIT */
/*
 * This process's threads as /proc/self/task shows them: found by name,
 * counted, and the system call each sleeps in (see kernel.h), for tests that
 * must know a thread is blocked before they act.
 */
#include "kernel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int
sbk_thread_find(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int found = -1;

	if (!d)
		return -1;
	while (found < 0 && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue; /* the thread has just ended */
		if (fgets(comm, sizeof(comm), f) && strstr(comm, name))
			found = atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	return found;
}

int
sbk_thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

int
sbk_thread_count_wait(int want, int64_t timeout_ns)
{
	int64_t end = now_ns() + timeout_ns;
	int n;

	while ((n = sbk_thread_count()) != want && n >= 0 && now_ns() < end)
		sbk_sleep_ns(1000000);
	return n;
}

long
sbk_thread_syscall(int tid)
{
	char path[64], buf[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -2;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -2;
	buf[n] = '\0';
	return strncmp(buf, "running", 7) == 0 ? -1 : strtol(buf, NULL, 10);
}

int
sbk_threads_wait_in_syscall(long nr, int64_t timeout_ns)
{
	int64_t end = now_ns() + timeout_ns;
	int self = (int)syscall(SYS_gettid);

	for (;;) {
		DIR *d = opendir("/proc/self/task");
		struct dirent *e;
		bool all = d != NULL;

		while (all && (e = readdir(d))) {
			int tid = atoi(e->d_name);

			if (e->d_name[0] == '.' || tid == self)
				continue;
			long in = sbk_thread_syscall(tid);
			all = in == nr || in == -2;
		}
		if (d)
			closedir(d);
		if (all)
			return 0;
		if (now_ns() > end)
			return -ETIME;
		sbk_sleep_ns(100000);
	}
}

void
sbk_sleep_ns(int64_t ns)
{
	struct timespec ts = {
		.tv_sec = ns / 1000000000,
		.tv_nsec = ns % 1000000000,
	};

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}
