/* SPDX-License-Identifier: MIT */
/*
 * dmabuf-import-{read,write}-{vgem,udmabuf,heap}: a pending sync_file (a vgem
 * write fence from another buffer) imported with sb_dmabuf_import_sync_file()
 * onto a buffer of the given kind.
 *  - as READ: readers of the buffer are not blocked, writers are;
 *  - as WRITE: both are.
 * Then the ordering that the import buys: the fence's owner accesses the
 * buffer and signals; the other party waits with sb_dmabuf_wait() and
 * accesses after it. With a write import the owner writes new data and the
 * consumer must read it; with a read import the owner reads and the other
 * party (a writer) must not have overwritten the data yet.
 *
 *   dmabuf_import --kind vgem|udmabuf|heap --access read|write [--control]
 *
 * --control skips the import: the program then asserts that the race IS
 * observed (the buffer reports idle while the producer is pending, and the
 * accesses happen in the wrong order), which proves the checks above would
 * catch a bridge that does not attach the fence.
 *
 * No step depends on timing: the owner sets `signalling` before it signals,
 * so the other party's wait, if it returned because of the signal, sees it
 * set; in the control the owner goes only after the other party's access.
 */
#include "vmtest.h"
#include "kernel_raw.h"

#define OLD_DATA "old-old-old-old"
#define NEW_DATA "NEW-NEW-NEW-NEW"
#define DATA_LEN 16

struct owner {
	struct sbk_fence *fence;
	char *map;
	bool write;           /* the fence is a write: the owner writes, else reads */
	char seen[DATA_LEN];  /* what a reading owner saw */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool other_done;      /* the other party has made its access */
	bool control;         /* no import: nothing holds the other party up */
	atomic_bool signalling; /* set just before the owner signals */
	int signal_ret;
};

/*
 * In the control the owner waits (without a limit) for the other party's
 * access, so that access comes first however slowly the test runs. With the
 * import the other party is blocked in sb_dmabuf_wait() until the signal:
 * the owner gives it 300 ms to block there (only the chance to show a wait
 * that does not block), then goes.
 */
static void *
owner_main(void *p)
{
	struct owner *o = p;
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += 300 * MS;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&o->lock);
	while (!o->other_done) {
		if (o->control)
			pthread_cond_wait(&o->cond, &o->lock);
		else if (pthread_cond_timedwait(&o->cond, &o->lock, &until) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&o->lock);

	if (o->write)
		memcpy(o->map, NEW_DATA, DATA_LEN);
	else
		memcpy(o->seen, o->map, DATA_LEN);
	atomic_store(&o->signalling, true);
	o->signal_ret = sbk_fence_signal(o->fence);
	return NULL;
}

int
main(int argc, char **argv)
{
	const char *kind_name = vm_arg_value(argc, argv, "--kind", "vgem");
	const char *access_name = vm_arg_value(argc, argv, "--access", "write");
	bool control = vm_has_arg(argc, argv, "--control");
	enum sbk_buf_kind kind;
	enum sb_access access, other;
	struct sbk_buf b;
	struct sbk_fence prod;
	struct owner o;
	pthread_t th;
	char after[DATA_LEN];
	int vgem, er, ew, ret, busy_r, busy_w;
	bool after_signal;
	int64_t t0, waited;

	REQUIRE(sbk_buf_kind_parse(kind_name, &kind) == 0, "--kind %s", kind_name);
	REQUIRE(strcmp(access_name, "read") == 0 || strcmp(access_name, "write") == 0,
		"--access %s", access_name);
	access = strcmp(access_name, "read") == 0 ? SB_ACCESS_READ : SB_ACCESS_WRITE;
	/* The party that must wait: a writer for a read fence, a reader for a write fence. */
	other = access == SB_ACCESS_READ ? SB_ACCESS_WRITE : SB_ACCESS_READ;
	tb_note("import as %s onto a %s buffer%s", access_name, kind_name,
		     control ? " (CONTROL: no import)" : "");

	vgem = vm_require_vgem();
	vm_require_buf(kind, vgem, 65536, &b);
	memcpy(b.map, OLD_DATA, DATA_LEN);

	/* The producer's fence lives on another (vgem) buffer. */
	vm_require_fence(vgem, true, &prod);
	CHECK_EQ(vm_status(prod.sync_file), 0, "producer sync_file is pending");
	CHECK_EQ(vm_busy(b.fd, SB_ACCESS_WRITE), 0, "target buffer starts idle");

	if (!control) {
		ret = sb_dmabuf_import_sync_file(b.fd, access, prod.sync_file);
		CHECK_EQ(ret, 0, "sb_dmabuf_import_sync_file");
		CHECK(sbk_fd_is_open(prod.sync_file) && sbk_fd_is_open(b.fd),
		      "import leaves both fds open");
	}

	busy_r = vm_busy(b.fd, SB_ACCESS_READ);
	busy_w = vm_busy(b.fd, SB_ACCESS_WRITE);
	er = vm_export(b.fd, SB_ACCESS_READ);
	ew = vm_export(b.fd, SB_ACCESS_WRITE);
	tb_note("busy READ=%d WRITE=%d; export READ status=%d WRITE status=%d; raw poll=%#x",
		     busy_r, busy_w, vm_status(er), vm_status(ew), tb_dmabuf_poll_raw(b.fd));

	if (control) {
		/* The race: the producer has not signalled, yet the buffer says "go". */
		CHECK_EQ(vm_status(prod.sync_file), 0, "control: producer still pending");
		CHECK_EQ(busy_w, 0, "control: without the import writers are not blocked");
		CHECK_EQ(busy_r, 0, "control: without the import readers are not blocked");
		CHECK_EQ(vm_status(ew), 1, "control: WRITE export already signalled");
	} else if (access == SB_ACCESS_READ) {
		CHECK_EQ(busy_r, 0, "READ import: readers not blocked");
		CHECK_EQ(busy_w, 1, "READ import: writers blocked");
		CHECK_EQ(vm_status(er), 1, "READ import: READ export signalled");
		CHECK_EQ(vm_status(ew), 0, "READ import: WRITE export pending");
		CHECK_EQ(sb_dmabuf_wait(b.fd, SB_ACCESS_READ, 0), 0, "READ import: wait(READ, 0)");
		CHECK_EQ(sb_dmabuf_wait(b.fd, SB_ACCESS_WRITE, 10 * MS), -ETIME,
			 "READ import: wait(WRITE, 10 ms)");
		CHECK_EQ(tb_dmabuf_poll_raw(b.fd), POLLIN, "READ import: raw poll revents");
	} else {
		CHECK_EQ(busy_r, 1, "WRITE import: readers blocked");
		CHECK_EQ(busy_w, 1, "WRITE import: writers blocked");
		CHECK_EQ(vm_status(er), 0, "WRITE import: READ export pending");
		CHECK_EQ(vm_status(ew), 0, "WRITE import: WRITE export pending");
		CHECK_EQ(sb_dmabuf_wait(b.fd, SB_ACCESS_READ, 10 * MS), -ETIME,
			 "WRITE import: wait(READ, 10 ms)");
		CHECK_EQ(tb_dmabuf_poll_raw(b.fd), 0, "WRITE import: raw poll revents");
	}

	/* Ordering: the owner accesses and signals; the other party waits, then accesses. */
	memset(&o, 0, sizeof(o));
	o.fence = &prod;
	o.map = b.map;
	o.write = access == SB_ACCESS_WRITE;
	o.control = control;
	atomic_init(&o.signalling, false);
	pthread_mutex_init(&o.lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&o.cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	REQUIRE(pthread_create(&th, NULL, owner_main, &o) == 0, "pthread_create");

	t0 = now_ns();
	ret = sb_dmabuf_wait(b.fd, other, 5000 * MS);
	waited = now_ns() - t0;
	after_signal = atomic_load(&o.signalling);
	if (other == SB_ACCESS_READ)
		memcpy(after, b.map, DATA_LEN);
	else
		memcpy(b.map, NEW_DATA, DATA_LEN);
	pthread_mutex_lock(&o.lock);
	o.other_done = true;
	pthread_cond_signal(&o.cond);
	pthread_mutex_unlock(&o.lock);
	pthread_join(th, NULL);
	CHECK_EQ(o.signal_ret, 0, "owner signalled its vgem fence");
	tb_note("sb_dmabuf_wait(%s) returned %d after %.1f ms", other == SB_ACCESS_READ ? "READ" : "WRITE",
		     ret, vm_ms(waited));
	CHECK_EQ(ret, 0, "sb_dmabuf_wait for the other party");

	if (control) {
		if (other == SB_ACCESS_READ)
			CHECK(memcmp(after, OLD_DATA, DATA_LEN) == 0,
			      "control: the consumer read stale data (got \"%.15s\")", after);
		else
			CHECK(memcmp(o.seen, NEW_DATA, DATA_LEN) == 0,
			      "control: the writer overwrote the data before the reader read it (reader saw \"%.15s\")",
			      o.seen);
		CHECK(!after_signal, "control: the wait returned before the owner signalled (%.1f ms)",
		      vm_ms(waited));
	} else {
		if (other == SB_ACCESS_READ)
			CHECK(memcmp(after, NEW_DATA, DATA_LEN) == 0,
			      "the consumer read the producer's data (got \"%.15s\")", after);
		else
			CHECK(memcmp(o.seen, OLD_DATA, DATA_LEN) == 0,
			      "the reader finished before the writer wrote (reader saw \"%.15s\")", o.seen);
		CHECK(after_signal, "the wait lasted until the owner signalled (%.1f ms)", vm_ms(waited));
		CHECK_EQ(vm_status(ew), 1, "the earlier WRITE export signalled with the producer");
		CHECK_EQ(vm_status(er), 1, "the earlier READ export signalled with the producer");
	}
	CHECK_EQ(vm_busy(b.fd, SB_ACCESS_WRITE), 0, "idle at the end");

	pthread_mutex_destroy(&o.lock);
	pthread_cond_destroy(&o.cond);
	close(er);
	close(ew);
	sbk_fence_destroy(&prod);
	sbk_buf_destroy(&b);
	close(vgem);
	return tb_finish();
}
