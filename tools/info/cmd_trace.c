/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-info trace [-o FILE] [--svg FILE] [--text FILE] [--buffer-kb N] -- CMD...
 * syncbridge-info trace --input TRACE.txt [-o FILE] [--svg FILE]
 *
 * Records the kernel's dma_fence tracepoints while CMD runs and writes a
 * Chrome/Perfetto trace JSON plus an SVG timeline.
 *
 * It records into a tracefs instance of its own (instances/syncbridge-info.PID)
 * rather than the global buffer, so whatever else is tracing on the machine
 * is neither cleared nor disturbed, and the instance's clock can be "mono":
 * trace times are then CLOCK_MONOTONIC, the clock of sync_file timestamps.
 *
 * CMD gets SYNCBRIDGE_TRACE=1 and SYNCBRIDGE_TRACE_MARKER=<instance>/trace_marker
 * in its environment: text written there ("syncbridge: NAME k=v ...") lands
 * in the same buffer and shows up as markers.
 *
 * Userspace waits for a sync_file or a dma-buf with poll(), which no
 * dma_fence event records (dma_fence_wait_start/_end are for waits inside the
 * kernel). So a second instance (….sys) records the poll-family syscalls,
 * and the model keeps those of CMD and its descendants (sched_process_fork
 * events; the child waits on a pipe until recording has started), to show
 * who blocked when. --no-syscalls leaves it out. The instances are tracefs.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "demo_util.h"
#include "info.h"
#include "trace_output.h"
#include "tracefs.h"

struct trace_opts {
	const char *output;
	const char *svg;
	const char *text;
	const char *input;
	unsigned long buffer_kb;
	bool syscalls;
	bool svg_markers_window;
	char **argv;
};

/*
 * Run argv; returns its exit status (128+N for a signal), or -errno if it
 * could not start. The child waits on a pipe until the syscall instance
 * records and m follows its pid.
 */
static int
run_command(char **argv, const char *marker_path, struct tracefs *tfs, struct tr_model *m)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_quit;
	int status, exec_err[2], gate[2];
	pid_t pid;
	ssize_t n;
	int err = 0;
	char c;

	/* exec_err: a CLOEXEC pipe tells us whether exec() worked; gate: "go" */
	if (pipe2(exec_err, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(gate, O_CLOEXEC) < 0) {
		err = -errno;
		close(exec_err[0]);
		close(exec_err[1]);
		return err;
	}
	/* like system(): ^C goes to the command; we stay to write the trace */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		close(exec_err[0]);
		close(exec_err[1]);
		close(gate[0]);
		close(gate[1]);
		return err;
	}
	if (pid == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		close(exec_err[0]);
		close(gate[1]);
		while (read(gate[0], &c, 1) < 0 && errno == EINTR)
			;
		setenv("SYNCBRIDGE_TRACE", "1", 1);
		setenv("SYNCBRIDGE_TRACE_MARKER", marker_path, 1);
		execvp(argv[0], argv);
		err = errno;
		if (write(exec_err[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(exec_err[1]);
	close(gate[0]);
	tr_model_follow(m, (int)pid);
	tracefs_sys_instance_start(tfs);
	close(gate[1]); /* go */
	do
		n = read(exec_err[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(exec_err[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	if (n == (ssize_t)sizeof(err)) {
		info_err("cannot run %s: %s", argv[0], strerror(err));
		return -err;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

static char *
svg_path_for(const char *json)
{
	size_t n = strlen(json);
	char *p;

	if (n > 5 && strcmp(json + n - 5, ".json") == 0) {
		p = malloc(n);
		if (p) {
			memcpy(p, json, n - 5);
			strcpy(p + n - 5, ".svg");
		}
		return p;
	}
	if (asprintf(&p, "%s.svg", json) < 0)
		return NULL;
	return p;
}

/* Write one output file with `write`. Returns 0, -errno if it could not be created, -EIO. */
static int
write_output(const char *path, const struct tr_model *m, const struct tr_meta *meta,
	     int (*write)(const struct tr_model *, const struct tr_meta *, FILE *))
{
	FILE *f = fopen(path, "we");
	int ret;

	if (!f) {
		ret = -errno;
		info_err("%s: %s", path, strerror(-ret));
		return ret;
	}
	ret = write(m, meta, f);
	if (fclose(f) != 0 || ret < 0) {
		info_err("%s: write failed", path);
		return -EIO;
	}
	return 0;
}

static int
write_outputs(const struct tr_model *m, const struct tr_meta *meta, const char *json_path,
	      const char *svg_path)
{
	int ret = write_output(json_path, m, meta, tr_write_chrome_json);

	if (ret < 0 && ret != -EIO)
		return ret; /* no JSON file at all: no SVG either */
	if (write_output(svg_path, m, meta, tr_write_svg) < 0)
		return -EIO;
	return ret;
}

static void
summary(const struct tr_model *m, const struct tr_meta *meta, const char *json_path,
	const char *svg_path, const struct info_opts *o)
{
	size_t shown = 0, signalled = 0, pending = 0;

	for (size_t i = 0; i < m->nfences; i++) {
		if (m->fences[i].hidden || m->fences[i].from_marker)
			continue;
		shown++;
		if (m->fences[i].signaled_ns != TR_NONE)
			signalled++;
		else
			pending++;
	}
	if (o->json) {
		struct json_object *doc = json_object_new_object();

		json_object_object_add(doc, "json", info_json_str(json_path));
		json_object_object_add(doc, "svg", info_json_str(svg_path));
		json_object_object_add(doc, "exit_status", meta->exit_status >= 0 ?
				       json_object_new_int(meta->exit_status) : NULL);
		json_object_object_add(doc, "duration_ms",
				       info_json_fixed((double)(m->end_ns - m->begin_ns) / 1e6, 3));
		json_object_object_add(doc, "fences", json_object_new_uint64(shown));
		json_object_object_add(doc, "signalled", json_object_new_uint64(signalled));
		json_object_object_add(doc, "unsignalled", json_object_new_uint64(pending));
		json_object_object_add(doc, "timelines", json_object_new_uint64(m->ntracks));
		json_object_object_add(doc, "waits", json_object_new_uint64(m->nwaits));
		json_object_object_add(doc, "blocking_syscalls",
				       json_object_new_uint64(m->nblocks));
		json_object_object_add(doc, "markers", json_object_new_uint64(m->nmarkers));
		json_object_object_add(doc, "lost_events",
				       json_object_new_int64(tr_model_lost_events(m)));
		info_json_print(doc);
		return;
	}
	fprintf(stderr,
		INFO_PROG ": trace: %.1f ms, %zu fence%s on %zu timeline%s (%zu signalled, "
		"%zu not), %zu wait%s, %zu poll-family call%s, %zu marker%s\n",
		(double)(m->end_ns - m->begin_ns) / 1e6, shown, shown == 1 ? "" : "s", m->ntracks,
		m->ntracks == 1 ? "" : "s", signalled, pending, m->nwaits,
		m->nwaits == 1 ? "" : "s", m->nblocks, m->nblocks == 1 ? "" : "s", m->nmarkers,
		m->nmarkers == 1 ? "" : "s");
	fprintf(stderr, INFO_PROG ": trace: wrote %s (open in https://ui.perfetto.dev or "
			  "chrome://tracing) and %s\n",
		json_path, svg_path);
	if (tr_model_lost_events(m))
		fprintf(stderr,
			INFO_PROG ": trace: warning: %lld events were lost (ring buffer full): "
				  "rerun with a larger --buffer-kb\n",
			tr_model_lost_events(m));
	if (m->malformed)
		fprintf(stderr, INFO_PROG ": trace: warning: %lu lines could not be parsed\n",
			m->malformed);
}

void
info_help_trace(FILE *f)
{
	fprintf(f,
		"usage: " INFO_PROG " [--json] trace [options] -- CMD [ARGS...]\n"
		"       " INFO_PROG " [--json] trace --input TRACE.txt [options]\n"
		"Records the kernel's dma_fence events (tracefs events/dma_fence/*) while CMD "
		"runs.\n"
		"  -o, --output FILE   Chrome/Perfetto trace JSON (default syncbridge-trace.json)\n"
		"      --svg FILE      SVG timeline (default: FILE with .json replaced by .svg)\n"
		"      --text FILE     also keep the raw tracefs text\n"
		"      --input FILE    convert saved tracefs text instead of running a command\n"
		"      --buffer-kb N   ring buffer per CPU in KiB (default 4096)\n"
		"      --no-syscalls   do not record CMD's poll()/select()/epoll_wait() calls\n"
		"      --svg-window all|markers  the SVG shows the whole run (default) or only\n"
		"                      from the first marker to the last (e.g. past a slow start)\n"
		"CMD runs with SYNCBRIDGE_TRACE=1 and "
		"SYNCBRIDGE_TRACE_MARKER=<instance>/trace_marker;\n"
		"lines \"syncbridge: NAME [k=v...]\" written there become markers.\n"
		"Needs root (tracefs); --input does not. SYNCBRIDGE_TRACEFS names tracefs's mount\n"
		"point (default /sys/kernel/tracing, then /sys/kernel/debug/tracing).\n"
		"Exit status: CMD's (128+N if a signal ended it); 1 if tracing failed, or\n"
		"--input FILE is not tracefs text; 2 usage; 127 CMD not found, 126 CMD could not\n"
		"be run.\n");
}

/*
 * demo_opt_parse()'s usage: the help for --help (stdout); after an error
 * (stderr) only where to find it, so every line on stderr is a message
 * with the tool's prefix.
 */
static void
trace_usage(FILE *f)
{
	if (f == stdout)
		info_help_trace(f);
	else
		fprintf(f, INFO_PROG ": trace: see: " INFO_PROG " help trace\n");
}

static int
parse_trace_opts(int argc, char **argv, struct trace_opts *t)
{
	static const char *const windows[] = { "all", "markers", NULL };
	unsigned buffer_kb = 4096;
	int window = 0, first;
	bool no_syscalls = false;
	const struct demo_opt opts[] = {
		{ "output", DEMO_OPT_STRING, &t->output, .short_name = 'o' },
		{ "svg", DEMO_OPT_STRING, &t->svg },
		{ "text", DEMO_OPT_STRING, &t->text },
		{ "input", DEMO_OPT_STRING, &t->input },
		{ "buffer-kb", DEMO_OPT_UINT, &buffer_kb, 64, 1L << 21 },
		{ "no-syscalls", DEMO_OPT_FLAG, &no_syscalls },
		{ "svg-window", DEMO_OPT_WORD, &window, .words = windows },
		{ NULL },
	};

	*t = (struct trace_opts){ .output = "syncbridge-trace.json" };
	first = demo_opt_parse(INFO_PROG, argc, argv, opts, trace_usage, DEMO_OPT_OPERANDS);
	if (first < 0)
		return -EINVAL;
	t->buffer_kb = buffer_kb;
	t->syscalls = !no_syscalls;
	t->svg_markers_window = window == 1;
	if (t->input) {
		if (first < argc) {
			info_usage_err("trace", "--input takes no command");
			return -EINVAL;
		}
		return 0;
	}
	if (first >= argc) {
		info_usage_err("trace", "no command to run (" INFO_PROG " trace -- CMD ...)");
		return -EINVAL;
	}
	t->argv = argv + first;
	return 0;
}

/*
 * Run the command while tracing into tfs; m's window is its life. Returns 0
 * with *in open on the recorded trace, or the exit status after saying why.
 */
static int
record(const struct trace_opts *t, struct tracefs *tfs, struct tr_model *m, struct tr_meta *meta,
       FILE **in)
{
	char path[PATH_MAX + 16];
	int64_t begin, end;
	int status;

	if (tracefs_find(tfs) < 0)
		return INFO_EXIT_FAIL;
	tracefs_remove_stale_instances(tfs);
	if (tracefs_instance_create(tfs, t->buffer_kb) < 0)
		return INFO_EXIT_FAIL;
	if (t->syscalls)
		tracefs_sys_instance_create(tfs, t->buffer_kb);
	snprintf(path, sizeof(path), "%s/trace_marker", tfs->instance);
	begin = now_ns();
	status = run_command(t->argv, path, tfs, m);
	end = now_ns();
	tracefs_instance_stop(tfs);
	if (status < 0)
		return status == -ENOENT ? 127 : 126;
	if (strcmp(tfs->clock, "mono") == 0) {
		/* the window is the command's life, in the trace's own clock */
		m->begin_ns = begin;
		m->end_ns = end;
	}
	meta->argv = (const char *const *)t->argv;
	meta->exit_status = status;
	meta->clock = tfs->clock;
	snprintf(path, sizeof(path), "%s/trace", tfs->instance);
	*in = fopen(path, "re");
	if (!*in) {
		info_err("%s: %s", path, strerror(errno));
		return INFO_EXIT_FAIL;
	}
	return 0;
}

/*
 * Feed the trace `in` (closed here), then the syscall instance's if any, to
 * m, keeping the raw text in --text FILE. Returns 0 or -EIO.
 */
static int
read_trace(const struct trace_opts *t, const struct tracefs *tfs, struct tr_model *m, FILE *in)
{
	char path[PATH_MAX + 16];
	FILE *raw = NULL;
	int ret;

	if (t->text) {
		raw = fopen(t->text, "we");
		if (!raw)
			info_err("warning: %s: %s", t->text, strerror(errno));
	}
	ret = tr_model_feed_file(m, in, raw);
	fclose(in);
	if (ret == 0 && tfs->sys_instance[0]) {
		/* the syscall instance: same clock, its own buffer */
		snprintf(path, sizeof(path), "%s/trace", tfs->sys_instance);
		in = fopen(path, "re");
		if (in) {
			if (raw && m->nfollowed)
				fprintf(raw,
					"# syncbridge-info: poll-family syscalls of the command "
					"(instance %s)\n# syncbridge-info: command pid %d\n",
					tfs->sys_instance, m->followed[0]);
			ret = tr_model_feed_file(m, in, raw);
			fclose(in);
		}
	}
	if (raw && fclose(raw) != 0)
		info_err("warning: %s: write failed", t->text);
	return ret;
}

int
info_cmd_trace(int argc, char **argv, const struct info_opts *o)
{
	struct trace_opts t;
	struct tracefs tfs = { .clock = "unknown" };
	struct tr_model m;
	struct tr_meta meta = { .tool_version = sb_library_get_version(), .exit_status = -1 };
	char *svg;
	FILE *in = NULL;
	int ret;

	if (parse_trace_opts(argc, argv, &t) < 0)
		return INFO_EXIT_USAGE;
	meta.svg_markers_window = t.svg_markers_window;
	svg = t.svg ? strdup(t.svg) : svg_path_for(t.output);
	if (!svg)
		return INFO_EXIT_FAIL;
	tr_model_init(&m);

	if (t.input) {
		in = fopen(t.input, "re");
		if (!in) {
			info_err("%s: %s", t.input, strerror(errno));
			ret = INFO_EXIT_FAIL;
			goto out;
		}
		meta.input = t.input;
		meta.clock = "unknown";
	} else {
		ret = record(&t, &tfs, &m, &meta, &in);
		if (ret != 0)
			goto out;
	}
	ret = read_trace(&t, &tfs, &m, in);
	tracefs_instance_remove(&tfs);
	if (ret < 0) {
		info_err("reading the trace failed");
		ret = INFO_EXIT_FAIL;
		goto out;
	}
	if (t.input && !m.events && m.entries_in_buffer < 0) {
		/* neither an event nor tracefs's header: some other file, not an empty trace */
		info_err("trace: %s is not tracefs text (no events and no tracefs header; "
			 "'" INFO_PROG " trace --text FILE' saves one)",
			 t.input);
		ret = INFO_EXIT_FAIL;
		goto out;
	}
	if (tr_model_finish(&m) < 0) {
		info_err("out of memory");
		ret = INFO_EXIT_FAIL;
		goto out;
	}
	if (write_outputs(&m, &meta, t.output, svg) < 0) {
		ret = INFO_EXIT_FAIL;
		goto out;
	}
	summary(&m, &meta, t.output, svg, o);
	ret = t.input ? INFO_EXIT_OK : meta.exit_status;
out:
	tracefs_instance_remove(&tfs);
	tr_model_free(&m);
	free(svg);
	return ret;
}
