/* SPDX-License-Identifier: MIT */
/*
 * hardening-layer-soak (VM tier): many acquire/release cycles through the
 * layer with random fence timings; the ordering holds on every cycle, and
 * fds and memory return to where they were after the warm-up.
 *
 * Each cycle submits one command buffer: acquire the dma-buf from FOREIGN,
 * copy it out, copy new data in, release it to FOREIGN. On a random quarter
 * of the cycles a foreign producer holds a vgem WRITE fence across the submit
 * and writes its own pattern before signalling, after a random delay of
 * 0-2 ms (another thread). The copy-out must see, every time, exactly what
 * the last writer wrote: the producer's pattern on fenced cycles, the
 * previous cycle's GPU copy-in otherwise.
 *
 * Measured every tenth of the run: open fds, RSS, and the fences on the
 * shared dma-buf (an export of everything on it, SYNC_IOC_FILE_INFO).
 *
 * Pending objects: the layer's own counts, from its "layer.objects" marker
 * (SYNCBRIDGE_TRACE on, markers to a file of ours, read and emptied every 16
 * cycles, every cycle of the warm-up): what it tracks (memories, buffers,
 * images, command buffers, those holding transfers) must stay exactly as
 * after the warm-up, and what it holds between submits (submits in flight,
 * their semaphores, the semaphore and fence pools) never above the warm-up's
 * highest.
 *
 * Memory: RSS is reported, not judged — the driver stack (lavapipe, the
 * loader) grows it in ~8 MiB steps with or without the layer (run it with
 * --control to compare); what is judged is the heap in use (glibc mallinfo2:
 * allocated and not freed, by anybody), which a per-cycle leak in the layer
 * would grow linearly.
 *
 *   hardening-layer-soak --iterations N [--seed S] [--max-heap-growth-kib K (256)] [--control]
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/dma-buf.h>

#include "fd_snapshot.h"
#include "harness.h"
#include "kernel.h"
#include "kernel_raw.h"
#include "tbvk.h"

#define SIZE 4096

struct producer {
	sem_t go, done;
	int vgem;
	struct sbk_buf *buf;
	uint32_t fence_id;
	uint8_t pattern;
	int64_t delay_ns;
	int signal_ret;
	atomic_bool quit;
};

static void *
producer_main(void *arg)
{
	struct producer *p = arg;

	for (;;) {
		while (sem_wait(&p->go) < 0)
			;
		if (atomic_load(&p->quit))
			return NULL;
		sbk_sleep_ns(p->delay_ns);
		memset(p->buf->map, p->pattern, SIZE);
		p->signal_ret = sbk_vgem_fence_signal(p->vgem, p->fence_id);
		sem_post(&p->done);
	}
}

static long
rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = -1;
	fclose(f);
	return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Bytes the process has allocated with malloc and not freed (glibc; 0 under ASan). */
static long
heap_kib(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (long)((mi.uordblks + mi.hblkhd) / 1024);
}

/* Fences on the dma-buf (all of them: a WRITE export), or -errno. */
static int
fences_on(int dmabuf_fd)
{
	int fd = -1, status = 0, ret;
	uint32_t n = 0;

	ret = tb_dmabuf_export_raw(dmabuf_fd, DMA_BUF_SYNC_WRITE, &fd);
	if (ret < 0)
		return ret;
	ret = tb_sync_file_info_raw(fd, &status, &n, 0, NULL);
	close(fd);
	return ret < 0 ? ret : (int)n;
}

/*
 * The layer's "layer.objects" marker (layer/submit.c trace_objects): its
 * counts, in this order. The marker file is ours; the layer appends to it by
 * path (a line per write, O_APPEND) from this thread's vkQueueSubmit, so
 * reading and emptying it between cycles races with nothing.
 */
static const char *const object_keys[] = {
	"memories", "buffers", "images", "cmds", "xfer_cmds",
	"inflight", "inflight_semaphores", "semaphore_pool", "fence_pool",
};
#define N_OBJECTS (sizeof(object_keys) / sizeof(object_keys[0]))
#define N_TRACKED 5 /* the first five must not change; the rest are bounded */

/* The counts of the last layer.objects line written since the last call; false if none. */
static bool
read_objects(int fd, long out[N_OBJECTS])
{
	static char text[1 << 16];
	off_t size = lseek(fd, 0, SEEK_END);
	off_t from = size > (off_t)sizeof(text) - 1 ? size - (off_t)sizeof(text) + 1 : 0;
	ssize_t n = size > 0 ? pread(fd, text, (size_t)(size - from), from) : 0;
	bool found = false;

	if (n > 0) {
		text[n] = '\0';
		char *line = NULL;
		for (char *p = strstr(text, "syncbridge: layer.objects "); p;
		     p = strstr(p + 1, "syncbridge: layer.objects "))
			line = p;
		if (line) {
			char *end = strchr(line, '\n');
			if (end)
				*end = '\0';
			found = true;
			for (size_t k = 0; k < N_OBJECTS; k++) {
				char key[40];
				snprintf(key, sizeof(key), " %s=", object_keys[k]);
				char *v = strstr(line, key);
				out[k] = v ? strtol(v + strlen(key), NULL, 10) : -1;
				found &= v != NULL;
			}
		}
	}
	if (ftruncate(fd, 0) < 0)
		found = false;
	return found;
}

/* xorshift64*: reproducible from --seed. */
static uint64_t rng_state;

static uint32_t
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

int
main(int argc, char **argv)
{
	struct tbvk_options opt;
	int vgem = tbvk_start(argc, argv, &opt);
	long iterations = opt.iterations > 0 ? opt.iterations : 10000;
	const char *seed_s = NULL, *max_s = NULL;
	long max_growth_kib = 256;

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--seed") == 0)
			seed_s = argv[i + 1];
		if (strcmp(argv[i], "--max-heap-growth-kib") == 0)
			max_s = argv[i + 1];
	}
	rng_state = seed_s ? strtoull(seed_s, NULL, 0) : 0x5eedb1d9e5ull;
	if (!rng_state)
		rng_state = 1;
	if (max_s)
		max_growth_kib = atol(max_s);


	/* Before the layer loads: it reads SYNCBRIDGE_TRACE once. */
	char marker_path[] = "/tmp/sb-soak-markers-XXXXXX";
	int marker_fd = mkostemp(marker_path, O_CLOEXEC);
	REQUIRE(marker_fd >= 0, "marker file: %s", strerror(errno));
	setenv("SYNCBRIDGE_TRACE", "1", 1);
	setenv("SYNCBRIDGE_TRACE_MARKER", marker_path, 1);

	struct vkt t;
	tbvk_init(&t, &opt, true);
	struct tbvk_cycle c;
	tbvk_cycle_create(&t, vgem, SIZE, &c);

	struct tbvk_rec both;
	tbvk_begin(&t, &opt, false, &both);
	tbvk_record_cycle(&t, &opt, tbvk_cmd(&both), &c);
	vkt_host_read_barrier(tbvk_cmd(&both));
	tbvk_end(&t, &both);

	struct producer p = { .vgem = vgem, .buf = &c.buf };
	pthread_t th;
	sem_init(&p.go, 0, 0);
	sem_init(&p.done, 0, 0);
	REQUIRE(pthread_create(&th, NULL, producer_main, &p) == 0, "pthread_create");

	VkFence fence = vkt_fence(&t);
	const long warmup = 50;
	long errors = 0, misordered = 0, fenced = 0;
	int fds0 = -1, fds_max = 0;
	long rss0 = -1, rss_max = 0, heap0 = -1;
	uint8_t last = 0; /* what the shared buffer holds now */
	int64_t t0 = 0;
	long obj[N_OBJECTS], obj0[N_OBJECTS], obj_max[N_OBJECTS], obj_warm_max[N_OBJECTS];
	long obj_samples = 0, obj_bad = 0;
	for (size_t k = 0; k < N_OBJECTS; k++)
		obj0[k] = obj_max[k] = obj_warm_max[k] = -1;

	tb_note("%ld cycles, seed %#llx; every tenth: cycle, fds, RSS KiB, heap KiB, fences on the dma-buf",
		     iterations, (unsigned long long)(seed_s ? strtoull(seed_s, NULL, 0) : 0x5eedb1d9e5ull));
	for (long i = 0; i < iterations + warmup && errors < 5 && (misordered < 5 || opt.control); i++) {
		bool with_fence = (rnd() & 3) == 0;
		uint8_t src_pattern = (uint8_t)(0x80 | (i & 0x7f));
		uint8_t expect = last;
		VkResult r;

		if (i == warmup) {
			/* Pools and caches are filled by now: from here on nothing may grow. */
			fds0 = tb_count_fds();
			rss0 = rss_kib();
			heap0 = heap_kib();
			t0 = now_ns();
		}
		memset(c.src.map, src_pattern, SIZE);
		memset(c.dst.map, 0, SIZE);
		if (with_fence) {
			if (sbk_vgem_fence_attach(vgem, c.buf.handle, true, &p.fence_id) < 0) {
				errors++;
				continue;
			}
			p.pattern = (uint8_t)(i & 0x7f);
			p.delay_ns = (int64_t)(rnd() % 2000) * 1000;
			expect = p.pattern;
			fenced++;
			sem_post(&p.go);
		}
		r = tbvk_submit(&t, &opt, both.primary, VK_NULL_HANDLE, 0, fence);
		if (r != VK_SUCCESS ||
		    vkWaitForFences(t.device, 1, &fence, VK_TRUE, 20ull * 1000000000) != VK_SUCCESS)
			errors++;
		vkResetFences(t.device, 1, &fence);
		if (with_fence) {
			while (sem_wait(&p.done) < 0)
				;
			errors += p.signal_ret != 0;
		}
		if (vkt_count_bytes(c.dst.map, SIZE, expect) != SIZE && misordered++ < 5) {
			printf("%s - cycle %ld (%s): the copy saw %#x, want %#x\n",
			       opt.control ? "# control" : "not ok", i,
			       with_fence ? "fenced" : "unfenced", ((uint8_t *)c.dst.map)[0], expect);
		}
		last = src_pattern;

		/* Every warm-up cycle: the held counts differ between cycles (an
		 * acquire that had to wait leaves its submit in flight until the
		 * next one), and the warm-up must have seen each kind. */
		if (i < warmup && read_objects(marker_fd, obj)) {
			for (size_t k = 0; k < N_OBJECTS; k++)
				obj_warm_max[k] = obj[k] > obj_warm_max[k] ? obj[k] : obj_warm_max[k];
			if (i + 1 == warmup)
				memcpy(obj0, obj, sizeof(obj));
		}
		if (i >= warmup && (i % 16 == 0 || i + 1 == iterations + warmup)) {
			int fds = tb_count_fds();
			long rss = rss_kib();

			fds_max = fds > fds_max ? fds : fds_max;
			rss_max = rss > rss_max ? rss : rss_max;
			if (read_objects(marker_fd, obj)) {
				bool bad = false;
				obj_samples++;
				for (size_t k = 0; k < N_OBJECTS; k++) {
					obj_max[k] = obj[k] > obj_max[k] ? obj[k] : obj_max[k];
					bad |= k < N_TRACKED ? obj[k] != obj0[k]
							     : obj[k] > (obj0[k] > obj_warm_max[k] ? obj0[k] : obj_warm_max[k]);
				}
				if (bad && obj_bad++ < 5) {
					printf("not ok - cycle %ld: the layer's objects grew:", i);
					for (size_t k = 0; k < N_OBJECTS; k++)
						printf(" %s=%ld (after warm-up %ld)", object_keys[k], obj[k], obj0[k]);
					printf("\n");
				}
			}
		}
		if (i >= warmup && (i - warmup + 1) % (iterations / 10 ? iterations / 10 : 1) == 0)
			tb_note("%8ld %4d %8ld %8ld %3d", i - warmup + 1, tb_count_fds(), rss_kib(),
				     heap_kib(), fences_on(c.buf.fd));
	}
	int64_t t1 = now_ns();
	int fds1 = tb_count_fds();
	long rss1 = rss_kib(), heap1 = heap_kib();

	tb_note("%ld cycles (%ld with a pending foreign fence) in %.1f s, %.2f ms each", iterations,
		     fenced, (t1 - t0) / 1e9, (t1 - t0) / 1e6 / (double)iterations);
	tb_note("fds %d → %d (max %d); RSS %ld → %ld KiB (max %ld); heap in use %ld → %ld KiB; "
		     "fences on the dma-buf at the end: %d",
		     fds0, fds1, fds_max, rss0, rss1, rss_max, heap0, heap1, fences_on(c.buf.fd));
	if (!opt.control) {
		char a[256] = "", b[256] = "";
		for (size_t k = 0; k < N_OBJECTS; k++) {
			long hi = obj0[k] > obj_warm_max[k] ? obj0[k] : obj_warm_max[k];
			snprintf(a + strlen(a), sizeof(a) - strlen(a), " %s=%ld", object_keys[k], obj0[k]);
			snprintf(b + strlen(b), sizeof(b) - strlen(b), " %s=%ld", object_keys[k],
				 k < N_TRACKED ? obj0[k] : hi);
		}
		tb_note("the layer's objects after the warm-up:%s", a);
		tb_note("allowed (tracked: the same; held: the warm-up's highest):%s", b);
		a[0] = '\0';
		for (size_t k = 0; k < N_OBJECTS; k++)
			snprintf(a + strlen(a), sizeof(a) - strlen(a), " %s=%ld", object_keys[k], obj_max[k]);
		tb_note("highest over %ld samples:%s", obj_samples, a);
		CHECK(obj0[0] >= 0 && obj_samples > 0, "the layer's layer.objects marker was read "
		      "(%ld samples)", obj_samples);
		CHECK_EQ(obj_bad, 0, "samples where the layer's objects grew");
	}
	CHECK_EQ(errors, 0, "submit/wait/signal errors");
	if (!opt.control)
		CHECK_EQ(misordered, 0, "cycles whose copy saw other data than the last writer's");
	else
		tb_note("control (no layer): %ld cycles saw other data than the last writer's", misordered);
	CHECK_EQ(fds1, fds0, "open fds after the soak");
	CHECK_EQ(fds_max, fds0, "open fds never grew during the soak");
	if (heap0 > 0)
		CHECK(heap1 - heap0 <= max_growth_kib, "heap in use grew by %ld KiB (limit %ld)",
		      heap1 - heap0, max_growth_kib);
	else
		tb_note("heap in use not measurable here (ASan's allocator): LeakSanitizer judges at exit");

	atomic_store(&p.quit, true);
	sem_post(&p.go);
	pthread_join(th, NULL);
	vkDestroyFence(t.device, fence, NULL);
	tbvk_rec_free(&t, &both);
	tbvk_cycle_destroy(&t, &c);
	vkt_finish(&t);
	close(vgem);
	close(marker_fd);
	unlink(marker_path);
	return tb_finish();
}
