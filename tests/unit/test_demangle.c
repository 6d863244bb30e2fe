// SPDX-License-Identifier: MIT
/* C++ names are demangled; C names and malformed mangled names are left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "demangle.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cxx_names_are_demangled),
		cmocka_unit_test(test_c_and_broken_names_are_left_alone),
	};

	return cmocka_run_group_tests_name("demangle", tests, NULL, NULL);
}
