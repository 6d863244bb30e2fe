// SPDX-License-Identifier: MIT
/* String building and per-format escaping of names read from target processes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "util.h"

int strbuf_add(struct strbuf *sb, const char *s, size_t len)
{
	int err = grow_array((void **)&sb->buf, &sb->cap, sb->len + len + 1, 1);

	if (err)
		return err;
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
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < sizeof(small))
		return strbuf_add(sb, small, n);
	if (grow_array((void **)&sb->buf, &sb->cap, sb->len + n + 1, 1))
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, n + 1, fmt, ap);
	va_end(ap);
	sb->len += n;
	return 0;
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = 0;
}

void strbuf_free(struct strbuf *sb)
{
	free(sb->buf);
	memset(sb, 0, sizeof(*sb));
}

int escape_folded(struct strbuf *sb, const char *s)
{
	const char *run = s;
	int err = 0;

	for (; *s && !err; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];

		if (c >= 0x20 && c != 0x7f && c != ';' && c != '\\')
			continue;
		err = strbuf_add(sb, run, s - run);
		if (c == '\n')
			strcpy(esc, "\\n");
		else if (c == '\\')
			strcpy(esc, "\\\\");
		else
			snprintf(esc, sizeof(esc), "\\x%02x", c);
		if (!err)
			err = strbuf_add(sb, esc, strlen(esc));
		run = s + 1;
	}
	if (!err)
		err = strbuf_add(sb, run, s - run);
	return err;
}

/* Length of the well-formed UTF-8 sequence at s (1-4), or 0 if it is not one: stray
 * continuation bytes, overlong forms, surrogates and code points past U+10FFFF all
 * count as malformed (RFC 3629). *cp gets the code point. */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp)
{
	static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t n, i;
	uint32_t c = s[0];

	if (c < 0x80) {
		*cp = c;
		return 1;
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

enum esc_syntax { ESC_UTF8, ESC_JSON, ESC_JSON_SCRIPT, ESC_HTML };

/* The escape for code point `cp` in `syntax`, or NULL to copy it as is. Needs a
 * buffer of 16 bytes. */
static const char *esc_for(enum esc_syntax syntax, uint32_t cp, char *buf)
{
	if (syntax == ESC_UTF8)
		return NULL;
	if (syntax == ESC_HTML) {
		switch (cp) {
		case '&': return "&amp;";
		case '<': return "&lt;";
		case '>': return "&gt;";
		case '"': return "&quot;";
		case '\'': return "&#39;";
		case '\t':
		case '\n': return NULL;
		}
		/* C0 controls and DEL are parse errors in HTML text */
		return cp < 0x20 || cp == 0x7f ? "\xef\xbf\xbd" : NULL;
	}
	switch (cp) {
	case '"': return "\\\"";
	case '\\': return "\\\\";
	case '\b': return "\\b";
	case '\f': return "\\f";
	case '\n': return "\\n";
	case '\r': return "\\r";
	case '\t': return "\\t";
	case 0x2028: return "\\u2028";
	case 0x2029: return "\\u2029";
	}
	if (syntax == ESC_JSON_SCRIPT && (cp == '<' || cp == '>' || cp == '&')) {
		snprintf(buf, 16, "\\u%04x", (unsigned int)cp);
		return buf;
	}
	if (cp < 0x20) {
		snprintf(buf, 16, "\\u%04x", (unsigned int)cp);
		return buf;
	}
	return NULL;
}

/* Copy s, replacing malformed UTF-8 with U+FFFD and escaping per `syntax`; unchanged
 * runs are appended in one piece. */
static int escape_text(struct strbuf *sb, const char *s, enum esc_syntax syntax)
{
	static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
	const unsigned char *p = (const unsigned char *)s, *run = p;
	int err = 0;

	while (*p && !err) {
		char buf[16];
		const char *esc;
		uint32_t cp;
		size_t n = utf8_seq(p, &cp);

		if (n) {
			esc = esc_for(syntax, cp, buf);
			if (!esc) {
				p += n;
				continue;
			}
		} else {
			/* JSON gets the escape: one form for the replacement, whatever the bytes */
			esc = syntax == ESC_JSON || syntax == ESC_JSON_SCRIPT ? "\\ufffd"
									      : replacement;
			n = 1;
		}
		err = strbuf_add(sb, (const char *)run, p - run);
		if (!err)
			err = strbuf_add(sb, esc, strlen(esc));
		p += n;
		run = p;
	}
	if (!err)
		err = strbuf_add(sb, (const char *)run, p - run);
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
