// SPDX-License-Identifier: MIT
/* Unit tests for user/top/top_model.c: own and total counts per function (recursion counted
 * once), intervals as differences between updates, whole-run totals, and the orders of
 * every sort key; then the same per (process, function) when rows are per process. Stacks
 * are built in an agg directly; function and process ids name themselves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "profile/agg.h"
#include "top/top_model.h"

/* function ids of the tests, and their names */
enum { F_MODULE, F_MAIN, F_WORK, F_LEAF, F_REC, F__COUNT };
static const char *const func_names[F__COUNT] = {
	[F_MODULE] = "<module>", [F_MAIN] = "main", [F_WORK] = "work",
	[F_LEAF] = "leaf",	 [F_REC] = "rec",
};

static const char *name_of(void *ctx, uint32_t func)
{
	(void)ctx;
	return func < F__COUNT ? func_names[func] : "?";
}

static const char *file_of(void *ctx, uint32_t func)
{
	(void)ctx;
	(void)func;
	return "t.py";
}

static int line_of(void *ctx, uint32_t func)
{
	(void)ctx;
	return (int)func + 1;
}

/* process labels: PIDs 100 and 99 of one program (numeric order puts 99 first), another
 * program, and a fourth process with the same label as the first (a reused PID) */
enum { P_PY100, P_PY99, P_WORKER, P_PY100_AGAIN, P__COUNT };
static const char *const proc_names[P__COUNT] = {
	[P_PY100] = "python3 (100)",
	[P_PY99] = "python3 (99)",
	[P_WORKER] = "worker (7)",
	[P_PY100_AGAIN] = "python3 (100)",
};

static const char *proc_of(void *ctx, uint32_t proc)
{
	(void)ctx;
	return proc < P__COUNT ? proc_names[proc] : "?";
}

static const struct top_names names = {
	.name = name_of, .file = file_of, .line = line_of, .process = proc_of
};

/* Count `count` samples of process `proc`'s stack of functions `funcs` (root first); each
 * frame's line is 10 * its depth, so equal functions at different depths are different
 * frames (and one frame id is shared by every process that has it). */
static void add_proc(struct agg *agg, uint32_t proc, const uint32_t *funcs, uint32_t n,
		     uint64_t count)
{
	uint32_t ids[16];

	assert_true(n <= 16);
	for (uint32_t i = 0; i < n; i++) {
		int64_t id = agg__frame_id(agg, funcs[i], (int32_t)(10 * (i + 1)));

		assert_true(id >= 0);
		ids[i] = (uint32_t)id;
	}
	assert_int_equal(agg__add(agg, &(struct agg_who){ proc, 1000 + proc, 1000 + proc, 0 }, ids,
				  n, count),
			 0);
}

#define ADD_PROC(agg, proc, count, ...)                            \
	add_proc((agg), (proc), (const uint32_t[]){ __VA_ARGS__ }, \
		 sizeof((const uint32_t[]){ __VA_ARGS__ }) / sizeof(uint32_t), (count))
#define ADD(agg, count, ...) ADD_PROC((agg), 0, (count), __VA_ARGS__)

/* The row of `func` in the last ranking, or NULL. */
static const struct top_row *row_of(const struct top_model *m, uint32_t func)
{
	size_t n;
	const struct top_row *rows = top_model__rows(m, &n);

	for (size_t i = 0; i < n; i++)
		if (rows[i].func == func)
			return &rows[i];
	return NULL;
}

static void assert_counts(const struct top_model *m, uint32_t func, uint64_t own, uint64_t total)
{
	const struct top_row *r = row_of(m, func);

	assert_non_null(r);
	assert_int_equal(r->own, own);
	assert_int_equal(r->total, total);
}

static void assert_order(struct top_model *m, bool cumulative, enum top_sort key, bool reverse,
			 const uint32_t *want, size_t nwant)
{
	const struct top_row *rows;
	size_t n;

	assert_int_equal(top_model__rank(m, cumulative, key, reverse, &names), (int)nwant);
	rows = top_model__rows(m, &n);
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(name_of(NULL, rows[i].func), name_of(NULL, want[i]));
}

static void test_top_model_own_is_leaf_and_total_is_anywhere(void **state)
{
	struct agg *agg = agg__new();
	struct top_model *m = top_model__new(false);

	(void)state;
	ADD(agg, 3, F_MODULE, F_MAIN, F_WORK, F_LEAF);
	ADD(agg, 1, F_MODULE, F_MAIN, F_WORK);
	assert_int_equal(top_model__update(m, agg), 0);
	assert_int_equal(top_model__samples(m, false), 4);
	assert_int_equal(top_model__rank(m, false, TOP_SORT_OWN, false, &names), 4);
	assert_counts(m, F_MODULE, 0, 4);
	assert_counts(m, F_MAIN, 0, 4);
	assert_counts(m, F_WORK, 1, 4);
	assert_counts(m, F_LEAF, 3, 3);
	top_model__free(m);
	agg__free(agg);
}

static void test_top_model_recursion_counts_total_once_per_sample(void **state)
{
	struct agg *agg = agg__new();
	struct top_model *m = top_model__new(false);

	(void)state;
	/* rec -> rec -> rec, and rec calling leaf between two rec frames */
	ADD(agg, 2, F_MAIN, F_REC, F_REC, F_REC);
	ADD(agg, 5, F_MAIN, F_REC, F_LEAF, F_REC);
	assert_int_equal(top_model__update(m, agg), 0);
	assert_int_equal(top_model__rank(m, false, TOP_SORT_TOTAL, false, &names), 3);
	assert_counts(m, F_REC, 7, 7);
	assert_counts(m, F_MAIN, 0, 7);
	assert_counts(m, F_LEAF, 0, 5);
	top_model__free(m);
	agg__free(agg);
}

static void test_top_model_interval_is_what_came_since_the_last_update(void **state)
{
	struct agg *agg = agg__new();
	struct top_model *m = top_model__new(false);

	(void)state;
	ADD(agg, 10, F_MAIN, F_WORK);
	assert_int_equal(top_model__update(m, agg), 0);
	/* an old stack seen again, and a new stack with a new function */
	ADD(agg, 2, F_MAIN, F_WORK);
	ADD(agg, 3, F_MAIN, F_LEAF);
	assert_int_equal(top_model__update(m, agg), 0);

	assert_int_equal(top_model__samples(m, false), 5);
	assert_int_equal(top_model__rank(m, false, TOP_SORT_OWN, false, &names), 3);
	assert_counts(m, F_WORK, 2, 2);
	assert_counts(m, F_LEAF, 3, 3);
	assert_counts(m, F_MAIN, 0, 5);

	assert_int_equal(top_model__samples(m, true), 15);
	assert_int_equal(top_model__rank(m, true, TOP_SORT_OWN, false, &names), 3);
	assert_counts(m, F_WORK, 12, 12);
	assert_counts(m, F_LEAF, 3, 3);
	assert_counts(m, F_MAIN, 0, 15);
	top_model__free(m);
	agg__free(agg);
}

static void test_top_model_quiet_interval_has_no_rows_but_run_keeps_them(void **state)
{
	struct agg *agg = agg__new();
	struct top_model *m = top_model__new(false);

	(void)state;
	ADD(agg, 4, F_MAIN, F_WORK);
	assert_int_equal(top_model__update(m, agg), 0);
	assert_int_equal(top_model__update(m, agg), 0);
	assert_int_equal(top_model__samples(m, false), 0);
	assert_int_equal(top_model__rank(m, false, TOP_SORT_OWN, false, &names), 0);
	assert_int_equal(top_model__rank(m, true, TOP_SORT_OWN, false, &names), 2);
	assert_counts(m, F_WORK, 4, 4);
	top_model__free(m);
	agg__free(agg);
}

static void test_top_model_stack_without_frames_counts_in_samples_only(void **state)
{
	struct agg *agg = agg__new();
	struct top_model *m = top_model__new(false);
	uint32_t none[1] = { 0 };

	(void)state;
	ADD(agg, 1, F_WORK);
	assert_int_equal(agg__add(agg, &(struct agg_who){ 0, 1, 1, 0 }, none, 0, 3), 0);
	assert_int_equal(top_model__update(m, agg), 0);
	/* percentages are of all samples: work is 1 of 4 */
	assert_int_equal(top_model__samples(m, false), 4);
	assert_int_equal(top_model__rank(m, false, TOP_SORT_OWN, false, &names), 1);
	assert_counts(m, F_WORK, 1, 1);
	top_model__free(m);
	agg__free(agg);
}

static void test_top_model_lines_of_one_function_are_one_row(void **state)
{
	struct agg *agg = agg__new();
	struct top_model *m = top_model__new(false);
	uint32_t ids[2];

	(void)state;
	/* work at line 10 calling work at line 20 (what recursion looks like frame by frame) */
	ids[0] = (uint32_t)agg__frame_id(agg, F_WORK, 10);
	ids[1] = (uint32_t)agg__frame_id(agg, F_WORK, 20);
	assert_int_equal(agg__add(agg, &(struct agg_who){ 0, 1, 1, 0 }, ids, 2, 6), 0);
	assert_int_equal(agg__add(agg, &(struct agg_who){ 0, 1, 1, 0 }, ids + 1, 1, 1), 0);
	assert_int_equal(top_model__update(m, agg), 0);
	assert_int_equal(top_model__rank(m, false, TOP_SORT_OWN, false, &names), 1);
	assert_counts(m, F_WORK, 7, 7);
	top_model__free(m);
	agg__free(agg);
}

static void test_top_model_sort_keys_and_ties(void **state)
{
	struct agg *agg = agg__new();
	struct top_model *m = top_model__new(false);

	(void)state;
	/* own: leaf 5, work 3, rec 3 (tie broken by total: work 8 > rec 3); main and <module>
	 * tie on own 0 and total 11, then go by name */
	ADD(agg, 5, F_MODULE, F_MAIN, F_WORK, F_LEAF);
	ADD(agg, 3, F_MODULE, F_MAIN, F_WORK);
	ADD(agg, 3, F_MODULE, F_MAIN, F_REC);
	assert_int_equal(top_model__update(m, agg), 0);

	assert_order(m, false, TOP_SORT_OWN, false,
		     (const uint32_t[]){ F_LEAF, F_WORK, F_REC, F_MODULE, F_MAIN }, 5);
	assert_order(m, false, TOP_SORT_TOTAL, false,
		     (const uint32_t[]){ F_MODULE, F_MAIN, F_WORK, F_LEAF, F_REC }, 5);
	assert_order(m, false, TOP_SORT_NAME, false,
		     (const uint32_t[]){ F_MODULE, F_LEAF, F_MAIN, F_REC, F_WORK }, 5);
	assert_order(m, false, TOP_SORT_NAME, true,
		     (const uint32_t[]){ F_WORK, F_REC, F_MAIN, F_LEAF, F_MODULE }, 5);
	assert_order(m, true, TOP_SORT_OWN, true,
		     (const uint32_t[]){ F_MAIN, F_MODULE, F_REC, F_WORK, F_LEAF }, 5);
	top_model__free(m);
	agg__free(agg);
}

/* --- rows per process ---------------------------------------------------------------- */

/* The row of (proc, func) in the last ranking, or NULL. */
static const struct top_row *row_of_proc(const struct top_model *m, uint32_t proc, uint32_t func)
{
	size_t n;
	const struct top_row *rows = top_model__rows(m, &n);

	for (size_t i = 0; i < n; i++)
		if (rows[i].proc == proc && rows[i].func == func)
			return &rows[i];
	return NULL;
}

static void assert_proc_counts(const struct top_model *m, uint32_t proc, uint32_t func,
			       uint64_t own, uint64_t total)
{
	const struct top_row *r = row_of_proc(m, proc, func);

	assert_non_null(r);
	assert_int_equal(r->own, own);
	assert_int_equal(r->total, total);
}

/* The last ranking is exactly `want` ((proc, func) pairs), in that order. */
static void assert_proc_order(const struct top_model *m, const uint32_t (*want)[2], size_t nwant)
{
	size_t n;
	const struct top_row *rows = top_model__rows(m, &n);

	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(rows[i].proc, want[i][0]);
		assert_int_equal(rows[i].func, want[i][1]);
	}
}

static void test_top_model_same_function_in_two_processes_is_two_rows(void **state)
{
	struct agg *agg = agg__new();
	struct top_model *per = top_model__new(true), *merged = top_model__new(false);

	(void)state;
	assert_true(top_model__per_process(per));
	assert_false(top_model__per_process(merged));
	/* the same frames (main at line 10, work at 20) in both processes */
	ADD_PROC(agg, P_PY100, 3, F_MAIN, F_WORK);
	ADD_PROC(agg, P_PY99, 5, F_MAIN, F_WORK);
	ADD_PROC(agg, P_PY99, 2, F_MAIN, F_LEAF);
	assert_int_equal(top_model__update(per, agg), 0);
	assert_int_equal(top_model__samples(per, false), 10);
	assert_int_equal(top_model__rank(per, false, TOP_SORT_OWN, false, &names), 5);
	assert_proc_counts(per, P_PY100, F_MAIN, 0, 3);
	assert_proc_counts(per, P_PY100, F_WORK, 3, 3);
	assert_proc_counts(per, P_PY99, F_MAIN, 0, 7);
	assert_proc_counts(per, P_PY99, F_WORK, 5, 5);
	assert_proc_counts(per, P_PY99, F_LEAF, 2, 2);
	assert_null(row_of_proc(per, P_PY100, F_LEAF));

	/* one process's view of the same samples: a row per function, as before */
	assert_int_equal(top_model__update(merged, agg), 0);
	assert_int_equal(top_model__rank(merged, false, TOP_SORT_OWN, false, &names), 3);
	assert_proc_counts(merged, 0, F_MAIN, 0, 10);
	assert_proc_counts(merged, 0, F_WORK, 8, 8);
	assert_proc_counts(merged, 0, F_LEAF, 2, 2);
	top_model__free(per);
	top_model__free(merged);
	agg__free(agg);
}

static void test_top_model_interval_per_process_and_function(void **state)
{
	struct agg *agg = agg__new();
	struct top_model *m = top_model__new(true);

	(void)state;
	ADD_PROC(agg, P_PY100, 4, F_MAIN, F_WORK);
	ADD_PROC(agg, P_PY99, 6, F_MAIN, F_WORK);
	assert_int_equal(top_model__update(m, agg), 0);
	/* only P_PY99 runs in the next interval, and P_WORKER starts with a function of its own
	 * and one the others have */
	ADD_PROC(agg, P_PY99, 1, F_MAIN, F_WORK);
	ADD_PROC(agg, P_WORKER, 2, F_MAIN, F_REC);
	assert_int_equal(top_model__update(m, agg), 0);

	assert_int_equal(top_model__samples(m, false), 3);
	assert_int_equal(top_model__rank(m, false, TOP_SORT_OWN, false, &names), 4);
	assert_null(row_of_proc(m, P_PY100, F_WORK));
	assert_null(row_of_proc(m, P_PY100, F_MAIN));
	assert_proc_counts(m, P_PY99, F_WORK, 1, 1);
	assert_proc_counts(m, P_PY99, F_MAIN, 0, 1);
	assert_proc_counts(m, P_WORKER, F_REC, 2, 2);
	assert_proc_counts(m, P_WORKER, F_MAIN, 0, 2);

	assert_int_equal(top_model__samples(m, true), 13);
	assert_int_equal(top_model__rank(m, true, TOP_SORT_OWN, false, &names), 6);
	assert_proc_counts(m, P_PY100, F_WORK, 4, 4);
	assert_proc_counts(m, P_PY99, F_WORK, 7, 7);
	assert_proc_counts(m, P_PY99, F_MAIN, 0, 7);
	assert_proc_counts(m, P_WORKER, F_REC, 2, 2);

	/* a quiet interval: no rows, the whole run keeps every process */
	assert_int_equal(top_model__update(m, agg), 0);
	assert_int_equal(top_model__rank(m, false, TOP_SORT_OWN, false, &names), 0);
	assert_int_equal(top_model__rank(m, true, TOP_SORT_OWN, false, &names), 6);
	top_model__free(m);
	agg__free(agg);
}

static void test_top_model_recursion_counted_once_per_process(void **state)
{
	struct agg *agg = agg__new();
	struct top_model *m = top_model__new(true);

	(void)state;
	ADD_PROC(agg, P_PY100, 2, F_MAIN, F_REC, F_REC, F_REC);
	ADD_PROC(agg, P_PY99, 5, F_MAIN, F_REC, F_LEAF, F_REC);
	assert_int_equal(top_model__update(m, agg), 0);
	/* the next interval: rec recursing again, in the stack already seen */
	ADD_PROC(agg, P_PY100, 1, F_MAIN, F_REC, F_REC, F_REC);
	assert_int_equal(top_model__update(m, agg), 0);

	assert_int_equal(top_model__rank(m, false, TOP_SORT_TOTAL, false, &names), 2);
	assert_proc_counts(m, P_PY100, F_REC, 1, 1);
	assert_proc_counts(m, P_PY100, F_MAIN, 0, 1);
	assert_int_equal(top_model__rank(m, true, TOP_SORT_TOTAL, false, &names), 5);
	assert_proc_counts(m, P_PY100, F_REC, 3, 3);
	assert_proc_counts(m, P_PY100, F_MAIN, 0, 3);
	assert_proc_counts(m, P_PY99, F_REC, 5, 5);
	assert_proc_counts(m, P_PY99, F_LEAF, 0, 5);
	assert_proc_counts(m, P_PY99, F_MAIN, 0, 5);
	top_model__free(m);
	agg__free(agg);
}

static void test_top_model_sort_by_process(void **state)
{
	struct agg *agg = agg__new();
	struct top_model *m = top_model__new(true);

	(void)state;
	/* labels in order: "python3 (99)" < "python3 (100)" (PIDs as numbers, not bytes) <
	 * "worker (7)"; P_PY100_AGAIN has P_PY100's label and comes after it, by index */
	ADD_PROC(agg, P_WORKER, 9, F_MAIN, F_LEAF);
	ADD_PROC(agg, P_PY100, 1, F_MAIN, F_WORK);
	ADD_PROC(agg, P_PY100, 4, F_MAIN, F_LEAF);
	ADD_PROC(agg, P_PY99, 2, F_MAIN, F_WORK);
	ADD_PROC(agg, P_PY99, 2, F_MAIN, F_LEAF);
	ADD_PROC(agg, P_PY100_AGAIN, 3, F_WORK);
	assert_int_equal(top_model__update(m, agg), 0);

	/* within a process: own samples, most first, then the name (P_PY99's leaf and work tie
	 * on own 2; its main has own 0) */
	assert_int_equal(top_model__rank(m, false, TOP_SORT_PROCESS, false, &names), 9);
	assert_proc_order(m,
			  (const uint32_t[][2]){ { P_PY99, F_LEAF },
						 { P_PY99, F_WORK },
						 { P_PY99, F_MAIN },
						 { P_PY100, F_LEAF },
						 { P_PY100, F_WORK },
						 { P_PY100, F_MAIN },
						 { P_PY100_AGAIN, F_WORK },
						 { P_WORKER, F_LEAF },
						 { P_WORKER, F_MAIN } },
			  9);
	assert_int_equal(top_model__rank(m, false, TOP_SORT_PROCESS, true, &names), 9);
	assert_proc_order(m,
			  (const uint32_t[][2]){ { P_WORKER, F_MAIN },
						 { P_WORKER, F_LEAF },
						 { P_PY100_AGAIN, F_WORK },
						 { P_PY100, F_MAIN },
						 { P_PY100, F_WORK },
						 { P_PY100, F_LEAF },
						 { P_PY99, F_MAIN },
						 { P_PY99, F_WORK },
						 { P_PY99, F_LEAF } },
			  9);

	/* by own, each row on its counts alone (leaf is 15 samples in all, but no one row):
	 * worker's leaf 9, P_PY100's leaf 4, P_PY100_AGAIN's work 3, P_PY99's leaf and work
	 * (own 2, total 2: by name), P_PY100's work 1, then the mains by total */
	assert_int_equal(top_model__rank(m, false, TOP_SORT_OWN, false, &names), 9);
	assert_proc_order(m,
			  (const uint32_t[][2]){ { P_WORKER, F_LEAF },
						 { P_PY100, F_LEAF },
						 { P_PY100_AGAIN, F_WORK },
						 { P_PY99, F_LEAF },
						 { P_PY99, F_WORK },
						 { P_PY100, F_WORK },
						 { P_WORKER, F_MAIN },
						 { P_PY100, F_MAIN },
						 { P_PY99, F_MAIN } },
			  9);
	top_model__free(m);
	agg__free(agg);
}

static void test_top_model_equal_rows_of_two_processes_go_by_label(void **state)
{
	struct agg *agg = agg__new();
	struct top_model *m = top_model__new(true);

	(void)state;
	/* the same counts everywhere: only the labels (then the ids) tell the rows apart, and
	 * the order must not depend on the order the stacks arrived in */
	ADD_PROC(agg, P_WORKER, 2, F_WORK);
	ADD_PROC(agg, P_PY100, 2, F_WORK);
	ADD_PROC(agg, P_PY99, 2, F_WORK);
	assert_int_equal(top_model__update(m, agg), 0);
	for (enum top_sort key = TOP_SORT_OWN; key <= TOP_SORT_PROCESS; key++) {
		assert_int_equal(top_model__rank(m, false, key, false, &names), 3);
		assert_proc_order(m,
				  (const uint32_t[][2]){ { P_PY99, F_WORK },
							 { P_PY100, F_WORK },
							 { P_WORKER, F_WORK } },
				  3);
	}
	top_model__free(m);
	agg__free(agg);
}

static void test_top_model_free_null_is_a_no_op(void **state)
{
	(void)state;
	top_model__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top_model_own_is_leaf_and_total_is_anywhere),
		cmocka_unit_test(test_top_model_recursion_counts_total_once_per_sample),
		cmocka_unit_test(test_top_model_interval_is_what_came_since_the_last_update),
		cmocka_unit_test(test_top_model_quiet_interval_has_no_rows_but_run_keeps_them),
		cmocka_unit_test(test_top_model_stack_without_frames_counts_in_samples_only),
		cmocka_unit_test(test_top_model_lines_of_one_function_are_one_row),
		cmocka_unit_test(test_top_model_sort_keys_and_ties),
		cmocka_unit_test(test_top_model_same_function_in_two_processes_is_two_rows),
		cmocka_unit_test(test_top_model_interval_per_process_and_function),
		cmocka_unit_test(test_top_model_recursion_counted_once_per_process),
		cmocka_unit_test(test_top_model_sort_by_process),
		cmocka_unit_test(test_top_model_equal_rows_of_two_processes_go_by_label),
		cmocka_unit_test(test_top_model_free_null_is_a_no_op),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
