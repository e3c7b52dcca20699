/* SPDX-License-Identifier: MIT */
/*
 * cross-process-ordering: two processes share a dma-buf passed over a
 * socketpair (SCM_RIGHTS). The child (producer) opens its own vgem device,
 * makes a pending write fence and imports it onto the shared buffer as WRITE
 * with sb_dmabuf_import_sync_file(); it then writes new data into the buffer
 * and only afterwards signals. The parent (consumer) waits with
 * sb_dmabuf_wait(READ) before reading and must see the new data.
 *
 * --control: the child skips the import. The parent then sees an idle
 * buffer and reads stale data — the race the bridge exists to prevent.
 *
 * No step depends on timing. The child announces "signalling" ('S') on the
 * socket before it signals, so a wait that returned because of the signal
 * finds the 'S' already there (and one that did not wait finds none). With
 * the import the child cannot know when the parent is blocked, so it gives
 * it 500 ms to block first (only the chance to show a wait that does not
 * block); in the control nothing blocks the parent, and the child writes only
 * after the parent said it has read ('D').
 */
#include "vmtest.h"
#include "demo_util.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#define OLD_DATA "old-old-old-old"
#define NEW_DATA "NEW-NEW-NEW-NEW"
#define DATA_LEN 16

/* The dma-buf goes over the socket with one byte (common/demo_util.h). */
static int
send_fd(int sock, int fd)
{
	return demo_send(sock, "F", 1, &fd, 1);
}

static int
recv_fd(int sock)
{
	char byte;
	int fd = -1, n = 0, ret;

	ret = demo_recv(sock, &byte, 1, &fd, 1, &n, -1);
	if (ret < 0)
		return ret;
	return n == 1 ? fd : -EIO;
}

/* Child exit codes: 0 fine, 10+ a step that failed. */
static int
child(int sock, bool control)
{
	struct sbk_fence f;
	char msg[2];
	size_t size;
	void *map;
	int buf, vgem, ret;

	buf = recv_fd(sock);
	if (buf < 0)
		return 10;
	if (read(sock, &size, sizeof(size)) != sizeof(size))
		return 11;
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	if (map == MAP_FAILED)
		return 12;
	vgem = sbk_vgem_open();
	if (vgem < 0)
		return 13;
	if (sbk_fence_create(vgem, true, &f) != 0)
		return 14;

	ret = control ? 0 : sb_dmabuf_import_sync_file(buf, SB_ACCESS_WRITE, f.sync_file);
	msg[0] = 'R';
	msg[1] = (char)(ret == 0 ? 0 : -ret);
	if (write(sock, msg, 2) != 2)
		return 15;

	/*
	 * The control: write only once the consumer has read (its 'D'), so it
	 * reads stale data however slowly it runs. With the import the consumer
	 * cannot read before the signal below: give it 500 ms to block.
	 */
	vm_poll(sock, POLLIN, control ? -1 : 500);
	memcpy(map, NEW_DATA, DATA_LEN);
	if (write(sock, "S", 1) != 1)
		return 17;
	if (sbk_fence_signal(&f) != 0)
		return 16;
	/* Wait for the parent's "done" (or EOF), then clean up. */
	vm_poll(sock, POLLIN, 10000);
	sbk_fence_destroy(&f);
	munmap(map, size);
	close(buf);
	close(vgem);
	return 0;
}

int
main(int argc, char **argv)
{
	bool control = vm_has_arg(argc, argv, "--control");
	const char *kind_name = vm_arg_value(argc, argv, "--kind", "vgem");
	enum sbk_buf_kind kind;
	struct sbk_buf b;
	char got[DATA_LEN], msg[2];
	int sv[2], vgem, status, ret, busy_before, announced;
	int64_t t0, waited;
	pid_t pid;

	REQUIRE(sbk_buf_kind_parse(kind_name, &kind) == 0, "--kind %s", kind_name);
	vgem = vm_require_vgem();
	vm_require_buf(kind, vgem, 65536, &b);
	memcpy(b.map, OLD_DATA, DATA_LEN);
	tb_note("shared %s buffer%s", kind_name, control ? " (CONTROL: the child does not import)" : "");

	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	pid = tb_fork();
	if (pid == 0) {
		close(sv[0]);
		_exit(child(sv[1], control));
	}
	close(sv[1]);

	REQUIRE(send_fd(sv[0], b.fd) == 0, "send the dma-buf");
	REQUIRE(write(sv[0], &b.size, sizeof(b.size)) == sizeof(b.size), "send the size");
	REQUIRE(read(sv[0], msg, 2) == 2 && msg[0] == 'R', "child ready");
	if (!control)
		CHECK_EQ(-(int)msg[1], 0, "child's sb_dmabuf_import_sync_file");

	busy_before = vm_busy(b.fd, SB_ACCESS_READ);
	t0 = now_ns();
	ret = sb_dmabuf_wait(b.fd, SB_ACCESS_READ, 5000 * MS);
	waited = now_ns() - t0;
	memcpy(got, b.map, DATA_LEN);
	/* Had the child announced its signal when the wait returned? */
	announced = vm_poll(sv[0], POLLIN, 0) & POLLIN;
	if (announced)
		announced = read(sv[0], msg, 1) == 1 && msg[0] == 'S';
	CHECK(write(sv[0], "D", 1) == 1, "tell the child we read");

	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exited 0 (status %#x)", status);

	tb_note("busy(READ) before the wait: %d; wait = %d after %.1f ms; read \"%.15s\"", busy_before,
		     ret, vm_ms(waited), got);
	CHECK_EQ(ret, 0, "sb_dmabuf_wait(READ)");
	if (control) {
		CHECK_EQ(busy_before, 0, "control: without the import the buffer looks idle");
		CHECK(memcmp(got, OLD_DATA, DATA_LEN) == 0, "control: the consumer read stale data");
		CHECK(!announced, "control: the wait returned before the producer signalled");
	} else {
		CHECK_EQ(busy_before, 1, "the child's fence is visible to the parent");
		CHECK(memcmp(got, NEW_DATA, DATA_LEN) == 0,
		      "the consumer read what the producer wrote before signalling (got \"%.15s\")", got);
		CHECK(announced, "the consumer waited for the producer's signal (returned after %.1f ms)",
		      vm_ms(waited));
	}
	CHECK_EQ(vm_busy(b.fd, SB_ACCESS_WRITE), 0, "idle at the end");

	close(sv[0]);
	sbk_buf_destroy(&b);
	close(vgem);
	return tb_finish();
}
