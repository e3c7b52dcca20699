/* SPDX-License-Identifier: MIT */
/*
 * bench-merge (docs/performance.md, figure 4): merging N pending sync_files
 * (vgem fences, each on its own fence context, so the result holds N fences)
 * into one, through the library against raw SYNC_IOC_MERGE calls, in the same
 * run, interleaved (three variants, rotated each round), after a warm-up.
 *
 *   merge_array   sb_sync_file_merge_array(fds, N): validates every input,
 *                 then merges them one after the other (N-1 merges)
 *   merge         sb_sync_file_merge(a, b), N = 2 only
 *   raw chain     the same N-1 SYNC_IOC_MERGE calls by hand, no validation:
 *                 (((f0+f1)+f2)+...), closing each intermediate
 *   raw tree      N-1 SYNC_IOC_MERGE calls as a balanced tree (pairs, then
 *                 pairs of pairs): each fence is copied log2(N) times
 *                 instead of up to N-1 times
 *
 * Each result is checked outside the timed part: N fences, still pending.
 * vgem signals a fence by itself after ~10 s, so the N fences are replaced by
 * fresh ones every 2 s (outside the timed part too).
 *
 *   bench-merge [--iterations N] [--n N,N,...]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include <syncbridge/syncbridge.h>

#include "kernel.h"
#include "kernel_raw.h"
#include "wake_stats.h"

#define REFRESH_NS (2 * INT64_C(1000000000))

enum how { H_LIB, H_CHAIN, H_TREE, H_PAIR, H_COUNT };
static const char *const how_names[H_COUNT] = {
	"sb_sync_file_merge_array", "raw SYNC_IOC_MERGE chain", "raw SYNC_IOC_MERGE tree",
	"sb_sync_file_merge",
};

static int
raw_merge(int a, int b)
{
	struct sync_merge_data d;

	memset(&d, 0, sizeof(d));
	strcpy(d.name, "bench");
	d.fd2 = b;
	if (ioctl(a, SYNC_IOC_MERGE, &d) < 0)
		return -errno;
	return d.fence;
}

static int
raw_chain(const int *fds, int n)
{
	int acc = raw_merge(fds[0], fds[1]);

	for (int i = 2; i < n && acc >= 0; i++) {
		int next = raw_merge(acc, fds[i]);

		close(acc);
		acc = next;
	}
	return acc;
}

/* Merge fds[0..n) as a balanced tree; `owned` says whether to close the inputs. */
static int
raw_tree(const int *fds, int n, int *scratch)
{
	int m = n, ret = 0;

	/* Level 0 reads the caller's fds (borrowed); later levels own their fds. */
	for (int level = 0; m > 1; level++) {
		const int *in = level == 0 ? fds : scratch;
		int out = 0;

		for (int i = 0; i < m; i += 2) {
			int r;

			if (i + 1 == m) {
				r = level == 0 ? raw_merge(in[i], in[i]) : in[i];
			} else {
				r = raw_merge(in[i], in[i + 1]);
				if (level > 0) {
					close(in[i]);
					close(in[i + 1]);
				}
			}
			if (r < 0 && ret == 0)
				ret = r;
			scratch[out++] = r;
		}
		m = out;
	}
	if (ret) {
		for (int i = 0; i < m; i++)
			if (scratch[i] >= 0)
				close(scratch[i]);
		return ret;
	}
	return scratch[0];
}

static int
fences_make(int vgem, struct sbk_fence *f, int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		int ret = sbk_fence_create(vgem, true, &f[i]);

		if (ret)
			return ret;
		fds[i] = f[i].sync_file;
	}
	return 0;
}

static void
fences_drop(struct sbk_fence *f, int n)
{
	for (int i = 0; i < n; i++) {
		sbk_fence_signal(&f[i]);
		sbk_fence_destroy(&f[i]);
	}
}

static int
run_n(int vgem, int n, int iterations)
{
	struct bench_samples s[H_COUNT];
	struct sbk_fence *f = calloc((size_t)n, sizeof(*f));
	int *fds = calloc((size_t)n, sizeof(*fds)), *scratch = calloc((size_t)n, sizeof(*scratch));
	int nh = n == 2 ? 4 : 3, warmup = 5 * nh, total = warmup + iterations * nh, ret = 0;
	int64_t made, t_start = now_ns();
	char name[96];

	if (!f || !fds || !scratch)
		return -ENOMEM;
	memset(s, 0, sizeof(s));
	ret = fences_make(vgem, f, fds, n);
	made = now_ns();
	for (int i = 0; i < total && !ret; i++) {
		/* Rotated each round: A B C, B C A, C A B (four variants likewise). */
		enum how how = (enum how)((i + i / nh) % nh);
		int out = -1, status = -1;
		uint32_t count = 0;
		int64_t t0, t1;

		if (now_ns() - made > REFRESH_NS) {
			fences_drop(f, n);
			ret = fences_make(vgem, f, fds, n);
			if (ret)
				break;
			made = now_ns();
		}
		t0 = now_ns();
		switch (how) {
		case H_LIB:
			ret = sb_sync_file_merge_array(fds, (size_t)n, &out);
			break;
		case H_PAIR:
			ret = sb_sync_file_merge(fds[0], fds[1], &out);
			break;
		case H_CHAIN:
			out = raw_chain(fds, n);
			break;
		case H_TREE:
			out = raw_tree(fds, n, scratch);
			break;
		default:
			break;
		}
		t1 = now_ns();
		if (!ret && out < 0)
			ret = out;
		if (!ret)
			ret = tb_sync_file_info_raw(out, &status, &count, 0, NULL);
		if (!ret && (count != (uint32_t)n || status != 0)) {
			fprintf(stderr, "bench-merge: %s of %d: %u fences, status %d (want %d, 0)\n",
				how_names[how], n, count, status, n);
			ret = -EIO;
		}
		if (out >= 0)
			close(out);
		if (ret)
			fprintf(stderr, "bench-merge: N=%d %s: %s\n", n, how_names[how], strerror(-ret));
		else if (i >= warmup)
			bench_samples_add(&s[how], t1 - t0);
	}
	fences_drop(f, n);
	if (!ret) {
		snprintf(name, sizeof(name), "N=%d merge_array vs chain", n);
		bench_print_us(name, &s[H_LIB], &s[H_CHAIN]);
		snprintf(name, sizeof(name), "N=%d merge_array vs tree", n);
		bench_print_us(name, &s[H_LIB], &s[H_TREE]);
		snprintf(name, sizeof(name), "N=%d raw tree vs raw chain", n);
		bench_print_us(name, &s[H_TREE], &s[H_CHAIN]);
		if (n == 2) {
			snprintf(name, sizeof(name), "N=2 sb_sync_file_merge vs raw");
			bench_print_us(name, &s[H_PAIR], &s[H_CHAIN]);
		}
		printf("#   N=%d: %d iterations per variant in %.1f s\n", n, iterations,
		       (double)(now_ns() - t_start) / 1e9);
	}
	for (int h = 0; h < H_COUNT; h++)
		bench_samples_finish(&s[h]);
	free(f);
	free(fds);
	free(scratch);
	return ret;
}

int
main(int argc, char **argv)
{
	const char *ns = "2,16,256";
	int iterations = (int)bench_args(argc, argv, "--n", "N,N,...", &ns), vgem, failures = 0;
	struct utsname u;
	struct rlimit rl;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Each fence holds a sync_file and a dma-buf; 256 of them plus the tree's. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	vgem = sbk_vgem_open();
	if (vgem < 0) {
		fprintf(stderr, "bench-merge: no vgem: %s\n", strerror(-vgem));
		return 1;
	}
	uname(&u);
	printf("# figure 4: sync_file merge of N pending vgem fences (distinct contexts), time per merge;\n"
	       "# kernel %s, %ld CPUs; %d interleaved iterations per variant after a warm-up\n",
	       u.release, sysconf(_SC_NPROCESSORS_ONLN), iterations);
	for (const char *p = ns; *p;) {
		int n = atoi(p);

		if (n < 2) {
			fprintf(stderr, "bench-merge: N must be >= 2\n");
			return 2;
		}
		if (run_n(vgem, n, iterations))
			failures++;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	close(vgem);
	return failures ? 1 : 0;
}
