/* SPDX-License-Identifier: MIT */
/* The layer tests' side of the testbed's Vulkan app (see vkt.h). */
#include "vkt.h"

#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "kernel.h"

/* Build-tree locations, from meson (tests/layer/meson.build). */
#ifndef SBL_TEST_XDG_DIR
#error "SBL_TEST_XDG_DIR must be defined"
#endif
#ifndef SBL_TEST_IMPLICIT_DIR
#error "SBL_TEST_IMPLICIT_DIR must be defined"
#endif
#ifndef SBL_TEST_EXPLICIT_DIR
#error "SBL_TEST_EXPLICIT_DIR must be defined"
#endif
#ifndef SBL_TEST_LAYER_PATH
#error "SBL_TEST_LAYER_PATH must be defined"
#endif

/* The options that take no value, and the field each one sets. */
static const struct {
	const char *name;
	size_t field;
} bool_options[] = {
	{ "--control", offsetof(struct vkt_options, control) },
	{ "--image", offsetof(struct vkt_options, image) },
	{ "--sync2", offsetof(struct vkt_options, sync2) },
	{ "--secondary", offsetof(struct vkt_options, secondary) },
	{ "--no-barriers", offsetof(struct vkt_options, no_barriers) },
	{ "--validation", offsetof(struct vkt_options, validation) },
	{ "--by-name", offsetof(struct vkt_options, by_name) },
};

static bool
parse_flag(const char *a, struct vkt_options *opt)
{
	for (size_t k = 0; k < sizeof(bool_options) / sizeof(bool_options[0]); k++) {
		if (strcmp(a, bool_options[k].name) == 0) {
			*(bool *)((char *)opt + bool_options[k].field) = true;
			return true;
		}
	}
	return false;
}

void
vkt_parse_args(int argc, char **argv, struct vkt_options *opt)
{
	memset(opt, 0, sizeof(*opt));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool value = i + 1 < argc;
		if (parse_flag(a, opt))
			continue;
		if (strcmp(a, "--fault") == 0 && value)
			opt->fault = argv[++i];
		else if (strcmp(a, "--iterations") == 0 && value)
			opt->iterations = strtol(argv[++i], NULL, 0);
		else if (strcmp(a, "--seconds") == 0 && value)
			opt->seconds = strtod(argv[++i], NULL);
		else {
			fprintf(stderr, "unknown argument %s\n", a);
			exit(2);
		}
	}
}

static void
prepend_path(const char *var, const char *dir, const char *fallback)
{
	const char *old = getenv(var);
	char buf[4096];

	if (old && *old)
		snprintf(buf, sizeof(buf), "%s:%s", dir, old);
	else if (fallback)
		snprintf(buf, sizeof(buf), "%s:%s", dir, fallback);
	else
		snprintf(buf, sizeof(buf), "%s", dir);
	setenv(var, buf, 1);
}

void
vkt_env_activate(enum vkt_activation how, const char *extra_layers)
{
	char layers[512] = "";

	unsetenv("VK_INSTANCE_LAYERS");
	unsetenv("VK_LAYER_PATH");
	unsetenv("VK_LOADER_LAYERS_ENABLE");
	unsetenv("VK_LOADER_LAYERS_DISABLE");
	unsetenv("VK_ADD_IMPLICIT_LAYER_PATH");
	unsetenv("VK_ADD_LAYER_PATH");

	if (how == VKT_ACTIVATE_IMPLICIT || how == VKT_ACTIVATE_BOTH) {
		/* Keep the XDG default after ours: the drivers' manifests live there. */
		prepend_path("XDG_DATA_DIRS", SBL_TEST_XDG_DIR, "/usr/local/share:/usr/share");
		prepend_path("VK_ADD_IMPLICIT_LAYER_PATH", SBL_TEST_IMPLICIT_DIR, NULL);
	}
	if (how == VKT_ACTIVATE_BY_NAME || how == VKT_ACTIVATE_BOTH) {
		prepend_path("VK_ADD_LAYER_PATH", SBL_TEST_EXPLICIT_DIR, NULL);
		snprintf(layers, sizeof(layers), "%s", VKT_LAYER_NAME);
	}
	if (how == VKT_ACTIVATE_APP) {
		setenv("VK_ADD_LAYER_PATH", SBL_TEST_EXPLICIT_DIR, 1);
		const char *xdg = getenv("XDG_DATA_DIRS");
		if (xdg && strstr(xdg, "manifest"))
			setenv("XDG_DATA_DIRS", "/usr/local/share:/usr/share", 1);
	}
	if (extra_layers && *extra_layers) {
		size_t len = strlen(layers);
		snprintf(layers + len, sizeof(layers) - len, "%s%s", len ? ":" : "", extra_layers);
	}
	if (*layers)
		setenv("VK_INSTANCE_LAYERS", layers, 1);
}

void
vkt_env_from_options(const struct vkt_options *opt)
{
	vkt_env_activate(opt->by_name ? VKT_ACTIVATE_BY_NAME : VKT_ACTIVATE_IMPLICIT,
			 opt->validation ? VKT_VALIDATION_LAYER : NULL);
	unsetenv("SYNCBRIDGE_DISABLE");
	unsetenv("SYNCBRIDGE_MODE");
	if (opt->control)
		setenv("SYNCBRIDGE_DISABLE", "1", 1);
	if (opt->no_barriers)
		setenv("SYNCBRIDGE_MODE", "all", 1);
	unsetenv("SYNCBRIDGE_LAYER_FAULTS");
	if (opt->fault) {
		setenv("SYNCBRIDGE_LAYER_FAULTS", opt->fault, 1);
		setenv("SYNCBRIDGE_DEBUG", "warn", 1);
	}
}

void
vkt_fault_begin(const struct vkt_options *opt)
{
	if (opt->fault)
		vkt_capture_begin();
}

void
vkt_fault_check(const struct vkt_options *opt, int *failures)
{
	if (!opt->fault)
		return;
	char *log = vkt_capture_end();
	int n = vkt_count(log, "on the CPU instead");
	printf("# fault %s: %d fallback warning(s)\n", opt->fault, n);
	if (n != 1) {
		printf("not ok - the layer should warn exactly once about its fallback\n");
		(*failures)++;
	}
	free(log);
}

int
vkt_start(int argc, char **argv, struct vkt_options *opt)
{
	vkt_parse_args(argc, argv, opt);
	vkt_env_from_options(opt);
	int vgem = sbk_vgem_open();
	if (vgem == -ENODEV)
		sb_test_skip("no vgem (run in the test guest)");
	REQUIRE(vgem >= 0, "open vgem: %s", strerror(-vgem));
	return vgem;
}

static int capture_saved_fd = -1;
static FILE *capture_file;

void
vkt_capture_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	REQUIRE(capture_file, "tmpfile");
	capture_saved_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	REQUIRE(capture_saved_fd >= 0, "dup stderr");
	REQUIRE(dup2(fileno(capture_file), 2) == 2, "dup2");
}

char *
vkt_capture_end(void)
{
	fflush(stderr);
	REQUIRE(dup2(capture_saved_fd, 2) == 2, "restore stderr");
	close(capture_saved_fd);
	capture_saved_fd = -1;

	long len = ftell(capture_file);
	if (len < 0)
		len = 0;
	char *text = calloc(1, (size_t)len + 1);
	REQUIRE(text, "calloc");
	rewind(capture_file);
	size_t got = fread(text, 1, (size_t)len, capture_file);
	text[got] = 0;
	fclose(capture_file);
	capture_file = NULL;
	/* Show what was captured, for the test log. */
	fputs(text, stderr);
	return text;
}

int
vkt_count(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

void
vkt_test_fail(struct vkt *t, int err)
{
	if (err == -ENODEV)
		sb_test_skip("%s", t->why);
	REQUIRE(0, "%s", t->why);
}

void
vkt_init(struct vkt *t, const struct vkt_options *opt, bool require_dmabuf)
{
	struct vkt_config cfg = {
		.app_name = "syncbridge-layer-test",
		.validation = opt && opt->validation,
		.require = require_dmabuf ? VKT_DMABUF : 0,
		.want = VKT_DMABUF | VKT_FOREIGN,
		.features = VKT_TIMELINE | VKT_SYNC2,
		.fail = vkt_test_fail,
	};
	vkt_create(t, &cfg);
}

static void *
deferred_main(void *arg)
{
	struct vkt_deferred *d = arg;

	if (d->when_told) {
		pthread_mutex_lock(&d->lock);
		while (!d->told)
			pthread_cond_wait(&d->cond, &d->lock);
		pthread_mutex_unlock(&d->lock);
	} else {
		sbk_sleep_ns(d->delay_ns);
	}
	d->fn(d->arg);
	return NULL;
}

void
vkt_deferred_start(struct vkt_deferred *d)
{
	d->told = false;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	REQUIRE(pthread_create(&d->thread, NULL, deferred_main, d) == 0, "pthread_create");
}

void
vkt_deferred_tell(struct vkt_deferred *d)
{
	pthread_mutex_lock(&d->lock);
	d->told = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

void
vkt_deferred_join(struct vkt_deferred *d)
{
	pthread_join(d->thread, NULL);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
}
