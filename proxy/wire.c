/* SPDX-License-Identifier: MIT */
/*
 * The Wayland wire format (the protocol's "Wire Format" section): a message
 * is its object id, a word with its size in bytes (upper 16 bits) and opcode
 * (lower 16), then its arguments in 32-bit words — int, uint, fixed, object
 * and new_id one word each; a string or an array a length word (a string's
 * counts its NUL; 0 is a null string) and the bytes padded to a word; an
 * untyped new_id a string (the interface), a version and the id; an fd no
 * bytes at all: it travels in SCM_RIGHTS, in message order. Everything here is
 * checked against the buffer it reads, and is the fuzz target's subject.
 */
#include <errno.h>
#include <string.h>

#include "proxy.h"

static uint32_t
word(const uint8_t *buf, size_t w)
{
	uint32_t v;

	memcpy(&v, buf + 4 * w, 4);
	return v;
}

static void
put(uint8_t *buf, size_t w, uint32_t v)
{
	memcpy(buf + 4 * w, &v, 4);
}

int
pxy_wire_header(const uint8_t *buf, size_t len, struct pxy_parsed *out)
{
	uint32_t second;

	if (len < 8)
		return 0;
	second = word(buf, 1);
	out->id = word(buf, 0);
	out->opcode = second & 0xffff;
	out->size = second >> 16;
	if (out->size < 8 || out->size % 4 || out->size > PXY_MAX_MSG)
		return -EPROTO;
	return len >= out->size ? 1 : 0;
}

/* A string or an array at word *w of a message of nwords: its length checked. */
static int
blob(const uint8_t *buf, size_t nwords, size_t *w, struct pxy_arg *a, bool string)
{
	size_t padded;

	if (*w >= nwords)
		return -EPROTO;
	a->len = word(buf, (*w)++);
	padded = ((size_t)a->len + 3) / 4;
	if (padded > nwords - *w)
		return -EPROTO;
	a->str = a->len ? (const char *)(buf + 4 * *w) : NULL;
	if (string && a->len && a->str[a->len - 1] != '\0')
		return -EPROTO;
	if (string && a->len && memchr(a->str, '\0', a->len - 1))
		return -EPROTO; /* libwayland would read a shorter string than was sent */
	*w += padded;
	return 0;
}

static int
one_arg(const struct pxy_msg *m, size_t k, const uint8_t *buf, size_t nwords, size_t *w,
	struct pxy_arg *a)
{
	bool nullable = m->nullable & (1u << k);
	int ret;

	a->kind = m->sig[k];
	a->word = *w;
	a->fd = -1;
	switch (a->kind) {
	case PXY_ARG_STRING:
		ret = blob(buf, nwords, w, a, true);
		if (ret == 0 && !a->str && !nullable)
			return -EPROTO;
		return ret;
	case PXY_ARG_ARRAY:
		return blob(buf, nwords, w, a, false);
	case PXY_ARG_NEW_ID_ANY:
		ret = blob(buf, nwords, w, a, true);
		if (ret || !a->str || nwords - *w < 2)
			return -EPROTO;
		a->len = word(buf, (*w)++); /* the version */
		a->u = word(buf, (*w)++);
		return a->u ? 0 : -EPROTO;
	case PXY_ARG_FD:
		return 0;
	default:
		if (*w >= nwords)
			return -EPROTO;
		a->u = word(buf, (*w)++);
		if (a->kind == PXY_ARG_NEW_ID && a->u == 0)
			return -EPROTO;
		if (a->kind == PXY_ARG_OBJECT && a->u == 0 && !nullable)
			return -EPROTO;
		return 0;
	}
}

int
pxy_wire_args(const struct pxy_msg *m, const uint8_t *buf, const int *fds, size_t nfds,
	      struct pxy_parsed *out)
{
	size_t nwords = out->size / 4, w = 2;
	int ret;

	out->nargs = (uint32_t)strlen(m->sig);
	out->nfds = 0;
	for (size_t k = 0; k < out->nargs; k++) {
		struct pxy_arg *a = &out->args[k];

		ret = one_arg(m, k, buf, nwords, &w, a);
		if (ret)
			return ret;
		if (a->kind == PXY_ARG_FD) {
			if (out->nfds >= nfds)
				return -EMFILE;
			a->fd = fds[out->nfds++];
		}
	}
	return w == nwords ? 0 : -EPROTO;
}

static size_t
finish(uint8_t *buf, uint32_t object, uint32_t opcode, size_t words)
{
	put(buf, 0, object);
	put(buf, 1, (uint32_t)(words * 4) << 16 | opcode);
	return words * 4;
}

/* A string argument at word w: its length word and padded bytes; the next word. */
static size_t
put_string(uint8_t *buf, size_t w, const char *s, size_t max)
{
	size_t len = strnlen(s, max) + 1, padded = (len + 3) / 4;

	put(buf, w, (uint32_t)len);
	memset(buf + 4 * (w + 1), 0, padded * 4);
	memcpy(buf + 4 * (w + 1), s, len - 1);
	return w + 1 + padded;
}

size_t
pxy_wire_error(uint8_t *buf, uint32_t object, uint32_t code, const char *msg)
{
	size_t w;

	put(buf, 2, object);
	put(buf, 3, code);
	w = put_string(buf, 4, msg, 1024);
	return finish(buf, 1, 0, w); /* wl_display.error */
}

size_t
pxy_wire_delete_id(uint8_t *buf, uint32_t id)
{
	put(buf, 2, id);
	return finish(buf, 1, 1, 3); /* wl_display.delete_id */
}

size_t
pxy_wire_sync(uint8_t *buf, uint32_t callback)
{
	put(buf, 2, callback);
	return finish(buf, 1, 0, 3); /* wl_display.sync */
}

size_t
pxy_wire_global(uint8_t *buf, uint32_t registry, uint32_t name, const char *iface,
		uint32_t version)
{
	size_t w;

	put(buf, 2, name);
	w = put_string(buf, 3, iface, 256);
	put(buf, w, version);
	return finish(buf, registry, 0, w + 1); /* wl_registry.global */
}
