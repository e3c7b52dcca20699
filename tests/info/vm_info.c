/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-info on real kernel objects (VM tier: vgem, debugfs, root).
 * Each case is one behaviour; the tool runs as a separate process and gets
 * the object either as its fd 3 or as /proc/<this pid>/fd/N (pidfd_getfd).
 * --json output is checked with jsonq.py (python3 json.load + assertions).
 *
 *   vm_info CASE --tool PATH --jsonq PATH [--python PATH]
 *
 *   fence-pending    a pending vgem fence: active, driver vgem, no timestamp
 *   fence-signalled  after FENCE_SIGNAL: signalled, timestamp, age >= 0
 *   fence-merged     a merge of a signalled and a pending fence: 2 fences, active
 *   fence-proc       the same through /proc/PID/fd/N; the sync_file is unchanged
 *   dmabuf-idle      a vgem dma-buf without fences: size, exporter, nobody waits
 *   dmabuf-write     a pending write fence: readers and writers wait; debugfs
 *                    shows it; the buffer's state is unchanged afterwards
 *   dmabuf-read      a pending read fence: only writers wait
 *   dmabuf-named     DMA_BUF_SET_NAME shows as the name; /proc/PID/fd/N form
 *   wrong-kinds      fence on a dma-buf, dmabuf on a sync_file / a DRM node
 *   ps               ps PID lists this process's dma-buf and sync_file (JSON
 *                    and human), ps without PID includes this process
 */
#include <linux/dma-buf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "vmtest.h"
#include "kernel_raw.h"

#ifndef DMA_BUF_SET_NAME_B
#define DMA_BUF_SET_NAME_B _IOW(DMA_BUF_BASE, 1, __u64)
#endif

static const char *tool, *jsonq, *python;

struct result {
	int status; /* exit status, or 128+signal */
	char *out, *err;
};

static char *
slurp_memfd(int fd)
{
	off_t len = lseek(fd, 0, SEEK_END);
	char *buf;

	REQUIRE(len >= 0, "lseek: %s", strerror(errno));
	buf = calloc(1, (size_t)len + 1);
	REQUIRE(buf, "calloc");
	REQUIRE(pread(fd, buf, (size_t)len, 0) == len, "pread");
	return buf;
}

/*
 * Run argv with stdin from `input` (if not NULL) and `pass_fd` as fd 3 (if
 * >= 0); capture stdout and stderr.
 */
static struct result
run(const char *const *argv, int pass_fd, const char *input)
{
	int out = memfd_create("out", MFD_CLOEXEC), err = memfd_create("err", MFD_CLOEXEC);
	int in = -1, status;
	struct result r;
	pid_t pid;

	REQUIRE(out >= 0 && err >= 0, "memfd_create: %s", strerror(errno));
	if (input) {
		in = memfd_create("in", MFD_CLOEXEC);
		REQUIRE(in >= 0, "memfd_create");
		REQUIRE(write(in, input, strlen(input)) == (ssize_t)strlen(input), "write input");
		lseek(in, 0, SEEK_SET);
	}
	fflush(stdout);
	pid = fork();
	REQUIRE(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		if (pass_fd == 3)
			fcntl(3, F_SETFD, 0);
		else if (pass_fd >= 0 && dup2(pass_fd, 3) < 0)
			_exit(126);
		if (in >= 0)
			dup2(in, 0);
		dup2(out, 1);
		dup2(err, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		REQUIRE(errno == EINTR, "waitpid: %s", strerror(errno));
	r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	r.out = slurp_memfd(out);
	r.err = slurp_memfd(err);
	close(out);
	close(err);
	if (in >= 0)
		close(in);
	return r;
}

static void
result_free(struct result *r)
{
	free(r->out);
	free(r->err);
}

/* Run the tool; print what it said, so a failure can be read in the log. */
static struct result
tool_run(const char *a1, const char *a2, const char *a3, int pass_fd)
{
	const char *argv[] = { tool, a1, a2, a3, NULL };
	struct result r = run(argv, pass_fd, NULL);

	printf("# $ syncbridge-info %s %s %s -> %d\n", a1, a2 ? a2 : "", a3 ? a3 : "", r.status);
	if (r.err[0])
		printf("# stderr: %s", r.err);
	return r;
}

/*
 * jsonq.py: the document parses and every expression holds. Python starts
 * slowly under emulation and a vgem fence signals by itself after ~10 s, so
 * the checks are queued and run once the case's fences are done with.
 */
struct json_check {
	char *doc, *what;
	char *exprs[24];
};
static struct json_check json_queue[32];
static size_t json_queued;

static void
check_json(const char *doc, const char *what, const char *const *exprs)
{
	struct json_check *c;
	size_t n = 0;

	REQUIRE(json_queued < sizeof(json_queue) / sizeof(json_queue[0]), "too many JSON checks");
	c = &json_queue[json_queued++];
	c->doc = strdup(doc);
	c->what = strdup(what);
	for (; *exprs && n < sizeof(c->exprs) / sizeof(c->exprs[0]) - 1; exprs++)
		c->exprs[n++] = strdup(*exprs);
	c->exprs[n] = NULL;
}

static void
run_json_checks(void)
{
	for (size_t i = 0; i < json_queued; i++) {
		struct json_check *c = &json_queue[i];
		const char *argv[32] = { python, jsonq };
		size_t n = 2;
		struct result r;

		for (char **e = c->exprs; *e && n < 31; e++)
			argv[n++] = *e;
		argv[n] = NULL;
		printf("# JSON checks: %s\n", c->what);
		r = run(argv, -1, c->doc);
		fputs(r.out, stdout);
		fputs(r.err, stdout);
		CHECK(r.status == 0, "%s: the JSON loads and every expression holds", c->what);
		result_free(&r);
		for (char **e = c->exprs; *e; e++)
			free(*e);
		free(c->doc);
		free(c->what);
	}
	json_queued = 0;
}

#define JSON(doc, what, ...) check_json((doc), (what), (const char *const[]){ __VA_ARGS__, NULL })

static void
case_fence(int vgem, const char *which)
{
	struct sbk_fence a, b;
	struct result r;
	int merged = -1, st;

	vm_require_fence(vgem, true, &a);

	if (strcmp(which, "fence-pending") == 0) {
		r = tool_run("fence", "3", NULL, a.sync_file);
		CHECK_EQ(r.status, 0, "fence on a pending sync_file");
		CHECK(strstr(r.out, "1 fence, active") && strstr(r.out, "vgem"),
		      "human output says active, vgem:\n%s", r.out);
		result_free(&r);
		r = tool_run("--json", "fence", "3", a.sync_file);
		CHECK_EQ(r.status, 0, "--json fence");
		JSON(r.out, "pending", "d['kind'] == 'sync_file'", "d['status'] == 'active'",
		     "d['status_code'] == 0", "d['num_fences'] == 1",
		     "d['fences'][0]['driver'] == 'vgem'", "d['fences'][0]['status'] == 'active'",
		     "d['fences'][0]['timestamp_ns'] is None", "d['target']['via'] == 'inherited'");
		result_free(&r);
	} else if (strcmp(which, "fence-signalled") == 0) {
		CHECK_EQ(sbk_fence_signal(&a), 0, "signal");
		r = tool_run("--json", "fence", "3", a.sync_file);
		CHECK_EQ(r.status, 0, "--json fence");
		JSON(r.out, "signalled", "d['status'] == 'signalled'", "d['status_code'] == 1",
		     "d['fences'][0]['status'] == 'signalled'",
		     "d['fences'][0]['timestamp_ns'] > 0", "0 <= d['fences'][0]['age_ns'] < 60e9",
		     "d['fences'][0]['timestamp_ns'] <= d['now_ns']");
		result_free(&r);
		r = tool_run("fence", "3", NULL, a.sync_file);
		CHECK(r.status == 0 && strstr(r.out, "signalled") && strstr(r.out, " ago"),
		      "human output says signalled ... ago:\n%s", r.out);
		result_free(&r);
	} else if (strcmp(which, "fence-merged") == 0) {
		/* merge two pending fences (a merge drops inputs that already signalled), then signal one */
		vm_require_fence(vgem, true, &b);
		REQUIRE(sb_sync_file_merge(a.sync_file, b.sync_file, &merged) == 0, "merge");
		CHECK_EQ(sbk_fence_signal(&b), 0, "signal b");
		r = tool_run("--json", "fence", "3", merged);
		CHECK_EQ(r.status, 0, "--json fence on the merge");
		JSON(r.out, "merged", "d['status'] == 'active'", "d['num_fences'] == 2",
		     "sorted(f['status'] for f in d['fences']) == ['active', 'signalled']",
		     "all(f['driver'] == 'vgem' for f in d['fences'])");
		result_free(&r);
		CHECK_EQ(sbk_fence_signal(&a), 0, "signal a");
		r = tool_run("--json", "fence", "3", merged);
		JSON(r.out, "merged, both signalled", "d['status'] == 'signalled'",
		     "all(f['status'] == 'signalled' for f in d['fences'])");
		result_free(&r);
		close(merged);
		sbk_fence_destroy(&b);
	} else { /* fence-proc */
		char path[64], fd_expr[64], pid_expr[64];

		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getpid(), a.sync_file);
		snprintf(fd_expr, sizeof(fd_expr), "d['target']['fd'] == %d", a.sync_file);
		snprintf(pid_expr, sizeof(pid_expr), "d['target']['pid'] == %d", (int)getpid());
		r = tool_run("--json", "fence", path, -1);
		CHECK_EQ(r.status, 0, "fence /proc/PID/fd/N");
		JSON(r.out, "proc path", "d['status'] == 'active'", "d['target']['via'] == 'pidfd_getfd'",
		     fd_expr, pid_expr, "d['target']['link'] == 'anon_inode:sync_file'",
		     "d['fences'][0]['driver'] == 'vgem'");
		result_free(&r);
		st = -2;
		CHECK_EQ(tb_sync_file_info_raw(a.sync_file, &st, NULL, 0, NULL), 0, "raw info");
		CHECK_EQ(st, 0, "the sync_file is still pending after the tool looked");
		CHECK_EQ(sbk_fence_signal(&a), 0, "signal still works");
		r = tool_run("fence", path, NULL, -1);
		CHECK(r.status == 0 && strstr(r.out, "signalled"), "now signalled:\n%s", r.out);
		result_free(&r);
	}
	sbk_fence_destroy(&a);
}

/* Buffer state seen from outside the tool: poll() bits and a fresh READ/WRITE export's status. */
struct buf_state {
	int revents, read_status, write_status;
};

static struct buf_state
buf_state(int fd)
{
	struct buf_state s = { .revents = tb_dmabuf_poll_raw(fd) };
	int sf;

	REQUIRE(tb_dmabuf_export_raw(fd, DMA_BUF_SYNC_READ, &sf) == 0, "export read");
	tb_sync_file_info_raw(sf, &s.read_status, NULL, 0, NULL);
	close(sf);
	REQUIRE(tb_dmabuf_export_raw(fd, DMA_BUF_SYNC_WRITE, &sf) == 0, "export write");
	tb_sync_file_info_raw(sf, &s.write_status, NULL, 0, NULL);
	close(sf);
	return s;
}

static void
case_dmabuf(int vgem, const char *which)
{
	struct sbk_buf buf;
	struct result r;
	uint32_t fence;
	struct buf_state before, after;
	char size_expr[64];

	vm_require_buf(SBK_BUF_VGEM, vgem, 64 * 1024, &buf);
	snprintf(size_expr, sizeof(size_expr), "d['size'] == %zu", buf.size);
	/* vgem exports through drm_gem_prime_export(): exp_name is the module, "drm" */

	if (strcmp(which, "dmabuf-idle") == 0) {
		r = tool_run("--json", "dmabuf", "3", buf.fd);
		CHECK_EQ(r.status, 0, "--json dmabuf on an idle buffer");
		JSON(r.out, "idle", "d['kind'] == 'dma-buf'", size_expr, "d['exporter'] == 'drm'",
		     "d['inode'] > 0", "d['name'] is None", "d['references'] >= 1",
		     "d['read']['available'] and not d['read']['must_wait']",
		     "d['write']['available'] and not d['write']['must_wait']",
		     "not d['bufinfo']['available'] or d['bufinfo']['fences'] == []");
		result_free(&r);
		r = tool_run("dmabuf", "3", NULL, buf.fd);
		CHECK(r.status == 0 && strstr(r.out, "exporter:    drm") &&
			      strstr(r.out, "a reader would wait for: nothing"),
		      "human output:\n%s", r.out);
		result_free(&r);
	} else if (strcmp(which, "dmabuf-write") == 0 || strcmp(which, "dmabuf-read") == 0) {
		bool write = strcmp(which, "dmabuf-write") == 0;

		CHECK_EQ(sbk_vgem_fence_attach(vgem, buf.handle, write, &fence), 0, "attach a fence");
		before = buf_state(buf.fd);
		r = tool_run("--json", "dmabuf", "3", buf.fd);
		CHECK_EQ(r.status, 0, "--json dmabuf with a pending fence");
		if (write)
			JSON(r.out, "pending write fence", "d['read']['must_wait']",
			     "d['write']['must_wait']", "d['read']['fences'][0]['driver'] == 'vgem'",
			     "d['read']['fences'][0]['status'] == 'active'",
			     "d['bufinfo']['available']",
			     "[(f['usage'], f['driver'], f['signalled']) for f in d['bufinfo']['fences']]"
			     " == [('write', 'vgem', False)]");
		else
			JSON(r.out, "pending read fence", "not d['read']['must_wait']",
			     "d['write']['must_wait']", "d['write']['fences'][0]['status'] == 'active'",
			     "d['bufinfo']['available']",
			     "[(f['usage'], f['signalled']) for f in d['bufinfo']['fences']]"
			     " == [('read', False)]");
		result_free(&r);
		r = tool_run("dmabuf", "3", NULL, buf.fd);
		CHECK(r.status == 0 && strstr(r.out, "a writer would wait for: 1 fence, active"),
		      "human output:\n%s", r.out);
		CHECK(strstr(r.out, write ? "write    vgem" : "read     vgem") != NULL,
		      "debugfs fence line in the human output");
		result_free(&r);
		after = buf_state(buf.fd);
		CHECK(before.revents == after.revents && before.read_status == after.read_status &&
			      before.write_status == after.write_status,
		      "the buffer's state is unchanged (poll %#x/%#x, read %d/%d, write %d/%d)",
		      before.revents, after.revents, before.read_status, after.read_status,
		      before.write_status, after.write_status);
		CHECK_EQ(sbk_vgem_fence_signal(vgem, fence), 0, "the fence still signals normally");
		r = tool_run("--json", "dmabuf", "3", buf.fd);
		JSON(r.out, "after the signal", "not d['read']['must_wait']",
		     "not d['write']['must_wait']",
		     "all(f['signalled'] for f in d['bufinfo']['fences'])");
		result_free(&r);
	} else { /* dmabuf-named */
		char path[64];
		const char *name = "sb-info test";

		CHECK_EQ(ioctl(buf.fd, DMA_BUF_SET_NAME_B, name), 0, "DMA_BUF_SET_NAME");
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getpid(), buf.fd);
		r = tool_run("--json", "dmabuf", path, -1);
		CHECK_EQ(r.status, 0, "--json dmabuf /proc/PID/fd/N");
		JSON(r.out, "named", "d['name'] == 'sb-info test'", "d['target']['via'] == 'pidfd_getfd'",
		     "d['target']['link'] == '/dmabuf:sb-info test'", "d['exporter'] == 'drm'");
		result_free(&r);
	}
	sbk_buf_destroy(&buf);
}

static void
case_wrong_kinds(int vgem)
{
	struct sbk_fence a;
	struct result r;

	vm_require_fence(vgem, true, &a);
	r = tool_run("fence", "3", NULL, a.bo.fd);
	CHECK(r.status == 1 && strstr(r.err, "is a dma-buf, not a sync_file") &&
		      strstr(r.err, "dmabuf 3"),
	      "fence on a dma-buf says so and suggests dmabuf");
	CHECK(r.out[0] == '\0', "nothing on stdout");
	result_free(&r);
	r = tool_run("dmabuf", "3", NULL, a.sync_file);
	CHECK(r.status == 1 && strstr(r.err, "is a sync_file, not a dma-buf") &&
		      strstr(r.err, "fence 3"),
	      "dmabuf on a sync_file says so and suggests fence");
	result_free(&r);
	r = tool_run("--json", "fence", "3", vgem);
	CHECK(r.status == 1 && strstr(r.err, "the DRM device /dev/dri/") && r.out[0] == '\0',
	      "fence on a DRM node");
	result_free(&r);
	r = tool_run("dmabuf", "3", NULL, vgem);
	CHECK(r.status == 1 && strstr(r.err, "not a dma-buf"), "dmabuf on a DRM node");
	result_free(&r);
	sbk_fence_destroy(&a);
}

static void
case_ps(int vgem)
{
	struct sbk_fence a;
	struct result r;
	char pid[16], e1[160], e2[200], e3[120];

	vm_require_fence(vgem, true, &a); /* a vgem dma-buf (a.bo.fd) and a pending sync_file */
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	r = tool_run("--json", "ps", pid, -1);
	CHECK_EQ(r.status, 0, "--json ps PID");
	snprintf(e1, sizeof(e1),
		 "[(f['kind'], f.get('exporter')) for p in d['processes'] for f in p['fds'] "
		 "if f['fd'] == %d] == [('dma-buf', 'drm')]",
		 a.bo.fd);
	snprintf(e2, sizeof(e2),
		 "[(f['kind'], f['status'], f['fences'][0]['driver']) for p in d['processes'] "
		 "for f in p['fds'] if f['fd'] == %d] == [('sync_file', 'active', 'vgem')]",
		 a.sync_file);
	snprintf(e3, sizeof(e3), "d['processes'][0]['pid'] == %s", pid);
	JSON(r.out, "ps PID", e3, e1, e2, "d['dmabufs'] >= 1", "d['sync_files'] >= 1",
	     "all(f['inspected'] for p in d['processes'] for f in p['fds'] if f['kind'] != 'syncobj')");
	result_free(&r);
	r = tool_run("ps", pid, NULL, -1);
	CHECK(r.status == 0 && strstr(r.out, "dma-buf") && strstr(r.out, "sync_file") &&
		      strstr(r.out, "exporter drm") && strstr(r.out, "active, 1 fence: vgem/"),
	      "human ps:\n%s", r.out);
	result_free(&r);
	r = tool_run("--json", "ps", NULL, -1);
	snprintf(e3, sizeof(e3), "any(p['pid'] == %s for p in d['processes'])", pid);
	JSON(r.out, "ps (all)", e3);
	result_free(&r);
	sbk_fence_destroy(&a);
}

int
main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "";
	int vgem;

	tool = vm_arg_value(argc, argv, "--tool", NULL);
	jsonq = vm_arg_value(argc, argv, "--jsonq", NULL);
	python = vm_arg_value(argc, argv, "--python", "/usr/bin/python3");
	REQUIRE(tool && jsonq, "usage: %s CASE --tool PATH --jsonq PATH [--python PATH]", argv[0]);
	if (access(python, X_OK) != 0)
		tb_skip("no python3 at %s to check the JSON", python);
	vgem = vm_require_vgem();

	if (strncmp(which, "fence-", 6) == 0)
		case_fence(vgem, which);
	else if (strncmp(which, "dmabuf-", 7) == 0)
		case_dmabuf(vgem, which);
	else if (strcmp(which, "wrong-kinds") == 0)
		case_wrong_kinds(vgem);
	else if (strcmp(which, "ps") == 0)
		case_ps(vgem);
	else
		REQUIRE(false, "unknown case '%s'", which);
	close(vgem);
	run_json_checks();
	return tb_finish();
}
