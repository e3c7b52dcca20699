/* SPDX-License-Identifier: MIT */
/*
 * Buffered socket I/O with fds. In: recvmsg() appends bytes and the
 * SCM_RIGHTS fds (CLOEXEC) that came with them; the parser takes fds in
 * order as messages need them. Out: each fd is recorded with the offset of
 * the message it belongs to, and a sendmsg() carries at most
 * PXY_MAX_FDS_OUT (28, libwayland's receive limit) fds with bytes that stop
 * before the message of the first fd left behind — an fd may arrive before
 * its message's bytes, never after them. The buffers own every fd they hold.
 * Consuming bytes only moves the start (data) forward; they are moved back to
 * the allocation's start when room is needed, not once per message.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy.h"

void
pxy_buf_finish(struct pxy_buf *b)
{
	for (size_t k = 0; k < b->nfds; k++)
		close(b->fds[k]);
	free(b->base);
	free(b->fds);
	free(b->fd_at);
	memset(b, 0, sizeof(*b));
}

/* Room for bytes more after data + len (the consumed front reused first). */
static int
reserve(struct pxy_buf *b, size_t bytes, size_t fds)
{
	size_t off = b->base ? (size_t)(b->data - b->base) : 0;

	if (off + b->len + bytes > b->cap && off > 0) {
		memmove(b->base, b->data, b->len);
		b->data = b->base;
		off = 0;
	}
	if (b->len + bytes > b->cap) {
		size_t cap = b->cap ? b->cap : 8192;
		uint8_t *grown;

		while (cap < b->len + bytes)
			cap *= 2;
		grown = realloc(b->base, cap);
		if (!grown)
			return -ENOMEM;
		b->base = b->data = grown;
		b->cap = cap;
	}
	if (b->nfds + fds > b->fd_cap) {
		size_t cap = b->fd_cap ? b->fd_cap : 32;
		int *grown;
		size_t *at;

		while (cap < b->nfds + fds)
			cap *= 2;
		grown = realloc(b->fds, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		b->fds = grown;
		at = realloc(b->fd_at, cap * sizeof(*at));
		if (!at)
			return -ENOMEM;
		b->fd_at = at;
		b->fd_cap = cap;
	}
	return 0;
}

/* Take the fds of one control message; those beyond fd_limit are closed (-EMFILE). */
static int
take_fds(struct pxy_buf *b, struct msghdr *mh, size_t fd_limit)
{
	int ret = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;
		int *fds;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		fds = (int *)(void *)CMSG_DATA(c);
		for (size_t k = 0; k < n; k++) {
			if (ret == 0 && b->nfds < fd_limit && reserve(b, 0, 1) == 0) {
				b->fd_at[b->nfds] = 0;
				b->fds[b->nfds++] = fds[k];
			} else {
				close(fds[k]);
				ret = -EMFILE;
			}
		}
	}
	return ret;
}

int
pxy_buf_recv(struct pxy_buf *b, int sock, size_t limit, size_t fd_limit)
{
	union {
		char buf[CMSG_SPACE(PXY_MAX_FDS_OUT * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov;
	struct msghdr mh = { 0 };
	ssize_t n;
	int ret;

	if (b->len >= limit)
		return -ENOBUFS;
	ret = reserve(b, limit - b->len < 16384 ? limit - b->len : 16384, 0);
	if (ret)
		return ret;
	iov.iov_base = b->data + b->len;
	iov.iov_len = b->cap - (size_t)(b->data - b->base) - b->len;
	if (iov.iov_len > limit - b->len)
		iov.iov_len = limit - b->len;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	do {
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	ret = take_fds(b, &mh, fd_limit);
	if (ret)
		return ret;
	if (mh.msg_flags & MSG_CTRUNC)
		return -EMFILE; /* fds were lost: the stream cannot be followed */
	b->len += (size_t)n;
	return (int)(n > 0 ? n : 0);
}

void
pxy_buf_consume(struct pxy_buf *b, size_t n, size_t nfds, bool close_fds)
{
	if (close_fds)
		for (size_t k = 0; k < nfds; k++)
			close(b->fds[k]);
	if (b->nfds) {
		memmove(b->fds, b->fds + nfds, (b->nfds - nfds) * sizeof(*b->fds));
		memmove(b->fd_at, b->fd_at + nfds, (b->nfds - nfds) * sizeof(*b->fd_at));
		b->nfds -= nfds;
		for (size_t k = 0; k < b->nfds; k++)
			b->fd_at[k] = b->fd_at[k] > n ? b->fd_at[k] - n : 0;
	}
	b->len -= n;
	b->data = b->len ? b->data + n : b->base; /* empty: from the start again */
}

int
pxy_buf_append(struct pxy_buf *b, const uint8_t *msg, size_t n, const int *fds, size_t nfds,
	       size_t limit)
{
	int ret;

	if (b->len + n > limit)
		return -ENOBUFS;
	ret = reserve(b, n, nfds);
	if (ret)
		return ret;
	for (size_t k = 0; k < nfds; k++) {
		int fd = fcntl(fds[k], F_DUPFD_CLOEXEC, 3);

		if (fd < 0) {
			ret = -errno;
			while (k--)
				close(b->fds[--b->nfds]);
			return ret;
		}
		b->fd_at[b->nfds] = b->len;
		b->fds[b->nfds++] = fd;
	}
	if (n) {
		memcpy(b->data + b->len, msg, n);
		b->len += n;
	}
	return 0;
}

/* One sendmsg(): its bytes and fds as the header comment says. >0 sent, or -errno. */
static ssize_t
send_some(struct pxy_buf *b, int sock)
{
	union {
		char buf[CMSG_SPACE(PXY_MAX_FDS_OUT * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	size_t nfds = b->nfds < PXY_MAX_FDS_OUT ? b->nfds : PXY_MAX_FDS_OUT;
	size_t bytes = nfds < b->nfds ? b->fd_at[nfds] : b->len;
	struct iovec iov = { b->data, bytes };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (bytes == 0)
		bytes = iov.iov_len = b->len; /* cannot happen: a message has <= 28 fds */
	if (nfds) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), b->fds, nfds * sizeof(int));
	}
	do {
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	pxy_buf_consume(b, (size_t)n, nfds, true); /* the fds went with the first byte */
	return n;
}

int
pxy_buf_flush(struct pxy_buf *b, int sock)
{
	while (b->len > 0) {
		ssize_t n = send_some(b, sock);

		if (n < 0)
			return (int)n;
	}
	return 0;
}
