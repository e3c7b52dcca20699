/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-info doctor [--json] [--timeout-ms N]
 *
 * The one command to run when frames tear or flicker: the kernel's fence
 * uapi, each Vulkan device and the EGL display measured by short live
 * probes, the syncbridge layer's installation, the Wayland compositor and
 * PipeWire (where built in), then a verdict per path (docs/inspect.md,
 * "doctor"). Exit 0 whatever it found, 1 when doctor itself failed, 2 usage.
 */
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "info.h"

#ifdef HAVE_DOCTOR_WL
#include "doctor_wl.h"
#endif
#ifdef HAVE_DOCTOR_PW
#include "doctor_pw.h"
#endif

#define DOCTOR_TIMEOUT_MS 20000

void
info_doctor_usage(FILE *f)
{
	fprintf(f,
		"usage: " INFO_PROG " doctor [--json] [--timeout-ms N]\n"
		"\n"
		"What keeps frames ordered on this machine, and what would tear: the kernel's\n"
		"fence uapi and DRM nodes; each Vulkan device and the EGL display, measured by\n"
		"short live probes (does a dma-buf it wrote carry its fence? does it wait for a\n"
		"fence already on a dma-buf it reads?); the syncbridge layer (installed where,\n"
		"enabled or not, active on which device); the Wayland compositor and PipeWire;\n"
		"then a verdict per path with what to turn on.\n"
		"\n"
		"  --json           one JSON document on stdout (keys: docs/inspect.md)\n"
		"  --timeout-ms N   time limit of each probe (a child process), default %d\n"
		"\n"
		"No root needed; what cannot be known says why.\n"
		"Exit status: 0 doctor ran (whatever it found), 1 it failed, 2 usage.\n",
		DOCTOR_TIMEOUT_MS);
}

static int
parse_args(int argc, char **argv, bool *json, int *timeout_ms)
{
	for (int i = 1; i < argc; i++) {
		char *end = NULL;

		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			info_doctor_usage(stdout);
			return -1;
		} else if (strcmp(argv[i], "--json") == 0) {
			*json = true;
		} else if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc) {
			long v = strtol(argv[++i], &end, 10);

			if (!*argv[i] || *end || v < 1 || v > 600000) {
				info_err("doctor: bad value '%s' for --timeout-ms (want 1..600000) "
					 "(see: " INFO_PROG " help doctor)", argv[i]);
				return INFO_EXIT_USAGE;
			}
			*timeout_ms = (int)v;
		} else {
			/* one line, as every command's usage error (docs/inspect.md) */
			info_err("doctor: %s '%s' (see: " INFO_PROG " help doctor)",
				 strcmp(argv[i], "--timeout-ms") == 0 ? "missing value for"
				 : argv[i][0] == '-'                  ? "unknown option"
								      : "unexpected argument",
				 argv[i]);
			return INFO_EXIT_USAGE;
		}
	}
	return 0;
}

static struct json_object *
report_json(const struct doctor_report *r, const struct doctor_verdict *v, int n_verdicts)
{
	struct json_object *doc = json_object_new_object();

	json_object_object_add(doc, "kind", json_object_new_string("doctor"));
	json_object_object_add(doc, "version", json_object_new_string(sb_library_get_version()));
	json_object_object_add(doc, "kernel", doctor_kernel_json(&r->kernel));
#ifdef HAVE_DOCTOR_VK
	json_object_object_add(doc, "vulkan", doctor_vk_json(&r->vk));
#else
	struct json_object *vk = json_object_new_object();

	json_object_object_add(vk, "available", doctor_item_json(&r->vk.available));
	json_object_object_add(vk, "devices", json_object_new_array());
	json_object_object_add(doc, "vulkan", vk);
#endif
	json_object_object_add(doc, "egl", r->egl_built ? doctor_egl_json(&r->egl) : NULL);
	json_object_object_add(doc, "layer", doctor_layer_json(&r->layer));
#ifdef HAVE_DOCTOR_WL
	json_object_object_add(doc, "wayland", doctor_wl_json(r->wl));
#else
	json_object_object_add(doc, "wayland", NULL);
#endif
#ifdef HAVE_DOCTOR_PW
	json_object_object_add(doc, "pipewire", doctor_pw_json(r->pw));
#else
	json_object_object_add(doc, "pipewire", NULL);
#endif
	json_object_object_add(doc, "verdicts", doctor_verdicts_json(v, n_verdicts));
	return doc;
}

static void
report_print(FILE *f, const struct doctor_report *r, const struct doctor_verdict *v, int n_verdicts)
{
	doctor_kernel_print(f, &r->kernel);
	fputc('\n', f);
#ifdef HAVE_DOCTOR_VK
	doctor_vk_print(f, &r->vk);
#else
	fprintf(f, "Vulkan: %s\n", r->vk.available.why);
#endif
	fputc('\n', f);
	if (r->egl_built)
		doctor_egl_print(f, &r->egl);
	else
		fprintf(f, "EGL: not built into this " INFO_PROG "\n");
	fputc('\n', f);
	doctor_layer_print(f, &r->layer);
	fputc('\n', f);
#ifdef HAVE_DOCTOR_WL
	doctor_wl_print(f, r->wl);
#else
	fprintf(f, "Wayland: not built into this " INFO_PROG "\n");
#endif
#ifdef HAVE_DOCTOR_PW
	doctor_pw_print(f, r->pw);
#else
	fprintf(f, "PipeWire: not built into this " INFO_PROG "\n");
#endif
	fputc('\n', f);
	doctor_verdicts_print(f, v, n_verdicts);
}

int
info_cmd_doctor(int argc, char **argv, const struct info_opts *o)
{
	bool json = o->json;
	int timeout_ms = DOCTOR_TIMEOUT_MS, ret, n;
	struct doctor_report *r;
	struct doctor_verdict v[DOCTOR_MAX_VERDICTS];

	ret = parse_args(argc, argv, &json, &timeout_ms);
	if (ret != 0)
		return ret < 0 ? info_stdout_status() : ret;
	r = calloc(1, sizeof(*r));
	if (!r) {
		info_err("doctor: out of memory");
		return INFO_EXIT_FAIL;
	}
	doctor_kernel_probe(&r->kernel);
#ifdef HAVE_DOCTOR_VK
	doctor_vk_probe(&r->vk, timeout_ms);
#else
	doctor_item_set(&r->vk.available, DOCTOR_UNKNOWN, "not built with Vulkan");
#endif
#ifdef HAVE_DOCTOR_EGL
	r->egl_built = true;
	doctor_egl_probe(&r->egl, timeout_ms);
#endif
	doctor_layer_probe(&r->layer, timeout_ms);
#ifdef HAVE_DOCTOR_WL
	static struct doctor_wl wl;
	doctor_wl_probe(&wl, timeout_ms);
	r->wl = &wl;
#endif
#ifdef HAVE_DOCTOR_PW
	static struct doctor_pw pw;
	doctor_pw_probe(&pw, timeout_ms);
	r->pw = &pw;
#endif
	n = doctor_verdicts(r, v, DOCTOR_MAX_VERDICTS);
	if (json) {
		ret = info_json_print(report_json(r, v, n));
	} else {
		report_print(stdout, r, v, n);
		ret = info_stdout_status();
	}
	free(r);
	return ret;
}
