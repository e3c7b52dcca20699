/* SPDX-License-Identifier: MIT */
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

enum fd_kind
fd_kind_from_link(const char *link)
{
	if (strcmp(link, "anon_inode:sync_file") == 0)
		return FD_KIND_SYNC_FILE;
	if (starts_with(link, "/dmabuf:"))
		return FD_KIND_DMABUF;
	if (strcmp(link, "anon_inode:syncobj_file") == 0)
		return FD_KIND_SYNCOBJ;
	if (starts_with(link, "/dev/dri/"))
		return FD_KIND_DRM;
	return FD_KIND_OTHER;
}

const char *
fd_kind_name(enum fd_kind kind)
{
	switch (kind) {
	case FD_KIND_SYNC_FILE:
		return "sync_file";
	case FD_KIND_DMABUF:
		return "dma-buf";
	case FD_KIND_SYNCOBJ:
		return "syncobj";
	case FD_KIND_DRM:
		return "drm";
	case FD_KIND_OTHER:
		break;
	}
	return "other";
}

const char *
fd_link_describe(const char *link, char *buf, size_t len)
{
	switch (fd_kind_from_link(link)) {
	case FD_KIND_SYNC_FILE:
		snprintf(buf, len, "a sync_file");
		return buf;
	case FD_KIND_DMABUF:
		snprintf(buf, len, "a dma-buf");
		return buf;
	case FD_KIND_SYNCOBJ:
		snprintf(buf, len, "a DRM syncobj fd");
		return buf;
	case FD_KIND_DRM:
		snprintf(buf, len, "the DRM device %s", link);
		return buf;
	case FD_KIND_OTHER:
		break;
	}
	if (starts_with(link, "pipe:"))
		snprintf(buf, len, "a pipe");
	else if (starts_with(link, "socket:"))
		snprintf(buf, len, "a socket");
	else if (starts_with(link, "anon_inode:"))
		snprintf(buf, len, "%s (%s)",
			 strstr(link, "eventfd") ? "an eventfd" : "an anonymous-inode file", link);
	else if (starts_with(link, "/memfd:"))
		snprintf(buf, len, "a memfd (%s)", link);
	else if (link[0] == '/')
		snprintf(buf, len, "the file %s", link);
	else
		snprintf(buf, len, "%s", link);
	return buf;
}

bool
fdinfo_get(const char *text, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t llen = nl ? (size_t)(nl - line) : strlen(line);

		if (llen > klen && strncmp(line, key, klen) == 0 && line[klen] == ':') {
			const char *v = line + klen + 1;
			size_t vlen;

			while (v < line + llen && (*v == ' ' || *v == '\t'))
				v++;
			vlen = (size_t)(line + llen - v);
			if (len) {
				if (vlen >= len)
					vlen = len - 1;
				memcpy(out, v, vlen);
				out[vlen] = '\0';
			}
			return true;
		}
		line = nl ? nl + 1 : NULL;
	}
	return false;
}

bool
fdinfo_get_u64(const char *text, const char *key, uint64_t *out)
{
	char buf[32], *end;
	unsigned long long v;

	if (!fdinfo_get(text, key, buf, sizeof(buf)))
		return false;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return false;
	*out = v;
	return true;
}

int
read_text_file(const char *path, char **out, size_t *out_len)
{
	size_t cap = 4096, len = 0;
	char *buf;
	int fd;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (cap - len < 2) {
			char *nbuf = realloc(buf, cap * 2);

			if (!nbuf) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = nbuf;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			free(buf);
			close(fd);
			return -err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	if (out_len)
		*out_len = len;
	return 0;
}

int
dmabuf_fdinfo_parse(const char *text, struct dmabuf_fdinfo *out)
{
	char buf[32];
	uint64_t v;

	memset(out, 0, sizeof(*out));
	out->count = -1;
	if (fdinfo_get_u64(text, "ino", &v))
		out->inode = v;
	if (fdinfo_get(text, "flags", buf, sizeof(buf)))
		out->flags = (unsigned)strtoul(buf, NULL, 8);
	if (fdinfo_get_u64(text, "count", &v))
		out->count = (long long)v;
	out->has_name = fdinfo_get(text, "name", out->name, sizeof(out->name));
	if (!fdinfo_get_u64(text, "size", &out->size) ||
	    !fdinfo_get(text, "exp_name", out->exp_name, sizeof(out->exp_name)))
		return -EINVAL;
	out->valid = true;
	return 0;
}

/* Copy the tab-separated field [s, e) into out. */
static void
copy_field(char *out, size_t len, const char *s, const char *e)
{
	size_t n = (size_t)(e - s);

	if (n >= len)
		n = len - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

/*
 * A buffer row: "%08zu\t%08x\t%08x\t%08ld\t%s\t%08lu\t%s" (size, flags, mode,
 * count, exp_name, ino, name). Returns true and fills out's header fields.
 */
static bool
parse_buf_row(const char *line, size_t llen, struct bufinfo_entry *out)
{
	const char *f[8];
	const char *end = line + llen;
	size_t n = 0;
	char num[32];

	if (llen == 0 || line[0] < '0' || line[0] > '9')
		return false;
	f[n++] = line;
	for (const char *p = line; p < end && n < 8; p++)
		if (*p == '\t')
			f[n++] = p + 1;
	if (n != 7)
		return false;
	copy_field(num, sizeof(num), f[0], f[1] - 1);
	out->size = strtoull(num, NULL, 10);
	copy_field(num, sizeof(num), f[3], f[4] - 1);
	out->count = strtoll(num, NULL, 10);
	copy_field(out->exp_name, sizeof(out->exp_name), f[4], f[5] - 1);
	copy_field(num, sizeof(num), f[5], f[6] - 1);
	out->inode = strtoull(num, NULL, 10);
	copy_field(out->name, sizeof(out->name), f[6], end);
	if (strcmp(out->name, "<none>") == 0)
		out->name[0] = '\0';
	return true;
}

/* "\t<usage> fence:<driver> <timeline> seq <n> [un]signalled" */
static bool
parse_fence_line(const char *line, size_t llen, struct bufinfo_fence *f)
{
	char buf[256];
	char *p, *colon, *seq, *sp, *end;

	if (llen == 0 || line[0] != '\t' || llen >= sizeof(buf))
		return false;
	memcpy(buf, line + 1, llen - 1);
	buf[llen - 1] = '\0';
	colon = strstr(buf, " fence:");
	if (!colon)
		return false;
	memset(f, 0, sizeof(*f));
	copy_field(f->usage, sizeof(f->usage), buf, colon);
	p = colon + strlen(" fence:");
	while (*p == ' ')
		p++;
	/* The timeline name may contain blanks: find " seq " from the right. */
	seq = NULL;
	for (char *q = strstr(p, " seq "); q; q = strstr(q + 1, " seq "))
		seq = q;
	if (!seq)
		return false;
	*seq = '\0';
	sp = strchr(p, ' ');
	if (sp) {
		copy_field(f->driver, sizeof(f->driver), p, sp);
		copy_field(f->timeline, sizeof(f->timeline), sp + 1, seq);
	} else {
		copy_field(f->driver, sizeof(f->driver), p, seq);
	}
	f->seqno = strtoull(seq + 5, &end, 10);
	while (*end == ' ')
		end++;
	if (strcmp(end, "signalled") == 0)
		f->signalled = true;
	else if (strcmp(end, "unsignalled") == 0)
		f->signalled = false;
	else
		return false;
	return true;
}

int
bufinfo_find(const char *text, uint64_t ino, struct bufinfo_entry *out)
{
	const char *line = text;
	bool in_entry = false, header = false;

	memset(out, 0, sizeof(*out));
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t llen = nl ? (size_t)(nl - line) : strlen(line);
		struct bufinfo_entry row;

		if (strncmp(line, "Dma-buf Objects:", 16) == 0)
			header = true;
		if (in_entry) {
			struct bufinfo_fence f;

			if (strncmp(line, "Total ", 6) == 0)
				return 0; /* end of our entry */
			if (parse_fence_line(line, llen, &f)) {
				if (out->nfences < sizeof(out->fences) / sizeof(out->fences[0]))
					out->fences[out->nfences++] = f;
				else
					out->fences_truncated = true;
			} else if (llen > 1 && line[0] == '\t' &&
				   strncmp(line, "\tAttached Devices:", 18) != 0) {
				if (out->ndevices < sizeof(out->devices) / sizeof(out->devices[0]))
					copy_field(out->devices[out->ndevices++],
						   sizeof(out->devices[0]), line + 1, line + llen);
			}
		} else {
			memset(&row, 0, sizeof(row));
			if (parse_buf_row(line, llen, &row) && row.inode == ino) {
				*out = row;
				out->found = true;
				in_entry = true;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return header ? 0 : -EINVAL;
}

const char *
proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	char *text;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (read_text_file(path, &text, NULL) < 0) {
		snprintf(buf, len, "?");
		return buf;
	}
	text[strcspn(text, "\n")] = '\0';
	snprintf(buf, len, "%s", text);
	free(text);
	return buf;
}
