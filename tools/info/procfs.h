/* SPDX-License-Identifier: MIT */
/*
 * What /proc and debugfs say about fence-carrying files. The parsers here work
 * on text (so the tests feed them canned kernel output); the readers are thin.
 */
#ifndef INFO_PROCFS_H
#define INFO_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What an fd refers to, judged from its /proc/PID/fd/N link. */
enum fd_kind {
	FD_KIND_OTHER = 0,
	FD_KIND_SYNC_FILE, /* "anon_inode:sync_file" */
	/* "/dmabuf:" + the buffer's name (drivers/dma-buf/dma-buf.c dmabuffs_dname) */
	FD_KIND_DMABUF,
	FD_KIND_SYNCOBJ,   /* "anon_inode:syncobj_file" (DRM syncobj exported as an fd) */
	FD_KIND_DRM,       /* "/dev/dri/..." */
};

enum fd_kind fd_kind_from_link(const char *link);
/* "sync_file", "dma-buf", "syncobj", "drm", "other". */
const char *fd_kind_name(enum fd_kind kind);
/* A phrase for error messages: "a sync_file", "a pipe", "the file /x", ... into buf. */
const char *fd_link_describe(const char *link, char *buf, size_t len);

/*
 * The value of "key:" in fdinfo-style text ("key:\tvalue" lines), copied
 * into out (leading blanks skipped, newline dropped). Returns true if found.
 */
bool fdinfo_get(const char *text, const char *key, char *out, size_t len);
bool fdinfo_get_u64(const char *text, const char *key, uint64_t *out);

/* Read a whole (small, procfs/debugfs) text file; NUL-terminated, free() it. -errno on failure. */
int read_text_file(const char *path, char **out, size_t *out_len);

/* The dma-buf fields of /proc/PID/fdinfo/N (dma_buf_show_fdinfo + the generic lines). */
struct dmabuf_fdinfo {
	bool valid;       /* size: and exp_name: were present */
	uint64_t inode;   /* "ino:"; 0 if the kernel does not print it (before 5.14) */
	uint64_t size;
	long long count;  /* "count:" references to the dma-buf's file, -1 if absent */
	char exp_name[64];
	char name[64];    /* "name:" (DMA_BUF_SET_NAME); empty if none */
	bool has_name;
	unsigned flags;   /* "flags:" octal open flags */
};
int dmabuf_fdinfo_parse(const char *text, struct dmabuf_fdinfo *out);

/* One fence line of debugfs dma_buf/bufinfo (dma_resv_describe + dma_fence_describe). */
struct bufinfo_fence {
	char usage[16];    /* "kernel", "write", "read", "bookkeep" */
	char driver[64];
	char timeline[64];
	uint64_t seqno;
	bool signalled;
};

/* The entry of one dma-buf in debugfs dma_buf/bufinfo. */
struct bufinfo_entry {
	bool found;
	uint64_t size;
	long long count;
	char exp_name[64];
	char name[64];      /* "<none>" in the file becomes "" */
	uint64_t inode;
	unsigned nfences;
	struct bufinfo_fence fences[32];
	bool fences_truncated;
	unsigned ndevices;
	char devices[8][64];
};

/*
 * Find the buffer with inode `ino` in the text of dma_buf/bufinfo.
 * Returns 0 (out->found says whether it was there) or -EINVAL if the text
 * does not look like bufinfo at all.
 */
int bufinfo_find(const char *text, uint64_t ino, struct bufinfo_entry *out);

/* The comm of a process ("?" if unreadable) into buf. */
const char *proc_comm(pid_t pid, char *buf, size_t len);

#endif
