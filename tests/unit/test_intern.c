// SPDX-License-Identifier: MIT
/* The interning table: equal keys get one id, ids are dense and stable while the array
 * grows, colliding hashes still tell keys apart, and clear starts over. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "intern.h"

struct pair {
	uint32_t a, b;
};

static bool pair_eq(const void *item, const void *key)
{
	const struct pair *x = item, *y = key;

	return x->a == y->a && x->b == y->b;
}

static void test_equal_keys_share_one_id_and_ids_are_dense(void **state)
{
	struct intern t = INTERN_INIT(struct pair, pair_eq);

	(void)state;
	for (uint32_t i = 0; i < 5000; i++) {
		struct pair p = { i, i * 7 };
		bool added;

		/* every hash collides: equality alone tells the keys apart */
		assert_int_equal(intern_put(&t, 42, &p, &p, &added), i);
		assert_true(added);
	}
	for (uint32_t i = 0; i < 5000; i++) {
		struct pair p = { i, i * 7 };
		bool added;

		assert_int_equal(intern_put(&t, 42, &p, &p, &added), i);
		assert_false(added);
		assert_int_equal(((struct pair *)intern_at(&t, i))->b, i * 7);
	}
	assert_int_equal(intern_count(&t), 5000);
	assert_int_equal(intern_find(&t, 42, &(struct pair){ 1, 1 }), -1);
	assert_true(intern_bytes(&t) >= 5000 * sizeof(struct pair));
	intern_free(&t);
}

static void test_clear_forgets_every_item(void **state)
{
	struct intern t = INTERN_INIT(struct pair, pair_eq);
	struct pair p = { 1, 2 };

	(void)state;
	assert_int_equal(intern_add(&t, 7, &p), 0);
	intern_clear(&t);
	assert_int_equal(intern_count(&t), 0);
	assert_int_equal(intern_find(&t, 7, &p), -1);
	assert_int_equal(intern_put(&t, 7, &p, &p, NULL), 0);
	intern_free(&t);
	intern_free(&t); /* twice is harmless */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal_keys_share_one_id_and_ids_are_dense),
		cmocka_unit_test(test_clear_forgets_every_item),
	};

	return cmocka_run_group_tests_name("intern", tests, NULL, NULL);
}
