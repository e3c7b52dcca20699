/* SPDX-License-Identifier: MIT */
/*
 * The layer's transfer count under each way a command buffer drops its
 * transfers (issue 8).
 *
 * vkQueueSubmit skips every per-command-buffer lookup while dev->xfer_cmds
 * (layer/track.c: command buffers of the device holding at least one
 * ownership transfer) is 0. A wrong decrement that brings it to 0 while the
 * submitted command buffer still holds its acquire makes the layer pass the
 * submit straight down: the copy reads the dma-buf while the foreign producer
 * still owns it. Several drops in one device would hide such a bug (extra
 * decrements of an unsigned count wrap past 0 instead of landing on it), so
 * each case gets a fresh VkDevice (count 0) and exactly the drops it names:
 *
 *   A  (submitted)  acquire from FOREIGN + copy dma-buf → host buffer
 *   B  (dropped)    the same acquire + copy ("-plain": the copy only), then
 *                   dropped by the case's path(s) before A is submitted:
 *
 *   case                     B           drops                        count: before → after
 *   none                     -           -                            1
 *   free                     transfer    vkFreeCommandBuffers         2 → 1
 *   reset                    transfer    vkResetCommandBuffer         2 → 1
 *   rebegin                  transfer    vkBeginCommandBuffer again   2 → 1
 *   pool-reset               transfer    vkResetCommandPool (B's)     2 → 1
 *   pool-destroy             transfer    vkDestroyCommandPool (B's)   2 → 1
 *   *-plain (each path)      no transfer the same drop                1 → 1
 *   reset-twice,             transfer    the same drop twice          2 → 1 → 1
 *   rebegin-twice
 *   pool-reset-then-destroy  transfer    pool reset, then destroy     2 → 1 → 1
 *
 * free/reset/rebegin use A's own pool (so a drop that clears too much also
 * hits A); the pool cases use a second pool, as a pool reset or destroy must
 * not touch A's.
 *
 * Then every case's A is submitted at once, each with a vgem WRITE fence
 * pending on its dma-buf: the copies must not run for 1 s (all cases share
 * that one wait), then the producer writes NEW into every buffer and signals,
 * and every copy must see NEW. With --control (SYNCBRIDGE_DISABLE=1) every
 * case must race: its app fence signals before the producer, the copy sees OLD.
 * (Without the layer the drop paths change nothing, so the suite's control
 * runs two cases; what proves each case can fail is the mutation table in
 * docs/reliability.md: a layer that decrements wrongly on one path fails
 * that path's cases.)
 *
 * Devices are what this costs: ~0.5 s each in the TCG guest, 10-14 s in all.
 *
 * Options: --case NAME (only that case; repeatable), --list, --control.
 */
#include <string.h>

#include "harness.h"
#include "kernel.h"
#include "tbvk.h"

#define SIZE 4096
#define OLD 0x11
#define NEW 0x22
/* How long a copy that does not wait for the producer gets to finish. The
 * buggy copy is a 4 KiB lavapipe copy: milliseconds even under TCG. With the
 * layer the window is not a synchronisation (a copy that waits cannot see OLD,
 * whatever the window; a slow machine only makes a buggy one harder to
 * catch). The control's copies must have finished before the producer
 * writes, so there the window is 15 s: each fence is waited for, not timed
 * (they are done within milliseconds; vgem's own 10 s timer ends a wrong
 * wait anyway). */
#define RACE_WINDOW_NS (1000ll * 1000 * 1000)
#define CONTROL_WINDOW_NS (15000ll * 1000 * 1000)

enum drop {
	DROP_NONE,
	DROP_FREE,
	DROP_RESET,
	DROP_REBEGIN,
	DROP_POOL_RESET,
	DROP_POOL_DESTROY,
};

struct drop_case {
	const char *name;
	bool has_b;
	bool b_transfer;
	enum drop drops[2];
};

static const struct drop_case cases[] = {
	{ "none", false, false, { DROP_NONE } },
	{ "free", true, true, { DROP_FREE } },
	{ "reset", true, true, { DROP_RESET } },
	{ "rebegin", true, true, { DROP_REBEGIN } },
	{ "pool-reset", true, true, { DROP_POOL_RESET } },
	{ "pool-destroy", true, true, { DROP_POOL_DESTROY } },
	{ "free-plain", true, false, { DROP_FREE } },
	{ "reset-plain", true, false, { DROP_RESET } },
	{ "rebegin-plain", true, false, { DROP_REBEGIN } },
	{ "pool-reset-plain", true, false, { DROP_POOL_RESET } },
	{ "pool-destroy-plain", true, false, { DROP_POOL_DESTROY } },
	{ "reset-twice", true, true, { DROP_RESET, DROP_RESET } },
	{ "rebegin-twice", true, true, { DROP_REBEGIN, DROP_REBEGIN } },
	{ "pool-reset-then-destroy", true, true, { DROP_POOL_RESET, DROP_POOL_DESTROY } },
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

struct run {
	const struct drop_case *c;
	struct vkt t;
	struct sbk_buf buf;
	struct tbvk_shared shared;
	struct vkt_buffer dst;
	VkCommandPool b_pool; /* the pool cases' second pool, else A's */
	bool own_b_pool;
	VkCommandBuffer a, b;
	VkFence fence;
	uint32_t fence_id;
	bool early;
};

static bool
uses_second_pool(const struct drop_case *c)
{
	for (int i = 0; i < 2; i++)
		if (c->drops[i] == DROP_POOL_RESET || c->drops[i] == DROP_POOL_DESTROY)
			return true;
	return false;
}

static VkCommandBuffer
allocate(struct vkt *t, VkCommandPool pool)
{
	VkCommandBufferAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VkCommandBuffer cb;
	VK_CHECK(vkAllocateCommandBuffers(t->device, &ai, &cb));
	return cb;
}

/* Begin (re-recording resets it implicitly), [acquire], copy, end. */
static void
record(struct run *r, const struct tbvk_options *opt, VkCommandBuffer cb, bool transfer)
{
	VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
	VK_CHECK(vkBeginCommandBuffer(cb, &bi));
	if (transfer)
		tbvk_acquire(&r->t, opt, cb, &r->shared, VK_ACCESS_TRANSFER_READ_BIT);
	tbvk_copy_from_shared(cb, &r->shared, &r->dst);
	vkt_host_read_barrier(cb);
	VK_CHECK(vkEndCommandBuffer(cb));
}

static void
drop_b(struct run *r, const struct tbvk_options *opt, enum drop d)
{
	VkDevice dev = r->t.device;

	switch (d) {
	case DROP_NONE:
		break;
	case DROP_FREE:
		vkFreeCommandBuffers(dev, r->b_pool, 1, &r->b);
		r->b = VK_NULL_HANDLE;
		break;
	case DROP_RESET:
		VK_CHECK(vkResetCommandBuffer(r->b, 0));
		break;
	case DROP_REBEGIN:
		record(r, opt, r->b, false);
		break;
	case DROP_POOL_RESET:
		VK_CHECK(vkResetCommandPool(dev, r->b_pool, 0));
		break;
	case DROP_POOL_DESTROY:
		vkDestroyCommandPool(dev, r->b_pool, NULL); /* frees B */
		r->b_pool = VK_NULL_HANDLE;
		r->b = VK_NULL_HANDLE;
		break;
	}
}

static void
run_setup(struct run *r, const struct vkt *base, bool reuse_base, const struct tbvk_options *opt,
	  int vgem)
{
	if (reuse_base)
		r->t = *base;
	else
		vkt_create_device(&r->t, base);

	int ret = sbk_buf_create(SBK_BUF_VGEM, vgem, SIZE, &r->buf);
	REQUIRE(ret == 0, "vgem buffer: %s", strerror(-ret));
	memset(r->buf.map, OLD, r->buf.size);
	vkt_import_buffer(&r->t, r->buf.fd, SIZE, &r->shared.buf);
	vkt_host_buffer(&r->t, SIZE, &r->dst);
	r->fence = vkt_fence(&r->t);

	r->a = allocate(&r->t, r->t.pool);
	record(r, opt, r->a, true);

	r->b_pool = r->t.pool;
	if (r->c->has_b && uses_second_pool(r->c)) {
		VkCommandPoolCreateInfo pci = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
			.queueFamilyIndex = r->t.family,
		};
		VK_CHECK(vkCreateCommandPool(r->t.device, &pci, NULL, &r->b_pool));
		r->own_b_pool = true;
	}
	if (r->c->has_b) {
		r->b = allocate(&r->t, r->b_pool);
		record(r, opt, r->b, r->c->b_transfer);
		for (int i = 0; i < 2; i++)
			drop_b(r, opt, r->c->drops[i]);
	}
}

static void
run_cleanup(struct run *r, bool is_base)
{
	VkDevice dev = r->t.device;

	vkDeviceWaitIdle(dev);
	vkFreeCommandBuffers(dev, r->t.pool, 1, &r->a);
	if (r->b)
		vkFreeCommandBuffers(dev, r->b_pool, 1, &r->b);
	if (r->own_b_pool && r->b_pool)
		vkDestroyCommandPool(dev, r->b_pool, NULL);
	vkDestroyFence(dev, r->fence, NULL);
	vkt_buffer_destroy(&r->t, &r->dst);
	vkt_buffer_destroy(&r->t, &r->shared.buf);
	if (!is_base)
		vkt_finish_device(&r->t);
	sbk_buf_destroy(&r->buf);
}

static bool
selected(const char *name, char **only, int n_only)
{
	if (n_only == 0)
		return true;
	for (int i = 0; i < n_only; i++)
		if (strcmp(only[i], name) == 0)
			return true;
	return false;
}

int
main(int argc, char **argv)
{
	/* Our own options first; the rest are vkt's. */
	char *only[N_CASES + 1];
	int n_only = 0;
	char *rest[argc + 1];
	int n_rest = 0;
	rest[n_rest++] = argv[0];
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
			REQUIRE(n_only < (int)N_CASES, "too many --case");
			only[n_only++] = argv[++i];
		} else if (strcmp(argv[i], "--list") == 0) {
			for (size_t c = 0; c < N_CASES; c++)
				printf("%s\n", cases[c].name);
			return 0;
		} else {
			rest[n_rest++] = argv[i];
		}
	}
	rest[n_rest] = NULL;
	for (int i = 0; i < n_only; i++) {
		bool known = false;
		for (size_t c = 0; c < N_CASES; c++)
			known = known || strcmp(only[i], cases[c].name) == 0;
		REQUIRE(known, "unknown case %s (--list)", only[i]);
	}

	struct tbvk_options opt;
	int vgem = tbvk_start(n_rest, rest, &opt);

	struct vkt base;
	int64_t t0 = now_ns();
	tbvk_init(&base, &opt, true);

	struct run runs[N_CASES];
	int n = 0;
	for (size_t c = 0; c < N_CASES; c++) {
		if (!selected(cases[c].name, only, n_only))
			continue;
		memset(&runs[n], 0, sizeof(runs[n]));
		runs[n].c = &cases[c];
		run_setup(&runs[n], &base, n == 0, &opt, vgem);
		n++;
	}
	int64_t t1 = now_ns();

	/* The foreign producer owns every buffer: a pending WRITE fence each. */
	for (int i = 0; i < n; i++) {
		int ret = sbk_vgem_fence_attach(vgem, runs[i].buf.handle, true, &runs[i].fence_id);
		REQUIRE(ret == 0, "vgem fence attach: %s", strerror(-ret));
	}
	for (int i = 0; i < n; i++) {
		VkResult res = tbvk_submit(&runs[i].t, &opt, runs[i].a, VK_NULL_HANDLE, 0,
					  runs[i].fence);
		REQUIRE(res == VK_SUCCESS, "%s: vkQueueSubmit: %s", runs[i].c->name,
			vkt_result_name(res));
	}

	/* One race window for all cases: a copy that did not wait finishes in it. */
	int64_t deadline = now_ns() + (opt.control ? CONTROL_WINDOW_NS : RACE_WINDOW_NS);
	for (int i = 0; i < n; i++) {
		int64_t left = deadline - now_ns();
		VkResult res = vkWaitForFences(runs[i].t.device, 1, &runs[i].fence, VK_TRUE,
					       left > 0 ? (uint64_t)left : 0);
		runs[i].early = res == VK_SUCCESS;
	}
	for (int i = 0; i < n; i++) {
		memset(runs[i].buf.map, NEW, runs[i].buf.size);
		CHECK_EQ(sbk_vgem_fence_signal(vgem, runs[i].fence_id), 0, "vgem fence signal");
	}
	int64_t t2 = now_ns();

	int raced = 0;
	for (int i = 0; i < n; i++) {
		struct run *r = &runs[i];
		VkResult res = vkWaitForFences(r->t.device, 1, &r->fence, VK_TRUE,
					       20ull * 1000 * 1000 * 1000);
		CHECK(res == VK_SUCCESS, "%s: vkWaitForFences: %s", r->c->name,
		      vkt_result_name(res));
		size_t n_new = vkt_count_bytes(r->dst.map, SIZE, NEW);
		size_t n_old = vkt_count_bytes(r->dst.map, SIZE, OLD);
		bool race = r->early || n_new != SIZE;
		raced += race;
		tb_note("%-24s copy saw %4zu NEW, %4zu OLD; app fence before producer: %-3s %s",
			     r->c->name, n_new, n_old, r->early ? "yes" : "no",
			     race ? "RACE" : "ordered");
		if (!opt.control) {
			CHECK(n_new == SIZE && !r->early,
			      "%s: the copy waited for the foreign writer", r->c->name);
		} else {
			CHECK(n_old == SIZE && r->early,
			      "%s: control: without the layer the copy raced ahead", r->c->name);
		}
	}
	tb_note("%d cases, %d raced; setup %.2f s (%d devices), submit + race window %.2f s",
		     n, raced, (t1 - t0) / 1e9, n, (t2 - t1) / 1e9);

	for (int i = n - 1; i >= 0; i--)
		run_cleanup(&runs[i], i == 0);
	vkt_finish(&base);
	close(vgem);
	return tb_finish();
}
