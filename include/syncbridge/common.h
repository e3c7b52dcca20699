/* SPDX-License-Identifier: MIT */
/*
 * syncbridge — common definitions shared by every public header.
 *
 * Conventions used throughout the API:
 *  - Functions return 0 on success or a negative errno value on failure; they
 *    never set errno as their result and never abort the process.
 *  - On failure every fd the caller passed in is left untouched and open, and
 *    every output fd is left at -1.
 *  - Every fd the library creates has O_CLOEXEC (FD_CLOEXEC) set.
 *  - -EBADF means "not an open fd"; -EINVAL means "open, but not the kind of
 *    file this function takes" (a pipe where a sync_file is expected, an
 *    O_PATH fd, a non-DRM fd where a DRM device is expected), or a NULL
 *    pointer where the function must write a result.
 *  - Timeouts are relative, in nanoseconds: SB_TIMEOUT_INFINITE waits forever,
 *    0 polls without blocking. A wait interrupted by a signal resumes with the
 *    remaining time; it never restarts the full timeout and never returns
 *    early with -EINTR.
 */
#ifndef SYNCBRIDGE_COMMON_H
#define SYNCBRIDGE_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include <syncbridge/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define SB_EXPORT __attribute__((visibility("default")))
#else
#define SB_EXPORT
#endif

/** Wait without a time limit. */
#define SB_TIMEOUT_INFINITE INT64_C(-1)

/**
 * Access a party wants to a shared buffer. A reader must wait for earlier
 * writers only; a writer must wait for every earlier reader and writer.
 */
enum sb_access {
	SB_ACCESS_READ = 1,
	SB_ACCESS_WRITE = 2,
};

/**
 * Version of the library the program runs with, "MAJOR.MINOR.MICRO"
 * (SB_VERSION_STRING in <syncbridge/version.h> is the headers' version).
 */
SB_EXPORT const char *sb_library_get_version(void);

/**
 * Read a yes/no environment variable the way every syncbridge component does
 * (SYNCBRIDGE_DISABLE and the other switches: docs/core.md, "Environment").
 * "1", "true", "yes", "on" (any case) are true; "0", "false", "no", "off" and
 * the empty string are false; unset gives @fallback. Any other value counts
 * as true — someone set the switch on purpose — and is logged once at warn
 * level (SYNCBRIDGE_DEBUG), naming the variable.
 */
SB_EXPORT bool sb_env_get_bool(const char *name, bool fallback);

#ifdef __cplusplus
}
#endif

#endif
