// SPDX-License-Identifier: MIT
/* Unit tests for user/escape.c: each syntax's escapes, malformed UTF-8 (which /proc thread
 * names can hold) turned into U+FFFD, and strbuf growth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "escape.h"

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
	check(escape_utf8, "a\xff" "b", "a" FFFD "b");		  /* never valid */
	check(escape_utf8, "\x80x", FFFD "x");			  /* stray continuation */
	check(escape_utf8, "\xc0\x80", FFFD FFFD);		  /* overlong NUL */
	check(escape_utf8, "\xed\xa0\x80", FFFD FFFD FFFD);	  /* UTF-16 surrogate */
	check(escape_utf8, "\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD); /* past U+10FFFF */
	check(escape_utf8, "end\xe2\x82", "end" FFFD FFFD);	  /* cut short by the NUL */
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
	check(escape_json, "a\xe2\x80\xa8" "b\xe2\x80\xa9", "a\\u2028b\\u2029");
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
	};

	return cmocka_run_group_tests_name("escape", tests, NULL, NULL);
}
