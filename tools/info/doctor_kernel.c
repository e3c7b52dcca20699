/* SPDX-License-Identifier: MIT */
/*
 * doctor, the kernel: its release, the fence uapi tried on a real dma-buf
 * (one made without root: udmabuf, a dma-heap, a DRM card's dumb buffer),
 * and each DRM node with its driver and syncobj capabilities. Only ioctls
 * that answer at once: nothing here waits on a fence, so no child process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/sync_file.h>

#include <drm.h>

#include <syncbridge/dmabuf.h>
#include <syncbridge/sync_file.h>

#include "demo_util.h"
#include "doctor.h"
#include "info.h"
#include "kernel.h"

/* Linux 6.3's uapi; older headers lack it. */
#ifndef SYNC_IOC_SET_DEADLINE
struct sync_set_deadline {
	__u64 deadline_ns;
	__u64 pad;
};
#define SYNC_IOC_SET_DEADLINE _IOW(SYNC_IOC_MAGIC, 5, struct sync_set_deadline)
#endif

#ifndef DRM_CAP_SYNCOBJ_TIMELINE
#define DRM_CAP_SYNCOBJ_TIMELINE 0x14
#endif

static int
node_cmp(const void *a, const void *b)
{
	return strcmp(((const struct doctor_drm_node *)a)->path,
		      ((const struct doctor_drm_node *)b)->path);
}

static void
cap_item(int fd, uint64_t cap, const char *name, struct doctor_item *it)
{
	struct drm_get_cap arg = {.capability = cap};
	int ret = sbk_ioctl(fd, DRM_IOCTL_GET_CAP, &arg);

	if (ret < 0)
		doctor_item_set(it, DOCTOR_UNKNOWN, "%s: %s", name, strerror(-ret));
	else
		doctor_item_set(it, arg.value ? DOCTOR_YES : DOCTOR_NO, "%s = %llu", name,
				(unsigned long long)arg.value);
}

static void
node_probe(struct doctor_drm_node *n)
{
	int fd = open(n->path, O_RDWR | O_CLOEXEC);
	int ret;

	if (fd < 0) {
		snprintf(n->error, sizeof(n->error), "cannot open: %s", strerror(errno));
		return;
	}
	ret = sbk_drm_driver_name(fd, n->driver, sizeof(n->driver));
	if (ret < 0)
		snprintf(n->error, sizeof(n->error), "DRM_IOCTL_VERSION: %s", strerror(-ret));
	cap_item(fd, DRM_CAP_SYNCOBJ, "DRM_CAP_SYNCOBJ", &n->syncobj);
	cap_item(fd, DRM_CAP_SYNCOBJ_TIMELINE, "DRM_CAP_SYNCOBJ_TIMELINE", &n->timeline);
	if (n->timeline.v != DOCTOR_YES)
		doctor_item_set(&n->eventfd, DOCTOR_NO, "no timeline syncobjs on this driver");
	else if (sbk_drm_has_syncobj_eventfd(fd))
		doctor_item_set(&n->eventfd, DOCTOR_YES, "DRM_IOCTL_SYNCOBJ_EVENTFD answers");
	else
		doctor_item_set(&n->eventfd, DOCTOR_NO,
				"DRM_IOCTL_SYNCOBJ_EVENTFD unknown (Linux 6.6 added it)");
	close(fd);
}

static void
list_nodes(struct doctor_kernel *k)
{
	DIR *d = opendir("/dev/dri");
	struct dirent *e;

	if (!d) {
		snprintf(k->nodes_why, sizeof(k->nodes_why), "/dev/dri: %s (no DRM driver loaded)",
			 strerror(errno));
		return;
	}
	while ((e = readdir(d)) && k->n_nodes < DOCTOR_MAX_NODES) {
		if (strncmp(e->d_name, "card", 4) != 0 && strncmp(e->d_name, "renderD", 7) != 0)
			continue;
		snprintf(k->nodes[k->n_nodes++].path, sizeof(k->nodes[0].path), "/dev/dri/%.40s",
			 e->d_name);
	}
	closedir(d);
	if (k->n_nodes == 0)
		snprintf(k->nodes_why, sizeof(k->nodes_why), "/dev/dri has no card or render node");
	qsort(k->nodes, (size_t)k->n_nodes, sizeof(k->nodes[0]), node_cmp);
	for (int i = 0; i < k->n_nodes; i++)
		node_probe(&k->nodes[i]);
}

int
doctor_dmabuf_reader_fences(int dmabuf, int *status, uint32_t *num, char *driver, size_t len)
{
	struct sb_sync_file_info *info = NULL;
	int sync = -1, ret;

	*status = -1;
	*num = 0;
	driver[0] = '\0';
	ret = sb_dmabuf_export_sync_file(dmabuf, SB_ACCESS_READ, &sync);
	if (ret < 0)
		return ret;
	ret = sb_sync_file_info_create(sync, &info);
	close(sync);
	if (ret < 0)
		return ret;
	*status = info->status;
	*num = info->num_fences;
	if (info->num_fences)
		snprintf(driver, len, "%s", info->fences[0].driver);
	sb_sync_file_info_destroy(info);
	return 0;
}

/*
 * The uapi on one dma-buf (borrowed): export, import what was exported (the
 * core's calls), set a deadline (SYNC_IOC_SET_DEADLINE by hand: the core's
 * sb_sync_file_set_deadline() makes a missing ioctl a no-op by design, and
 * here the question is whether the kernel has it).
 */
static void
try_uapi(struct doctor_kernel *k, int dmabuf)
{
	struct sync_set_deadline dl = {.deadline_ns = (uint64_t)now_ns() + 1000000};
	int sync = -1, ret;

	ret = sb_dmabuf_export_sync_file(dmabuf, SB_ACCESS_READ, &sync);
	if (ret < 0) {
		doctor_item_set(
			&k->export_sync_file, DOCTOR_NO,
			"DMA_BUF_IOCTL_EXPORT_SYNC_FILE on a %s dma-buf: %s (Linux 6.0 added it)",
			k->buffer, strerror(-ret));
		doctor_item_set(&k->import_sync_file, DOCTOR_UNKNOWN, "no sync_file to import");
		doctor_item_set(&k->set_deadline, DOCTOR_UNKNOWN, "no sync_file to try it on");
		return;
	}
	doctor_item_set(&k->export_sync_file, DOCTOR_YES,
			"DMA_BUF_IOCTL_EXPORT_SYNC_FILE on a %s dma-buf", k->buffer);
	ret = sb_dmabuf_import_sync_file(dmabuf, SB_ACCESS_WRITE, sync);
	doctor_item_set(&k->import_sync_file, ret == 0 ? DOCTOR_YES : DOCTOR_NO,
			"DMA_BUF_IOCTL_IMPORT_SYNC_FILE on a %s dma-buf%s%s", k->buffer,
			ret == 0 ? "" : ": ", ret == 0 ? "" : strerror(-ret));
	ret = sbk_ioctl(sync, SYNC_IOC_SET_DEADLINE, &dl);
	doctor_item_set(&k->set_deadline, ret == 0 ? DOCTOR_YES : DOCTOR_NO,
			"SYNC_IOC_SET_DEADLINE%s%s", ret == 0 ? "" : ": ",
			ret == 0         ? ""
			: ret == -ENOTTY ? "unknown ioctl (Linux 6.3 added it)"
					 : strerror(-ret));
	close(sync);
}

/* A dumb buffer of the first card node that makes one; 0 with buf filled, or -errno. */
static int
dumb_buffer(const struct doctor_kernel *k, int *card, struct demo_vgem_buf *buf, char *name,
	    size_t len)
{
	int ret = -ENODEV;

	for (int i = 0; i < k->n_nodes; i++) {
		if (strstr(k->nodes[i].path, "/card") == NULL || !k->nodes[i].driver[0])
			continue;
		*card = open(k->nodes[i].path, O_RDWR | O_CLOEXEC);
		if (*card < 0)
			continue;
		ret = demo_vgem_buf_create(*card, 64, 64, 32, buf);
		if (ret == 0) {
			snprintf(name, len, "%.40s dumb", k->nodes[i].driver);
			return 0;
		}
		close(*card);
		*card = -1;
	}
	return ret;
}

static void
dmabuf_uapi(struct doctor_kernel *k)
{
	static const enum sbk_buf_kind kinds[] = {SBK_BUF_UDMABUF, SBK_BUF_HEAP};
	struct sbk_buf b = SBK_BUF_INIT;
	struct demo_vgem_buf dumb;
	int card = -1;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (sbk_buf_create(kinds[i], -1, 4096, &b) == 0) {
			snprintf(k->buffer, sizeof(k->buffer), "%s", sbk_buf_kind_name(kinds[i]));
			try_uapi(k, b.fd);
			sbk_buf_destroy(&b);
			return;
		}
	}
	if (dumb_buffer(k, &card, &dumb, k->buffer, sizeof(k->buffer)) == 0) {
		try_uapi(k, dumb.dmabuf_fd);
		demo_vgem_buf_destroy(&dumb);
		close(card);
		return;
	}
	k->buffer[0] = 0;
	const char *why = "no dma-buf could be made without root here: no usable /dev/udmabuf, "
			  "/dev/dma_heap/system or DRM card node with dumb buffers";
	doctor_item_set(&k->export_sync_file, DOCTOR_UNKNOWN, "%s", why);
	doctor_item_set(&k->import_sync_file, DOCTOR_UNKNOWN, "%s", why);
	doctor_item_set(&k->set_deadline, DOCTOR_UNKNOWN, "%s", why);
}

void
doctor_kernel_probe(struct doctor_kernel *k)
{
	struct utsname u;

	memset(k, 0, sizeof(*k));
	if (uname(&u) == 0)
		snprintf(k->release, sizeof(k->release), "%s %s", u.sysname, u.release);
	list_nodes(k);
	dmabuf_uapi(k);
}

struct json_object *
doctor_kernel_json(const struct doctor_kernel *k)
{
	struct json_object *o = json_object_new_object(), *nodes = json_object_new_array();

	json_object_object_add(o, "release", info_json_str(k->release));
	json_object_object_add(o, "dmabuf_tried_on",
			       k->buffer[0] ? info_json_str(k->buffer) : NULL);
	json_object_object_add(o, "dmabuf_export_sync_file",
			       doctor_item_json(&k->export_sync_file));
	json_object_object_add(o, "dmabuf_import_sync_file",
			       doctor_item_json(&k->import_sync_file));
	json_object_object_add(o, "sync_file_set_deadline", doctor_item_json(&k->set_deadline));
	for (int i = 0; i < k->n_nodes; i++) {
		const struct doctor_drm_node *n = &k->nodes[i];
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "path", info_json_str(n->path));
		json_object_object_add(j, "driver", n->driver[0] ? info_json_str(n->driver) : NULL);
		json_object_object_add(j, "error", n->error[0] ? info_json_str(n->error) : NULL);
		if (n->driver[0]) {
			json_object_object_add(j, "syncobj", doctor_item_json(&n->syncobj));
			json_object_object_add(j, "syncobj_timeline",
					       doctor_item_json(&n->timeline));
			json_object_object_add(j, "syncobj_eventfd", doctor_item_json(&n->eventfd));
		}
		json_object_array_add(nodes, j);
	}
	json_object_object_add(o, "drm_nodes", nodes);
	json_object_object_add(o, "drm_nodes_why",
			       k->nodes_why[0] ? info_json_str(k->nodes_why) : NULL);
	return o;
}

void
doctor_kernel_print(FILE *f, const struct doctor_kernel *k)
{
	fprintf(f, "Kernel: %s\n", k->release);
	doctor_item_print(f, "  ", "dma-buf sync_file export", &k->export_sync_file);
	doctor_item_print(f, "  ", "dma-buf sync_file import", &k->import_sync_file);
	doctor_item_print(f, "  ", "fence deadlines", &k->set_deadline);
	if (k->n_nodes == 0)
		fprintf(f, "  DRM nodes: none (%s)\n", k->nodes_why);
	for (int i = 0; i < k->n_nodes; i++) {
		const struct doctor_drm_node *n = &k->nodes[i];

		if (!n->driver[0]) {
			fprintf(f, "  %-20s %s\n", n->path, n->error);
			continue;
		}
		fprintf(f, "  %-20s %-12s syncobj %s, timeline %s, eventfd %s\n", n->path,
			n->driver, doctor_tri_word(n->syncobj.v), doctor_tri_word(n->timeline.v),
			doctor_tri_word(n->eventfd.v));
	}
}
