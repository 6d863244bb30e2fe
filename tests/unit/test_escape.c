// SPDX-License-Identifier: MIT
/* Unit tests for user/lib/escape.c: each syntax's escapes, malformed UTF-8 (which /proc thread
 * names can hold) turned into U+FFFD, the code points no writer shows raw (C1, bidi and
 * invisible characters) and U+0000 in its internal form, and strbuf growth. */
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/escape.h"

#define FFFD "\xef\xbf\xbd"

/* Escape s with fn and compare with want. */
static void check(int (*fn)(struct strbuf *, const char *), const char *s, const char *want)
{
	struct strbuf sb = { 0 };

	assert_int_equal(fn(&sb, s), 0);
	assert_non_null(sb.buf);
	assert_string_equal(sb.buf, want);
	assert_int_equal(sb.len, strlen(want));
	strbuf_free(&sb);
}

static void test_folded_escapes_separators_and_controls(void **state)
{
	(void)state;
	check(escape_folded, "a;b\nc\\d\x01 e", "a\\x3bb\\nc\\\\d\\x01 e");
}

static void test_utf8_keeps_wellformed_text(void **state)
{
	(void)state;
	/* ASCII, 2-, 3- and 4-byte sequences, and the syntax characters others escape */
	check(escape_utf8, "a;<\"\\\n\xc3\xbc\xe5\x87\xbd\xf0\x9f\x94\xa5",
	      "a;<\"\\\n\xc3\xbc\xe5\x87\xbd\xf0\x9f\x94\xa5");
}

static void test_utf8_replaces_malformed_bytes(void **state)
{
	(void)state;
	check(escape_utf8,
	      "a\xff"
	      "b",
	      "a" FFFD "b");					     /* never valid */
	check(escape_utf8, "\x80x", FFFD "x");			     /* stray continuation */
	check(escape_utf8, "\xc0\xaf", FFFD FFFD);		     /* overlong '/' */
	check(escape_utf8, "\xed\xa0\x80", FFFD FFFD FFFD);	     /* UTF-16 surrogate */
	check(escape_utf8, "\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD); /* past U+10FFFF */
	check(escape_utf8, "end\xe2\x82", "end" FFFD FFFD);	     /* cut short by the NUL */
}

static void test_json_escapes_quotes_backslash_controls(void **state)
{
	(void)state;
	check(escape_json, "q\"b\\n\nr\rt\tb\bf\fc\x01\x1f",
	      "q\\\"b\\\\n\\nr\\rt\\tb\\bf\\fc\\u0001\\u001f");
	/* DEL and non-ASCII are legal JSON as they are */
	check(escape_json, "\x7f\xc3\xbc", "\x7f\xc3\xbc");
}

static void test_json_escapes_js_line_terminators(void **state)
{
	(void)state;
	/* legal in JSON but they end a line in JavaScript before ES2019 */
	check(escape_json,
	      "a\xe2\x80\xa8"
	      "b\xe2\x80\xa9",
	      "a\\u2028b\\u2029");
}

static void test_json_replaces_malformed_utf8(void **state)
{
	(void)state;
	check(escape_json, "x\xfey", "x\\ufffdy");
}

static void test_json_keeps_angle_brackets_outside_html(void **state)
{
	(void)state;
	check(escape_json, "<a>&", "<a>&");
}

static void test_json_script_cannot_close_the_script_element(void **state)
{
	(void)state;
	check(escape_json_script, "</script><script>x=1</script>",
	      "\\u003c/script\\u003e\\u003cscript\\u003ex=1\\u003c/script\\u003e");
	check(escape_json_script, "<!-- &amp; \"", "\\u003c!-- \\u0026amp; \\\"");
}

static void test_html_escapes_markup_characters(void **state)
{
	(void)state;
	check(escape_html, "<a href=\"x\">&'</a>",
	      "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
}

static void test_html_replaces_controls_keeps_text(void **state)
{
	(void)state;
	check(escape_html, "a\tb\nc\x01\x7f\xe5\x87\xbd\xff",
	      "a\tb\nc" FFFD FFFD "\xe5\x87\xbd" FFFD);
}

/* XML 1.0 has no U+FFFE/U+FFFF (a parser rejects the file); the rest is escape_html's */
static void test_xml_replaces_what_xml_forbids(void **state)
{
	(void)state;
	check(escape_xml, "<a>&'\"\x01" ESCAPE_NUL "\xef\xbf\xbe\xef\xbf\xbf\xe2\x80\xae",
	      "&lt;a&gt;&amp;&#39;&quot;" FFFD "\\x00" FFFD FFFD "\\u202e");
}

static void test_escapes_append_and_grow(void **state)
{
	struct strbuf sb = { 0 };
	char *big = malloc(100001);

	(void)state;
	assert_non_null(big);
	memset(big, '<', 100000);
	big[100000] = 0;
	assert_int_equal(strbuf_add(&sb, "head:", 5), 0);
	assert_int_equal(escape_json_script(&sb, big), 0);
	assert_int_equal(sb.len, 5 + 6 * 100000);
	assert_memory_equal(sb.buf, "head:\\u003c", 11);
	assert_string_equal(sb.buf + sb.len - 6, "\\u003c");
	strbuf_free(&sb);
	free(big);
}

static void test_empty_string_appends_nothing(void **state)
{
	struct strbuf sb = { 0 };

	(void)state;
	assert_int_equal(escape_json(&sb, ""), 0);
	assert_int_equal(escape_html(&sb, ""), 0);
	assert_int_equal(escape_utf8(&sb, ""), 0);
	assert_int_equal(sb.len, 0);
	strbuf_free(&sb);
}

/* UTF-8 of cp (1-4 bytes, NUL-terminated). */
static void utf8_of(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp, out[1] = 0;
	} else if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3f)), out[2] = 0;
	} else if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12), out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f)), out[3] = 0;
	} else {
		out[0] = (char)(0xf0 | cp >> 18), out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		out[2] = (char)(0x80 | (cp >> 6 & 0x3f)), out[3] = (char)(0x80 | (cp & 0x3f));
		out[4] = 0;
	}
}

/* Every class the review found passing raw: C1 controls (U+009B is CSI), bidi controls,
 * zero-width and other invisible characters. */
static const uint32_t unsafe_cps[] = {
	0x0080, 0x0085, 0x009b, 0x009d, 0x009f,			/* C1 */
	0x202a, 0x202b, 0x202c, 0x202d, 0x202e,			/* embeddings, overrides */
	0x2066, 0x2067, 0x2068, 0x2069,				/* isolates */
	0x200e, 0x200f, 0x061c,					/* LRM, RLM, ALM */
	0x200b, 0x200c, 0x200d, 0x2060, 0xfeff,			/* zero-width */
	0x00ad, 0x180e, 0x2061, 0x2062, 0x2063, 0x2064, 0x3164, /* invisible */
};

static void test_unsafe_code_points_are_escaped_in_every_text_syntax(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(unsafe_cps) / sizeof(unsafe_cps[0]); i++) {
		char raw[5], in[16], esc[16];

		assert_true(escape_unsafe(unsafe_cps[i]));
		utf8_of(unsafe_cps[i], raw);
		snprintf(in, sizeof(in), "a%sb", raw);
		snprintf(esc, sizeof(esc), "a\\u%04xb", (unsigned int)unsafe_cps[i]);
		/* folded and HTML: visible text; JSON: an escape a parser turns back */
		check(escape_folded, in, esc);
		check(escape_json, in, esc);
		check(escape_json_script, in, esc);
		check(escape_html, in, esc);
		/* pprof keeps the name as it is: protobuf has no escapes */
		check(escape_utf8, in, in);
	}
}

static void test_unsafe_code_points_past_the_bmp(void **state)
{
	(void)state;
	/* a tag character: an invisible copy of ASCII 'A' */
	assert_true(escape_unsafe(0xe0041));
	check(escape_folded, "x\xf3\xa0\x81\x81", "x\\U000e0041");
	check(escape_html, "x\xf3\xa0\x81\x81", "x\\U000e0041");
	check(escape_json, "x\xf3\xa0\x81\x81", "x\\udb40\\udc41");
	check(escape_json_script, "x\xf3\xa0\x81\x81", "x\\udb40\\udc41");
	check(escape_utf8, "x\xf3\xa0\x81\x81", "x\xf3\xa0\x81\x81");
}

static void test_ordinary_text_stays_raw_in_every_syntax(void **state)
{
	/* ü, 函, 🔥, no-break space, a combining accent, VS16, and the neighbours of listed
	 * ranges: only the listed code points are escaped */
	static const char *const raw[] = {
		"\xc3\xbc",	"\xe5\x87\xbd", "\xf0\x9f\x94\xa5",
		"\xc2\xa0",	"e\xcc\x81",	"\xe2\x9d\xa4\xef\xb8\x8f",
		"\xc2\xae",	"\xe2\x80\x8a", "\xe2\x80\x90",
		"\xe2\x80\xaf", "\xe2\x81\xb0", "\xef\xbb\xbe",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]); i++) {
		check(escape_folded, raw[i], raw[i]);
		check(escape_json, raw[i], raw[i]);
		check(escape_json_script, raw[i], raw[i]);
		check(escape_html, raw[i], raw[i]);
		check(escape_utf8, raw[i], raw[i]);
	}
	assert_false(escape_unsafe(0xa0));
	assert_false(escape_unsafe(0x200a));
	assert_false(escape_unsafe(0x2070));
	assert_false(escape_unsafe(0xfe0f));
	assert_false(escape_unsafe(0x1f525));
	assert_false(escape_unsafe(0xe0100));
}

static void test_nul_in_internal_form_is_written_per_syntax(void **state)
{
	uint32_t cp = 1;

	(void)state;
	assert_int_equal(escape_utf8_next(ESCAPE_NUL "x", &cp), 2);
	assert_int_equal(cp, 0);
	check(escape_folded, "nul" ESCAPE_NUL "after", "nul\\x00after");
	check(escape_json, "nul" ESCAPE_NUL "after", "nul\\u0000after");
	check(escape_json_script, "nul" ESCAPE_NUL "after", "nul\\u0000after");
	check(escape_html, "nul" ESCAPE_NUL "after", "nul\\x00after");
	/* pprof: U+FFFD, as graphviz and SVG cannot hold U+0000 */
	check(escape_utf8, "nul" ESCAPE_NUL "after", "nul" FFFD "after");
}

static void test_folded_writes_malformed_bytes_as_hex(void **state)
{
	(void)state;
	/* a lone 0x9b is CSI to an 8-bit terminal; the output stays valid UTF-8 */
	check(escape_folded,
	      "a\x9b"
	      "b\xff",
	      "a\\x9bb\\xff");
	check(escape_folded, "\xc0\xaf\xed\xa0\x80", "\\xc0\\xaf\\xed\\xa0\\x80");
	check(escape_folded, "end\xe2\x82", "end\\xe2\\x82");
	check(escape_json,
	      "a\x9b"
	      "b",
	      "a\\ufffdb");
	check(escape_html,
	      "a\x9b"
	      "b",
	      "a" FFFD "b");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_escapes_separators_and_controls),
		cmocka_unit_test(test_utf8_keeps_wellformed_text),
		cmocka_unit_test(test_utf8_replaces_malformed_bytes),
		cmocka_unit_test(test_json_escapes_quotes_backslash_controls),
		cmocka_unit_test(test_json_escapes_js_line_terminators),
		cmocka_unit_test(test_json_replaces_malformed_utf8),
		cmocka_unit_test(test_json_keeps_angle_brackets_outside_html),
		cmocka_unit_test(test_json_script_cannot_close_the_script_element),
		cmocka_unit_test(test_html_escapes_markup_characters),
		cmocka_unit_test(test_html_replaces_controls_keeps_text),
		cmocka_unit_test(test_escapes_append_and_grow),
		cmocka_unit_test(test_empty_string_appends_nothing),
		cmocka_unit_test(test_unsafe_code_points_are_escaped_in_every_text_syntax),
		cmocka_unit_test(test_unsafe_code_points_past_the_bmp),
		cmocka_unit_test(test_ordinary_text_stays_raw_in_every_syntax),
		cmocka_unit_test(test_nul_in_internal_form_is_written_per_syntax),
		cmocka_unit_test(test_folded_writes_malformed_bytes_as_hex),
		cmocka_unit_test(test_xml_replaces_what_xml_forbids),
	};

	return cmocka_run_group_tests_name("escape", tests, NULL, NULL);
}
