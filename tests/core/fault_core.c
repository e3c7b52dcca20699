/* SPDX-License-Identifier: MIT */
/*
 * fault-core (VM tier): every public core function that reaches the kernel,
 * against real objects (vgem fences and buffers, udmabuf, virtio_gpu
 * syncobjs), with each of its calls into the kernel and libc made to fail in
 * turn by libsbfault (testbed/sbfault.h):
 *
 *   1. a dry run counts the calls the function makes (ioctl, eventfd, dup,
 *      pthread_create, malloc, calloc) and notes the ioctl requests;
 *   2. for every counted call N and every error E for its kind, a fresh
 *      child process sets the objects up again, fails call N with E, and
 *      checks that
 *      - it did not crash (the child exits normally),
 *      - the fault was hit (exactly one injection),
 *      - the return value is one the header documents for the function, or
 *        E itself passed through unchanged (counted and listed as
 *        "undocumented pass-through"); EINTR and EAGAIN must be invisible
 *        (sb_ioctl retries them): the same result as the dry run,
 *      - out-parameters are -1 / NULL on failure, the accumulator unchanged,
 *      - no fd leaked, no fd that was open before was closed or swapped
 *        (testbed/fd_snapshot.h), no close() hit a closed fd (EBADF),
 *      - a syncobj waiter that was created anyway still fires.
 *   Each case runs in its own process: a fault can flip the library's
 *   one-time kernel probes (ENOTTY on a dma-buf means "kernel < 6.0"), and a
 *   crash must not take the other cases with it.
 *
 *   fault-core [--only SCENARIO-SUBSTRING] [--list] [--verbose]
 *
 * The objects and the scenarios: fault_core_cases.c (fault_core.h).
 */
#include <dlfcn.h>
#include <sys/wait.h>

#include "vmtest.h"
#include "fault_core.h"
#include "fd_snapshot.h"
#include "sbfault.h"

/* The kinds of call we fail, and the errors each is failed with. */
static const struct {
	const char *fn;
	const int *errs;
} kinds[] = {
	{ "ioctl", ERRS(ENOTTY, EINVAL, ENOMEM, EINTR, EAGAIN) },
	{ "eventfd", ERRS(EMFILE, ENOMEM) },
	{ "dup", ERRS(EMFILE) },
	{ "pthread_create", ERRS(EAGAIN) },
	{ "malloc", ERRS(ENOMEM) },
	{ "calloc", ERRS(ENOMEM) },
	{ "realloc", ERRS(ENOMEM) },
};
#define N_KINDS ((int)(sizeof(kinds) / sizeof(kinds[0])))

/* What a child reports back to the parent. */
struct report {
	int ret;
	unsigned calls[N_KINDS];
	unsigned long ioctls[16];
	unsigned injected;
	int failures;
	bool undocumented; /* returned the injected errno, not in the documented list */
	bool skipped;
};

static const char *
errname(int e)
{
	static char bufs[4][32];
	static int next;
	char *buf = bufs[next++ % 4];
	static const char *const names[] = {
		[EPERM] = "EPERM", [ENOENT] = "ENOENT", [EINTR] = "EINTR", [EIO] = "EIO",
		[EBADF] = "EBADF", [EAGAIN] = "EAGAIN", [ENOMEM] = "ENOMEM", [EBUSY] = "EBUSY",
		[EINVAL] = "EINVAL", [EMFILE] = "EMFILE", [ENOTTY] = "ENOTTY", [ETIME] = "ETIME",
		[EOPNOTSUPP] = "EOPNOTSUPP", [ENODEV] = "ENODEV",
	};

	if (e == 0)
		return "0";
	if (e < 0 && -e < (int)(sizeof(names) / sizeof(names[0])) && names[-e]) {
		snprintf(buf, sizeof(bufs[0]), "-%s", names[-e]);
		return buf;
	}
	if (e > 0 && e < (int)(sizeof(names) / sizeof(names[0])) && names[e])
		return names[e];
	snprintf(buf, sizeof(bufs[0]), "%d", e);
	return buf;
}

static bool
listed(const int *set, int v)
{
	for (; *set; set++)
		if (*set == v)
			return true;
	return false;
}

static void
cleanup_out(struct out *o)
{
	for (int i = 0; i < 2; i++)
		if (o->fds[i] >= 0)
			close(o->fds[i]);
	sb_sync_file_info_destroy(o->info);
	sb_syncobj_waiter_destroy(o->waiter);
	o->info = NULL;
	o->waiter = NULL;
}

/* Drop fd from a snapshot: it was closed on purpose. */
static void
snapshot_forget(struct tb_fd_snapshot *s, int fd)
{
	for (int i = 0; i < s->n; i++) {
		if (s->e[i].fd == fd) {
			memmove(&s->e[i], &s->e[i + 1], (size_t)(s->n - i - 1) * sizeof(s->e[0]));
			s->n--;
			return;
		}
	}
}

/*
 * In a child: set up, (snapshot), arm `schedule`, call, disarm, check.
 * dry: no checks beyond "it worked"; fills the counts.
 */
static void
run_case(const struct scenario *s, const char *schedule, int injected_err, const struct report *dry,
	 struct report *r)
{
	struct env e;
	struct out o = { .fds = { -1, -1 }, .acc = -1, .acc_before = -1 };
	struct tb_fd_snapshot before;
	int bad_fd = -1, ret;

	memset(r, 0, sizeof(*r));
	ret = fault_env_setup(&e, s->need_syncobj);
	if (ret == -ENODEV) {
		r->skipped = true;
		return;
	}
	REQUIRE(ret == 0, "%s: set-up failed: %s", s->name, strerror(-ret));
	if (s->acc_preset)
		o.acc = o.acc_before = fcntl(e.signalled, F_DUPFD_CLOEXEC, 0);
	REQUIRE(tb_fd_snapshot_take(&before) == 0, "fd snapshot");

	sbfault_arm(schedule);
	r->ret = s->call(&e, &o);
	sbfault_disarm();

	for (int k = 0; k < N_KINDS; k++)
		r->calls[k] = sbfault_calls(kinds[k].fn);
	for (unsigned i = 0; i < 16; i++)
		r->ioctls[i] = sbfault_ioctl_request(i);
	r->injected = sbfault_injected();

	int failures_before = tb_failures;
	const char *label = schedule && *schedule ? schedule : "dry run";

	if (!dry) {
		CHECK(r->ret == 0 || r->ret == -ETIME || listed(s->documented, r->ret),
		      "%s [%s]: returned %s", s->name, label, errname(r->ret));
	} else {
		/* sb_ioctl() retries EINTR and EAGAIN: invisible to the caller. */
		bool transparent = strncmp(schedule, "ioctl:", 6) == 0 &&
				   (injected_err == EINTR || injected_err == EAGAIN);
		const struct strict *st = fault_strict_for(s, schedule);

		CHECK_EQ(r->injected, 1, "the fault was hit");
		if (transparent) {
			CHECK(r->ret == dry->ret, "%s [%s]: %s is retried: same result as the dry run (%s), got %s",
			      s->name, label, errname(injected_err), errname(dry->ret), errname(r->ret));
		} else if (st && r->ret != st->want) {
			if (st->known)
				tb_note("%s [%s]: KNOWN (docs/reliability.md %s): want %s, got %s",
					     s->name, label, st->known, errname(st->want), errname(r->ret));
			else
				CHECK(0, "%s [%s]: want %s (%s), got %s", s->name, label, errname(st->want),
				      st->why, errname(r->ret));
		} else if (st) {
			CHECK(1, "%s [%s]: %s", s->name, label, st->why);
			if (st->known)
				tb_note("%s [%s]: %s is fixed: update docs/reliability.md", s->name,
					     label, st->known);
		} else if (r->ret != 0 && r->ret != dry->ret && !listed(s->documented, r->ret)) {
			if (r->ret == -injected_err) {
				r->undocumented = true;
				tb_note("%s [%s]: returned %s: passed through, not in the header's list",
					     s->name, label, errname(r->ret));
			} else {
				CHECK(0, "%s [%s]: returned %s: neither documented nor the injected error",
				      s->name, label, errname(r->ret));
			}
		}
		if (r->ret != 0 && r->ret != dry->ret) {
			CHECK(o.fds[0] == -1 && o.info == NULL && o.waiter == NULL,
			      "%s [%s]: failed, and left no output (fd %d, info %p, waiter %p)", s->name,
			      label, o.fds[0], (void *)o.info, (void *)o.waiter);
			if (o.acc_before >= 0)
				CHECK(o.acc == o.acc_before, "%s [%s]: failed, accumulator unchanged (%d → %d)",
				      s->name, label, o.acc_before, o.acc);
		}
	}
	CHECK_EQ(sbfault_bad_closes(&bad_fd), 0, "close() never hit a closed fd");
	if (bad_fd >= 0)
		tb_note("%s [%s]: close(%d) → EBADF", s->name, label, bad_fd);

	/* A waiter created in spite of the fault must still work. */
	if (r->ret == 0 && s->verify) {
		int v = s->verify(&e, &o);
		CHECK(v == 0, "%s [%s]: the result works (%d)", s->name, label, v);
	}

	/*
	 * accumulate: the accumulator was open before the call; on success the
	 * library closed it (documented) and fds[0] is the new one, on failure
	 * it is unchanged and ours to close. Either way it is gone now.
	 */
	cleanup_out(&o);
	if (o.acc_before >= 0 && o.acc == o.acc_before)
		close(o.acc);
	if (o.acc_before >= 0)
		snapshot_forget(&before, o.acc_before);
	{
		char what[256];

		snprintf(what, sizeof(what), "%s [%s]", s->name, label);
		tb_fd_snapshot_check(&before, NULL, 0, what);
	}
	tb_fd_snapshot_free(&before);
	fault_env_teardown(&e);
	r->failures = tb_failures - failures_before;
}

/* Fork a child for one case; returns false if the child crashed. */
static bool
fork_case(const struct scenario *s, const char *schedule, int err, const struct report *dry,
	  struct report *r)
{
	int p[2], status;
	pid_t pid;
	ssize_t n;

	REQUIRE(pipe2(p, O_CLOEXEC) == 0, "pipe2");
	pid = tb_fork();
	if (pid == 0) {
		struct report mine;

		close(p[0]);
		run_case(s, schedule, err, dry, &mine);
		if (write(p[1], &mine, sizeof(mine)) != (ssize_t)sizeof(mine))
			_exit(3);
		fflush(stdout);
		_exit(mine.failures ? 1 : 0);
	}
	close(p[1]);
	memset(r, 0, sizeof(*r));
	n = read(p[0], r, sizeof(*r));
	close(p[0]);
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	if (n != (ssize_t)sizeof(*r) || !WIFEXITED(status)) {
		CHECK(0, "%s [%s]: the child %s (status %#x)", s->name, schedule ? schedule : "dry run",
		      WIFSIGNALED(status) ? "crashed" : "gave no report", status);
		return false;
	}
	CHECK(r->failures == 0, "%s [%s]: %d checks failed in the child (above)", s->name,
	      schedule ? schedule : "dry run", r->failures);
	return true;
}

int
main(int argc, char **argv)
{
	const char *only = vm_arg_value(argc, argv, "--only", NULL);
	int cases = 0, injected = 0, undocumented = 0, sites = 0, scen = 0;
	int vgem;

	if (!dlsym(RTLD_DEFAULT, "sbfault_arm"))
		tb_skip("libsbfault is not loaded");
	vgem = vm_require_vgem();
	close(vgem);
	tb_note("malloc family interposed: %s", sbfault_malloc_interposed() ? "yes" : "no (ASan)");

	for (int i = 0; i < fault_n_scenarios; i++) {
		const struct scenario *s = &fault_scenarios[i];
		struct report dry, r;
		char line[512];
		int pos = 0;

		if (only && !strstr(s->name, only))
			continue;
		if (vm_has_arg(argc, argv, "--list")) {
			printf("%s\n", s->name);
			continue;
		}
		if (!fork_case(s, "", 0, NULL, &dry))
			continue;
		if (dry.skipped) {
			tb_note("%s: skipped (device missing)", s->name);
			continue;
		}
		scen++;
		pos += snprintf(line + pos, sizeof(line) - (size_t)pos, "%s → %s; calls:", s->name,
				errname(dry.ret));
		for (int k = 0; k < N_KINDS; k++)
			if (dry.calls[k])
				pos += snprintf(line + pos, sizeof(line) - (size_t)pos, " %s=%u",
						kinds[k].fn, dry.calls[k]);
		for (unsigned j = 0; j < dry.calls[0] && j < 16; j++)
			pos += snprintf(line + pos, sizeof(line) - (size_t)pos, "%s%s", j ? "," : " (",
					fault_ioctl_name(dry.ioctls[j]));
		if (dry.calls[0])
			snprintf(line + pos, sizeof(line) - (size_t)pos, ")");
		tb_note("%s", line);

		for (int k = 0; k < N_KINDS; k++) {
			sites += (int)dry.calls[k];
			for (unsigned n = 1; n <= dry.calls[k]; n++) {
				for (const int *err = kinds[k].errs; *err; err++) {
					char sched[64];

					snprintf(sched, sizeof(sched), "%s:%u:%s", kinds[k].fn, n,
						 errname(*err));
					fork_case(s, sched, *err, &dry, &r);
					cases++;
					injected += (int)r.injected;
					undocumented += r.undocumented;
					tb_note("  %s%s%s → %s", sched,
							     k == 0 ? " " : "",
							     k == 0 ? fault_ioctl_name(dry.ioctls[n - 1 < 16 ? n - 1 : 15]) : "",
							     errname(r.ret));
				}
			}
		}
	}
	tb_note("%d scenarios, %d call sites, %d fault cases, %d faults injected, %d undocumented pass-throughs",
		     scen, sites, cases, injected, undocumented);
	return tb_finish();
}
