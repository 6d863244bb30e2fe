/* SPDX-License-Identifier: MIT */
/* Escaping of untrusted names for each output syntax. All functions append to a growable
 * buffer and return 0 or -ENOMEM. */
#ifndef PW_ESCAPE_H
#define PW_ESCAPE_H

#include <stddef.h>

struct strbuf {
	char *buf;
	size_t len, cap;
};

int strbuf_add(struct strbuf *sb, const char *s, size_t len);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_reset(struct strbuf *sb);
void strbuf_free(struct strbuf *sb);

/* Collapsed-stack text: ';' separates frames and a newline ends a stack, so both (plus '\\'
 * and other control bytes) are written as backslash escapes: \x3b, \n, \\, \xNN. */
int escape_folded(struct strbuf *sb, const char *s);

/* The rest take any bytes and always produce valid UTF-8: a byte that is not part of a
 * well-formed sequence becomes U+FFFD (thread names from /proc are raw bytes). */

/* Raw text for binary formats (pprof strings), where nothing else needs escaping. */
int escape_utf8(struct strbuf *sb, const char *s);
/* Inside a JSON string (quotes not added): '"', '\\' and control characters as JSON
 * escapes; U+2028/U+2029 as \u2028/\u2029 so the document is also valid JavaScript. */
int escape_json(struct strbuf *sb, const char *s);
/* escape_json, plus '<', '>' and '&' as \u003c, \u003e, \u0026: the JSON can then sit
 * inside an HTML <script> element, where "</script>" or "<!--" would end or change it. */
int escape_json_script(struct strbuf *sb, const char *s);
/* HTML text or a quoted attribute value: & < > " ' as character references; control
 * characters other than tab and newline as U+FFFD. */
int escape_html(struct strbuf *sb, const char *s);

#endif
