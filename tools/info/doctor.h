/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-info doctor: what keeps frames ordered on this machine
 * (docs/inspect.md, "doctor"). Each section fills a plain struct (no
 * pointers): the probes that touch a driver run in a child process
 * (doctor_run.c) and send their struct back over a pipe, so a stuck driver
 * costs a timeout, never a hang.
 *
 * Every finding is a tri-state with the reason next to it: what was seen, or
 * why it could not be known.
 */
#ifndef INFO_DOCTOR_H
#define INFO_DOCTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

enum doctor_tri {
	DOCTOR_UNKNOWN = 0,
	DOCTOR_NO,
	DOCTOR_YES,
};

/* A finding: yes / no / unknown and why (what was measured, or what is missing). */
struct doctor_item {
	enum doctor_tri v;
	char why[256];
};

const char *doctor_tri_word(enum doctor_tri v);
void doctor_item_set(struct doctor_item *it, enum doctor_tri v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * What a reader of the dma-buf would wait for right now, through the core
 * (sb_dmabuf_export_sync_file() for a read, then sb_sync_file_info_create()):
 * 0 with *status (1 all signalled, 0 pending, < 0 an error), *num fences and
 * the first fence's driver in driver ("" when none); or the export's -errno.
 * dmabuf: borrowed.
 */
int doctor_dmabuf_reader_fences(int dmabuf, int *status, uint32_t *num, char *driver,
				size_t len);

/* {"value": "yes"|"no"|"unknown", "why": "..."} */
struct json_object *doctor_item_json(const struct doctor_item *it);
/* "yes (why)" on one line, after label. */
void doctor_item_print(FILE *f, const char *indent, const char *label,
		       const struct doctor_item *it);

/* ---- running a probe in a child ---------------------------------------- */

/*
 * Run fn(out, arg) in a forked child with at most timeout_ms of wall time;
 * its `size` bytes of *out come back over a pipe. The child's stdin, stdout
 * and stderr are /dev/null. Returns 0
 * with *out filled, or -errno with why set ("did not answer in N ms", "died
 * of signal S", ...) and *out untouched. `name` is the probe's name for the
 * test hook SYNCBRIDGE_DOCTOR_TEST_HANG (docs/inspect.md).
 */
int doctor_run(const char *name, void (*fn)(void *out, const void *arg), const void *arg, void *out,
	       size_t size, int timeout_ms, char *why, size_t why_len);

/* ---- kernel ------------------------------------------------------------ */

#define DOCTOR_MAX_NODES 16

struct doctor_drm_node {
	char path[64];
	char driver[32]; /* "" when it could not be opened */
	char error[96];  /* why it could not be opened / asked */
	struct doctor_item syncobj, timeline, eventfd;
};

struct doctor_kernel {
	char release[160];
	char buffer[64]; /* the dma-buf the uapi was tried on ("udmabuf", ...), or "" */
	struct doctor_item export_sync_file, import_sync_file, set_deadline;
	int n_nodes;
	struct doctor_drm_node nodes[DOCTOR_MAX_NODES];
	char nodes_why[128]; /* why there are none */
};

void doctor_kernel_probe(struct doctor_kernel *k);
struct json_object *doctor_kernel_json(const struct doctor_kernel *k);
void doctor_kernel_print(FILE *f, const struct doctor_kernel *k);

/* ---- Vulkan ------------------------------------------------------------ */

#define DOCTOR_MAX_VK 8

struct doctor_vk_layer {
	char state[16]; /* "active", "pass-through", "not loaded", "unknown" */
	char mode[32];  /* active: the layer's mode */
	char why[256];
	/* with the layer active: a fence on the dma-buf after a FOREIGN release;
	 * a read after a FOREIGN acquire waits for a foreign fence on it */
	struct doctor_item foreign_out, foreign_in;
};

struct doctor_vk_dev {
	char name[256];
	char driver[64];
	char driver_info[64];
	char type[16];
	uint32_t api;
	struct doctor_item sync_fd_export, sync_fd_import, dmabuf, foreign;
	struct doctor_item out, in; /* measured with the layer kept out */
	struct doctor_vk_layer layer;
};

struct doctor_vk {
	struct doctor_item available; /* a Vulkan driver answered */
	int n;
	struct doctor_vk_dev dev[DOCTOR_MAX_VK];
};

void doctor_vk_probe(struct doctor_vk *vk, int timeout_ms);
struct json_object *doctor_vk_json(const struct doctor_vk *vk);
void doctor_vk_print(FILE *f, const struct doctor_vk *vk);

/* The layer's per-device log line in text (SYNCBRIDGE_DEBUG=info) for device
 * `name`: state, mode and why into l; false when there is none. */
bool doctor_layer_line_parse(const char *text, const char *name, struct doctor_vk_layer *l);

/* ---- EGL --------------------------------------------------------------- */

struct doctor_egl {
	struct doctor_item available;
	char display[64], vendor[64], renderer[128];
	struct doctor_item native_fence, wait_sync, dmabuf_import, dmabuf_export, out;
};

void doctor_egl_probe(struct doctor_egl *egl, int timeout_ms);
struct json_object *doctor_egl_json(const struct doctor_egl *egl);
void doctor_egl_print(FILE *f, const struct doctor_egl *egl);

/* ---- the layer's manifests ---------------------------------------------- */

#define DOCTOR_MAX_MANIFESTS 8

struct doctor_manifest {
	char path[512];
	bool implicit;
	char library[512];    /* as the manifest names it */
	char disable_env[64]; /* the manifest's disable variable, "" if none */
	struct doctor_item loads;
};

struct doctor_layer {
	int n;
	struct doctor_manifest m[DOCTOR_MAX_MANIFESTS];
	char searched[1024]; /* the folders searched, ':'-separated */
	struct doctor_item installed, enabled;
};

void doctor_layer_probe(struct doctor_layer *l, int timeout_ms);
struct json_object *doctor_layer_json(const struct doctor_layer *l);
void doctor_layer_print(FILE *f, const struct doctor_layer *l);

/* ---- verdicts ------------------------------------------------------------ */

struct doctor_wl;
struct doctor_pw;

struct doctor_report {
	struct doctor_kernel kernel;
	struct doctor_vk vk;
	struct doctor_egl egl;
	bool egl_built;
	struct doctor_layer layer;
	const struct doctor_wl *wl; /* NULL when not built in */
	const struct doctor_pw *pw;
};

#define DOCTOR_MAX_VERDICTS (2 * DOCTOR_MAX_VK + 4)

struct doctor_verdict {
	char path[48];     /* stable id: "vulkan-to-compositor", ... */
	char subject[256]; /* the device or display it is about, "" for none */
	enum doctor_tri ordered;
	char by[256], risk[256], advice[512];
};

int doctor_verdicts(const struct doctor_report *r, struct doctor_verdict *v, int max);
struct json_object *doctor_verdicts_json(const struct doctor_verdict *v, int n);
void doctor_verdicts_print(FILE *f, const struct doctor_verdict *v, int n);

#endif
