/* SPDX-License-Identifier: MIT */
#include "demo_util.h"

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

#include <drm.h>
#include <drm_mode.h>

#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

void
demo_fd_clear(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int
demo_count_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!dir)
		return -1;
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n - 1; /* the directory's own fd */
}

int64_t
demo_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
demo_sleep_ns(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

int
demo_ioctl(int fd, unsigned long request, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, request, arg);
	} while (ret == -1 && (errno == EINTR || errno == EAGAIN));
	return ret == -1 ? -errno : ret;
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

/* ---- vgem --------------------------------------------------------------- */

/* vgem's fence UAPI (include/uapi/drm/vgem_drm.h; libdrm ships no header). */
struct demo_vgem_fence_attach {
	uint32_t handle;
	uint32_t flags;
#define DEMO_VGEM_FENCE_WRITE 0x1
	uint32_t out_fence;
	uint32_t pad;
};
struct demo_vgem_fence_signal {
	uint32_t fence;
	uint32_t flags;
};
#define DEMO_IOCTL_VGEM_FENCE_ATTACH DRM_IOWR(DRM_COMMAND_BASE + 0x1, struct demo_vgem_fence_attach)
#define DEMO_IOCTL_VGEM_FENCE_SIGNAL DRM_IOW(DRM_COMMAND_BASE + 0x2, struct demo_vgem_fence_signal)

static int
driver_is(int fd, const char *name)
{
	char buf[64] = "";
	struct drm_version v = { .name = buf, .name_len = sizeof(buf) - 1 };
	int ret = demo_ioctl(fd, DRM_IOCTL_VERSION, &v);

	if (ret < 0)
		return ret;
	buf[v.name_len < sizeof(buf) ? v.name_len : sizeof(buf) - 1] = '\0';
	return strcmp(buf, name) == 0;
}

int
demo_vgem_open(void)
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
		if (driver_is(fd, "vgem") == 1)
			return fd;
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

int
demo_vgem_fence_attach(int vgem_fd, uint32_t handle, bool write, uint32_t *fence_id)
{
	struct demo_vgem_fence_attach a = { .handle = handle, .flags = write ? DEMO_VGEM_FENCE_WRITE : 0 };
	int ret = demo_ioctl(vgem_fd, DEMO_IOCTL_VGEM_FENCE_ATTACH, &a);

	if (ret < 0)
		return ret;
	*fence_id = a.out_fence;
	return 0;
}

int
demo_vgem_fence_signal(int vgem_fd, uint32_t fence_id)
{
	struct demo_vgem_fence_signal s = { .fence = fence_id };

	return demo_ioctl(vgem_fd, DEMO_IOCTL_VGEM_FENCE_SIGNAL, &s);
}

/* ---- PNG ---------------------------------------------------------------- */

static uint32_t crc_table[256];

static void
crc_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[n] = c;
	}
}

static uint32_t
crc_update(uint32_t crc, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return crc;
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static int
write_chunk(FILE *f, const char *type, const uint8_t *data, size_t len)
{
	uint8_t hdr[8], tail[4];

	put32(hdr, (uint32_t)len);
	memcpy(hdr + 4, type, 4);
	uint32_t crc = crc_update(0xffffffffu, hdr + 4, 4);
	crc = crc_update(crc, data, len) ^ 0xffffffffu;
	put32(tail, crc);
	if (fwrite(hdr, 1, 8, f) != 8 || (len && fwrite(data, 1, len, f) != len) ||
	    fwrite(tail, 1, 4, f) != 4)
		return -EIO;
	return 0;
}

/* A zlib stream of stored (uncompressed) deflate blocks, when zlib is absent. */
static uint8_t *
deflate_stored(const uint8_t *raw, size_t n, size_t *out_len)
{
	size_t blocks = n / 65535 + 1;
	uint8_t *out = malloc(2 + n + blocks * 5 + 4);
	size_t o = 0;
	uint32_t a = 1, b = 0;

	if (!out)
		return NULL;
	out[o++] = 0x78;
	out[o++] = 0x01;
	for (size_t i = 0; i < n || i == 0;) {
		size_t k = n - i > 65535 ? 65535 : n - i;
		out[o++] = i + k == n ? 1 : 0;
		out[o++] = (uint8_t)k;
		out[o++] = (uint8_t)(k >> 8);
		out[o++] = (uint8_t)~k;
		out[o++] = (uint8_t)(~k >> 8);
		memcpy(out + o, raw + i, k);
		o += k;
		i += k;
		if (n == 0)
			break;
	}
	for (size_t i = 0; i < n; i++) {
		a = (a + raw[i]) % 65521;
		b = (b + a) % 65521;
	}
	put32(out + o, b << 16 | a);
	*out_len = o + 4;
	return out;
}

int
demo_png_write(const char *path, const uint8_t *pixels, uint32_t width, uint32_t height,
	       uint32_t stride, int channels)
{
	static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	size_t row = (size_t)width * 3 + 1;
	size_t raw_len = row * height;
	uint8_t *raw = malloc(raw_len);
	uint8_t *z = NULL;
	size_t z_len = 0;
	int ret = -ENOMEM;
	FILE *f = NULL;

	if (channels != 3 && channels != 4)
		return -EINVAL;
	if (!raw)
		return -ENOMEM;
	for (uint32_t y = 0; y < height; y++) {
		uint8_t *o = raw + y * row;
		const uint8_t *in = pixels + (size_t)y * stride;
		*o++ = 0; /* filter: none */
		for (uint32_t x = 0; x < width; x++, in += channels) {
			*o++ = in[0];
			*o++ = in[1];
			*o++ = in[2];
		}
	}
#ifdef HAVE_ZLIB
	uLongf zl = compressBound((uLong)raw_len);
	z = malloc(zl);
	if (z && compress2(z, &zl, raw, (uLong)raw_len, 6) == Z_OK)
		z_len = zl;
	else {
		free(z);
		z = NULL;
	}
#endif
	if (!z)
		z = deflate_stored(raw, raw_len, &z_len);
	if (!z)
		goto out;

	if (!crc_table[1])
		crc_init();
	f = fopen(path, "wbe");
	if (!f) {
		ret = -errno;
		goto out;
	}
	uint8_t ihdr[13];
	put32(ihdr, width);
	put32(ihdr + 4, height);
	ihdr[8] = 8; /* bit depth */
	ihdr[9] = 2; /* colour type: RGB */
	ihdr[10] = ihdr[11] = ihdr[12] = 0;
	ret = fwrite(sig, 1, 8, f) == 8 ? 0 : -EIO;
	if (!ret)
		ret = write_chunk(f, "IHDR", ihdr, sizeof(ihdr));
	if (!ret)
		ret = write_chunk(f, "IDAT", z, z_len);
	if (!ret)
		ret = write_chunk(f, "IEND", NULL, 0);
	if (fclose(f) != 0 && !ret)
		ret = -EIO;
out:
	free(raw);
	free(z);
	return ret;
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
