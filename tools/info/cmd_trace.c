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
 * kernel). So a second instance (….sys) records the poll-family syscalls of
 * CMD and its descendants only (set_event_pid + options/event-fork; the
 * child waits on a pipe until its pid is in place), to show who blocked
 * when. --no-syscalls leaves it out.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "info.h"
#include "trace_output.h"

#define INSTANCE_PREFIX "syncbridge-info."

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

struct tracefs {
	char root[PATH_MAX];     /* the tracefs mount */
	char instance[PATH_MAX]; /* our instance directory, "" if none */
	char sys_instance[PATH_MAX]; /* the syscall instance, "" if none */
	char clock[32];
};

/* The syscalls by which userspace blocks on fds (sync_files, dma-bufs, eventfds). */
static const char *const poll_syscalls[] = {
	"poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2",
};

static int64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
write_file(const char *dir, const char *name, const char *value)
{
	char path[PATH_MAX];
	size_t len = strlen(value);
	ssize_t n;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_TRUNC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, len);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != len)
		ret = -EIO;
	close(fd);
	return ret;
}

static bool
is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 0 if dir/name exists, else -errno (-EACCES: dir not searchable by us). */
static int
has_file(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0 ? 0 : -errno;
}

/* Find a mounted tracefs; explain what is missing otherwise. */
static int
tracefs_find(struct tracefs *tfs)
{
	const char *env = getenv("SYNCBRIDGE_TRACEFS");
	const char *candidates[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[PATH_MAX];
	bool denied = false;
	int ret;

	if (env && *env) {
		ret = has_file(env, "trace");
		if (ret == -EACCES || ret == -EPERM) {
			info_err("%s: permission denied: tracing needs root", env);
			return ret;
		}
		if (ret < 0) {
			info_err("SYNCBRIDGE_TRACEFS=%s is not a tracefs mount (no 'trace' file there)",
				 env);
			return -ENOENT;
		}
		snprintf(tfs->root, sizeof(tfs->root), "%s", env);
	} else {
		tfs->root[0] = '\0';
		for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
			ret = has_file(candidates[i], "trace");
			if (ret == 0) {
				snprintf(tfs->root, sizeof(tfs->root), "%s", candidates[i]);
				break;
			}
			denied |= ret == -EACCES || ret == -EPERM;
		}
		if (!tfs->root[0]) {
			if (denied)
				info_err("tracefs: permission denied: tracing needs root");
			else
				info_err("tracefs is not mounted (as root: mount -t tracefs nodev "
					 "/sys/kernel/tracing), or this kernel has no tracing "
					 "(CONFIG_FTRACE)");
			return denied ? -EACCES : -ENOENT;
		}
	}
	snprintf(path, sizeof(path), "%s/trace", tfs->root);
	if (access(path, R_OK | W_OK) != 0) {
		int err = errno;

		info_err("%s: %s: tracing needs root (or write access to tracefs)", path,
			 strerror(err));
		return -err;
	}
	snprintf(path, sizeof(path), "%s/events/dma_fence", tfs->root);
	if (!is_dir(path)) {
		info_err("%s is missing: this kernel has no dma_fence tracepoints (it needs "
			 "CONFIG_DMA_SHARED_BUFFER and CONFIG_TRACING)",
			 path);
		return -ENOENT;
	}
	return 0;
}

/* Remove instances left behind by a syncbridge-info that was killed. */
static void
remove_stale_instances(const struct tracefs *tfs)
{
	char dir[PATH_MAX], path[PATH_MAX * 2];
	DIR *d;
	struct dirent *e;

	snprintf(dir, sizeof(dir), "%s/instances", tfs->root);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(e->d_name, INSTANCE_PREFIX, strlen(INSTANCE_PREFIX)) != 0)
			continue;
		pid = strtol(e->d_name + strlen(INSTANCE_PREFIX), &end, 10);
		if ((*end && strcmp(end, ".sys") != 0) || pid <= 0 || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		rmdir(path);
	}
	closedir(d);
}

static void
read_clock(struct tracefs *tfs)
{
	char path[PATH_MAX + 16], *text, *l, *r;

	snprintf(tfs->clock, sizeof(tfs->clock), "unknown");
	snprintf(path, sizeof(path), "%s/trace_clock", tfs->instance);
	if (read_text_file(path, &text, NULL) < 0)
		return;
	l = strchr(text, '[');
	r = l ? strchr(l, ']') : NULL;
	if (l && r) {
		*r = '\0';
		snprintf(tfs->clock, sizeof(tfs->clock), "%s", l + 1);
	}
	free(text);
}

static int
instance_create(struct tracefs *tfs, unsigned long buffer_kb)
{
	char buf[32];
	int ret;

	snprintf(tfs->instance, sizeof(tfs->instance), "%s/instances/" INSTANCE_PREFIX "%d",
		 tfs->root, (int)getpid());
	if (mkdir(tfs->instance, 0700) < 0 && errno != EEXIST) {
		ret = -errno;
		info_err("cannot create the tracefs instance %s: %s%s", tfs->instance, strerror(-ret),
			 ret == -EACCES || ret == -EPERM ? " (tracing needs root)" : "");
		tfs->instance[0] = '\0';
		return ret;
	}
	/* CLOCK_MONOTONIC, like sync_file timestamps; older kernels: keep the default */
	write_file(tfs->instance, "trace_clock", "mono");
	read_clock(tfs);
	write_file(tfs->instance, "options/record-tgid", "1");
	snprintf(buf, sizeof(buf), "%lu", buffer_kb);
	if (write_file(tfs->instance, "buffer_size_kb", buf) < 0)
		info_err("warning: could not set the ring buffer to %lu KiB per CPU", buffer_kb);
	write_file(tfs->instance, "trace", "");
	ret = write_file(tfs->instance, "events/dma_fence/enable", "1");
	if (ret < 0) {
		info_err("%s/events/dma_fence/enable: %s", tfs->instance, strerror(-ret));
		return ret;
	}
	ret = write_file(tfs->instance, "tracing_on", "1");
	if (ret < 0) {
		info_err("%s/tracing_on: %s", tfs->instance, strerror(-ret));
		return ret;
	}
	return 0;
}

/*
 * The syscall instance: poll-family enter/exit events, limited to the pids
 * in set_event_pid and their descendants (event-fork). Optional: without
 * syscall tracepoints (CONFIG_FTRACE_SYSCALLS) the trace just lacks them.
 */
static void
sys_instance_create(struct tracefs *tfs, unsigned long buffer_kb)
{
	char buf[64];
	int enabled = 0;

	snprintf(tfs->sys_instance, sizeof(tfs->sys_instance),
		 "%s/instances/" INSTANCE_PREFIX "%d.sys", tfs->root, (int)getpid());
	if (mkdir(tfs->sys_instance, 0700) < 0 && errno != EEXIST) {
		tfs->sys_instance[0] = '\0';
		return;
	}
	write_file(tfs->sys_instance, "tracing_on", "0");
	write_file(tfs->sys_instance, "trace_clock", tfs->clock);
	write_file(tfs->sys_instance, "options/record-tgid", "1");
	snprintf(buf, sizeof(buf), "%lu", buffer_kb / 4 > 256 ? buffer_kb / 4 : 256);
	write_file(tfs->sys_instance, "buffer_size_kb", buf);
	if (write_file(tfs->sys_instance, "options/event-fork", "1") == 0) {
		for (size_t i = 0; i < sizeof(poll_syscalls) / sizeof(poll_syscalls[0]); i++) {
			snprintf(buf, sizeof(buf), "events/syscalls/sys_enter_%s/enable", poll_syscalls[i]);
			if (write_file(tfs->sys_instance, buf, "1") < 0)
				continue;
			snprintf(buf, sizeof(buf), "events/syscalls/sys_exit_%s/enable", poll_syscalls[i]);
			if (write_file(tfs->sys_instance, buf, "1") == 0)
				enabled++;
		}
	}
	if (!enabled) {
		rmdir(tfs->sys_instance);
		tfs->sys_instance[0] = '\0';
	}
}

/* Called with the command's pid before it may exec: follow it and its children. */
static void
sys_instance_follow(struct tracefs *tfs, pid_t pid)
{
	char buf[32];

	if (!tfs->sys_instance[0])
		return;
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	if (write_file(tfs->sys_instance, "set_event_pid", buf) < 0 ||
	    write_file(tfs->sys_instance, "tracing_on", "1") < 0) {
		rmdir(tfs->sys_instance);
		tfs->sys_instance[0] = '\0';
	}
}

static void
instance_stop(struct tracefs *tfs)
{
	if (tfs->instance[0]) {
		write_file(tfs->instance, "tracing_on", "0");
		write_file(tfs->instance, "events/dma_fence/enable", "0");
	}
	if (tfs->sys_instance[0]) {
		write_file(tfs->sys_instance, "tracing_on", "0");
		write_file(tfs->sys_instance, "events/enable", "0");
	}
}

static void
instance_remove(struct tracefs *tfs)
{
	instance_stop(tfs);
	if (tfs->instance[0] && rmdir(tfs->instance) < 0)
		info_err("warning: could not remove %s: %s", tfs->instance, strerror(errno));
	if (tfs->sys_instance[0] && rmdir(tfs->sys_instance) < 0)
		info_err("warning: could not remove %s: %s", tfs->sys_instance, strerror(errno));
	tfs->instance[0] = tfs->sys_instance[0] = '\0';
}

/*
 * Run argv; returns its exit status (128+N for a signal), or -errno if it
 * could not start. The child waits on a pipe until follow() has seen its pid.
 */
static int
run_command(char **argv, const char *marker_path, struct tracefs *tfs)
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
	sys_instance_follow(tfs, pid);
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

static int
write_outputs(const struct tr_model *m, const struct tr_meta *meta, const char *json_path,
	      const char *svg_path)
{
	FILE *f;
	int ret = 0;

	f = fopen(json_path, "we");
	if (!f) {
		info_err("%s: %s", json_path, strerror(errno));
		return -1;
	}
	if (tr_write_chrome_json(m, meta, f) < 0)
		ret = -1;
	if (fclose(f) != 0 || ret < 0) {
		info_err("%s: write failed", json_path);
		ret = -1;
	}
	f = fopen(svg_path, "we");
	if (!f) {
		info_err("%s: %s", svg_path, strerror(errno));
		return -1;
	}
	if (tr_write_svg(m, meta, f) < 0)
		ret = -1;
	if (fclose(f) != 0 || ret < 0) {
		info_err("%s: write failed", svg_path);
		ret = -1;
	}
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
		json_object_object_add(doc, "exit_status", meta->exit_status >= 0
								   ? json_object_new_int(meta->exit_status)
								   : NULL);
		json_object_object_add(doc, "duration_ms",
				       info_json_fixed((double)(m->end_ns - m->begin_ns) / 1e6, 3));
		json_object_object_add(doc, "fences", json_object_new_uint64(shown));
		json_object_object_add(doc, "signalled", json_object_new_uint64(signalled));
		json_object_object_add(doc, "unsignalled", json_object_new_uint64(pending));
		json_object_object_add(doc, "timelines", json_object_new_uint64(m->ntracks));
		json_object_object_add(doc, "waits", json_object_new_uint64(m->nwaits));
		json_object_object_add(doc, "blocking_syscalls", json_object_new_uint64(m->nblocks));
		json_object_object_add(doc, "markers", json_object_new_uint64(m->nmarkers));
		json_object_object_add(doc, "lost_events",
				       json_object_new_int64(tr_model_lost_events(m)));
		info_json_print(doc);
		return;
	}
	fprintf(stderr,
		INFO_PROG ": trace: %.1f ms, %zu fence%s on %zu timeline%s (%zu signalled, %zu not), "
			  "%zu wait%s, %zu poll-family call%s, %zu marker%s\n",
		(double)(m->end_ns - m->begin_ns) / 1e6, shown, shown == 1 ? "" : "s", m->ntracks,
		m->ntracks == 1 ? "" : "s", signalled, pending, m->nwaits, m->nwaits == 1 ? "" : "s",
		m->nblocks, m->nblocks == 1 ? "" : "s", m->nmarkers, m->nmarkers == 1 ? "" : "s");
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

/* Feed every line of in to the model (and copy it to raw). Returns 0 or -EIO. */
static int
feed(struct tr_model *m, FILE *in, FILE *raw)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	while ((n = getline(&line, &cap, in)) >= 0) {
		if (raw)
			fwrite(line, 1, (size_t)n, raw);
		if (n > 0 && line[n - 1] == '\n')
			line[n - 1] = '\0';
		tr_model_feed_line(m, line);
	}
	free(line);
	return ferror(in) ? -EIO : 0;
}

static void
trace_usage(FILE *f)
{
	fprintf(f,
		"usage: " INFO_PROG " [--json] trace [options] -- CMD [ARGS...]\n"
		"       " INFO_PROG " [--json] trace --input TRACE.txt [options]\n"
		"Records the kernel's dma_fence events (tracefs events/dma_fence/*) while CMD runs.\n"
		"  -o, --output FILE   Chrome/Perfetto trace JSON (default syncbridge-trace.json)\n"
		"      --svg FILE      SVG timeline (default: FILE with .json replaced by .svg)\n"
		"      --text FILE     also keep the raw tracefs text\n"
		"      --input FILE    convert saved tracefs text instead of running a command\n"
		"      --buffer-kb N   ring buffer per CPU in KiB (default 4096)\n"
		"      --no-syscalls   do not record CMD's poll()/select()/epoll_wait() calls\n"
		"      --svg-window all|markers  the SVG shows the whole run (default) or only\n"
		"                      from the first marker to the last (e.g. past a slow start)\n"
		"CMD runs with SYNCBRIDGE_TRACE=1 and SYNCBRIDGE_TRACE_MARKER=<instance>/trace_marker;\n"
		"lines \"syncbridge: NAME [k=v...]\" written there become markers.\n"
		"Exit status: CMD's (128+N if a signal ended it); 1 if tracing failed; 2 usage;\n"
		"127 CMD not found, 126 CMD could not be run.\n");
}

static int
parse_trace_opts(int argc, char **argv, struct trace_opts *t)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "svg", required_argument, NULL, 's' },
		{ "text", required_argument, NULL, 't' },
		{ "input", required_argument, NULL, 'i' },
		{ "buffer-kb", required_argument, NULL, 'b' },
		{ "no-syscalls", no_argument, NULL, 'n' },
		{ "svg-window", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	*t = (struct trace_opts){ .output = "syncbridge-trace.json", .buffer_kb = 4096,
				  .syscalls = true };
	optind = 1;
	/* "+": stop at the first non-option, so CMD's own options stay CMD's */
	while ((c = getopt_long(argc, argv, "+o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			t->output = optarg;
			break;
		case 's':
			t->svg = optarg;
			break;
		case 't':
			t->text = optarg;
			break;
		case 'i':
			t->input = optarg;
			break;
		case 'b': {
			char *end;

			errno = 0;
			t->buffer_kb = strtoul(optarg, &end, 10);
			if (errno || *end || t->buffer_kb < 64 || t->buffer_kb > (1UL << 21)) {
				info_err("trace: --buffer-kb: want 64-2097152, got '%s'", optarg);
				return -EINVAL;
			}
			break;
		}
		case 'w':
			if (strcmp(optarg, "markers") == 0) {
				t->svg_markers_window = true;
			} else if (strcmp(optarg, "all") == 0) {
				t->svg_markers_window = false;
			} else {
				info_err("trace: --svg-window: want 'all' or 'markers', got '%s'", optarg);
				return -EINVAL;
			}
			break;
		case 'n':
			t->syscalls = false;
			break;
		case 'h':
			trace_usage(stdout);
			exit(INFO_EXIT_OK);
		default:
			trace_usage(stderr);
			return -EINVAL;
		}
	}
	if (t->input) {
		if (optind < argc) {
			info_err("trace: --input takes no command");
			return -EINVAL;
		}
		return 0;
	}
	if (optind >= argc) {
		info_err("trace: no command to run (syncbridge-info trace -- CMD ...)");
		trace_usage(stderr);
		return -EINVAL;
	}
	t->argv = argv + optind;
	return 0;
}

int
info_cmd_trace(int argc, char **argv, const struct info_opts *o)
{
	struct trace_opts t;
	struct tracefs tfs = { .clock = "unknown" };
	struct tr_model m;
	struct tr_meta meta = { .tool_version = sb_version(), .exit_status = -1 };
	char *svg = NULL, path[PATH_MAX + 16];
	FILE *in, *raw = NULL;
	int status = -1, ret;

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
			free(svg);
			return INFO_EXIT_FAIL;
		}
		meta.input = t.input;
		meta.clock = "unknown";
	} else {
		int64_t begin, end;

		if (tracefs_find(&tfs) < 0) {
			free(svg);
			return INFO_EXIT_FAIL;
		}
		remove_stale_instances(&tfs);
		if (instance_create(&tfs, t.buffer_kb) < 0) {
			instance_remove(&tfs);
			free(svg);
			return INFO_EXIT_FAIL;
		}
		if (t.syscalls)
			sys_instance_create(&tfs, t.buffer_kb);
		snprintf(path, sizeof(path), "%s/trace_marker", tfs.instance);
		begin = mono_ns();
		status = run_command(t.argv, path, &tfs);
		end = mono_ns();
		instance_stop(&tfs);
		if (status < 0) {
			instance_remove(&tfs);
			free(svg);
			return status == -ENOENT ? 127 : 126;
		}
		if (strcmp(tfs.clock, "mono") == 0) {
			/* the window is the command's life, in the trace's own clock */
			m.begin_ns = begin;
			m.end_ns = end;
		}
		meta.argv = (const char *const *)t.argv;
		meta.exit_status = status;
		meta.clock = tfs.clock;
		snprintf(path, sizeof(path), "%s/trace", tfs.instance);
		in = fopen(path, "re");
		if (!in) {
			info_err("%s: %s", path, strerror(errno));
			instance_remove(&tfs);
			free(svg);
			return INFO_EXIT_FAIL;
		}
	}

	if (t.text) {
		raw = fopen(t.text, "we");
		if (!raw)
			info_err("warning: %s: %s", t.text, strerror(errno));
	}
	ret = feed(&m, in, raw);
	fclose(in);
	if (ret == 0 && tfs.sys_instance[0]) {
		/* the syscall instance: same clock, its own buffer */
		snprintf(path, sizeof(path), "%s/trace", tfs.sys_instance);
		in = fopen(path, "re");
		if (in) {
			if (raw)
				fprintf(raw, "# syncbridge-info: poll-family syscalls of the command "
					     "(instance %s)\n",
					tfs.sys_instance);
			ret = feed(&m, in, raw);
			fclose(in);
		}
	}
	if (raw && fclose(raw) != 0)
		info_err("warning: %s: write failed", t.text);
	instance_remove(&tfs);
	if (ret < 0) {
		info_err("reading the trace failed");
		tr_model_free(&m);
		free(svg);
		return INFO_EXIT_FAIL;
	}
	if (tr_model_finish(&m) < 0) {
		info_err("out of memory");
		tr_model_free(&m);
		free(svg);
		return INFO_EXIT_FAIL;
	}
	ret = write_outputs(&m, &meta, t.output, svg);
	if (ret == 0)
		summary(&m, &meta, t.output, svg, o);
	tr_model_free(&m);
	free(svg);
	if (ret < 0)
		return INFO_EXIT_FAIL;
	return t.input ? INFO_EXIT_OK : status;
}
