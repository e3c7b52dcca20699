/* SPDX-License-Identifier: MIT */
/*
 * Small things the example compositor's protocol files share
 * (wlc_internal.h): every interface's destroy request, the sealed memfds
 * clients map (the dma-buf format table, the keymap), the memory of an
 * object a client asks for, and resources kept on a list by their own link
 * (outputs, keyboards, data devices, frame callbacks, presentation
 * feedback).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <wayland-server-core.h>

#include "wlc_internal.h"

/* ---- requests ------------------------------------------------------------------ */

void
wlc_destroy_request(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

/* ---- sealed memfds ------------------------------------------------------------ */

int
wlc_sealed_memfd(const char *name, const void *data, size_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	const char *p = data;
	size_t done = 0;
	int ret;

	if (fd < 0)
		return -errno;
	while (done < size) {
		ssize_t n = write(fd, p + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			goto fail;
		}
		done += (size_t)n;
	}
	/*
	 * Clients map it MAP_PRIVATE (wl_keyboard.keymap: "From version 7
	 * onwards, the fd must be mapped with MAP_PRIVATE by the recipient");
	 * every client gets the same file, so none may change it under the
	 * others.
	 */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		ret = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return ret;
}

/* ---- a client's objects --------------------------------------------------------- */

void *
wlc_client_zalloc(struct wl_client *client, size_t size)
{
	void *p = calloc(1, size);

	if (!p)
		wl_client_post_no_memory(client);
	return p;
}

/* ---- resources on a list -------------------------------------------------------- */

void
wlc_resource_unlink(struct wl_resource *res)
{
	wl_list_remove(wl_resource_get_link(res));
}

struct wl_resource *
wlc_resource_new_linked(struct wl_client *client, const struct wl_interface *iface, int version,
			 uint32_t id, const void *impl, void *data, struct wl_list *after)
{
	struct wl_resource *res = wlc_resource_new(client, iface, version, id, impl, data,
						    wlc_resource_unlink);

	if (res)
		wl_list_insert(after, wl_resource_get_link(res));
	return res;
}

void
wlc_resource_list_orphan(struct wl_list *list)
{
	struct wl_resource *res, *tmp;

	wl_resource_for_each_safe(res, tmp, list) {
		/* init, not just remove: its destroy handler removes it again */
		wl_list_remove(wl_resource_get_link(res));
		wl_list_init(wl_resource_get_link(res));
		wl_resource_set_user_data(res, NULL);
	}
}

void
wlc_resource_list_send(struct wl_list *list, struct wl_client *client,
			void (*send)(struct wl_resource *res, void *data), void *data)
{
	struct wl_resource *res;

	wl_resource_for_each(res, list)
		if (wl_resource_get_client(res) == client)
			send(res, data);
}
