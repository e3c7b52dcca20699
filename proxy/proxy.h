/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-wl-proxy's inside (docs/wl-proxy.md): the protocol tables read
 * from the system's XML (proto.c), the wire format (wire.c), buffered socket
 * I/O with fds (io.c), one client's pair of connections and its object map
 * (conn.c), and linux-drm-syncobj-v1 done by the proxy (sync.c).
 */
#ifndef PXY_PROXY_H
#define PXY_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Argument kinds, one character each in a message's signature. */
#define PXY_ARG_INT 'i'
#define PXY_ARG_UINT 'u'
#define PXY_ARG_FIXED 'f'
#define PXY_ARG_STRING 's'
#define PXY_ARG_OBJECT 'o'
#define PXY_ARG_NEW_ID 'n'      /* typed: the interface is in the XML */
#define PXY_ARG_NEW_ID_ANY 'N'  /* untyped: interface string, version, id on the wire */
#define PXY_ARG_ARRAY 'a'
#define PXY_ARG_FD 'h'

/* libwayland's limits: a message's arguments and a sendmsg's fds. */
#define PXY_MAX_ARGS 20
#define PXY_MAX_FDS_OUT 28
/* A message's size is 16 bits on the wire; libwayland's buffers hold 4096. */
#define PXY_MAX_MSG 4096

struct pxy_iface;

struct pxy_msg {
	char *name;
	char sig[PXY_MAX_ARGS + 1];
	uint32_t nullable;              /* bit per argument */
	char *types[PXY_MAX_ARGS];      /* interface names of new_id / object args, or NULL */
	const struct pxy_iface *ifaces[PXY_MAX_ARGS]; /* resolved types[] (NULL: unknown) */
	bool destructor;
};

struct pxy_iface {
	char *name;
	uint32_t version;
	struct pxy_msg *requests, *events;
	uint32_t n_requests, n_events;
};

/* Every interface of every XML read; lookups by name. */
struct pxy_protocols {
	struct pxy_iface **ifaces;
	size_t n, cap;
	unsigned files_read, files_failed;
};

/* Read every *.xml under each of the colon-separated dirs (recursively). 0 or -errno. */
int pxy_protocols_load(struct pxy_protocols *p, const char *dirs);
/* Read one XML file's interfaces into p. 0 or -errno (-EINVAL: not a protocol). */
int pxy_protocols_load_file(struct pxy_protocols *p, const char *path);
/* Resolve the interface names of every message's arguments (after the loads). */
void pxy_protocols_resolve(struct pxy_protocols *p);
const struct pxy_iface *pxy_protocols_find(const struct pxy_protocols *p, const char *name);
void pxy_protocols_finish(struct pxy_protocols *p);
/* Index of the message called name in msgs[0..n), or -1. */
int pxy_msg_index(const struct pxy_msg *msgs, uint32_t n, const char *name);

/* One argument of a parsed message. */
struct pxy_arg {
	char kind;
	uint32_t u;          /* i, u, f, o, n, N: the value (N: the new id) */
	const char *str;     /* s, N: the string (NUL-terminated in the buffer), or NULL */
	uint32_t len;        /* s, a: bytes, N: version */
	size_t word;         /* the argument's first word's index in the message */
	int fd;              /* h: borrowed from the fd queue */
};

struct pxy_parsed {
	uint32_t id, opcode, size; /* size in bytes, header included */
	uint32_t nargs, nfds;
	struct pxy_arg args[PXY_MAX_ARGS];
};

/*
 * The header of the message at buf (len bytes available, 4-byte aligned):
 * 1 and *out's id/opcode/size when whole, 0 when more bytes are needed,
 * -EPROTO when the size is impossible (below 8, not a multiple of 4, above
 * PXY_MAX_MSG).
 */
int pxy_wire_header(const uint8_t *buf, size_t len, struct pxy_parsed *out);
/*
 * Check the whole message at buf (out->size bytes) against m's signature and
 * split it into out->args; fds from fds[0..nfds) in order (borrowed). 0,
 * -EPROTO (a string without its NUL, a size that does not add up, a null
 * where none is allowed), -EMFILE (more fds due than there are).
 */
int pxy_wire_args(const struct pxy_msg *m, const uint8_t *buf, const int *fds, size_t nfds,
		  struct pxy_parsed *out);

/* Messages the proxy writes itself, into buf (at least PXY_MAX_MSG bytes); their size. */
size_t pxy_wire_error(uint8_t *buf, uint32_t object, uint32_t code, const char *msg);
size_t pxy_wire_delete_id(uint8_t *buf, uint32_t id);
size_t pxy_wire_sync(uint8_t *buf, uint32_t callback);
size_t pxy_wire_global(uint8_t *buf, uint32_t registry, uint32_t name, const char *iface,
		       uint32_t version);

/* Buffered bytes and fds of one direction of one socket (io.c). */
struct pxy_buf {
	uint8_t *base;       /* the allocation, cap bytes */
	uint8_t *data;       /* the unconsumed bytes: len of them, from base + some offset */
	size_t len, cap;
	int *fds;
	size_t nfds, fd_cap;
	/* out only: the byte offset of the message each fd belongs to */
	size_t *fd_at;
};

void pxy_buf_finish(struct pxy_buf *b); /* closes the fds it still holds */
/* Read what the socket has into b (fds appended). >0 bytes, 0 EOF, -EAGAIN, -errno. */
int pxy_buf_recv(struct pxy_buf *b, int sock, size_t limit, size_t fd_limit);
/* Drop n bytes and nfds fds (closed when close_fds) from b's front. */
void pxy_buf_consume(struct pxy_buf *b, size_t n, size_t nfds, bool close_fds);
/*
 * Append a message and its fds (dups are taken: the caller keeps its own).
 * 0, -ENOMEM, -EMFILE, -ENOBUFS (over limit bytes).
 */
int pxy_buf_append(struct pxy_buf *b, const uint8_t *msg, size_t n, const int *fds, size_t nfds,
		   size_t limit);
/* Write as much as the socket takes, fds with the bytes they belong to. 0, -EAGAIN, -errno. */
int pxy_buf_flush(struct pxy_buf *b, int sock);

/* A line on stderr when SYNCBRIDGE_DEBUG is set (main.c), else nothing. */
void pxy_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
