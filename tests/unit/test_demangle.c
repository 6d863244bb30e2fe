// SPDX-License-Identifier: MIT
/* C++ names are demangled; C names and malformed mangled names are left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "symbolize/demangle.h"

static void test_cxx_names_are_demangled(void **state)
{
	char *s;

	(void)state;
	s = demangle("_ZN5boost6detail6thread5startEPv");
	assert_non_null(s);
	assert_string_equal(s, "boost::detail::thread::start(void*)");
	free(s);
	s = demangle("_ZNSt6vectorIiSaIiEE9push_backERKi");
	assert_non_null(s);
	assert_string_equal(s, "std::vector<int, std::allocator<int> >::push_back(int const&)");
	free(s);
}

static void test_c_and_broken_names_are_left_alone(void **state)
{
	(void)state;
	assert_null(demangle("_PyEval_EvalFrameDefault"));
	assert_null(demangle("main"));
	assert_null(demangle("_Z"));
	assert_null(demangle("_Zgarbage!"));
	assert_null(demangle(NULL));
}

/* "_ZN<L>aaa...a1fEv" (aaa...a::f()) of `total` bytes, L of 4 digits; malloc'ed. */
static char *long_name(size_t total)
{
	size_t id = total - 11; /* "_ZN", 4 digits, "1fEv" */
	char *sym = malloc(total + 1);

	assert_non_null(sym);
	snprintf(sym, total + 1, "_ZN%zu", id);
	assert_int_equal(strlen(sym), 7);
	memset(sym + 7, 'a', id);
	memcpy(sym + 7 + id, "1fEv", 5);
	assert_int_equal(strlen(sym), total);
	return sym;
}

/* A target's name of any length reaches the demangler only up to DEMANGLE_MAX bytes: one
 * at the bound demangles, one a byte longer is left as it is. */
static void test_overlong_names_are_left_alone(void **state)
{
	char *at = long_name(DEMANGLE_MAX), *over = long_name(DEMANGLE_MAX + 1), *s;

	(void)state;
	s = demangle(at);
	assert_non_null(s);
	assert_int_equal(strlen(s), DEMANGLE_MAX - 11 + strlen("::f()"));
	free(s);
	assert_null(demangle(over));
	free(at);
	free(over);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cxx_names_are_demangled),
		cmocka_unit_test(test_c_and_broken_names_are_left_alone),
		cmocka_unit_test(test_overlong_names_are_left_alone),
	};

	return cmocka_run_group_tests_name("demangle", tests, NULL, NULL);
}
