/* SPDX-License-Identifier: MIT */
/* Escaping of untrusted names for each output syntax. All functions append to a growable
 * buffer and return 0 or -ENOMEM. */
#ifndef PW_ESCAPE_H
#define PW_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growable string that keeps its first error: once an append fails, later ones do
 * nothing and return it, so a writer appends a whole message and checks `err` once. */
struct strbuf {
	char *buf;
	size_t len, cap;
	int err; /* 0, or the first append's failure (a negative errno) */
};

int strbuf_add(struct strbuf *sb, const char *s, size_t len);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record a failure of the caller's own (one the buffer did not see); returns sb->err. */
int strbuf_fail(struct strbuf *sb, int err);
/* Empty, and the error forgotten: a fresh start for a scratch buffer. */
void strbuf_reset(struct strbuf *sb);
void strbuf_free(struct strbuf *sb);

/* Names travel as C strings, so U+0000 inside one is kept as the overlong two-byte form
 * C0 80, which no valid UTF-8 holds: it cannot end the string early, and every escaper
 * (and the top view) reads it as U+0000 and writes it in its own syntax. */
#define ESCAPE_NUL "\xc0\x80"

/* Length (1-4) of the UTF-8 sequence at s and its code point in *cp; ESCAPE_NUL is 2 with
 * *cp 0. 0 when the bytes are not well-formed (stray continuation, overlong, surrogate,
 * past U+10FFFF, cut short by the terminator): the caller decides what stands for s[0]. */
size_t escape_utf8_next(const char *s, uint32_t *cp);

/* Code points no writer shows raw, as inclusive ranges in ascending order: C0 controls
 * and DEL, C1 controls (U+009B is CSI to terminals), bidirectional controls, and
 * characters that draw nothing (zero-width, invisible operators, fillers, tags), which
 * could reorder or hide part of a name. ASCII controls keep each syntax's older escapes;
 * the rest are written as \uXXXX (\UXXXXXXXX past U+FFFF) where the syntax is text. */
struct escape_range {
	uint32_t first, last;
};
extern const struct escape_range escape_unsafe_ranges[];
extern const size_t escape_unsafe_nranges;
bool escape_unsafe(uint32_t cp);

/* Collapsed-stack text: ';' separates frames and a newline ends a stack, so both (plus '\\'
 * and other control bytes) are written as backslash escapes: \x3b, \n, \\, \xNN, with
 * U+0000 as \x00. The other unsafe code points become \uXXXX (\UXXXXXXXX past U+FFFF)
 * and a byte that is not well-formed UTF-8 (thread names are raw bytes) \xNN, so the
 * output is valid UTF-8 and every escape reads back unambiguously. */
int escape_folded(struct strbuf *sb, const char *s);

/* The rest take any bytes and always produce valid UTF-8: a byte that is not part of a
 * well-formed sequence becomes U+FFFD (thread names from /proc are raw bytes). */

/* Raw text for binary formats (pprof strings), where nothing else needs escaping; U+0000
 * becomes U+FFFD. */
int escape_utf8(struct strbuf *sb, const char *s);
/* Inside a JSON string (quotes not added): '"', '\\' and control characters as JSON
 * escapes; U+2028/U+2029 as \u2028/\u2029 so the document is also valid JavaScript; the
 * other unsafe code points as \uXXXX (a surrogate pair past U+FFFF), so a parser gets the
 * name back whole (U+0000 included) and the file shows no raw control when printed. */
int escape_json(struct strbuf *sb, const char *s);
/* escape_json, plus '<', '>' and '&' as \u003c, \u003e, \u0026: the JSON can then sit
 * inside an HTML <script> element, where "</script>" or "<!--" would end or change it. */
int escape_json_script(struct strbuf *sb, const char *s);
/* HTML text or a quoted attribute value: & < > " ' as character references; control
 * characters other than tab and newline as U+FFFD, except U+0000 which is shown as \x00;
 * the other unsafe code points as visible \uXXXX text (\UXXXXXXXX past U+FFFF). */
int escape_html(struct strbuf *sb, const char *s);
/* escape_html for XML 1.0 text (the SVG flame graph), which also has no U+FFFE or U+FFFF:
 * those become U+FFFD. */
int escape_xml(struct strbuf *sb, const char *s);

/* `s` as a label value every back end accepts (profile labels, service names, Prometheus
 * label values): letters, digits and ._-:/ kept, every other byte '_', cut to fit buf. */
void escape_label(const char *s, char *buf, size_t size);

#endif
