/* SPDX-License-Identifier: MIT */
/*
 * linux-drm-syncobj-v1 done by the proxy for a compositor without it
 * (docs/wl-proxy.md). The manager, timelines and per-surface objects live
 * only in the proxy (conn.c gives their ids placeholders at the compositor).
 * At wl_surface.commit the points the client set are checked as the XML
 * says; the release point goes to the buffer's list and the acquire point
 * holds the commit — and everything the client sent after it — until it
 * signals (an eventfd waiter in the poll loop). On the compositor's
 * wl_buffer.release each release point of that buffer is signalled with the
 * dma-buf's fences at that moment (EXPORT_SYNC_FILE, every fence a writer
 * would wait for, imported into the point), so a compositor still reading
 * the buffer on its GPU is waited for. The dma-buf is the dup the proxy kept
 * of zwp_linux_buffer_params_v1.add's plane 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/syncobj.h>

#include <drm.h>

#include "conn.h"
#include "demo_util.h"

/* wp_linux_drm_syncobj_manager_v1 / _surface_v1 error codes (the XML). */
#define ERR_SURFACE_EXISTS 0
#define ERR_INVALID_TIMELINE 1
#define ERR_NO_SURFACE 1
#define ERR_UNSUPPORTED_BUFFER 2
#define ERR_NO_BUFFER 3
#define ERR_NO_ACQUIRE_POINT 4
#define ERR_NO_RELEASE_POINT 5
#define ERR_CONFLICTING_POINTS 6

/* An imported timeline: its handle on ctx->drm_fd, kept while a point needs it. */
struct timeline {
	int refs;
	uint32_t handle;
	int drm_fd; /* borrowed: ctx->drm_fd */
};

struct point {
	struct timeline *tl; /* a reference, or NULL: not set */
	uint64_t value;
};

/* wp_linux_drm_syncobj_surface_v1 */
struct sync_surface {
	uint32_t surface; /* the wl_surface's id; 0 once it is destroyed */
	struct point acquire, release;
};

/* sync.c's data on a wl_surface */
struct surface {
	uint32_t sync;   /* its wp_linux_drm_syncobj_surface_v1, or 0 */
	bool attached;   /* attach since the last commit */
	uint32_t buffer; /* what that attach named (0: null) */
};

/* on a wl_buffer made from dma-bufs, and on its zwp_linux_buffer_params_v1 */
struct buffer {
	int dmabuf_fd;   /* owned: plane 0, or -1 */
	struct point *releases;
	size_t n_releases;
};

/* The timeline fd (borrowed) as a handle on drm_fd. 0 or -errno. */
static int
timeline_import(int drm_fd, int fd, uint32_t *handle)
{
	struct drm_syncobj_handle args = { .fd = fd };
	int ret = demo_ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE, &args);

	*handle = args.handle;
	return ret;
}

static void
timeline_drop(int drm_fd, uint32_t handle)
{
	struct drm_syncobj_destroy args = { .handle = handle };

	demo_ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_DESTROY, &args);
}

static void
point_set(struct point *p, struct timeline *tl, uint64_t value)
{
	if (tl)
		tl->refs++;
	if (p->tl && --p->tl->refs == 0) {
		timeline_drop(p->tl->drm_fd, p->tl->handle);
		free(p->tl);
	}
	p->tl = tl;
	p->value = value;
}

/* c->sync: the held commit's acquire point (the rest is on the objects). */
struct conn_sync {
	struct point held;          /* its acquire point */
	struct point held_release;  /* its release point, for the buffer once it goes */
	uint32_t held_buffer;       /* that buffer's id */
};

int
pxy_sync_init(struct pxy_conn *c)
{
	c->sync = calloc(1, sizeof(struct conn_sync));
	return c->sync ? 0 : -ENOMEM;
}

void
pxy_sync_finish(struct pxy_conn *c)
{
	struct conn_sync *cs = c->sync;

	if (cs) {
		point_set(&cs->held, NULL, 0);
		point_set(&cs->held_release, NULL, 0);
	}
	free(cs);
	c->sync = NULL;
}

/* Signal p with the dma-buf's fences now (every fence: the client will write). */
static void
release_signal(struct point *p, int dmabuf_fd)
{
	int fence = -1, ret = -EBADF;

	if (dmabuf_fd >= 0)
		ret = sb_dmabuf_export_sync_file(dmabuf_fd, SB_ACCESS_WRITE, &fence);
	if (ret == 0) {
		ret = sb_syncobj_import_sync_file(p->tl->drm_fd, p->tl->handle, p->value, fence);
		close(fence);
	}
	if (ret != 0) /* no fences to hand over (an old kernel): the compositor is done */
		ret = sb_syncobj_signal(p->tl->drm_fd, p->tl->handle, p->value);
	if (ret != 0)
		pxy_log("cannot signal release point %llu: %s", (unsigned long long)p->value,
			strerror(-ret));
	point_set(p, NULL, 0);
}

static void
buffer_release_all(struct buffer *b)
{
	for (size_t k = 0; k < b->n_releases; k++)
		release_signal(&b->releases[k], b->dmabuf_fd);
	free(b->releases);
	b->releases = NULL;
	b->n_releases = 0;
}

void
pxy_sync_obj_gone(struct pxy_conn *c, struct pxy_obj *o)
{
	const struct pxy_ctx *ctx = c->ctx;
	struct pxy_obj *other;

	if (!o->data)
		return;
	if (o->iface == ctx->sync_timeline) {
		struct point p = { o->data, 0 };

		point_set(&p, NULL, 0); /* the object's reference */
	} else if (o->iface == ctx->sync_surface) {
		struct sync_surface *ss = o->data;

		other = ss->surface ? pxy_conn_obj(c, ss->surface) : NULL;
		if (other && other->data)
			((struct surface *)other->data)->sync = 0;
		point_set(&ss->acquire, NULL, 0);
		point_set(&ss->release, NULL, 0);
		free(ss);
	} else if (o->iface == ctx->surface) {
		struct surface *s = o->data;

		other = s->sync ? pxy_conn_obj(c, s->sync) : NULL;
		if (other && other->data)
			((struct sync_surface *)other->data)->surface = 0;
		free(s);
	} else if (o->iface == ctx->buffer || o->iface == ctx->params) {
		struct buffer *b = o->data;

		buffer_release_all(b);
		if (b->dmabuf_fd >= 0)
			close(b->dmabuf_fd);
		free(b);
	}
	o->data = NULL;
}

static int
manager_request(struct pxy_conn *c, uint32_t id, const struct pxy_parsed *p)
{
	const struct pxy_ctx *ctx = c->ctx;
	struct pxy_obj *s;
	void *data;
	uint32_t handle;
	int ret;

	if (p->opcode == 0) {
		pxy_conn_remove_local(c, id);
		return 0;
	}
	if (p->opcode == 1) { /* get_surface */
		s = pxy_conn_obj(c, p->args[1].u);
		if (!s || s->iface != ctx->surface) {
			pxy_conn_fatal(c, p->args[1].u, PXY_ERR_INVALID_OBJECT, "not a wl_surface");
			return -EPROTO;
		}
		if (!s->data && !(s->data = calloc(1, sizeof(struct surface))))
			return -ENOMEM;
		if (((struct surface *)s->data)->sync) {
			pxy_conn_fatal(c, id, ERR_SURFACE_EXISTS, "the surface has a "
				       "wp_linux_drm_syncobj_surface_v1 already");
			return -EPROTO;
		}
		data = calloc(1, sizeof(struct sync_surface));
		if (!data)
			return -ENOMEM;
		((struct sync_surface *)data)->surface = p->args[1].u;
		ret = pxy_conn_add_local(c, p->args[0].u, ctx->sync_surface, data);
		if (ret) {
			free(data);
			pxy_conn_fatal(c, 1, PXY_ERR_INVALID_OBJECT, "invalid new id %u",
				       p->args[0].u);
			return ret;
		}
		s = pxy_conn_obj(c, p->args[1].u); /* the map may have moved */
		((struct surface *)s->data)->sync = p->args[0].u;
		return 0;
	}
	/* import_timeline: the fd is borrowed (conn.c closes it after). */
	ret = timeline_import(ctx->drm_fd, p->args[1].fd, &handle);
	if (ret) {
		pxy_conn_fatal(c, id, ERR_INVALID_TIMELINE, "not a DRM syncobj: %s",
			       strerror(-ret));
		return ret;
	}
	data = calloc(1, sizeof(struct timeline));
	if (!data) {
		timeline_drop(ctx->drm_fd, handle);
		return -ENOMEM;
	}
	*(struct timeline *)data = (struct timeline){ 1, handle, ctx->drm_fd };
	ret = pxy_conn_add_local(c, p->args[0].u, ctx->sync_timeline, data);
	if (ret) {
		struct point drop = { data, 0 };

		point_set(&drop, NULL, 0);
		pxy_conn_fatal(c, 1, PXY_ERR_INVALID_OBJECT, "invalid new id %u", p->args[0].u);
	}
	return ret;
}

static int
sync_surface_request(struct pxy_conn *c, uint32_t id, struct sync_surface *ss,
		     const struct pxy_parsed *p)
{
	struct pxy_obj *tl;

	if (p->opcode == 0) {
		pxy_conn_remove_local(c, id);
		return 0;
	}
	if (!ss->surface) {
		pxy_conn_fatal(c, id, ERR_NO_SURFACE, "the wl_surface is destroyed");
		return -EPROTO;
	}
	tl = pxy_conn_obj(c, p->args[0].u);
	if (!tl || tl->iface != c->ctx->sync_timeline || !tl->data) {
		pxy_conn_fatal(c, p->args[0].u, PXY_ERR_INVALID_OBJECT, "not a timeline");
		return -EPROTO;
	}
	point_set(p->opcode == 1 ? &ss->acquire : &ss->release, tl->data,
		  (uint64_t)p->args[1].u << 32 | p->args[2].u);
	return 0;
}

int
pxy_sync_local_request(struct pxy_conn *c, uint32_t id, struct pxy_obj *o,
		       const struct pxy_parsed *p)
{
	const struct pxy_ctx *ctx = c->ctx;
	int ret = 0;

	if (o->iface == ctx->sync_manager)
		ret = manager_request(c, id, p);
	else if (o->iface == ctx->sync_timeline)
		pxy_conn_remove_local(c, id); /* destroy: its only request */
	else if (o->iface == ctx->sync_surface)
		ret = sync_surface_request(c, id, o->data, p);
	if (ret == -ENOMEM)
		pxy_conn_fatal(c, 1, 2, "out of memory"); /* wl_display.no_memory */
	return ret;
}

int
pxy_sync_bind(struct pxy_conn *c, const struct pxy_parsed *p)
{
	const struct pxy_arg *id = &p->args[1];

	if (strcmp(id->str, c->ctx->sync_manager->name) != 0 || id->len != 1) {
		pxy_conn_fatal(c, 1, PXY_ERR_INVALID_OBJECT,
			       "invalid interface %s v%u for global %u", id->str, id->len,
			       p->args[0].u);
		return -EPROTO;
	}
	if (pxy_conn_add_local(c, id->u, c->ctx->sync_manager, NULL) != 0) {
		pxy_conn_fatal(c, 1, PXY_ERR_INVALID_OBJECT, "invalid new id %u", id->u);
		return -EPROTO;
	}
	return 0;
}

static struct surface *
surface_data(struct pxy_obj *o)
{
	if (!o->data)
		o->data = calloc(1, sizeof(struct surface));
	return o->data;
}

/* The commit's points as the XML asks; 0, or <0 after pxy_conn_fatal. */
static int
commit_check(struct pxy_conn *c, const struct surface *s, const struct sync_surface *ss,
	     struct buffer **out)
{
	bool has_buffer = s->attached && s->buffer;
	struct pxy_obj *bo;
	uint32_t code = 0;
	const char *why = NULL;

	*out = NULL;
	if (!has_buffer && (ss->acquire.tl || ss->release.tl)) {
		code = ERR_NO_BUFFER, why = "points set without a buffer attached";
	} else if (has_buffer && !ss->acquire.tl) {
		code = ERR_NO_ACQUIRE_POINT, why = "a buffer without an acquire point";
	} else if (has_buffer && !ss->release.tl) {
		code = ERR_NO_RELEASE_POINT, why = "a buffer without a release point";
	} else if (has_buffer) {
		bo = pxy_conn_obj(c, s->buffer);
		*out = bo && bo->iface == c->ctx->buffer ? bo->data : NULL;
		if (!*out || (*out)->dmabuf_fd < 0)
			code = ERR_UNSUPPORTED_BUFFER, why = "not a linux-dmabuf buffer";
		else if (ss->acquire.tl == ss->release.tl &&
			 ss->release.value <= ss->acquire.value)
			code = ERR_CONFLICTING_POINTS,
			why = "release point not after acquire point";
	}
	if (!why)
		return 0;
	pxy_conn_fatal(c, s->sync, code, "%s", why);
	return -EPROTO;
}

/* Put a release point on b's list (its reference moves). 0, or -ENOMEM (p as it was). */
static int
buffer_add_release(struct buffer *b, struct point *p)
{
	struct point *grown = realloc(b->releases, (b->n_releases + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	b->releases = grown;
	b->releases[b->n_releases++] = *p;
	*p = (struct point){ NULL, 0 };
	return 0;
}

/*
 * Take the commit's points: 0 forward now, 1 held (c->held), <0 cut off.
 * The release point joins the buffer's list only when the commit goes to the
 * compositor: a wl_buffer.release that arrives meanwhile is for an earlier
 * use of the buffer, not for this commit.
 */
static int
commit(struct pxy_conn *c, struct surface *s)
{
	struct sync_surface *ss = pxy_conn_obj(c, s->sync)->data;
	struct conn_sync *cs = c->sync;
	struct buffer *b;
	struct point acquire = { NULL, 0 };
	int ret = commit_check(c, s, ss, &b);

	s->attached = false;
	if (ret || !b)
		return ret;
	acquire = ss->acquire;
	ss->acquire = (struct point){ NULL, 0 };
	if (c->ctx->no_wait || sb_syncobj_wait(acquire.tl->drm_fd, acquire.tl->handle,
					       acquire.value, 0, 0) == 0)
		ret = -EALREADY;
	else
		ret = sb_syncobj_waiter_create(acquire.tl->drm_fd, acquire.tl->handle,
					       acquire.value, 0, &c->held);
	if (ret) {
		if (ret != -EALREADY)
			pxy_log("client %u: cannot wait for an acquire point (%s); forwarding the "
				"commit", c->serial, strerror(-ret));
		point_set(&acquire, NULL, 0);
		if (buffer_add_release(b, &ss->release) == 0)
			return 0;
		pxy_conn_fatal(c, 1, 2, "out of memory");
		return -ENOMEM;
	}
	/* The fallback waiter's thread waits on the handle: keep it until unhold. */
	cs->held = acquire;
	cs->held_release = ss->release;
	ss->release = (struct point){ NULL, 0 };
	cs->held_buffer = s->buffer;
	pxy_log("client %u: commit held until its acquire point signals", c->serial);
	return 1;
}

static struct buffer *
buffer_new(int dmabuf_fd)
{
	struct buffer *b = calloc(1, sizeof(*b));

	if (b)
		b->dmabuf_fd = dmabuf_fd >= 0 ? fcntl(dmabuf_fd, F_DUPFD_CLOEXEC, 3) : -1;
	return b;
}

int
pxy_sync_client_msg(struct pxy_conn *c, struct pxy_obj *o, const struct pxy_parsed *p)
{
	const struct pxy_ctx *ctx = c->ctx;
	struct surface *s;

	if (o->iface == ctx->surface) {
		if ((int)p->opcode == ctx->op_surface_destroy) {
			pxy_sync_obj_gone(c, o); /* unlinks its sync object: no_surface from now */
			return 0;
		}
		if ((int)p->opcode != ctx->op_attach && (int)p->opcode != ctx->op_commit)
			return 0;
		s = surface_data(o);
		if (!s) {
			pxy_conn_fatal(c, 1, 2, "out of memory");
			return -ENOMEM;
		}
		if ((int)p->opcode == ctx->op_attach) {
			s->attached = true;
			s->buffer = p->args[0].u;
			return 0;
		}
		if (!s->sync) {
			s->attached = false;
			return 0;
		}
		return commit(c, s);
	}
	if (o->iface == ctx->params && (int)p->opcode == ctx->op_params_add &&
	    p->args[1].u == 0 && !o->data) { /* plane 0's fd */
		o->data = buffer_new(p->args[0].fd);
	} else if (o->iface == ctx->params && (int)p->opcode == ctx->op_params_create_immed) {
		struct pxy_obj *bo = pxy_conn_obj(c, p->args[0].u);

		if (bo && o->data)
			bo->data = buffer_new(((struct buffer *)o->data)->dmabuf_fd);
	} else if (o->iface == ctx->buffer && p->opcode == 0 && o->data) {
		buffer_release_all(o->data); /* destroyed: nothing will release it */
	}
	return 0;
}

int
pxy_sync_server_msg(struct pxy_conn *c, struct pxy_obj *o, const struct pxy_parsed *p)
{
	const struct pxy_ctx *ctx = c->ctx;

	if (o->iface == ctx->buffer && (int)p->opcode == ctx->op_buffer_release && o->data) {
		buffer_release_all(o->data);
	} else if (o->iface == ctx->params && (int)p->opcode == ctx->op_params_created &&
		   o->data) {
		struct pxy_obj *bo = pxy_conn_obj(c, p->args[0].u);

		if (bo && !bo->data)
			bo->data = buffer_new(((struct buffer *)o->data)->dmabuf_fd);
	}
	return 0;
}

void
pxy_sync_unhold(struct pxy_conn *c)
{
	struct conn_sync *cs = c->sync;
	struct pxy_obj *bo = pxy_conn_obj(c, cs->held_buffer);
	int err = sb_syncobj_waiter_get_error(c->held);

	if (err)
		pxy_log("client %u: the acquire wait failed (%s); forwarding the commit",
			c->serial, strerror(-err));
	sb_syncobj_waiter_destroy(c->held);
	c->held = NULL;
	point_set(&cs->held, NULL, 0);
	c->scan_off = c->scan_fds = 0; /* conn.c's look ahead starts again at the next hold */
	c->pongs_passed = 0;
	/* The buffer is still there (its destroy is behind the commit); if not, or
	 * without memory, the point is signalled now rather than never. */
	if (!bo || bo->iface != c->ctx->buffer || !bo->data ||
	    buffer_add_release(bo->data, &cs->held_release) != 0)
		release_signal(&cs->held_release, -1);
	c->resume = true;
}
