/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-handoff's two processes (handoff.c: the consumer and the
 * picture; handoff_producer.c: the producer): their options, the messages
 * between them, and the pattern a frame is written with.
 */
#ifndef SB_DEMO_HANDOFF_H
#define SB_DEMO_HANDOFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS_PER_NS 1e-6

enum wait_mode {
	WAIT_SYNC_FILE, /* export a READ sync_file, decode it, sb_sync_file_wait() */
	WAIT_DMABUF,    /* sb_dmabuf_wait(): poll() on the dma-buf itself */
	WAIT_NONE,      /* --no-sync / SYNCBRIDGE_DISABLE=1: the control */
};

struct options {
	unsigned frames;
	unsigned render_ms;
	enum wait_mode wait;
	bool expect_torn;
	bool verbose;
	char device[64]; /* the vgem card node */
};

/* What travels over the socket; one message per datagram (SOCK_SEQPACKET). */
enum msg_type {
	MSG_BUFFER = 1,      /* producer → consumer, carries the dma-buf fd */
	MSG_FRAME_SUBMITTED, /* producer → consumer: fence attached, rendering starts */
	MSG_FRAME_RELEASED,  /* consumer → producer: done reading the frame */
};

struct msg {
	uint32_t type;
	uint32_t frame;
	uint32_t width, height, stride;
	uint32_t pad;
	uint64_t size;
};

static const char *const prog = "syncbridge-demo-handoff";

/*
 * One message of the expected type (and frame, when frame is not NULL); *fd,
 * when fd is not NULL, gets the descriptor it carries (owned, or -1), and a
 * message that carries one where none is expected is -EPROTO. Returns 0,
 * -EPIPE (the peer went away), -EPROTO or -errno.
 */
int handoff_recv(int sock, uint32_t type, const unsigned *frame, struct msg *m, int *fd);
/* What to say for a failed exchange: `peer` when the other process went away. */
const char *handoff_peer_error(int ret, const char *peer);

/* The word at index i of frame f: the frame number in the top byte. */
static inline uint32_t
handoff_pattern(unsigned frame, size_t i)
{
	return (uint32_t)frame << 24 | (uint32_t)(i & 0xffffff);
}

/*
 * The producer (the child process), on sock: a vgem buffer on opt->device,
 * its dma-buf sent once, then opt->frames frames, each behind a WRITE fence.
 * 0 or -errno (said on stderr).
 */
int handoff_run_producer(int sock, const struct options *opt, const char *device);

#endif
