/* SPDX-License-Identifier: MIT */
#include "trace_model.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool
is_blank_line(const char *s)
{
	for (; *s; s++)
		if (!isspace((unsigned char)*s))
			return false;
	return true;
}

/* Whether [s, e) is "digits.digits". */
static bool
is_timestamp(const char *s, const char *e)
{
	const char *dot = NULL;

	if (s == e)
		return false;
	for (const char *p = s; p < e; p++) {
		if (*p == '.') {
			if (dot)
				return false;
			dot = p;
		} else if (!isdigit((unsigned char)*p)) {
			return false;
		}
	}
	return dot && dot > s && dot + 1 < e;
}

static int64_t
parse_timestamp(const char *s, const char *e)
{
	int64_t sec = 0, frac = 0;
	int digits = 0;
	const char *p = s;

	for (; p < e && *p != '.'; p++)
		sec = sec * 10 + (*p - '0');
	for (p++; p < e; p++) {
		if (digits < 9) {
			frac = frac * 10 + (*p - '0');
			digits++;
		}
	}
	for (; digits < 9; digits++)
		frac *= 10;
	return sec * INT64_C(1000000000) + frac;
}

static void
copy_trimmed(char *out, size_t len, const char *s, const char *e)
{
	size_t n;

	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	n = (size_t)(e - s);
	if (n >= len)
		n = len - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

int
tr_line_parse(const char *line, struct tr_line *out)
{
	const char *ts_start = NULL, *ts_end = NULL, *p, *head_end, *lb, *ev, *ev_end;

	memset(out, 0, sizeof(*out));
	out->tgid = -1;
	if (line[0] == '#' || is_blank_line(line) || strstr(line, "#####"))
		return 0;

	/* The timestamp is the first "digits.digits" token followed by ": ". */
	for (p = strstr(line, ": "); p; p = strstr(p + 1, ": ")) {
		const char *s = p;

		while (s > line && !isspace((unsigned char)s[-1]))
			s--;
		if (is_timestamp(s, p)) {
			ts_start = s;
			ts_end = p;
			break;
		}
	}
	if (!ts_start)
		return -EINVAL;
	out->ts_ns = parse_timestamp(ts_start, ts_end);

	/* Head: "comm-tid [(tgid)] [cpu] [flags]" */
	head_end = ts_start;
	lb = NULL;
	for (p = line; p < head_end; p++)
		if (*p == '[')
			lb = p;
	if (!lb)
		return -EINVAL;
	out->cpu = atoi(lb + 1);
	p = lb;
	while (p > line && isspace((unsigned char)p[-1]))
		p--;
	if (p > line && p[-1] == ')') {
		const char *rp = p - 1, *lp = rp;
		char tg[16];

		while (lp > line && *lp != '(')
			lp--;
		if (*lp != '(')
			return -EINVAL;
		copy_trimmed(tg, sizeof(tg), lp + 1, rp);
		out->tgid = isdigit((unsigned char)tg[0]) ? atoi(tg) : -1;
		p = lp;
		while (p > line && isspace((unsigned char)p[-1]))
			p--;
	}
	/* comm-tid: the tid follows the last '-' (comms may contain '-'). */
	{
		const char *dash = NULL, *s = line;

		while (s < p && isspace((unsigned char)*s))
			s++;
		for (const char *q = s; q < p; q++)
			if (*q == '-')
				dash = q;
		if (!dash || dash + 1 >= p || !isdigit((unsigned char)dash[1]))
			return -EINVAL;
		copy_trimmed(out->comm, sizeof(out->comm), s, dash);
		out->tid = atoi(dash + 1);
	}

	/* "event: data" after the timestamp */
	ev = ts_end + 2;
	while (*ev == ' ')
		ev++;
	if (strncmp(ev, "sys_", 4) == 0) {
		/* syscall events: "sys_NAME(args)" or "sys_NAME -> RET" */
		const char *name = ev + 4, *ne = name;

		while (*ne && (isalnum((unsigned char)*ne) || *ne == '_'))
			ne++;
		if (*ne == '(' || strncmp(ne, " -> ", 4) == 0) {
			bool enter = *ne == '(';

			snprintf(out->event, sizeof(out->event), "%s%.*s",
				 enter ? "sys_enter_" : "sys_exit_", (int)(ne - name), name);
			out->data = enter ? ne + 1 : ne + 4;
			return 1;
		}
	}
	ev_end = strstr(ev, ": ");
	if (!ev_end) {
		ev_end = ev + strcspn(ev, ":\n");
		out->data = ev_end + (*ev_end == ':' ? 1 : 0);
	} else {
		out->data = ev_end + 2;
	}
	copy_trimmed(out->event, sizeof(out->event), ev, ev_end);
	if (!out->event[0])
		return -EINVAL;
	return 1;
}

int
tr_fence_fields_parse(const char *data, char *driver, size_t driver_len, char *timeline,
		      size_t timeline_len, uint64_t *context, uint64_t *seqno)
{
	const char *d = strstr(data, "driver=");
	const char *t, *c = NULL, *s = NULL, *q;
	char *end;

	if (!d)
		return -EINVAL;
	d += strlen("driver=");
	t = strstr(d, " timeline=");
	if (!t)
		return -EINVAL;
	/* the last " context=" and " seqno=": names may contain anything */
	for (q = strstr(t, " context="); q; q = strstr(q + 1, " context="))
		c = q;
	if (!c)
		return -EINVAL;
	for (q = strstr(c, " seqno="); q; q = strstr(q + 1, " seqno="))
		s = q;
	if (!s)
		return -EINVAL;
	copy_trimmed(driver, driver_len, d, t);
	copy_trimmed(timeline, timeline_len, t + strlen(" timeline="), c);
	errno = 0;
	*context = strtoull(c + strlen(" context="), &end, 10);
	if (errno || end == c + strlen(" context="))
		return -EINVAL;
	*seqno = strtoull(s + strlen(" seqno="), &end, 10);
	if (errno || end == s + strlen(" seqno="))
		return -EINVAL;
	return 0;
}

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
	memset(m, 0, sizeof(*m));
}

/* Make room for one more element of size `size` in *arr. */
static bool
grow(struct tr_model *m, void **arr, size_t n, size_t *cap, size_t size)
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

static int
thread_get(struct tr_model *m, const struct tr_line *l)
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
	if (!grow(m, (void **)&m->threads, m->nthreads, &m->threads_cap, sizeof(*m->threads)))
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
	uint64_t h = context * UINT64_C(0x9E3779B97F4A7C15) ^ (seqno + UINT64_C(0x632BE59BD9B4E019));

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

static int
hash_get(const struct tr_model *m, uint64_t context, uint64_t seqno)
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

static int
fence_new(struct tr_model *m, const char *driver, const char *timeline, uint64_t context,
	  uint64_t seqno)
{
	struct tr_fence *f;

	if (!hash_reserve(m))
		return -1;
	if (!grow(m, (void **)&m->fences, m->nfences, &m->fences_cap, sizeof(*m->fences)))
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

static void
fence_event(struct tr_model *m, const struct tr_line *l, const char *what)
{
	char driver[TR_NAME_LEN], timeline[TR_NAME_LEN];
	uint64_t context, seqno;
	int idx, thread;
	struct tr_fence *f;

	if (tr_fence_fields_parse(l->data, driver, sizeof(driver), timeline, sizeof(timeline),
				  &context, &seqno) < 0) {
		m->malformed++;
		return;
	}
	m->fence_events++;
	thread = thread_get(m, l);
	idx = hash_get(m, context, seqno);
	/* A new object under a key seen before (the old one was destroyed or re-inited). */
	if (idx >= 0 && strcmp(what, "init") == 0 &&
	    (m->fences[idx].init_ns != TR_NONE || m->fences[idx].destroy_ns != TR_NONE))
		idx = -1;
	if (idx >= 0 && m->fences[idx].destroy_ns != TR_NONE && strcmp(what, "destroy") != 0)
		idx = -1;
	if (idx < 0)
		idx = fence_new(m, driver, timeline, context, seqno);
	if (idx < 0)
		return;
	f = &m->fences[idx];

	if (strcmp(what, "init") == 0) {
		f->init_ns = l->ts_ns;
		f->init_thread = thread;
	} else if (strcmp(what, "emit") == 0) {
		if (f->emit_ns == TR_NONE)
			f->emit_ns = l->ts_ns;
	} else if (strcmp(what, "enable_signal") == 0) {
		if (f->enable_ns == TR_NONE)
			f->enable_ns = l->ts_ns;
	} else if (strcmp(what, "signaled") == 0) {
		if (f->signaled_ns == TR_NONE) {
			f->signaled_ns = l->ts_ns;
			f->signal_thread = thread;
		}
	} else if (strcmp(what, "destroy") == 0) {
		f->destroy_ns = l->ts_ns;
		f->destroy_thread = thread;
	} else if (strcmp(what, "wait_start") == 0) {
		struct tr_wait *w;

		if (!grow(m, (void **)&m->waits, m->nwaits, &m->waits_cap, sizeof(*m->waits)))
			return;
		w = &m->waits[m->nwaits++];
		w->fence = idx;
		w->thread = thread;
		w->start_ns = l->ts_ns;
		w->end_ns = TR_NONE;
		w->unfinished = false;
	} else if (strcmp(what, "wait_end") == 0) {
		struct tr_wait *match = NULL;

		/* the innermost open wait of this thread, preferably on this fence */
		for (size_t i = m->nwaits; i-- > 0;) {
			struct tr_wait *w = &m->waits[i];

			if (m->threads[w->thread].tid != l->tid || w->end_ns != TR_NONE)
				continue;
			if (w->fence == idx) {
				match = w;
				break;
			}
			if (!match)
				match = w;
		}
		if (match)
			match->end_ns = l->ts_ns;
		else
			m->unmatched_wait_ends++;
	}
}

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

static void
marker_event(struct tr_model *m, const struct tr_line *l)
{
	const char *p = l->data + strlen("syncbridge:");
	const char *w, *we, *end;
	bool begin = false, finish = false;
	struct tr_marker *mk;
	int thread;

	end = p + strlen(p);
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	while (p < end && isspace((unsigned char)*p))
		p++;
	w = p;
	we = w;
	while (we < end && !isspace((unsigned char)*we))
		we++;
	if ((size_t)(we - w) == 5 && strncmp(w, "begin", 5) == 0)
		begin = true;
	else if ((size_t)(we - w) == 3 && strncmp(w, "end", 3) == 0)
		finish = true;
	if (begin || finish) {
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

	thread = thread_get(m, l);
	if (thread < 0)
		return;
	if (finish) {
		for (size_t i = m->nmarkers; i-- > 0;) {
			mk = &m->markers[i];
			if (mk->span && mk->end_ns == TR_NONE && mk->thread == thread &&
			    strlen(mk->name) == (size_t)(we - w) &&
			    strncmp(mk->name, w, (size_t)(we - w)) == 0) {
				mk->end_ns = l->ts_ns;
				if (p < end) {
					/* the end's words describe the span's outcome: keep them */
					char *more = dup_range(p, end), *joined = NULL;

					if (!more || asprintf(&joined, "%s%s%s", mk->args,
							      mk->args[0] ? " " : "", more) < 0)
						joined = NULL;
					free(more);
					if (!joined) {
						m->failed = true;
						return;
					}
					free(mk->args);
					mk->args = joined;
				}
				return;
			}
		}
		m->unmatched_marker_ends++;
		/* keep it visible as an instant event */
	}
	if (!grow(m, (void **)&m->markers, m->nmarkers, &m->markers_cap, sizeof(*m->markers)))
		return;
	mk = &m->markers[m->nmarkers];
	memset(mk, 0, sizeof(*mk));
	mk->thread = thread;
	mk->ts_ns = l->ts_ns;
	mk->end_ns = TR_NONE;
	mk->span = begin;
	mk->fence = -1;
	for (size_t i = 0; i < m->nmarkers; i++)
		mk->depth += m->markers[i].span && m->markers[i].end_ns == TR_NONE &&
			     m->markers[i].thread == thread;
	if (w == we)
		mk->name = strdup("marker");
	else if (finish) {
		char *n = dup_range(w, we);

		if (n && asprintf(&mk->name, "end %s", n) < 0)
			mk->name = NULL;
		free(n);
	} else
		mk->name = dup_range(w, we);
	mk->args = dup_range(p, end);
	if (!mk->name || !mk->args) {
		free(mk->name);
		free(mk->args);
		m->failed = true;
		return;
	}
	m->nmarkers++;
}

static const char *const blocking_syscalls[] = {
	"poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2",
};

static bool
is_blocking_syscall(const char *name)
{
	for (size_t i = 0; i < sizeof(blocking_syscalls) / sizeof(blocking_syscalls[0]); i++)
		if (strcmp(name, blocking_syscalls[i]) == 0)
			return true;
	return false;
}

static void
syscall_event(struct tr_model *m, const struct tr_line *l, bool enter, const char *name)
{
	int thread = thread_get(m, l);
	struct tr_block *b;

	if (thread < 0)
		return;
	if (enter) {
		if (!grow(m, (void **)&m->blocks, m->nblocks, &m->blocks_cap, sizeof(*m->blocks)))
			return;
		b = &m->blocks[m->nblocks++];
		memset(b, 0, sizeof(*b));
		b->thread = thread;
		snprintf(b->name, sizeof(b->name), "%s", name);
		b->start_ns = l->ts_ns;
		b->end_ns = TR_NONE;
		return;
	}
	for (size_t i = m->nblocks; i-- > 0;) {
		b = &m->blocks[i];
		if (b->thread == thread && b->end_ns == TR_NONE && strcmp(b->name, name) == 0) {
			b->end_ns = l->ts_ns;
			b->ret = strtoll(l->data, NULL, 0);
			return;
		}
	}
	m->unmatched_syscall_exits++; /* entered before the trace began */
}

static void
header_line(struct tr_model *m, const char *line)
{
	const char *p = strstr(line, "entries-in-buffer/entries-written:");
	long long a, b;

	if (p && sscanf(p, "entries-in-buffer/entries-written: %lld/%lld", &a, &b) == 2) {
		m->entries_in_buffer = a;
		m->entries_written = b;
	}
}

void
tr_model_feed_line(struct tr_model *m, const char *line)
{
	struct tr_line l;
	int ret;

	m->lines++;
	ret = tr_line_parse(line, &l);
	if (ret == 0) {
		if (line[0] == '#')
			header_line(m, line);
		return;
	}
	if (ret < 0) {
		m->malformed++;
		return;
	}
	m->events++;
	if (m->first_ns == TR_NONE || l.ts_ns < m->first_ns)
		m->first_ns = l.ts_ns;
	if (m->last_ns == TR_NONE || l.ts_ns > m->last_ns)
		m->last_ns = l.ts_ns;

	if (strncmp(l.event, "dma_fence_", 10) == 0) {
		static const char *const kinds[] = { "init", "emit", "enable_signal", "signaled",
						     "wait_start", "wait_end", "destroy" };
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			if (strcmp(l.event + 10, kinds[i]) == 0) {
				fence_event(m, &l, kinds[i]);
				return;
			}
		}
	} else if (strcmp(l.event, "tracing_mark_write") == 0 &&
		   strncmp(l.data, "syncbridge:", 11) == 0) {
		marker_event(m, &l);
		return;
	} else if (strncmp(l.event, "sys_enter_", 10) == 0 && is_blocking_syscall(l.event + 10)) {
		syscall_event(m, &l, true, l.event + 10);
		return;
	} else if (strncmp(l.event, "sys_exit_", 9) == 0 && is_blocking_syscall(l.event + 9)) {
		syscall_event(m, &l, false, l.event + 9);
		return;
	}
	m->other_events++;
}

void
tr_model_feed_text(struct tr_model *m, const char *text)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char stackbuf[1024];
		char *line = n < sizeof(stackbuf) ? stackbuf : malloc(n + 1);

		if (!line) {
			m->failed = true;
			return;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		tr_model_feed_line(m, line);
		if (line != stackbuf)
			free(line);
		if (!nl)
			break;
		p = nl + 1;
	}
}

int
tr_model_feed_file(struct tr_model *m, FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	while ((n = getline(&line, &cap, f)) >= 0) {
		if (n > 0 && line[n - 1] == '\n')
			line[n - 1] = '\0';
		tr_model_feed_line(m, line);
	}
	free(line);
	if (ferror(f))
		return -EIO;
	return m->failed ? -ENOMEM : 0;
}

int64_t
tr_fence_start(const struct tr_model *m, const struct tr_fence *f)
{
	if (f->from_marker)
		return m->begin_ns;
	if (f->emit_ns != TR_NONE)
		return f->emit_ns;
	if (f->init_ns != TR_NONE)
		return f->init_ns;
	return m->begin_ns;
}

int64_t
tr_fence_end(const struct tr_model *m, const struct tr_fence *f)
{
	if (f->from_marker)
		return m->begin_ns;
	if (f->signaled_ns != TR_NONE)
		return f->signaled_ns;
	return m->end_ns;
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
 * The fence named by a marker's "fence=CONTEXT:SEQNO" word, or -1. A fence
 * that has no event in the trace (created and signalled before it, like the
 * kernel's stub fence, initialised once per boot) is added from the marker's
 * driver= and timeline= words, so markers naming it still meet on one row.
 */
static int
marker_fence(struct tr_model *m, const char *args)
{
	unsigned long long context, seqno;
	char word[64], driver[TR_NAME_LEN], timeline[TR_NAME_LEN];
	int n = 0, idx;

	marker_word(args, "fence", word, sizeof(word));
	if (sscanf(word, "%llu:%llu%n", &context, &seqno, &n) != 2 || word[n] != '\0')
		return -1;
	idx = hash_get(m, context, seqno);
	if (idx >= 0)
		return idx;
	marker_word(args, "driver", driver, sizeof(driver));
	marker_word(args, "timeline", timeline, sizeof(timeline));
	idx = fence_new(m, driver[0] ? driver : "?", timeline[0] ? timeline : "?", context, seqno);
	if (idx < 0) {
		m->failed = true;
		return -1;
	}
	m->fences[idx].from_marker = true;
	return idx;
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

int
tr_model_finish(struct tr_model *m)
{
	size_t *order = NULL;
	int64_t *lane_end = NULL;
	size_t lane_cap = 0;

	if (m->failed)
		return -ENOMEM;
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
		m->markers[i].fence = marker_fence(m, m->markers[i].args);
	}
	if (m->failed)
		return -ENOMEM;

	/* tracks in order of first appearance */
	free(m->tracks);
	m->tracks = NULL;
	m->ntracks = 0;
	if (m->nfences) {
		m->tracks = calloc(m->nfences, sizeof(*m->tracks));
		order = calloc(m->nfences, sizeof(*order));
		if (!m->tracks || !order) {
			free(order);
			return -ENOMEM;
		}
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

	/* lanes: greedy over fences sorted by start, per track */
	for (size_t t = 0; t < m->ntracks; t++) {
		size_t n = 0;
		int lanes = 0;

		for (size_t i = 0; i < m->nfences; i++)
			if (m->fences[i].track == (int)t)
				order[n++] = i;
		sort_model = m;
		qsort(order, n, sizeof(*order), cmp_fence_start);
		for (size_t k = 0; k < n; k++) {
			struct tr_fence *f = &m->fences[order[k]];
			int64_t start = tr_fence_start(m, f), end = tr_fence_end(m, f);
			int lane;

			for (lane = 0; lane < lanes; lane++)
				if (lane_end[lane] <= start)
					break;
			if (lane == lanes) {
				if ((size_t)lanes == lane_cap) {
					size_t nc = lane_cap ? lane_cap * 2 : 8;
					int64_t *nl = realloc(lane_end, nc * sizeof(*nl));

					if (!nl) {
						free(order);
						free(lane_end);
						return -ENOMEM;
					}
					lane_end = nl;
					lane_cap = nc;
				}
				lanes++;
			}
			lane_end[lane] = end;
			f->lane = lane;
		}
		m->tracks[t].lanes = lanes;
	}
	free(order);
	free(lane_end);
	return 0;
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
