/* SPDX-License-Identifier: MIT */
/* doctor's live Vulkan measurements on a device made by common/vk (doctor_vk_probe.c). */
#ifndef INFO_DOCTOR_VK_PROBE_H
#define INFO_DOCTOR_VK_PROBE_H

#include "doctor.h"
#include "vk.h"

/* Implicit sync out: does a dma-buf the device wrote carry its fence? With
 * release, the write ends with a release to the outside family (FOREIGN). */
void doctor_vk_measure_out(struct vkt *t, bool release, struct doctor_item *it);
/* Implicit sync in: does the device wait for a foreign (vgem) fence already on
 * a dma-buf it reads? Unknown, saying why, without vgem. With acquire, the
 * read starts with an acquire from the outside family (FOREIGN). */
void doctor_vk_measure_in(struct vkt *t, bool acquire, struct doctor_item *it);

#endif
