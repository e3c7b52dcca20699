/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-demo-handoff: hand a dma-buf with a pending kernel fence from a
 * producer process to a consumer process.
 *
 *   producer (child)                         consumer (parent)
 *   ----------------                         -----------------
 *   vgem dumb buffer, mmap, export dma-buf
 *   send dma-buf fd (SCM_RIGHTS)  ─────────► check it is a dma-buf, mmap it
 *   for each frame N:
 *     FENCE_ATTACH(WRITE)  (fence pending)
 *     send "frame N submitted"    ─────────► export READ sync_file, decode it
 *     "render": write frame N,               sb_sync_file_wait()   (skipped
 *               band by band, ~300 ms                               with --no-sync)
 *     FENCE_SIGNAL        ───── wakes ─────► read + verify the whole frame
 *     wait for "released"         ◄───────── send "frame N released"
 *
 * The consumer learns when the frame is complete only through the fence
 * attached to the dma-buf: exactly the implicit-sync handoff that compositors
 * and media pipelines rely on. With --no-sync (or SYNCBRIDGE_DISABLE=1) it
 * skips the wait and reads while the producer is still writing, which shows
 * what the fence is for: stale or torn frames.
 *
 * Needs the vgem driver (DRM card node, root): run it in the test VM
 * (scripts/vm/vm-run.sh -- build/examples/syncbridge-demo-handoff) or after
 * `modprobe vgem`. Exit status: 0 success, 1 failure, 2 usage, 77 no vgem.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <drm.h>
#include <drm_mode.h>

#include <syncbridge/syncbridge.h>

/*
 * vgem's fence UAPI (include/uapi/drm/vgem_drm.h, drivers/gpu/drm/vgem/
 * vgem_fence.c). libdrm does not ship the header, so it is restated here.
 * The fence is added to the buffer's dma_resv as a WRITE fence and signals
 * on FENCE_SIGNAL, or by itself after 10 s (a later FENCE_SIGNAL then fails
 * with ETIMEDOUT), or when the DRM fd that attached it is closed.
 */
struct vgem_fence_attach {
	__u32 handle;
	__u32 flags;
#define VGEM_FENCE_WRITE 0x1
	__u32 out_fence;
	__u32 pad;
};

struct vgem_fence_signal {
	__u32 fence;
	__u32 flags;
};

#define DRM_IOCTL_VGEM_FENCE_ATTACH DRM_IOWR(DRM_COMMAND_BASE + 0x1, struct vgem_fence_attach)
#define DRM_IOCTL_VGEM_FENCE_SIGNAL DRM_IOW(DRM_COMMAND_BASE + 0x2, struct vgem_fence_signal)

#define EXIT_USAGE 2
#define EXIT_SKIP 77

#define BUF_WIDTH 256
#define BUF_HEIGHT 256
#define RENDER_BANDS 32
/* A vgem fence signals itself 10 s after it was attached. */
#define MAX_RENDER_MS 5000
/* Generous for TCG; a lost producer signals its fences when its fd closes. */
#define WAIT_TIMEOUT_NS (INT64_C(15) * 1000000000)
#define MS_PER_NS 1e-6

enum wait_mode {
	WAIT_SYNC_FILE, /* export a READ sync_file, decode it, sb_sync_file_wait() */
	WAIT_DMABUF,    /* sb_dmabuf_wait(): poll() on the dma-buf itself */
	WAIT_NONE,      /* --no-sync / SYNCBRIDGE_DISABLE=1: the control */
};

struct options {
	unsigned frames;
	unsigned render_ms;
	enum wait_mode wait;
	bool expect_torn;
	bool verbose;
	const char *device; /* NULL: find the vgem card node */
};

/* What travels over the socket; one message per datagram (SOCK_SEQPACKET). */
enum msg_type {
	MSG_BUFFER = 1,      /* producer → consumer, carries the dma-buf fd */
	MSG_FRAME_SUBMITTED, /* producer → consumer: fence attached, rendering starts */
	MSG_FRAME_RELEASED,  /* consumer → producer: done reading the frame */
};

struct msg {
	uint32_t type;
	uint32_t frame;
	uint32_t width, height, stride;
	uint32_t pad;
	uint64_t size;
};

/* ---- small helpers ---------------------------------------------------- */

static const char *prog = "syncbridge-demo-handoff";

static int
drm_ioctl(int fd, unsigned long request, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, request, arg);
	} while (ret == -1 && (errno == EINTR || errno == EAGAIN));
	return ret == -1 ? -errno : ret;
}

static void
fd_clear(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
sleep_until_ns(int64_t t)
{
	struct timespec ts = { .tv_sec = t / 1000000000, .tv_nsec = t % 1000000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Open descriptors of this process, or -1 when /proc is not there. */
static int
count_open_fds(void)
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

/* The word at index i of frame f: the frame number in the top byte. */
static inline uint32_t
pattern(unsigned frame, size_t i)
{
	return (uint32_t)frame << 24 | (uint32_t)(i & 0xffffff);
}

static void
fill_rows(uint8_t *map, uint32_t stride, uint32_t width, unsigned frame,
	  uint32_t row_begin, uint32_t row_end)
{
	for (uint32_t y = row_begin; y < row_end; y++) {
		uint32_t *row = (uint32_t *)(map + (size_t)y * stride);
		for (uint32_t x = 0; x < width; x++)
			row[x] = pattern(frame, (size_t)y * width + x);
	}
}

static int
send_msg(int sock, const struct msg *m, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctrl;
	struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		memset(&ctrl, 0, sizeof(ctrl));
		mh.msg_control = ctrl.buf;
		mh.msg_controllen = sizeof(ctrl.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do {
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(*m) ? 0 : -EMSGSIZE;
}

/*
 * Receive one message of the expected type. *fd (if not NULL) receives the
 * passed descriptor, owned by the caller, or -1. Returns 0, -EPIPE when the
 * peer went away, -EPROTO on a malformed message, or -errno.
 */
static int
recv_msg(int sock, uint32_t type, struct msg *m, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctrl;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctrl.buf, .msg_controllen = sizeof(ctrl.buf),
	};
	int received = -1;
	ssize_t n;

	if (fd)
		*fd = -1;
	do {
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EPIPE;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)) && received < 0)
			memcpy(&received, CMSG_DATA(c), sizeof(int));
	}
	if (n != (ssize_t)sizeof(*m) || m->type != type || (mh.msg_flags & MSG_CTRUNC) ||
	    (fd == NULL && received >= 0)) {
		fd_clear(&received);
		return -EPROTO;
	}
	if (fd)
		*fd = received;
	return 0;
}

/* ---- finding vgem ----------------------------------------------------- */

/*
 * Whether the DRM node fd belongs to the driver `name`. Returns 1, 0, or
 * -errno if it does not answer DRM_IOCTL_VERSION.
 */
static int
drm_driver_is(int fd, const char *name)
{
	char buf[64] = "";
	struct drm_version v = { .name = buf, .name_len = sizeof(buf) - 1 };
	int ret = drm_ioctl(fd, DRM_IOCTL_VERSION, &v);

	if (ret < 0)
		return ret;
	buf[v.name_len < sizeof(buf) ? v.name_len : sizeof(buf) - 1] = '\0';
	return strcmp(buf, name) == 0;
}

/*
 * Find vgem's card node (not its render node: CREATE_DUMB is refused there).
 * On success *path holds it. Returns 0, -ENOENT (no vgem), or -EACCES (some
 * card node could not be opened and none of the others is vgem).
 */
static int
find_vgem_card(char *path, size_t size)
{
	bool denied = false;

	for (int i = 0; i < 64; i++) {
		char p[32];
		int fd;

		snprintf(p, sizeof(p), "/dev/dri/card%d", i);
		fd = open(p, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			if (errno == EACCES || errno == EPERM)
				denied = true;
			continue;
		}
		int is = drm_driver_is(fd, "vgem");
		close(fd);
		if (is == 1) {
			snprintf(path, size, "%s", p);
			return 0;
		}
	}
	return denied ? -EACCES : -ENOENT;
}

/* ---- producer --------------------------------------------------------- */

struct producer {
	int card_fd;
	uint32_t handle; /* dumb buffer, 0: none */
	int dmabuf_fd;
	uint8_t *map;
	size_t map_size;
	uint32_t width, height, stride;
};

static void
producer_finish(struct producer *p)
{
	if (p->map)
		munmap(p->map, p->map_size);
	p->map = NULL;
	fd_clear(&p->dmabuf_fd);
	if (p->handle) {
		struct drm_mode_destroy_dumb d = { .handle = p->handle };
		int ret = drm_ioctl(p->card_fd, DRM_IOCTL_MODE_DESTROY_DUMB, &d);
		if (ret < 0)
			fprintf(stderr, "%s: producer: DRM_IOCTL_MODE_DESTROY_DUMB: %s\n",
				prog, strerror(-ret));
		p->handle = 0;
	}
	/* Closing the card fd also signals any vgem fence still pending. */
	fd_clear(&p->card_fd);
}

static int
producer_init(struct producer *p, const char *device)
{
	struct drm_mode_create_dumb create = { .width = BUF_WIDTH, .height = BUF_HEIGHT, .bpp = 32 };
	struct drm_mode_map_dumb map = { 0 };
	struct drm_prime_handle prime = { .flags = DRM_CLOEXEC | DRM_RDWR, .fd = -1 };
	int ret;

	*p = (struct producer){ .card_fd = -1, .dmabuf_fd = -1 };

	p->card_fd = open(device, O_RDWR | O_CLOEXEC);
	if (p->card_fd < 0) {
		ret = -errno;
		fprintf(stderr, "%s: producer: open %s: %s\n", prog, device, strerror(-ret));
		return ret;
	}
	ret = drm_driver_is(p->card_fd, "vgem");
	if (ret <= 0) {
		fprintf(stderr, "%s: producer: %s is not a vgem node (%s)\n", prog, device,
			ret < 0 ? strerror(-ret) : "other driver");
		return ret < 0 ? ret : -ENODEV;
	}

	ret = drm_ioctl(p->card_fd, DRM_IOCTL_MODE_CREATE_DUMB, &create);
	if (ret < 0) {
		fprintf(stderr, "%s: producer: DRM_IOCTL_MODE_CREATE_DUMB on %s: %s%s\n", prog,
			device, strerror(-ret),
			ret == -EACCES ? " (a render node? dumb buffers need the card node)" : "");
		return ret;
	}
	p->handle = create.handle;
	p->width = create.width;
	p->height = create.height;
	p->stride = create.pitch;
	p->map_size = create.size;

	map.handle = p->handle;
	ret = drm_ioctl(p->card_fd, DRM_IOCTL_MODE_MAP_DUMB, &map);
	if (ret < 0) {
		fprintf(stderr, "%s: producer: DRM_IOCTL_MODE_MAP_DUMB: %s\n", prog, strerror(-ret));
		return ret;
	}
	void *ptr = mmap(NULL, p->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, p->card_fd,
			 (off_t)map.offset);
	if (ptr == MAP_FAILED) {
		ret = -errno;
		fprintf(stderr, "%s: producer: mmap of the dumb buffer: %s\n", prog, strerror(-ret));
		return ret;
	}
	p->map = ptr;

	prime.handle = p->handle;
	ret = drm_ioctl(p->card_fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime);
	if (ret < 0) {
		fprintf(stderr, "%s: producer: DRM_IOCTL_PRIME_HANDLE_TO_FD: %s\n", prog,
			strerror(-ret));
		return ret;
	}
	p->dmabuf_fd = prime.fd;

	/* Frame 0: what the consumer finds before the first frame is rendered. */
	fill_rows(p->map, p->stride, p->width, 0, 0, p->height);
	return 0;
}

static int
producer_frame(struct producer *p, int sock, const struct options *opt, unsigned frame)
{
	struct vgem_fence_attach attach = { .handle = p->handle, .flags = VGEM_FENCE_WRITE };
	struct vgem_fence_signal signal_arg = { 0 };
	struct msg m = { .type = MSG_FRAME_SUBMITTED, .frame = frame };
	int64_t render_ns = (int64_t)opt->render_ms * 1000000;
	int64_t t0;
	int ret;

	/* "Submit": from now on the buffer has a pending writer. */
	ret = drm_ioctl(p->card_fd, DRM_IOCTL_VGEM_FENCE_ATTACH, &attach);
	if (ret < 0) {
		fprintf(stderr, "%s: producer: frame %u: DRM_IOCTL_VGEM_FENCE_ATTACH: %s\n", prog,
			frame, strerror(-ret));
		return ret;
	}
	signal_arg.fence = attach.out_fence;

	ret = send_msg(sock, &m, -1);
	if (ret < 0) {
		fprintf(stderr, "%s: producer: frame %u: sending to the consumer: %s\n", prog,
			frame, strerror(-ret));
		/* Signal anyway so nobody waits for a frame that never comes. */
		drm_ioctl(p->card_fd, DRM_IOCTL_VGEM_FENCE_SIGNAL, &signal_arg);
		return ret;
	}

	/* "Render": the GPU latency, then the writes, one band at a time. */
	t0 = now_ns();
	for (uint32_t b = 0; b < RENDER_BANDS; b++) {
		sleep_until_ns(t0 + render_ns * (b + 1) / RENDER_BANDS);
		fill_rows(p->map, p->stride, p->width, frame, p->height * b / RENDER_BANDS,
			  p->height * (b + 1) / RENDER_BANDS);
	}

	/* "Completion interrupt": the frame is complete. */
	ret = drm_ioctl(p->card_fd, DRM_IOCTL_VGEM_FENCE_SIGNAL, &signal_arg);
	if (ret < 0) {
		fprintf(stderr, "%s: producer: frame %u: DRM_IOCTL_VGEM_FENCE_SIGNAL: %s%s\n", prog,
			frame, strerror(-ret),
			ret == -ETIMEDOUT ? " (the fence expired: vgem signals it after 10 s)" : "");
		return ret;
	}
	if (opt->verbose)
		printf("producer: frame %u rendered in %.1f ms, fence signalled\n", frame,
		       (now_ns() - t0) * MS_PER_NS);

	/* The next frame overwrites the buffer: wait until the consumer is done. */
	ret = recv_msg(sock, MSG_FRAME_RELEASED, &m, NULL);
	if (ret == 0 && m.frame != frame)
		ret = -EPROTO;
	if (ret < 0) {
		fprintf(stderr, "%s: producer: frame %u: waiting for the release: %s\n", prog,
			frame, ret == -EPIPE ? "the consumer went away" : strerror(-ret));
		return ret;
	}
	return 0;
}

static int
run_producer(int sock, const struct options *opt, const char *device)
{
	struct producer p;
	int fds_before = count_open_fds();
	int ret;

	ret = producer_init(&p, device);
	if (ret < 0)
		goto out;

	struct msg m = {
		.type = MSG_BUFFER, .width = p.width, .height = p.height, .stride = p.stride,
		.size = p.map_size,
	};
	ret = send_msg(sock, &m, p.dmabuf_fd);
	if (ret < 0) {
		fprintf(stderr, "%s: producer: sending the dma-buf: %s\n", prog, strerror(-ret));
		goto out;
	}
	/* The consumer holds its own reference now; ours is not needed. */
	fd_clear(&p.dmabuf_fd);

	for (unsigned f = 1; f <= opt->frames && ret == 0; f++)
		ret = producer_frame(&p, sock, opt, f);

out:
	producer_finish(&p);
	int fds_after = count_open_fds();
	if (fds_before >= 0 && fds_after != fds_before) {
		fprintf(stderr, "%s: producer: %d fds open at the end, %d at the start\n", prog,
			fds_after, fds_before);
		if (ret == 0)
			ret = -EBADFD;
	}
	return ret;
}

/* ---- consumer --------------------------------------------------------- */

enum verdict { FRAME_OK, FRAME_STALE, FRAME_TORN, FRAME_CORRUPT };

struct check {
	enum verdict verdict;
	uint32_t new_rows; /* rows entirely of the expected frame */
	uint32_t old_rows; /* rows entirely of the previous frame */
};

static struct check
check_frame(const uint8_t *pixels, uint32_t stride, uint32_t width, uint32_t height,
	    unsigned frame)
{
	struct check c = { 0 };

	for (uint32_t y = 0; y < height; y++) {
		const uint32_t *row = (const uint32_t *)(pixels + (size_t)y * stride);
		bool is_new = true, is_old = true;

		for (uint32_t x = 0; x < width && (is_new || is_old); x++) {
			size_t i = (size_t)y * width + x;
			is_new = is_new && row[x] == pattern(frame, i);
			is_old = is_old && row[x] == pattern(frame - 1, i);
		}
		c.new_rows += is_new;
		c.old_rows += is_old;
	}
	if (c.new_rows == height)
		c.verdict = FRAME_OK;
	else if (c.old_rows == height)
		c.verdict = FRAME_STALE;
	else if (c.new_rows + c.old_rows > 0)
		c.verdict = FRAME_TORN;
	else
		c.verdict = FRAME_CORRUPT;
	return c;
}

static const char *
status_name(int32_t status, char *buf, size_t size)
{
	if (status == 1)
		return "signalled";
	if (status == 0)
		return "active";
	snprintf(buf, size, "error %s", strerror(-status));
	return buf;
}

/* "1 fence (vgem unbound, status active)" */
static void
describe_fences(const struct sb_sync_file_info *info, char *out, size_t size)
{
	char st[64];
	int n;

	if (info->num_fences == 0) {
		snprintf(out, size, "0 fences (buffer idle)");
		return;
	}
	n = snprintf(out, size, "%" PRIu32 " fence%s (", info->num_fences,
		     info->num_fences == 1 ? "" : "s");
	for (uint32_t i = 0; i < info->num_fences && n > 0 && (size_t)n < size; i++) {
		const struct sb_fence_info *f = &info->fences[i];
		n += snprintf(out + n, size - n, "%s%s %s, status %s", i ? "; " : "", f->driver,
			      f->timeline, status_name(f->status, st, sizeof(st)));
	}
	if (n > 0 && (size_t)n < size)
		snprintf(out + n, size - n, ")");
}

/* The latest signal time among the fences, 0 if one is still active. */
static uint64_t
last_signal_ns(const struct sb_sync_file_info *info)
{
	uint64_t t = 0;

	for (uint32_t i = 0; i < info->num_fences; i++) {
		if (info->fences[i].status == 0)
			return 0;
		if (info->fences[i].timestamp_ns > t)
			t = info->fences[i].timestamp_ns;
	}
	return t;
}

struct stats {
	unsigned ok, bad, errors, n_waits;
	double wait_ms_sum, wait_ms_min, wait_ms_max;
	double wake_ms[256];
	unsigned n_wake;
};

struct consumer {
	int dmabuf_fd;
	const uint8_t *map;
	size_t map_size;
	uint8_t *snapshot;
	uint32_t width, height, stride;
};

static void
consumer_finish(struct consumer *c)
{
	if (c->map)
		munmap((void *)c->map, c->map_size);
	c->map = NULL;
	free(c->snapshot);
	c->snapshot = NULL;
	fd_clear(&c->dmabuf_fd);
}

static int
consumer_init(struct consumer *c, int sock)
{
	struct msg m;
	int ret;

	*c = (struct consumer){ .dmabuf_fd = -1 };

	ret = recv_msg(sock, MSG_BUFFER, &m, &c->dmabuf_fd);
	if (ret < 0) {
		fprintf(stderr, "%s: consumer: receiving the dma-buf: %s\n", prog,
			ret == -EPIPE ? "the producer went away (see its error above)"
				      : strerror(-ret));
		return ret;
	}
	/* Never trust a received fd: it must be a dma-buf as large as announced. */
	if (c->dmabuf_fd < 0 || !sb_dmabuf_is_dmabuf(c->dmabuf_fd)) {
		fprintf(stderr, "%s: consumer: the producer did not send a dma-buf\n", prog);
		return -EPROTO;
	}
	off_t size = lseek(c->dmabuf_fd, 0, SEEK_END);
	if (size < 0 || m.width == 0 || m.height == 0 || m.stride < m.width * 4 ||
	    (uint64_t)m.stride * m.height > (uint64_t)size || m.size != (uint64_t)size) {
		fprintf(stderr, "%s: consumer: dma-buf of %lld bytes does not hold %ux%u (stride %u)\n",
			prog, (long long)size, m.width, m.height, m.stride);
		return -EPROTO;
	}
	c->width = m.width;
	c->height = m.height;
	c->stride = m.stride;
	c->map_size = (size_t)size;

	/*
	 * A plain CPU mapping of the dma-buf. A portable reader would bracket
	 * its reads with DMA_BUF_IOCTL_SYNC for cache maintenance; vgem maps
	 * write-combined (coherent), and DMA_BUF_SYNC_START would itself wait
	 * for the write fence — which would hide exactly what --no-sync shows.
	 */
	void *ptr = mmap(NULL, c->map_size, PROT_READ, MAP_SHARED, c->dmabuf_fd, 0);
	if (ptr == MAP_FAILED) {
		ret = -errno;
		fprintf(stderr, "%s: consumer: mmap of the dma-buf: %s\n", prog, strerror(-ret));
		return ret;
	}
	c->map = ptr;

	c->snapshot = malloc(c->map_size);
	if (!c->snapshot) {
		fprintf(stderr, "%s: consumer: %s\n", prog, strerror(ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

/*
 * One frame. Returns 0 when the frame was handled (whatever its content),
 * -errno when the handoff itself failed.
 */
static int
consumer_frame(struct consumer *c, int sock, const struct options *opt, unsigned frame,
	       struct stats *st)
{
	struct sb_sync_file_info *info = NULL;
	struct msg m;
	char fences[256] = "";
	char wake[64] = "";
	char how[64];
	int sync_fd = -1;
	int64_t t0, t1;
	int ret;

	ret = recv_msg(sock, MSG_FRAME_SUBMITTED, &m, NULL);
	if (ret == 0 && m.frame != frame)
		ret = -EPROTO;
	if (ret < 0) {
		fprintf(stderr, "%s: consumer: frame %u: %s\n", prog, frame,
			ret == -EPIPE ? "the producer went away (see its error above)"
				      : strerror(-ret));
		return ret;
	}

	/*
	 * What a reader has to wait for: the buffer's writers, as a sync_file.
	 * Decoded in every mode (also --no-sync) so the only difference
	 * between the runs is the wait itself.
	 */
	enum wait_mode mode = opt->wait;
	if (mode != WAIT_DMABUF) {
		ret = sb_dmabuf_export_sync_file(c->dmabuf_fd, SB_ACCESS_READ, &sync_fd);
		if (ret == -EOPNOTSUPP && mode == WAIT_SYNC_FILE) {
			/* Kernel < 6.0: poll() on the dma-buf keeps the ordering. */
			mode = WAIT_DMABUF;
		} else if (ret == -EOPNOTSUPP) {
			snprintf(fences, sizeof(fences), "the buffer's writers (kernel < 6.0: "
				 "no sync_file export)");
			ret = 0;
		} else if (ret < 0) {
			fprintf(stderr, "%s: consumer: frame %u: sb_dmabuf_export_sync_file(READ): %s\n",
				prog, frame, strerror(-ret));
			goto out;
		} else {
			ret = sb_sync_file_get_info(sync_fd, &info);
			if (ret < 0) {
				fprintf(stderr, "%s: consumer: frame %u: sb_sync_file_get_info: %s\n",
					prog, frame, strerror(-ret));
				goto out;
			}
			describe_fences(info, fences, sizeof(fences));
		}
	}
	if (mode == WAIT_DMABUF) {
		bool busy = false;
		ret = sb_dmabuf_is_busy(c->dmabuf_fd, SB_ACCESS_READ, &busy);
		if (ret < 0) {
			fprintf(stderr, "%s: consumer: frame %u: sb_dmabuf_is_busy(READ): %s\n", prog,
				frame, strerror(-ret));
			goto out;
		}
		snprintf(fences, sizeof(fences), "the buffer's writers (dma-buf %s)",
			 busy ? "busy" : "idle");
	}

	t0 = now_ns();
	if (mode == WAIT_SYNC_FILE) {
		ret = sb_sync_file_wait(sync_fd, WAIT_TIMEOUT_NS);
		if (ret < 0) {
			fprintf(stderr, "%s: consumer: frame %u: sb_sync_file_wait: %s\n", prog,
				frame, strerror(-ret));
			goto out;
		}
	} else if (mode == WAIT_DMABUF) {
		ret = sb_dmabuf_wait(c->dmabuf_fd, SB_ACCESS_READ, WAIT_TIMEOUT_NS);
		if (ret < 0) {
			fprintf(stderr, "%s: consumer: frame %u: sb_dmabuf_wait(READ): %s\n", prog,
				frame, strerror(-ret));
			goto out;
		}
	}
	t1 = now_ns();

	/* Read the frame, as a compositor would sample it. */
	memcpy(c->snapshot, c->map, (size_t)c->stride * c->height);

	double waited = (t1 - t0) * MS_PER_NS;
	if (mode == WAIT_NONE) {
		snprintf(how, sizeof(how), "read at once, not waiting");
	} else {
		snprintf(how, sizeof(how), "waited %.1f ms", waited);
		st->wait_ms_sum += waited;
		if (st->n_waits++ == 0 || waited < st->wait_ms_min)
			st->wait_ms_min = waited;
		if (waited > st->wait_ms_max)
			st->wait_ms_max = waited;
	}

	/* How long after the signal the wait returned (the kernel timestamps it). */
	if (mode == WAIT_SYNC_FILE && info && info->status == 0) {
		struct sb_sync_file_info *after = NULL;
		if (sb_sync_file_get_info(sync_fd, &after) == 0) {
			uint64_t signalled = last_signal_ns(after);
			if (signalled && (uint64_t)t1 >= signalled) {
				double ms = ((uint64_t)t1 - signalled) * MS_PER_NS;
				snprintf(wake, sizeof(wake), ", woke %.2f ms after the signal", ms);
				if (st->n_wake < sizeof(st->wake_ms) / sizeof(st->wake_ms[0]))
					st->wake_ms[st->n_wake++] = ms;
			}
		}
		sb_sync_file_info_free(after);
	}

	struct check chk = check_frame(c->snapshot, c->stride, c->width, c->height, frame);
	switch (chk.verdict) {
	case FRAME_OK:
		printf("frame %u: %s for %s%s -> content OK\n", frame, how, fences, wake);
		st->ok++;
		break;
	case FRAME_STALE:
		printf("frame %u: %s for %s%s -> STALE (still frame %u)\n", frame, how, fences,
		       wake, frame - 1);
		st->bad++;
		break;
	case FRAME_TORN:
		printf("frame %u: %s for %s%s -> STALE (torn: %u/%u rows of frame %u, %u of frame %u)\n",
		       frame, how, fences, wake, chk.new_rows, c->height, frame, chk.old_rows,
		       frame - 1);
		st->bad++;
		break;
	case FRAME_CORRUPT:
		printf("frame %u: %s for %s%s -> STALE (garbage: neither frame %u nor %u)\n", frame,
		       how, fences, wake, frame, frame - 1);
		st->bad++;
		break;
	}
	fflush(stdout);

	m = (struct msg){ .type = MSG_FRAME_RELEASED, .frame = frame };
	ret = send_msg(sock, &m, -1);
	if (ret < 0)
		fprintf(stderr, "%s: consumer: frame %u: sending the release: %s\n", prog, frame,
			strerror(-ret));
out:
	sb_sync_file_info_free(info);
	fd_clear(&sync_fd);
	return ret;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static const char *
wait_mode_name(enum wait_mode w)
{
	switch (w) {
	case WAIT_SYNC_FILE:
		return "sync: sb_dmabuf_export_sync_file(READ) + sb_sync_file_wait";
	case WAIT_DMABUF:
		return "sync: sb_dmabuf_wait(READ)";
	case WAIT_NONE:
		break;
	}
	return "no-sync: the consumer reads without waiting";
}

static int
run_consumer(int sock, const struct options *opt, const char *device, struct stats *st)
{
	struct consumer c;
	int ret;

	ret = consumer_init(&c, sock);
	if (ret < 0)
		goto out;

	printf("handoff: %s (vgem), %ux%u XRGB8888 dumb buffer (%zu bytes) as a dma-buf, "
	       "%u frames, %u ms render each; %s\n",
	       device, c.width, c.height, c.map_size, opt->frames, opt->render_ms,
	       wait_mode_name(opt->wait));
	fflush(stdout);

	for (unsigned f = 1; f <= opt->frames; f++) {
		ret = consumer_frame(&c, sock, opt, f, st);
		if (ret < 0) {
			st->errors++;
			break;
		}
	}
out:
	consumer_finish(&c);
	return ret;
}

/* ---- main ------------------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [options]\n"
		"A producer process renders frames into a vgem dma-buf under a kernel write\n"
		"fence; a consumer process waits for that fence through libsyncbridge before\n"
		"reading each frame, and checks it is complete.\n"
		"\n"
		"  -n, --frames N       frames to hand over (1-255, default 5)\n"
		"  -r, --render-ms MS   simulated render time per frame (1-%d, default 300)\n"
		"  -w, --wait MODE      sync-file (default): export a READ sync_file, show it,\n"
		"                       sb_sync_file_wait(); dmabuf: sb_dmabuf_wait() (poll)\n"
		"      --no-sync        skip the wait (also SYNCBRIDGE_DISABLE=1): frames are\n"
		"                       read too early and reported STALE\n"
		"      --expect-torn    with --no-sync: fail unless at least one frame was bad\n"
		"  -d, --device PATH    vgem card node (default: found by driver name)\n"
		"  -v, --verbose        also print the producer's side\n"
		"  -h, --help\n"
		"\n"
		"Exit: 0 success, 1 failure, 2 usage, 77 no vgem (skip).\n",
		prog, MAX_RENDER_MS);
}

static bool
parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		return false;
	*out = (unsigned)v;
	return true;
}

static int
parse_options(int argc, char **argv, struct options *opt)
{
	enum { OPT_NO_SYNC = 256, OPT_EXPECT_TORN };
	static const struct option longopts[] = {
		{ "frames", required_argument, NULL, 'n' },
		{ "render-ms", required_argument, NULL, 'r' },
		{ "wait", required_argument, NULL, 'w' },
		{ "no-sync", no_argument, NULL, OPT_NO_SYNC },
		{ "expect-torn", no_argument, NULL, OPT_EXPECT_TORN },
		{ "device", required_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *disable = getenv("SYNCBRIDGE_DISABLE");
	bool no_sync = disable && *disable && strcmp(disable, "0") != 0;
	int c;

	*opt = (struct options){ .frames = 5, .render_ms = 300, .wait = WAIT_SYNC_FILE };

	while ((c = getopt_long(argc, argv, "n:r:w:d:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!parse_uint(optarg, 1, 255, &opt->frames)) {
				fprintf(stderr, "%s: --frames: want 1-255, got '%s'\n", prog, optarg);
				return -EINVAL;
			}
			break;
		case 'r':
			if (!parse_uint(optarg, 1, MAX_RENDER_MS, &opt->render_ms)) {
				fprintf(stderr, "%s: --render-ms: want 1-%d (a vgem fence expires after 10 s), got '%s'\n",
					prog, MAX_RENDER_MS, optarg);
				return -EINVAL;
			}
			break;
		case 'w':
			if (strcmp(optarg, "sync-file") == 0) {
				opt->wait = WAIT_SYNC_FILE;
			} else if (strcmp(optarg, "dmabuf") == 0) {
				opt->wait = WAIT_DMABUF;
			} else {
				fprintf(stderr, "%s: --wait: want sync-file or dmabuf, got '%s'\n", prog,
					optarg);
				return -EINVAL;
			}
			break;
		case OPT_NO_SYNC:
			no_sync = true;
			break;
		case OPT_EXPECT_TORN:
			opt->expect_torn = true;
			break;
		case 'd':
			opt->device = optarg;
			break;
		case 'v':
			opt->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_SUCCESS);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
		return -EINVAL;
	}
	if (no_sync)
		opt->wait = WAIT_NONE;
	if (opt->expect_torn && !no_sync) {
		fprintf(stderr, "%s: --expect-torn needs --no-sync (or SYNCBRIDGE_DISABLE=1)\n", prog);
		return -EINVAL;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct options opt;
	struct stats st = { 0 };
	char device[64];
	int sv[2] = { -1, -1 };
	int fds_before, status, ret;
	pid_t pid;
	bool producer_ok;

	/* Two processes share stdout: keep their lines whole. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (parse_options(argc, argv, &opt) < 0)
		return EXIT_USAGE;

	if (opt.device) {
		snprintf(device, sizeof(device), "%s", opt.device);
	} else {
		ret = find_vgem_card(device, sizeof(device));
		if (ret < 0) {
			fprintf(stderr, "%s: no vgem DRM card node%s; needs the vgem driver: run it in "
				"the test VM with scripts/vm/vm-run.sh, or modprobe vgem\n", prog,
				ret == -EACCES ? " (some /dev/dri/card* nodes could not be opened: "
						 "Permission denied; run as root)" : "");
			return EXIT_SKIP;
		}
	}

	fds_before = count_open_fds();

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		fprintf(stderr, "%s: socketpair: %s\n", prog, strerror(errno));
		return EXIT_FAILURE;
	}

	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
		fd_clear(&sv[0]);
		fd_clear(&sv[1]);
		return EXIT_FAILURE;
	}
	if (pid == 0) {
		fd_clear(&sv[0]);
		ret = run_producer(sv[1], &opt, device);
		fd_clear(&sv[1]);
		fflush(stdout);
		_exit(ret < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
	}

	fd_clear(&sv[1]);
	int64_t t_start = now_ns();
	ret = run_consumer(sv[0], &opt, device, &st);
	/* Closing our end unblocks a producer still waiting for a release. */
	fd_clear(&sv[0]);

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "%s: waitpid: %s\n", prog, strerror(errno));
			status = -1;
			break;
		}
	}
	int64_t t_end = now_ns();
	producer_ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (!producer_ok) {
		if (status != -1 && WIFSIGNALED(status))
			fprintf(stderr, "%s: the producer was killed by signal %d (%s)\n", prog,
				WTERMSIG(status), strsignal(WTERMSIG(status)));
		else
			fprintf(stderr, "%s: the producer failed\n", prog);
	}

	int fds_after = count_open_fds();
	bool fds_ok = fds_before < 0 || fds_after == fds_before;
	if (!fds_ok)
		fprintf(stderr, "%s: consumer: %d fds open at the end, %d at the start\n", prog,
			fds_after, fds_before);

	unsigned done = st.ok + st.bad;
	if (st.n_waits > 0) {
		printf("waits: min %.1f ms, mean %.1f ms, max %.1f ms", st.wait_ms_min,
		       st.wait_ms_sum / st.n_waits, st.wait_ms_max);
		if (st.n_wake > 0) {
			qsort(st.wake_ms, st.n_wake, sizeof(st.wake_ms[0]), cmp_double);
			printf("; wake-up after the signal: median %.2f ms, max %.2f ms",
			       st.wake_ms[st.n_wake / 2], st.wake_ms[st.n_wake - 1]);
		}
		printf("\n");
	}
	if (opt.wait == WAIT_NONE)
		printf("read without waiting: %u of %u frames stale or torn\n", st.bad, done);
	printf("total %.0f ms\n", (t_end - t_start) * MS_PER_NS);
	printf("frames=%u ok=%u stale=%u\n", done, st.ok, st.bad);

	if (ret < 0 || st.errors || !producer_ok || !fds_ok || done != opt.frames)
		return EXIT_FAILURE;
	if (opt.wait == WAIT_NONE) {
		if (opt.expect_torn && st.bad == 0) {
			fprintf(stderr, "%s: --expect-torn: every frame was complete although the "
				"consumer did not wait; the control did not show the race\n", prog);
			return EXIT_FAILURE;
		}
		return EXIT_SUCCESS;
	}
	return st.bad == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
