/* SPDX-License-Identifier: MIT */
/*
 * The tr_model's storage, below everything that fills it (trace_model.c,
 * trace_markers.c): init / free, growing arrays, threads, and fences looked
 * up by (context, seqno) through an open-addressing hash.
 */
#include "trace_model_internal.h"

#include <stdlib.h>
#include <string.h>

void
tr_model_init(struct tr_model *m)
{
	memset(m, 0, sizeof(*m));
	m->first_ns = m->last_ns = TR_NONE;
	m->begin_ns = m->end_ns = TR_NONE;
	m->entries_in_buffer = m->entries_written = -1;
}

void
tr_model_free(struct tr_model *m)
{
	for (size_t i = 0; i < m->nmarkers; i++) {
		free(m->markers[i].name);
		free(m->markers[i].args);
	}
	free(m->threads);
	free(m->fences);
	free(m->waits);
	free(m->markers);
	free(m->blocks);
	free(m->tracks);
	free(m->hash);
	free(m->unnumbered);
	free(m->followed);
	memset(m, 0, sizeof(*m));
}

bool
tr_model_grow(struct tr_model *m, void **arr, size_t n, size_t *cap, size_t size)
{
	void *na;
	size_t ncap;

	if (n < *cap)
		return true;
	ncap = *cap ? *cap * 2 : 64;
	na = realloc(*arr, ncap * size);
	if (!na) {
		m->failed = true;
		return false;
	}
	*arr = na;
	*cap = ncap;
	return true;
}

int
tr_model_thread(struct tr_model *m, const struct tr_line *l)
{
	struct tr_thread *t;

	for (size_t i = m->nthreads; i-- > 0;) {
		t = &m->threads[i];
		if (t->tid != l->tid)
			continue;
		/* "<...>" means the comm was not cached: keep a real name once seen. */
		if (strcmp(l->comm, "<...>") != 0 && strcmp(t->comm, l->comm) != 0)
			snprintf(t->comm, sizeof(t->comm), "%s", l->comm);
		if (l->tgid > 0)
			t->tgid = l->tgid;
		return (int)i;
	}
	if (!tr_model_grow(m, (void **)&m->threads, m->nthreads, &m->threads_cap,
			   sizeof(*m->threads)))
		return -1;
	t = &m->threads[m->nthreads];
	t->tid = l->tid;
	t->tgid = l->tgid > 0 ? l->tgid : (l->tid == 0 ? 0 : -1);
	snprintf(t->comm, sizeof(t->comm), "%s", l->comm);
	return (int)m->nthreads++;
}

static size_t
hash_key(uint64_t context, uint64_t seqno)
{
	uint64_t h =
		context * UINT64_C(0x9E3779B97F4A7C15) ^ (seqno + UINT64_C(0x632BE59BD9B4E019));

	h ^= h >> 29;
	return (size_t)h;
}

/* Insert or overwrite (context, seqno) -> idx. */
static void
hash_put(struct tr_model *m, size_t idx)
{
	const struct tr_fence *f = &m->fences[idx];
	size_t mask = m->hash_cap - 1;

	for (size_t i = hash_key(f->context, f->seqno) & mask;; i = (i + 1) & mask) {
		size_t slot = m->hash[i];

		if (!slot || (m->fences[slot - 1].context == f->context &&
			      m->fences[slot - 1].seqno == f->seqno)) {
			m->hash[i] = idx + 1;
			return;
		}
	}
}

int
tr_model_fence_find(const struct tr_model *m, uint64_t context, uint64_t seqno)
{
	size_t mask;

	if (!m->hash_cap)
		return -1;
	mask = m->hash_cap - 1;
	for (size_t i = hash_key(context, seqno) & mask;; i = (i + 1) & mask) {
		size_t slot = m->hash[i];

		if (!slot)
			return -1;
		if (m->fences[slot - 1].context == context && m->fences[slot - 1].seqno == seqno)
			return (int)(slot - 1);
	}
}

static bool
hash_reserve(struct tr_model *m)
{
	size_t ncap;
	size_t *nh;

	if ((m->nfences + 1) * 2 <= m->hash_cap)
		return true;
	ncap = m->hash_cap ? m->hash_cap * 2 : 256;
	nh = calloc(ncap, sizeof(*nh));
	if (!nh) {
		m->failed = true;
		return false;
	}
	free(m->hash);
	m->hash = nh;
	m->hash_cap = ncap;
	for (size_t i = 0; i < m->nfences; i++) /* later fences overwrite earlier ones */
		hash_put(m, i);
	return true;
}

void
tr_model_fence_renumber(struct tr_model *m, size_t idx, uint64_t seqno)
{
	/* The old key's slot now names a fence with another seqno: look-ups of
	 * the old key pass over it, as over any other key's slot. */
	m->fences[idx].seqno = seqno;
	hash_put(m, idx);
}

int
tr_model_fence_new(struct tr_model *m, const char *driver, const char *timeline, uint64_t context,
		   uint64_t seqno)
{
	struct tr_fence *f;

	if (!hash_reserve(m))
		return -1;
	if (!tr_model_grow(m, (void **)&m->fences, m->nfences, &m->fences_cap, sizeof(*m->fences)))
		return -1;
	f = &m->fences[m->nfences];
	memset(f, 0, sizeof(*f));
	snprintf(f->driver, sizeof(f->driver), "%s", driver);
	snprintf(f->timeline, sizeof(f->timeline), "%s", timeline);
	f->context = context;
	f->seqno = seqno;
	f->init_ns = f->emit_ns = f->enable_ns = f->signaled_ns = f->destroy_ns = TR_NONE;
	f->init_thread = f->signal_thread = f->destroy_thread = -1;
	f->track = f->lane = -1;
	hash_put(m, m->nfences);
	return (int)m->nfences++;
}
