// SPDX-License-Identifier: MIT
// Unit tests for user/symbolize/linetable.c: real co_linetable vectors from CPython
// 3.10-3.13 (see gen_linetable_vectors.py), truncation and garbage fuzzing.

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "symbolize/linetable.h"
#include "linetable_vectors.h"

#define N_VECTORS (sizeof(lt_vectors) / sizeof(lt_vectors[0]))

static int rc_ok(int rc)
{
	return rc == 0 || rc == -EINVAL || rc == -ERANGE;
}

/* Copy into an exact-size heap block so ASan flags any overread. */
static uint8_t *dup_exact(const uint8_t *src, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	assert_non_null(p);
	if (len)
		memcpy(p, src, len);
	return p;
}

static void test_real_vectors(void **state)
{
	size_t v, checked = 0, bad = 0;

	(void)state;
	for (v = 0; v < N_VECTORS; v++) {
		const struct lt_vector *tv = &lt_vectors[v];
		uint8_t *tab = dup_exact(tv->table, tv->table_len);
		uint32_t u;

		for (u = 0; u < tv->n_units; u++) {
			int line = -12345;
			int rc = linetable_line_for(tv->fmt, tab, tv->table_len, tv->firstlineno, u,
						    &line);

			checked++;
			if (rc != 0 || line != tv->lines[u]) {
				if (bad++ < 20)
					print_error("%s: unit %u: rc=%d line=%d want %d\n",
						    tv->name, u, rc, line, (int)tv->lines[u]);
			}
		}
		free(tab);
	}
	print_message("%zu vectors, %zu code units checked\n", N_VECTORS, checked);
	assert_int_equal(bad, 0);
}

static void test_past_end(void **state)
{
	size_t v;

	(void)state;
	for (v = 0; v < N_VECTORS; v++) {
		const struct lt_vector *tv = &lt_vectors[v];
		const uint32_t past[] = { tv->n_units, tv->n_units + 1, tv->n_units + 1000,
					  UINT32_MAX };
		size_t i;

		for (i = 0; i < sizeof(past) / sizeof(past[0]); i++) {
			int line = -12345;

			assert_int_equal(linetable_line_for(tv->fmt, tv->table, tv->table_len,
							    tv->firstlineno, past[i], &line),
					 -ERANGE);
			assert_int_equal(line, -12345);
		}
	}
}

/*
 * Cut every real table at every byte position. The decoder must not crash or
 * read past the cut, and whenever it still answers, the entry it used was
 * complete, so the answer must be the ground truth.
 */
static void test_truncated(void **state)
{
	size_t v, calls = 0;

	(void)state;
	for (v = 0; v < N_VECTORS; v++) {
		const struct lt_vector *tv = &lt_vectors[v];
		uint32_t stride = tv->n_units > 48 ? tv->n_units / 48 : 1;
		size_t cut;

		for (cut = 0; cut < tv->table_len; cut++) {
			uint8_t *tab = dup_exact(tv->table, cut);
			uint32_t u;

			for (u = 0; u <= tv->n_units; u++) {
				int line = -12345, rc;

				/* every unit near both ends, a stride in between */
				if (u > 8 && u + 8 < tv->n_units && u % stride)
					continue;
				rc = linetable_line_for(tv->fmt, tab, cut, tv->firstlineno, u,
							&line);
				calls++;
				assert_true(rc_ok(rc));
				if (rc == 0) {
					assert_true(u < tv->n_units);
					assert_int_equal(line, tv->lines[u]);
				} else {
					assert_int_equal(line, -12345);
				}
			}
			free(tab);
		}
	}
	print_message("%zu truncated-table lookups\n", calls);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/*
 * 10k random tables per format with a fixed seed: half pure noise, half
 * "plausible" (entry-start bytes followed by continuation-like bytes, long
 * varint chains) to reach the deep paths. Extreme firstlineno values make the
 * running line overflow int; UBSan checks that this stays defined.
 */
static void test_garbage(void **state)
{
	static const int firsts[] = { 1, 0, -1, INT_MAX, INT_MIN, INT_MAX - 3, INT_MIN + 3, 70000 };
	size_t iter, n_ok = 0, n_inval = 0, n_range = 0;

	(void)state;
	for (iter = 0; iter < 10000; iter++) {
		size_t len = rng() % 300, i;
		uint8_t *tab = malloc(len ? len : 1);
		int plausible = iter & 1;
		int fmt;

		assert_non_null(tab);
		for (i = 0; i < len; i++) {
			uint8_t b = (uint8_t)rng();

			if (plausible) {
				/* ~1 in 4 bytes starts an entry; the rest are
				 * mostly varint bytes with the continuation bit */
				if (rng() % 4 == 0)
					b |= 0x80;
				else
					b = (b & 0x7f) | (rng() % 3 ? 0x40 : 0);
			}
			tab[i] = b;
		}
		for (fmt = LINETABLE_PEP626; fmt <= LINETABLE_LOCATION; fmt++) {
			const uint32_t addrs[] = { 0, 1, (uint32_t)(rng() % 512),
						   (uint32_t)(len * 4), UINT32_MAX };
			size_t a;

			for (a = 0; a < sizeof(addrs) / sizeof(addrs[0]); a++) {
				int line = 0;
				int first = firsts[rng() % (sizeof(firsts) / sizeof(firsts[0]))];
				int rc = linetable_line_for((enum linetable_format)fmt, tab, len,
							    first, addrs[a], &line);

				assert_true(rc_ok(rc));
				n_ok += rc == 0;
				n_inval += rc == -EINVAL;
				n_range += rc == -ERANGE;
			}
		}
		free(tab);
	}
	print_message("garbage: %zu ok, %zu -EINVAL, %zu -ERANGE\n", n_ok, n_inval, n_range);
	/* The corpus must actually exercise all three outcomes. */
	assert_true(n_ok > 0 && n_inval > 0 && n_range > 0);
}

static int lookup(enum linetable_format fmt, const uint8_t *t, size_t len, int first,
		  uint32_t addrq, int *line)
{
	uint8_t *tab = dup_exact(t, len);
	int rc = linetable_line_for(fmt, tab, len, first, addrq, line);

	free(tab);
	return rc;
}

static void test_pep626_edges(void **state)
{
	/* (2 bytes, +5), (2 bytes, no line), (2 bytes, +1) */
	static const uint8_t noline[] = { 2, 5, 2, 0x80, 2, 1 };
	/* two zero-length entries still move the line: 1+127+127+6 */
	static const uint8_t zero[] = { 0, 127, 0, 127, 4, 6 };
	/* line goes down by 128 in two steps */
	static const uint8_t back[] = { 2, 0, 0, 0x81, 2, 0xff };
	static const uint8_t odd[] = { 2, 1, 2 };
	int line = 0;

	(void)state;
	assert_int_equal(lookup(LINETABLE_PEP626, noline, 6, 10, 0, &line), 0);
	assert_int_equal(line, 15);
	assert_int_equal(lookup(LINETABLE_PEP626, noline, 6, 10, 1, &line), 0);
	assert_int_equal(line, 0);
	assert_int_equal(lookup(LINETABLE_PEP626, noline, 6, 10, 2, &line), 0);
	assert_int_equal(line, 16);
	assert_int_equal(lookup(LINETABLE_PEP626, noline, 6, 10, 3, &line), -ERANGE);

	assert_int_equal(lookup(LINETABLE_PEP626, zero, 6, 1, 0, &line), 0);
	assert_int_equal(line, 261);
	assert_int_equal(lookup(LINETABLE_PEP626, zero, 6, 1, 1, &line), 0);
	assert_int_equal(line, 261);

	assert_int_equal(lookup(LINETABLE_PEP626, back, 6, 300, 0, &line), 0);
	assert_int_equal(line, 300);
	assert_int_equal(lookup(LINETABLE_PEP626, back, 6, 300, 1, &line), 0);
	assert_int_equal(line, 300 - 127 - 1);

	/* a dangling half pair only matters once reached */
	assert_int_equal(lookup(LINETABLE_PEP626, odd, 3, 1, 0, &line), 0);
	assert_int_equal(line, 2);
	assert_int_equal(lookup(LINETABLE_PEP626, odd, 3, 1, 1, &line), -EINVAL);

	/* line leaving int range is malformed, not UB */
	assert_int_equal(lookup(LINETABLE_PEP626, zero, 6, INT_MAX - 10, 0, &line), -EINVAL);
}

static void test_location_edges(void **state)
{
	/* long form, line +3, end +0, col 1, endcol 2; length 2 */
	static const uint8_t lng[] = { 0x80 | (14 << 3) | 1, 6, 0, 1, 2 };
	/* no-columns form, line -70000: zigzag 140001 = 0x222e1 */
	static const uint8_t far[] = {
		0x80 | (13 << 3),
		0x40 | (140001 & 63),
		0x40 | ((140001 >> 6) & 63),
		(140001 >> 12) & 63,
	};
	/* max 32-bit svarint: 6 bytes, value 0xffffffff -> -(2^31 - 1) */
	static const uint8_t max32[] = {
		0x80 | (13 << 3), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03,
	};
	/* 33 bits: rejected */
	static const uint8_t over32[] = {
		0x80 | (13 << 3), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x07,
	};
	/* endless continuation bits */
	static const uint8_t endless[] = {
		0x80 | (13 << 3), 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40,
	};
	/* one-line form +2, then no-location, then short form */
	static const uint8_t mix[] = {
		0x80 | (12 << 3), 4, 9, 0x80 | (15 << 3) | 2, 0x80 | (3 << 3), 0x15,
	};
	/* short form with a missing column byte before the next entry */
	static const uint8_t shortcut[] = { 0x80 | (3 << 3), 0x80 | (3 << 3), 0x15 };
	/* short form with one byte too many */
	static const uint8_t junk[] = { 0x80 | (3 << 3), 0x15, 0x15 };
	static const uint8_t nostart[] = { 0x15, 0x80 };
	int line = 0;

	(void)state;
	assert_int_equal(lookup(LINETABLE_LOCATION, lng, 5, 7, 0, &line), 0);
	assert_int_equal(line, 10);
	assert_int_equal(lookup(LINETABLE_LOCATION, lng, 5, 7, 1, &line), 0);
	assert_int_equal(line, 10);
	assert_int_equal(lookup(LINETABLE_LOCATION, lng, 5, 7, 2, &line), -ERANGE);
	assert_int_equal(lookup(LINETABLE_LOCATION, lng, 4, 7, 0, &line), -EINVAL);

	assert_int_equal(lookup(LINETABLE_LOCATION, far, 4, 70001, 0, &line), 0);
	assert_int_equal(line, 1);

	assert_int_equal(lookup(LINETABLE_LOCATION, max32, 7, INT_MAX, 0, &line), 0);
	assert_int_equal(line, 0); /* INT_MAX - (2^31 - 1) */
	assert_int_equal(lookup(LINETABLE_LOCATION, max32, 7, 0, 0, &line), 0);
	assert_int_equal(line, -INT_MAX);
	assert_int_equal(lookup(LINETABLE_LOCATION, max32, 7, INT_MIN, 0, &line), -EINVAL);
	assert_int_equal(lookup(LINETABLE_LOCATION, over32, 7, 1, 0, &line), -EINVAL);
	assert_int_equal(lookup(LINETABLE_LOCATION, endless, 9, 1, 0, &line), -EINVAL);

	assert_int_equal(lookup(LINETABLE_LOCATION, mix, 6, 5, 0, &line), 0);
	assert_int_equal(line, 7);
	assert_int_equal(lookup(LINETABLE_LOCATION, mix, 6, 5, 1, &line), 0);
	assert_int_equal(line, 0);
	assert_int_equal(lookup(LINETABLE_LOCATION, mix, 6, 5, 3, &line), 0);
	assert_int_equal(line, 0);
	assert_int_equal(lookup(LINETABLE_LOCATION, mix, 6, 5, 4, &line), 0);
	assert_int_equal(line, 7);
	assert_int_equal(lookup(LINETABLE_LOCATION, mix, 6, 5, 5, &line), -ERANGE);

	assert_int_equal(lookup(LINETABLE_LOCATION, shortcut, 3, 1, 0, &line), -EINVAL);
	assert_int_equal(lookup(LINETABLE_LOCATION, junk, 3, 1, 0, &line), -EINVAL);
	assert_int_equal(lookup(LINETABLE_LOCATION, nostart, 2, 1, 0, &line), -EINVAL);
}

static void test_api_edges(void **state)
{
	static const uint8_t t[] = { 2, 1 };
	int line = 0;

	(void)state;
	assert_int_equal(linetable_line_for(LINETABLE_PEP626, NULL, 0, 1, 0, &line), -ERANGE);
	assert_int_equal(linetable_line_for(LINETABLE_LOCATION, NULL, 0, 1, 0, &line), -ERANGE);
	assert_int_equal(linetable_line_for(LINETABLE_PEP626, NULL, 2, 1, 0, &line), -EINVAL);
	assert_int_equal(linetable_line_for(LINETABLE_PEP626, t, 2, 1, 0, NULL), -EINVAL);
	assert_int_equal(linetable_line_for((enum linetable_format)7, t, 2, 1, 0, &line), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_vectors), cmocka_unit_test(test_past_end),
		cmocka_unit_test(test_truncated),    cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_pep626_edges), cmocka_unit_test(test_location_edges),
		cmocka_unit_test(test_api_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
