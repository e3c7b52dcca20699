/* SPDX-License-Identifier: MIT */
/*
 * Samples and the figures printed by the kernel-side benchmarks (figures 3-5
 * of docs/performance.md: bench/wake.c, bench/merge.c, bench/compositor.c):
 * median and p90 of a variant against its floor, and their ratios.
 *
 * Every figure line has the same shape, so that docs/performance.md can quote
 * it and a script can read it:
 *
 *   NAME  n=N  median M us  p90 P us | floor: median M us  p90 P us | ratio: median R  p90 R
 */
#ifndef SB_BENCH_WAKE_STATS_H
#define SB_BENCH_WAKE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "kernel.h" /* now_ns(): CLOCK_MONOTONIC in ns */

struct bench_samples {
	int64_t *v;
	size_t n, cap;
	int sorted;
};

/* Append one sample (ns, or any unit); exits the program when out of memory. */
void bench_samples_add(struct bench_samples *s, int64_t value);
/* Nearest-rank percentile (0 < p <= 100) of the samples, 0 when there are none. */
int64_t bench_samples_pct(struct bench_samples *s, double p);
void bench_samples_finish(struct bench_samples *s);

/*
 * Print one figure line: `name` (the variant measured) against `floor`, in
 * microseconds (the samples are nanoseconds).
 */
void bench_print_us(const char *name, struct bench_samples *var, struct bench_samples *floor);
/* The same for samples that are not times: values printed as they are, with `unit`. */
void bench_print_unit(const char *name, const char *unit, struct bench_samples *var,
		      struct bench_samples *floor);

/*
 * The benchmarks' options: --iterations N (returned; default 1000, at least
 * 1) and, with name, `name VALUE` into *value (left as it is when absent).
 * Anything else: a usage line (VALUE shown as metavar) and exit 2.
 */
long bench_args(int argc, char **argv, const char *name, const char *metavar, const char **value);

/*
 * Wait until thread `tid` of this process sleeps in a poll-family system call
 * (poll, ppoll, epoll_wait, epoll_pwait, epoll_pwait2) and every other thread
 * but the caller sleeps too (not "running" in /proc/self/task/T/syscall), so a
 * signal sent next measures a wake-up, not a race with a thread still on its
 * way to sleep. Returns 0, or -ETIME after timeout_ns.
 */
int bench_wait_asleep(int tid, int64_t timeout_ns);
/* The calling thread's kernel id. */
int bench_gettid(void);

#endif
