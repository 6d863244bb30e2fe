// SPDX-License-Identifier: MIT
/* Unit tests for user/lib/json.c: commas and nesting placed for the caller, line breaks,
 * hostile strings escaped (for plain JSON and inside <script>), misuse and the depth limit
 * refused, NaN and infinity refused, and the first error kept by every later call. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/json.h"

static struct strbuf sb;
static struct json w;

static int setup(void **state)
{
	(void)state;
	memset(&sb, 0, sizeof(sb));
	json_init(&w, &sb, false);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	strbuf_free(&sb);
	return 0;
}

static void assert_doc(const char *want)
{
	assert_int_equal(json_finish(&w), 0);
	assert_non_null(sb.buf);
	assert_string_equal(sb.buf, want);
	assert_int_equal(sb.len, strlen(want));
}

static void test_nesting_and_commas(void **state)
{
	(void)state;
	json_begin_object(&w);
	json_key(&w, "a");
	json_int(&w, -3);
	json_key(&w, "b");
	json_begin_array(&w);
	json_uint(&w, UINT64_MAX);
	json_begin_object(&w);
	json_end_object(&w);
	json_begin_array(&w);
	json_end_array(&w);
	json_bool(&w, true);
	json_bool(&w, false);
	json_null(&w);
	json_double(&w, 0.5);
	json_double(&w, 0.1);
	json_end_array(&w);
	json_key(&w, "c");
	json_string(&w, "x");
	json_end_object(&w);
	assert_doc("{\"a\":-3,\"b\":[18446744073709551615,{},[],true,false,null,0.5,0.1],"
		   "\"c\":\"x\"}");
}

/* The keyed helpers are a key and a value: the same document, and refused outside an
 * object like json_key. */
static void test_key_and_value_in_one_call(void **state)
{
	(void)state;
	json_begin_object(&w);
	json_key_string(&w, "s", "a\"b");
	json_key_int(&w, "i", -1);
	json_key_uint(&w, "u", 7);
	json_key_double(&w, "d", 0.25);
	json_key_bool(&w, "b", true);
	json_end_object(&w);
	assert_doc("{\"s\":\"a\\\"b\",\"i\":-1,\"u\":7,\"d\":0.25,\"b\":true}");
	strbuf_reset(&sb);
	json_init(&w, &sb, false);
	json_begin_array(&w);
	assert_int_equal(json_key_uint(&w, "u", 7), -EINVAL);
}

static void test_breaks_follow_the_comma(void **state)
{
	(void)state;
	json_begin_object(&w);
	json_key(&w, "list");
	json_begin_array(&w);
	for (int i = 0; i < 3; i++) {
		json_break(&w);
		json_int(&w, i);
	}
	json_end_array(&w);
	json_break(&w);
	json_break(&w); /* two in a row are one */
	json_key(&w, "k");
	json_begin_array(&w);
	json_end_array(&w);
	json_end_object(&w);
	json_break(&w); /* after the document: ends the line */
	assert_doc("{\"list\":[\n0,\n1,\n2],\n\"k\":[]}\n");
}

static void test_string_in_parts(void **state)
{
	(void)state;
	json_begin_array(&w);
	json_string_begin(&w);
	json_string_part(&w, "a\"b");
	json_string_partf(&w, " (%u)", 42u);
	json_string_end(&w);
	json_end_array(&w);
	assert_doc("[\"a\\\"b (42)\"]");
}

static void test_hostile_strings_escaped(void **state)
{
	(void)state;
	json_begin_object(&w);
	json_key(&w, "k\"\n");
	json_string(&w, "\x01\x1f\x7f\\\"</script>\xff" ESCAPE_NUL);
	json_end_object(&w);
	/* escape_json's own choices: DEL is valid JSON as is, a bad byte the visible \ufffd */
	assert_doc("{\"k\\\"\\n\":\"\\u0001\\u001f\x7f\\\\\\\"</script>\\ufffd\\u0000\"}");
}

static void test_script_mode_escapes_markup(void **state)
{
	(void)state;
	json_init(&w, &sb, true);
	json_string(&w, "</script><!--&");
	assert_doc("\"\\u003c/script\\u003e\\u003c!--\\u0026\"");
}

static void test_depth_limit(void **state)
{
	(void)state;
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		assert_int_equal(json_begin_array(&w), 0);
	assert_int_equal(json_begin_array(&w), -E2BIG);
	assert_int_equal(json_finish(&w), -E2BIG);
}

static void test_nan_and_infinity_refused(void **state)
{
	(void)state;
	json_begin_array(&w);
	assert_int_equal(json_double(&w, NAN), -EDOM);
	assert_int_equal(json_error(&w), -EDOM);
	teardown(state);
	setup(state);
	json_begin_array(&w);
	assert_int_equal(json_double(&w, -INFINITY), -EDOM);
}

static void test_misuse_refused(void **state)
{
	(void)state;
	json_begin_object(&w);
	assert_int_equal(json_int(&w, 1), -EINVAL); /* a value where a key is due */
	teardown(state);
	setup(state);
	json_begin_array(&w);
	assert_int_equal(json_key(&w, "k"), -EINVAL); /* a key in an array */
	teardown(state);
	setup(state);
	json_begin_array(&w);
	assert_int_equal(json_end_object(&w), -EINVAL); /* the wrong end */
	teardown(state);
	setup(state);
	json_begin_object(&w);
	json_key(&w, "k");
	assert_int_equal(json_end_object(&w), -EINVAL); /* a key without its value */
	teardown(state);
	setup(state);
	json_begin_array(&w);
	json_int(&w, 1);
	json_break(&w);
	assert_int_equal(json_end_array(&w), -EINVAL); /* a trailing comma */
	teardown(state);
	setup(state);
	json_begin_array(&w);
	assert_int_equal(json_finish(&w), -EINVAL); /* not closed */
	teardown(state);
	setup(state);
	json_null(&w);
	assert_int_equal(json_null(&w), -EINVAL); /* a second document */
	teardown(state);
	setup(state);
	assert_int_equal(json_string_part(&w, "x"), -EINVAL); /* no string open */
}

static void test_first_error_kept(void **state)
{
	size_t len;

	(void)state;
	json_begin_array(&w);
	json_int(&w, 1);
	assert_int_equal(json_double(&w, NAN), -EDOM);
	len = sb.len;
	/* every later call is a no-op that returns the same error, whatever it is */
	assert_int_equal(json_int(&w, 2), -EDOM);
	assert_int_equal(json_key(&w, "k"), -EDOM);
	assert_int_equal(json_end_object(&w), -EDOM);
	assert_int_equal(json_string(&w, "s"), -EDOM);
	assert_int_equal(json_break(&w), -EDOM);
	assert_int_equal(json_end_array(&w), -EDOM);
	assert_int_equal(json_finish(&w), -EDOM);
	assert_int_equal(sb.len, len);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_nesting_and_commas, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_and_value_in_one_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_breaks_follow_the_comma, setup, teardown),
		cmocka_unit_test_setup_teardown(test_string_in_parts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_strings_escaped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_script_mode_escapes_markup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_depth_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nan_and_infinity_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_misuse_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_first_error_kept, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
