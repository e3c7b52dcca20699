/* SPDX-License-Identifier: MIT */
/*
 * The fuzz target's compositor (wl_server_requests.c has the story): the
 * example compositor with the helper on this process's wl_display, one per
 * variant, kept across inputs; each buffer use checked against the commit
 * it came with, and the state after each input.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include <wayland-client-core.h>
#include <wayland-server-core.h>

#include "wlc_compositor.h"
#include "wlc_test.h"

#include "fake_kernel.h"
#include "harness.h"
#include "wl_fuzz.h"

static struct server servers[2];
struct server *srv;
static int baseline_fds = -1;
static char runtime_dir[64];

static bool
acq_signalled(const struct acq *a)
{
	if (a->sync_file >= 0 && !fk_sync_file_is_signalled(a->sync_file))
		return false;
	if (a->syncobj >= 0 && fk_syncobj_signalled(a->syncobj) < a->point)
		return false;
	return true;
}

struct surf_queue *
queue_of(struct wl_client *client, uint32_t id, bool create)
{
	struct surf_queue *free_q = NULL;

	for (size_t i = 0; i < sizeof(srv->queues) / sizeof(srv->queues[0]); i++) {
		struct surf_queue *q = &srv->queues[i];
		if (q->id == id && q->client == client)
			return q;
		if (!q->id && !free_q)
			free_q = q;
	}
	if (!create || !free_q)
		return NULL;
	memset(free_q, 0, sizeof(*free_q));
	free_q->id = id;
	free_q->client = client;
	return free_q;
}

static void
hook_used(void *data, const struct wlc_used *u)
{
	struct surf_queue *q = queue_of(u->client, u->surface_id, false);

	if (!q || q->n == 0)
		return; /* a commit we did not track (queue overflow) */
	struct acq a = q->q[q->head];
	q->head = (q->head + 1) % NQ;
	q->n--;
	if (srv->holds && !acq_signalled(&a))
		fail("surface %u: buffer used before its acquire (sync_file %d, syncobj %d point %llu)",
		     u->surface_id, a.sync_file, a.syncobj, (unsigned long long)a.point);
	if (srv == &servers[0] && !a.implicit_done &&
	    u->acquire_status != (a.sync_file >= 0 && fk_sync_file_is_errored(a.sync_file) ? -EIO : 0))
		fail("surface %u: acquire status %d, but the fence (sync_file %d) %s", u->surface_id,
		     u->acquire_status, a.sync_file,
		     fk_sync_file_is_errored(a.sync_file) ? "completed with -EIO" : "did not fail");
}

static const struct wlc_comp_hooks hooks = { .buffer_used = hook_used };

static void
cleanup(void)
{
	for (int i = 0; i < 2; i++)
		if (servers[i].comp)
			wlc_comp_destroy(servers[i].comp);
	fk_reset();
	if (runtime_dir[0]) {
		char path[128];
		snprintf(path, sizeof(path), "rm -rf '%s'", runtime_dir);
		if (system(path) != 0)
			fprintf(stderr, "could not remove %s\n", runtime_dir);
	}
}

static void
quiet_log(const char *fmt, va_list ap)
{
}

struct server *
server_get(int variant)
{
	struct server *s = &servers[variant];
	struct wlc_comp_options opt;
	int err = 0;

	if (s->comp)
		return s;
	if (!runtime_dir[0]) {
		snprintf(runtime_dir, sizeof(runtime_dir), "/tmp/sb-fuzz-wl-XXXXXX");
		if (!mkdtemp(runtime_dir))
			abort();
		setenv("XDG_RUNTIME_DIR", runtime_dir, 1);
		atexit(cleanup);
		/* Protocol errors are expected; libwayland would print each one. */
		if (!getenv("SB_FUZZ_VERBOSE")) {
			wl_log_set_handler_server(quiet_log);
			wl_log_set_handler_client(quiet_log);
		}
	}
	memset(&opt, 0, sizeof(opt));
	opt.drm_fd = fk_drm_fd();
	opt.helper_flags = variant == 0 ? SB_WL_SERVER_WAIT_IMPLICIT : SB_WL_SERVER_NO_WAIT;
	opt.max_pending = 4;
	opt.vgem_fd = -1;
	opt.hooks = &hooks;
	s->comp = wlc_comp_create(&opt, &err);
	if (!s->comp) {
		fprintf(stderr, "wlc_comp_create: %s\n", strerror(-err));
		abort();
	}
	s->display = wlc_comp_get_display(s->comp);
	s->loop = wl_display_get_event_loop(s->display);
	s->helper = wlc_comp_get_helper(s->comp);
	/* SB_FUZZ_CONTROL=1: check the ordering on the no-wait compositor too
	 * (it must fail: the invariant can fail). */
	s->holds = variant == 0 || getenv("SB_FUZZ_CONTROL");
	if (sb_wl_server_get_protocols(s->helper) !=
	    ((1u << SB_WL_SYNC_EXPLICIT_V1) | (1u << SB_WL_SYNC_DRM_SYNCOBJ)))
		fail("the fake DRM fd did not give both globals");
	return s;
}

void
queues_forget(struct wl_client *client)
{
	for (size_t i = 0; i < sizeof(srv->queues) / sizeof(srv->queues[0]); i++)
		if (srv->queues[i].client == client)
			memset(&srv->queues[i], 0, sizeof(srv->queues[i]));
}

/*
 * The baseline is taken per input: between inputs libFuzzer's symbolizer
 * (for its NEW_FUNC lines) may start and keep two pipes.
 */
void
fds_baseline(void)
{
	baseline_fds = tb_count_fds();
}

void
check_clean(void)
{
	struct sb_wl_server_stats st;
	int fds;

	sb_wl_server_get_stats(srv->helper, &st);
	if (st.waits_pending || st.commits_queued || st.waits_threaded)
		fail("after the client left: %u waits, %u queued commits, %u waiter threads",
		     st.waits_pending, st.commits_queued, st.waits_threaded);
	fk_reset();
	fds = tb_count_fds();
	if (fds != baseline_fds)
		fail("fds: %d before the input, %d after", baseline_fds, fds);
}
