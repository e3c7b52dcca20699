/* SPDX-License-Identifier: MIT */
/*
 * The text of a tracefs `trace` file, one line at a time: the columns of an
 * event line and the fields of a dma_fence event (trace_model.h).
 */
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

/* The timestamp is the first "digits.digits" token followed by ": ". */
static const char *
find_timestamp(const char *line, const char **ts_end)
{
	for (const char *p = strstr(line, ": "); p; p = strstr(p + 1, ": ")) {
		const char *s = p;

		while (s > line && !isspace((unsigned char)s[-1]))
			s--;
		if (is_timestamp(s, p)) {
			*ts_end = p;
			return s;
		}
	}
	return NULL;
}

/* The head before the timestamp at head_end: "comm-tid [(tgid)] [cpu] [flags]". */
static int
parse_head(const char *line, const char *head_end, struct tr_line *out)
{
	const char *p, *lb = NULL, *dash = NULL, *s = line;

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
	while (s < p && isspace((unsigned char)*s))
		s++;
	for (const char *q = s; q < p; q++)
		if (*q == '-')
			dash = q;
	if (!dash || dash + 1 >= p || !isdigit((unsigned char)dash[1]))
		return -EINVAL;
	copy_trimmed(out->comm, sizeof(out->comm), s, dash);
	out->tid = atoi(dash + 1);
	return 0;
}

/* "event: data" from ev on; 1, or -EINVAL when there is no event name. */
static int
parse_event(const char *ev, struct tr_line *out)
{
	const char *ev_end;

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
tr_line_parse(const char *line, struct tr_line *out)
{
	const char *ts_start, *ts_end = NULL;

	memset(out, 0, sizeof(*out));
	out->tgid = -1;
	if (line[0] == '#' || is_blank_line(line) || strstr(line, "#####"))
		return 0;

	ts_start = find_timestamp(line, &ts_end);
	if (!ts_start)
		return -EINVAL;
	out->ts_ns = parse_timestamp(ts_start, ts_end);
	if (parse_head(line, ts_start, out) < 0)
		return -EINVAL;
	return parse_event(ts_end + 2, out);
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
