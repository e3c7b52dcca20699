/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-info fence FD|/proc/PID/fd/N
 *
 * The fences of a sync_file, decoded with SYNC_IOC_FILE_INFO (through
 * sb_sync_file_get_info()): per fence the driver, the timeline, the status
 * (1 signalled, 0 active, < 0 the error it completed with) and, once it
 * completed, the CLOCK_MONOTONIC time it did and how long ago that was.
 * Only looks: the sync_file is not waited on and not changed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "info.h"

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char *
age_text(uint64_t ts_ns, int64_t now, char *buf, size_t len)
{
	double age = (double)(now - (int64_t)ts_ns);

	if (age < 0)
		snprintf(buf, len, "just now");
	else if (age < 1e6)
		snprintf(buf, len, "%.1f us ago", age / 1e3);
	else if (age < 1e9)
		snprintf(buf, len, "%.1f ms ago", age / 1e6);
	else
		snprintf(buf, len, "%.3f s ago", age / 1e9);
	return buf;
}

void
info_print_fences(FILE *f, const struct sb_sync_file_info *info, const char *indent)
{
	int64_t now = now_ns();
	char st[96], age[48];

	if (info->num_fences == 0) {
		fprintf(f, "%s(no fences)\n", indent);
		return;
	}
	fprintf(f, "%s%-3s %-16s %-24s %-12s %s\n", indent, "#", "DRIVER", "TIMELINE", "STATUS",
		"COMPLETED (CLOCK_MONOTONIC)");
	for (uint32_t i = 0; i < info->num_fences; i++) {
		const struct sb_fence_info *fi = &info->fences[i];

		info_status_text(fi->status, st, sizeof(st));
		fprintf(f, "%s%-3u %-16s %-24s %-12s", indent, i, fi->driver, fi->timeline, st);
		if (fi->status != 0 && fi->timestamp_ns)
			fprintf(f, " %llu.%09llu s, %s", (unsigned long long)(fi->timestamp_ns / 1000000000),
				(unsigned long long)(fi->timestamp_ns % 1000000000),
				age_text(fi->timestamp_ns, now, age, sizeof(age)));
		else if (fi->status == 0)
			fprintf(f, " -");
		fputc('\n', f);
	}
}

void
info_json_fences(struct json_writer *w, const struct sb_sync_file_info *info)
{
	int64_t now = now_ns();
	char st[96];

	json_string(w, "status", info_status_word(info->status));
	json_int(w, "status_code", info->status);
	json_string(w, "status_text", info_status_text(info->status, st, sizeof(st)));
	json_uint(w, "num_fences", info->num_fences);
	json_int(w, "now_ns", now);
	json_array_begin(w, "fences");
	for (uint32_t i = 0; i < info->num_fences; i++) {
		const struct sb_fence_info *fi = &info->fences[i];

		json_object_begin(w, NULL);
		json_string(w, "driver", fi->driver);
		json_string(w, "timeline", fi->timeline);
		json_string(w, "status", info_status_word(fi->status));
		json_int(w, "status_code", fi->status);
		json_string(w, "status_text", info_status_text(fi->status, st, sizeof(st)));
		if (fi->status != 0 && fi->timestamp_ns) {
			json_uint(w, "timestamp_ns", fi->timestamp_ns);
			json_int(w, "age_ns", now - (int64_t)fi->timestamp_ns);
		} else {
			json_null(w, "timestamp_ns");
			json_null(w, "age_ns");
		}
		json_object_end(w);
	}
	json_array_end(w);
}

void
info_json_target(struct json_writer *w, const struct info_target *t)
{
	char comm[32];

	json_object_begin(w, "target");
	json_int(w, "pid", t->pid);
	json_string(w, "comm", proc_comm(t->pid, comm, sizeof(comm)));
	json_int(w, "fd", t->remote_fd);
	json_string(w, "link", t->link);
	json_string(w, "via", t->via);
	json_object_end(w);
}

void
info_wrong_kind(const struct info_target *t, const char *arg, const char *wanted)
{
	char name[96], what[PATH_MAX + 64];

	info_target_name(t, name, sizeof(name));
	fd_link_describe(t->link, what, sizeof(what));
	if (t->kind == FD_KIND_DMABUF)
		info_err("%s is a dma-buf, not %s (try: " INFO_PROG " dmabuf %s)", name, wanted, arg);
	else if (t->kind == FD_KIND_SYNC_FILE)
		info_err("%s is a sync_file, not %s (try: " INFO_PROG " fence %s)", name, wanted, arg);
	else
		info_err("%s is %s, not %s", name, what, wanted);
}

int
info_cmd_fence(int argc, char **argv, const struct info_opts *o)
{
	struct info_target t;
	struct sb_sync_file_info *info = NULL;
	char name[96], st[96];
	int ret;

	if (argc != 2) {
		info_err("usage: " INFO_PROG " [--json] fence FD|/proc/PID/fd/N");
		return INFO_EXIT_USAGE;
	}
	if (info_target_resolve(argv[1], &t) < 0)
		return INFO_EXIT_FAIL;
	if (t.kind != FD_KIND_SYNC_FILE) {
		info_wrong_kind(&t, argv[1], "a sync_file");
		info_target_release(&t);
		return INFO_EXIT_FAIL;
	}
	ret = sb_sync_file_get_info(t.fd, &info);
	if (ret < 0) {
		info_err("%s: SYNC_IOC_FILE_INFO failed: %s", info_target_name(&t, name, sizeof(name)),
			 strerror(-ret));
		info_target_release(&t);
		return INFO_EXIT_FAIL;
	}

	if (o->json) {
		struct json_writer w;

		json_init(&w, stdout, true);
		json_object_begin(&w, NULL);
		json_string(&w, "kind", "sync_file");
		info_json_target(&w, &t);
		json_string(&w, "name", info->name);
		info_json_fences(&w, info);
		json_object_end(&w);
	} else {
		printf("%s: sync_file \"%s\", %u fence%s, %s\n", info_target_name(&t, name, sizeof(name)),
		       info->name, info->num_fences, info->num_fences == 1 ? "" : "s",
		       info_status_text(info->status, st, sizeof(st)));
		info_print_fences(stdout, info, "  ");
	}
	sb_sync_file_info_free(info);
	info_target_release(&t);
	return fflush(stdout) == 0 ? INFO_EXIT_OK : INFO_EXIT_FAIL;
}

