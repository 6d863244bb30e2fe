// SPDX-License-Identifier: MIT
/* String building and per-format escaping of names read from target processes. */
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "lib/util.h"

int strbuf_fail(struct strbuf *sb, int err)
{
	if (!sb->err)
		sb->err = err;
	return sb->err;
}

int strbuf_add(struct strbuf *sb, const char *s, size_t len)
{
	int err = sb->err ? sb->err : grow_array((void **)&sb->buf, &sb->cap, sb->len + len + 1, 1);

	if (err)
		return strbuf_fail(sb, err);
	memcpy(sb->buf + sb->len, s, len);
	sb->len += len;
	sb->buf[sb->len] = 0;
	return 0;
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (sb->err)
		return sb->err;
	if (n < 0)
		return strbuf_fail(sb, -EINVAL);
	if ((size_t)n < sizeof(small))
		return strbuf_add(sb, small, n);
	if (grow_array((void **)&sb->buf, &sb->cap, sb->len + n + 1, 1))
		return strbuf_fail(sb, -ENOMEM);
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, n + 1, fmt, ap);
	va_end(ap);
	sb->len += n;
	return 0;
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	sb->err = 0;
	if (sb->buf)
		sb->buf[0] = 0;
}

void strbuf_free(struct strbuf *sb)
{
	free(sb->buf);
	memset(sb, 0, sizeof(*sb));
}

/* Sorted and disjoint, for escape_unsafe()'s binary search. Nonspacing marks that only
 * modify the character before them (variation selectors, combining marks) are ordinary
 * text, and so are U+2028/U+2029, which JSON escapes for its own reasons. */
const struct escape_range escape_unsafe_ranges[] = {
	{ 0x0000, 0x001f },   /* C0 controls */
	{ 0x007f, 0x009f },   /* DEL, C1 controls: U+009B is CSI, U+009D OSC */
	{ 0x00ad, 0x00ad },   /* soft hyphen: drawn only where a line breaks */
	{ 0x061c, 0x061c },   /* Arabic letter mark (bidi) */
	{ 0x115f, 0x1160 },   /* Hangul fillers: letters, valid in identifiers, blank */
	{ 0x180e, 0x180e },   /* Mongolian vowel separator */
	{ 0x200b, 0x200f },   /* zero-width space, non-joiner, joiner; LRM, RLM */
	{ 0x202a, 0x202e },   /* bidi embeddings and overrides */
	{ 0x2060, 0x206f },   /* word joiner, invisible operators, bidi isolates, deprecated */
	{ 0x3164, 0x3164 },   /* Hangul filler */
	{ 0xfeff, 0xfeff },   /* zero-width no-break space (byte order mark) */
	{ 0xffa0, 0xffa0 },   /* halfwidth Hangul filler */
	{ 0xfff9, 0xfffb },   /* interlinear annotation controls: hide the annotation */
	{ 0x1bca0, 0x1bca3 }, /* shorthand format controls */
	{ 0x1d173, 0x1d17a }, /* musical symbol format controls */
	{ 0xe0000, 0xe007f }, /* tags: invisible copies of ASCII */
};
const size_t escape_unsafe_nranges = sizeof(escape_unsafe_ranges) / sizeof(escape_unsafe_ranges[0]);

bool escape_unsafe(uint32_t cp)
{
	size_t lo = 0, hi = escape_unsafe_nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp < escape_unsafe_ranges[mid].first)
			hi = mid;
		else if (cp > escape_unsafe_ranges[mid].last)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

size_t escape_utf8_next(const char *str, uint32_t *cp)
{
	static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	const unsigned char *s = (const unsigned char *)str;
	size_t n, i;
	uint32_t c = s[0];

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c == 0xc0 && s[1] == 0x80) {
		*cp = 0; /* ESCAPE_NUL */
		return 2;
	}
	if ((c & 0xe0) == 0xc0) {
		n = 2;
		c &= 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3;
		c &= 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4;
		c &= 0x07;
	} else {
		return 0;
	}
	/* stops at the terminating NUL, which is not a continuation byte */
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min_cp[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* The visible escape of a non-ASCII code point, the form `pywalk top` shows. buf: 16. */
static const char *visible_cp(uint32_t cp, char *buf)
{
	snprintf(buf, 16, cp <= 0xffff ? "\\u%04x" : "\\U%08x", (unsigned int)cp);
	return buf;
}

int escape_folded(struct strbuf *sb, const char *s)
{
	const char *run = s;
	int err = 0;

	while (*s && !err) {
		unsigned char c = (unsigned char)*s;
		char esc[16];
		const char *e = esc;
		uint32_t cp;
		size_t n = escape_utf8_next(s, &cp);

		if (n == 1 && c >= 0x20 && c != 0x7f && c != ';' && c != '\\') {
			s++;
			continue;
		}
		if (n > 1 && !escape_unsafe(cp)) {
			s += n;
			continue;
		}
		if (!n) {
			/* not UTF-8 (thread names are raw bytes): the byte as itself */
			snprintf(esc, sizeof(esc), "\\x%02x", c);
			n = 1;
		} else if (c == '\n') {
			e = "\\n";
		} else if (c == '\\') {
			e = "\\\\";
		} else if (cp < 0x80) {
			/* ';', other C0 controls, DEL and U+0000 */
			snprintf(esc, sizeof(esc), "\\x%02x", (unsigned int)cp);
		} else {
			visible_cp(cp, esc);
		}
		err = strbuf_add(sb, run, s - run);
		if (!err)
			err = strbuf_add(sb, e, strlen(e));
		s += n;
		run = s;
	}
	if (!err)
		err = strbuf_add(sb, run, s - run);
	return err;
}

enum esc_syntax { ESC_UTF8, ESC_JSON, ESC_JSON_SCRIPT, ESC_HTML, ESC_XML };

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

/* The escape for code point `cp` in `syntax`, or NULL to copy it as is. Needs a
 * buffer of 16 bytes. */
static const char *esc_for(enum esc_syntax syntax, uint32_t cp, char *buf)
{
	if (syntax == ESC_UTF8) {
		/* Protobuf strings carry their length, so U+0000 would survive the file, but
		 * pprof hands names to C tools (graphviz) and to SVG, where U+0000 is not
		 * allowed: it would cut or break the name there. U+FFFD keeps the rest. */
		return cp ? NULL : REPLACEMENT;
	}
	if (syntax == ESC_HTML || syntax == ESC_XML) {
		/* not characters XML 1.0 allows: a parser would reject the whole file */
		if (syntax == ESC_XML && (cp == 0xfffe || cp == 0xffff))
			return REPLACEMENT;
		switch (cp) {
		case '&':
			return "&amp;";
		case '<':
			return "&lt;";
		case '>':
			return "&gt;";
		case '"':
			return "&quot;";
		case '\'':
			return "&#39;";
		case '\t':
		case '\n':
			return NULL;
		case 0:
			return "\\x00"; /* shown, as the page and top show it */
		}
		/* C0 controls and DEL are parse errors in HTML text */
		if (cp < 0x20 || cp == 0x7f)
			return REPLACEMENT;
		return cp >= 0x80 && escape_unsafe(cp) ? visible_cp(cp, buf) : NULL;
	}
	switch (cp) {
	case '"':
		return "\\\"";
	case '\\':
		return "\\\\";
	case '\b':
		return "\\b";
	case '\f':
		return "\\f";
	case '\n':
		return "\\n";
	case '\r':
		return "\\r";
	case '\t':
		return "\\t";
	case 0x2028:
		return "\\u2028";
	case 0x2029:
		return "\\u2029";
	}
	if (syntax == ESC_JSON_SCRIPT && (cp == '<' || cp == '>' || cp == '&')) {
		snprintf(buf, 16, "\\u%04x", (unsigned int)cp);
		return buf;
	}
	/* DEL is left raw as before: legal JSON, and terminals ignore it */
	if (cp < 0x20 || (cp >= 0x80 && cp <= 0xffff && escape_unsafe(cp))) {
		snprintf(buf, 16, "\\u%04x", (unsigned int)cp);
		return buf;
	}
	if (cp > 0xffff && escape_unsafe(cp)) {
		/* JSON has only \uXXXX: a UTF-16 surrogate pair */
		snprintf(buf, 16, "\\u%04x\\u%04x", (unsigned int)(0xd800 + ((cp - 0x10000) >> 10)),
			 (unsigned int)(0xdc00 + ((cp - 0x10000) & 0x3ff)));
		return buf;
	}
	return NULL;
}

/* Copy s, replacing malformed UTF-8 with U+FFFD and escaping per `syntax`; unchanged
 * runs are appended in one piece. */
static int escape_text(struct strbuf *sb, const char *s, enum esc_syntax syntax)
{
	const char *p = s, *run = p;
	int err = 0;

	while (*p && !err) {
		char buf[16];
		const char *esc;
		uint32_t cp;
		size_t n = escape_utf8_next(p, &cp);

		if (n) {
			esc = esc_for(syntax, cp, buf);
			if (!esc) {
				p += n;
				continue;
			}
		} else {
			/* JSON gets the escape: one form for the replacement, whatever the bytes */
			esc = syntax == ESC_JSON || syntax == ESC_JSON_SCRIPT ? "\\ufffd"
									      : REPLACEMENT;
			n = 1;
		}
		err = strbuf_add(sb, run, p - run);
		if (!err)
			err = strbuf_add(sb, esc, strlen(esc));
		p += n;
		run = p;
	}
	if (!err)
		err = strbuf_add(sb, run, p - run);
	return err;
}

int escape_utf8(struct strbuf *sb, const char *s)
{
	return escape_text(sb, s, ESC_UTF8);
}

int escape_json(struct strbuf *sb, const char *s)
{
	return escape_text(sb, s, ESC_JSON);
}

int escape_json_script(struct strbuf *sb, const char *s)
{
	return escape_text(sb, s, ESC_JSON_SCRIPT);
}

int escape_html(struct strbuf *sb, const char *s)
{
	return escape_text(sb, s, ESC_HTML);
}

int escape_xml(struct strbuf *sb, const char *s)
{
	return escape_text(sb, s, ESC_XML);
}

void escape_label(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	for (; s && *s && n + 1 < size; s++) {
		char c = *s;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == ':' ||
			  c == '/';

		buf[n++] = ok ? c : '_';
	}
	if (size)
		buf[n] = 0;
}
