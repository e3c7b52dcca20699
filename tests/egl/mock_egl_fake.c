/* SPDX-License-Identifier: MIT */
/*
 * egl-mock's scripted EGL (mock_egl.h); the tests: mock_egl.c. No CHECK
 * here: the harness's counters are per program file (harness.h).
 */
#include "mock_egl.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "kernel.h"
#include "kernel_raw.h"

struct fake_sync {
	EGLenum type;
	int fd; /* owned by the fake EGL */
};

struct fake_egl fake;
static char fake_displays[40];
char fake_context;

void
fake_reset(const char *version, const char *exts)
{
	memset(&fake, 0, sizeof(fake));
	fake.version = version;
	fake.exts = exts;
	fake.client_exts = "EGL_EXT_client_extensions";
	fake.gpu_fence = -1;
	fake.last_fd_in = -1;
}

static bool
fake_valid(EGLDisplay dpy)
{
	return (char *)dpy >= fake_displays && (char *)dpy < fake_displays + sizeof(fake_displays);
}

EGLAPI const char *EGLAPIENTRY
eglQueryString(EGLDisplay dpy, EGLint name)
{
	if (dpy == EGL_NO_DISPLAY) {
		if (name == EGL_EXTENSIONS)
			return fake.client_exts;
		fake.error = EGL_BAD_DISPLAY;
		return NULL;
	}
	if (!fake_valid(dpy)) {
		fake.error = EGL_BAD_DISPLAY;
		return NULL;
	}
	switch (name) {
	case EGL_VERSION:
		return fake.version;
	case EGL_EXTENSIONS:
		fake.ext_queries++;
		return fake.exts;
	default:
		fake.error = EGL_BAD_PARAMETER;
		return NULL;
	}
}

EGLAPI EGLint EGLAPIENTRY
eglGetError(void)
{
	EGLint e = fake.error ? fake.error : EGL_SUCCESS;

	fake.error = 0;
	return e;
}

EGLAPI EGLContext EGLAPIENTRY
eglGetCurrentContext(void)
{
	return fake.current_ctx;
}

EGLAPI EGLDisplay EGLAPIENTRY
eglGetCurrentDisplay(void)
{
	return fake.current_dpy;
}

static EGLSync
fake_create(EGLDisplay dpy, EGLenum type, EGLint fd_attr)
{
	struct fake_sync *s;

	if (!fake_valid(dpy)) {
		fake.error = EGL_BAD_DISPLAY;
		return EGL_NO_SYNC;
	}
	if (fake.current_dpy != dpy || fake.current_ctx == EGL_NO_CONTEXT) {
		fake.error = EGL_BAD_MATCH;
		return EGL_NO_SYNC;
	}
	if (type == EGL_SYNC_NATIVE_FENCE_ANDROID && fd_attr != EGL_NO_NATIVE_FENCE_FD_ANDROID) {
		fake.last_fd_in = fd_attr;
		fake.last_fd_in_was_sync_file = tb_sync_file_info_raw(fd_attr, NULL, NULL, 0, NULL) == 0;
		if (fake.fail_create_with_fd) {
			/* Not created: the fd stays the caller's. */
			fake.error = EGL_BAD_ALLOC;
			return EGL_NO_SYNC;
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		fake.error = EGL_BAD_ALLOC;
		return EGL_NO_SYNC;
	}
	s->type = type;
	s->fd = -1;
	if (type == EGL_SYNC_NATIVE_FENCE_ANDROID && fd_attr != EGL_NO_NATIVE_FENCE_FD_ANDROID)
		s->fd = fd_attr; /* created: EGL owns it now */
	else if (fake.gpu_fence >= 0)
		s->fd = fcntl(fake.gpu_fence, F_DUPFD_CLOEXEC, 0); /* a fence on the GPU job */
	fake.live_syncs++;
	return (EGLSync)s;
}

static EGLint
attrib_fd(const EGLint *attribs)
{
	for (; attribs && attribs[0] != EGL_NONE; attribs += 2)
		if (attribs[0] == EGL_SYNC_NATIVE_FENCE_FD_ANDROID)
			return attribs[1];
	return EGL_NO_NATIVE_FENCE_FD_ANDROID;
}

static EGLSyncKHR EGLAPIENTRY
fake_create_sync_khr(EGLDisplay dpy, EGLenum type, const EGLint *attribs)
{
	fake.creates_khr++;
	return fake_create(dpy, type, attrib_fd(attribs));
}

static EGLSync EGLAPIENTRY
fake_create_sync(EGLDisplay dpy, EGLenum type, const EGLAttrib *attribs)
{
	EGLint fd = EGL_NO_NATIVE_FENCE_FD_ANDROID;

	fake.creates_core++;
	for (; attribs && attribs[0] != EGL_NONE; attribs += 2)
		if (attribs[0] == EGL_SYNC_NATIVE_FENCE_FD_ANDROID)
			fd = (EGLint)attribs[1];
	return fake_create(dpy, type, fd);
}

static EGLBoolean EGLAPIENTRY
fake_destroy_sync(EGLDisplay dpy, EGLSync sync)
{
	struct fake_sync *s = sync;

	(void)dpy;
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	fake.live_syncs--;
	return EGL_TRUE;
}

static EGLint
fake_client_wait_common(EGLSync sync, EGLint flags, uint64_t timeout)
{
	struct fake_sync *s = sync;
	struct pollfd p;
	int ms;

	fake.client_waits++;
	if (flags & EGL_SYNC_FLUSH_COMMANDS_BIT_KHR)
		fake.flushes_by_wait++;
	if (s->fd < 0)
		return EGL_CONDITION_SATISFIED_KHR;
	p.fd = s->fd;
	p.events = POLLIN;
	ms = timeout == EGL_FOREVER_KHR ? -1 : (int)(timeout / 1000000);
	while (poll(&p, 1, ms) < 0)
		;
	return (p.revents & POLLIN) ? EGL_CONDITION_SATISFIED_KHR : EGL_TIMEOUT_EXPIRED_KHR;
}

static EGLint EGLAPIENTRY
fake_client_wait_sync_khr(EGLDisplay dpy, EGLSyncKHR sync, EGLint flags, EGLTimeKHR timeout)
{
	(void)dpy;
	return fake_client_wait_common(sync, flags, timeout);
}

static EGLint EGLAPIENTRY
fake_client_wait_sync(EGLDisplay dpy, EGLSync sync, EGLint flags, EGLTime timeout)
{
	(void)dpy;
	return fake_client_wait_common(sync, flags, timeout);
}

static EGLint EGLAPIENTRY
fake_wait_sync_khr(EGLDisplay dpy, EGLSyncKHR sync, EGLint flags)
{
	(void)dpy;
	(void)sync;
	if (flags != 0) {
		fake.error = EGL_BAD_PARAMETER;
		return EGL_FALSE;
	}
	if (fake.fail_server_wait) {
		fake.error = EGL_BAD_ALLOC;
		return EGL_FALSE;
	}
	fake.server_waits++; /* a GPU would wait; the CPU goes on */
	return EGL_TRUE;
}

static EGLBoolean EGLAPIENTRY
fake_wait_sync(EGLDisplay dpy, EGLSync sync, EGLint flags)
{
	return fake_wait_sync_khr(dpy, sync, flags) == EGL_TRUE;
}

static EGLint EGLAPIENTRY
fake_dup_native_fence_fd(EGLDisplay dpy, EGLSyncKHR sync)
{
	struct fake_sync *s = sync;

	(void)dpy;
	if (fake.dup_gives_none || s->fd < 0)
		return EGL_NO_NATIVE_FENCE_FD_ANDROID;
	return dup(s->fd); /* plain dup: no close-on-exec, the bridge must set it */
}

static void
fake_gl_flush(void)
{
	fake.gl_flush++;
}

static void
fake_gl_finish(void)
{
	fake.gl_finish++;
}

static char fake_device;

static EGLBoolean EGLAPIENTRY
fake_query_display_attrib(EGLDisplay dpy, EGLint attribute, EGLAttrib *value)
{
	fake.device_queries++;
	if (!fake_valid(dpy) || attribute != EGL_DEVICE_EXT || !fake.device_exts) {
		fake.error = fake_valid(dpy) ? EGL_BAD_ATTRIBUTE : EGL_BAD_DISPLAY;
		return EGL_FALSE;
	}
	*value = (EGLAttrib)&fake_device;
	return EGL_TRUE;
}

static const char *EGLAPIENTRY
fake_query_device_string(EGLDeviceEXT dev, EGLint name)
{
	fake.device_queries++;
	if (dev != (EGLDeviceEXT)&fake_device) {
		fake.error = EGL_BAD_DEVICE_EXT;
		return NULL;
	}
	if (name == EGL_EXTENSIONS)
		return fake.device_exts;
	if ((name == 0x3377 /* EGL_DRM_RENDER_NODE_FILE_EXT */ || name == EGL_DRM_DEVICE_FILE_EXT) &&
	    fake.device_node)
		return fake.device_node;
	fake.error = EGL_BAD_PARAMETER;
	return NULL;
}

EGLAPI __eglMustCastToProperFunctionPointerType EGLAPIENTRY
eglGetProcAddress(const char *name)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} procs[] = {
#define P(n, f) { n, (void (*)(void))(f) }
		P("eglCreateSyncKHR", fake_create_sync_khr),
		P("eglDestroySyncKHR", fake_destroy_sync),
		P("eglClientWaitSyncKHR", fake_client_wait_sync_khr),
		P("eglWaitSyncKHR", fake_wait_sync_khr),
		P("eglCreateSync", fake_create_sync),
		P("eglDestroySync", fake_destroy_sync),
		P("eglClientWaitSync", fake_client_wait_sync),
		P("eglWaitSync", fake_wait_sync),
		P("eglDupNativeFenceFDANDROID", fake_dup_native_fence_fd),
		P("glFlush", fake_gl_flush),
		P("glFinish", fake_gl_finish),
		P("eglQueryDisplayAttribEXT", fake_query_display_attrib),
		P("eglQueryDeviceStringEXT", fake_query_device_string),
#undef P
	};

	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
		if (strcmp(procs[i].name, name) == 0)
			return procs[i].fn;
	return NULL;
}

static unsigned next_display;

EGLDisplay
fake_new_display(void)
{
	REQUIRE(next_display < sizeof(fake_displays), "out of fake displays");
	return (EGLDisplay)&fake_displays[next_display++];
}

void
fake_make_current(EGLDisplay dpy)
{
	fake.current_dpy = dpy;
	fake.current_ctx = (EGLContext)&fake_context;
}
