/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-info ps [PID]
 *
 * Every dma-buf, sync_file and DRM syncobj fd one process (or every process
 * we may look at) holds, one line each. The kind comes from the fd's
 * /proc link; dma-buf details from its fdinfo; fence states from a copy of
 * the fd taken with pidfd_getfd() (when allowed), exactly as `fence` and
 * `dmabuf` do — looking only.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "info.h"

struct ps_fd {
	int fd;
	enum fd_kind kind;
	char link[PATH_MAX];
	struct dmabuf_fdinfo fdinfo; /* dma-buf */
	bool have_fd;                /* we got a copy to look at the fences */
	int access_err;              /* why not */
	struct sb_sync_file_info *sync;      /* sync_file */
	struct sb_sync_file_info *access[2]; /* dma-buf: reader, writer */
	int export_err[2];
};

struct ps_totals {
	unsigned processes, dmabufs, sync_files, syncobjs, inaccessible;
};

static int
cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

/* The numeric entries of a /proc directory, sorted. Returns count or -errno. */
static int
list_numeric(const char *path, int **out)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int *v = NULL, n = 0, cap = 0;

	*out = NULL;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char *end;
		long x;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		x = strtol(e->d_name, &end, 10);
		if (*end || x < 0 || x > INT32_MAX)
			continue;
		if (n == cap) {
			int *nv = realloc(v, (size_t)(cap ? cap * 2 : 64) * sizeof(*v));

			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		v[n++] = (int)x;
	}
	closedir(d);
	if (n > 1)
		qsort(v, (size_t)n, sizeof(*v), cmp_int);
	*out = v;
	return n;
}

static void
ps_fd_free(struct ps_fd *p)
{
	sb_sync_file_info_destroy(p->sync);
	sb_sync_file_info_destroy(p->access[0]);
	sb_sync_file_info_destroy(p->access[1]);
	p->sync = p->access[0] = p->access[1] = NULL;
}

/* Fill p for fd `fd` of pid. Returns false if the fd is of no interest or vanished. */
static bool
inspect_fd(pid_t pid, int fd, struct ps_fd *p)
{
	char path[64];
	ssize_t n;
	struct info_target t;
	char *text;

	memset(p, 0, sizeof(*p));
	p->fd = fd;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	n = readlink(path, p->link, sizeof(p->link) - 1);
	if (n < 0)
		return false;
	p->link[n] = '\0';
	p->kind = fd_kind_from_link(p->link);
	if (p->kind != FD_KIND_DMABUF && p->kind != FD_KIND_SYNC_FILE && p->kind != FD_KIND_SYNCOBJ)
		return false;

	if (p->kind == FD_KIND_DMABUF) {
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
		if (read_text_file(path, &text, NULL) == 0) {
			dmabuf_fdinfo_parse(text, &p->fdinfo);
			free(text);
		}
	}
	if (p->kind == FD_KIND_SYNCOBJ)
		return true;

	p->access_err = info_target_get(pid, fd, &t, true);
	if (p->access_err < 0)
		return true;
	p->have_fd = true;
	if (p->kind == FD_KIND_DMABUF) {
		if (t.owned && p->fdinfo.count > 0)
			p->fdinfo.count--; /* our own copy */
		info_dmabuf_export_access(t.fd, p->access, p->export_err);
	} else {
		p->access_err = sb_sync_file_info_create(t.fd, &p->sync);
		if (p->access_err < 0)
			p->have_fd = false;
	}
	info_target_release(&t);
	return true;
}

/* "vgem/unbound active, vgem/unbound signalled" (at most 4) */
static void
fence_list(const struct sb_sync_file_info *info, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < info->num_fences && used + 1 < len; i++) {
		int k;

		if (i == 4) {
			snprintf(buf + used, len - used, ", +%u more", info->num_fences - 4);
			return;
		}
		k = snprintf(buf + used, len - used, "%s%s/%s %s", i ? ", " : "",
			     info->fences[i].driver, info->fences[i].timeline,
			     info_status_word(info->fences[i].status));
		if (k < 0)
			return;
		used += (size_t)k;
	}
}

static void
wait_summary(const struct sb_sync_file_info *info, int err, char *buf, size_t len)
{
	uint32_t active = 0;

	if (!info) {
		snprintf(buf, len, "? (%s)", strerror(-err));
		return;
	}
	for (uint32_t i = 0; i < info->num_fences; i++)
		active += info->fences[i].status == 0;
	if (info->status > 0)
		snprintf(buf, len, "no");
	else if (info->status < 0)
		snprintf(buf, len, "error %d", info->status);
	else
		snprintf(buf, len, "yes (%u active fence%s)", active, active == 1 ? "" : "s");
}

static void
print_line(pid_t pid, const char *comm, const struct ps_fd *p)
{
	char details[PATH_MAX + 1024], r[64], w[64], list[512];

	switch (p->kind) {
	case FD_KIND_DMABUF:
		if (p->fdinfo.valid)
			snprintf(details, sizeof(details),
				 "inode %llu, %llu bytes, exporter %s%s%s%s",
				 (unsigned long long)p->fdinfo.inode,
				 (unsigned long long)p->fdinfo.size, p->fdinfo.exp_name,
				 p->fdinfo.has_name ? ", name \"" : "",
				 p->fdinfo.has_name ? p->fdinfo.name : "",
				 p->fdinfo.has_name ? "\"" : "");
		else
			snprintf(details, sizeof(details), "(fdinfo unreadable)");
		if (p->have_fd) {
			wait_summary(p->access[0], p->export_err[0], r, sizeof(r));
			wait_summary(p->access[1], p->export_err[1], w, sizeof(w));
			snprintf(details + strlen(details), sizeof(details) - strlen(details),
				 "; reader waits: %s; writer waits: %s", r, w);
		} else {
			snprintf(details + strlen(details), sizeof(details) - strlen(details),
				 "; fences: ? (%s)", strerror(-p->access_err));
		}
		break;
	case FD_KIND_SYNC_FILE:
		if (p->have_fd && p->sync) {
			fence_list(p->sync, list, sizeof(list));
			snprintf(details, sizeof(details), "%s, %u fence%s: %s",
				 info_status_word(p->sync->status), p->sync->num_fences,
				 p->sync->num_fences == 1 ? "" : "s", list);
		} else {
			snprintf(details, sizeof(details), "fences: ? (%s)",
				 strerror(-p->access_err));
		}
		break;
	default:
		snprintf(details, sizeof(details), "%s", p->link);
		break;
	}
	printf("%-7d %-15s %-5d %-10s %s\n", (int)pid, comm, p->fd, fd_kind_name(p->kind), details);
}

static struct json_object *
json_line(const struct ps_fd *p)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "fd", json_object_new_int(p->fd));
	json_object_object_add(o, "kind", json_object_new_string(fd_kind_name(p->kind)));
	json_object_object_add(o, "link", info_json_str(p->link));
	if (p->kind == FD_KIND_DMABUF && p->fdinfo.valid) {
		json_object_object_add(o, "inode", json_object_new_uint64(p->fdinfo.inode));
		json_object_object_add(o, "size", json_object_new_uint64(p->fdinfo.size));
		json_object_object_add(o, "exporter", info_json_str(p->fdinfo.exp_name));
		json_object_object_add(o, "name",
				       info_json_str(p->fdinfo.has_name ? p->fdinfo.name : NULL));
		json_object_object_add(o, "references", json_object_new_int64(p->fdinfo.count));
	}
	if (p->kind == FD_KIND_DMABUF || p->kind == FD_KIND_SYNC_FILE) {
		json_object_object_add(o, "inspected", json_object_new_boolean(p->have_fd));
		if (!p->have_fd)
			json_object_object_add(o, "reason",
					       info_json_str(strerror(-p->access_err)));
	}
	if (p->kind == FD_KIND_SYNC_FILE && p->sync) {
		json_object_object_add(o, "name", info_json_str(p->sync->name));
		info_json_fences(o, p->sync);
	}
	if (p->kind == FD_KIND_DMABUF && p->have_fd) {
		static const char *const keys[2] = { "read", "write" };

		for (int i = 0; i < 2; i++) {
			struct json_object *a = json_object_new_object();

			if (p->access[i]) {
				bool must_wait = p->access[i]->status <= 0;

				json_object_object_add(a, "must_wait",
						       json_object_new_boolean(must_wait));
				info_json_fences(a, p->access[i]);
			} else {
				json_object_object_add(a, "must_wait", NULL);
				json_object_object_add(a, "reason",
						       info_json_str(strerror(-p->export_err[i])));
			}
			json_object_object_add(o, keys[i], a);
		}
	}
	return o;
}

/* The fds of pid, sorted, into *fds (free()). Returns their count or -errno. */
static int
list_fds(pid_t pid, int **fds)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	return list_numeric(path, fds);
}

/*
 * One process whose fds (n of them, freed here) were listed: a line per
 * interesting fd, or with --json an entry in procs. Returns the number of
 * interesting fds.
 */
static int
scan_fds(pid_t pid, int *fds, int n, struct json_object *procs, struct ps_totals *tot)
{
	char comm[32];
	int shown = 0;
	struct json_object *fd_list = NULL;

	proc_comm(pid, comm, sizeof(comm));
	for (int i = 0; i < n; i++) {
		struct ps_fd p;

		if (!inspect_fd(pid, fds[i], &p))
			continue;
		if (procs) {
			if (!fd_list) {
				struct json_object *proc = json_object_new_object();

				fd_list = json_object_new_array();
				json_object_object_add(proc, "pid", json_object_new_int(pid));
				json_object_object_add(proc, "comm", info_json_str(comm));
				json_object_object_add(proc, "fds", fd_list);
				json_object_array_add(procs, proc);
			}
			json_object_array_add(fd_list, json_line(&p));
		} else {
			print_line(pid, comm, &p);
		}
		tot->dmabufs += p.kind == FD_KIND_DMABUF;
		tot->sync_files += p.kind == FD_KIND_SYNC_FILE;
		tot->syncobjs += p.kind == FD_KIND_SYNCOBJ;
		shown++;
		ps_fd_free(&p);
	}
	if (shown)
		tot->processes++;
	free(fds);
	return shown;
}

/*
 * scan_fds() of the n pids (freed here) but this one; those whose fds cannot
 * be listed are counted.
 */
static void
scan_all(int *pids, int n, struct json_object *procs, struct ps_totals *tot)
{
	for (int i = 0; i < n; i++) {
		int *fds, nfds;

		if (pids[i] == getpid())
			continue;
		nfds = list_fds(pids[i], &fds);
		if (nfds == -EACCES || nfds == -EPERM)
			tot->inaccessible++;
		if (nfds >= 0)
			scan_fds(pids[i], fds, nfds, procs, tot);
	}
	free(pids);
}

/* A usage error (2) unless arg is a process id; a pid with no process is a runtime error (1). */
static int
parse_pid(const char *arg, pid_t *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || end == arg || v <= 0 || v > INT32_MAX) {
		info_usage_err("ps", "'%s' is not a process id (a number above 0)", arg);
		return INFO_EXIT_USAGE;
	}
	*pid = (pid_t)v;
	return INFO_EXIT_OK;
}

/* Why the fds of pid cannot be listed (list_fds() said err). */
static void
say_unlistable(pid_t pid, int err)
{
	if (err == -ENOENT)
		info_err("ps: no process %d", (int)pid);
	else if (err == -EACCES || err == -EPERM)
		info_err("ps: /proc/%d/fd: permission denied (only the process's owner or root may "
			 "list its fds)",
			 (int)pid);
	else
		info_err("ps: /proc/%d/fd: %s", (int)pid, strerror(-err));
}

void
info_help_ps(FILE *f)
{
	fprintf(f,
		"usage: " INFO_PROG " [--json] ps [PID]\n"
		"Every dma-buf, sync_file and DRM syncobj fd of process PID, or of every process\n"
		"this user may look at, one line each: the fd, its kind, a dma-buf's inode, size\n"
		"and exporter, and whether a reader or a writer would wait (fence states need a\n"
		"pidfd_getfd() copy; without the permission the line says why).\n"
		"\n"
		"  PID      one process (default: every process; those whose fds cannot be\n"
		"           listed are counted at the end)\n"
		"  --json   one JSON document on stdout\n"
		"\n"
		"A PID that is not a number is a usage error (2); a PID with no process, or\n"
		"one whose fds this user may not list, is a runtime error (1), as in kill(1),\n"
		"strace -p and lsof -p.\n");
	info_help_exit_status(f);
}

int
info_cmd_ps(int argc, char **argv, const struct info_opts *o)
{
	struct ps_totals tot = { 0 };
	struct json_object *doc = NULL, *procs = NULL;
	pid_t one = 0;
	int *fds = NULL, nfds = 0, *pids = NULL, npids = 0, ret;

	/* everything that can fail before the first line: stdout stays empty on an error */
	if (argc > 2) {
		info_usage_err("ps", "takes at most one PID, not %d arguments", argc - 1);
		return INFO_EXIT_USAGE;
	}
	if (argc == 2) {
		ret = parse_pid(argv[1], &one);
		if (ret != INFO_EXIT_OK)
			return ret;
		nfds = list_fds(one, &fds);
		if (nfds < 0) {
			say_unlistable(one, nfds);
			return INFO_EXIT_FAIL;
		}
	} else {
		npids = list_numeric("/proc", &pids);
		if (npids < 0) {
			info_err("ps: /proc: %s (is procfs mounted?)", strerror(-npids));
			return INFO_EXIT_FAIL;
		}
	}

	if (o->json) {
		doc = json_object_new_object();
		procs = json_object_new_array();
		json_object_object_add(doc, "processes", procs);
	} else {
		printf("%-7s %-15s %-5s %-10s %s\n", "PID", "COMM", "FD", "KIND", "DETAILS");
	}

	if (one)
		scan_fds(one, fds, nfds, procs, &tot);
	else
		scan_all(pids, npids, procs, &tot);

	if (o->json) {
		json_object_object_add(doc, "dmabufs", json_object_new_int64(tot.dmabufs));
		json_object_object_add(doc, "sync_files", json_object_new_int64(tot.sync_files));
		json_object_object_add(doc, "syncobjs", json_object_new_int64(tot.syncobjs));
		json_object_object_add(doc, "inaccessible_processes",
				       json_object_new_int64(tot.inaccessible));
		return info_json_print(doc);
	}
	printf("# %u dma-buf%s, %u sync_file%s, %u syncobj fd%s in %u process%s\n", tot.dmabufs,
	       tot.dmabufs == 1 ? "" : "s", tot.sync_files, tot.sync_files == 1 ? "" : "s",
	       tot.syncobjs, tot.syncobjs == 1 ? "" : "s", tot.processes,
	       tot.processes == 1 ? "" : "es");
	if (tot.inaccessible)
		printf("# %u process%s could not be inspected (permission): run as root to see "
		       "them\n",
		       tot.inaccessible, tot.inaccessible == 1 ? "" : "es");
	return info_stdout_status();
}
