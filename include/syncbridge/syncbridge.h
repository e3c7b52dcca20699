/* SPDX-License-Identifier: MIT */
/* syncbridge — umbrella header. */
#ifndef SYNCBRIDGE_H
#define SYNCBRIDGE_H

#include <syncbridge/common.h>
#include <syncbridge/sync_file.h>
#include <syncbridge/dmabuf.h>
#include <syncbridge/syncobj.h>
#include <syncbridge/buffer_queue.h>

#endif
