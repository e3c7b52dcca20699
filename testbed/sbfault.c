/* SPDX-License-Identifier: MIT */
/* libsbfault: see sbfault.h. */
/* Both fcntl and fcntl64 are defined here: no header redirect of one to the other. */
#undef _FILE_OFFSET_BITS
#include "sbfault.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/sync_file.h>

#define EXPORT __attribute__((visibility("default")))

enum fn {
	FN_IOCTL,
	FN_EVENTFD,
	FN_DUP,
	FN_PTHREAD_CREATE,
	FN_MALLOC,
	FN_CALLOC,
	FN_REALLOC,
	FN_CLOSE,
	FN_FENCE_ERROR,
	FN_COUNT
};

static const char *const fn_names[FN_COUNT] = {
	"ioctl", "eventfd", "dup", "pthread_create", "malloc", "calloc", "realloc", "close",
	"fence_error",
};

#define MAX_RULES 16
#define LOG_IOCTLS 256

struct rule {
	enum fn fn;
	unsigned n;   /* 0 = all */
	bool plus;    /* n and later */
	int err;
};

static struct rule rules[MAX_RULES];
static int n_rules;
static atomic_bool armed;
static bool env_mode;     /* armed by SB_FAULT: every thread counts */
static bool others_mode;  /* sbfault_arm_other_threads(): every thread but the armer */
static char scope[256];   /* SB_FAULT_SCOPE */
static atomic_uint counts[FN_COUNT];
static atomic_uint injected;
static atomic_uint bad_closes;
static atomic_int last_bad_close = -1;
static unsigned long ioctl_log[LOG_IOCTLS];
static bool report_at_exit;

static atomic_bool malloc_called; /* our malloc was reached: we come before the allocator */
static _Thread_local bool tls_armer; /* this thread called sbfault_arm() */
static _Thread_local int tls_busy;   /* inside our own bookkeeping */
static _Thread_local unsigned tls_counted; /* the number decide() gave this thread's last call, or 0 */

/* ---- the real functions ---- */

static int (*real_ioctl)(int, unsigned long, ...);
static int (*real_eventfd)(unsigned int, int);
static int (*real_fcntl)(int, int, ...);
static int (*real_fcntl64)(int, int, ...);
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_close)(int);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);

/*
 * dlsym() may allocate; while it runs, allocations come from this arena
 * (never freed: a few hundred bytes at most, once per process).
 */
static _Alignas(16) unsigned char arena[64 * 1024];
static size_t arena_used;
static _Thread_local bool tls_resolving;

static bool
in_arena(const void *p)
{
	return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + sizeof(arena);
}

static void *
arena_alloc(size_t n)
{
	size_t *hdr;

	n = (n + 15) & ~(size_t)15;
	if (arena_used + n + 16 > sizeof(arena))
		return NULL;
	hdr = (size_t *)(arena + arena_used);
	*hdr = n;
	arena_used += n + 16;
	return (unsigned char *)hdr + 16;
}

static void
resolve(void)
{
	static atomic_bool done;

	if (atomic_load(&done) || tls_resolving)
		return;
	tls_resolving = true;
#define RESOLVE(name) real_##name = dlsym(RTLD_NEXT, #name)
	RESOLVE(malloc);
	RESOLVE(calloc);
	RESOLVE(realloc);
	RESOLVE(free);
	RESOLVE(ioctl);
	RESOLVE(eventfd);
	RESOLVE(fcntl);
	RESOLVE(fcntl64);
	RESOLVE(pthread_create);
	RESOLVE(close);
	RESOLVE(poll);
	RESOLVE(ppoll);
#undef RESOLVE
	tls_resolving = false;
	atomic_store(&done, true);
}

/* ---- schedule ---- */

static const struct {
	const char *name;
	int value;
} errnos[] = {
	{ "EPERM", EPERM }, { "ENOENT", ENOENT }, { "EINTR", EINTR }, { "EIO", EIO },
	{ "EBADF", EBADF }, { "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM }, { "EACCES", EACCES },
	{ "EFAULT", EFAULT }, { "EBUSY", EBUSY }, { "ENODEV", ENODEV }, { "EINVAL", EINVAL },
	{ "ENFILE", ENFILE }, { "EMFILE", EMFILE }, { "ENOTTY", ENOTTY }, { "ENOSPC", ENOSPC },
	{ "ETIME", ETIME }, { "ETIMEDOUT", ETIMEDOUT }, { "EOPNOTSUPP", EOPNOTSUPP },
	{ "ENOSYS", ENOSYS }, { "EDEADLK", EDEADLK }, { "ECANCELED", ECANCELED },
};

static int
parse_errno(const char *s, size_t len)
{
	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (strlen(errnos[i].name) == len && strncmp(errnos[i].name, s, len) == 0)
			return errnos[i].value;
	if (len && s[0] >= '0' && s[0] <= '9')
		return atoi(s);
	return 0;
}

/* Parse "FUNC:WHICH:ERR,..." into rules[]; complains on stderr about bad rules. */
static void
parse(const char *sched)
{
	n_rules = 0;
	while (sched && *sched && n_rules < MAX_RULES) {
		const char *end = strchr(sched, ','), *c1, *c2;
		size_t len = end ? (size_t)(end - sched) : strlen(sched);
		struct rule r = { 0 };
		int f;

		c1 = memchr(sched, ':', len);
		c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - sched)) : NULL;
		for (f = 0; c1 && f < FN_COUNT; f++)
			if (strlen(fn_names[f]) == (size_t)(c1 - sched) &&
			    strncmp(fn_names[f], sched, (size_t)(c1 - sched)) == 0)
				break;
		if (!c2 || f >= FN_COUNT) {
			fprintf(stderr, "sbfault: bad rule '%.*s' (want FUNC:N|N+|*:ERRNO)\n", (int)len, sched);
		} else {
			r.fn = (enum fn)f;
			if (c1[1] == '*') {
				r.n = 0;
			} else {
				char *e;
				r.n = (unsigned)strtoul(c1 + 1, &e, 10);
				r.plus = *e == '+';
			}
			r.err = parse_errno(c2 + 1, len - (size_t)(c2 + 1 - sched));
			if (r.err <= 0 || (r.n == 0 && c1[1] != '*'))
				fprintf(stderr, "sbfault: bad rule '%.*s'\n", (int)len, sched);
			else
				rules[n_rules++] = r;
		}
		sched = end ? end + 1 : NULL;
	}
}

/* The shared core: what the side libraries call for their kernel work. */
static bool
is_core(const char *path)
{
	return strstr(path, "/libsyncbridge.so") != NULL;
}

static bool
is_self(const void *addr)
{
	Dl_info info, me;

	return dladdr(addr, &info) && dladdr((const void *)is_self, &me) &&
	       info.dli_fbase == me.dli_fbase;
}

/*
 * A call made directly by the scoped object counts; so does one the shared
 * core (libsyncbridge.so) makes on its behalf. The side libraries (EGL,
 * Wayland, PipeWire) used to carry a hidden copy of the core, so those calls
 * came from their own object; now they come from the core's, and the stack
 * says for whom: the first frame outside this library and the core. Only
 * walked when the direct caller is the core (backtrace() was primed in the
 * constructor, so it loads nothing here); the program's own calls into the
 * core stay out of scope, as before.
 */
static bool
in_scope(const void *caller)
{
	void *frames[64];
	Dl_info info;
	int n;

	if (!scope[0])
		return true;
	if (!caller || !dladdr(caller, &info) || !info.dli_fname)
		return false;
	if (strstr(info.dli_fname, scope))
		return true;
	if (!is_core(info.dli_fname))
		return false;
	n = backtrace(frames, (int)(sizeof(frames) / sizeof(frames[0])));
	for (int i = 0; i < n; i++) {
		if (is_self(frames[i]))
			continue;
		if (!dladdr(frames[i], &info) || !info.dli_fname)
			return false;
		if (!is_core(info.dli_fname))
			return strstr(info.dli_fname, scope) != NULL;
	}
	return false;
}

/* Count the call; returns the errno to inject, or 0 to pass it through. */
static int
decide(enum fn fn, const void *caller)
{
	unsigned n;

	tls_counted = 0;
	if (!atomic_load_explicit(&armed, memory_order_acquire) || tls_busy || tls_resolving)
		return 0;
	if (others_mode ? tls_armer : !env_mode && !tls_armer)
		return 0;
	if (scope[0]) {
		bool ok;

		if (fn == FN_MALLOC || fn == FN_CALLOC || fn == FN_REALLOC)
			return 0;
		tls_busy++;
		ok = in_scope(caller);
		tls_busy--;
		if (!ok)
			return 0;
	}
	n = atomic_fetch_add(&counts[fn], 1) + 1;
	tls_counted = n;
	for (int i = 0; i < n_rules; i++) {
		const struct rule *r = &rules[i];

		if (r->fn == fn && (r->n == 0 || n == r->n || (r->plus && n >= r->n))) {
			atomic_fetch_add(&injected, 1);
			return r->err;
		}
	}
	return 0;
}

/* decide() for a call that fails with -1 and errno: whether it fails (errno set). */
static bool
fails(enum fn fn, const void *caller)
{
	int err = decide(fn, caller);

	if (err)
		errno = err;
	return err != 0;
}

/* decide() for an allocator (uncounted caller): whether it fails (errno ENOMEM). */
static bool
alloc_fails(enum fn fn)
{
	if (!decide(fn, NULL))
		return false;
	errno = ENOMEM;
	return true;
}

/* ---- control API ---- */

static void
arm(const char *schedule, const char *scope_substring, bool others)
{
	tls_busy++;
	atomic_store(&armed, false);
	for (int i = 0; i < FN_COUNT; i++)
		atomic_store(&counts[i], 0);
	atomic_store(&injected, 0);
	atomic_store(&bad_closes, 0);
	atomic_store(&last_bad_close, -1);
	memset(ioctl_log, 0, sizeof(ioctl_log));
	parse(schedule);
	snprintf(scope, sizeof(scope), "%s", scope_substring ? scope_substring : "");
	env_mode = false;
	others_mode = others;
	tls_armer = true;
	resolve();
	tls_busy--;
	atomic_store_explicit(&armed, true, memory_order_release);
}

EXPORT void
sbfault_arm_scoped(const char *schedule, const char *scope_substring)
{
	arm(schedule, scope_substring, false);
}

EXPORT void
sbfault_arm(const char *schedule)
{
	arm(schedule, NULL, false);
}

EXPORT void
sbfault_arm_other_threads(const char *schedule)
{
	arm(schedule, NULL, true);
}

EXPORT void
sbfault_disarm(void)
{
	atomic_store(&armed, false);
	tls_armer = false;
}

EXPORT unsigned
sbfault_calls(const char *func)
{
	for (int i = 0; i < FN_COUNT; i++)
		if (strcmp(func, fn_names[i]) == 0)
			return atomic_load(&counts[i]);
	return 0;
}

EXPORT unsigned
sbfault_injected(void)
{
	return atomic_load(&injected);
}

EXPORT unsigned
sbfault_bad_closes(int *last_fd)
{
	if (last_fd)
		*last_fd = atomic_load(&last_bad_close);
	return atomic_load(&bad_closes);
}

EXPORT unsigned long
sbfault_ioctl_request(unsigned i)
{
	return i < LOG_IOCTLS ? ioctl_log[i] : 0;
}

static void (*ioctl_hook)(int fd, unsigned long request, int err, void *data);
static void *ioctl_hook_data;

EXPORT void
sbfault_set_ioctl_hook(void (*hook)(int fd, unsigned long request, int err, void *data), void *data)
{
	ioctl_hook = hook;
	ioctl_hook_data = data;
}

/* Per thread: the hook belongs to the thread whose waits it orders. */
static _Thread_local void (*tls_poll_hook)(const struct pollfd *fds, unsigned long nfds, void *data);
static _Thread_local void *tls_poll_hook_data;

EXPORT void
sbfault_set_poll_hook(void (*hook)(const struct pollfd *fds, unsigned long nfds, void *data),
		      void *data)
{
	tls_poll_hook = hook;
	tls_poll_hook_data = data;
}

static void
poll_hook(const struct pollfd *fds, nfds_t nfds)
{
	if (!tls_poll_hook || tls_busy)
		return;
	tls_busy++; /* the hook's own calls are not the caller's */
	tls_poll_hook(fds, (unsigned long)nfds, tls_poll_hook_data);
	tls_busy--;
}

EXPORT bool
sbfault_malloc_interposed(void)
{
	/* Under ASan its allocator comes first and our malloc is never reached. */
	free(malloc(1));
	return atomic_load(&malloc_called);
}

static void
report(void)
{
	fprintf(stderr, "sbfault: counted");
	for (int i = 0; i < FN_COUNT; i++)
		fprintf(stderr, " %s=%u", fn_names[i], atomic_load(&counts[i]));
	fprintf(stderr, "; injected %u; bad closes %u\n", atomic_load(&injected),
		atomic_load(&bad_closes));
}

__attribute__((constructor)) static void
init(void)
{
	const char *s = getenv("SB_FAULT"), *sc = getenv("SB_FAULT_SCOPE");

	resolve();
	/* The first backtrace() loads libgcc_s (and allocates): not inside a wrapped call. */
	{
		void *frame[1];

		backtrace(frame, 1);
	}
	if (sc)
		snprintf(scope, sizeof(scope), "%s", sc);
	report_at_exit = getenv("SB_FAULT_REPORT") != NULL;
	if (report_at_exit)
		atexit(report);
	if (s) {
		parse(s);
		env_mode = true;
		atomic_store(&armed, true);
	}
}

/* ---- interposed calls ---- */

/*
 * "fence_error:WHICH:ERR": what the kernel reports for fences that completed
 * with an error (dma_fence_set_error() before dma_fence_signal()), made up
 * from real answers: in a successful SYNC_IOC_FILE_INFO, every signalled
 * fence (status 1) and a signalled aggregate get status -ERR. poll() is
 * untouched, as in the kernel: an errored fence is signalled.
 */
static void
fence_error(struct sync_file_info *info, const void *caller)
{
	int err = decide(FN_FENCE_ERROR, caller);
	struct sync_fence_info *f;

	if (!err)
		return;
	if (info->status == 1)
		info->status = -err;
	f = (struct sync_fence_info *)(uintptr_t)info->sync_fence_info;
	for (uint32_t i = 0; f && i < info->num_fences; i++)
		if (f[i].status == 1)
			f[i].status = -err;
}

EXPORT int
ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;
	unsigned n;
	int err, ret;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	resolve();
	err = decide(FN_IOCTL, __builtin_return_address(0));
	/*
	 * Log only the call that was counted, in the slot its own count names. The
	 * count read before and after decide() used to stand for that, but a thread
	 * that is not counted (the compositor's, beside a client armed on its own)
	 * saw the armed thread's increment between the two reads and wrote its own
	 * request over that slot: fault-wl's dry run once logged 0xc00464b4
	 * (DRM_IOCTL_MODE_DESTROY_DUMB, which the client helper never makes) as
	 * the client helper's 16th ioctl, and both cases of that ioctl failed.
	 */
	n = tls_counted;
	if (n >= 1 && n <= LOG_IOCTLS)
		ioctl_log[n - 1] = request;
	if (err) {
		if (ioctl_hook)
			ioctl_hook(fd, request, err, ioctl_hook_data);
		errno = err;
		return -1;
	}
	ret = real_ioctl(fd, request, arg);
	if (ret == 0 && request == SYNC_IOC_FILE_INFO && arg)
		fence_error(arg, __builtin_return_address(0));
	return ret;
}

EXPORT int
eventfd(unsigned int initval, int flags)
{
	resolve();
	if (fails(FN_EVENTFD, __builtin_return_address(0)))
		return -1;
	return real_eventfd(initval, flags);
}

static int
fcntl_common(int (*real)(int, int, ...), int fd, int cmd, void *arg, const void *caller)
{
	if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && fails(FN_DUP, caller))
		return -1;
	return real(fd, cmd, arg);
}

/*
 * fcntl and fcntl64 alike (both are defined: see the top of this file): the
 * third argument, when there is one, read as a pointer (every command's
 * argument fits in one); the real function is chosen after resolve().
 */
#define FCNTL_WRAPPER(name, real_fn)                                                   \
	EXPORT int name(int fd, int cmd, ...)                                          \
	{                                                                              \
		va_list ap;                                                            \
		void *arg;                                                             \
                                                                                       \
		va_start(ap, cmd);                                                     \
		arg = va_arg(ap, void *);                                              \
		va_end(ap);                                                            \
		resolve();                                                             \
		return fcntl_common(real_fn, fd, cmd, arg, __builtin_return_address(0)); \
	}

FCNTL_WRAPPER(fcntl, real_fcntl)
FCNTL_WRAPPER(fcntl64, real_fcntl64 ? real_fcntl64 : real_fcntl)

EXPORT int
pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
	int err;

	resolve();
	err = decide(FN_PTHREAD_CREATE, __builtin_return_address(0));
	if (err)
		return err;
	return real_pthread_create(thread, attr, start, arg);
}

EXPORT int
poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	resolve();
	poll_hook(fds, nfds);
	return real_poll(fds, nfds, timeout);
}

EXPORT int
ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *sigmask)
{
	resolve();
	poll_hook(fds, nfds);
	return real_ppoll(fds, nfds, timeout, sigmask);
}

EXPORT int
close(int fd)
{
	int ret, saved;

	resolve();
	if (!real_close) {
		errno = ENOSYS;
		return -1;
	}
	decide(FN_CLOSE, __builtin_return_address(0));
	ret = real_close(fd);
	saved = errno;
	if (ret < 0 && saved == EBADF && atomic_load(&armed) && (env_mode || tls_armer)) {
		atomic_fetch_add(&bad_closes, 1);
		atomic_store(&last_bad_close, fd);
	}
	errno = saved;
	return ret;
}

EXPORT void *
malloc(size_t n)
{
	atomic_store_explicit(&malloc_called, true, memory_order_relaxed);
	if (!real_malloc) {
		if (tls_resolving)
			return arena_alloc(n);
		resolve();
	}
	if (alloc_fails(FN_MALLOC))
		return NULL;
	return real_malloc(n);
}

EXPORT void *
calloc(size_t n, size_t size)
{
	if (!real_calloc) {
		if (tls_resolving)
			return arena_alloc(n * size); /* static: already zero */
		resolve();
	}
	if (alloc_fails(FN_CALLOC))
		return NULL;
	return real_calloc(n, size);
}

EXPORT void *
realloc(void *p, size_t n)
{
	if (in_arena(p)) {
		size_t old = ((size_t *)p)[-2];
		void *q = malloc(n);

		if (q)
			memcpy(q, p, old < n ? old : n);
		return q;
	}
	if (!real_realloc) {
		if (tls_resolving)
			return p ? NULL : arena_alloc(n);
		resolve();
	}
	if (alloc_fails(FN_REALLOC))
		return NULL;
	return real_realloc(p, n);
}

EXPORT void
free(void *p)
{
	if (!p || in_arena(p))
		return;
	if (!real_free)
		resolve();
	real_free(p);
}
