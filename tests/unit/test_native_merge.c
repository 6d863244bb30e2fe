// SPDX-License-Identifier: MIT
/* The --native merge: eval-loop activations are replaced, in order, by the Python frames
 * each ran (a C -> Python -> C -> Python re-entry interleaves); a count that does not pair
 * up is a rejection, never a partial stack. And how the activations are found: 3.12+ by
 * the native frame each entry frame's address lies in, else by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "symbolize/native_merge.h"

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

/* ---- native_find_evals ------------------------------------------------------------- */

/* A stack, root first: main (M), eval (E), ext_outer (o), ext_middle (m), eval (E),
 * ext_inner (i, the leaf), each frame 0x100 bytes. */
static const uint64_t SP[6] = { 0x2000, 0x1f00, 0x1e00, 0x1d00, 0x1c00, 0x1b00 };

/* is_eval[] as a string of '1'/'0', or the verdict's letter when not found */
static const char *find(const uint64_t *sp, const char *named, const uint64_t *shim,
			uint32_t nshims, bool loop_named)
{
	static char out[32];
	uint32_t n = (uint32_t)strlen(named);
	bool named_eval[16] = { false }, is_eval[16] = { false };
	struct native_evidence ev = { .has_shims = true,
				      .shim = shim,
				      .nshims = nshims,
				      .kept = nshims,
				      .loop_named = loop_named };
	enum native_evals r;

	for (uint32_t i = 0; i < n; i++)
		named_eval[i] = named[i] == 'E';
	r = native_find_evals(sp, named_eval, n, &ev, is_eval);
	if (r != NATIVE_EVALS_FOUND)
		return r == NATIVE_EVALS_MISMATCH ? "mismatch"
		       : r == NATIVE_EVALS_DEEP	  ? "deep"
						  : "unnamed";
	for (uint32_t i = 0; i < n; i++)
		out[i] = is_eval[i] ? '1' : '0';
	out[n] = 0;
	return out;
}

static void test_entry_frames_mark_the_frames_they_lie_in(void **state)
{
	/* leaf first, as the walk meets them: inside the inner eval's frame, then the outer */
	const uint64_t shim[2] = { 0x1c40, 0x1f80 };
	bool is_eval[6];
	const bool entry[3] = { true, false, true };
	struct merge_item m[16];
	char out[32];
	const char *found;

	(void)state;
	/* named wholly: the frames the names say, which the addresses confirm */
	assert_string_equal(find(SP, ".E..E.", shim, 2, true), "010010");
	/* unnamed (Debian unstable): the addresses alone */
	found = find(SP, "......", shim, 2, false);
	assert_string_equal(found, "010010");
	/* and the merge puts each activation's Python frames where it ran */
	for (int i = 0; i < 6; i++)
		is_eval[i] = found[i] == '1';
	assert_int_equal(native_merge(is_eval, 6, entry, 3, m, 16), 7);
	render(m, 7, "MEomEi", out);
	assert_string_equal(out, "M01om2i");
}

static void test_span_edges(void **state)
{
	/* a frame's span starts at its own sp and ends below its caller's: 0x1f00 is the
	 * outer eval's, 0x1c00 the inner's, 0x1bff the leaf's */
	const uint64_t edges[2] = { 0x1c00, 0x1f00 }, below[2] = { 0x1bff, 0x1f00 };
	/* the leaf's span starts at the sampled sp; the root (the thread's first frame, or
	 * where an unwind that ended early stopped) holds none */
	const uint64_t leaf[1] = { 0x1b00 }, root[1] = { 0x2000 }, above[1] = { 0x20ff };

	(void)state;
	assert_string_equal(find(SP, "......", edges, 2, false), "010010");
	assert_string_equal(find(SP, "......", below, 2, false), "010001");
	assert_string_equal(find(SP, "......", leaf, 1, false), "000001");
	assert_string_equal(find(SP, "......", root, 1, false), "mismatch");
	assert_string_equal(find(SP, "......", above, 1, false), "mismatch");
}

static void test_entry_frames_that_do_not_pair_up(void **state)
{
	/* two in one frame: one native activation cannot have pushed both */
	const uint64_t two[2] = { 0x1c40, 0x1c80 };
	/* below the sampled sp: in no frame */
	const uint64_t outside[2] = { 0x1a00, 0x1f80 };
	/* one entry frame for two Python activations: found, but the merge rejects it */
	const uint64_t one[1] = { 0x1f80 };
	const bool entry[3] = { true, false, true };
	bool is_eval[6];
	struct merge_item m[16];

	(void)state;
	assert_string_equal(find(SP, "......", two, 2, false), "mismatch");
	assert_string_equal(find(SP, "......", outside, 2, false), "mismatch");
	assert_string_equal(find(SP, "......", one, 1, false), "010000");
	for (int i = 0; i < 6; i++)
		is_eval[i] = i == 1;
	assert_int_equal(native_merge(is_eval, 6, entry, 3, m, 16), -1);
}

static void test_names_cross_check_the_addresses(void **state)
{
	const uint64_t shim[2] = { 0x1c40, 0x1f80 };

	(void)state;
	/* a frame named eval with no entry frame in it (the extension's forged one) */
	assert_string_equal(find(SP, ".E.EE.", shim, 2, false), "mismatch");
	assert_string_equal(find(SP, ".E.EE.", shim, 2, true), "mismatch");
	/* the loop named wholly, yet an activation in a frame of another name */
	assert_string_equal(find(SP, ".E....", shim, 2, true), "mismatch");
	/* named in part (an exported piece): the unnamed activation is fine */
	assert_string_equal(find(SP, ".E....", shim, 2, false), "010010");
}

static void test_more_entry_frames_than_kept_is_its_own_reason(void **state)
{
	const uint64_t shim[2] = { 0x1c40, 0x1f80 };
	bool named_eval[6] = { false }, is_eval[6];
	struct native_evidence ev = {
		.has_shims = true, .shim = shim, .nshims = 3, .kept = 2, .loop_named = true
	};

	(void)state;
	assert_int_equal(native_find_evals(SP, named_eval, 6, &ev, is_eval), NATIVE_EVALS_DEEP);
}

static void test_frames_out_of_stack_order_are_a_mismatch(void **state)
{
	const uint64_t sp[3] = { 0x2000, 0x1e00, 0x1f00 }, shim[1] = { 0x1e80 };

	(void)state;
	assert_string_equal(find(sp, "...", shim, 1, false), "mismatch");
}

/* 3.10/3.11 keep no entry frame on the C stack: the names decide, and with the loop
 * unnamed nothing can (native_eval_unnamed); so does an sp libdwfl did not know. */
static void test_without_entry_frames_names_decide(void **state)
{
	const bool named_eval[6] = { false, true, false, false, true, false };
	const uint64_t sp_unknown[6] = { 0x2000, 0x1f00, 0, 0x1d00, 0x1c00, 0x1b00 };
	const uint64_t shim[2] = { 0x1c40, 0x1f80 };
	struct native_evidence ev = { .has_shims = false, .loop_named = true };
	bool is_eval[6];

	(void)state;
	assert_int_equal(native_find_evals(SP, named_eval, 6, &ev, is_eval), NATIVE_EVALS_FOUND);
	assert_true(is_eval[1] && is_eval[4] && !is_eval[0] && !is_eval[2] && !is_eval[5]);
	ev.loop_named = false;
	assert_int_equal(native_find_evals(SP, named_eval, 6, &ev, is_eval), NATIVE_EVALS_UNNAMED);
	ev = (struct native_evidence){
		.has_shims = true, .shim = shim, .nshims = 2, .kept = 2, .loop_named = false
	};
	assert_int_equal(native_find_evals(sp_unknown, named_eval, 6, &ev, is_eval),
			 NATIVE_EVALS_UNNAMED);
	ev.loop_named = true;
	assert_int_equal(native_find_evals(sp_unknown, named_eval, 6, &ev, is_eval),
			 NATIVE_EVALS_FOUND);
	assert_true(is_eval[1] && is_eval[4]);
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
		cmocka_unit_test(test_entry_frames_mark_the_frames_they_lie_in),
		cmocka_unit_test(test_span_edges),
		cmocka_unit_test(test_entry_frames_that_do_not_pair_up),
		cmocka_unit_test(test_names_cross_check_the_addresses),
		cmocka_unit_test(test_more_entry_frames_than_kept_is_its_own_reason),
		cmocka_unit_test(test_frames_out_of_stack_order_are_a_mismatch),
		cmocka_unit_test(test_without_entry_frames_names_decide),
	};

	return cmocka_run_group_tests_name("native_merge", tests, NULL, NULL);
}
