/* SPDX-License-Identifier: MIT */
/*
 * The producers' side of the cube demo's socket protocol (cube.h), shared by
 * the Vulkan producer (producer.c) and the GLES one (producer_gles.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cube.h"
#include "demo_util.h"

#define PROG "syncbridge-demo-cube"

int
cube_wait_free(int sock, const struct cube_options *opt, bool *free, unsigned want)
{
	while (!free[want]) {
		struct cube_msg m;
		int ret = demo_recv(sock, &m, sizeof(m), NULL, 0, NULL, CUBE_RELEASE_TIMEOUT_MS);
		if (ret < 0) {
			fprintf(stderr, PROG ": producer: waiting for the consumer: %s\n",
				ret == -EPIPE ? "it went away" : strerror(-ret));
			return ret;
		}
		if (m.type != CUBE_MSG_RELEASE || m.index >= opt->buffers || free[m.index]) {
			fprintf(stderr, PROG ": producer: unexpected message %u (buffer %u)\n",
				m.type, m.index);
			return -EPROTO;
		}
		free[m.index] = true;
	}
	return 0;
}

int
cube_send_ring(int sock, const struct cube_options *opt, struct cube_msg *m, const int *fds)
{
	m->type = CUBE_MSG_BUFFERS;
	m->count = opt->buffers;
	m->width = opt->width;
	m->height = opt->height;
	int ret = demo_send(sock, m, sizeof(*m), fds, (int)opt->buffers);

	if (ret < 0) {
		fprintf(stderr, PROG ": producer: sending the buffers: %s\n", strerror(-ret));
		return ret;
	}
	ret = demo_recv(sock, m, sizeof(*m), NULL, 0, NULL, CUBE_START_TIMEOUT_MS);
	if (ret == 0 && m->type != CUBE_MSG_READY)
		ret = -EPROTO;
	if (ret < 0)
		fprintf(stderr, PROG ": producer: the consumer did not get ready: %s\n",
			ret == -EPIPE ? "it went away" : strerror(-ret));
	return ret;
}

int
cube_send_frame(int sock, unsigned frame, unsigned index, int64_t submit_ns)
{
	struct cube_msg f = { .type = CUBE_MSG_FRAME, .frame = frame, .index = index,
			      .submit_ns = submit_ns };
	int ret = demo_send(sock, &f, sizeof(f), NULL, 0);

	if (ret < 0)
		fprintf(stderr, PROG ": producer: sending frame %u: %s\n", frame, strerror(-ret));
	return ret;
}

int
cube_send_end(int sock, const struct cube_options *opt)
{
	struct cube_msg end = { .type = CUBE_MSG_END, .frame = opt->frames };
	int ret = demo_send(sock, &end, sizeof(end), NULL, 0);

	/* Keep our side (and our buffers) alive until the consumer is done. */
	for (;;) {
		struct cube_msg m;
		if (demo_recv(sock, &m, sizeof(m), NULL, 0, NULL, CUBE_RELEASE_TIMEOUT_MS) < 0)
			break;
	}
	return ret;
}

void
cube_buffers_take(struct cube_buffers *to, struct cube_buffers *from)
{
	*to = *from;
	for (unsigned i = 0; i < from->count; i++)
		from->fds[i] = -1;
}

void
cube_buffers_close(struct cube_buffers *b)
{
	for (unsigned i = 0; i < b->count; i++)
		demo_fd_clear(&b->fds[i]);
}
