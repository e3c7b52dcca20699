/* SPDX-License-Identifier: MIT */
/*
 * Mesa's venus and the release path.
 *
 * A release exports the batch's signal semaphore as a SYNC_FD right after
 * vkQueueSubmit and attaches it to the dma-buf. Mesa's venus (25.0,
 * vn_queue.c, vn_GetSemaphoreFdKHR and vn_GetFenceFdKHR) makes that fence
 * with an empty virtio-gpu submit on the queue's ring, so it is pending and
 * signals once the host's queue has done the work before it; but in builds
 * with an X11 or Wayland platform it then waits for it on the CPU:
 *
 *     if (!dev->renderer->info.has_implicit_fencing)
 *        sync_wait(fd, -1);
 *
 * and has_implicit_fencing is only ever the driconf option
 * venus_implicit_fencing ("Assume the virtio-gpu kernel driver supports
 * implicit fencing", read at vkCreateInstance; an environment variable of the
 * same name overrides drirc). Without it every release would stall the app's
 * vkQueueSubmit until its own GPU work is done (measured in the venus guest:
 * the submit took as long as the work). With it the export returns at once
 * and the dma-buf carries the pending fence, which is what implicit sync
 * wants. The option's other effect is venus's own WSI: a present then puts
 * its fence on the swapchain image's buffer (a virtio-gpu submit listing it)
 * instead of waiting for the queue to go idle — again what a compositor
 * reading that buffer implicitly needs.
 *
 * Measured in the venus guest (docs/layer.md, "Mesa's venus"; figure 8):
 * with the option a release submit's median dropped from 168 ms (the work's
 * length) to 17 ms, and a poll()ing consumer then waited for the pending
 * fence instead. (It was once opt-in because a wait-before-signal batch hung;
 * that hang was the layer's early export, fixed in resolve.c.)
 *
 * Where and for how long. Mesa reads the option in vn_CreateInstance and
 * nowhere else (vn_instance.c, read from Mesa's source):
 *
 *     driParseConfigFiles(&instance->dri_options,
 *                         &instance->available_dri_options, 0, "venus", ...);
 *     instance->renderer->info.has_implicit_fencing =
 *        driQueryOptionb(&instance->dri_options, "venus_implicit_fencing");
 *
 * so the variable needs to exist only while the layer calls vkCreateInstance
 * down, and the layer sets it only then and only when a venus device is
 * present, and unsets it when the call returns: the app's environment (and
 * its children's) stays as it was. Mesa's xmlconfig prints "ATTENTION:
 * default value of option venus_implicit_fencing overridden by environment."
 * on stderr when it takes a value from the environment; on venus that line
 * is ours (docs/layer.md explains it; silencing it would take MESA_DEBUG,
 * which is the app's to set).
 *
 * "A venus device is present" is asked the way Mesa's venus asks
 * (vn_renderer_virtgpu.c: virtgpu_open_device, virtgpu_init_params,
 * virtgpu_init_capset): a render node whose DRM driver is "virtio_gpu", with
 * the kernel params venus requires (3D_FEATURES, CAPSET_QUERY_FIX,
 * RESOURCE_BLOB, CONTEXT_INIT) and the venus capset among the device's
 * (SUPPORTED_CAPSET_IDs; Mesa fetches that capset, the mask answers the same
 * without a round trip to the host). virgl-only virtio-gpu (no venus capset)
 * and every other driver leave the environment untouched.
 *
 * SYNCBRIDGE_VENUS_FENCING: unset or 1 = as above; 0 = never set it (venus
 * exports then wait on the CPU: each release submit lasts as long as its
 * work); export = set it on any driver and leave it set, for child processes
 * started without the layer (the layer's behaviour before issue 45: the environment
 * test's control). venus_implicit_fencing already in the environment is kept.
 * setenv()/unsetenv() run while the app is inside vkCreateInstance; an app
 * thread reading the environment at that moment is the one risk.
 */
#include "venus.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <drm.h>

#include "log.h"

#define VENUS_OPTION "venus_implicit_fencing"

/* virtgpu_drm.h (kernel uapi; older libdrm copies lack the newer params). */
struct virtgpu_getparam {
	uint64_t param;
	uint64_t value; /* user pointer to a uint64_t */
};
#define VIRTGPU_IOCTL_GETPARAM DRM_IOWR(DRM_COMMAND_BASE + 0x03, struct virtgpu_getparam)
#define VIRTGPU_PARAM_3D_FEATURES 1
#define VIRTGPU_PARAM_CAPSET_QUERY_FIX 2
#define VIRTGPU_PARAM_RESOURCE_BLOB 3
#define VIRTGPU_PARAM_CONTEXT_INIT 6
#define VIRTGPU_PARAM_SUPPORTED_CAPSET_IDS 7
#define VIRTGPU_CAPSET_VENUS 4

static uint64_t
getparam(int fd, uint64_t param)
{
	uint64_t value = 0;
	struct virtgpu_getparam gp = { .param = param, .value = (uintptr_t)&value };
	if (ioctl(fd, VIRTGPU_IOCTL_GETPARAM, &gp) != 0)
		return 0;
	return value;
}

/* Whether the render node open on fd offers venus (see above). */
static bool
node_has_venus(int fd)
{
	char name[32] = "";
	struct drm_version v = { .name_len = sizeof(name) - 1, .name = name };
	if (ioctl(fd, DRM_IOCTL_VERSION, &v) != 0 || strcmp(name, "virtio_gpu") != 0)
		return false;
	static const uint64_t required[] = {
		VIRTGPU_PARAM_3D_FEATURES, VIRTGPU_PARAM_CAPSET_QUERY_FIX,
		VIRTGPU_PARAM_RESOURCE_BLOB, VIRTGPU_PARAM_CONTEXT_INIT,
	};
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		if (!getparam(fd, required[i]))
			return false;
	return getparam(fd, VIRTGPU_PARAM_SUPPORTED_CAPSET_IDS) & (1ull << VIRTGPU_CAPSET_VENUS);
}

static bool
venus_present(void)
{
	DIR *dir = opendir("/dev/dri");
	if (!dir)
		return false;
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(dir))) {
		if (strncmp(e->d_name, "renderD", 7) != 0)
			continue;
		char path[sizeof(e->d_name) + 16];
		snprintf(path, sizeof(path), "/dev/dri/%s", e->d_name);
		int fd = open(path, O_RDWR | O_CLOEXEC); /* ours, closed below */
		if (fd < 0)
			continue;
		found = node_has_venus(fd);
		close(fd);
	}
	closedir(dir);
	return found;
}

void
sbl_venus_prepare(struct sbl_venus_env *env, bool enabled)
{
	env->unset_after = false;
	if (!enabled)
		return;
	const char *knob = getenv("SYNCBRIDGE_VENUS_FENCING");
	if (knob && strcmp(knob, "0") == 0)
		return;
	bool export = knob && strcmp(knob, "export") == 0;
	if (knob && *knob && !export && strcmp(knob, "1") != 0)
		sb_warn("layer: SYNCBRIDGE_VENUS_FENCING=%s is not 0|1|export (caller); using 1",
			knob);
	const char *set = getenv(VENUS_OPTION);
	if (set) {
		sb_debug("layer: " VENUS_OPTION "=%s already in the environment: kept", set);
		return;
	}
	if (!export && !venus_present()) {
		sb_debug("layer: no venus device: the environment is left alone");
		return;
	}
	if (setenv(VENUS_OPTION, "true", 0) != 0) {
		sb_log_errno(SB_LOG_WARN, errno, "layer: cannot set " VENUS_OPTION "=true");
		return;
	}
	env->unset_after = !export;
	sb_debug("layer: %s " VENUS_OPTION "=true for Mesa's venus: its SYNC_FD exports are "
		 "handed out pending instead of waited for (SYNCBRIDGE_VENUS_FENCING=0: not)",
		 export ? "set (and left in the environment)" : "set during vkCreateInstance");
}

void
sbl_venus_restore(struct sbl_venus_env *env)
{
	if (env->unset_after && unsetenv(VENUS_OPTION) != 0)
		sb_log_errno(SB_LOG_WARN, errno, "layer: cannot unset " VENUS_OPTION);
	env->unset_after = false;
}
