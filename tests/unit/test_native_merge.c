// SPDX-License-Identifier: MIT
/* The --native merge: eval-loop activations are replaced, in order, by the Python frames
 * each ran (a C -> Python -> C -> Python re-entry interleaves); a count that does not pair
 * up is a rejection, never a partial stack. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "native_merge.h"

/* The merged stack as a string: native frames as their letter, Python ones as digits. */
static void render(const struct merge_item *m, int n, const char *native, char *out)
{
	for (int i = 0; i < n; i++)
		*out++ = m[i].python ? (char)('0' + m[i].index) : native[m[i].index];
	*out = 0;
}

/* native: letters, 'E' an eval activation; py: digits, 'e' marking an entry frame */
static int merge(const char *native, const char *py, char *out)
{
	bool is_eval[32], entry[32];
	struct merge_item m[64];
	uint32_t nn = (uint32_t)strlen(native), np = 0;
	int n;

	for (uint32_t i = 0; i < nn; i++)
		is_eval[i] = native[i] == 'E';
	/* an 'e' before a digit marks that digit */
	for (const char *p = py; *p; p++) {
		if (*p == 'e') {
			entry[np] = true;
			continue;
		}
		if (p == py || p[-1] != 'e')
			entry[np] = false;
		np++;
	}
	n = native_merge(is_eval, nn, entry, np, m, 64);
	if (n >= 0)
		render(m, n, native, out);
	return n;
}

static void test_reentry_interleaves_in_order(void **state)
{
	char out[128];

	(void)state;
	/* main -> eval(py 0,1) -> ext_outer(o) -> ext_middle(m) -> eval(py 2) -> ext_inner(i) */
	assert_int_equal(merge("MEomEi", "e01e2", out), 7);
	assert_string_equal(out, "M01om2i");
}

static void test_one_activation_runs_many_frames(void **state)
{
	char out[128];

	(void)state;
	/* 3.11+: Python-to-Python calls stay in one activation */
	assert_int_equal(merge("SME", "0123", out), 6);
	assert_string_equal(out, "SM0123");
	/* the leaf is native: the C function the last Python frame called */
	assert_int_equal(merge("MEc", "01", out), 4);
	assert_string_equal(out, "M01c");
}

static void test_root_python_frame_is_an_entry_even_unmarked(void **state)
{
	char out[128];

	(void)state;
	/* 3.14+: the root activation's entry is the base frame, which is not shipped */
	assert_int_equal(merge("MEcE", "01e2", out), 5);
	assert_string_equal(out, "M01c2");
}

static void test_counts_that_disagree_are_rejected(void **state)
{
	char out[128];

	(void)state;
	/* an activation more than entries (a stripped eval loop elsewhere, a torn view) */
	assert_int_equal(merge("MEcE", "012", out), -1);
	/* an entry frame without its activation (the native stack was cut short) */
	assert_int_equal(merge("cE", "0e1", out), -1);
	/* no eval activation found at all (a stripped interpreter) */
	assert_int_equal(merge("Mc", "01", out), -1);
}

static void test_every_frame_its_own_activation(void **state)
{
	char out[128];

	(void)state;
	/* 3.10: one activation per Python frame */
	assert_int_equal(merge("MEEcE", "e0e1e2", out), 5);
	assert_string_equal(out, "M01c2");
}

static void test_cap_is_a_rejection_not_a_cut(void **state)
{
	bool is_eval[3] = { false, true, false }, entry[2] = { true, false };
	struct merge_item m[3];

	(void)state;
	assert_int_equal(native_merge(is_eval, 3, entry, 2, m, 3), -1);
	assert_int_equal(native_merge(is_eval, 3, entry, 2, m, 4), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reentry_interleaves_in_order),
		cmocka_unit_test(test_one_activation_runs_many_frames),
		cmocka_unit_test(test_root_python_frame_is_an_entry_even_unmarked),
		cmocka_unit_test(test_counts_that_disagree_are_rejected),
		cmocka_unit_test(test_every_frame_its_own_activation),
		cmocka_unit_test(test_cap_is_a_rejection_not_a_cut),
	};

	return cmocka_run_group_tests_name("native_merge", tests, NULL, NULL);
}
