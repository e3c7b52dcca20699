/* SPDX-License-Identifier: MIT */
/*
 * A fed tr_model finished: what the trace left open closed at its end, the
 * markers tied to their fences, the fences put on tracks and lanes; and the
 * questions the writers ask of the result.
 */
#include "trace_model_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* t if it was seen, else `otherwise`. */
static int64_t
seen_or(int64_t t, int64_t otherwise)
{
	return t != TR_NONE ? t : otherwise;
}

int64_t
tr_fence_start(const struct tr_model *m, const struct tr_fence *f)
{
	return f->from_marker ? m->begin_ns : seen_or(f->emit_ns, seen_or(f->init_ns, m->begin_ns));
}

/*
 * A fence released without a signal event ends at its release: a
 * dma_fence_array (a merge, an export of several fences) signals only when
 * somebody asks it or enabled signalling, so one that nobody asked is
 * dropped without ever being traced as signalled.
 */
int64_t
tr_fence_end(const struct tr_model *m, const struct tr_fence *f)
{
	if (f->from_marker)
		return m->begin_ns;
	return seen_or(f->signaled_ns, seen_or(f->destroy_ns, m->end_ns));
}

static const struct tr_model *sort_model;

static int
cmp_fence_start(const void *a, const void *b)
{
	const struct tr_fence *fa = &sort_model->fences[*(const size_t *)a];
	const struct tr_fence *fb = &sort_model->fences[*(const size_t *)b];
	int64_t sa = tr_fence_start(sort_model, fa), sb = tr_fence_start(sort_model, fb);

	if (sa != sb)
		return sa < sb ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* The run's bounds; waits, blocks and spans still open at its end close there. */
static void
close_run(struct tr_model *m)
{
	if (m->first_ns != TR_NONE) {
		if (m->begin_ns == TR_NONE || m->first_ns < m->begin_ns)
			m->begin_ns = m->first_ns;
		if (m->end_ns == TR_NONE || m->last_ns > m->end_ns)
			m->end_ns = m->last_ns;
	}
	if (m->begin_ns == TR_NONE)
		m->begin_ns = m->end_ns != TR_NONE ? m->end_ns : 0;
	if (m->end_ns == TR_NONE || m->end_ns < m->begin_ns)
		m->end_ns = m->begin_ns;

	for (size_t i = 0; i < m->nwaits; i++) {
		if (m->waits[i].end_ns == TR_NONE) {
			m->waits[i].end_ns = m->end_ns;
			m->waits[i].unfinished = true;
		}
	}
	for (size_t i = 0; i < m->nblocks; i++) {
		if (m->blocks[i].end_ns == TR_NONE) {
			m->blocks[i].end_ns = m->end_ns;
			m->blocks[i].unfinished = true;
		}
	}
	for (size_t i = 0; i < m->nmarkers; i++) {
		if (m->markers[i].span && m->markers[i].end_ns == TR_NONE) {
			m->markers[i].end_ns = m->end_ns;
			m->markers[i].unfinished = true;
		}
		m->markers[i].fence = tr_model_marker_fence(m, m->markers[i].args);
	}
}

/*
 * One track per driver/timeline, in order of first appearance; fences seen
 * only being destroyed are hidden and on none.
 */
static int
assign_tracks(struct tr_model *m)
{
	free(m->tracks);
	m->tracks = NULL;
	m->ntracks = 0;
	if (m->nfences) {
		m->tracks = calloc(m->nfences, sizeof(*m->tracks));
		if (!m->tracks)
			return -ENOMEM;
	}
	for (size_t i = 0; i < m->nfences; i++) {
		struct tr_fence *f = &m->fences[i];
		size_t t;

		f->hidden = f->init_ns == TR_NONE && f->emit_ns == TR_NONE &&
			    f->signaled_ns == TR_NONE && f->enable_ns == TR_NONE &&
			    f->destroy_ns != TR_NONE;
		f->track = f->lane = -1;
		if (f->hidden)
			continue;
		for (t = 0; t < m->ntracks; t++)
			if (strcmp(m->tracks[t].driver, f->driver) == 0 &&
			    strcmp(m->tracks[t].timeline, f->timeline) == 0)
				break;
		if (t == m->ntracks) {
			snprintf(m->tracks[t].driver, TR_NAME_LEN, "%s", f->driver);
			snprintf(m->tracks[t].timeline, TR_NAME_LEN, "%s", f->timeline);
			m->ntracks++;
		}
		f->track = (int)t;
		m->tracks[t].nfences++;
	}
	return 0;
}

/*
 * Lanes of one track: greedy over its fences (order, n of them) sorted by
 * start, each in the first lane free by then. lane_end grows as needed.
 */
static int
assign_lanes(struct tr_model *m, size_t *order, size_t n, int64_t **lane_end,
	     size_t *lane_cap)
{
	int lanes = 0;

	sort_model = m;
	qsort(order, n, sizeof(*order), cmp_fence_start);
	for (size_t k = 0; k < n; k++) {
		struct tr_fence *f = &m->fences[order[k]];
		int64_t start = tr_fence_start(m, f), end = tr_fence_end(m, f);
		int lane;

		for (lane = 0; lane < lanes; lane++)
			if ((*lane_end)[lane] <= start)
				break;
		if (lane == lanes) {
			if ((size_t)lanes == *lane_cap) {
				size_t nc = *lane_cap ? *lane_cap * 2 : 8;
				int64_t *nl = realloc(*lane_end, nc * sizeof(*nl));

				if (!nl)
					return -ENOMEM;
				*lane_end = nl;
				*lane_cap = nc;
			}
			lanes++;
		}
		(*lane_end)[lane] = end;
		f->lane = lane;
	}
	return lanes;
}

int
tr_model_finish(struct tr_model *m)
{
	size_t *order = NULL;
	int64_t *lane_end = NULL;
	size_t lane_cap = 0;
	int ret = 0;

	if (m->failed)
		return -ENOMEM;
	close_run(m);
	if (m->failed)
		return -ENOMEM;
	if (assign_tracks(m) < 0)
		return -ENOMEM;
	if (m->nfences) {
		order = calloc(m->nfences, sizeof(*order));
		if (!order)
			return -ENOMEM;
	}
	for (size_t t = 0; t < m->ntracks && ret >= 0; t++) {
		size_t n = 0;

		for (size_t i = 0; i < m->nfences; i++)
			if (m->fences[i].track == (int)t)
				order[n++] = i;
		ret = assign_lanes(m, order, n, &lane_end, &lane_cap);
		if (ret >= 0)
			m->tracks[t].lanes = ret;
	}
	free(order);
	free(lane_end);
	return ret < 0 ? ret : 0;
}

const char *
tr_thread_label(const struct tr_model *m, int thread, char *buf, size_t len)
{
	if (thread < 0 || (size_t)thread >= m->nthreads)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%s[%d]", m->threads[thread].comm, m->threads[thread].tid);
	return buf;
}

long long
tr_model_lost_events(const struct tr_model *m)
{
	if (m->entries_in_buffer < 0 || m->entries_written < m->entries_in_buffer)
		return 0;
	return m->entries_written - m->entries_in_buffer;
}
