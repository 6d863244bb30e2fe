// SPDX-License-Identifier: MIT
/* The interning table: equal keys get one id, ids are dense and stable while the array
 * grows, colliding hashes still tell keys apart, clear starts over, and a removed item's id
 * goes to the next item added while the others keep theirs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/intern.h"

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

static void test_removed_ids_are_reused_and_others_stay(void **state)
{
	struct intern t = INTERN_INIT(struct pair, pair_eq);

	(void)state;
	for (uint32_t i = 0; i < 100; i++)
		assert_int_equal(intern_add(&t, i % 3, &(struct pair){ i, 0 }), i);
	for (uint32_t i = 0; i < 100; i += 2)
		assert_int_equal(intern_remove(&t, i % 3, i), 0);
	for (uint32_t i = 0; i < 100; i++)
		assert_int_equal(intern_find(&t, i % 3, &(struct pair){ i, 0 }),
				 i % 2 ? (int64_t)i : -1);
	/* 50 new items fill the 50 holes: the table does not grow */
	for (uint32_t i = 0; i < 50; i++) {
		int64_t id = intern_add(&t, 9, &(struct pair){ 1000 + i, 0 });

		assert_true(id >= 0 && id < 100 && id % 2 == 0);
		assert_int_equal(intern_find(&t, 9, &(struct pair){ 1000 + i, 0 }), id);
	}
	assert_int_equal(intern_count(&t), 100);
	assert_int_equal(intern_add(&t, 9, &(struct pair){ 2000, 0 }), 100);
	intern_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal_keys_share_one_id_and_ids_are_dense),
		cmocka_unit_test(test_clear_forgets_every_item),
		cmocka_unit_test(test_removed_ids_are_reused_and_others_stay),
	};

	return cmocka_run_group_tests_name("intern", tests, NULL, NULL);
}
