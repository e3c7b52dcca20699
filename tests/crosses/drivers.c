/* SPDX-License-Identifier: MIT */
/* Opening the guest's drivers, and the helpers every cell uses (crosses.h). */
#include "crosses.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/sync_file.h>

#include "kernel.h"

/* The Vulkan column: lavapipe, or venus in the venus guest (xvk_open). */
static const char *vulkan_name = "lavapipe";

void
xdrv_set_vulkan_name(const char *name)
{
	vulkan_name = name;
}

const char *
xdrv_name(enum xdrv d)
{
	static const char *const names[XD_COUNT] = {
		[XD_VGEM] = "vgem",         [XD_UDMABUF] = "udmabuf",
		[XD_VIRTIO] = "virtio_gpu", [XD_LAVAPIPE] = "lavapipe",
		[XD_LLVMPIPE] = "llvmpipe", [XD_VIRGL] = "virgl",
	};

	if (d == XD_LAVAPIPE)
		return vulkan_name;
	return d < XD_COUNT ? names[d] : "?";
}

struct xgl *
xenv_gl(struct xenv *e, enum xdrv d)
{
	return d == XD_LLVMPIPE ? &e->gl[0] : d == XD_VIRGL ? &e->gl[1] : NULL;
}

static void
absent(struct xenv *e, enum xdrv d, const char *why, int err)
{
	e->here[d] = false;
	snprintf(e->why[d], sizeof(e->why[d]), "%s%s%s", why, err ? ": " : "",
		 err ? strerror(err < 0 ? -err : err) : "");
}

/* Whether driver d is named in the comma-separated list (the Vulkan one as "vulkan"). */
static bool
left_out(const char *without, enum xdrv d)
{
	return xlist_has(without, ",", d == XD_LAVAPIPE ? "vulkan" : xdrv_name(d));
}

void
xenv_open(struct xenv *e, const char *without)
{
	int ret;

	memset(e, 0, sizeof(*e));
	e->vgem = e->virtio_card = e->virtio_render = -1;
	for (int d = 0; d < XD_COUNT; d++)
		e->here[d] = true;
	/* Before any EGL or Vulkan call: no disk-cache thread opening fds (eglt.h). */
	eglt_no_disk_cache();

	for (int d = 0; d < XD_COUNT; d++)
		if (left_out(without, d))
			absent(e, d, "left out (--without)", 0);

	e->vgem = sbk_vgem_open();
	if (e->vgem < 0)
		absent(e, XD_VGEM, "no vgem card node", e->vgem);
	ret = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (ret < 0)
		absent(e, XD_UDMABUF, "no /dev/udmabuf", errno);
	else
		close(ret);
	e->virtio_card = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, false);
	e->virtio_render = sbk_drm_open_driver(SBK_DRIVER_VIRTIO_GPU, true);
	if (e->virtio_card < 0 || e->virtio_render < 0)
		absent(e, XD_VIRTIO, "no virtio_gpu card and render node",
		       e->virtio_card < 0 ? e->virtio_card : e->virtio_render);
	if (e->here[XD_LLVMPIPE] && xgl_open(&e->gl[0], EGLT_DEVICE_SW, false, e->why[XD_LLVMPIPE],
						  sizeof(e->why[XD_LLVMPIPE])) < 0)
		e->here[XD_LLVMPIPE] = false;
	if (e->here[XD_VIRGL] &&
	    xgl_open(&e->gl[1], EGLT_SURFACELESS, true, e->why[XD_VIRGL], sizeof(e->why[XD_VIRGL])) < 0)
		e->here[XD_VIRGL] = false;
	if (e->here[XD_LAVAPIPE] &&
	    xvk_open(e, e->why[XD_LAVAPIPE], sizeof(e->why[XD_LAVAPIPE])) < 0)
		e->here[XD_LAVAPIPE] = false;
	for (int d = 0; d < XD_COUNT; d++)
		if (!e->here[d])
			printf("# %s: not here (%s)\n", xdrv_name(d), e->why[d]);
}

void
xenv_close(struct xenv *e)
{
	xvk_close(e);
	xgl_close(&e->gl[1]);
	xgl_close(&e->gl[0]);
	if (e->virtio_render >= 0)
		close(e->virtio_render);
	if (e->virtio_card >= 0)
		close(e->virtio_card);
	if (e->vgem >= 0)
		close(e->vgem);
	e->vgem = e->virtio_card = e->virtio_render = -1;
}

bool
xpixels_are(const uint8_t *base, int stride, uint8_t value, int *seen)
{
	for (int y = 0; y < XH; y++)
		for (int x = 0; x < XROW; x++)
			if (base[(size_t)y * (size_t)stride + (size_t)x] != value) {
				*seen = base[(size_t)y * (size_t)stride + (size_t)x];
				return false;
			}
	*seen = value;
	return true;
}

int
xsync_status(int fd, char *what, size_t size)
{
	struct sync_file_info info;
	struct sync_fence_info fence;
	int ret;

	if (what && size)
		what[0] = '\0';
	memset(&info, 0, sizeof(info));
	memset(&fence, 0, sizeof(fence));
	/* With no room the kernel gives the count; names are read when there is one fence. */
	ret = sbk_ioctl(fd, SYNC_IOC_FILE_INFO, &info);
	if (ret < 0)
		return ret;
	if (what && size && info.num_fences == 1) {
		struct sync_file_info one = { .num_fences = 1,
					      .sync_fence_info = (__u64)(uintptr_t)&fence };

		if (sbk_ioctl(fd, SYNC_IOC_FILE_INFO, &one) == 0)
			snprintf(what, size, "%s/%s", fence.driver_name, fence.obj_name);
	} else if (what && size) {
		snprintf(what, size, "%u fences", info.num_fences);
	}
	return info.status;
}

void
xdmabuf_exporter(int fd, char *name, size_t size)
{
	char path[64], line[128], value[64];
	FILE *f;

	snprintf(name, size, "?");
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "exp_name: %63s", value) == 1) {
			snprintf(name, size, "%s", value);
			break;
		}
	fclose(f);
}

void
xres_cloexec(struct xres *r, int fd, const char *what)
{
	int flags = fd >= 0 ? fcntl(fd, F_GETFD) : -1;

	if (flags < 0 || (flags & FD_CLOEXEC))
		return;
	fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
	xres_note(r, "%s was not close-on-exec", what);
}

int64_t
xnow(void)
{
	return now_ns();
}
