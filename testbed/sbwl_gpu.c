/* SPDX-License-Identifier: MIT */
#include "sbwl_gpu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <drm.h>
#include <drm_mode.h>
#include <linux/dma-buf.h>

/* drivers/gpu/drm/vgem/vgem_drv.c: DRM_VGEM_FENCE_ATTACH 0x1, _SIGNAL 0x2. */
struct vgem_fence_attach {
	uint32_t handle;
	uint32_t flags; /* VGEM_FENCE_WRITE = 0x1 */
	uint32_t out_fence;
	uint32_t pad;
};
struct vgem_fence_signal {
	uint32_t fence;
	uint32_t flags;
};
#define VGEM_FENCE_WRITE 0x1
#define IOCTL_VGEM_FENCE_ATTACH DRM_IOWR(DRM_COMMAND_BASE + 0x1, struct vgem_fence_attach)
#define IOCTL_VGEM_FENCE_SIGNAL DRM_IOW(DRM_COMMAND_BASE + 0x2, struct vgem_fence_signal)

static int
xioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do
		ret = ioctl(fd, req, arg);
	while (ret < 0 && (errno == EINTR || errno == EAGAIN));
	return ret < 0 ? -errno : ret;
}

int64_t
sbwl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int
sbwl_drm_open(const char *driver, bool render)
{
	const char *prefix = render ? "renderD" : "card";
	DIR *d = opendir("/dev/dri");
	struct dirent *e;
	int found = -ENODEV;

	if (!d)
		return -ENODEV;
	while ((e = readdir(d))) {
		char path[300], name[64];
		struct drm_version v;
		int fd;

		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		snprintf(path, sizeof(path), "/dev/dri/%s", e->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&v, 0, sizeof(v));
		memset(name, 0, sizeof(name));
		v.name = name;
		v.name_len = sizeof(name) - 1;
		if (xioctl(fd, DRM_IOCTL_VERSION, &v) == 0 && strcmp(name, driver) == 0) {
			found = fd;
			break;
		}
		close(fd);
	}
	closedir(d);
	return found;
}

int
sbwl_drm_open_syncobj(void)
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
		if (xioctl(fd, DRM_IOCTL_GET_CAP, &cap) == 0 && cap.value) {
			found = fd;
			break;
		}
		close(fd);
	}
	closedir(d);
	return found;
}

int
sbwl_dumb_create(int card_fd, uint32_t width, uint32_t height, struct sbwl_dumb *b)
{
	struct drm_mode_create_dumb create;
	struct drm_prime_handle prime;
	int ret;

	memset(b, 0, sizeof(*b));
	b->fd = -1;
	b->drm_fd = card_fd;
	memset(&create, 0, sizeof(create));
	create.width = width;
	create.height = height;
	create.bpp = 32;
	ret = xioctl(card_fd, DRM_IOCTL_MODE_CREATE_DUMB, &create);
	if (ret)
		return ret;
	b->handle = create.handle;
	b->width = width;
	b->height = height;
	b->stride = create.pitch;
	b->size = create.size;

	memset(&prime, 0, sizeof(prime));
	prime.handle = b->handle;
	prime.flags = DRM_CLOEXEC | DRM_RDWR;
	prime.fd = -1;
	ret = xioctl(card_fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime);
	if (ret)
		goto err;
	b->fd = prime.fd;
	b->map = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
	if (b->map == MAP_FAILED) {
		ret = -errno;
		b->map = NULL;
		goto err;
	}
	return 0;
err:
	sbwl_dumb_destroy(b);
	return ret;
}

void
sbwl_dumb_destroy(struct sbwl_dumb *b)
{
	if (b->map)
		munmap(b->map, b->size);
	b->map = NULL;
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	if (b->handle) {
		struct drm_gem_close c = { .handle = b->handle };
		xioctl(b->drm_fd, DRM_IOCTL_GEM_CLOSE, &c);
	}
	b->handle = 0;
}

int
sbwl_fence_create(int vgem_fd, struct sbwl_fence *f)
{
	struct vgem_fence_attach attach;
	struct dma_buf_export_sync_file exp;
	int ret;

	memset(f, 0, sizeof(*f));
	f->sync_file = -1;
	f->vgem_fd = vgem_fd;
	ret = sbwl_dumb_create(vgem_fd, 32, 32, &f->bo);
	if (ret)
		return ret;
	memset(&attach, 0, sizeof(attach));
	attach.handle = f->bo.handle;
	attach.flags = VGEM_FENCE_WRITE;
	ret = xioctl(vgem_fd, IOCTL_VGEM_FENCE_ATTACH, &attach);
	if (ret)
		goto err;
	f->fence_id = attach.out_fence;
	memset(&exp, 0, sizeof(exp));
	exp.flags = DMA_BUF_SYNC_READ; /* a reader waits for the write fence */
	exp.fd = -1;
	ret = xioctl(f->bo.fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &exp);
	if (ret) {
		sbwl_fence_signal(f);
		goto err;
	}
	f->sync_file = exp.fd;
	return 0;
err:
	sbwl_dumb_destroy(&f->bo);
	return ret;
}

int
sbwl_fence_signal(struct sbwl_fence *f)
{
	struct vgem_fence_signal sig = { .fence = f->fence_id };
	int ret;

	if (f->signalled)
		return 0;
	ret = xioctl(f->vgem_fd, IOCTL_VGEM_FENCE_SIGNAL, &sig);
	if (ret == 0 || ret == -ETIMEDOUT) /* ETIMEDOUT: vgem already signalled it itself */
		f->signalled = true;
	return ret == -ETIMEDOUT ? 0 : ret;
}

void
sbwl_fence_destroy(struct sbwl_fence *f)
{
	if (f->sync_file >= 0)
		close(f->sync_file);
	f->sync_file = -1;
	sbwl_dumb_destroy(&f->bo);
}
