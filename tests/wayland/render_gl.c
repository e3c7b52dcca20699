/* SPDX-License-Identifier: MIT */
/*
 * wl-render-gl: the example compositor's GL renderer (compositor/wlc_render_gl.c),
 * driven directly through wlc_internal.h — no Wayland connection: fake
 * surfaces on a hand-built stack, states holding shm pixels or a dma-buf.
 *
 *  shm (every tier): three surfaces — ARGB8888 with four coloured quadrants
 *    and padded rows, XRGB8888 with zero padding bytes over it (must come out
 *    opaque), a half-transparent premultiplied ARGB8888 one — then a second
 *    take of the first (same size: the upload path that reuses the texture).
 *    The whole 128x128 output is compared with a CPU model (background, then
 *    source-over of each, bottom first), +-2 per channel.
 *  dma-buf (vgem present, i.e. the VM tier as root; --require-dmabuf: else
 *    fail): a 64x64 vgem dumb buffer (XRGB8888) holds OLD.
 *    - explicit: take() with a pending vgem sync_file as the acquire fence;
 *      another thread writes NEW into the buffer, then signals. The copy must
 *      show NEW (the renderer made GL wait: sb_egl_sync_file_wait).
 *    - implicit: the same with a vgem write fence on the buffer itself and no
 *      acquire fence (sb_egl_dmabuf_wait on the buffer).
 *    The import is made once (the buffer's render_data stays the same).
 *  --control: SYNCBRIDGE_DISABLE=1 — the bridge does not wait, and the
 *    program asserts the race: take() returned while the fence was pending,
 *    and the output shows OLD.
 *
 * Timing, as in egl-dmabuf-wait: with the bridge the writer acts 500 ms after
 * it starts — not a synchronisation, only the window in which a renderer that
 * does not wait would copy OLD. In the control the writer acts only once the
 * output was read back and checked (a gate), so nothing depends on speed.
 *
 * Exit 77 when no GL renderer can be created here.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/sysmacros.h>
#include <string.h>
#include <unistd.h>

#include <EGL/egl.h>
#include <GLES2/gl2.h>

#include "eglt.h"
#include "gate.h"
#include "harness.h"
#include "kernel.h"
#include "kernel_raw.h"
#include "wl_gpu.h"
#include "wlc_internal.h"
#include "wlc_render_gl.h"

#define OUT_W 128
#define OUT_H 128
#define MS INT64_C(1000000)
#define DELAY_NS (500 * MS)
#define OLD 0xff2040c0u /* 0xAARRGGBB */
#define NEW 0xffe0a010u

/* The CPU model of the output: 0xAARRGGBB premultiplied. */
static uint32_t model[OUT_W * OUT_H];

static uint32_t
over(uint32_t src, uint32_t dst)
{
	uint32_t a = src >> 24, out = 0;

	for (int shift = 0; shift < 32; shift += 8) {
		uint32_t s = (src >> shift) & 0xff, d = (dst >> shift) & 0xff;
		out |= ((s + (d * (255 - a) + 127) / 255) & 0xff) << shift;
	}
	return out;
}

static void
model_fill(uint32_t bg)
{
	for (size_t i = 0; i < OUT_W * OUT_H; i++)
		model[i] = bg;
}

/* pixels: 0xAARRGGBB words in rows of `stride` bytes; opaque: X format. */
static void
model_draw(const struct wlc_surface *surf, const uint8_t *pixels, uint32_t stride, bool opaque)
{
	for (uint32_t y = 0; y < surf->height; y++)
		for (uint32_t x = 0; x < surf->width; x++) {
			int64_t ox = surf->x + (int64_t)x, oy = surf->y + (int64_t)y;
			uint32_t p = ((const uint32_t *)(pixels + (size_t)y * stride))[x];

			if (ox < 0 || oy < 0 || ox >= OUT_W || oy >= OUT_H)
				continue;
			model[oy * OUT_W + ox] = over(opaque ? p | 0xff000000u : p, model[oy * OUT_W + ox]);
		}
}

static void
model_rect(const struct wlc_surface *surf, uint32_t colour)
{
	for (uint32_t y = 0; y < surf->height; y++)
		for (uint32_t x = 0; x < surf->width; x++) {
			int64_t ox = surf->x + (int64_t)x, oy = surf->y + (int64_t)y;

			if (ox >= 0 && oy >= 0 && ox < OUT_W && oy < OUT_H)
				model[oy * OUT_W + ox] = over(colour, model[oy * OUT_W + ox]);
		}
}

/*
 * Which platform the renderer's (current) display is on: EGL hands out one
 * EGLDisplay per (platform, native display), so the device platform's display
 * of its own device is it exactly when it is a device-platform display.
 */
static const char *
platform_name(void)
{
	struct eglt_procs egl;
	EGLDisplay dpy = eglGetCurrentDisplay();
	EGLAttrib dev = 0;

	eglt_procs_load(&egl);
	if (!egl.query_display_attrib || !egl.query_device_string || !egl.get_platform_display ||
	    !egl.query_display_attrib(dpy, EGL_DEVICE_EXT, &dev) || !dev)
		return "unknown";
	if (egl.get_platform_display(EGL_PLATFORM_DEVICE_EXT, (void *)dev, NULL) != dpy)
		return "surfaceless (not the device platform)";
	return eglt_has_ext(egl.query_device_string((EGLDeviceEXT)dev, EGL_EXTENSIONS),
			    "EGL_MESA_device_software")
		       ? "device platform, software device" : "device platform";
}

/* Read the output back and count the pixels that differ from the model by more than 2. */
static long
compare(struct wlc_renderer *r, const char *what)
{
	uint8_t *rgba = NULL;
	long bad = 0;
	int ret = r->impl->read_pixels(r, &rgba);

	CHECK_EQ(ret, 0, "read_pixels");
	if (ret < 0)
		return -1;
	for (int i = 0; i < OUT_W * OUT_H; i++) {
		uint32_t m = model[i];
		const uint8_t want[4] = { m >> 16, m >> 8, m, m >> 24 };

		for (int c = 0; c < 4; c++)
			if (abs((int)rgba[i * 4 + c] - (int)want[c]) > 2) {
				if (bad++ == 0)
					printf("# %s: first difference at (%d, %d): got %02x%02x%02x%02x, "
					       "want %02x%02x%02x%02x (RGBA)\n", what, i % OUT_W, i / OUT_W,
					       rgba[i * 4], rgba[i * 4 + 1], rgba[i * 4 + 2], rgba[i * 4 + 3],
					       want[0], want[1], want[2], want[3]);
				break;
			}
	}
	free(rgba);
	CHECK(bad == 0, "%s: %ld of %d pixels differ from the model", what, bad, OUT_W * OUT_H);
	return bad;
}

static void
surface_init(struct wlc_surface *surf, struct wl_list *stack, int32_t x, int32_t y, uint32_t w, uint32_t h)
{
	memset(surf, 0, sizeof(*surf));
	surf->x = x;
	surf->y = y;
	surf->width = w;
	surf->height = h;
	surf->mapped = true;
	wl_list_insert(stack->prev, &surf->link); /* on top */
}

/* An shm state of w x h pixels (0xAARRGGBB words), `pad` bytes after each row. */
static uint8_t *
shm_state(struct wlc_state *s, uint32_t format, uint32_t w, uint32_t h, uint32_t pad,
	  uint32_t (*colour)(uint32_t x, uint32_t y))
{
	uint32_t stride = w * 4 + pad;
	uint8_t *p = calloc(h, stride);

	REQUIRE(p, "malloc");
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			((uint32_t *)(p + (size_t)y * stride))[x] = colour(x, y);
	memset(s, 0, sizeof(*s));
	s->shm = true;
	s->shm_pixels = p;
	s->shm_width = w;
	s->shm_height = h;
	s->shm_stride = stride;
	s->shm_format = format;
	return p;
}

static uint32_t quadrants(uint32_t x, uint32_t y) /* 64x48: tells left/right and top/bottom apart */
{
	static const uint32_t c[4] = { 0xffff0000u, 0xff00ff00u, 0xff0000ffu, 0xffffff00u };
	return c[(y >= 24) * 2 + (x >= 32)];
}
static uint32_t xrgb(uint32_t x, uint32_t y) { return (x + y) & 1 ? 0x0000c0c0u : 0x00c000c0u; }
static uint32_t translucent(uint32_t x, uint32_t y) { (void)x; (void)y; return 0x80800000u; }
static uint32_t quadrants2(uint32_t x, uint32_t y) { return quadrants(63 - x, 47 - y); }

static void
take_ok(struct wlc_renderer *r, struct wlc_surface *surf, struct wlc_state *s, const char *what)
{
	int release = -1, ret = r->impl->take(r, surf, s, -1, &release);

	CHECK_EQ(ret, 0, what);
	CHECK(release == -1, "%s: an shm upload has no release fence (got %d)", what, release);
}

/*
 * The shm test's three surfaces: a (ARGB8888, padded rows), b (XRGB8888:
 * drawn opaque) over it, c (translucent) partly off the output.
 */
enum { SHM_SURFACES = 3 };
static const bool shm_opaque[SHM_SURFACES] = { false, true, false };

/* A repaint of the stack, against the model drawn from the same pixels. */
static void
repaint_shm(struct wlc_renderer *r, struct wl_list *stack, const struct wlc_surface *surf,
	    const struct wlc_state *st, uint8_t *const *pixels, const char *what)
{
	CHECK_EQ(r->impl->repaint(r, stack), 0, "repaint");
	model_fill(r->background);
	for (int i = 0; i < SHM_SURFACES; i++)
		model_draw(&surf[i], pixels[i], st[i].shm_stride, shm_opaque[i]);
	compare(r, what);
}

static void
test_shm(struct wlc_renderer *r)
{
	struct wlc_surface surf[SHM_SURFACES];
	struct wlc_state st[SHM_SURFACES];
	uint8_t *px[SHM_SURFACES];
	struct wl_list stack;

	wl_list_init(&stack);
	surface_init(&surf[0], &stack, 10, 20, 64, 48);
	surface_init(&surf[1], &stack, 60, 50, 32, 32);
	surface_init(&surf[2], &stack, 100, 100, 40, 40); /* partly off the output */
	px[0] = shm_state(&st[0], 0 /* ARGB8888 */, 64, 48, 16, quadrants);
	px[1] = shm_state(&st[1], 1 /* XRGB8888 */, 32, 32, 0, xrgb);
	px[2] = shm_state(&st[2], 0, 40, 40, 0, translucent);
	take_ok(r, &surf[0], &st[0], "take shm ARGB8888 (padded rows)");
	take_ok(r, &surf[1], &st[1], "take shm XRGB8888");
	take_ok(r, &surf[2], &st[2], "take shm ARGB8888 translucent");
	repaint_shm(r, &stack, surf, st, px, "shm");

	/* New content, same size: the texture is updated in place. */
	free(px[0]);
	px[0] = shm_state(&st[0], 0, 64, 48, 0, quadrants2);
	take_ok(r, &surf[0], &st[0], "take shm again");
	repaint_shm(r, &stack, surf, st, px, "shm, new content");

	/*
	 * Padded rows take one of two paths: GL_EXT_unpack_subimage's row
	 * length (the first take above, where GL has it) or packing the rows
	 * first (forced here).
	 */
	struct gl_renderer *gr = (struct gl_renderer *)r;
	bool row_length = gr->row_length;

	tb_note("GL_EXT_unpack_subimage: %s", row_length ? "yes" : "no");
	free(px[0]);
	px[0] = shm_state(&st[0], 0, 64, 48, 12, quadrants);
	gr->row_length = false;
	take_ok(r, &surf[0], &st[0], "take shm padded rows, packed first");
	gr->row_length = row_length;
	repaint_shm(r, &stack, surf, st, px, "shm, padded rows packed first");

	for (int i = 0; i < SHM_SURFACES; i++) {
		r->impl->surface_destroy(r, &surf[i]);
		free(px[i]);
	}
}

/* ---- dma-buf ------------------------------------------------------------------ */

struct writer {
	pthread_t thread;
	struct wlgpu_dumb *buf;
	bool control;           /* act once `go` opens, not after DELAY_NS */
	struct tb_gate go;
	struct sbk_fence *fence; /* explicit: a fence of its own */
	int vgem;                 /* implicit: a fence on the buffer */
	uint32_t fence_id;
	atomic_bool signalling;
	int signal_ret;
};

static void
fill(struct wlgpu_dumb *buf, uint32_t colour)
{
	for (uint32_t y = 0; y < buf->height; y++)
		for (uint32_t x = 0; x < buf->width; x++)
			buf->map[(size_t)y * buf->stride / 4 + x] = colour;
}

static void *
writer_main(void *p)
{
	struct writer *w = p;

	if (w->control)
		tb_gate_wait(&w->go); /* only after the output was read and checked */
	else
		sbk_sleep_ns(DELAY_NS); /* not a synchronisation: the window for a renderer that does not wait */
	fill(w->buf, NEW);
	atomic_store(&w->signalling, true);
	w->signal_ret = w->fence ? wlgpu_fence_signal(w->fence, NULL) : sbk_vgem_fence_signal(w->vgem, w->fence_id);
	return NULL;
}

static bool
fd_pending(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 0;
}

/* One take() of the dma-buf behind a pending fence (explicit: its own sync_file). */
static void
test_dmabuf_once(struct wlc_renderer *r, int vgem, struct wlgpu_dumb *buf, struct wlc_state *s,
		 struct wlc_surface *surf, struct wl_list *stack, bool explicit, bool control)
{
	const char *what = explicit ? "explicit (acquire sync_file)" : "implicit (fence on the buffer)";
	struct writer w = { .buf = buf, .control = control, .vgem = vgem };
	struct sbk_fence fence;
	int release = -1, ret;
	int watch; /* explicit: the fence's own sync_file (borrowed); implicit: an export, ours */

	tb_gate_init(&w.go);
	atomic_init(&w.signalling, false);
	fill(buf, OLD);
	if (explicit) {
		REQUIRE(sbk_fence_create(vgem, true, &fence) == 0, "vgem fence");
		w.fence = &fence;
		watch = fence.sync_file;
	} else {
		REQUIRE(sbk_vgem_fence_attach(vgem, buf->handle, true, &w.fence_id) == 0, "vgem write fence");
		REQUIRE(tb_dmabuf_export_raw(buf->fd, 1 /* DMA_BUF_SYNC_READ */, &watch) == 0, "export");
	}
	REQUIRE(pthread_create(&w.thread, NULL, writer_main, &w) == 0, "thread");

	int64_t t0 = now_ns();
	ret = r->impl->take(r, surf, s, explicit ? fence.sync_file : -1, &release);
	printf("# %s: take() returned after %lld ms (the writer signals %s), release fence %s\n",
	       what, (long long)((now_ns() - t0) / MS), control ? "only once told" : "at +500 ms", release >= 0 ? "a sync_file" : "-1 (done)");
	CHECK_EQ(ret, 0, what);
	if (control)
		CHECK(fd_pending(watch), "control, %s: take() returned while the fence was pending", what);
	CHECK_EQ(r->impl->repaint(r, stack), 0, "repaint");
	model_fill(r->background);
	model_rect(surf, control ? OLD : NEW);
	printf("# %s%s: the copy must show %s\n", control ? "control, " : "", what, control ? "OLD" : "NEW");
	compare(r, what);
	if (release >= 0) {
		struct pollfd pfd = { .fd = release, .events = POLLIN };

		CHECK(poll(&pfd, 1, 5000) == 1, "%s: the release fence signals", what);
		close(release);
	}
	tb_gate_open(&w.go);
	pthread_join(w.thread, NULL);
	CHECK_EQ(w.signal_ret, 0, "signal the vgem fence");
	tb_gate_finish(&w.go);
	if (explicit)
		sbk_fence_destroy(&fence); /* closes watch */
	else
		close(watch);
}

static void
test_dmabuf(struct wlc_renderer *r, bool require, bool control)
{
	struct wlc_surface surf;
	struct wlc_state s;
	struct dmabuf_buffer b;
	struct wlgpu_dumb buf;
	struct wl_list stack;
	int vgem = wlgpu_drm_open("vgem", false), release = -1;
	void *import;

	if (vgem < 0) {
		if (require)
			CHECK(false, "no vgem node: %s", strerror(-vgem));
		else
			printf("# no vgem node (%s): dma-buf part skipped (the VM tier runs it)\n", strerror(-vgem));
		wlc_renderer_destroy(r);
		return;
	}
	REQUIRE(wlgpu_dumb_create(vgem, 64, 64, &buf) == 0, "vgem dumb buffer");
	memset(&b, 0, sizeof(b));
	b.refs = 1;
	b.fd = buf.fd;
	b.width = buf.width;
	b.height = buf.height;
	b.format = DRM_FORMAT_XRGB8888;
	b.stride = buf.stride;
	b.modifier = DRM_FORMAT_MOD_LINEAR;
	b.size = buf.size;
	memset(&s, 0, sizeof(s));
	s.dmabuf = &b;
	wl_list_init(&stack);
	surface_init(&surf, &stack, 40, 30, 64, 64);

	/* First the import and the shaders, with no fence: outside any fence's life. */
	fill(&buf, OLD);
	CHECK_EQ(r->impl->take(r, &surf, &s, -1, &release), 0, "take the dma-buf (no fence)");
	if (release >= 0)
		close(release);
	CHECK_EQ(r->impl->repaint(r, &stack), 0, "repaint");
	model_fill(r->background);
	model_rect(&surf, OLD);
	if (compare(r, "dma-buf, no fence") != 0) {
		printf("# the dma-buf does not read back here: the rest would say nothing\n");
		goto out;
	}
	import = b.render_data;
	CHECK(import != NULL, "the import is cached in the buffer's render_data");

	test_dmabuf_once(r, vgem, &buf, &s, &surf, &stack, true, control);
	test_dmabuf_once(r, vgem, &buf, &s, &surf, &stack, false, control);
	CHECK(b.render_data == import, "the buffer was imported once");

out:
	r->impl->surface_destroy(r, &surf);
	/* The buffer outlives the renderer (a commit held at teardown): freed after it. */
	wlc_renderer_destroy(r);
	if (b.render_data_free)
		b.render_data_free(b.render_data);
	wlgpu_dumb_destroy(&buf);
	close(vgem);
}

int
main(int argc, char **argv)
{
	bool control = tb_has_arg(argc, argv, "--control");
	bool require = tb_has_arg(argc, argv, "--require-dmabuf");
	struct wlc_renderer *r;
	int err = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (control)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);
	eglt_no_disk_cache();
	r = wlc_renderer_gl_create(OUT_W, OUT_H, &err);
	if (!r)
		tb_skip("no GL renderer here: %s", strerror(-err));
	printf("# GL renderer: %s, EGL %s; %zu (format, modifier) pairs; main device %u:%u%s\n",
	       (const char *)glGetString(GL_RENDERER), platform_name(), r->nformats,
	       major(r->main_device), minor(r->main_device), r->main_device ? "" : " (none)");
	for (size_t i = 0; i < r->nformats; i++)
		printf("#   %.4s 0x%016llx\n", (const char *)&r->formats[i].format,
		       (unsigned long long)r->formats[i].modifier);
	CHECK_EQ(r->background, 0xff202020u, "background");

	test_shm(r);
	test_dmabuf(r, require || control, control); /* destroys r */
	printf("# %d checks, %d failed\n", tb_checks, tb_failures);
	return tb_failures ? 1 : 0;
}
