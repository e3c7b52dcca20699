/* SPDX-License-Identifier: MIT */
/*
 * What the Wayland client helper (<syncbridge/wayland-client.h>) and the
 * compositor helper (<syncbridge/wayland-server.h>) share. Included by both;
 * it needs neither libwayland nor either helper library.
 */
#ifndef SYNCBRIDGE_WAYLAND_COMMON_H
#define SYNCBRIDGE_WAYLAND_COMMON_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * How a surface's buffers are synchronized: the protocol a client helper
 * picked (sb_wl_client_get_protocol()) or that carried a commit
 * (sb_wl_commit_get_protocol()).
 */
enum sb_wl_sync_protocol {
	/** No explicit-sync protocol: the dma-buf's implicit fences. */
	SB_WL_SYNC_IMPLICIT = 0,
	/** zwp_linux_explicit_synchronization_v1 (sync_file fences). */
	SB_WL_SYNC_EXPLICIT_V1 = 1,
	/** wp_linux_drm_syncobj_manager_v1 (timeline syncobj points). */
	SB_WL_SYNC_DRM_SYNCOBJ = 2,
};

#ifdef __cplusplus
}
#endif

#endif
