/* SPDX-License-Identifier: MIT */
/*
 * syncbridge-info's JSON goes through json-c: a command's document is built
 * as a json_object tree and written in one go; a trace's, which can hold
 * hundreds of thousands of events, a piece at a time (info_json_emit()).
 * json-c copies string bytes as they are, so the strings that come from the
 * outside (a process's comm, a fence's timeline, a marker's words) pass
 * through info_json_str(), which turns bytes that are not UTF-8 into U+FFFD:
 * the output always loads.
 */
#ifndef INFO_JSON_OUT_H
#define INFO_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <json-c/json.h>

/* A JSON string of s, invalid UTF-8 repaired; NULL (JSON null) when s is NULL. */
struct json_object *info_json_str(const char *s);
struct json_object *info_json_strn(const char *s, size_t len);

/* A number written with `decimals` digits after the point; NULL (null) if not finite. */
struct json_object *info_json_fixed(double v, int decimals);

/*
 * Write doc and a newline to f: pretty (two-space indent, "key": value) or
 * compact. doc stays the caller's. Returns 0, or -EIO when f has an error.
 */
int info_json_write(struct json_object *doc, FILE *f, bool pretty);

/*
 * Write o compact, with no newline, to f, and free it: for documents written
 * a piece at a time (a trace's events), which are never all in memory.
 */
void info_json_emit(FILE *f, struct json_object *o);

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if invalid. */
size_t utf8_seq_len(const unsigned char *s, size_t n);

#endif
