/* SPDX-License-Identifier: MIT */
#include "demo_util.h"
#include "kernel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <drm.h>
#include <linux/sync_file.h>
#include <linux/videodev2.h>
#include <drm_mode.h>

#include <syncbridge/sync_file.h>

void
demo_fd_clear(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/*
 * Calls fn(fd, target, data) for each open descriptor but the directory's
 * own (target: what /proc/self/fd/N links to); the count, or -1 without /proc.
 */
static int
each_fd(void (*fn)(int fd, const char *target, void *data), void *data)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;
	int count = 0;

	if (!dir)
		return -1;
	while ((de = readdir(dir))) {
		int fd = atoi(de->d_name);
		if (de->d_name[0] == '.' || fd == dirfd(dir))
			continue;
		count++;
		if (!fn)
			continue;
		char path[300], target[256];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		target[n < 0 ? 0 : n] = '\0';
		fn(fd, target, data);
	}
	closedir(dir);
	return count;
}

int
demo_count_fds(void)
{
	return each_fd(NULL, NULL);
}

/*
 * A sync_file's fences, as the kernel names them ("virtio_gpu/controlq4-17
 * signalled"): which driver made a left-over fence says whose it is.
 */
static void
describe_sync_file(int fd, char *buf, size_t len)
{
	struct sb_sync_file_info *info = NULL;
	size_t used = 0;

	buf[0] = '\0';
	if (sb_sync_file_info_create(fd, &info) < 0)
		return;
	for (uint32_t i = 0; i < info->num_fences && i < 4 && used < len; i++) {
		const struct sb_fence_info *f = &info->fences[i];
		int w = snprintf(buf + used, len - used, " %s/%s %s", f->driver, f->timeline,
				 f->status > 0 ? "signalled" : f->status == 0 ? "active" : "error");

		if (w < 0)
			break;
		used += (size_t)w;
	}
	sb_sync_file_info_destroy(info);
}

/*
 * Mesa's venus (25.0, vn_renderer_virtgpu.c, sim_syncobj_create) makes one
 * sync_file the first time a process creates a sync object — a
 * VIRTGPU_EXECBUFFER fence on its CPU ring, signalled at once — and keeps it
 * as "signalled" for every later one until the process exits. A leak check
 * of a program that exported a SYNC_FD on venus sees it as one more fd.
 */
static void
count_signalled_virtio(int fd, const char *target, void *data)
{
	struct sb_sync_file_info *info = NULL;

	if (strcmp(target, "anon_inode:sync_file") != 0 || sb_sync_file_info_create(fd, &info) < 0)
		return;
	if (info->num_fences == 1 && info->fences[0].status > 0 &&
	    strcmp(info->fences[0].driver, "virtio_gpu") == 0)
		++*(int *)data;
	sb_sync_file_info_destroy(info);
}

int
demo_count_signalled_virtio_sync_files(void)
{
	int count = 0;

	each_fd(count_signalled_virtio, &count);
	return count;
}

struct list_fds {
	FILE *f;
	const char *prefix;
};

static void
list_fd(int fd, const char *target, void *data)
{
	const struct list_fds *l = data;
	char fences[200] = "";

	if (strcmp(target, "anon_inode:sync_file") == 0)
		describe_sync_file(fd, fences, sizeof(fences));
	fprintf(l->f, "%sfd %d -> %s%s\n", l->prefix, fd, target, fences);
}

void
demo_list_fds(FILE *f, const char *prefix)
{
	struct list_fds l = { f, prefix };

	each_fd(list_fd, &l);
}

void
demo_sleep_until_ns(int64_t t)
{
	struct timespec ts = { .tv_sec = t / 1000000000, .tv_nsec = t % 1000000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int
demo_ioctl(int fd, unsigned long request, void *arg)
{
	return sbk_ioctl(fd, request, arg);
}

/* ---- messages ----------------------------------------------------------- */

int
demo_send(int sock, const void *msg, size_t len, const int *fds, int n_fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * DEMO_MAX_FDS)];
		struct cmsghdr align;
	} ctrl;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (n_fds < 0 || n_fds > DEMO_MAX_FDS)
		return -EINVAL;
	if (n_fds > 0) {
		memset(&ctrl, 0, sizeof(ctrl));
		mh.msg_control = ctrl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n_fds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n_fds);
	}
	do {
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EMSGSIZE;
}

int
demo_recv(int sock, void *msg, size_t len, int *fds, int max_fds, int *n_fds, int timeout_ms)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * DEMO_MAX_FDS)];
		struct cmsghdr align;
	} ctrl;
	struct iovec iov = { .iov_base = msg, .iov_len = len };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctrl.buf, .msg_controllen = sizeof(ctrl.buf),
	};
	int got[DEMO_MAX_FDS];
	int n_got = 0;
	ssize_t n;

	if (n_fds)
		*n_fds = 0;
	if (timeout_ms >= 0) {
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		int pr;
		do {
			pr = poll(&pfd, 1, timeout_ms);
		} while (pr < 0 && errno == EINTR);
		if (pr < 0)
			return -errno;
		if (pr == 0)
			return -ETIME;
	}
	do {
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EPIPE;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k && n_got < DEMO_MAX_FDS; i++)
			memcpy(&got[n_got++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	if ((size_t)n != len || (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || n_got > max_fds ||
	    (n_got > 0 && !fds)) {
		for (int i = 0; i < n_got; i++)
			close(got[i]);
		return -EPROTO;
	}
	for (int i = 0; i < n_got; i++)
		fds[i] = got[i];
	if (n_fds)
		*n_fds = n_got;
	return 0;
}

/* ---- two processes ------------------------------------------------------ */

pid_t
demo_fork_peer(int (*child)(int sock, void *arg), void *arg, int *sock)
{
	int sv[2];
	pid_t pid;

	*sock = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	fflush(NULL); /* or the child writes out what the parent buffered */
	pid = fork();
	if (pid < 0) {
		pid = -errno;
		close(sv[0]);
		close(sv[1]);
		return pid;
	}
	if (pid == 0) {
		close(sv[0]);
		int status = child(sv[1], arg);
		close(sv[1]);
		fflush(NULL);
		_exit(status);
	}
	close(sv[1]);
	*sock = sv[0];
	return pid;
}

int
demo_wait_peer(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- vgem --------------------------------------------------------------- */

int
demo_drm_driver_is(int fd, const char *name)
{
	char buf[64];
	int ret = sbk_drm_driver_name(fd, buf, sizeof(buf));

	return ret < 0 ? ret : strcmp(buf, name) == 0;
}

int
demo_vivid_open(void)
{
	for (int i = 0; i < 64; i++) {
		struct v4l2_capability cap = { 0 };
		char path[32];
		int fd;

		snprintf(path, sizeof(path), "/dev/video%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (demo_ioctl(fd, VIDIOC_QUERYCAP, &cap) == 0 &&
		    strcmp((const char *)cap.driver, "vivid") == 0 &&
		    (cap.device_caps & V4L2_CAP_VIDEO_CAPTURE) &&
		    (cap.device_caps & V4L2_CAP_STREAMING))
			return fd;
		close(fd);
	}
	return -ENODEV;
}

int
demo_vgem_open(void)
{
	return demo_vgem_open_path(NULL, 0);
}

int
demo_vgem_open_path(char *path, size_t size)
{
	bool denied = false;

	for (int i = 0; i < 64; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/dev/dri/card%d", i);
		int fd = open(p, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			if (errno == EACCES || errno == EPERM)
				denied = true;
			continue;
		}
		if (demo_drm_driver_is(fd, "vgem") == 1) {
			if (path)
				snprintf(path, size, "%s", p);
			return fd;
		}
		close(fd);
	}
	return denied ? -EACCES : -ENODEV;
}

int
demo_vgem_buf_create(int vgem_fd, uint32_t width, uint32_t height, uint32_t bpp,
		     struct demo_vgem_buf *buf)
{
	struct drm_mode_create_dumb create = { .width = width, .height = height, .bpp = bpp };
	struct drm_prime_handle prime = { .flags = DRM_CLOEXEC | DRM_RDWR, .fd = -1 };
	int ret;

	*buf = (struct demo_vgem_buf){ .vgem_fd = vgem_fd, .dmabuf_fd = -1 };
	ret = demo_ioctl(vgem_fd, DRM_IOCTL_MODE_CREATE_DUMB, &create);
	if (ret < 0)
		return ret;
	buf->handle = create.handle;
	buf->width = width;
	buf->height = height;
	buf->pitch = create.pitch;
	buf->size = create.size;
	prime.handle = create.handle;
	ret = demo_ioctl(vgem_fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime);
	if (ret < 0) {
		demo_vgem_buf_destroy(buf);
		return ret;
	}
	buf->dmabuf_fd = prime.fd;
	return 0;
}

int
demo_vgem_buf_map(struct demo_vgem_buf *buf)
{
	struct drm_mode_map_dumb map = { .handle = buf->handle };
	int ret = demo_ioctl(buf->vgem_fd, DRM_IOCTL_MODE_MAP_DUMB, &map);

	if (ret < 0)
		return ret;
	void *p = mmap(NULL, buf->size, PROT_READ | PROT_WRITE, MAP_SHARED, buf->vgem_fd,
		       (off_t)map.offset);
	if (p == MAP_FAILED)
		return -errno;
	buf->map = p;
	return 0;
}

void
demo_vgem_buf_destroy(struct demo_vgem_buf *buf)
{
	if (buf->map)
		munmap(buf->map, buf->size);
	buf->map = NULL;
	demo_fd_clear(&buf->dmabuf_fd);
	if (buf->handle) {
		struct drm_mode_destroy_dumb d = { .handle = buf->handle };
		demo_ioctl(buf->vgem_fd, DRM_IOCTL_MODE_DESTROY_DUMB, &d);
	}
	buf->handle = 0;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

void
demo_sort_i64(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
}

const char *
demo_layer_env(const char *dir)
{
	char buf[4096];
	struct stat st;

	if (!dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return NULL;
	const char *old = getenv("XDG_DATA_DIRS");
	snprintf(buf, sizeof(buf), "%s:%s", dir, old && *old ? old : "/usr/local/share:/usr/share");
	setenv("XDG_DATA_DIRS", buf, 1);
	return dir;
}

int
demo_mkdir_p(const char *path)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}
