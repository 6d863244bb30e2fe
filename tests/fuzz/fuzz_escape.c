// SPDX-License-Identifier: MIT
/* libFuzzer target: every escaper of escape.h over arbitrary bytes. The checks are the
 * promises escape.h documents, read from the output side: what each syntax must never
 * contain raw, and that the escapes themselves are well-formed. */
#include <string.h>

#include "lib/escape.h"
#include "fuzz.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Append the UTF-8 form of `cp` (a scalar value, or 0 as ESCAPE_NUL) to back[*j]. */
static void put_cp(char *back, size_t *j, uint32_t cp)
{
	if (!cp) {
		memcpy(back + *j, ESCAPE_NUL, 2);
		*j += 2;
	} else if (cp < 0x80) {
		back[(*j)++] = (char)cp;
	} else if (cp < 0x800) {
		back[(*j)++] = (char)(0xc0 | cp >> 6);
		back[(*j)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		back[(*j)++] = (char)(0xe0 | cp >> 12);
		back[(*j)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		back[(*j)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		back[(*j)++] = (char)(0xf0 | cp >> 18);
		back[(*j)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		back[(*j)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		back[(*j)++] = (char)(0x80 | (cp & 0x3f));
	}
}

/* `n` hex digits at out[i..]: their value, or -1. */
static int64_t hexrun(const char *out, size_t len, size_t i, int n)
{
	int64_t v = 0;

	if (i + n > len)
		return -1;
	for (int k = 0; k < n; k++) {
		if (hexval(out[i + k]) < 0)
			return -1;
		v = v << 4 | hexval(out[i + k]);
	}
	return v;
}

/* Collapsed stacks: valid UTF-8 with no raw ';', control byte, DEL or other unsafe code
 * point; every backslash starts \\, \n, \xNN, \uXXXX or \UXXXXXXXX naming an unsafe
 * code point; undoing the escapes gives the input back (a name is never lost; \x00 is the
 * internal U+0000, ESCAPE_NUL). */
static void check_folded(const char *in, const char *out, size_t len)
{
	char *back = malloc(len + 1);
	size_t j = 0;

	FUZZ_CHECK(back, "malloc");
	FUZZ_CHECK(fuzz_utf8_invalid_at((const uint8_t *)out, len) == len,
		   "folded: invalid UTF-8 at %zu", fuzz_utf8_invalid_at((const uint8_t *)out, len));
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = fuzz_utf8_next((const uint8_t *)out + i, len - i, &cp);
		int64_t v;

		FUZZ_CHECK(cp >= 0x20 && cp != ';' && !escape_unsafe(cp),
			   "folded: raw U+%04X at %zu", cp, i);
		if (cp != '\\') {
			memcpy(back + j, out + i, n);
			j += n;
			i += n;
			continue;
		}
		FUZZ_CHECK(i + 1 < len, "folded: lone backslash at the end");
		switch (out[i + 1]) {
		case '\\':
		case 'n':
			back[j++] = out[i + 1] == 'n' ? '\n' : '\\';
			i += 2;
			break;
		case 'x':
			v = hexrun(out, len, i + 2, 2);
			FUZZ_CHECK(v >= 0, "folded: bad \\x at %zu", i);
			if (v)
				back[j++] = (char)v;
			else
				put_cp(back, &j, 0);
			i += 4;
			break;
		case 'u':
		case 'U':
			v = hexrun(out, len, i + 2, out[i + 1] == 'u' ? 4 : 8);
			FUZZ_CHECK(v > 0 && escape_unsafe((uint32_t)v) && v >= 0x80,
				   "folded: bad \\%c at %zu", out[i + 1], i);
			FUZZ_CHECK(out[i + 1] == 'u' ? v <= 0xffff : v > 0xffff,
				   "folded: \\%c for U+%04llX", out[i + 1], (long long)v);
			put_cp(back, &j, (uint32_t)v);
			i += out[i + 1] == 'u' ? 6 : 10;
			break;
		default:
			FUZZ_CHECK(false, "folded: bad escape at %zu", i);
		}
	}
	back[j] = 0;
	FUZZ_CHECK(j == strlen(in) && !memcmp(back, in, j),
		   "folded: escapes do not give the input back");
	free(back);
}

/* Inside a JSON string: no raw '"', control character, U+2028/U+2029 (or, for a script
 * element, '<', '>', '&'); escapes are JSON's, and \u ones name scalar values (surrogates
 * only as pairs), so the text decodes to valid Unicode. */
static void check_json(const char *out, size_t len, bool script)
{
	for (size_t i = 0; i < len;) {
		const uint8_t *p = (const uint8_t *)out + i;
		uint32_t cp;
		size_t n = fuzz_utf8_next(p, len - i, &cp);

		FUZZ_CHECK(n, "json: invalid UTF-8 at %zu", i);
		FUZZ_CHECK(cp >= 0x20 && cp != '"' && cp != 0x2028 && cp != 0x2029,
			   "json: raw U+%04X at %zu", cp, i);
		/* DEL is legal raw in JSON and the writers keep it so */
		FUZZ_CHECK(cp == 0x7f || !escape_unsafe(cp), "json: raw unsafe U+%04X at %zu", cp,
			   i);
		if (script)
			FUZZ_CHECK(cp != '<' && cp != '>' && cp != '&',
				   "json script: raw '%c' at %zu", (char)cp, i);
		if (cp != '\\') {
			i += n;
			continue;
		}
		FUZZ_CHECK(i + 1 < len, "json: lone backslash at the end");
		if (strchr("\"\\/bfnrt", out[i + 1]) && out[i + 1]) {
			i += 2;
			continue;
		}
		FUZZ_CHECK(out[i + 1] == 'u' && i + 5 < len, "json: bad escape at %zu", i);
		cp = 0;
		for (int k = 2; k < 6; k++) {
			FUZZ_CHECK(hexval(out[i + k]) >= 0, "json: bad \\u at %zu", i);
			cp = cp << 4 | (uint32_t)hexval(out[i + k]);
		}
		FUZZ_CHECK(cp < 0xdc00 || cp > 0xdfff, "json: lone low surrogate at %zu", i);
		if (cp >= 0xd800 && cp <= 0xdbff) {
			FUZZ_CHECK(i + 11 < len && out[i + 6] == '\\' && out[i + 7] == 'u',
				   "json: lone high surrogate at %zu", i);
			cp = 0;
			for (int k = 8; k < 12; k++) {
				FUZZ_CHECK(hexval(out[i + k]) >= 0, "json: bad \\u at %zu", i + 6);
				cp = cp << 4 | (uint32_t)hexval(out[i + k]);
			}
			FUZZ_CHECK(cp >= 0xdc00 && cp <= 0xdfff, "json: unpaired surrogate at %zu",
				   i);
			i += 6;
		}
		i += 6;
	}
}

/* '&' at out[i] must start a character reference: &name; &#digits; or &#xhex; */
static void check_reference(const char *out, size_t len, size_t i)
{
	size_t j = i + 1;

	if (j < len && out[j] == '#') {
		bool hex = j + 1 < len && (out[j + 1] == 'x' || out[j + 1] == 'X');

		j += hex ? 2 : 1;
		while (j < len && (hex ? hexval(out[j]) >= 0 : out[j] >= '0' && out[j] <= '9'))
			j++;
		FUZZ_CHECK(j > i + (hex ? 3 : 2), "html: empty numeric reference at %zu", i);
	} else {
		while (j < len && (out[j] | 0x20) >= 'a' && (out[j] | 0x20) <= 'z')
			j++;
		FUZZ_CHECK(j > i + 1, "html: raw '&' at %zu", i);
	}
	FUZZ_CHECK(j < len && out[j] == ';', "html: unterminated reference at %zu", i);
}

/* HTML text or attribute value: no raw < > " ', '&' only as a character reference, no C0
 * control but tab and newline, no DEL, no other unsafe code point raw. */
static void check_html(const char *out, size_t len)
{
	for (size_t i = 0; i < len;) {
		const uint8_t *p = (const uint8_t *)out + i;
		uint32_t cp;
		size_t n = fuzz_utf8_next(p, len - i, &cp);

		FUZZ_CHECK(n, "html: invalid UTF-8 at %zu", i);
		FUZZ_CHECK(cp != '<' && cp != '>' && cp != '"' && cp != '\'',
			   "html: raw '%c' at %zu", (char)cp, i);
		FUZZ_CHECK((cp >= 0x20 || cp == '\t' || cp == '\n') && cp != 0x7f,
			   "html: raw control U+%04X at %zu", cp, i);
		FUZZ_CHECK(cp == '\t' || cp == '\n' || !escape_unsafe(cp),
			   "html: raw unsafe U+%04X at %zu", cp, i);
		if (cp == '&')
			check_reference(out, len, i);
		i += n;
	}
}

typedef int (*escaper)(struct strbuf *, const char *);

/* Run one escaper after a prefix (they append) and return the escaped part. */
static const char *run(struct strbuf *sb, escaper fn, const char *in, size_t *len)
{
	static const char prefix[] = "pre;\"<";

	strbuf_reset(sb);
	FUZZ_CHECK(!strbuf_add(sb, prefix, sizeof(prefix) - 1), "strbuf_add");
	FUZZ_CHECK(!fn(sb, in), "escaper failed");
	FUZZ_CHECK(sb->len >= sizeof(prefix) - 1 && !memcmp(sb->buf, prefix, sizeof(prefix) - 1),
		   "prefix overwritten");
	FUZZ_CHECK(strlen(sb->buf) == sb->len, "NUL inside the output or length wrong");
	*len = sb->len - (sizeof(prefix) - 1);
	return sb->buf + sizeof(prefix) - 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf sb = { 0 };
	char *in = fuzz_cstr(data, size);
	const char *out;
	size_t len, inlen = strlen(in);
	bool plain = true;

	/* letters, digits, space and '_' are text in every syntax and are never changed */
	for (size_t i = 0; i < inlen; i++)
		plain &= (in[i] >= 'a' && in[i] <= 'z') || (in[i] >= 'A' && in[i] <= 'Z') ||
			 (in[i] >= '0' && in[i] <= '9') || in[i] == ' ' || in[i] == '_';

	out = run(&sb, escape_folded, in, &len);
	check_folded(in, out, len);
	FUZZ_CHECK(!plain || (len == inlen && !memcmp(out, in, len)), "folded changed plain text");

	out = run(&sb, escape_utf8, in, &len);
	FUZZ_CHECK(fuzz_utf8_invalid_at((const uint8_t *)out, len) == len, "utf8: invalid at %zu",
		   fuzz_utf8_invalid_at((const uint8_t *)out, len));
	FUZZ_CHECK(!plain || (len == inlen && !memcmp(out, in, len)), "utf8 changed plain text");

	out = run(&sb, escape_json, in, &len);
	check_json(out, len, false);
	FUZZ_CHECK(!plain || (len == inlen && !memcmp(out, in, len)), "json changed plain text");

	out = run(&sb, escape_json_script, in, &len);
	check_json(out, len, true);
	FUZZ_CHECK(!plain || (len == inlen && !memcmp(out, in, len)), "script changed plain text");

	out = run(&sb, escape_html, in, &len);
	check_html(out, len);
	FUZZ_CHECK(!plain || (len == inlen && !memcmp(out, in, len)), "html changed plain text");

	strbuf_free(&sb);
	free(in);
	return 0;
}
