/* SPDX-License-Identifier: MIT */
/*
 * libsbfault: a fault-injecting interposer for the calls through which
 * syncbridge meets the kernel and the C library (docs/reliability.md).
 *
 * Loaded either by linking it into a test program (it then comes before
 * libc in symbol lookup) or with LD_PRELOAD into any program (the layer's
 * tests). It overrides:
 *
 *   ioctl            counted as "ioctl"
 *   eventfd          "eventfd"
 *   fcntl/fcntl64    F_DUPFD / F_DUPFD_CLOEXEC only, counted as "dup"
 *   pthread_create   "pthread_create" (fails by returning the error)
 *   malloc, calloc, realloc   "malloc", "calloc", "realloc"
 *   poll, ppoll      never fail, never counted: sbfault_set_poll_hook()
 *   close            never fails; counted as "close", and a close that the
 *                    kernel answers EBADF (an fd that was not open: a double
 *                    close) is recorded
 *   fence_error      not a failure: each successful SYNC_IOC_FILE_INFO is
 *                    counted, and when a rule picks it, its signalled fences
 *                    (status 1) report -ERR instead, as fences that completed
 *                    with an error do (docs/reliability.md: the test kernel
 *                    has no driver that makes such fences)
 *
 * A schedule says which calls fail: comma-separated rules FUNC:WHICH:ERR,
 *   WHICH  N (the Nth counted call only), N+ (the Nth and every later one)
 *          or * (all);
 *   ERR    an errno name (ENOTTY, EINVAL, ENOMEM, EINTR, EAGAIN, EMFILE,
 *          ENOENT, EBUSY, EIO, EFAULT, ETIME, ...) or number.
 * A failing call does not reach the kernel or libc: nothing happens but the
 * error. e.g. "ioctl:3:ENOTTY" fails the third ioctl, "ioctl:2+:ENOMEM" the
 * second and all later ones, "calloc:*:ENOMEM" every calloc. (An EINTR rule
 * on every ioctl would never let sb_ioctl()'s retry through: fail one.)
 *
 * Two ways to arm it:
 *  - from the program: sbfault_arm(schedule) ... sbfault_disarm(); only calls
 *    made by the arming thread count (a library helper thread does not make
 *    the counts racy); sbfault_arm_scoped() also restricts them to one
 *    loaded object, as SB_FAULT_SCOPE does (a call the shared core,
 *    libsyncbridge.so, makes on that object's behalf counts too: the first
 *    frame outside the core decides);
 *  - from the environment, for programs that know nothing of it: SB_FAULT
 *    holds the schedule, armed from the start, every thread counted;
 *    SB_FAULT_SCOPE=SUBSTRING counts only calls made directly from a loaded
 *    object whose path contains SUBSTRING (e.g. "libVkLayer_SYNCBRIDGE", so
 *    that the driver's own ioctls and allocations never fail); malloc-family
 *    calls are not scoped and so never fail under SB_FAULT_SCOPE.
 *    SB_FAULT_REPORT=1 prints the counts to stderr at exit.
 *
 * Limits: under AddressSanitizer the allocator is ASan's, found before this
 * library, so malloc-family calls are neither counted nor failed; the other
 * calls pass through ASan's interceptors and then through here.
 */
#ifndef SB_FAULT_H
#define SB_FAULT_H

#include <poll.h>
#include <stdbool.h>

/* Reset the counts and arm `schedule` ("" or NULL: count only). */
void sbfault_arm(const char *schedule);
/*
 * The same, counting only calls made directly from a loaded object whose
 * path contains scope_substring (malloc-family calls are then never counted).
 * Under ASan its interceptors stand between the caller and us: nothing is
 * in scope there.
 */
void sbfault_arm_scoped(const char *schedule, const char *scope_substring);
/*
 * The same, counting the calls of every thread except the arming one: for a
 * library's helper thread (e.g. the syncobj waiter's), while the arming
 * thread only watches.
 */
void sbfault_arm_other_threads(const char *schedule);
/* Stop counting and failing. The counts stay readable. */
void sbfault_disarm(void);
/* Calls of `func` counted while armed (see the names above). */
unsigned sbfault_calls(const char *func);
/* Calls failed on purpose while armed. */
unsigned sbfault_injected(void);
/* close() calls that found no open fd (EBADF) while armed; *last_fd the latest. */
unsigned sbfault_bad_closes(int *last_fd);
/* The request code of the i-th counted ioctl (0-based), or 0. */
unsigned long sbfault_ioctl_request(unsigned i);
/*
 * Call hook(fd, request, err, data) each time an ioctl is failed on purpose,
 * just before the failure returns (NULL: none). It runs on the failing
 * thread and may change the world the caller sees next, e.g. dup2() another
 * file over fd to act out an fd number reused meanwhile.
 */
void sbfault_set_ioctl_hook(void (*hook)(int fd, unsigned long request, int err, void *data),
			    void *data);
/*
 * Call hook(fds, nfds, data) just before each poll() or ppoll() of the thread
 * that set it, armed or not (NULL: none; the calls the hook makes itself are
 * not counted). It runs before the caller can block, so a test can make the
 * event that caller is about to wait for happen exactly there: a wait that
 * checks a fence, polls, and checks again then finds it pending at the first
 * check and signalled at the second in every run, and makes the same calls in
 * the same order however the threads were scheduled (fault-wl).
 */
void sbfault_set_poll_hook(void (*hook)(const struct pollfd *fds, unsigned long nfds, void *data),
			   void *data);
/* Whether the malloc family is interposed here (false under ASan). */
bool sbfault_malloc_interposed(void);

#endif
