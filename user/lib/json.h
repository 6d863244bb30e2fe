/* SPDX-License-Identifier: MIT */
/* A streaming JSON writer over a struct strbuf: it places the commas and colons, checks that
 * keys and values alternate inside objects and that every container is closed, escapes
 * every string, and keeps its first error, after which every call does nothing and returns
 * that error. Callers write straight-line code and look at json_finish (or json_error)
 * once. Nothing is pretty-printed, except where the caller asks for a line break. */
#ifndef PW_JSON_H
#define PW_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/escape.h"

/* Nesting deeper than this is an error (-E2BIG): no document pywalk writes comes near. */
#define JSON_MAX_DEPTH 16

struct json {
	struct strbuf *sb;
	int err;
	/* escape_json, or escape_json_script for JSON inside an HTML <script> element */
	int (*escape)(struct strbuf *sb, const char *s);
	unsigned depth;
	bool in_string;	  /* between json_string_begin and json_string_end */
	bool broke;	  /* a line break was the last thing written */
	bool sep_written; /* json_break wrote the comma the next item is due */
	/* per level (0: the top): an object, something already in it, a key awaiting its value */
	bool object[JSON_MAX_DEPTH + 1], nonempty[JSON_MAX_DEPTH + 1], has_key[JSON_MAX_DEPTH + 1];
};

/* Append to sb (not reset); script: escape for embedding in an HTML <script> element. */
void json_init(struct json *w, struct strbuf *sb, bool script);
/* The first error: -ENOMEM, -EINVAL (a value where a key is due, a key outside an object,
 * an unbalanced end, a document not closed), -E2BIG (too deep), -EDOM (NaN or infinity). */
int json_error(const struct json *w);
/* Keep err (the caller's own, an allocation say) as the writer's error unless one came
 * first; returns the error kept. */
int json_fail(struct json *w, int err);
/* json_error, and -EINVAL when a container or string is still open. */
int json_finish(struct json *w);

int json_begin_object(struct json *w);
int json_end_object(struct json *w);
int json_begin_array(struct json *w);
int json_end_array(struct json *w);
int json_key(struct json *w, const char *key);

int json_string(struct json *w, const char *s);
/* One string value written in pieces, each escaped on its own (a piece need not end on a
 * character boundary of the next: each is read as whole UTF-8 by itself). */
int json_string_begin(struct json *w);
int json_string_part(struct json *w, const char *s);
int json_string_partf(struct json *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int json_string_end(struct json *w);

int json_int(struct json *w, int64_t v);
int json_uint(struct json *w, uint64_t v);
int json_double(struct json *w, double v);
int json_bool(struct json *w, bool v);
int json_null(struct json *w);

/* A key and its value in one call: the members of most objects. */
int json_key_string(struct json *w, const char *key, const char *s);
int json_key_int(struct json *w, const char *key, int64_t v);
int json_key_uint(struct json *w, const char *key, uint64_t v);
int json_key_double(struct json *w, const char *key, double v);
int json_key_bool(struct json *w, const char *key, bool v);

/* A line break before what comes next in the current container (after the comma when one
 * is due): the layout the existing documents have, for diff and grep. Two in a row are
 * one. At the top level, after the document, it ends the line. */
int json_break(struct json *w);

#endif
