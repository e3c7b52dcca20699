/* SPDX-License-Identifier: MIT */
/*
 * The protocol tables: every <interface> of every Wayland protocol XML found,
 * read with expat, reduced to what the wire needs — each request's and
 * event's argument kinds, the interfaces of new_id and object arguments, and
 * whether it is a destructor. An interface found twice (two copies of a
 * protocol, an old and a new one) keeps its highest version.
 */
#include <dirent.h>
#include <errno.h>
#include <expat.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy.h"

/* The parse state of one file. */
struct reader {
	struct pxy_protocols *p;
	struct pxy_iface *iface; /* being read, or NULL */
	struct pxy_msg *msg;     /* being read, or NULL */
	int error;               /* first error, 0 if none */
};

static const char *
attr(const char **atts, const char *name)
{
	for (; atts[0]; atts += 2)
		if (strcmp(atts[0], name) == 0)
			return atts[1];
	return NULL;
}

static void
iface_free(struct pxy_iface *i)
{
	struct pxy_msg *lists[2] = { i->requests, i->events };
	uint32_t counts[2] = { i->n_requests, i->n_events };

	for (int l = 0; l < 2; l++) {
		for (uint32_t m = 0; m < counts[l]; m++) {
			free(lists[l][m].name);
			for (int a = 0; a < PXY_MAX_ARGS; a++)
				free(lists[l][m].types[a]);
		}
		free(lists[l]);
	}
	free(i->name);
	free(i);
}

static struct pxy_msg *
msg_add(struct reader *r, bool event, const char **atts)
{
	struct pxy_iface *i = r->iface;
	struct pxy_msg **list = event ? &i->events : &i->requests;
	uint32_t *n = event ? &i->n_events : &i->n_requests;
	struct pxy_msg *grown = realloc(*list, (*n + 1) * sizeof(**list));
	const char *name = attr(atts, "name"), *type = attr(atts, "type");
	struct pxy_msg *m;

	if (!grown)
		return NULL;
	*list = grown;
	m = &grown[(*n)++];
	memset(m, 0, sizeof(*m));
	m->name = strdup(name ? name : "?");
	m->destructor = type && strcmp(type, "destructor") == 0;
	return m->name ? m : NULL;
}

static int
arg_add(struct pxy_msg *m, const char **atts)
{
	const char *type = attr(atts, "type"), *iface = attr(atts, "interface");
	const char *null = attr(atts, "allow-null");
	size_t n = strlen(m->sig);
	char kind;

	if (!type || n >= PXY_MAX_ARGS)
		return -EINVAL;
	if (strcmp(type, "int") == 0)
		kind = PXY_ARG_INT;
	else if (strcmp(type, "uint") == 0)
		kind = PXY_ARG_UINT;
	else if (strcmp(type, "fixed") == 0)
		kind = PXY_ARG_FIXED;
	else if (strcmp(type, "string") == 0)
		kind = PXY_ARG_STRING;
	else if (strcmp(type, "object") == 0)
		kind = PXY_ARG_OBJECT;
	else if (strcmp(type, "new_id") == 0)
		kind = iface ? PXY_ARG_NEW_ID : PXY_ARG_NEW_ID_ANY;
	else if (strcmp(type, "array") == 0)
		kind = PXY_ARG_ARRAY;
	else if (strcmp(type, "fd") == 0)
		kind = PXY_ARG_FD;
	else
		return -EINVAL;
	m->sig[n] = kind;
	if (null && strcmp(null, "true") == 0)
		m->nullable |= 1u << n;
	if (iface && (kind == PXY_ARG_OBJECT || kind == PXY_ARG_NEW_ID)) {
		m->types[n] = strdup(iface);
		if (!m->types[n])
			return -ENOMEM;
	}
	return 0;
}

static void
on_start(void *data, const char *el, const char **atts)
{
	struct reader *r = data;
	const char *name, *version;

	if (r->error)
		return;
	if (strcmp(el, "interface") == 0) {
		name = attr(atts, "name");
		version = attr(atts, "version");
		r->iface = calloc(1, sizeof(*r->iface));
		if (!r->iface || !name) {
			r->error = r->iface ? -EINVAL : -ENOMEM;
			return;
		}
		r->iface->name = strdup(name);
		r->iface->version = version ? (uint32_t)strtoul(version, NULL, 10) : 1;
		if (!r->iface->name)
			r->error = -ENOMEM;
	} else if (r->iface && (strcmp(el, "request") == 0 || strcmp(el, "event") == 0)) {
		r->msg = msg_add(r, el[0] == 'e', atts);
		if (!r->msg)
			r->error = -ENOMEM;
	} else if (r->msg && strcmp(el, "arg") == 0) {
		r->error = arg_add(r->msg, atts);
	}
}

/* Keep iface in p: a new name, or a higher version of one already there. */
static int
iface_keep(struct pxy_protocols *p, struct pxy_iface *iface)
{
	for (size_t k = 0; k < p->n; k++) {
		if (strcmp(p->ifaces[k]->name, iface->name) != 0)
			continue;
		if (p->ifaces[k]->version >= iface->version) {
			iface_free(iface);
		} else {
			iface_free(p->ifaces[k]);
			p->ifaces[k] = iface;
		}
		return 0;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct pxy_iface **grown = realloc(p->ifaces, cap * sizeof(*grown));

		if (!grown) {
			iface_free(iface);
			return -ENOMEM;
		}
		p->ifaces = grown;
		p->cap = cap;
	}
	p->ifaces[p->n++] = iface;
	return 0;
}

static void
on_end(void *data, const char *el)
{
	struct reader *r = data;

	if (strcmp(el, "request") == 0 || strcmp(el, "event") == 0) {
		r->msg = NULL;
	} else if (strcmp(el, "interface") == 0 && r->iface) {
		if (r->error)
			iface_free(r->iface);
		else
			r->error = iface_keep(r->p, r->iface);
		r->iface = NULL;
	}
}

int
pxy_protocols_load_file(struct pxy_protocols *p, const char *path)
{
	struct reader r = { .p = p };
	XML_Parser xp;
	char buf[8192];
	int fd, ret = 0;
	ssize_t n;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	xp = XML_ParserCreate(NULL);
	if (!xp) {
		close(fd);
		return -ENOMEM;
	}
	XML_SetUserData(xp, &r);
	XML_SetElementHandler(xp, on_start, on_end);
	do {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			break;
		}
		if (XML_Parse(xp, buf, (int)n, n == 0) == XML_STATUS_ERROR) {
			ret = -EINVAL;
			break;
		}
	} while (n > 0 && !r.error);
	if (r.iface) /* a file cut short inside an interface */
		iface_free(r.iface);
	XML_ParserFree(xp);
	close(fd);
	return ret ? ret : r.error;
}

static bool
is_xml(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && strcmp(name + n - 4, ".xml") == 0;
}

/* Every *.xml below dir, to a depth of 4 (wayland-protocols: stable/NAME/NAME.xml). */
static int
load_dir(struct pxy_protocols *p, const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	char path[4096];

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (stat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 4) {
			load_dir(p, path, depth + 1);
		} else if (S_ISREG(st.st_mode) && is_xml(e->d_name)) {
			if (pxy_protocols_load_file(p, path) == 0)
				p->files_read++;
			else
				p->files_failed++;
		}
	}
	closedir(d);
	return 0;
}

int
pxy_protocols_load(struct pxy_protocols *p, const char *dirs)
{
	char *copy = strdup(dirs), *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
		load_dir(p, dir, 0);
	free(copy);
	return 0;
}

const struct pxy_iface *
pxy_protocols_find(const struct pxy_protocols *p, const char *name)
{
	for (size_t k = 0; k < p->n; k++)
		if (strcmp(p->ifaces[k]->name, name) == 0)
			return p->ifaces[k];
	return NULL;
}

void
pxy_protocols_resolve(struct pxy_protocols *p)
{
	for (size_t k = 0; k < p->n; k++) {
		struct pxy_iface *i = p->ifaces[k];
		struct pxy_msg *lists[2] = { i->requests, i->events };
		uint32_t counts[2] = { i->n_requests, i->n_events };

		for (int l = 0; l < 2; l++)
			for (uint32_t m = 0; m < counts[l]; m++)
				for (int a = 0; a < PXY_MAX_ARGS; a++)
					if (lists[l][m].types[a])
						lists[l][m].ifaces[a] =
							pxy_protocols_find(p, lists[l][m].types[a]);
	}
}

void
pxy_protocols_finish(struct pxy_protocols *p)
{
	for (size_t k = 0; k < p->n; k++)
		iface_free(p->ifaces[k]);
	free(p->ifaces);
	memset(p, 0, sizeof(*p));
}

int
pxy_msg_index(const struct pxy_msg *msgs, uint32_t n, const char *name)
{
	for (uint32_t k = 0; k < n; k++)
		if (strcmp(msgs[k].name, name) == 0)
			return (int)k;
	return -1;
}
