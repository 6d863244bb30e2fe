// SPDX-License-Identifier: MIT
/* The native unwinder's symbol lookup: the innermost sized symbol holding an address, a
 * sizeless one only as the nearest below, nothing in gaps; aliases resolved to one name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "symbolize/symindex.h"

static struct symindex make(const struct sym_entry *src, size_t n)
{
	struct symindex x;
	struct sym_entry *e = malloc(n * sizeof(*e) + 1);

	assert_non_null(e);
	memcpy(e, src, n * sizeof(*e));
	symindex__init(&x, e, n);
	return x;
}

static const char *at(const struct symindex *x, uint64_t addr)
{
	const struct sym_entry *s = symindex__find(x, addr);

	return s ? s->name : "-";
}

static void test_ranges_and_gaps(void **state)
{
	/* given out of order, as symbol tables are */
	static const struct sym_entry syms[] = {
		{ 0x3000, 0x3100, "third", NULL, true },
		{ 0x1000, 0x1200, "first", NULL, true },
		{ 0x2000, 0x2010, "second", NULL, false },
	};
	struct symindex x = make(syms, 3);

	(void)state;
	assert_int_equal(x.n, 3);
	assert_string_equal(at(&x, 0xfff), "-");
	assert_string_equal(at(&x, 0x1000), "first");
	assert_string_equal(at(&x, 0x11ff), "first");
	assert_string_equal(at(&x, 0x1200), "-"); /* past its end: a gap, not "first" */
	assert_string_equal(at(&x, 0x200f), "second");
	assert_string_equal(at(&x, 0x2010), "-");
	assert_string_equal(at(&x, 0x30ff), "third");
	assert_string_equal(at(&x, 0x3100), "-");
	assert_int_equal(symindex__bytes(&x), 3 * sizeof(struct sym_entry));
	symindex__free(&x);
	assert_null(x.e);
}

static void test_nested_aliases_and_sizeless(void **state)
{
	static const struct sym_entry syms[] = {
		/* a function with a label inside it: the innermost holder wins, and the outer
		 * one holds what lies past the label's range */
		{ 0x1000, 0x1400, "outer", NULL, true },
		{ 0x1100, 0x1180, "outer.part", NULL, false },
		/* a local and a global alias of one function, and a sizeless one there too */
		{ 0x2000, 0x2100, "local_alias", NULL, false },
		{ 0x2000, 0x2100, "exported", NULL, true },
		{ 0x2000, 0x2000, "sizeless_alias", NULL, true },
		/* a sizeless symbol past every sized one: an assembly routine */
		{ 0x5000, 0x5000, "asm_routine", NULL, true },
	};
	struct symindex x = make(syms, 6);

	(void)state;
	assert_int_equal(x.n, 4);
	assert_string_equal(at(&x, 0x1050), "outer");
	assert_string_equal(at(&x, 0x1100), "outer.part");
	assert_string_equal(at(&x, 0x1200), "outer");
	assert_string_equal(at(&x, 0x2050), "exported");
	assert_string_equal(at(&x, 0x4fff), "-");
	assert_string_equal(at(&x, 0x5000), "asm_routine");
	assert_string_equal(at(&x, 0x6000), "asm_routine");
	symindex__free(&x);
}

static void test_empty(void **state)
{
	struct symindex x;

	(void)state;
	symindex__init(&x, NULL, 0);
	assert_null(symindex__find(&x, 0));
	assert_null(symindex__find(&x, UINT64_MAX));
	symindex__free(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranges_and_gaps),
		cmocka_unit_test(test_nested_aliases_and_sizeless),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
