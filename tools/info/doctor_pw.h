/* SPDX-License-Identifier: MIT */
/*
 * doctor's PipeWire probe (docs/inspect.md, "doctor: the compositor and
 * PipeWire"): is a daemon running for this environment, which version, and
 * can a stream through it negotiate explicit sync (SPA_META_SyncTimeline with
 * SPA_DATA_SyncObj planes)? Connects as a client would (PIPEWIRE_REMOTE,
 * PIPEWIRE_RUNTIME_DIR, XDG_RUNTIME_DIR), waits for the core's info and one
 * sync, and disconnects. Bounded: a daemon that never answers is given up
 * after the timeout.
 */
#ifndef INFO_DOCTOR_PW_H
#define INFO_DOCTOR_PW_H

#include <stdbool.h>
#include <stdio.h>

struct json_object;

struct doctor_pw {
	bool running;               /* a PipeWire daemon answered */
	char daemon_version[32], library_version[32];
	int sync_timeline;          /* 1 yes, 0 no, -1 unknown: SPA_META_SyncTimeline negotiable */
	char why[256];
	/* additions */
	char remote[128];           /* the remote asked for (PIPEWIRE_REMOTE or the default) */
	int elapsed_ms;             /* connect to answer (or to giving up) */
};

/*
 * Fill *pw (zeroed first). timeout_ms bounds the whole exchange. Calls
 * pw_init()/pw_deinit(); PipeWire's own log stays quiet unless PIPEWIRE_DEBUG
 * is set. Never fails: what could not be learnt is said in pw->why.
 */
void doctor_pw_probe(struct doctor_pw *pw, int timeout_ms);

/*
 * The version rule behind sync_timeline, for the daemon's and the library's
 * "MAJOR.MINOR.MICRO": 1 when both have explicit sync (1.2.0 and later, the
 * 1.1.81+ release candidates, and 1.0.8+, which got it backported), 0 when
 * either is older, -1 when either cannot be read.
 */
int doctor_pw_sync_timeline(const char *daemon_version, const char *library_version);

/* A new JSON object, keys the field names; the caller owns it. */
struct json_object *doctor_pw_json(const struct doctor_pw *pw);

/* A few lines of text for a person. */
void doctor_pw_print(FILE *f, const struct doctor_pw *pw);

#endif
