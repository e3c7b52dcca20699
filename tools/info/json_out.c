/* SPDX-License-Identifier: MIT */
#include "json_out.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

struct json_object *
info_json_strn(const char *str, size_t len)
{
	static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
	const unsigned char *s = (const unsigned char *)str;
	struct json_object *o;
	size_t i = 0, n, used;
	char *fixed;

	while (i < len && (n = utf8_seq_len(s + i, len - i)) != 0)
		i += n;
	if (i == len)
		return json_object_new_string_len(str, (int)len);

	/* each invalid byte becomes the 3 bytes of U+FFFD */
	fixed = malloc(len * 3);
	if (!fixed)
		return NULL;
	memcpy(fixed, str, i);
	used = i;
	while (i < len) {
		n = utf8_seq_len(s + i, len - i);
		if (n == 0) {
			memcpy(fixed + used, replacement, 3);
			used += 3;
			i++;
			continue;
		}
		memcpy(fixed + used, s + i, n);
		used += n;
		i += n;
	}
	o = json_object_new_string_len(fixed, (int)used);
	free(fixed);
	return o;
}

struct json_object *
info_json_str(const char *s)
{
	return s ? info_json_strn(s, strlen(s)) : NULL;
}

struct json_object *
info_json_fixed(double v, int decimals)
{
	char buf[64];

	if (!isfinite(v))
		return NULL;
	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	return json_object_new_double_s(v, buf);
}

void
info_json_emit(FILE *f, struct json_object *o)
{
	const char *text = json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	fputs(text ? text : "null", f);
	json_object_put(o);
}

int
info_json_write(struct json_object *doc, FILE *f, bool pretty)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
		    (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
			    : JSON_C_TO_STRING_PLAIN);
	const char *text = json_object_to_json_string_ext(doc, flags);

	if (!text)
		return -ENOMEM;
	fputs(text, f);
	fputc('\n', f);
	return ferror(f) ? -EIO : 0;
}
