/* SPDX-License-Identifier: MIT */
/*
 * The params a stream offers for explicit sync (sb_pw_sync_build_params()):
 * PipeWire's negotiation (src/pipewire/buffers.c, pw_buffers_negotiate)
 * intersects both sides' SPA_PARAM_Meta params and takes the first
 * SPA_PARAM_Buffers whose required metaType bits were all negotiated. So the
 * Buffers param with the two SyncObj planes comes first, its metaType
 * mandatory (a peer without the meta cannot take it), and a plain Buffers
 * param after it is what a peer without explicit sync (GStreamer's
 * pipewiresrc) gets.
 */
#include <syncbridge/pipewire.h>

#include <errno.h>

#include <spa/buffer/meta.h>
#include <spa/param/buffers.h>
#include <spa/param/param.h>
#include <spa/pod/builder.h>

#include "pw_internal.h"

/* SyncObj planes: the acquire and the release timeline. */
#define SYNC_PLANES 2

static const struct spa_pod *
buffers_param(struct spa_pod_builder *b, uint32_t buffers, uint32_t blocks, uint32_t size,
	      uint32_t stride, uint32_t data_types, bool sync)
{
	struct spa_pod_frame f;

	spa_pod_builder_push_object(b, &f, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers);
	spa_pod_builder_add(b,
		SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(buffers, 1, 32),
		SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(blocks),
		SPA_PARAM_BUFFERS_size, SPA_POD_Int(size),
		SPA_PARAM_BUFFERS_stride, SPA_POD_Int(stride),
		SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int(data_types),
		0);
	if (sync) {
		spa_pod_builder_prop(b, SPA_PARAM_BUFFERS_metaType, SPA_POD_PROP_FLAG_MANDATORY);
		spa_pod_builder_int(b, 1 << SPA_META_SyncTimeline);
	}
	return spa_pod_builder_pop(b, &f);
}

int
sb_pw_sync_build_params(const struct sb_pw_sync *sync, struct spa_pod_builder *b,
		   const struct spa_pod **params, uint32_t max, uint32_t buffers, uint32_t planes,
		   uint32_t size, uint32_t stride, uint32_t data_types)
{
	if (!sync || !b || !params || planes == 0)
		return -EINVAL;
	if (max < (sb_pw_sync_disabled(sync) ? 1u : 3u))
		return -ENOSPC;
	if (sb_pw_sync_disabled(sync)) {
		params[0] = buffers_param(b, buffers, planes, size, stride, data_types, false);
		return params[0] ? 1 : -ENOSPC;
	}
	params[0] = buffers_param(b, buffers, planes + SYNC_PLANES, size, stride, data_types, true);
	params[1] = spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
		SPA_PARAM_META_type, SPA_POD_Id(SPA_META_SyncTimeline),
		SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_sync_timeline)));
	params[2] = buffers_param(b, buffers, planes, size, stride, data_types, false);
	if (!params[0] || !params[1] || !params[2])
		return -ENOSPC; /* the builder's buffer is too small */
	return 3;
}
