/* SPDX-License-Identifier: MIT */
#include "json.h"

#include <math.h>
#include <string.h>

void
json_init(struct json_writer *w, FILE *f, bool pretty)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->pretty = pretty;
}

size_t
utf8_seq_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp, min;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2, cp = s[0] & 0x1f, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3, cp = s[0] & 0x0f, min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

void
json_write_escaped(FILE *f, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	fputc('"', f);
	while (i < len) {
		unsigned char c = s[i];
		size_t n;

		switch (c) {
		case '"':
			fputs("\\\"", f);
			i++;
			continue;
		case '\\':
			fputs("\\\\", f);
			i++;
			continue;
		case '\n':
			fputs("\\n", f);
			i++;
			continue;
		case '\t':
			fputs("\\t", f);
			i++;
			continue;
		case '\r':
			fputs("\\r", f);
			i++;
			continue;
		default:
			break;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
			continue;
		}
		n = utf8_seq_len(s + i, len - i);
		if (n == 0) {
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		fwrite(s + i, 1, n, f);
		i += n;
	}
	fputc('"', f);
}

static void
indent(struct json_writer *w)
{
	if (!w->pretty)
		return;
	fputc('\n', w->f);
	for (int i = 0; i < w->depth; i++)
		fputs("  ", w->f);
}

/* Separator, indentation and key before a value. */
static void
prefix(struct json_writer *w, const char *key)
{
	if (w->depth > 0) {
		if (w->has_items[w->depth])
			fputc(',', w->f);
		w->has_items[w->depth] = true;
		indent(w);
	}
	if (key) {
		json_write_escaped(w->f, key, strlen(key));
		fputs(w->pretty ? ": " : ":", w->f);
	}
}

static void
open_container(struct json_writer *w, const char *key, char c)
{
	prefix(w, key);
	fputc(c, w->f);
	if (w->depth + 1 < JSON_MAX_DEPTH)
		w->depth++;
	w->has_items[w->depth] = false;
}

static void
close_container(struct json_writer *w, char c)
{
	bool had = w->has_items[w->depth];

	if (w->depth > 0)
		w->depth--;
	if (had)
		indent(w);
	fputc(c, w->f);
	if (w->depth == 0 && w->pretty)
		fputc('\n', w->f);
}

void
json_object_begin(struct json_writer *w, const char *key)
{
	open_container(w, key, '{');
}

void
json_object_end(struct json_writer *w)
{
	close_container(w, '}');
}

void
json_array_begin(struct json_writer *w, const char *key)
{
	open_container(w, key, '[');
}

void
json_array_end(struct json_writer *w)
{
	close_container(w, ']');
}

void
json_string_n(struct json_writer *w, const char *key, const char *s, size_t len)
{
	prefix(w, key);
	json_write_escaped(w->f, s, len);
}

void
json_string(struct json_writer *w, const char *key, const char *s)
{
	if (!s) {
		json_null(w, key);
		return;
	}
	json_string_n(w, key, s, strlen(s));
}

void
json_int(struct json_writer *w, const char *key, long long v)
{
	prefix(w, key);
	fprintf(w->f, "%lld", v);
}

void
json_uint(struct json_writer *w, const char *key, unsigned long long v)
{
	prefix(w, key);
	fprintf(w->f, "%llu", v);
}

void
json_double(struct json_writer *w, const char *key, double v, int decimals)
{
	prefix(w, key);
	if (!isfinite(v))
		fputs("null", w->f);
	else
		fprintf(w->f, "%.*f", decimals, v);
}

void
json_bool(struct json_writer *w, const char *key, bool v)
{
	prefix(w, key);
	fputs(v ? "true" : "false", w->f);
}

void
json_null(struct json_writer *w, const char *key)
{
	prefix(w, key);
	fputs("null", w->f);
}
