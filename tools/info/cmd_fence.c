/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-info fence FD|/proc/PID/fd/N
 *
 * The fences of a sync_file, decoded with SYNC_IOC_FILE_INFO (through
 * sb_sync_file_info_create()): per fence the driver, the timeline, the status
 * (1 signalled, 0 active, < 0 the error it completed with) and, once it
 * completed, the CLOCK_MONOTONIC time it did and how long ago that was.
 * Only looks: the sync_file is not waited on and not changed.
 */
#include <string.h>

#include "info.h"

void
info_help_fence(FILE *f)
{
	fprintf(f,
		"usage: " INFO_PROG " [--json] fence FD|/proc/PID/fd/N\n"
		"The fences in a sync_file (SYNC_IOC_FILE_INFO): per fence the driver, the\n"
		"timeline, the status (signalled, active, or the error it completed with) and,\n"
		"once completed, its CLOCK_MONOTONIC completion time and age. Only looks: the\n"
		"sync_file is not waited on and not changed.\n"
		"\n"
		"  FD               an fd this program inherited:  " INFO_PROG " fence 3 3<&5\n"
		"  /proc/PID/fd/N   fd N of process PID, copied with pidfd_getfd() (needs ptrace\n"
		"                   access: the same user, or root)\n"
		"  --json           one JSON document on stdout\n"
		"\n"
		"A sync_file has no path: a file name is not accepted (for a file,\n"
		INFO_PROG " fence 3 3<FILE says what it is instead).\n");
	info_help_exit_status(f);
}

int
info_cmd_fence(int argc, char **argv, const struct info_opts *o)
{
	struct info_target t;
	struct sb_sync_file_info *info = NULL;
	char name[96], st[96];
	int ret;

	ret = info_target_from_args(argc, argv, FD_KIND_SYNC_FILE, &t);
	if (ret != INFO_EXIT_OK)
		return ret;
	ret = sb_sync_file_info_create(t.fd, &info);
	if (ret < 0) {
		info_err("%s: SYNC_IOC_FILE_INFO failed: %s",
			 info_target_name(&t, name, sizeof(name)), strerror(-ret));
		info_target_release(&t);
		return INFO_EXIT_FAIL;
	}

	if (o->json) {
		struct json_object *doc = json_object_new_object();

		json_object_object_add(doc, "kind", json_object_new_string("sync_file"));
		json_object_object_add(doc, "target", info_json_target(&t));
		json_object_object_add(doc, "name", info_json_str(info->name));
		info_json_fences(doc, info);
		ret = info_json_print(doc);
	} else {
		printf("%s: sync_file \"%s\", %u fence%s, %s\n",
		       info_target_name(&t, name, sizeof(name)), info->name, info->num_fences,
		       info->num_fences == 1 ? "" : "s",
		       info_status_text(info->status, st, sizeof(st)));
		info_print_fences(stdout, info, "  ");
		ret = info_stdout_status();
	}
	sb_sync_file_info_destroy(info);
	info_target_release(&t);
	return ret;
}
