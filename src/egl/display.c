/* SPDX-License-Identifier: MIT */
/*
 * The EGL bridge's displays: the process-wide switches and sync entry points
 * (resolved once), and what each display supports, probed on first use and
 * remembered. The bottom of the bridge's own calls: egl.c and blocking.c ask
 * here (egl_display_get()); the probe asks foreign.c for the device's rule.
 */
#include <syncbridge/egl.h>

#include <EGL/eglext.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egl_internal.h"
#include "log.h"
#include "util.h"

/* EGL_EXT_device_drm_render_node (eglext.h before 2021 lacks it). */
#ifndef EGL_DRM_RENDER_NODE_FILE_EXT
#define EGL_DRM_RENDER_NODE_FILE_EXT 0x3377
#endif

struct egl_procs egl_procs;

/* ---- process-wide: environment and entry points, resolved once ---- */

static struct {
	bool disabled;    /* SYNCBRIDGE_DISABLE: waits / attaches are no-ops */
	bool force_cpu;   /* SYNCBRIDGE_EGL_FALLBACK=1: ignore native fences */
	bool force_core;  /* SYNCBRIDGE_EGL_CORE=1: prefer EGL 1.5 core sync functions */
} env;

static pthread_once_t egl_once = PTHREAD_ONCE_INIT;

static bool
env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

static void
egl_init_once(void)
{
	/* Same rule as the Vulkan layer (the loader's disable_environment): set = off. */
	env.disabled = sb_env_get_bool("SYNCBRIDGE_DISABLE", false);
	env.force_cpu = env_flag("SYNCBRIDGE_EGL_FALLBACK");
	env.force_core = env_flag("SYNCBRIDGE_EGL_CORE");

#define RESOLVE(field, name) \
	egl_procs.field = (__typeof__(egl_procs.field))eglGetProcAddress(name)
	RESOLVE(create_sync_khr, "eglCreateSyncKHR");
	RESOLVE(destroy_sync_khr, "eglDestroySyncKHR");
	RESOLVE(client_wait_sync_khr, "eglClientWaitSyncKHR");
	RESOLVE(wait_sync_khr, "eglWaitSyncKHR");
	RESOLVE(create_sync, "eglCreateSync");
	RESOLVE(destroy_sync, "eglDestroySync");
	RESOLVE(client_wait_sync, "eglClientWaitSync");
	RESOLVE(wait_sync, "eglWaitSync");
	RESOLVE(dup_native_fence_fd, "eglDupNativeFenceFDANDROID");
	RESOLVE(gl_flush, "glFlush");
	RESOLVE(gl_finish, "glFinish");
#undef RESOLVE
	if (env.disabled)
		sb_info("egl: SYNCBRIDGE_DISABLE is set: waits and attaches are no-ops");
}

/* ---- per display: what it supports, probed once (struct display_info: egl_internal.h) ---- */

/*
 * A small table: apps use one or two displays. When it is full, displays
 * beyond it are probed on every call (correct, only slower).
 */
#define MAX_DISPLAYS 16
static struct display_info displays[MAX_DISPLAYS];
static unsigned num_displays;
static pthread_mutex_t displays_lock = PTHREAD_MUTEX_INITIALIZER;

/* Whether the space-separated extension list `exts` contains `name` (egl_internal.h). */
bool
egl_has_extension(const char *exts, const char *name)
{
	size_t len = strlen(name);

	while (exts && *exts) {
		const char *end = strchr(exts, ' ');
		size_t n = end ? (size_t)(end - exts) : strlen(exts);

		if (n == len && strncmp(exts, name, len) == 0)
			return true;
		exts = end ? end + 1 : NULL;
	}
	return false;
}

/*
 * The display's device (EGL_EXT_device_query): whether it renders in
 * software (*software), and its DRM render node, NULL when it has none or
 * will not say. client_exts: the client extension string ("" when none).
 */
static const char *
device_node(EGLDisplay dpy, const char *client_exts, bool *software)
{
	PFNEGLQUERYDISPLAYATTRIBEXTPROC query_display = NULL;
	PFNEGLQUERYDEVICESTRINGEXTPROC query_device = NULL;
	EGLAttrib attr = 0;
	const char *dev_exts, *node = NULL;

	*software = false;
	if (egl_has_extension(client_exts, "EGL_EXT_device_query") ||
	    egl_has_extension(client_exts, "EGL_EXT_device_base")) {
		query_display = (PFNEGLQUERYDISPLAYATTRIBEXTPROC)eglGetProcAddress(
			"eglQueryDisplayAttribEXT");
		query_device = (PFNEGLQUERYDEVICESTRINGEXTPROC)eglGetProcAddress(
			"eglQueryDeviceStringEXT");
	}
	if (query_display && query_device && query_display(dpy, EGL_DEVICE_EXT, &attr) && attr) {
		EGLDeviceEXT dev = (EGLDeviceEXT)attr;

		dev_exts = query_device(dev, EGL_EXTENSIONS);
		*software = egl_has_extension(dev_exts, "EGL_MESA_device_software");
		if (!*software && egl_has_extension(dev_exts, "EGL_EXT_device_drm_render_node"))
			node = query_device(dev, EGL_DRM_RENDER_NODE_FILE_EXT);
	}
	(void)eglGetError(); /* a failed query leaves an error the caller does not expect */
	return node;
}

static int
probe_display(EGLDisplay dpy, struct display_info *info)
{
	const char *version, *exts, *client_exts, *node;
	int major = 0, minor = 0;
	bool core15, khr_fence, khr_wait, native, software;

	version = eglQueryString(dpy, EGL_VERSION);
	if (!version) {
		sb_debug("egl: eglQueryString(%p, EGL_VERSION) failed (EGL error 0x%x): "
			 "caller passed a display that is not initialised",
			 (void *)dpy, (unsigned)eglGetError());
		return -EINVAL;
	}
	exts = eglQueryString(dpy, EGL_EXTENSIONS);
	if (!exts)
		exts = "";
	client_exts = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
	if (!client_exts) {
		(void)eglGetError(); /* EGL 1.4 without client extensions: EGL_BAD_DISPLAY */
		client_exts = "";
	}
	if (sscanf(version, "%d.%d", &major, &minor) != 2)
		major = minor = 0;
	core15 = major > 1 || (major == 1 && minor >= 5);

	khr_fence = egl_has_extension(exts, "EGL_KHR_fence_sync") && egl_procs.create_sync_khr &&
		    egl_procs.destroy_sync_khr && egl_procs.client_wait_sync_khr;
	khr_wait = egl_has_extension(exts, "EGL_KHR_wait_sync") && egl_procs.wait_sync_khr;
	native = egl_has_extension(exts, "EGL_ANDROID_native_fence_sync") &&
		 egl_procs.dup_native_fence_fd;

	memset(info, 0, sizeof(*info));
	info->dpy = dpy;
	if (core15 && egl_procs.create_sync && egl_procs.destroy_sync &&
	    egl_procs.client_wait_sync && egl_procs.wait_sync && (env.force_core || !khr_fence)) {
		info->caps |= SB_EGL_CAP_FENCE_SYNC | SB_EGL_CAP_CORE_SYNC;
		if (native && !env.force_cpu)
			info->caps |= SB_EGL_CAP_NATIVE_FENCE | SB_EGL_CAP_GPU_WAIT;
	} else if (khr_fence) {
		info->caps |= SB_EGL_CAP_FENCE_SYNC;
		if (native && !env.force_cpu) {
			info->caps |= SB_EGL_CAP_NATIVE_FENCE;
			if (khr_wait)
				info->caps |= SB_EGL_CAP_GPU_WAIT;
		}
	}
	if (env.disabled)
		info->caps |= SB_EGL_CAP_DISABLED;
	info->gl_procs = core15 || egl_has_extension(exts, "EGL_KHR_get_all_proc_addresses") ||
			 egl_has_extension(client_exts, "EGL_KHR_client_get_all_proc_addresses");
	node = device_node(dpy, client_exts, &software);
	egl_foreign_probe(dpy, software, node, info);

	sb_info("egl: display %p: EGL %d.%d, %s sync entry points, exports: %s, waits: %s%s",
		(void *)dpy, major, minor,
		(info->caps & SB_EGL_CAP_CORE_SYNC) ? "1.5 core" :
		(info->caps & SB_EGL_CAP_FENCE_SYNC) ? "KHR" : "no",
		(info->caps & SB_EGL_CAP_NATIVE_FENCE) ? "sync_file" : "CPU wait, fd -1",
		(info->caps & SB_EGL_CAP_GPU_WAIT) ? "GPU-side" : "CPU",
		env.force_cpu ? " (SYNCBRIDGE_EGL_FALLBACK)" : "");
	return 0;
}

/* The display's info (probed on first use). -EINVAL for a bad display. */
int
egl_display_get(EGLDisplay dpy, struct display_info *out)
{
	int ret;

	if (dpy == EGL_NO_DISPLAY)
		return -EINVAL;
	pthread_once(&egl_once, egl_init_once);

	pthread_mutex_lock(&displays_lock);
	for (unsigned i = 0; i < num_displays; i++) {
		if (displays[i].dpy == dpy) {
			*out = displays[i];
			pthread_mutex_unlock(&displays_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&displays_lock);

	/* Probe unlocked: EGL calls may take their own locks. */
	ret = probe_display(dpy, out);
	if (ret)
		return ret;

	pthread_mutex_lock(&displays_lock);
	bool found = false;
	for (unsigned i = 0; i < num_displays; i++)
		found = found || displays[i].dpy == dpy;
	if (!found && num_displays < MAX_DISPLAYS)
		displays[num_displays++] = *out;
	else if (!found)
		sb_debug("egl: more than %d displays: display %p is probed on every call",
			 MAX_DISPLAYS, (void *)dpy);
	pthread_mutex_unlock(&displays_lock);
	return 0;
}
