/* SPDX-License-Identifier: MIT */
/*
 * "syncbridge:" trace_marker lines (struct tr_marker): instants, spans that
 * begin and end on one thread and nest, and the fence a marker names.
 */
#include "trace_model_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *
dup_range(const char *s, const char *e)
{
	size_t n = (size_t)(e - s);
	char *r = malloc(n + 1);

	if (r) {
		memcpy(r, s, n);
		r[n] = '\0';
	}
	return r;
}

/* A marker's text, "[begin|end] NAME ARGS...", cut into its words. */
struct marker_words {
	bool begin, finish;
	const char *name, *name_end;    /* empty when the marker has no name */
	const char *args, *args_end;
};

static void
marker_words_split(const char *p, struct marker_words *mw)
{
	const char *w, *we, *end;

	end = p + strlen(p);
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	while (p < end && isspace((unsigned char)*p))
		p++;
	w = p;
	we = w;
	while (we < end && !isspace((unsigned char)*we))
		we++;
	mw->begin = (size_t)(we - w) == 5 && strncmp(w, "begin", 5) == 0;
	mw->finish = (size_t)(we - w) == 3 && strncmp(w, "end", 3) == 0;
	if (mw->begin || mw->finish) {
		w = we;
		while (w < end && isspace((unsigned char)*w))
			w++;
		we = w;
		while (we < end && !isspace((unsigned char)*we))
			we++;
	}
	p = we;
	while (p < end && isspace((unsigned char)*p))
		p++;
	mw->name = w;
	mw->name_end = we;
	mw->args = p;
	mw->args_end = end;
}

/*
 * "end NAME": closes the innermost open span NAME of thread. False when there
 * is none (the caller keeps the end as an instant event); true when closed,
 * or when keeping its words failed (m->failed).
 */
static bool
marker_span_end(struct tr_model *m, int thread, const struct marker_words *mw, int64_t ts_ns)
{
	size_t len = (size_t)(mw->name_end - mw->name);

	for (size_t i = m->nmarkers; i-- > 0;) {
		struct tr_marker *mk = &m->markers[i];
		char *more, *joined = NULL;

		if (!mk->span || mk->end_ns != TR_NONE || mk->thread != thread ||
		    strlen(mk->name) != len || strncmp(mk->name, mw->name, len) != 0)
			continue;
		mk->end_ns = ts_ns;
		if (mw->args == mw->args_end)
			return true;
		/* the end's words describe the span's outcome: keep them */
		more = dup_range(mw->args, mw->args_end);
		if (!more || asprintf(&joined, "%s%s%s", mk->args, mk->args[0] ? " " : "",
				      more) < 0)
			joined = NULL;
		free(more);
		if (!joined) {
			m->failed = true;
			return true;
		}
		free(mk->args);
		mk->args = joined;
		return true;
	}
	return false;
}

void
tr_model_marker_event(struct tr_model *m, const struct tr_line *l)
{
	struct marker_words mw;
	struct tr_marker *mk;
	int thread;

	marker_words_split(l->data + strlen("syncbridge:"), &mw);
	thread = tr_model_thread(m, l);
	if (thread < 0)
		return;
	if (mw.finish) {
		if (marker_span_end(m, thread, &mw, l->ts_ns))
			return;
		m->unmatched_marker_ends++;
		/* keep it visible as an instant event */
	}
	if (!tr_model_grow(m, (void **)&m->markers, m->nmarkers, &m->markers_cap,
			   sizeof(*m->markers)))
		return;
	mk = &m->markers[m->nmarkers];
	memset(mk, 0, sizeof(*mk));
	mk->thread = thread;
	mk->ts_ns = l->ts_ns;
	mk->end_ns = TR_NONE;
	mk->span = mw.begin;
	mk->fence = -1;
	for (size_t i = 0; i < m->nmarkers; i++)
		mk->depth += m->markers[i].span && m->markers[i].end_ns == TR_NONE &&
			     m->markers[i].thread == thread;
	if (mw.name == mw.name_end)
		mk->name = strdup("marker");
	else if (mw.finish) {
		char *n = dup_range(mw.name, mw.name_end);

		if (n && asprintf(&mk->name, "end %s", n) < 0)
			mk->name = NULL;
		free(n);
	} else
		mk->name = dup_range(mw.name, mw.name_end);
	mk->args = dup_range(mw.args, mw.args_end);
	if (!mk->name || !mk->args) {
		free(mk->name);
		free(mk->args);
		m->failed = true;
		return;
	}
	m->nmarkers++;
}

/* The value of the word "KEY=value" in a marker's args, into buf ("" if absent). */
static void
marker_word(const char *args, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);

	buf[0] = '\0';
	for (const char *p = args; (p = strstr(p, key)) != NULL; p += kl) {
		size_t n = 0;

		if ((p != args && !isspace((unsigned char)p[-1])) || p[kl] != '=')
			continue;
		p += kl + 1;
		while (p[n] && !isspace((unsigned char)p[n]))
			n++;
		snprintf(buf, len, "%.*s", (int)n, p);
		return;
	}
}

/*
 * A fence that has no event in the trace (created and signalled before it,
 * like the kernel's stub fence, initialised once per boot) is added from the
 * marker's driver= and timeline= words, so markers naming it still meet on one row.
 */
int
tr_model_marker_fence(struct tr_model *m, const char *args)
{
	unsigned long long context, seqno;
	char word[64], driver[TR_NAME_LEN], timeline[TR_NAME_LEN];
	int n = 0, idx;

	marker_word(args, "fence", word, sizeof(word));
	if (sscanf(word, "%llu:%llu%n", &context, &seqno, &n) != 2 || word[n] != '\0')
		return -1;
	idx = tr_model_fence_find(m, context, seqno);
	if (idx >= 0)
		return idx;
	marker_word(args, "driver", driver, sizeof(driver));
	marker_word(args, "timeline", timeline, sizeof(timeline));
	idx = tr_model_fence_new(m, driver[0] ? driver : "?", timeline[0] ? timeline : "?", context,
				 seqno);
	if (idx < 0) {
		m->failed = true;
		return -1;
	}
	m->fences[idx].from_marker = true;
	return idx;
}
