/* SPDX-License-Identifier: MIT */
#include "wake_stats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "demo_util.h"

void
bench_samples_add(struct bench_samples *s, int64_t value)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		int64_t *v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			fprintf(stderr, "bench: out of memory\n");
			exit(1);
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = value;
	s->sorted = 0;
}

int64_t
bench_samples_pct(struct bench_samples *s, double p)
{
	size_t rank;

	if (!s->n)
		return 0;
	if (!s->sorted) {
		demo_sort_i64(s->v, s->n);
		s->sorted = 1;
	}
	/* Nearest rank: the smallest value with at least p% of the samples at or below it. */
	rank = (size_t)((p / 100.0) * (double)s->n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > s->n)
		rank = s->n;
	return s->v[rank - 1];
}

void
bench_samples_finish(struct bench_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static double
ratio(int64_t a, int64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

void
bench_print_us(const char *name, struct bench_samples *var, struct bench_samples *floor)
{
	int64_t m = bench_samples_pct(var, 50), p = bench_samples_pct(var, 90);
	int64_t fm = bench_samples_pct(floor, 50), fp = bench_samples_pct(floor, 90);

	printf("%-34s n=%-5zu median %9.1f us  p90 %9.1f us | floor: median %9.1f us  p90 %9.1f us"
	       " | ratio: median %.3f  p90 %.3f\n",
	       name, var->n, (double)m / 1e3, (double)p / 1e3, (double)fm / 1e3, (double)fp / 1e3,
	       ratio(m, fm), ratio(p, fp));
	fflush(stdout);
}

void
bench_print_unit(const char *name, const char *unit, struct bench_samples *var,
		 struct bench_samples *floor)
{
	int64_t m = bench_samples_pct(var, 50), p = bench_samples_pct(var, 90);
	int64_t fm = bench_samples_pct(floor, 50), fp = bench_samples_pct(floor, 90);

	printf("%-34s n=%-5zu median %9lld %s  p90 %9lld %s | floor: median %9lld %s  p90 %9lld %s"
	       " | ratio: median %.3f  p90 %.3f\n",
	       name, var->n, (long long)m, unit, (long long)p, unit, (long long)fm, unit,
	       (long long)fp, unit, ratio(m, fm), ratio(p, fp));
	fflush(stdout);
}

int
bench_gettid(void)
{
	return (int)syscall(SYS_gettid);
}

static int
is_poll_family(long nr)
{
#if defined(__x86_64__)
	return nr == 7 || nr == 271 || nr == 232 || nr == 281 || nr == 441;
#else
	return nr == SYS_ppoll || nr == SYS_epoll_pwait
#ifdef SYS_epoll_pwait2
	       || nr == SYS_epoll_pwait2
#endif
		;
#endif
}

static int
others_asleep(int self)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int ok = 1;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		int tid = atoi(e->d_name);

		if (tid <= 0 || tid == self)
			continue;
		if (sbk_thread_syscall(tid) == -1) {
			ok = 0;
			break;
		}
	}
	closedir(d);
	return ok;
}

int
bench_wait_asleep(int tid, int64_t timeout_ns)
{
	int64_t end = now_ns() + timeout_ns;
	int self = bench_gettid();

	for (;;) {
		if (is_poll_family(sbk_thread_syscall(tid)) && others_asleep(self))
			return 0;
		if (now_ns() > end)
			return -ETIME;
		struct timespec ts = { 0, 20000 };
		nanosleep(&ts, NULL);
	}
}

long
bench_args(int argc, char **argv, const char *name, const char *metavar, const char **value)
{
	long iterations = 1000;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
			iterations = strtol(argv[++i], NULL, 10);
		} else if (name && strcmp(argv[i], name) == 0 && i + 1 < argc) {
			*value = argv[++i];
		} else {
			if (name)
				fprintf(stderr, "usage: %s [--iterations N] [%s %s]\n", argv[0], name,
					metavar);
			else
				fprintf(stderr, "usage: %s [--iterations N]\n", argv[0]);
			exit(2);
		}
	}
	return iterations < 1 ? 1 : iterations;
}

