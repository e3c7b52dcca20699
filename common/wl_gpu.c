/* SPDX-License-Identifier: MIT */
#include "wl_gpu.h"

#include "demo_util.h"
#include "kernel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <drm.h>
#include <virtgpu_drm.h>

int
wlgpu_drm_open(const char *driver, bool render)
{
	return sbk_drm_open_driver(driver, render);
}

int
wlgpu_drm_open_syncobj(void)
{
	DIR *d = opendir("/dev/dri");
	struct dirent *e;
	int found = -ENODEV;

	if (!d)
		return -ENODEV;
	while ((e = readdir(d))) {
		char path[300];
		struct drm_get_cap cap;
		int fd;

		if (strncmp(e->d_name, "renderD", 7) != 0)
			continue;
		snprintf(path, sizeof(path), "/dev/dri/%s", e->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&cap, 0, sizeof(cap));
		cap.capability = DRM_CAP_SYNCOBJ_TIMELINE;
		if (demo_ioctl(fd, DRM_IOCTL_GET_CAP, &cap) == 0 && cap.value) {
			found = fd;
			break;
		}
		close(fd);
	}
	closedir(d);
	return found;
}

int
wlgpu_dumb_create(int card_fd, uint32_t width, uint32_t height, struct wlgpu_dumb *b)
{
	struct demo_vgem_buf v; /* any driver's dumb buffer, exported */
	int ret = demo_vgem_buf_create(card_fd, width, height, 32, &v);
	char name[32];

	*b = (struct wlgpu_dumb){ .drm_fd = card_fd, .fd = -1 };
	if (ret)
		return ret;
	*b = (struct wlgpu_dumb){ .drm_fd = card_fd, .handle = v.handle, .fd = v.dmabuf_fd,
				 .width = width, .height = height, .stride = v.pitch,
				 .size = v.size };
	b->virtio_gpu = sbk_drm_driver_name(card_fd, name, sizeof(name)) == 0 &&
			strcmp(name, "virtio_gpu") == 0;
	b->map = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	if (b->map == MAP_FAILED) {
		ret = -errno;
		b->map = NULL;
		wlgpu_dumb_destroy(b);
	}
	return ret;
}

int
wlgpu_dumb_flush(struct wlgpu_dumb *b)
{
	struct drm_virtgpu_3d_transfer_to_host t = {
		.bo_handle = b->handle,
		.box = { .w = b->width, .h = b->height, .d = 1 },
	};

	if (!b->virtio_gpu)
		return 0;
	return demo_ioctl(b->drm_fd, DRM_IOCTL_VIRTGPU_TRANSFER_TO_HOST, &t);
}

void
wlgpu_dumb_destroy(struct wlgpu_dumb *b)
{
	struct demo_vgem_buf v = { .vgem_fd = b->drm_fd, .handle = b->handle, .dmabuf_fd = b->fd,
				   .size = b->size, .map = b->map };

	demo_vgem_buf_destroy(&v);
	*b = (struct wlgpu_dumb){ .drm_fd = b->drm_fd, .fd = -1 };
}

int
wlgpu_fence_signal(struct sbk_fence *f, bool *expired)
{
	int ret = sbk_fence_signal(f);

	if (expired)
		*expired = ret == -ETIMEDOUT;
	if (ret == -ETIMEDOUT) { /* vgem already signalled it itself */
		f->signalled = true;
		return 0;
	}
	return ret;
}
