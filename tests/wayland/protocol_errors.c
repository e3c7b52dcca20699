/* SPDX-License-Identifier: MIT */
/*
 * wl-protocol-errors: every protocol error of both explicit-sync globals,
 * reached by a scripted raw-protocol client against the example compositor
 * (syncbridge-wl-compositor, started as a child process), each answered with
 * the interface, object and code the protocol XML specifies; and after each
 * case the compositor still serves a bystander client that connected first.
 * Positive cases (legal sequences) must raise nothing.
 *
 *   wl-protocol-errors COMPOSITOR [--require-all]
 *   wl-protocol-errors --connect SOCKET
 *
 * --connect runs the same cases against a compositor that is already
 * running (a real peer: KWin, mutter; tests/wayland/syncobj-peer.sh), to
 * measure what it does, not to judge it: each error case prints what the
 * XML says and what the peer raised ("as the XML" or "differs"), and only
 * these fail the run: a legal sequence answered with an error, the peer
 * gone (the bystander's roundtrip), a case that could not run. The
 * dma-buf is then a virtio_gpu dumb buffer (what the peers' EGL imports in
 * the test guest), and the bystander only roundtrips (a peer sends frame
 * callbacks to shown surfaces only).
 *
 * Cases that need kernel objects (a valid sync_file, a dma-buf, a DRM syncobj
 * timeline) are skipped where those cannot be made (the host tier) and say
 * so; --require-all (the VM tier) turns any such skip into a failure.
 * Finally the compositor's open fds must be back where they started.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo_util.h" /* demo_vgem_buf_create(): any card's dumb buffer */
#include "harness.h"
#include "kernel.h"
#include "wlt.h"

struct env {
	const char *socket;
	int vgem_fd;          /* vgem card node, or -1 */
	int syncobj_fd;       /* render node with timeline syncobjs, or -1 */
	struct sbk_buf buf;   /* a vgem dma-buf for wl_buffers (fd -1: none) */
	bool require_all;
	int skipped;
	int ran;
	bool peer;            /* --connect: measure, do not judge (above) */
	int card_fd;          /* peer: the virtio_gpu card node of buf */
	struct demo_vgem_buf dumb; /* peer: buf's dumb buffer (its dmabuf_fd is buf.fd) */
	int as_xml, differs;  /* peer: error cases */
};

/* What a case needs. */
enum need {
	NEED_NONE = 0,
	NEED_FENCE = 1 << 0,   /* valid sync_files */
	NEED_DMABUF = 1 << 1,  /* a dma-buf wl_buffer */
	NEED_SYNCOBJ = 1 << 2, /* the linux-drm-syncobj global + a client timeline */
};

struct case_def;

/* A case's client: everything a script may use. */
struct cc {
	struct env *env;
	const struct case_def *cd;
	struct wlt_client c;
	/* Expected error (iface NULL: none expected). */
	const char *iface;
	uint32_t code;
	uint32_t id;
};

static int
fence_fd(struct cc *cc)
{
	struct sbk_fence f;
	int fd;

	/* A signalled vgem fence as a sync_file (valid, and never holds anything up). */
	if (sbk_fence_create(cc->env->vgem_fd, true, &f) < 0)
		return -1;
	sbk_fence_signal(&f);
	fd = dup(f.sync_file);
	sbk_fence_destroy(&f);
	return fd;
}

static int
pipe_fd(void)
{
	int p[2];

	if (pipe(p) < 0)
		return -1;
	close(p[1]);
	return p[0];
}

static struct wl_buffer *
dmabuf_buffer(struct cc *cc)
{
	return wlt_dmabuf_buffer(&cc->c, cc->env->buf.fd, 16, 16, 64);
}

/* A client timeline (a new syncobj on the render node) imported over the wire;
 * the syncobj lives on in the compositor's import, our handle is dropped. */
static struct wp_linux_drm_syncobj_timeline_v1 *
timeline(struct cc *cc)
{
	return wlt_timeline_new(&cc->c, cc->env->syncobj_fd, NULL);
}

static void
expect(struct cc *cc, const struct wl_interface *iface, void *proxy, uint32_t code)
{
	cc->iface = iface->name;
	cc->id = wl_proxy_get_id(proxy);
	cc->code = code;
}

/*
 * The scripts leave the objects they make to their connection, which the
 * compositor's protocol error ends anyway: libwayland-client frees no live
 * proxy at wl_display_disconnect(), so each case leaks its proxies (96 bytes
 * each) on this, the raw client's, side. That is the scripts' shortcut, not
 * a bug of the helpers (the compositor is another process, checked on its
 * own): LeakSanitizer ignores libwayland-client's allocations in this
 * program only.
 */
const char *__lsan_default_suppressions(void);
const char *
__lsan_default_suppressions(void)
{
	return "leak:libwayland-client.so\n";
}

#define V1_SURF(e) ZWP_LINUX_SURFACE_SYNCHRONIZATION_V1_ERROR_##e
#define SO_SURF(e) WP_LINUX_DRM_SYNCOBJ_SURFACE_V1_ERROR_##e

/*
 * A commit that the surface's sync object answers with an error: a buffer
 * attached (or none), an acquire and a release (v1: a fence, get_release;
 * syncobj: the points), each set or not, in that order.
 */
enum attach { NO_ATTACH, ATTACH_NULL, ATTACH_DMABUF, ATTACH_SHM };
struct commit_case {
	enum attach attach;
	bool acquire, release;
	uint32_t acquire_point[2], release_point[2]; /* syncobj: hi, lo */
	uint32_t error;
};

/*
 * A scripted case (scripted()): requests in order on one wl_surface (made at
 * the first get), its extension objects and the managers; the error is
 * expected on `on`, with the code in commit.error.
 */
enum step {
	STEP_END = 0,
	STEP_GET_V1,            /* get_synchronization for the surface */
	STEP_GET_SO,            /* wp_linux_drm_syncobj_manager_v1.get_surface */
	STEP_TIMELINE,          /* import a client timeline (the points' below) */
	STEP_DESTROY_SURFACE,   /* wl_surface.destroy */
	STEP_FENCE,             /* v1 set_acquire_fence: a valid sync_file */
	STEP_FENCE_PIPE,        /* v1 set_acquire_fence: a pipe */
	STEP_FENCE_DMABUF,      /* v1 set_acquire_fence: a dma-buf, a fine fd but not a fence */
	STEP_GET_RELEASE,       /* v1 get_release */
	STEP_ACQUIRE_POINT,     /* syncobj set_acquire_point(timeline, 0, 1) */
	STEP_RELEASE_POINT,     /* syncobj set_release_point(timeline, 0, 1) */
	STEP_IMPORT_PIPE,       /* import_timeline of a pipe */
	STEP_IMPORT_SYNC_FILE,  /* import_timeline of a sync_file: a fence, not a syncobj */
};
enum on { ON_V1_MANAGER, ON_SO_MANAGER, ON_V1_SYNC, ON_SO_SURFACE };

/* A case: its script, what it needs to run. */
struct case_def {
	const char *name;
	void (*run)(struct cc *cc);
	unsigned need;
	bool v1, syncobj; /* which globals the case needs */
	struct commit_case commit; /* v1_commit, so_commit; scripted(): .error */
	enum step steps[5];        /* scripted() */
	enum on on;                /* scripted() */
};

static void
attach(struct cc *cc, struct wl_surface *s, enum attach a)
{
	if (a == ATTACH_NULL)
		wl_surface_attach(s, NULL, 0, 0);
	else if (a == ATTACH_DMABUF)
		wl_surface_attach(s, dmabuf_buffer(cc), 0, 0);
	else if (a == ATTACH_SHM)
		wl_surface_attach(s, wlt_shm_buffer(&cc->c, 4), 0, 0);
}

/* ---- scripted cases (the step tables in cases[]) ----------------------------------- */

static void
scripted(struct cc *cc)
{
	const struct case_def *cd = cc->cd;
	struct wl_surface *s = NULL;
	struct zwp_linux_surface_synchronization_v1 *v1 = NULL;
	struct wp_linux_drm_syncobj_surface_v1 *so = NULL;
	struct wp_linux_drm_syncobj_timeline_v1 *tl = NULL;
	int fd;

	for (const enum step *st = cd->steps; *st != STEP_END; st++) {
		switch (*st) {
		case STEP_END:
			break;
		case STEP_GET_V1:
			if (!s)
				s = wl_compositor_create_surface(cc->c.compositor);
			v1 = zwp_linux_explicit_synchronization_v1_get_synchronization(cc->c.explicit_sync, s);
			break;
		case STEP_GET_SO:
			if (!s)
				s = wl_compositor_create_surface(cc->c.compositor);
			so = wp_linux_drm_syncobj_manager_v1_get_surface(cc->c.syncobj, s);
			break;
		case STEP_TIMELINE:
			tl = timeline(cc);
			break;
		case STEP_DESTROY_SURFACE:
			wl_surface_destroy(s);
			break;
		case STEP_FENCE:
		case STEP_FENCE_PIPE:
			fd = *st == STEP_FENCE ? fence_fd(cc) : pipe_fd();
			zwp_linux_surface_synchronization_v1_set_acquire_fence(v1, fd);
			close(fd);
			break;
		case STEP_FENCE_DMABUF:
			zwp_linux_surface_synchronization_v1_set_acquire_fence(v1, cc->env->buf.fd);
			break;
		case STEP_GET_RELEASE:
			zwp_linux_surface_synchronization_v1_get_release(v1);
			break;
		case STEP_ACQUIRE_POINT:
			wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, tl, 0, 1);
			break;
		case STEP_RELEASE_POINT:
			wp_linux_drm_syncobj_surface_v1_set_release_point(so, tl, 0, 1);
			break;
		case STEP_IMPORT_PIPE:
		case STEP_IMPORT_SYNC_FILE:
			fd = *st == STEP_IMPORT_PIPE ? pipe_fd() : fence_fd(cc);
			wp_linux_drm_syncobj_manager_v1_import_timeline(cc->c.syncobj, fd);
			close(fd);
			break;
		}
	}
	if (cd->on == ON_V1_MANAGER)
		expect(cc, &zwp_linux_explicit_synchronization_v1_interface, cc->c.explicit_sync,
		       cd->commit.error);
	else if (cd->on == ON_SO_MANAGER)
		expect(cc, &wp_linux_drm_syncobj_manager_v1_interface, cc->c.syncobj, cd->commit.error);
	else if (cd->on == ON_V1_SYNC)
		expect(cc, &zwp_linux_surface_synchronization_v1_interface, v1, cd->commit.error);
	else
		expect(cc, &wp_linux_drm_syncobj_surface_v1_interface, so, cd->commit.error);
}

/* ---- zwp_linux_explicit_synchronization_v1 ------------------------------------------- */

static struct zwp_linux_surface_synchronization_v1 *
v1_setup(struct cc *cc, struct wl_surface **s)
{
	*s = wl_compositor_create_surface(cc->c.compositor);
	return zwp_linux_explicit_synchronization_v1_get_synchronization(cc->c.explicit_sync, *s);
}

static void
v1_commit(struct cc *cc)
{
	const struct commit_case *k = &cc->cd->commit;
	struct wl_surface *s;
	struct zwp_linux_surface_synchronization_v1 *sync = v1_setup(cc, &s);
	int fd = k->acquire ? fence_fd(cc) : -1;

	attach(cc, s, k->attach);
	if (k->acquire) {
		zwp_linux_surface_synchronization_v1_set_acquire_fence(sync, fd);
		close(fd);
	}
	if (k->release)
		zwp_linux_surface_synchronization_v1_get_release(sync);
	wl_surface_commit(s);
	expect(cc, &zwp_linux_surface_synchronization_v1_interface, sync, k->error);
}

/* Legal: a dma-buf with fence + release; shm with a release only; recreate after destroy. */
static void
v1_ok(struct cc *cc)
{
	struct wl_surface *s;
	struct zwp_linux_surface_synchronization_v1 *sync = v1_setup(cc, &s);
	int fd = fence_fd(cc);
	wl_surface_attach(s, dmabuf_buffer(cc), 0, 0);
	zwp_linux_surface_synchronization_v1_set_acquire_fence(sync, fd);
	zwp_linux_surface_synchronization_v1_get_release(sync);
	close(fd);
	wl_surface_commit(s);
	wl_surface_attach(s, wlt_shm_buffer(&cc->c, 2), 0, 0);
	zwp_linux_surface_synchronization_v1_get_release(sync);
	wl_surface_commit(s);
	wl_surface_commit(s); /* nothing attached, nothing set */
	zwp_linux_surface_synchronization_v1_destroy(sync);
	sync = zwp_linux_explicit_synchronization_v1_get_synchronization(cc->c.explicit_sync, s);
	wl_surface_attach(s, NULL, 0, 0);
	wl_surface_commit(s);
}

/* Legal without kernel objects: get_release with shm, destroy + recreate. */
static void
v1_ok_shm(struct cc *cc)
{
	struct wl_surface *s;
	struct zwp_linux_surface_synchronization_v1 *sync = v1_setup(cc, &s);
	wl_surface_attach(s, wlt_shm_buffer(&cc->c, 3), 0, 0);
	zwp_linux_surface_synchronization_v1_get_release(sync);
	wl_surface_commit(s);
	zwp_linux_surface_synchronization_v1_destroy(sync);
	sync = zwp_linux_explicit_synchronization_v1_get_synchronization(cc->c.explicit_sync, s);
	wl_surface_commit(s);
	/* The sync object outlives its surface harmlessly until it is used. */
	wl_surface_destroy(s);
	zwp_linux_surface_synchronization_v1_destroy(sync);
}

/* ---- wp_linux_drm_syncobj_manager_v1 -------------------------------------------------- */

static struct wp_linux_drm_syncobj_surface_v1 *
so_setup(struct cc *cc, struct wl_surface **s)
{
	*s = wl_compositor_create_surface(cc->c.compositor);
	return wp_linux_drm_syncobj_manager_v1_get_surface(cc->c.syncobj, *s);
}

static void
so_commit(struct cc *cc)
{
	const struct commit_case *k = &cc->cd->commit;
	struct wl_surface *s;
	struct wp_linux_drm_syncobj_surface_v1 *so = so_setup(cc, &s);
	struct wp_linux_drm_syncobj_timeline_v1 *tl = timeline(cc);

	attach(cc, s, k->attach);
	if (k->acquire)
		wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, tl, k->acquire_point[0], k->acquire_point[1]);
	if (k->release)
		wp_linux_drm_syncobj_surface_v1_set_release_point(so, tl, k->release_point[0], k->release_point[1]);
	wl_surface_commit(s);
	expect(cc, &wp_linux_drm_syncobj_surface_v1_interface, so, k->error);
}

/* Legal: points on two timelines or ordered on one; no buffer, no points; re-create. */
static void
so_ok(struct cc *cc)
{
	struct wl_surface *s;
	struct wp_linux_drm_syncobj_surface_v1 *so = so_setup(cc, &s);
	struct wp_linux_drm_syncobj_timeline_v1 *a = timeline(cc), *b = timeline(cc);
	/* The points are signalled by nobody: the commits stay pending, which is legal. */
	wl_surface_attach(s, dmabuf_buffer(cc), 0, 0);
	wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, a, 0, 1);
	wp_linux_drm_syncobj_surface_v1_set_release_point(so, a, 0, 2);
	wl_surface_commit(s);
	wl_surface_attach(s, dmabuf_buffer(cc), 0, 0);
	wp_linux_drm_syncobj_surface_v1_set_acquire_point(so, b, 0, 7);
	wp_linux_drm_syncobj_surface_v1_set_release_point(so, a, 0, 3);
	wl_surface_commit(s);
	wl_surface_commit(s);
	wp_linux_drm_syncobj_timeline_v1_destroy(a); /* points already set stay */
	wp_linux_drm_syncobj_surface_v1_destroy(so);
	so = wp_linux_drm_syncobj_manager_v1_get_surface(cc->c.syncobj, s);
	wl_surface_attach(s, NULL, 0, 0);
	wl_surface_commit(s);
	/* Destroying the surface with commits still waiting is fine too. */
	wl_surface_destroy(s);
	wp_linux_drm_syncobj_surface_v1_destroy(so);
	wp_linux_drm_syncobj_timeline_v1_destroy(b);
}

static const struct case_def cases[] = {
	{ "v1-synchronization-exists", scripted, NEED_NONE, true, false,
	  { .error = ZWP_LINUX_EXPLICIT_SYNCHRONIZATION_V1_ERROR_SYNCHRONIZATION_EXISTS },
	  { STEP_GET_V1, STEP_GET_V1 }, ON_V1_MANAGER },
	{ "v1-invalid-fence-pipe", scripted, NEED_NONE, true, false, { .error = V1_SURF(INVALID_FENCE) },
	  { STEP_GET_V1, STEP_FENCE_PIPE }, ON_V1_SYNC },
	{ "v1-invalid-fence-dmabuf", scripted, NEED_DMABUF, true, false, { .error = V1_SURF(INVALID_FENCE) },
	  { STEP_GET_V1, STEP_FENCE_DMABUF }, ON_V1_SYNC },
	{ "v1-duplicate-fence", scripted, NEED_FENCE, true, false, { .error = V1_SURF(DUPLICATE_FENCE) },
	  { STEP_GET_V1, STEP_FENCE, STEP_FENCE }, ON_V1_SYNC },
	{ "v1-duplicate-release", scripted, NEED_NONE, true, false, { .error = V1_SURF(DUPLICATE_RELEASE) },
	  { STEP_GET_V1, STEP_GET_RELEASE, STEP_GET_RELEASE }, ON_V1_SYNC },
	{ "v1-no-surface-get-release", scripted, NEED_NONE, true, false, { .error = V1_SURF(NO_SURFACE) },
	  { STEP_GET_V1, STEP_DESTROY_SURFACE, STEP_GET_RELEASE }, ON_V1_SYNC },
	{ "v1-no-surface-set-acquire-fence", scripted, NEED_FENCE, true, false, { .error = V1_SURF(NO_SURFACE) },
	  { STEP_GET_V1, STEP_DESTROY_SURFACE, STEP_FENCE }, ON_V1_SYNC },
	{ "v1-unsupported-buffer-shm", v1_commit, NEED_FENCE, true, false,
	  { ATTACH_SHM, true, false, { 0 }, { 0 }, V1_SURF(UNSUPPORTED_BUFFER) } },
	{ "v1-no-buffer-acquire-fence", v1_commit, NEED_FENCE, true, false,
	  { NO_ATTACH, true, false, { 0 }, { 0 }, V1_SURF(NO_BUFFER) } },
	{ "v1-no-buffer-release", v1_commit, NEED_NONE, true, false,
	  { NO_ATTACH, false, true, { 0 }, { 0 }, V1_SURF(NO_BUFFER) } },
	{ "v1-no-buffer-null-attach", v1_commit, NEED_NONE, true, false,
	  { ATTACH_NULL, false, true, { 0 }, { 0 }, V1_SURF(NO_BUFFER) } },
	{ "v1-legal-sequences", v1_ok, NEED_FENCE | NEED_DMABUF, true, false },
	{ "v1-legal-sequences-shm", v1_ok_shm, NEED_NONE, true, false },
	{ "syncobj-surface-exists", scripted, NEED_SYNCOBJ, false, true,
	  { .error = WP_LINUX_DRM_SYNCOBJ_MANAGER_V1_ERROR_SURFACE_EXISTS },
	  { STEP_GET_SO, STEP_GET_SO }, ON_SO_MANAGER },
	{ "syncobj-invalid-timeline-pipe", scripted, NEED_SYNCOBJ, false, true,
	  { .error = WP_LINUX_DRM_SYNCOBJ_MANAGER_V1_ERROR_INVALID_TIMELINE }, { STEP_IMPORT_PIPE }, ON_SO_MANAGER },
	{ "syncobj-invalid-timeline-sync-file", scripted, NEED_SYNCOBJ | NEED_FENCE, false, true,
	  { .error = WP_LINUX_DRM_SYNCOBJ_MANAGER_V1_ERROR_INVALID_TIMELINE }, { STEP_IMPORT_SYNC_FILE },
	  ON_SO_MANAGER },
	{ "syncobj-no-surface-acquire", scripted, NEED_SYNCOBJ, false, true, { .error = SO_SURF(NO_SURFACE) },
	  { STEP_GET_SO, STEP_TIMELINE, STEP_DESTROY_SURFACE, STEP_ACQUIRE_POINT }, ON_SO_SURFACE },
	{ "syncobj-no-surface-release", scripted, NEED_SYNCOBJ, false, true, { .error = SO_SURF(NO_SURFACE) },
	  { STEP_GET_SO, STEP_TIMELINE, STEP_DESTROY_SURFACE, STEP_RELEASE_POINT }, ON_SO_SURFACE },
	{ "syncobj-no-buffer", so_commit, NEED_SYNCOBJ, false, true,
	  { NO_ATTACH, true, true, { 0, 1 }, { 0, 2 }, SO_SURF(NO_BUFFER) } },
	{ "syncobj-no-buffer-release-only", so_commit, NEED_SYNCOBJ, false, true,
	  { ATTACH_NULL, false, true, { 0 }, { 0, 2 }, SO_SURF(NO_BUFFER) } },
	{ "syncobj-no-acquire-point", so_commit, NEED_SYNCOBJ | NEED_DMABUF, false, true,
	  { ATTACH_DMABUF, false, true, { 0 }, { 0, 2 }, SO_SURF(NO_ACQUIRE_POINT) } },
	{ "syncobj-no-release-point", so_commit, NEED_SYNCOBJ | NEED_DMABUF, false, true,
	  { ATTACH_DMABUF, true, false, { 0, 1 }, { 0 }, SO_SURF(NO_RELEASE_POINT) } },
	{ "syncobj-unsupported-buffer-shm", so_commit, NEED_SYNCOBJ, false, true,
	  { ATTACH_SHM, true, true, { 0, 1 }, { 0, 2 }, SO_SURF(UNSUPPORTED_BUFFER) } },
	{ "syncobj-conflicting-points-equal", so_commit, NEED_SYNCOBJ | NEED_DMABUF, false, true,
	  { ATTACH_DMABUF, true, true, { 0, 5 }, { 0, 5 }, SO_SURF(CONFLICTING_POINTS) } },
	/* 64-bit points: the high word is compared too. */
	{ "syncobj-conflicting-points-after", so_commit, NEED_SYNCOBJ | NEED_DMABUF, false, true,
	  { ATTACH_DMABUF, true, true, { 1, 0 }, { 0, 0xffffffff }, SO_SURF(CONFLICTING_POINTS) } },
	{ "cross-v1-then-syncobj", scripted, NEED_SYNCOBJ, true, true,
	  { .error = WP_LINUX_DRM_SYNCOBJ_MANAGER_V1_ERROR_SURFACE_EXISTS }, { STEP_GET_V1, STEP_GET_SO },
	  ON_SO_MANAGER },
	{ "cross-syncobj-then-v1", scripted, NEED_SYNCOBJ, true, true,
	  { .error = ZWP_LINUX_EXPLICIT_SYNCHRONIZATION_V1_ERROR_SYNCHRONIZATION_EXISTS },
	  { STEP_GET_SO, STEP_GET_V1 }, ON_V1_MANAGER },
	{ "syncobj-legal-sequences", so_ok, NEED_SYNCOBJ | NEED_DMABUF, false, true },
};

/* The bystander commits a frame and must get its callback. */
static void
bystander_check(struct env *env, struct wlt_client *by, struct wl_surface *surf, const char *after)
{
	bool done = false;

	if (env->peer) {
		CHECK(wl_display_roundtrip(by->display) >= 0,
		      "after %s: the compositor still answers another client (roundtrip)", after);
		return;
	}

	wl_surface_attach(surf, wlt_shm_buffer(by, 0x5a5a5a5a), 0, 0);
	wlt_frame(surf, &done);
	wl_surface_commit(surf);
	CHECK(wlt_wait_flag(by, &done, 5000 * WLT_MS) == 0,
	      "after %s: the compositor still serves another client (frame callback)", after);
}

static void
run_case(struct env *env, const struct case_def *cd, struct wlt_client *by, struct wl_surface *bys)
{
	const char *missing = NULL;
	struct cc cc;
	const char *iface;
	uint32_t code, id;
	int r;

	memset(&cc, 0, sizeof(cc));
	cc.env = env;
	cc.cd = cd;
	if ((cd->need & NEED_FENCE) && env->vgem_fd < 0)
		missing = "a valid sync_file (needs vgem)";
	else if ((cd->need & NEED_DMABUF) && env->buf.fd < 0)
		missing = "a dma-buf (needs vgem)";
	else if ((cd->need & NEED_SYNCOBJ) && env->syncobj_fd < 0)
		missing = "a DRM node with timeline syncobjs";
	if (!missing) {
		r = wlt_client_connect(&cc.c, env->socket);
		REQUIRE(r == 0, "connect: %s", strerror(-r));
		if (cd->v1 && !cc.c.explicit_sync)
			missing = "the zwp_linux_explicit_synchronization_v1 global";
		else if (cd->syncobj && !cc.c.syncobj)
			missing = "the wp_linux_drm_syncobj_manager_v1 global";
	}
	if (missing) {
		env->skipped++;
		if (cc.c.display)
			wlt_client_disconnect(&cc.c);
		if (env->require_all)
			CHECK(false, "%s: cannot run here: no %s", cd->name, missing);
		else
			tb_note("skip %s: no %s here", cd->name, missing);
		return;
	}
	env->ran++;
	cd->run(&cc);
	r = wlt_roundtrip_error(&cc.c, &iface, &code, &id);
	if (env->peer && cc.iface) {
		bool same = r < 0 && strcmp(iface, cc.iface) == 0 && code == cc.code && id == cc.id;

		printf("peer: %-38s the XML: %s@%u error %u; the peer: ", cd->name, cc.iface, cc.id,
		       cc.code);
		if (r < 0)
			printf("%s@%u error %u", iface, id, code);
		else
			printf("no error");
		printf(": %s\n", same ? "as the XML" : "differs");
		same ? env->as_xml++ : env->differs++;
	} else if (!cc.iface) {
		CHECK(r == 0, "%s: legal requests raised no error (got %s error %u on object %u)",
		      cd->name, iface, code, id);
	} else {
		CHECK(r < 0 && strcmp(iface, cc.iface) == 0 && code == cc.code && id == cc.id,
		      "%s: want %s@%u error %u, got %s@%u error %u", cd->name, cc.iface, cc.id,
		      cc.code, r < 0 ? iface : "(none)", id, code);
	}
	wlt_client_disconnect(&cc.c);
	bystander_check(env, by, bys, cd->name);
}

/*
 * --connect: a 16x16 XRGB8888 dumb buffer on virtio_gpu's card node, as a
 * dma-buf (the peers import virtio_gpu's buffers, not vgem's). 0 / -errno.
 */
static int
peer_buffer(struct env *env)
{
	int r = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, false);

	if (r < 0)
		return r;
	env->card_fd = r;
	r = demo_vgem_buf_create(env->card_fd, 16, 16, 32, &env->dumb);
	if (r < 0)
		return r;
	if (env->dumb.pitch != 64)
		return -EINVAL;
	env->buf.fd = env->dumb.dmabuf_fd; /* owned by env->dumb */
	return 0;
}

int
main(int argc, char **argv)
{
	struct env env;
	struct wlt_child child;
	struct wlt_client by;
	struct wl_surface *bys;
	const char *path = argc > 1 ? argv[1] : NULL;
	int fds0 = -1, fds1, r, status;

	memset(&env, 0, sizeof(env));
	env.buf.fd = -1;
	env.vgem_fd = -1;
	env.syncobj_fd = -1;
	env.card_fd = -1;
	env.dumb = (struct demo_vgem_buf){ .vgem_fd = -1, .dmabuf_fd = -1 };
	if (path && strcmp(path, "--connect") == 0) {
		env.peer = true;
		env.socket = argc > 2 ? argv[2] : NULL;
		REQUIRE(env.socket, "usage: wl-protocol-errors --connect SOCKET");
	}
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "--require-all") == 0)
			env.require_all = true;
	REQUIRE(path, "usage: wl-protocol-errors COMPOSITOR [--require-all] | --connect SOCKET");
	setvbuf(stdout, NULL, _IOLBF, 0);

	r = sbk_vgem_open();
	if (r >= 0) {
		env.vgem_fd = r;
		if (env.peer) {
			r = peer_buffer(&env);
			REQUIRE(r == 0, "--connect: a virtio_gpu dumb buffer: %s", strerror(-r));
		} else if (sbk_buf_create(SBK_BUF_VGEM, env.vgem_fd, 16 * 64, &env.buf) < 0) {
			env.buf.fd = -1;
		}
	}
	r = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);
	if (r >= 0)
		env.syncobj_fd = r;
	tb_note("vgem: %s, syncobj node: %s", env.vgem_fd >= 0 ? "yes" : "no",
		     env.syncobj_fd >= 0 ? "yes" : "no");

	if (!env.peer) {
		r = wlt_child_start(&child, path, NULL);
		REQUIRE(r == 0, "start %s: %s", path, strerror(-r));
		env.socket = child.socket;
	}

	r = wlt_client_connect(&by, env.socket);
	REQUIRE(r == 0, "bystander connect: %s", strerror(-r));
	bys = wl_compositor_create_surface(by.compositor);
	bystander_check(&env, &by, bys, "start");
	if (!env.peer)
		fds0 = wlt_child_count_fds(&child);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&env, &cases[i], &by, bys);

	/* Let the compositor see the last disconnect, then count its fds. */
	bystander_check(&env, &by, bys, "all cases");
	if (env.peer) {
		wlt_client_disconnect(&by);
		printf("peer: %d error cases as the XML says, %d differ\n", env.as_xml, env.differs);
	} else {
		fds1 = wlt_child_count_fds(&child);
		CHECK_EQ(fds1, fds0, "compositor fds after all clients of the cases are gone");
		wlt_client_disconnect(&by);
		status = wlt_child_stop(&child);
		CHECK_EQ(status, 0, "compositor exit status after SIGTERM");
	}
	tb_note("%d cases ran, %d skipped", env.ran, env.skipped);
	if (!env.peer)
		sbk_buf_destroy(&env.buf);
	else
		demo_vgem_buf_destroy(&env.dumb);
	if (env.card_fd >= 0)
		close(env.card_fd);
	if (env.vgem_fd >= 0)
		close(env.vgem_fd);
	if (env.syncobj_fd >= 0)
		close(env.syncobj_fd);
	if (env.ran == 0)
		tb_skip("no case could run here");
	return tb_finish();
}
