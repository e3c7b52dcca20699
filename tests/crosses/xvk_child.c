/* SPDX-License-Identifier: MIT */
/*
 * The Vulkan importer's buffer cells in a process of their own, where one
 * import can take the whole Vulkan device down with it. On venus (Mesa
 * 25.0.7, virglrenderer 1.1) importing a virtio_gpu dumb buffer makes the
 * host's render server reject the resource ("vkr: failed to query resource
 * props: invalid res_id"); the guest's command ring is then dead and Mesa
 * aborts the program ("aborting on ring fatal error"), cells and all. Venus
 * importing its own export into the device that exported it kills the ring
 * the same way ("vn_ring_submit abort on fatal", measured with every
 * virtio_gpu cell left out). So on venus every import of a virtio_gpu
 * dma-buf (a dumb buffer, a virgl texture, venus's own buffer; other
 * drivers' dma-bufs, which fail cleanly, stay in this process: a venus
 * device takes ~100 s to come up under TCG in TCG) runs in a child: this
 * program again (exec, not a bare fork — the parent's Vulkan and EGL
 * threads do not survive a fork), with its own instance and device, the
 * dma-buf inherited. Venus's own buffer then crosses into another process's
 * device, as it does between the cube demo's two processes. The child
 * reports the cell's result and the image it read through a pipe; a child
 * that dies reports nothing, and the cell says how it died.
 */
#include "crosses.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* What the child writes to the pipe: the cell's result, then the image. */
struct child_report {
	struct xres r;
	uint8_t rgba[XROW * XH];
};

static bool
write_all(int fd, const void *data, size_t size)
{
	const uint8_t *p = data;

	while (size > 0) {
		ssize_t n = write(fd, p, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		size -= (size_t)n;
	}
	return true;
}

/* Reads up to size bytes, until EOF; the count read. */
static size_t
read_all(int fd, void *data, size_t size)
{
	uint8_t *p = data;
	size_t got = 0;

	while (got < size) {
		ssize_t n = read(fd, p + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

int
xvk_import_child(int argc, char **argv)
{
	static struct child_report rep;
	struct xenv e = { 0 };
	struct xbuf b = { 0 };
	char why[160];

	if (argc != 7) {
		fprintf(stderr, "crosses: usage: crosses --vk-import-child PIPE FD SIZE STRIDE OFFSET\n");
		return 2;
	}
	int pipe_fd = atoi(argv[2]);
	b.fd = atoi(argv[3]);
	b.size = strtoull(argv[4], NULL, 10);
	b.stride = atoi(argv[5]);
	b.offset = atoi(argv[6]);
	fcntl(pipe_fd, F_SETFD, FD_CLOEXEC);
	fcntl(b.fd, F_SETFD, FD_CLOEXEC);
	/* The parent prints the cell; the driver's own complaints stay on stderr. */
	if (!freopen("/dev/null", "w", stdout))
		return 1;
	eglt_no_disk_cache();
	e.vgem = e.virtio_card = e.virtio_render = -1;
	if (xvk_open(&e, why, sizeof(why)) < 0)
		xres_set(&rep.r, "ERR child's Vulkan device: %s", why);
	else
		xvk_import_read(&e, &b, rep.rgba, &rep.r);
	xvk_close(&e);
	return write_all(pipe_fd, &rep, sizeof(rep)) ? 0 : 1;
}

void
xvk_import_read_isolated(struct xenv *e, const struct xbuf *b, uint8_t *rgba, struct xres *r)
{
	static struct child_report rep;
	char args[5][24];
	int fds[2];

	char exporter[32];

	xdmabuf_exporter(b->fd, exporter, sizeof(exporter));
	if (!e->vk_isolate || strcmp(exporter, "virtio_gpu") != 0) {
		xvk_import_read(e, b, rgba, r);
		return;
	}
	if (pipe2(fds, O_CLOEXEC) < 0) {
		xres_errno(r, "pipe2", -errno);
		return;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		xres_errno(r, "fork", -errno);
		close(fds[0]);
		close(fds[1]);
		return;
	}
	if (pid == 0) {
		/* The inherited fds lose close-on-exec in the child's table only. */
		fcntl(fds[1], F_SETFD, 0);
		fcntl(b->fd, F_SETFD, 0);
		snprintf(args[0], sizeof(args[0]), "%d", fds[1]);
		snprintf(args[1], sizeof(args[1]), "%d", b->fd);
		snprintf(args[2], sizeof(args[2]), "%zu", b->size);
		snprintf(args[3], sizeof(args[3]), "%d", b->stride);
		snprintf(args[4], sizeof(args[4]), "%d", b->offset);
		execl("/proc/self/exe", "crosses", "--vk-import-child", args[0], args[1], args[2],
		      args[3], args[4], (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	memset(&rep, 0, sizeof(rep));
	size_t got = read_all(fds[0], &rep, sizeof(rep));
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got == sizeof(rep) && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		rep.r.head[sizeof(rep.r.head) - 1] = '\0';
		rep.r.note[sizeof(rep.r.note) - 1] = '\0';
		*r = rep.r;
		memcpy(rgba, rep.rgba, sizeof(rep.rgba));
		xres_note(r, "imported in a child process");
	} else if (WIFSIGNALED(status)) {
		const char *sig = sigabbrev_np(WTERMSIG(status));
		xres_set(r, "ERR import-killed-the-process SIG%s", sig ? sig : "?");
		xres_note(r, "the child that imported it died (venus: a ring fatal error aborts)");
	} else {
		xres_set(r, "ERR import-child exit %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
}
