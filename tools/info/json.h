/* SPDX-License-Identifier: MIT */
/*
 * A small streaming JSON writer for syncbridge-info's --json output and its
 * trace files. Strings are escaped and checked for UTF-8 (invalid bytes, e.g.
 * from a process's comm, become U+FFFD) so the output always loads.
 */
#ifndef INFO_JSON_H
#define INFO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json_writer {
	FILE *f;
	bool pretty;
	int depth;
	bool has_items[JSON_MAX_DEPTH]; /* whether the container at a depth has a member yet */
};

void json_init(struct json_writer *w, FILE *f, bool pretty);

/*
 * Every value function takes a key: the member name inside an object, NULL
 * inside an array or for the top-level value.
 */
void json_object_begin(struct json_writer *w, const char *key);
void json_object_end(struct json_writer *w);
void json_array_begin(struct json_writer *w, const char *key);
void json_array_end(struct json_writer *w);

void json_string(struct json_writer *w, const char *key, const char *s); /* NULL -> null */
void json_string_n(struct json_writer *w, const char *key, const char *s, size_t len);
void json_int(struct json_writer *w, const char *key, long long v);
void json_uint(struct json_writer *w, const char *key, unsigned long long v);
/* A number with `decimals` digits after the point (non-finite -> null). */
void json_double(struct json_writer *w, const char *key, double v, int decimals);
void json_bool(struct json_writer *w, const char *key, bool v);
void json_null(struct json_writer *w, const char *key);

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if invalid. */
size_t utf8_seq_len(const unsigned char *s, size_t n);

/* Write s as a JSON string literal (with quotes) to f. */
void json_write_escaped(FILE *f, const char *s, size_t len);

#endif
