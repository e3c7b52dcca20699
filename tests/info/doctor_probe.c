/* SPDX-License-Identifier: MIT */
/*
 * Test-only driver of doctor's Wayland and PipeWire probes (tools/info/
 * doctor_wl.c, doctor_pw.c), so the tests can run them before and without
 * `syncbridge-info doctor`. It prints the JSON shape doctor gives those
 * probes: {"wayland": {...}, "pipewire": {...}} (keys the struct fields), so
 * the checks (doctor_probe_test.py, doctor-wl-peer.sh) switch to
 * `syncbridge-info doctor --json` by changing the command only.
 *
 *   doctor-probe [--timeout-ms N] [--text] [wl|pw|all]      (default all)
 *   doctor-probe rule DAEMON_VERSION LIBRARY_VERSION   doctor_pw_sync_timeline()
 *
 * Exit: 0 (whatever the probes found), 2 usage, 77 the probe was not built.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "json_out.h"
#ifdef HAVE_DOCTOR_WL
#include "doctor_wl.h"
#endif
#ifdef HAVE_DOCTOR_PW
#include "doctor_pw.h"
#endif

static int
usage(void)
{
	fprintf(stderr, "usage: doctor-probe [--timeout-ms N] [--text] [wl|pw|all]\n"
			"       doctor-probe rule DAEMON_VERSION LIBRARY_VERSION\n");
	return 2;
}

static int
probe(const char *what, int timeout_ms, bool text)
{
	struct json_object *doc = json_object_new_object();
	bool wl = !strcmp(what, "wl") || !strcmp(what, "all");
	bool pw = !strcmp(what, "pw") || !strcmp(what, "all");

#ifdef HAVE_DOCTOR_WL
	if (wl) {
		struct doctor_wl r;

		doctor_wl_probe(&r, timeout_ms);
		if (text)
			doctor_wl_print(stdout, &r);
		json_object_object_add(doc, "wayland", doctor_wl_json(&r));
		wl = false;
	}
#endif
#ifdef HAVE_DOCTOR_PW
	if (pw) {
		struct doctor_pw r;

		doctor_pw_probe(&r, timeout_ms);
		if (text)
			doctor_pw_print(stdout, &r);
		json_object_object_add(doc, "pipewire", doctor_pw_json(&r));
		pw = false;
	}
#endif
	if ((wl || pw) && strcmp(what, "all") != 0) {
		json_object_put(doc);
		printf("SKIP: the %s probe is not built (its client library was not found)\n", what);
		return 77;
	}
	if (!text)
		info_json_write(doc, stdout, true);
	json_object_put(doc);
	return 0;
}

int
main(int argc, char **argv)
{
	int timeout_ms = 5000, i = 1;
	bool text = false;
	const char *what;

	if (argc == 4 && strcmp(argv[1], "rule") == 0) {
#ifdef HAVE_DOCTOR_PW
		printf("%d\n", doctor_pw_sync_timeline(argv[2], argv[3]));
		return 0;
#else
		printf("SKIP: the PipeWire probe is not built\n");
		return 77;
#endif
	}
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc)
			timeout_ms = atoi(argv[++i]);
		else if (strcmp(argv[i], "--text") == 0)
			text = true;
		else
			return usage();
	}
	what = i < argc ? argv[i] : "all";
	if (i < argc - 1 || timeout_ms <= 0 ||
	    (strcmp(what, "wl") && strcmp(what, "pw") && strcmp(what, "all")))
		return usage();
	return probe(what, timeout_ms, text);
}
