/* SPDX-License-Identifier: MIT */
/*
 * Real kernel objects for the VM test tier (see kernel.h): ioctls, DRM nodes,
 * vgem, udmabuf and dma-heap buffers, fences, sync_files. This process's
 * threads as /proc shows them are in kernel_threads.c.
 */
#include "kernel.h"

#include <syncbridge/dmabuf.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/sync_file.h>
#include <linux/udmabuf.h>

#include <drm.h>
#include <drm_mode.h>

/*
 * vgem's uapi (include/uapi/drm/vgem_drm.h) is not shipped by libdrm; the
 * numbers are those of drivers/gpu/drm/vgem/vgem_drv.c (DRM_VGEM_FENCE_ATTACH
 * 0x1, DRM_VGEM_FENCE_SIGNAL 0x2).
 */
struct sbk_vgem_fence_attach {
	__u32 handle;
	__u32 flags;
#define SBK_VGEM_FENCE_WRITE 0x1
	__u32 out_fence;
	__u32 pad;
};

struct sbk_vgem_fence_signal {
	__u32 fence;
	__u32 flags;
};

#define SBK_IOCTL_VGEM_FENCE_ATTACH DRM_IOWR(DRM_COMMAND_BASE + 0x1, struct sbk_vgem_fence_attach)
#define SBK_IOCTL_VGEM_FENCE_SIGNAL DRM_IOW(DRM_COMMAND_BASE + 0x2, struct sbk_vgem_fence_signal)

int
sbk_ioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, req, arg);
	} while (ret == -1 && (errno == EINTR || errno == EAGAIN));
	return ret == -1 ? -errno : ret;
}

bool
sbk_fd_is_open(int fd)
{
	return fd >= 0 && fcntl(fd, F_GETFD) != -1;
}

int
sbk_drm_driver_name(int fd, char *buf, size_t len)
{
	struct drm_version v;
	int ret;

	if (!buf || len < 2)
		return -EINVAL;
	memset(&v, 0, sizeof(v));
	memset(buf, 0, len);
	v.name = buf;
	v.name_len = len - 1;
	ret = sbk_ioctl(fd, DRM_IOCTL_VERSION, &v);
	if (ret < 0)
		return ret;
	buf[len - 1] = '\0';
	return 0;
}

int
sbk_drm_open_driver(const char *driver, bool render)
{
	const char *prefix = render ? "renderD" : "card";
	struct dirent *e;
	int found = -ENODEV;
	DIR *d;

	d = opendir("/dev/dri");
	if (!d)
		return -ENODEV;
	while (found < 0 && (e = readdir(d))) {
		char path[300], name[64];
		int fd;

		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		/* "card" must not match "card0-..." connectors or similar. */
		if (e->d_name[strlen(prefix)] < '0' || e->d_name[strlen(prefix)] > '9')
			continue;
		snprintf(path, sizeof(path), "/dev/dri/%s", e->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (sbk_drm_driver_name(fd, name, sizeof(name)) == 0 && strcmp(name, driver) == 0)
			found = fd;
		else
			close(fd);
	}
	closedir(d);
	return found;
}

bool
sbk_drm_has_syncobj_eventfd(int drm_fd)
{
	struct drm_syncobj_eventfd arg;

	memset(&arg, 0, sizeof(arg));
	arg.handle = 0; /* never a valid handle */
	arg.point = 1;
	arg.fd = -1;
	return sbk_ioctl(drm_fd, DRM_IOCTL_SYNCOBJ_EVENTFD, &arg) == -ENOENT;
}

int
sbk_vgem_open(void)
{
	return sbk_drm_open_driver(SBK_DRIVER_VGEM, false);
}

const char *
sbk_buf_kind_name(enum sbk_buf_kind kind)
{
	switch (kind) {
	case SBK_BUF_VGEM:
		return "vgem";
	case SBK_BUF_UDMABUF:
		return "udmabuf";
	case SBK_BUF_HEAP:
		return "heap";
	}
	return "?";
}

int
sbk_buf_kind_parse(const char *name, enum sbk_buf_kind *kind)
{
	if (!name)
		return -EINVAL;
	if (strcmp(name, "vgem") == 0)
		*kind = SBK_BUF_VGEM;
	else if (strcmp(name, "udmabuf") == 0)
		*kind = SBK_BUF_UDMABUF;
	else if (strcmp(name, "heap") == 0)
		*kind = SBK_BUF_HEAP;
	else
		return -EINVAL;
	return 0;
}

static size_t
page_round(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (size == 0)
		size = 1;
	return (size + page - 1) / page * page;
}

static int
vgem_create(int vgem_fd, size_t size, struct sbk_buf *buf)
{
	struct drm_mode_create_dumb create;
	struct drm_prime_handle prime;
	int ret;

	if (vgem_fd < 0)
		return -ENODEV;
	/* A 32 bpp buffer 1024 pixels wide: one row is 4 KiB. */
	memset(&create, 0, sizeof(create));
	create.width = 1024;
	create.height = (uint32_t)((size + 4095) / 4096);
	create.bpp = 32;
	ret = sbk_ioctl(vgem_fd, DRM_IOCTL_MODE_CREATE_DUMB, &create);
	if (ret < 0)
		return ret;
	buf->handle = create.handle;
	buf->vgem_fd = vgem_fd;
	buf->size = (size_t)create.size;

	memset(&prime, 0, sizeof(prime));
	prime.handle = create.handle;
	prime.flags = DRM_CLOEXEC | DRM_RDWR;
	ret = sbk_ioctl(vgem_fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime);
	if (ret < 0)
		return ret;
	buf->fd = prime.fd;
	return 0;
}

static int
udmabuf_create(size_t size, struct sbk_buf *buf)
{
	struct udmabuf_create create;
	int dev, memfd, ret;

	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	size = page_round(size);
	memfd = memfd_create("sbk-udmabuf", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (memfd < 0) {
		ret = -errno;
		close(dev);
		return ret;
	}
	if (ftruncate(memfd, (off_t)size) < 0 || fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		ret = -errno;
		goto out;
	}
	memset(&create, 0, sizeof(create));
	create.memfd = (__u32)memfd;
	create.flags = UDMABUF_FLAGS_CLOEXEC;
	create.offset = 0;
	create.size = size;
	ret = sbk_ioctl(dev, UDMABUF_CREATE, &create);
	if (ret >= 0) {
		buf->fd = ret;
		buf->size = size;
		ret = 0;
	}
out:
	close(memfd); /* the udmabuf holds its own reference to the pages */
	close(dev);
	return ret;
}

static int
heap_create(size_t size, struct sbk_buf *buf)
{
	struct dma_heap_allocation_data alloc;
	int heap, ret;

	heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
	if (heap < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	size = page_round(size);
	memset(&alloc, 0, sizeof(alloc));
	alloc.len = size;
	alloc.fd_flags = O_RDWR | O_CLOEXEC;
	ret = sbk_ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &alloc);
	close(heap);
	if (ret < 0)
		return ret;
	buf->fd = (int)alloc.fd;
	buf->size = size;
	return 0;
}

int
sbk_buf_create(enum sbk_buf_kind kind, int vgem_fd, size_t size, struct sbk_buf *buf)
{
	int ret;

	memset(buf, 0, sizeof(*buf));
	buf->kind = kind;
	buf->fd = -1;
	buf->vgem_fd = -1;
	buf->map = NULL;

	switch (kind) {
	case SBK_BUF_VGEM:
		ret = vgem_create(vgem_fd, size, buf);
		break;
	case SBK_BUF_UDMABUF:
		ret = udmabuf_create(size, buf);
		break;
	case SBK_BUF_HEAP:
		ret = heap_create(size, buf);
		break;
	default:
		ret = -EINVAL;
	}
	if (ret == 0) {
		void *map = mmap(NULL, buf->size, PROT_READ | PROT_WRITE, MAP_SHARED, buf->fd, 0);

		if (map == MAP_FAILED)
			ret = -errno;
		else
			buf->map = map;
	}
	if (ret < 0)
		sbk_buf_destroy(buf);
	return ret;
}

void
sbk_buf_destroy(struct sbk_buf *buf)
{
	if (buf->map)
		munmap(buf->map, buf->size);
	buf->map = NULL;
	if (buf->fd >= 0)
		close(buf->fd);
	buf->fd = -1;
	if (buf->vgem_fd >= 0 && buf->handle) {
		struct drm_gem_close gc = { .handle = buf->handle };

		sbk_ioctl(buf->vgem_fd, DRM_IOCTL_GEM_CLOSE, &gc);
	}
	buf->handle = 0;
	buf->vgem_fd = -1;
}

int
sbk_vgem_fence_attach(int vgem_fd, uint32_t handle, bool write, uint32_t *fence_id)
{
	struct sbk_vgem_fence_attach arg;
	int ret;

	memset(&arg, 0, sizeof(arg));
	arg.handle = handle;
	arg.flags = write ? SBK_VGEM_FENCE_WRITE : 0;
	ret = sbk_ioctl(vgem_fd, SBK_IOCTL_VGEM_FENCE_ATTACH, &arg);
	if (ret < 0)
		return ret;
	*fence_id = arg.out_fence;
	return 0;
}

int
sbk_vgem_fence_signal(int vgem_fd, uint32_t fence_id)
{
	struct sbk_vgem_fence_signal arg;

	memset(&arg, 0, sizeof(arg));
	arg.fence = fence_id;
	return sbk_ioctl(vgem_fd, SBK_IOCTL_VGEM_FENCE_SIGNAL, &arg);
}

int
sbk_fence_create(int vgem_fd, bool write, struct sbk_fence *f)
{
	int ret;

	memset(f, 0, sizeof(*f));
	f->vgem_fd = vgem_fd;
	f->write = write;
	f->sync_file = -1;
	ret = sbk_buf_create(SBK_BUF_VGEM, vgem_fd, 4096, &f->bo);
	if (ret < 0)
		return ret;
	ret = sbk_vgem_fence_attach(vgem_fd, f->bo.handle, write, &f->fence_id);
	if (ret < 0)
		goto fail;
	/* A reader waits for the write fence; a writer also for read fences.
	 * The export is the core's (one implementation of each kernel call). */
	ret = sb_dmabuf_export_sync_file(f->bo.fd, write ? SB_ACCESS_READ : SB_ACCESS_WRITE,
					 &f->sync_file);
	if (ret < 0) {
		sbk_vgem_fence_signal(vgem_fd, f->fence_id);
		goto fail;
	}
	return 0;
fail:
	sbk_buf_destroy(&f->bo);
	return ret;
}

int
sbk_fence_signal(struct sbk_fence *f)
{
	int ret;

	if (f->signalled)
		return 0;
	ret = sbk_vgem_fence_signal(f->vgem_fd, f->fence_id);
	if (ret == 0)
		f->signalled = true;
	return ret;
}

void
sbk_fence_destroy(struct sbk_fence *f)
{
	if (f->sync_file >= 0)
		close(f->sync_file);
	f->sync_file = -1;
	sbk_buf_destroy(&f->bo);
}

