/* SPDX-License-Identifier: MIT */
/*
 * doctor's verdicts: per path, from what the probes measured, whether
 * frames are ordered today, by what, what would tear and what to turn on.
 * The rules are written down in docs/inspect.md ("doctor: the verdicts");
 * this file is them, one function per path.
 */
#include <stdarg.h>
#include <string.h>

#include "doctor.h"
#include "info.h"

#ifdef HAVE_DOCTOR_WL
#include "doctor_wl.h"
#endif
#ifdef HAVE_DOCTOR_PW
#include "doctor_pw.h"
#endif

static void put(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void
put(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}

#define PUT(v, field, ...) put((v)->field, sizeof((v)->field), __VA_ARGS__)

/* What to do about the layer on device d, when its own driver leaves no fence. */
static void
layer_advice(const struct doctor_report *r, const struct doctor_vk_dev *d, struct doctor_verdict *v)
{
	if (r->layer.installed.v != DOCTOR_YES)
		PUT(v, advice,
		    "install syncbridge's Vulkan layer (docs/layer.md); apps must release "
		    "shared buffers to VK_QUEUE_FAMILY_FOREIGN_EXT");
	else if (r->layer.enabled.v != DOCTOR_YES)
		PUT(v, advice, "enable the syncbridge layer: it is %s", r->layer.enabled.why);
	else if (strcmp(d->layer.state, "pass-through") == 0)
		PUT(v, advice,
		    "the syncbridge layer is pass-through on this device (%s): nothing it "
		    "can do here; use explicit sync (SYNC_FD semaphores) in the app",
		    d->layer.why);
	else
		PUT(v, advice, "check the syncbridge layer on this device: %s", d->layer.why);
}

/*
 * A compositor without linux-drm-syncobj-v1: clients whose WSI syncs
 * explicitly through it (NVIDIA's driver since 555, Xwayland 24.1 on NVIDIA)
 * fall back to nothing there — the field's most reported flicker
 * (shared/field.md) — and syncbridge-wl-proxy offers the protocol in front of
 * it (docs/wl-proxy.md). Appended to the advice of an unordered path.
 */
static void
proxy_advice(const struct doctor_report *r, struct doctor_verdict *v)
{
#ifdef HAVE_DOCTOR_WL
	size_t used = strlen(v->advice);

	if (!r->wl || !r->wl->connected || r->wl->syncobj_v1)
		return;
	snprintf(v->advice + used, sizeof(v->advice) - used,
		 "%sthe compositor%s%s lacks linux-drm-syncobj-v1: an app that syncs "
		 "explicitly through it can run behind syncbridge-wl-proxy "
		 "(syncbridge-wl-proxy -- APP)",
		 used ? "; " : "", r->wl->compositor[0] ? " " : "", r->wl->compositor);
#else
	(void)r, (void)v;
#endif
}

/* Whether the compositor can order frames without implicit fences; a phrase or NULL. */
static const char *
compositor_explicit(const struct doctor_report *r, char *buf, size_t len)
{
#ifdef HAVE_DOCTOR_WL
	if (r->wl && r->wl->connected && (r->wl->syncobj_v1 || r->wl->explicit_v1)) {
		snprintf(buf, len,
			 "the compositor%s%s offers %s: clients that use it are ordered "
			 "without implicit fences",
			 r->wl->compositor[0] ? " " : "", r->wl->compositor,
			 r->wl->syncobj_v1 ? "linux-drm-syncobj-v1"
					   : "zwp_linux_explicit_synchronization_v1");
		return buf;
	}
#endif
	(void)r, (void)buf, (void)len;
	return NULL;
}

static void
vulkan_to_compositor(const struct doctor_report *r, const struct doctor_vk_dev *d,
		     struct doctor_verdict *v)
{
	char expl[256];
	const char *e = compositor_explicit(r, expl, sizeof(expl));

	PUT(v, path, "vulkan-to-compositor");
	PUT(v, subject, "%s", d->name);
	if (d->out.v == DOCTOR_YES) {
		v->ordered = DOCTOR_YES;
		PUT(v, by,
		    "the driver's own fence on the dma-buf (implicit sync), which compositors "
		    "wait for");
		PUT(v, risk, "none seen");
		PUT(v, advice, "nothing to turn on");
	} else if (d->out.v == DOCTOR_NO && d->layer.foreign_out.v == DOCTOR_YES) {
		v->ordered = DOCTOR_YES;
		PUT(v, by,
		    "the syncbridge layer at the app's release to VK_QUEUE_FAMILY_FOREIGN_EXT "
		    "(the driver alone leaves no fence): %s",
		    d->layer.foreign_out.why);
		PUT(v, risk, "an app that skips that release barrier gets no fence");
		PUT(v, advice, "keep the layer enabled");
	} else if (d->out.v == DOCTOR_NO) {
		v->ordered = DOCTOR_NO;
		PUT(v, by,
		    "nothing on the buffer: the driver puts no fence on dma-bufs it writes%s%s",
		    e ? "; " : "", e ? e : "");
		PUT(v, risk,
		    "a compositor that relies on implicit sync can show a frame before the "
		    "GPU finished it: tearing, flicker, stale frames%s",
		    strcmp(d->type, "cpu") == 0 ? " (a CPU device's own swapchain finishes the "
						  "work before presenting; buffers "
						  "shared by hand are at risk)"
						: "");
		layer_advice(r, d, v);
		proxy_advice(r, v);
	} else {
		v->ordered = DOCTOR_UNKNOWN;
		PUT(v, by, "not measured: %s", d->out.why);
		PUT(v, risk, "unknown");
		PUT(v, advice, "run doctor where the probe can run (see why)");
	}
}

/* The reader's side when the writer's fence is there but the driver alone
 * does not wait for it: the layer's wait at a FOREIGN acquire, as measured. */
static void
reader_waits_by_layer(const struct doctor_report *r, const struct doctor_vk_dev *d,
		      struct doctor_verdict *v)
{
	const struct doctor_item *in = &d->layer.foreign_in;

	v->ordered = in->v;
	if (in->v == DOCTOR_YES) {
		PUT(v, by,
		    "the writer's fence, and the syncbridge layer's wait for it at the "
		    "reader's acquire from VK_QUEUE_FAMILY_FOREIGN_EXT (measured: %s)",
		    in->why);
		PUT(v, risk, "a reader that skips the acquire barrier reads early");
		PUT(v, advice, "keep the layer enabled");
		return;
	}
	if (strcmp(d->layer.state, "active") == 0 && in->v == DOCTOR_UNKNOWN) {
		PUT(v, by, "the writer's fence; the layer's wait at an acquire not measured: %s",
		    in->why);
		PUT(v, risk, "unknown");
		PUT(v, advice, "run doctor as root with vgem loaded to measure it");
		return;
	}
	v->ordered = DOCTOR_NO;
	PUT(v, by,
	    "the writer's fence only: a reader on this device does not wait for fences "
	    "already on a dma-buf%s",
	    in->v == DOCTOR_NO ? ", not even after an acquire "
				 "from FOREIGN with the layer"
			       : "");
	PUT(v, risk, "the reader can see a half-written buffer");
	layer_advice(r, d, v);
}

static void
app_to_app(const struct doctor_report *r, const struct doctor_vk_dev *d, struct doctor_verdict *v)
{
	bool fenced = d->out.v == DOCTOR_YES || d->layer.foreign_out.v == DOCTOR_YES;

	PUT(v, path, "app-to-app-dmabuf");
	PUT(v, subject, "%s", d->name);
	if (fenced && d->in.v == DOCTOR_YES) {
		v->ordered = DOCTOR_YES;
		PUT(v, by,
		    "kernel implicit sync both ways: the writer's fence is on the buffer and "
		    "a reader on this device waits for it");
		PUT(v, risk, "none seen");
		PUT(v, advice, "nothing to turn on");
	} else if (fenced && d->in.v == DOCTOR_NO) {
		reader_waits_by_layer(r, d, v);
	} else if (!fenced && d->out.v == DOCTOR_NO) {
		v->ordered = DOCTOR_NO;
		PUT(v, by, "nothing: a buffer this device wrote carries no fence");
		PUT(v, risk, "a reader in another process sees the buffer before it is written");
		layer_advice(r, d, v);
	} else {
		v->ordered = DOCTOR_UNKNOWN;
		PUT(v, by, "not measured: out: %s; in: %s", doctor_tri_word(d->out.v),
		    d->in.v == DOCTOR_UNKNOWN ? d->in.why : doctor_tri_word(d->in.v));
		PUT(v, risk, "unknown");
		PUT(v, advice, "run doctor where the probes can run (vgem loaded, as root)");
	}
}

static void
egl_to_compositor(const struct doctor_report *r, struct doctor_verdict *v)
{
	const struct doctor_egl *g = &r->egl;
	char expl[256];
	const char *e = compositor_explicit(r, expl, sizeof(expl));

	PUT(v, path, "egl-to-compositor");
	PUT(v, subject, "%s", g->renderer);
	v->ordered = g->out.v;
	if (g->out.v == DOCTOR_YES) {
		PUT(v, by, "the GL driver's own fence on the dma-buf (implicit sync)");
		PUT(v, risk, "none seen");
		PUT(v, advice, "nothing to turn on");
	} else if (g->out.v == DOCTOR_NO) {
		PUT(v, by,
		    "nothing on the buffer: the GL driver puts no fence on dma-bufs it renders%s%s",
		    e ? "; " : "", e ? e : "");
		PUT(v, risk, "a compositor that relies on implicit sync can show a frame early");
		PUT(v, advice, "%s",
		    g->native_fence.v == DOCTOR_YES
			    ? "pass explicit fences (EGL_ANDROID_native_fence_sync): syncbridge's "
			      "EGL bridge "
			      "(docs/egl.md) puts them on the dma-buf"
			    : "this EGL has no native fence sync: finish (glFinish) before sharing "
			      "a buffer");
		proxy_advice(r, v);
	} else {
		PUT(v, by, "not measured: %s", g->out.why);
		PUT(v, risk, "unknown");
		PUT(v, advice, "run doctor where the EGL probe can run");
	}
}

static void
pipewire(const struct doctor_report *r, struct doctor_verdict *v)
{
	PUT(v, path, "pipewire-camera-screencast");
	v->ordered = DOCTOR_UNKNOWN;
	PUT(v, risk, "unknown");
#ifdef HAVE_DOCTOR_PW
	const struct doctor_pw *pw = r->pw;

	if (pw && pw->running && pw->sync_timeline == 1) {
		v->ordered = DOCTOR_YES;
		PUT(v, subject, "PipeWire %s", pw->daemon_version);
		PUT(v, by,
		    "explicit sync: SPA_META_SyncTimeline can be negotiated (both ends must)");
		PUT(v, risk,
		    "a producer or consumer without SyncTimeline falls back to implicit fences");
		PUT(v, advice, "use clients that negotiate SyncTimeline (docs/pipewire.md)");
		return;
	}
	if (pw && pw->running) {
		PUT(v, subject, "PipeWire %s", pw->daemon_version);
		PUT(v, by, "no SyncTimeline (%s): only the producer's implicit fences",
		    pw->sync_timeline == 0 ? "not negotiable" : "unknown");
		PUT(v, advice, "see the Vulkan and EGL verdicts: a producer without fences tears");
		return;
	}
	PUT(v, by, "no PipeWire daemon answered: %s", pw ? pw->why : "not probed");
	PUT(v, advice, "nothing to check without PipeWire");
#else
	(void)r;
	PUT(v, by, "PipeWire is not probed by this build");
	PUT(v, advice, "see the Vulkan and EGL verdicts");
#endif
}

int
doctor_verdicts(const struct doctor_report *r, struct doctor_verdict *v, int max)
{
	int n = 0;

	memset(v, 0, sizeof(*v) * (size_t)max);
	for (int i = 0; i < r->vk.n && n + 2 <= max; i++) {
		vulkan_to_compositor(r, &r->vk.dev[i], &v[n++]);
		app_to_app(r, &r->vk.dev[i], &v[n++]);
	}
	if (r->egl_built && n < max)
		egl_to_compositor(r, &v[n++]);
	if (n < max)
		pipewire(r, &v[n++]);
	return n;
}

struct json_object *
doctor_verdicts_json(const struct doctor_verdict *v, int n)
{
	struct json_object *a = json_object_new_array();

	for (int i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "path", info_json_str(v[i].path));
		json_object_object_add(o, "subject",
				       v[i].subject[0] ? info_json_str(v[i].subject) : NULL);
		json_object_object_add(o, "ordered",
				       json_object_new_string(doctor_tri_word(v[i].ordered)));
		json_object_object_add(o, "by", info_json_str(v[i].by));
		json_object_object_add(o, "risk", info_json_str(v[i].risk));
		json_object_object_add(o, "advice", info_json_str(v[i].advice));
		json_object_array_add(a, o);
	}
	return a;
}

void
doctor_verdicts_print(FILE *f, const struct doctor_verdict *v, int n)
{
	fprintf(f, "Verdicts:\n");
	if (n == 0)
		fprintf(f, "  (no path to judge)\n");
	for (int i = 0; i < n; i++) {
		fprintf(f, "  %s%s%s%s: ordered %s\n", v[i].path, v[i].subject[0] ? " (" : "",
			v[i].subject, v[i].subject[0] ? ")" : "", doctor_tri_word(v[i].ordered));
		fprintf(f, "    by:     %s\n    risk:   %s\n    advice: %s\n", v[i].by, v[i].risk,
			v[i].advice);
	}
}
