// SPDX-License-Identifier: MIT
/* The checked parsers behind command-line values: what they accept, what they refuse. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/util.h"

static void test_size_takes_bytes_and_binary_suffixes(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_int_equal(parse_size("1048576", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(parse_size("512K", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 512 << 10);
	assert_int_equal(parse_size("64M", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 64ull << 20);
	assert_int_equal(parse_size("2g", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 2ull << 30);
}

static void test_size_refuses_what_is_not_a_size(void **state)
{
	static const char *const bad[] = { "",	  "M",	"-1M",	"+4M",	" 4M", "4 M",
					   "4MB", "4T", "4.5M", "0x10", "4MM" };
	uint64_t v = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse_size(bad[i], 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(parse_size(NULL, 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(v, 7); /* untouched */
}

static void test_size_outside_its_range_or_overflowing_is_refused(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(parse_size("1023K", 1 << 20, 1 << 30, &v), -ERANGE);
	assert_int_equal(parse_size("1025M", 1 << 20, 1 << 30, &v), -ERANGE);
	assert_int_equal(parse_size("1M", 1 << 20, 1 << 30, &v), 0);
	assert_int_equal(parse_size("17179869184G", 0, UINT64_MAX, &v), -ERANGE); /* 2^64 */
	assert_int_equal(parse_size("99999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
}

static void test_fmt_count_groups_thousands(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(fmt_count(0, buf, sizeof(buf)), "0");
	assert_string_equal(fmt_count(999, buf, sizeof(buf)), "999");
	assert_string_equal(fmt_count(1234, buf, sizeof(buf)), "1,234");
	assert_string_equal(fmt_count(123456, buf, sizeof(buf)), "123,456");
	assert_string_equal(fmt_count(1234567, buf, sizeof(buf)), "1,234,567");
	assert_string_equal(fmt_count(UINT64_MAX, buf, sizeof(buf)), "18,446,744,073,709,551,615");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_takes_bytes_and_binary_suffixes),
		cmocka_unit_test(test_size_refuses_what_is_not_a_size),
		cmocka_unit_test(test_size_outside_its_range_or_overflowing_is_refused),
		cmocka_unit_test(test_fmt_count_groups_thousands),
	};

	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
