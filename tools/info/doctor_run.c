/* SPDX-License-Identifier: MIT */
/*
 * doctor's findings (yes / no / unknown with a reason) and its probes in
 * child processes: a driver that hangs in a submit or a fence wait costs the
 * probe's time limit, then the child is killed and the finding says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doctor.h"
#include "info.h"

const char *
doctor_tri_word(enum doctor_tri v)
{
	return v == DOCTOR_YES ? "yes" : v == DOCTOR_NO ? "no" : "unknown";
}

void
doctor_item_set(struct doctor_item *it, enum doctor_tri v, const char *fmt, ...)
{
	va_list ap;

	it->v = v;
	va_start(ap, fmt);
	vsnprintf(it->why, sizeof(it->why), fmt, ap);
	va_end(ap);
}

struct json_object *
doctor_item_json(const struct doctor_item *it)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "value", json_object_new_string(doctor_tri_word(it->v)));
	json_object_object_add(o, "why", info_json_str(it->why));
	return o;
}

void
doctor_item_print(FILE *f, const char *indent, const char *label, const struct doctor_item *it)
{
	fprintf(f, "%s%-26s %s%s%s%s\n", indent, label, doctor_tri_word(it->v),
		it->why[0] ? " (" : "", it->why, it->why[0] ? ")" : "");
}

/* The test hook: SYNCBRIDGE_DOCTOR_TEST_HANG names probes ("vulkan", "egl",
 * "layer", "all", comma-separated) whose child sleeps instead of probing. */
static bool
hang_asked(const char *name)
{
	const char *v = getenv("SYNCBRIDGE_DOCTOR_TEST_HANG");
	char list[256], *save = NULL;

	if (!v || !*v)
		return false;
	snprintf(list, sizeof(list), "%s", v);
	for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save))
		if (strcmp(w, name) == 0 || strcmp(w, "all") == 0)
			return true;
	return false;
}

static void
child_main(int wfd, const char *name, void (*fn)(void *out, const void *arg), const void *arg,
	   void *out, size_t size)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	const char *p;
	size_t left = size;

	/* drivers talk on stderr (Mesa's warnings): doctor's own output says
	 * what the probe found, so a probe's chatter goes nowhere */
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
	}
	/* a probe loads drivers: no shader cache thread or files for a few
	 * throwaway submits (shared facts: lavapipe's cache thread per device) */
	setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
	if (hang_asked(name))
		for (;;)
			pause();
	fn(out, arg);
	for (p = out; left > 0;) {
		ssize_t n = write(wfd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(1);
		p += n;
		left -= (size_t)n;
	}
	_exit(0);
}

/* Read size bytes from fd before deadline (CLOCK_MONOTONIC ns): 0, -ETIME, -EPIPE. */
static int
read_all(int fd, char *buf, size_t size, int64_t deadline)
{
	size_t got = 0;

	while (got < size) {
		int64_t left = deadline - now_ns();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r;

		if (left <= 0)
			return -ETIME;
		r = poll(&p, 1, (int)((left + 999999) / 1000000));
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return -ETIME;
		ssize_t n = read(fd, buf + got, size - got);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -EPIPE;
		got += (size_t)n;
	}
	return 0;
}

/*
 * Wait for the child. One that was killed may sit in an ioctl of a stuck
 * driver, where SIGKILL waits for the ioctl: give it a second, then leave it
 * (init reaps it once we exit) rather than hang with it.
 */
static bool
reap(pid_t pid, int *status, bool killed)
{
	for (int i = 0; !killed || i < 100; i++) {
		pid_t r = waitpid(pid, status, killed ? WNOHANG : 0);

		if (r == pid)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
		if (r == 0)
			usleep(10000);
	}
	return false;
}

int
doctor_run(const char *name, void (*fn)(void *out, const void *arg), const void *arg, void *out,
	   size_t size, int timeout_ms, char *why, size_t why_len)
{
	int fds[2], status = 0, ret;
	bool reaped;
	char *buf;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(why, why_len, "pipe: %s", strerror(errno));
		return -errno;
	}
	buf = malloc(size);
	if (buf)
		memcpy(buf, out, size); /* the child starts from the caller's struct */
	fflush(NULL);
	pid = buf ? fork() : -1;
	if (pid == 0) {
		close(fds[0]);
		child_main(fds[1], name, fn, arg, buf, size);
	}
	close(fds[1]);
	if (pid < 0) {
		ret = buf ? -errno : -ENOMEM;
		snprintf(why, why_len, "could not start the probe: %s", strerror(-ret));
		close(fds[0]);
		free(buf);
		return ret;
	}
	ret = read_all(fds[0], buf, size, now_ns() + (int64_t)timeout_ms * 1000000);
	close(fds[0]);
	if (ret == -ETIME)
		kill(pid, SIGKILL);
	reaped = reap(pid, &status, ret == -ETIME);
	if (ret == -ETIME)
		snprintf(why, why_len, "the %s probe did not answer in %d ms (%s)", name,
			 timeout_ms, reaped ? "killed" : "killed, but it is stuck in the kernel");
	else if (ret < 0 && WIFSIGNALED(status))
		snprintf(why, why_len, "the %s probe died of signal %d (%s)", name,
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	else if (ret < 0)
		snprintf(why, why_len, "the %s probe exited with status %d before answering", name,
			 WEXITSTATUS(status));
	else
		memcpy(out, buf, size);
	free(buf);
	return ret;
}
