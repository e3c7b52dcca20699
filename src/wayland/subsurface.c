/* SPDX-License-Identifier: MIT */
/*
 * wl_subsurface, as the compositor tells it (sb_wl_server_surface_set_parent):
 * the tree of sub-surfaces and their synchronized mode, so that a
 * synchronized child's commit is held (cached) and applied with its parent's
 * next commit, every fence of that transaction signalled first. The XML
 * (wayland.xml, wl_subsurface): "In synchronized mode, wl_surface.commit on a
 * sub-surface will accumulate the committed state in a cache, but the state
 * will not be applied and hence will not change the compositor output. The
 * cached state is applied to the sub-surface immediately after the parent
 * surface's state is applied." and "even if a sub-surface is in
 * desynchronized mode, it will behave as in synchronized mode, if its parent
 * surface behaves as in synchronized mode." On set_desync: "If cached state
 * exists when wl_surface.commit is called in desynchronized mode, the
 * pending state is added to the cached state, and applied as a whole."
 *
 * A child's cached commits move into its parent's cache when the parent
 * commits while itself synchronized (the parent's state now holds them), or
 * into the parent's transaction (commit_queue.c, the commit's riders) when
 * the parent's commit applies.
 */
#include <errno.h>

#include "server_internal.h"

/* Deeper than any client needs; the compositor refuses cycles (bad_parent). */
#define MAX_DEPTH 64

bool
sb_wl_subsurface_is_synchronized(const struct sync_surface *ss)
{
	for (int depth = 0; ss && ss->parent && depth < MAX_DEPTH; depth++) {
		if (ss->sync_mode)
			return true;
		ss = ss->parent;
	}
	return false;
}

static void
take_cached(struct sync_surface *from, struct wl_list *list)
{
	wl_list_insert_list(list->prev, &from->cached);
	wl_list_init(&from->cached);
}

void
sb_wl_subsurface_gather_children(struct sync_surface *ss, struct wl_list *list)
{
	struct sync_surface *child;

	wl_list_for_each(child, &ss->children, child_link)
		if (sb_wl_subsurface_is_synchronized(child))
			take_cached(child, list);
}

void
sb_wl_subsurface_gather(struct sync_surface *ss, struct wl_list *list)
{
	take_cached(ss, list);
	sb_wl_subsurface_gather_children(ss, list);
}

/* Nothing ss held for its parent will be shown: "the wl_surface is unmapped". */
static void
discard_cached(struct sync_surface *ss)
{
	struct sb_wl_commit *c, *tmp;

	wl_list_for_each_safe(c, tmp, &ss->cached, link)
		sb_wl_commit_discard(c);
}

static void
unlink_parent(struct sync_surface *ss)
{
	if (!ss->parent)
		return;
	wl_list_remove(&ss->child_link);
	wl_list_init(&ss->child_link);
	ss->parent = NULL;
	discard_cached(ss);
}

void
sb_wl_subsurface_detach_all(struct sync_surface *ss)
{
	struct sb_wl_commit *c, *tmp;
	struct sync_surface *child, *ctmp;

	/* Its commits held in an ancestor's cache or riding in a transaction. */
	if (ss->server)
		wl_list_for_each_safe(c, tmp, &ss->server->commits, server_link)
			if (c->owner == ss && (c->cached || c->riding))
				sb_wl_commit_discard(c);
	discard_cached(ss); /* what descendants left in it */
	wl_list_for_each_safe(child, ctmp, &ss->children, child_link)
		unlink_parent(child);
	unlink_parent(ss);
}

int
sb_wl_server_surface_set_parent(struct sb_wl_server *server, struct wl_resource *surface,
				struct wl_resource *parent, bool synchronized)
{
	struct sync_surface *ss, *ps;

	if (!server || !surface || surface == parent)
		return -EINVAL;
	if (!parent) {
		ss = sb_wl_sync_surface_lookup(surface);
		if (ss)
			unlink_parent(ss);
		return 0;
	}
	ps = sb_wl_sync_surface_get(server, parent);
	ss = ps ? sb_wl_sync_surface_get(server, surface) : NULL;
	if (!ss) {
		wl_resource_post_no_memory(surface);
		return -ENOMEM;
	}
	if (ss->parent != ps) {
		unlink_parent(ss);
		ss->parent = ps;
		wl_list_insert(ps->children.prev, &ss->child_link);
	}
	/* set_desync keeps the cache: it applies with the child's next commit. */
	ss->sync_mode = synchronized;
	return 0;
}
