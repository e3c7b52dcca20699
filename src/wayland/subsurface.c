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
 *
 * Here: changes to the tree and what they drop (below surface.c, above
 * commit_queue.c: server_internal.h's file map). The entry point,
 * sb_wl_server_surface_set_parent(), is surface.c's (it finds the surfaces);
 * the queries the commit queue makes of the tree (is the surface
 * synchronized, gather the children's cached commits) are commit_queue.c's.
 */
#include "server_internal.h"

/* Nothing ss held for its parent will be shown: "the wl_surface is unmapped". */
static void
discard_cached(struct sync_surface *ss)
{
	struct sb_wl_commit *c, *tmp;

	wl_list_for_each_safe(c, tmp, &ss->cached, link)
		sb_wl_commit_discard(c);
}

void
sb_wl_subsurface_unlink_parent(struct sync_surface *ss)
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
		sb_wl_subsurface_unlink_parent(child);
	sb_wl_subsurface_unlink_parent(ss);
}
