/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-info dmabuf FD|/proc/PID/fd/N
 *
 * What a dma-buf is and what it is waiting on, without changing it:
 *  - size, exporter, name and reference count from /proc/PID/fdinfo/N
 *    (dma_buf_show_fdinfo);
 *  - the fences in its reservation object with their usage (write, read,
 *    kernel) from debugfs dma_buf/bufinfo, matched by inode, when readable;
 *  - what a reader and what a writer would have to wait for: a READ and a
 *    WRITE sync_file exported with DMA_BUF_IOCTL_EXPORT_SYNC_FILE (a snapshot;
 *    exporting adds nothing to the buffer) and decoded. Nothing is imported,
 *    nothing is waited on, and the buffer is not poll()ed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>

#include "info.h"

#ifndef DEBUGFS_MAGIC
#define DEBUGFS_MAGIC 0x64626720
#endif

struct dmabuf_report {
	struct dmabuf_fdinfo fdinfo;
	int fdinfo_err;
	struct bufinfo_entry bufinfo;
	char bufinfo_reason[PATH_MAX + 256]; /* empty when bufinfo was read */
	struct sb_sync_file_info *access[2]; /* [0] read, [1] write */
	int access_err[2];
};

static const char *
debugfs_root(void)
{
	const char *env = getenv("SYNCBRIDGE_DEBUGFS");

	return env && *env ? env : "/sys/kernel/debug";
}

static void
read_bufinfo(struct dmabuf_report *r)
{
	char path[PATH_MAX];
	const char *root = debugfs_root();
	struct statfs sfs;
	char *text;
	int ret;

	if (!r->fdinfo.inode) {
		snprintf(r->bufinfo_reason, sizeof(r->bufinfo_reason),
			 "fdinfo has no inode number to match (kernel before 5.14)");
		return;
	}
	snprintf(path, sizeof(path), "%s/dma_buf/bufinfo", root);
	ret = read_text_file(path, &text, NULL);
	if (ret == -ENOENT) {
		if (statfs(root, &sfs) == 0 && sfs.f_type == DEBUGFS_MAGIC)
			snprintf(r->bufinfo_reason, sizeof(r->bufinfo_reason),
				 "%s has no dma_buf/bufinfo (kernel without CONFIG_DEBUG_FS "
				 "for dma-buf)", root);
		else
			snprintf(r->bufinfo_reason, sizeof(r->bufinfo_reason),
				 "debugfs is not mounted at %s (as root: mount -t debugfs none %s)",
				 root, root);
		return;
	}
	if (ret == -EACCES || ret == -EPERM) {
		snprintf(r->bufinfo_reason, sizeof(r->bufinfo_reason),
			 "%s: permission denied (debugfs is root-only)", path);
		return;
	}
	if (ret < 0) {
		snprintf(r->bufinfo_reason, sizeof(r->bufinfo_reason), "%s: %s", path,
			 strerror(-ret));
		return;
	}
	ret = bufinfo_find(text, r->fdinfo.inode, &r->bufinfo);
	free(text);
	if (ret < 0)
		snprintf(r->bufinfo_reason, sizeof(r->bufinfo_reason),
			 "%s: not in the expected format", path);
	else if (!r->bufinfo.found)
		snprintf(r->bufinfo_reason, sizeof(r->bufinfo_reason),
			 "inode %llu is not listed in %s", (unsigned long long)r->fdinfo.inode,
			 path);
}

static const char *
access_error_text(int err, char *buf, size_t len)
{
	if (err == -EOPNOTSUPP || err == -ENOTTY)
		snprintf(buf, len, "unknown: this kernel cannot export a dma-buf's fences "
				   "(DMA_BUF_IOCTL_EXPORT_SYNC_FILE needs Linux 6.0)");
	else
		snprintf(buf, len, "unknown: exporting a sync_file failed: %s", strerror(-err));
	return buf;
}

static void
print_human(const struct info_target *t, const struct dmabuf_report *r)
{
	static const char *const who[2] = { "a reader", "a writer" };
	char name[96], err[256];
	const struct dmabuf_fdinfo *fi = &r->fdinfo;

	printf("%s: dma-buf", info_target_name(t, name, sizeof(name)));
	if (fi->inode)
		printf(", inode %llu", (unsigned long long)fi->inode);
	printf("\n");
	if (fi->valid) {
		printf("  size:        %llu bytes\n", (unsigned long long)fi->size);
		printf("  exporter:    %s\n", fi->exp_name);
		printf("  name:        %s\n", fi->has_name ? fi->name : "(none)");
		if (fi->count >= 0)
			printf("  references:  %lld (open files, mappings and importers)\n",
			       fi->count);
	} else {
		printf("  fdinfo:      unreadable: %s\n",
		       r->fdinfo_err ? strerror(-r->fdinfo_err) : "no dma-buf fields");
	}

	if (r->bufinfo_reason[0]) {
		printf("  attached fences (debugfs): not available: %s\n", r->bufinfo_reason);
	} else {
		const struct bufinfo_entry *b = &r->bufinfo;

		printf("  attached fences (debugfs dma_buf/bufinfo): %u%s\n", b->nfences,
		       b->nfences ? "" : " (idle)");
		for (unsigned i = 0; i < b->nfences; i++)
			printf("    %-8s %-16s %-24s seqno %-8llu %s\n", b->fences[i].usage,
			       b->fences[i].driver, b->fences[i].timeline,
			       (unsigned long long)b->fences[i].seqno,
			       b->fences[i].signalled ? "signalled" : "unsignalled");
		if (b->fences_truncated)
			printf("    (more fences not shown)\n");
		printf("  attached devices: ");
		if (!b->ndevices)
			printf("none");
		for (unsigned i = 0; i < b->ndevices; i++)
			printf("%s%s", i ? ", " : "", b->devices[i]);
		printf("\n");
	}

	for (int i = 0; i < 2; i++) {
		const struct sb_sync_file_info *info = r->access[i];

		if (!info) {
			printf("  %s would wait for: %s\n", who[i],
			       access_error_text(r->access_err[i], err, sizeof(err)));
			continue;
		}
		if (info->status > 0) {
			printf("  %s would wait for: nothing (every fence has signalled)\n",
			       who[i]);
		} else {
			char st[96];

			printf("  %s would wait for: %u fence%s, %s\n", who[i], info->num_fences,
			       info->num_fences == 1 ? "" : "s",
			       info_status_text(info->status, st, sizeof(st)));
		}
		info_print_fences(stdout, info, "    ");
	}
}

static struct json_object *
json_bufinfo(const struct dmabuf_report *r)
{
	const struct bufinfo_entry *b = &r->bufinfo;
	struct json_object *o = json_object_new_object(), *fences, *devices;

	json_object_object_add(o, "available", json_object_new_boolean(!r->bufinfo_reason[0]));
	if (r->bufinfo_reason[0]) {
		json_object_object_add(o, "reason", info_json_str(r->bufinfo_reason));
		return o;
	}
	fences = json_object_new_array();
	for (unsigned i = 0; i < b->nfences; i++) {
		struct json_object *f = json_object_new_object();

		json_object_object_add(f, "usage", info_json_str(b->fences[i].usage));
		json_object_object_add(f, "driver", info_json_str(b->fences[i].driver));
		json_object_object_add(f, "timeline", info_json_str(b->fences[i].timeline));
		json_object_object_add(f, "seqno", json_object_new_uint64(b->fences[i].seqno));
		json_object_object_add(f, "signalled",
				       json_object_new_boolean(b->fences[i].signalled));
		json_object_array_add(fences, f);
	}
	json_object_object_add(o, "fences", fences);
	json_object_object_add(o, "fences_truncated", json_object_new_boolean(b->fences_truncated));
	devices = json_object_new_array();
	for (unsigned i = 0; i < b->ndevices; i++)
		json_object_array_add(devices, info_json_str(b->devices[i]));
	json_object_object_add(o, "devices", devices);
	return o;
}

static int
print_json(const struct info_target *t, const struct dmabuf_report *r)
{
	static const char *const keys[2] = { "read", "write" };
	const struct dmabuf_fdinfo *fi = &r->fdinfo;
	struct json_object *doc = json_object_new_object();
	char err[256];

	json_object_object_add(doc, "kind", json_object_new_string("dma-buf"));
	json_object_object_add(doc, "target", info_json_target(t));
	json_object_object_add(doc, "inode",
			       fi->valid && fi->inode ? json_object_new_uint64(fi->inode) : NULL);
	json_object_object_add(doc, "size", fi->valid ? json_object_new_uint64(fi->size) : NULL);
	json_object_object_add(doc, "exporter", fi->valid ? info_json_str(fi->exp_name) : NULL);
	if (fi->valid) {
		json_object_object_add(doc, "name", info_json_str(fi->has_name ? fi->name : NULL));
		json_object_object_add(doc, "references",
				       fi->count >= 0 ? json_object_new_int64(fi->count) : NULL);
	}
	json_object_object_add(doc, "bufinfo", json_bufinfo(r));

	for (int i = 0; i < 2; i++) {
		struct json_object *a = json_object_new_object();

		json_object_object_add(a, "available",
				       json_object_new_boolean(r->access[i] != NULL));
		if (r->access[i]) {
			json_object_object_add(a, "must_wait",
					       json_object_new_boolean(r->access[i]->status <= 0));
			info_json_fences(a, r->access[i]);
		} else {
			access_error_text(r->access_err[i], err, sizeof(err));
			json_object_object_add(a, "reason", info_json_str(err));
		}
		json_object_object_add(doc, keys[i], a);
	}
	return info_json_print(doc);
}

void
info_help_dmabuf(FILE *f)
{
	fprintf(f,
		"usage: " INFO_PROG " [--json] dmabuf FD|/proc/PID/fd/N\n"
		"A dma-buf without changing it: size, exporter, name and references\n"
		"(/proc/PID/fdinfo/N); the fences attached to it with their usage (debugfs\n"
		"dma_buf/bufinfo, root only); and what a reader and a writer would wait for (a\n"
		"READ and a WRITE sync_file exported and decoded; exporting adds nothing).\n"
		"\n"
		"  FD               an fd this program inherited:  " INFO_PROG " dmabuf 3 3<&5\n"
		"  /proc/PID/fd/N   fd N of process PID, copied with pidfd_getfd() (needs ptrace\n"
		"                   access: the same user, or root)\n"
		"  --json           one JSON document on stdout\n"
		"\n"
		"Environment: SYNCBRIDGE_DEBUGFS, debugfs's mount point (default "
		"/sys/kernel/debug).\n");
	info_help_exit_status(f);
}

int
info_cmd_dmabuf(int argc, char **argv, const struct info_opts *o)
{
	struct info_target t;
	struct dmabuf_report r;
	char *text;
	char name[96];
	int ret;

	ret = info_target_from_args(argc, argv, FD_KIND_DMABUF, &t);
	if (ret != INFO_EXIT_OK)
		return ret;
	if (!sb_dmabuf_is_valid(t.fd)) {
		info_err("%s: links to /dmabuf: but is not on the dma-buf file system",
			 info_target_name(&t, name, sizeof(name)));
		info_target_release(&t);
		return INFO_EXIT_FAIL;
	}

	memset(&r, 0, sizeof(r));
	text = info_target_fdinfo(&t, &r.fdinfo_err);
	if (text) {
		dmabuf_fdinfo_parse(text, &r.fdinfo);
		free(text);
		/* pidfd_getfd() took a reference of its own: do not count it */
		if (t.owned && r.fdinfo.count > 0)
			r.fdinfo.count--;
	}
	read_bufinfo(&r);
	info_dmabuf_export_access(t.fd, r.access, r.access_err);

	if (o->json) {
		ret = print_json(&t, &r);
	} else {
		print_human(&t, &r);
		ret = info_stdout_status();
	}
	sb_sync_file_info_destroy(r.access[0]);
	sb_sync_file_info_destroy(r.access[1]);
	info_target_release(&t);
	return ret;
}
