/* SPDX-License-Identifier: MIT */
/*
 * doctor, EGL: the surfaceless display (the one a headless GL client gets)
 * in a probe child: its fence and dma-buf extensions, and implicit sync
 * out measured as for Vulkan: a slow draw into a texture exported as a
 * dma-buf, glFlush, then the dma-buf's READ sync_file is exported and
 * decoded while an EGL fence sync placed after the draw says whether the GL
 * work is done. Pending export: yes. Signalled or empty while GL still
 * works: no. Both done: retried with four times the work, three times.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/sync_file.h>

#include "doctor.h"
#include "eglt.h"
#include "info.h"
#include "kernel.h"

#define EGL_SIZE 256
#define EGL_ITERS 64
#define EGL_TRIES 3

/* One draw of `iters` and the export after it: 1 pending, 0 not while GL
 * worked, -EAGAIN both done, other -errno failed (it says why). */
static int
out_once(struct eglt *t, const struct eglt_procs *p, struct eglt_pass *pass, struct eglt_target *tg,
	 int dmabuf, int iters, struct doctor_item *it)
{
	char driver[32];
	int status = -1, ret;
	uint32_t num = 0;
	PFNEGLCLIENTWAITSYNCKHRPROC client_wait =
		(PFNEGLCLIENTWAITSYNCKHRPROC)eglGetProcAddress("eglClientWaitSyncKHR");
	EGLSyncKHR done;
	EGLint busy;

	eglt_busy_pass_draw(pass, iters, tg);
	done = p->create_sync(t->dpy, EGL_SYNC_FENCE_KHR, NULL);
	glFlush();
	ret = doctor_dmabuf_reader_fences(dmabuf, &status, &num, driver, sizeof(driver));
	busy = done != EGL_NO_SYNC_KHR && client_wait ? client_wait(t->dpy, done, 0, 0) : EGL_FALSE;
	glFinish();
	if (done != EGL_NO_SYNC_KHR)
		p->destroy_sync(t->dpy, done);
	if (ret < 0) {
		doctor_item_set(it, DOCTOR_UNKNOWN,
				"DMA_BUF_IOCTL_EXPORT_SYNC_FILE on the texture's "
				"dma-buf: %s",
				strerror(-ret));
		return ret;
	}
	if (status == 0) {
		doctor_item_set(it, DOCTOR_YES,
				"right after glFlush the texture's dma-buf carried a "
				"pending fence (%s)",
				driver[0] ? driver : "?");
		return 1;
	}
	if (busy == EGL_TIMEOUT_EXPIRED_KHR) {
		doctor_item_set(it, DOCTOR_NO,
				"right after glFlush the dma-buf's fences were %s "
				"(%u) while the draw was still running",
				num ? "signalled" : "none", num);
		return 0;
	}
	return done == EGL_NO_SYNC_KHR ? (doctor_item_set(it, DOCTOR_UNKNOWN,
							  "no EGL fence sync "
							  "to tell when the draw is done"),
					  -ENODEV)
				       : -EAGAIN;
}

static void
measure_out(struct eglt *t, struct doctor_egl *g)
{
	struct eglt_procs p;
	struct eglt_target tg;
	struct eglt_dmabuf_layout layout;
	struct eglt_pass pass;
	int fd = -1, ret = -EAGAIN, iters = EGL_ITERS;

	eglt_procs_load(&p);
	if (!p.create_sync || !p.destroy_sync) {
		doctor_item_set(&g->out, DOCTOR_UNKNOWN, "no EGL_KHR_fence_sync");
		return;
	}
	if (eglt_target_create(t, EGL_SIZE, EGL_SIZE, &tg) < 0) {
		doctor_item_set(&g->out, DOCTOR_UNKNOWN, "no render target (%s)", eglt_gl_error());
		return;
	}
	if (eglt_target_export(t, &tg, &fd, &layout) < 0 || eglt_busy_pass_init(&pass) < 0) {
		doctor_item_set(&g->out, DOCTOR_UNKNOWN, "%s",
				fd < 0 ? "the texture cannot be exported as a dma-buf"
				       : "no busy shader");
		eglt_target_destroy(t, &tg);
		if (fd >= 0)
			close(fd);
		return;
	}
	for (int i = 0; i < EGL_TRIES && ret == -EAGAIN; i++, iters *= 4)
		ret = out_once(t, &p, &pass, &tg, fd, iters, &g->out);
	if (ret == -EAGAIN)
		doctor_item_set(&g->out, DOCTOR_UNKNOWN,
				"even %d iterations per pixel were done "
				"before the export could look",
				iters / 4);
	eglt_pass_finish(&pass);
	eglt_target_destroy(t, &tg);
	close(fd);
}

static void
ext_item(const char *exts, const char *name, struct doctor_item *it)
{
	bool has = eglt_has_ext(exts, name);

	doctor_item_set(it, has ? DOCTOR_YES : DOCTOR_NO, "%s%s", has ? "" : "no ", name);
}

static void
egl_child(void *out, const void *arg)
{
	struct doctor_egl *g = out;
	static char log[512];
	FILE *f = fmemopen(log, sizeof(log) - 1, "w");
	const char *exts;
	struct eglt t;

	(void)arg;
	if (f) {
		setvbuf(f, NULL, _IONBF, 0);
		eglt_set_log(f, "");
	}
	if (eglt_open_gles(&t, EGLT_SURFACELESS, 3) < 0) {
		doctor_item_set(&g->available, DOCTOR_NO,
				"no surfaceless EGL display with GLES 3: %s", log[0] ? log : "?");
		return;
	}
	doctor_item_set(&g->available, DOCTOR_YES, "EGL %d.%d", t.major, t.minor);
	snprintf(g->display, sizeof(g->display), "%s", t.platform);
	snprintf(g->vendor, sizeof(g->vendor), "%s", eglQueryString(t.dpy, EGL_VENDOR));
	snprintf(g->renderer, sizeof(g->renderer), "%s", (const char *)glGetString(GL_RENDERER));
	exts = eglQueryString(t.dpy, EGL_EXTENSIONS);
	ext_item(exts, "EGL_ANDROID_native_fence_sync", &g->native_fence);
	ext_item(exts, "EGL_KHR_wait_sync", &g->wait_sync);
	ext_item(exts, "EGL_EXT_image_dma_buf_import", &g->dmabuf_import);
	ext_item(exts, "EGL_MESA_image_dma_buf_export", &g->dmabuf_export);
	measure_out(&t, g);
	eglt_close(&t);
}

void
doctor_egl_probe(struct doctor_egl *g, int timeout_ms)
{
	char why[256];

	memset(g, 0, sizeof(*g));
	doctor_item_set(&g->out, DOCTOR_UNKNOWN, "the probe did not say");
	if (doctor_run("egl", egl_child, NULL, g, sizeof(*g), timeout_ms, why, sizeof(why)) < 0) {
		doctor_item_set(&g->available, DOCTOR_UNKNOWN, "%s", why);
		doctor_item_set(&g->out, DOCTOR_UNKNOWN, "%s", why);
	}
	if (g->available.v != DOCTOR_YES) {
		struct doctor_item *items[] = {&g->native_fence, &g->wait_sync, &g->dmabuf_import,
					       &g->dmabuf_export, &g->out};

		for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++)
			doctor_item_set(items[i], DOCTOR_UNKNOWN, "no EGL display: %s",
					g->available.why);
	}
}

struct json_object *
doctor_egl_json(const struct doctor_egl *g)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "available", doctor_item_json(&g->available));
	json_object_object_add(o, "display", g->display[0] ? info_json_str(g->display) : NULL);
	json_object_object_add(o, "vendor", g->vendor[0] ? info_json_str(g->vendor) : NULL);
	json_object_object_add(o, "renderer", g->renderer[0] ? info_json_str(g->renderer) : NULL);
	json_object_object_add(o, "native_fence_sync", doctor_item_json(&g->native_fence));
	json_object_object_add(o, "wait_sync", doctor_item_json(&g->wait_sync));
	json_object_object_add(o, "dmabuf_import", doctor_item_json(&g->dmabuf_import));
	json_object_object_add(o, "dmabuf_export", doctor_item_json(&g->dmabuf_export));
	json_object_object_add(o, "implicit_out", doctor_item_json(&g->out));
	return o;
}

void
doctor_egl_print(FILE *f, const struct doctor_egl *g)
{
	fprintf(f, "EGL: %s (%s)%s%s%s%s\n", doctor_tri_word(g->available.v), g->available.why,
		g->display[0] ? ", " : "", g->display, g->renderer[0] ? ", " : "", g->renderer);
	doctor_item_print(f, "  ", "native fence sync", &g->native_fence);
	doctor_item_print(f, "  ", "wait sync", &g->wait_sync);
	doctor_item_print(f, "  ", "dma-buf import", &g->dmabuf_import);
	doctor_item_print(f, "  ", "dma-buf export", &g->dmabuf_export);
	doctor_item_print(f, "  ", "implicit sync out", &g->out);
}
