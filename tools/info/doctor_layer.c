/* SPDX-License-Identifier: MIT */
/*
 * doctor, the syncbridge layer as the Vulkan loader would find it: its
 * manifests in the loader's folders (Linux: $XDG_CONFIG_HOME, $XDG_CONFIG_DIRS,
 * /etc, $XDG_DATA_HOME, $XDG_DATA_DIRS, each + vulkan/implicit_layer.d or
 * explicit_layer.d; VK_LAYER_PATH instead of the explicit folders and
 * VK_ADD_LAYER_PATH besides them), whether the library each names loads
 * (dlopen in a probe child: a layer's constructors are not ours to run),
 * and whether it is enabled and by what.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "doctor.h"
#include "info.h"

#define LAYER_NAME "VK_LAYER_SYNCBRIDGE_implicit_sync"

struct folders {
	int n;
	char dir[48][512];
	bool implicit[48];
};

static void
add(struct folders *f, const char *dir, const char *sub, bool implicit)
{
	char path[512];

	if (!dir || !*dir || f->n >= 48)
		return;
	snprintf(path, sizeof(path), "%s%s", dir, sub);
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->dir[i], path) == 0)
			return;
	snprintf(f->dir[f->n], sizeof(f->dir[0]), "%s", path);
	f->implicit[f->n++] = implicit;
}

/* Each folder of the ':'-separated list (or dflt when unset), + sub. */
static void
add_list(struct folders *f, const char *list, const char *dflt, const char *sub, bool implicit)
{
	char buf[4096], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list && *list ? list : dflt);
	for (char *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save))
		add(f, d, sub, implicit);
}

static void
loader_folders(struct folders *f)
{
	const char *home = getenv("HOME");
	char cfg_home[512] = "", data_home[512] = "";

	if (home) {
		snprintf(cfg_home, sizeof(cfg_home), "%s/.config", home);
		snprintf(data_home, sizeof(data_home), "%s/.local/share", home);
	}
	for (int k = 0; k < 2; k++) {
		bool implicit = k == 0;
		const char *sub =
			implicit ? "/vulkan/implicit_layer.d" : "/vulkan/explicit_layer.d";

		if (!implicit && getenv("VK_LAYER_PATH")) {
			add_list(f, getenv("VK_LAYER_PATH"), "", "", false);
			continue;
		}
		add_list(f, getenv("XDG_CONFIG_HOME"), cfg_home, sub, implicit);
		add_list(f, getenv("XDG_CONFIG_DIRS"), "/etc/xdg", sub, implicit);
		add(f, "/etc", sub, implicit);
		add_list(f, getenv("XDG_DATA_HOME"), data_home, sub, implicit);
		add_list(f, getenv("XDG_DATA_DIRS"), "/usr/local/share:/usr/share", sub, implicit);
		if (!implicit)
			add_list(f, getenv("VK_ADD_LAYER_PATH"), "", "", false);
	}
}

/* Our layer's manifest at path into m: true if it is one. */
static bool
read_manifest(const char *path, bool implicit, struct doctor_manifest *m)
{
	struct json_object *doc = json_object_from_file(path), *layer, *v;
	bool ours = false;

	if (!doc)
		return false;
	if (json_object_object_get_ex(doc, "layer", &layer) &&
	    json_object_object_get_ex(layer, "name", &v) &&
	    strcmp(json_object_get_string(v), LAYER_NAME) == 0) {
		ours = true;
		memset(m, 0, sizeof(*m));
		snprintf(m->path, sizeof(m->path), "%.*s", (int)sizeof(m->path) - 1, path);
		m->implicit = implicit;
		if (json_object_object_get_ex(layer, "library_path", &v))
			snprintf(m->library, sizeof(m->library), "%s", json_object_get_string(v));
		if (json_object_object_get_ex(layer, "disable_environment", &v) &&
		    json_object_is_type(v, json_type_object)) {
			json_object_object_foreach(v, key, val)
			{
				(void)val;
				snprintf(m->disable_env, sizeof(m->disable_env), "%s", key);
				break;
			}
		}
	}
	json_object_put(doc);
	return ours;
}

static void
scan(struct doctor_layer *l, const char *dir, bool implicit)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[1024];

	if (!d)
		return;
	while ((e = readdir(d)) && l->n < DOCTOR_MAX_MANIFESTS) {
		size_t len = strlen(e->d_name);

		if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (read_manifest(path, implicit, &l->m[l->n]))
			l->n++;
	}
	closedir(d);
}

/* The probe child: dlopen each manifest's library as the loader would. */
static void
load_child(void *out, const void *arg)
{
	struct doctor_layer *l = out;

	(void)arg;
	for (int i = 0; i < l->n; i++) {
		struct doctor_manifest *m = &l->m[i];
		char lib[1100];
		void *h;

		if (m->library[0] != '/' && strchr(m->library, '/')) {
			/* relative to the manifest's folder (the loader's rule) */
			const char *slash = strrchr(m->path, '/');

			snprintf(lib, sizeof(lib), "%.*s/%s", (int)(slash - m->path), m->path,
				 m->library);
		} else {
			snprintf(lib, sizeof(lib), "%s", m->library);
		}
		h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			doctor_item_set(&m->loads, DOCTOR_NO, "%s", dlerror());
			continue;
		}
		doctor_item_set(&m->loads,
				dlsym(h, "vkNegotiateLoaderLayerInterfaceVersion") ? DOCTOR_YES
										   : DOCTOR_NO,
				"%s",
				dlsym(h, "vkNegotiateLoaderLayerInterfaceVersion")
					? lib
					: "no vkNegotiateLoaderLayerInterfaceVersion in it");
		dlclose(h);
	}
}

/* Whether the loader's comma-separated filter list names our layer (or a class of it). */
static bool
filter_names(const char *list, bool implicit)
{
	char buf[1024], *save = NULL;

	if (!list)
		return false;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		size_t n = strlen(w);

		if (strcmp(w, LAYER_NAME) == 0 || strcmp(w, "~all~") == 0 ||
		    (implicit && strcmp(w, "~implicit~") == 0) ||
		    (n > 0 && w[n - 1] == '*' && strncmp(w, LAYER_NAME, n - 1) == 0))
			return true;
	}
	return false;
}

static void
decide(struct doctor_layer *l)
{
	const struct doctor_manifest *imp = NULL, *exp = NULL;
	const char *v;

	for (int i = 0; i < l->n; i++) {
		if (l->m[i].implicit && !imp)
			imp = &l->m[i];
		if (!l->m[i].implicit && !exp)
			exp = &l->m[i];
	}
	if (!imp && !exp) {
		doctor_item_set(&l->installed, DOCTOR_NO, "no manifest names " LAYER_NAME);
		doctor_item_set(&l->enabled, DOCTOR_NO, "not installed");
		return;
	}
	doctor_item_set(&l->installed, DOCTOR_YES, "%s", (imp ? imp : exp)->path);
	if (filter_names(getenv("VK_LOADER_LAYERS_DISABLE"), imp != NULL))
		doctor_item_set(&l->enabled, DOCTOR_NO, "disabled by VK_LOADER_LAYERS_DISABLE=%s",
				getenv("VK_LOADER_LAYERS_DISABLE"));
	else if (filter_names(getenv("VK_LOADER_LAYERS_ENABLE"), false))
		doctor_item_set(&l->enabled, DOCTOR_YES, "by VK_LOADER_LAYERS_ENABLE");
	else if (filter_names(getenv("VK_INSTANCE_LAYERS"), false))
		doctor_item_set(&l->enabled, DOCTOR_YES, "by VK_INSTANCE_LAYERS");
	else if (imp && imp->disable_env[0] && (v = getenv(imp->disable_env)))
		doctor_item_set(&l->enabled, DOCTOR_NO,
				"disabled by %s=%s (the loader only asks "
				"whether it is set)",
				imp->disable_env, v);
	else if (imp)
		doctor_item_set(&l->enabled, DOCTOR_YES,
				"implicit manifest: on in every Vulkan app%s%s",
				imp->disable_env[0] ? "; set " : "",
				imp->disable_env[0] ? imp->disable_env : "");
	else
		doctor_item_set(&l->enabled, DOCTOR_NO,
				"explicit manifest only: an app names it, or "
				"VK_INSTANCE_LAYERS=" LAYER_NAME);
	/* the layer itself reads SYNCBRIDGE_DISABLE (with values: 0, false, no
	 * or empty keep it on) and then passes everything through */
	v = getenv("SYNCBRIDGE_DISABLE");
	if (l->enabled.v == DOCTOR_YES && v && *v && strcmp(v, "0") != 0 &&
	    strcasecmp(v, "false") != 0 && strcasecmp(v, "no") != 0)
		doctor_item_set(&l->enabled, DOCTOR_NO,
				"SYNCBRIDGE_DISABLE=%s: the layer passes "
				"everything through",
				v);
	if (l->enabled.v == DOCTOR_YES) {
		bool loads = false;

		for (int i = 0; i < l->n; i++)
			loads |= l->m[i].loads.v == DOCTOR_YES;
		if (!loads)
			doctor_item_set(&l->enabled, DOCTOR_NO,
					"enabled, but no manifest's library "
					"loads");
	}
}

void
doctor_layer_probe(struct doctor_layer *l, int timeout_ms)
{
	struct folders *f = calloc(1, sizeof(*f));
	char why[256];
	size_t used = 0;

	memset(l, 0, sizeof(*l));
	if (!f)
		return;
	loader_folders(f);
	for (int i = 0; i < f->n; i++) {
		scan(l, f->dir[i], f->implicit[i]);
		used += (size_t)snprintf(l->searched + used,
					 used < sizeof(l->searched) ? sizeof(l->searched) - used
								    : 0,
					 "%s%s", i ? ":" : "", f->dir[i]);
		if (used >= sizeof(l->searched))
			used = sizeof(l->searched);
	}
	free(f);
	for (int i = 0; i < l->n; i++)
		doctor_item_set(&l->m[i].loads, DOCTOR_UNKNOWN, "not tried");
	if (l->n &&
	    doctor_run("layer", load_child, NULL, l, sizeof(*l), timeout_ms, why, sizeof(why)) < 0)
		for (int i = 0; i < l->n; i++)
			doctor_item_set(&l->m[i].loads, DOCTOR_UNKNOWN, "%s", why);
	decide(l);
}

struct json_object *
doctor_layer_json(const struct doctor_layer *l)
{
	struct json_object *o = json_object_new_object(), *ms = json_object_new_array();

	json_object_object_add(o, "name", json_object_new_string(LAYER_NAME));
	json_object_object_add(o, "installed", doctor_item_json(&l->installed));
	json_object_object_add(o, "enabled", doctor_item_json(&l->enabled));
	for (int i = 0; i < l->n; i++) {
		const struct doctor_manifest *m = &l->m[i];
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "path", info_json_str(m->path));
		json_object_object_add(
			j, "kind", json_object_new_string(m->implicit ? "implicit" : "explicit"));
		json_object_object_add(j, "library", info_json_str(m->library));
		json_object_object_add(j, "disable_environment",
				       m->disable_env[0] ? info_json_str(m->disable_env) : NULL);
		json_object_object_add(j, "loads", doctor_item_json(&m->loads));
		json_object_array_add(ms, j);
	}
	json_object_object_add(o, "manifests", ms);
	json_object_object_add(o, "searched", info_json_str(l->searched));
	return o;
}

void
doctor_layer_print(FILE *f, const struct doctor_layer *l)
{
	fprintf(f, "syncbridge layer (" LAYER_NAME "):\n");
	doctor_item_print(f, "  ", "installed", &l->installed);
	doctor_item_print(f, "  ", "enabled", &l->enabled);
	for (int i = 0; i < l->n; i++)
		fprintf(f, "  %s manifest %s\n    library %s: loads %s (%s)\n",
			l->m[i].implicit ? "implicit" : "explicit", l->m[i].path, l->m[i].library,
			doctor_tri_word(l->m[i].loads.v), l->m[i].loads.why);
	if (l->n == 0)
		fprintf(f, "  searched: %s\n", l->searched);
}
