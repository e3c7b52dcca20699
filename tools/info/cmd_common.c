/* SPDX-License-Identifier: MIT */
/*
 * What the subcommands share: messages, the fences of a sync_file as a table
 * and as JSON, what a dma-buf's readers and writers would wait for, and the
 * one JSON document a command prints on stdout.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "info.h"

void
info_err(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs(INFO_PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
info_usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, INFO_PROG ": %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see: " INFO_PROG " help %s)\n", cmd);
}

void
info_help_exit_status(FILE *f)
{
	fprintf(f, "Exit status: 0 ok; 1 a runtime error (no such process or fd, no permission,\n"
		   "the kernel lacks what is needed, output could not be written); 2 a usage\n"
		   "error (the command line is wrong: nothing is printed on stdout then).\n");
}

int
info_stdout_status(void)
{
	return fflush(stdout) == 0 && !ferror(stdout) ? INFO_EXIT_OK : INFO_EXIT_FAIL;
}

int
info_json_print(struct json_object *doc)
{
	int ret = doc ? info_json_write(doc, stdout, true) : -ENOMEM;

	json_object_put(doc);
	if (ret < 0) {
		info_err("writing the JSON output failed: %s", strerror(-ret));
		return INFO_EXIT_FAIL;
	}
	return info_stdout_status();
}

const char *
info_status_word(int32_t status)
{
	if (status > 0)
		return "signalled";
	if (status == 0)
		return "active";
	return "error";
}

const char *
info_status_text(int32_t status, char *buf, size_t len)
{
	const char *name;

	if (status >= 0) {
		snprintf(buf, len, "%s", info_status_word(status));
		return buf;
	}
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	name = strerrorname_np(-status);
#else
	name = NULL;
#endif
	if (name)
		snprintf(buf, len, "error -%s (%s)", name, strerror(-status));
	else
		snprintf(buf, len, "error %d (%s)", (int)status, strerror(-status));
	return buf;
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
			fprintf(f, " %llu.%09llu s, %s",
				(unsigned long long)(fi->timestamp_ns / 1000000000),
				(unsigned long long)(fi->timestamp_ns % 1000000000),
				age_text(fi->timestamp_ns, now, age, sizeof(age)));
		else if (fi->status == 0)
			fprintf(f, " -");
		fputc('\n', f);
	}
}

/* "status", "status_code", "status_text" of a sync_file or fence status into o. */
static void
json_status(struct json_object *o, int32_t status)
{
	char st[96];

	json_object_object_add(o, "status", json_object_new_string(info_status_word(status)));
	json_object_object_add(o, "status_code", json_object_new_int(status));
	json_object_object_add(o, "status_text",
			       info_json_str(info_status_text(status, st, sizeof(st))));
}

void
info_json_fences(struct json_object *o, const struct sb_sync_file_info *info)
{
	int64_t now = now_ns();
	struct json_object *fences = json_object_new_array();

	json_status(o, info->status);
	json_object_object_add(o, "num_fences", json_object_new_int64(info->num_fences));
	json_object_object_add(o, "now_ns", json_object_new_int64(now));
	for (uint32_t i = 0; i < info->num_fences; i++) {
		const struct sb_fence_info *fi = &info->fences[i];
		struct json_object *f = json_object_new_object();
		bool completed = fi->status != 0 && fi->timestamp_ns;
		int64_t age = now - (int64_t)fi->timestamp_ns;

		json_object_object_add(f, "driver", info_json_str(fi->driver));
		json_object_object_add(f, "timeline", info_json_str(fi->timeline));
		json_status(f, fi->status);
		json_object_object_add(f, "timestamp_ns",
				       completed ? json_object_new_uint64(fi->timestamp_ns) : NULL);
		json_object_object_add(f, "age_ns", completed ? json_object_new_int64(age) : NULL);
		json_object_array_add(fences, f);
	}
	json_object_object_add(o, "fences", fences);
}

void
info_dmabuf_export_access(int fd, struct sb_sync_file_info *out[2], int err[2])
{
	static const enum sb_access acc[2] = { SB_ACCESS_READ, SB_ACCESS_WRITE };

	for (int i = 0; i < 2; i++) {
		int sync_fd = -1;
		int ret = sb_dmabuf_export_sync_file(fd, acc[i], &sync_fd);

		out[i] = NULL;
		if (ret == 0) {
			ret = sb_sync_file_info_create(sync_fd, &out[i]);
			close(sync_fd);
		}
		err[i] = ret;
	}
}
