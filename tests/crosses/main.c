/* SPDX-License-Identifier: MIT */
/*
 * crosses, gpu-crosses: which dma-bufs and fences cross between the drivers
 * of the test guests, measured cell by cell and checked against the table
 * committed next to this file (docs/crosses.md explains every cell).
 *
 *   crosses --expect tests/crosses/expected-plain.txt   (plain guest)
 *   crosses --expect tests/crosses/expected-virgl.txt   (GPU group's guest)
 *   crosses                      (prints the table, checks nothing: exit 77)
 *   options: --virgl-iters N (the long draws on virgl; default 2000),
 *            --without D1,D2 (leave drivers out: they are "not here"; the
 *            Vulkan one is "vulkan")
 *
 * Drivers: vgem, udmabuf, virtio_gpu (dumb buffers; its own fence through
 * EXECBUFFER), lavapipe (Vulkan), llvmpipe (EGL's software device), virgl
 * (EGL surfaceless on virtio_gpu with +virgl). One line per cell:
 *   cell EXPORTER -> IMPORTER KIND: ok… | ERR step CODE | not here (why)
 * KIND buffer (buffers.c): the exporter writes its own value into every byte
 * of a 64x64 image, the importer imports the dma-buf and reads it back;
 * "ok" only when every byte is the exporter's value ("ERR data" otherwise).
 * KIND fence (fences.c): a fresh fence per cell; "ok pending|signalled" only
 * when the importer's wait returned after the fence signalled.
 * KIND implicit (buffers.c): right after the exporter's write was submitted,
 * is a fence of it pending on its dma-buf ("pending" / "none")?
 *
 * The check: every cell's HEAD must equal the expected table's; a cell whose
 * driver is missing in this guest is "not here" and is not counted as a pass
 * (the table must say "not here" too, or the device went missing). Expected
 * errors are exact: the step and the errno / EGL error / VkResult.
 */
#include "crosses.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/sync_file.h>

#include "harness.h"
#include "fd_snapshot.h"
#include "kernel.h"
#include "kernel_raw.h"

/*
 * Mesa's venus (25.0, vn_renderer_virtgpu.c, sim_syncobj_create) keeps one
 * signalled virtio_gpu sync_file from the first sync object a process makes
 * until the process exits (docs/demo.md, "The consumer's extra fd is
 * venus's"). On venus the fd check sets that one aside: the fd new since
 * `before` when exactly one new fd is a signalled virtio_gpu sync_file, else
 * -1 (a leak of ours would still show).
 */
static int
venus_kept_fd(const struct tb_fd_snapshot *before)
{
	struct tb_fd_snapshot now;
	int kept = -1, count = 0;

	if (tb_fd_snapshot_take(&now) != 0)
		return -1;
	for (int i = 0; i < now.n; i++) {
		const struct tb_fd_entry *e = &now.e[i];
		bool old = false;
		for (int k = 0; k < before->n && !old; k++)
			old = before->e[k].fd == e->fd && before->e[k].ino == e->ino;
		struct sync_fence_info fence;
		if (!old && strcmp(e->what, "anon_inode:sync_file") == 0 &&
		    tb_sync_file_fences(e->fd, &fence, 1) == 1 && fence.status > 0 &&
		    strcmp(fence.driver_name, "virtio_gpu") == 0) {
			kept = e->fd;
			count++;
		}
	}
	tb_fd_snapshot_free(&now);
	return count == 1 ? kept : -1;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--vk-import-child") == 0)
		return xvk_import_child(argc, argv);

	const char *expect = tb_arg_value(argc, argv, "--expect", NULL);
	struct xbuf bufs[XD_COUNT];
	struct tb_fd_snapshot before;
	struct xenv e;
	int64_t t0 = xnow();

	setvbuf(stdout, NULL, _IOLBF, 0);
	xenv_open(&e, tb_arg_value(argc, argv, "--without", NULL));
	e.virgl_iters = atoi(tb_arg_value(argc, argv, "--virgl-iters", "2000"));
	/* The kernel's test devices make a test guest; without them this is another machine. */
	if (!e.here[XD_VGEM] && !e.here[XD_UDMABUF] && !e.here[XD_VIRTIO]) {
		xenv_close(&e);
		tb_skip("no vgem, udmabuf or virtio_gpu: not a test guest (scripts/vm/vm-run.sh)");
	}
	REQUIRE(!eglt_disk_cache_running(), "Mesa's shader disk cache thread runs (fd counts)");
	REQUIRE(tb_fd_snapshot_take(&before) == 0, "fd snapshot");

	for (int d = 0; d < XD_COUNT; d++)
		xbuf_export(&e, d, &bufs[d]);
	xbuffers_run(&e, bufs);
	xfences_run(&e, bufs);
	for (int d = 0; d < XD_COUNT; d++)
		xbuf_free(&e, &bufs[d]);

	int kept = e.vk_isolate ? venus_kept_fd(&before) : -1;
	if (kept >= 0)
		printf("# fd %d set aside: venus's own signalled virtio_gpu sync_file, kept until "
		       "exit\n", kept);
	tb_fd_snapshot_check(&before, &kept, kept >= 0 ? 1 : 0, "after every cell");
	tb_fd_snapshot_free(&before);
	xenv_close(&e);
	printf("# measured in %.1f s\n", (double)(xnow() - t0) / 1e9);
	if (!expect)
		tb_skip("no --expect FILE: the table is printed above, nothing was checked");
	if (xtable_check(expect, &tb_checks, &tb_failures) == 0)
		tb_skip("no cell of %s could be measured here", expect);
	return tb_finish();
}
