// SPDX-License-Identifier: MIT
/* libFuzzer target: every escaper of escape.h over arbitrary bytes. The checks are the
 * promises escape.h documents, read from the output side: what each syntax must never
 * contain raw, and that the escapes themselves are well-formed. */
#include <string.h>

#include "escape.h"
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

/* Collapsed stacks: no raw ';', newline, control byte or DEL; every backslash starts \\, \n
 * or \xNN; undoing the escapes gives the input back (a name is never lost). */
static void check_folded(const char *in, const char *out, size_t len)
{
	char *back = malloc(len + 1);
	size_t j = 0;

	FUZZ_CHECK(back, "malloc");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)out[i];

		FUZZ_CHECK(c >= 0x20 && c != 0x7f && c != ';', "folded: raw byte %#x at %zu", c, i);
		if (c != '\\') {
			back[j++] = (char)c;
			continue;
		}
		FUZZ_CHECK(i + 1 < len, "folded: lone backslash at the end");
		if (out[i + 1] == '\\' || out[i + 1] == 'n') {
			back[j++] = out[i + 1] == 'n' ? '\n' : '\\';
			i++;
		} else {
			FUZZ_CHECK(out[i + 1] == 'x' && i + 3 < len && hexval(out[i + 2]) >= 0 &&
					   hexval(out[i + 3]) >= 0,
				   "folded: bad escape at %zu", i);
			back[j++] = (char)(hexval(out[i + 2]) << 4 | hexval(out[i + 3]));
			i += 3;
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
 * control but tab and newline, no DEL. */
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
