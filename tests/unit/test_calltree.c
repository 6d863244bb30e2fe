// SPDX-License-Identifier: MIT
/* Unit tests for user/profile/calltree.c: stacks merged by prefix, subtree totals, distinct stacks,
 * preorder with siblings by label, and thread root frames. */
#include "test_out_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "profile/calltree.h"

static const char *label(const struct calltree *t, uint32_t id)
{
	return id ? strtab__get(t->strs, t->frames[t->nodes[id].frame].name) : "all";
}

static void test_calltree_merges_prefixes_and_sums_subtrees(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ 0 }, "proc");
	uint64_t m = fx_code(fx, "main", "/app.py", 3), w = fx_code(fx, "work", "/app.py", 7);
	uint64_t a = fx_code(fx, "aux", "/app.py", 9);
	struct calltree t = { 0 };
	uint32_t *order;
	const char *want[] = { "all", "main", "aux", "work", "aux" };

	(void)state;
	fx_sample(fx, 0, (uint64_t[]){ m, w }, 2, 3);
	fx_sample(fx, 0, (uint64_t[]){ m, a }, 2, 2);
	fx_sample(fx, 0, (uint64_t[]){ m }, 1, 1);
	fx_sample(fx, 0, (uint64_t[]){ m, w, a }, 3, 4);
	assert_int_equal(calltree_build(&t, fx->p), 0);
	assert_int_equal(t.nnodes, 5);
	assert_int_equal(calltree_nstacks(&t), 4);
	order = calltree_preorder(&t);
	assert_non_null(order);
	for (size_t i = 0; i < t.nnodes; i++)
		assert_string_equal(label(&t, order[i]), want[i]);
	assert_int_equal(t.nodes[order[0]].total, 10);
	assert_int_equal(t.nodes[order[1]].total, 10);
	assert_int_equal(t.nodes[order[1]].self, 1);
	assert_int_equal(t.nodes[order[2]].total, 2);
	assert_int_equal(t.nodes[order[3]].total, 7); /* work: 3 of its own, 4 in aux */
	assert_int_equal(t.nodes[order[4]].depth, 3);
	free(order);
	calltree_free(&t);
	fx_free(fx);
}

static void test_calltree_thread_roots_without_file(void **state)
{
	struct fx *fx = fx_new(&(struct profile_opts){ .by_thread = true }, "proc");
	uint64_t m = fx_code(fx, "main", "/app.py", 3);
	struct calltree t = { 0 };

	(void)state;
	fx_sample(fx, 0, (uint64_t[]){ m }, 1, 2);
	assert_int_equal(calltree_build(&t, fx->p), 0);
	assert_int_equal(t.nnodes, 3);
	assert_int_equal(t.nodes[1].depth, 1);
	assert_int_equal(t.frames[t.nodes[1].frame].file, CALLTREE_NONE);
	assert_int_equal(t.nodes[0].total, 2);
	calltree_free(&t);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calltree_merges_prefixes_and_sums_subtrees),
		cmocka_unit_test(test_calltree_thread_roots_without_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
