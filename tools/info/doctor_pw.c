/* SPDX-License-Identifier: MIT */
/*
 * doctor's PipeWire probe: a pw_main_loop with a timer as the deadline, the
 * core's info event for the daemon's version, then pw_core_sync() so that
 * "answered" means a whole exchange. Whether SyncTimeline can be negotiated
 * is judged from the versions: PipeWire added the SyncTimeline meta, SyncObj
 * data and mandatory metas in 1.1.81, the first 1.2 release candidate
 * (2024-05-16), and backported them to 1.0.8 (2024-09-19: "Add support for
 * mandatory metadata and explicit sync metadata"; PipeWire's NEWS, as Debian
 * ships it in /usr/share/doc/pipewire/NEWS.gz with 1.4.2). A daemon that has
 * them passes the meta between the two streams; whether a given producer
 * offers it is the producer's business (mutter 48 and KWin 6.3 do:
 * docs/syncobj-peers.md).
 */
#include "doctor_pw.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#include <pipewire/pipewire.h>

#include "json_out.h"

struct probe {
	struct doctor_pw *pw;
	struct pw_main_loop *loop;
	struct pw_core *core;
	struct spa_hook core_listener;
	int sync_seq;
	bool got_info, done, timed_out;
	int error;                  /* -errno from the core's error event */
	char message[128];
};

/* Milliseconds of CLOCK_MONOTONIC (64-bit: an int wraps after 24.8 days of uptime). */
static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
copy_str(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static void
on_info(void *data, const struct pw_core_info *info)
{
	struct probe *p = data;

	if (info->version)
		copy_str(p->pw->daemon_version, sizeof(p->pw->daemon_version), info->version);
	p->got_info = true;
}

static void
on_done(void *data, uint32_t id, int seq)
{
	struct probe *p = data;

	if (id == PW_ID_CORE && seq == p->sync_seq) {
		p->done = true;
		pw_main_loop_quit(p->loop);
	}
}

static void
on_error(void *data, uint32_t id, int seq, int res, const char *message)
{
	struct probe *p = data;

	(void)seq;
	if (id != PW_ID_CORE)
		return;
	p->error = res < 0 ? res : -EPROTO;
	copy_str(p->message, sizeof(p->message), message);
	pw_main_loop_quit(p->loop);
}

static const struct pw_core_events core_events = {
	PW_VERSION_CORE_EVENTS,
	.info = on_info,
	.done = on_done,
	.error = on_error,
};

static void
on_timeout(void *data, uint64_t expirations)
{
	struct probe *p = data;

	(void)expirations;
	p->timed_out = true;
	pw_main_loop_quit(p->loop);
}

/* Where a client of this environment connects, for the report. */
static void
describe_remote(struct doctor_pw *pw)
{
	const char *remote = getenv("PIPEWIRE_REMOTE");
	const char *dir = getenv("PIPEWIRE_RUNTIME_DIR");

	if (!dir || !*dir)
		dir = getenv("XDG_RUNTIME_DIR");
	if (!remote || !*remote)
		remote = PW_DEFAULT_REMOTE;
	if (remote[0] == '/' || !dir || !*dir)
		copy_str(pw->remote, sizeof(pw->remote), remote);
	else
		snprintf(pw->remote, sizeof(pw->remote), "%s/%s", dir, remote);
}

/* Connect and wait for info + sync, at most timeout_ms; the result in p. */
static void
exchange(struct probe *p, int timeout_ms)
{
	struct pw_loop *loop = pw_main_loop_get_loop(p->loop);
	struct pw_context *ctx;
	struct spa_source *timer;
	struct timespec value = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };

	ctx = pw_context_new(loop, NULL, 0);
	if (!ctx) {
		snprintf(p->pw->why, sizeof(p->pw->why), "no PipeWire context: %s",
			 strerror(errno));
		return;
	}
	p->core = pw_context_connect(ctx, NULL, 0);
	if (!p->core) {
		/* PipeWire says EHOSTDOWN when no socket of the name exists. */
		snprintf(p->pw->why, sizeof(p->pw->why), "no PipeWire daemon at %s: %s",
			 p->pw->remote,
			 errno == EHOSTDOWN || errno == ENOENT || errno == ECONNREFUSED
				 ? "nothing listens there"
				 : strerror(errno));
		pw_context_destroy(ctx);
		return;
	}
	pw_core_add_listener(p->core, &p->core_listener, &core_events, p);
	p->sync_seq = pw_core_sync(p->core, PW_ID_CORE, 0);
	timer = pw_loop_add_timer(loop, on_timeout, p);
	if (timer && pw_loop_update_timer(loop, timer, &value, NULL, false) >= 0)
		pw_main_loop_run(p->loop);
	else
		snprintf(p->pw->why, sizeof(p->pw->why), "no timer: %s", strerror(errno));
	if (timer)
		pw_loop_destroy_source(loop, timer);
	spa_hook_remove(&p->core_listener);
	pw_core_disconnect(p->core);
	pw_context_destroy(ctx);
}

static void
judge(struct probe *p, int timeout_ms)
{
	struct doctor_pw *pw = p->pw;

	pw->running = p->done && p->got_info;
	if (p->error)
		snprintf(pw->why, sizeof(pw->why), "the daemon at %.100s refused: %s (%.60s)",
			 pw->remote, strerror(-p->error), p->message);
	else if (p->timed_out)
		snprintf(pw->why, sizeof(pw->why), "the daemon at %s did not answer in %d ms",
			 pw->remote, timeout_ms);
	if (!pw->running)
		return;
	pw->sync_timeline = doctor_pw_sync_timeline(pw->daemon_version, pw->library_version);
	if (pw->sync_timeline == 1)
		snprintf(pw->why, sizeof(pw->why),
			 "daemon and library can carry SyncTimeline; each "
			 "producer must still offer it (mutter 48 and KWin 6.3 do)");
	else if (pw->sync_timeline == 0)
		snprintf(pw->why, sizeof(pw->why),
			 "daemon %s / library %s: explicit sync needs 1.2 "
			 "(or 1.0.8) on both",
			 pw->daemon_version, pw->library_version);
	else
		snprintf(pw->why, sizeof(pw->why),
			 "cannot read the versions (daemon \"%s\", library "
			 "\"%s\")",
			 pw->daemon_version, pw->library_version);
}

void
doctor_pw_probe(struct doctor_pw *pw, int timeout_ms)
{
	struct probe p = { .pw = pw };
	int64_t t0 = now_ms();

	memset(pw, 0, sizeof(*pw));
	pw->sync_timeline = -1;
	if (timeout_ms < 1)
		timeout_ms = 1;
	pw_init(NULL, NULL);
	/* A missing daemon is an answer here, not an error to print. */
	if (!getenv("PIPEWIRE_DEBUG"))
		pw_log_set_level(SPA_LOG_LEVEL_NONE);
	copy_str(pw->library_version, sizeof(pw->library_version), pw_get_library_version());
	describe_remote(pw);
	p.loop = pw_main_loop_new(NULL);
	if (!p.loop) {
		snprintf(pw->why, sizeof(pw->why), "no PipeWire main loop: %s", strerror(errno));
	} else {
		exchange(&p, timeout_ms);
		judge(&p, timeout_ms);
		pw_main_loop_destroy(p.loop);
	}
	pw_deinit();
	pw->elapsed_ms = (int)(now_ms() - t0);
}

/* 1 when "MAJOR.MINOR.MICRO" has explicit sync, 0 when not, -1 unreadable. */
static int
version_has_sync(const char *v)
{
	unsigned major, minor, micro;

	if (!v || sscanf(v, "%u.%u.%u", &major, &minor, &micro) != 3)
		return -1;
	if (major != 1)
		return major > 1;
	if (minor >= 2)
		return 1;
	if (minor == 1)
		return micro >= 81;
	return micro >= 8;
}

int
doctor_pw_sync_timeline(const char *daemon_version, const char *library_version)
{
	int d = version_has_sync(daemon_version), l = version_has_sync(library_version);

	if (d < 0 || l < 0)
		return -1;
	return d && l;
}

struct json_object *
doctor_pw_json(const struct doctor_pw *pw)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "running", json_object_new_boolean(pw->running));
	json_object_object_add(o, "daemon_version", info_json_str(pw->daemon_version));
	json_object_object_add(o, "library_version", info_json_str(pw->library_version));
	json_object_object_add(o, "sync_timeline", json_object_new_int(pw->sync_timeline));
	json_object_object_add(o, "remote", info_json_str(pw->remote));
	json_object_object_add(o, "elapsed_ms", json_object_new_int(pw->elapsed_ms));
	json_object_object_add(o, "why", info_json_str(pw->why));
	return o;
}

void
doctor_pw_print(FILE *f, const struct doctor_pw *pw)
{
	static const char *const verdict[] = { "unknown", "no", "yes" };

	if (!pw->running) {
		fprintf(f, "PipeWire: not running (library %s): %s\n", pw->library_version,
			pw->why);
		return;
	}
	fprintf(f, "PipeWire: daemon %s, library %s at %s\n", pw->daemon_version,
		pw->library_version, pw->remote);
	fprintf(f, "  SyncTimeline negotiable: %s: %s\n", verdict[pw->sync_timeline + 1], pw->why);
}
