/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: syncbridge-wl-proxy's wire handling (proxy/wire.c, conn.c,
 * relay.c, sync.c) on one connection. The input's first byte picks whether
 * the proxy offers linux-drm-syncobj-v1 (with no render node: every timeline
 * import fails as a client's bad fd would) and how many fds (/dev/null) come
 * with the bytes; the rest, split in half, is what a client sends and what a
 * compositor answers. Nothing is flushed: what the proxy would write stays in
 * its buffers, and the connection is destroyed after each input (ASan and
 * the fd count catch leaks). The protocol tables are the system's XML.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct pxy_ctx ctx;
static bool ready;

static bool
setup(void)
{
	if (ready)
		return true;
	pxy_protocols_load(&ctx.protocols, PXY_XML_DIRS);
	pxy_protocols_resolve(&ctx.protocols);
	ctx.drm_fd = -1;
	if (pxy_ctx_init(&ctx) != 0) {
		fprintf(stderr, "proxy_wire: no wayland.xml in %s\n", PXY_XML_DIRS);
		abort();
	}
	ready = true;
	return true;
}

/* Append bytes and nfds fds of /dev/null to b. */
static void
feed(struct pxy_buf *b, const uint8_t *data, size_t size, unsigned nfds)
{
	int fds[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
	unsigned n = 0;

	for (; n < nfds && n < 8; n++) {
		fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fds[n] < 0)
			break;
	}
	pxy_buf_append(b, data, size, fds, n, (size_t)-1); /* takes dups */
	for (unsigned k = 0; k < n; k++)
		close(fds[k]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int cpair[2], spair[2];
	struct pxy_conn *c;
	size_t half;

	if (size < 1 || !setup())
		return 0;
	ctx.emulate = data[0] & 1;
	if (ctx.emulate && !(ctx.sync_manager && ctx.sync_surface && ctx.sync_timeline &&
			     ctx.params))
		ctx.emulate = false;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cpair) != 0)
		return 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, spair) != 0) {
		close(cpair[0]);
		close(cpair[1]);
		return 0;
	}
	close(cpair[1]);
	close(spair[1]);
	c = pxy_conn_create_fds(&ctx, cpair[0], spair[0], 1);
	if (!c)
		return 0;
	data++, size--;
	half = size / 2;
	feed(&c->cin, data, half, (data[-1] >> 1) & 7);
	pxy_conn_process_client(c);
	if (!c->closing) {
		feed(&c->sin, data + half, size - half, (data[-1] >> 4) & 3);
		pxy_conn_process_server(c);
		pxy_conn_process_client(c); /* what a held commit kept back */
	}
	pxy_conn_destroy(c);
	return 0;
}
