// SPDX-License-Identifier: MIT
/* The streaming JSON writer (lib/json.h). Each level of nesting remembers whether it is an
 * object, whether it holds anything yet (so the next item needs a comma) and, for an
 * object, whether a key waits for its value. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"

int json_fail(struct json *w, int err)
{
	if (!w->err)
		w->err = err;
	return w->err;
}

static int put(struct json *w, const char *s, size_t len)
{
	int err = strbuf_add(w->sb, s, len);

	return err ? json_fail(w, err) : 0;
}

static int put_escaped(struct json *w, const char *s)
{
	int err = w->escape(w->sb, s);

	return err ? json_fail(w, err) : 0;
}

void json_init(struct json *w, struct strbuf *sb, bool script)
{
	memset(w, 0, sizeof(*w));
	w->sb = sb;
	w->escape = script ? escape_json_script : escape_json;
}

int json_error(const struct json *w)
{
	return w->err;
}

int json_finish(struct json *w)
{
	if (!w->err && (w->depth || w->in_string))
		json_fail(w, -EINVAL);
	return w->err;
}

/* Before an item of the current level (a value, or in an object a key): the comma due,
 * unless json_break wrote it already. */
static int item_sep(struct json *w)
{
	unsigned d = w->depth;
	bool comma = w->nonempty[d] && !w->sep_written;

	w->nonempty[d] = true;
	w->sep_written = false;
	w->broke = false;
	return comma ? put(w, ",", 1) : 0;
}

/* Before any value: it must have a place (a key before it in an object, nothing before it
 * at the top level). */
static int value_prefix(struct json *w)
{
	unsigned d = w->depth;

	if (w->err)
		return w->err;
	if (w->in_string)
		return json_fail(w, -EINVAL);
	if (w->object[d]) {
		if (!w->has_key[d])
			return json_fail(w, -EINVAL);
		w->has_key[d] = false;
		w->broke = false;
		return 0;
	}
	if (!d && w->nonempty[0])
		return json_fail(w, -EINVAL); /* one document */
	return item_sep(w);
}

static int begin(struct json *w, bool object)
{
	int err = value_prefix(w);

	if (err)
		return err;
	if (w->depth == JSON_MAX_DEPTH)
		return json_fail(w, -E2BIG);
	w->depth++;
	w->object[w->depth] = object;
	w->nonempty[w->depth] = false;
	w->has_key[w->depth] = false;
	return put(w, object ? "{" : "[", 1);
}

static int end(struct json *w, bool object)
{
	unsigned d = w->depth;

	if (w->err)
		return w->err;
	/* a break's comma with nothing after it would leave a trailing comma */
	if (w->in_string || !d || w->object[d] != object || w->has_key[d] || w->sep_written)
		return json_fail(w, -EINVAL);
	w->depth--;
	w->broke = false;
	return put(w, object ? "}" : "]", 1);
}

int json_begin_object(struct json *w)
{
	return begin(w, true);
}

int json_end_object(struct json *w)
{
	return end(w, true);
}

int json_begin_array(struct json *w)
{
	return begin(w, false);
}

int json_end_array(struct json *w)
{
	return end(w, false);
}

int json_key(struct json *w, const char *key)
{
	unsigned d = w->depth;

	if (w->err)
		return w->err;
	if (w->in_string || !w->object[d] || w->has_key[d])
		return json_fail(w, -EINVAL);
	item_sep(w);
	put(w, "\"", 1);
	put_escaped(w, key);
	put(w, "\":", 2);
	if (!w->err)
		w->has_key[d] = true;
	return w->err;
}

int json_string_begin(struct json *w)
{
	int err = value_prefix(w);

	if (err)
		return err;
	w->in_string = true;
	return put(w, "\"", 1);
}

int json_string_part(struct json *w, const char *s)
{
	if (w->err)
		return w->err;
	if (!w->in_string)
		return json_fail(w, -EINVAL);
	return put_escaped(w, s);
}

int json_string_partf(struct json *w, const char *fmt, ...)
{
	char small[256], *s = small;
	va_list ap;
	int n;

	if (w->err)
		return w->err;
	if (!w->in_string)
		return json_fail(w, -EINVAL);
	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return json_fail(w, -EINVAL);
	if ((size_t)n >= sizeof(small)) {
		s = malloc((size_t)n + 1);
		if (!s)
			return json_fail(w, -ENOMEM);
		va_start(ap, fmt);
		vsnprintf(s, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	put_escaped(w, s);
	if (s != small)
		free(s);
	return w->err;
}

int json_string_end(struct json *w)
{
	if (w->err)
		return w->err;
	if (!w->in_string)
		return json_fail(w, -EINVAL);
	w->in_string = false;
	return put(w, "\"", 1);
}

int json_string(struct json *w, const char *s)
{
	json_string_begin(w);
	json_string_part(w, s);
	return json_string_end(w);
}

/* A number or literal, written as is. */
static int scalar(struct json *w, const char *text)
{
	int err = value_prefix(w);

	return err ? err : put(w, text, strlen(text));
}

int json_int(struct json *w, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	return scalar(w, buf);
}

int json_uint(struct json *w, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return scalar(w, buf);
}

int json_double(struct json *w, double v)
{
	char buf[32];

	if (w->err)
		return w->err;
	if (!isfinite(v))
		return json_fail(w, -EDOM); /* JSON has no NaN or infinity */
	/* the shortest of the two that reads back the same double */
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	return scalar(w, buf);
}

int json_bool(struct json *w, bool v)
{
	return scalar(w, v ? "true" : "false");
}

int json_null(struct json *w)
{
	return scalar(w, "null");
}

int json_key_string(struct json *w, const char *key, const char *s)
{
	json_key(w, key);
	return json_string(w, s);
}

int json_key_int(struct json *w, const char *key, int64_t v)
{
	json_key(w, key);
	return json_int(w, v);
}

int json_key_uint(struct json *w, const char *key, uint64_t v)
{
	json_key(w, key);
	return json_uint(w, v);
}

int json_key_double(struct json *w, const char *key, double v)
{
	json_key(w, key);
	return json_double(w, v);
}

int json_key_bool(struct json *w, const char *key, bool v)
{
	json_key(w, key);
	return json_bool(w, v);
}

int json_break(struct json *w)
{
	unsigned d = w->depth;

	if (w->err || w->broke)
		return w->err;
	if (w->in_string)
		return json_fail(w, -EINVAL);
	/* the comma goes before the line break, as written by hand before */
	if (d && w->nonempty[d] && !w->has_key[d] && !w->sep_written) {
		if (put(w, ",", 1))
			return w->err;
		w->sep_written = true;
	}
	w->broke = true;
	return put(w, "\n", 1);
}
