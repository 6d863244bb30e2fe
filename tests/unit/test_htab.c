// SPDX-License-Identifier: MIT
/* The open-addressing index (user/lib/htab.c) against a reference model: random inserts and
 * removals whose hashes collide on purpose (few distinct home slots, many of them at the
 * end of the table so runs wrap around to its start). After every step each live key is
 * found under its id, no removed key is, and every stored entry is reachable from its
 * home slot: what backward-shift deletion must preserve without tombstones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/htab.h"

#define EMPTY UINT32_MAX
#define MAX_IDS 4096

/* The model: key and hash of every id, and whether it is in the table. */
static struct {
	uint64_t key[MAX_IDS], hash[MAX_IDS];
	bool live[MAX_IDS], used[MAX_IDS];
	uint32_t used_ids[MAX_IDS]; /* every id inserted at least once */
	size_t nlive, nused;
	uint64_t rng;
} m;

static uint64_t rnd(void)
{
	/* xorshift64*: the same sequence on every run */
	m.rng ^= m.rng >> 12;
	m.rng ^= m.rng << 25;
	m.rng ^= m.rng >> 27;
	return m.rng * 0x2545f4914f6cdd1dull;
}

static bool key_eq(uint32_t id, const void *key, void *ctx)
{
	(void)ctx;
	assert_true(id < MAX_IDS);
	return m.key[id] == *(const uint64_t *)key;
}

static int reset(void **state)
{
	(void)state;
	memset(&m, 0, sizeof(m));
	m.rng = 0x9e3779b97f4a7c15ull;
	return 0;
}

/* Every entry of the table is a live id of the model stored under its own hash, reachable
 * from its home slot through occupied slots only; the model's live ids are all there. */
static void check(const struct htab *h)
{
	size_t mask = h->cap - 1, stored = 0;
	static bool seen[MAX_IDS];

	assert_int_equal(h->n, m.nlive);
	if (!h->cap)
		return;
	assert_true(h->n * 2 <= h->cap);
	memset(seen, 0, sizeof(seen));
	for (size_t i = 0; i < h->cap; i++) {
		uint32_t id = h->ids[i];

		if (id == EMPTY)
			continue;
		assert_true(id < MAX_IDS && m.live[id]);
		assert_false(seen[id]);
		seen[id] = true;
		assert_int_equal(h->hashes[i], m.hash[id]);
		for (size_t j = h->hashes[i] & mask; j != i; j = (j + 1) & mask)
			assert_int_not_equal(h->ids[j], EMPTY);
		stored++;
	}
	assert_int_equal(stored, m.nlive);
	for (size_t k = 0; k < m.nused; k++) {
		uint32_t id = m.used_ids[k], got = EMPTY;
		bool found = htab_find(h, m.hash[id], key_eq, &m.key[id], NULL, &got);

		assert_int_equal(found, m.live[id]);
		if (found)
			assert_int_equal(got, id);
	}
}

static void insert(struct htab *h, uint32_t id, uint64_t key, uint64_t hash)
{
	assert_false(m.live[id]);
	m.key[id] = key;
	m.hash[id] = hash;
	m.live[id] = true;
	m.nlive++;
	if (!m.used[id]) {
		m.used[id] = true;
		m.used_ids[m.nused++] = id;
	}
	assert_int_equal(htab_insert(h, hash, id), 0);
}

static void remove_id(struct htab *h, uint32_t id)
{
	assert_true(m.live[id]);
	assert_true(htab_remove(h, m.hash[id], id));
	m.live[id] = false;
	m.nlive--;
}

static void test_lookups_on_an_empty_table_find_nothing(void **state)
{
	struct htab h = { 0 };
	uint64_t key = 1;
	uint32_t id;

	(void)state;
	assert_false(htab_find(&h, 5, key_eq, &key, NULL, &id));
	assert_false(htab_remove(&h, 5, 0));
	assert_int_equal(htab_bytes(&h), 0);
	htab_free(&h);
	htab_free(NULL);
}

static void test_equal_hashes_are_told_apart_by_the_key(void **state)
{
	struct htab h = { 0 };
	uint64_t other = 999;
	uint32_t id;

	(void)state;
	for (uint32_t i = 0; i < 20; i++)
		insert(&h, i, 100 + i, 0x42);
	check(&h);
	assert_false(htab_find(&h, 0x42, key_eq, &other, NULL, &id));
	remove_id(&h, 7);
	remove_id(&h, 0);
	check(&h);
	/* removing what is not there (or under another id) changes nothing */
	assert_false(htab_remove(&h, 0x42, 7));
	assert_false(htab_remove(&h, 0x42, 1000));
	check(&h);
	htab_free(&h);
}

/* A run that starts in the last slots of the table continues at slot 0; removing from it
 * must shift the entries past the end back across the wrap, and leave entries whose home
 * is slot 0 or 1 where their home can reach them. */
static void test_removal_shifts_entries_back_across_the_end_of_the_table(void **state)
{
	struct htab h = { 0 };
	uint64_t last = 63; /* the first table has 64 slots */

	(void)state;
	insert(&h, 0, 1000, 0);
	assert_int_equal(h.cap, 64);
	remove_id(&h, 0);
	for (uint32_t i = 0; i < 5; i++)
		insert(&h, 10 + i, 2000 + i, last - (i & 1)); /* homes 63 and 62 */
	insert(&h, 20, 3000, 0);			      /* home 0, pushed on by the wrap */
	insert(&h, 21, 3001, 1);
	insert(&h, 22, 3002, 64 + 63); /* home 63 as well: high bits differ */
	check(&h);
	assert_int_not_equal(h.ids[0], EMPTY);
	assert_int_not_equal(h.ids[3], EMPTY);
	for (uint32_t id = 10; id < 15; id++) {
		remove_id(&h, id);
		check(&h);
	}
	remove_id(&h, 22);
	check(&h);
	/* what is left sits at its home slot again */
	assert_int_equal(h.ids[0], 20);
	assert_int_equal(h.ids[1], 21);
	htab_free(&h);
}

/* One random walk: `steps` inserts or removals, hashes drawn from `homes` values around
 * the end of the table (with high bits set, which growth brings into play). */
static size_t random_walk(uint64_t seed, int steps, unsigned int homes, size_t max_live,
			  int check_every)
{
	struct htab h = { 0 };
	size_t max_cap = 0;
	uint32_t ids[MAX_IDS];
	size_t nids = 0;

	m.rng ^= seed;
	for (int step = 0; step < steps; step++) {
		bool grow = nids < max_live && (nids == 0 || rnd() % 100 < 55);

		if (grow) {
			uint32_t id;

			do
				id = (uint32_t)(rnd() % MAX_IDS);
			while (m.live[id]);
			/* few home slots, half the last ones of the table, half the first:
			 * runs cross the end of the table, from both sides of it */
			insert(&h, id, rnd() | 1, rnd() % homes - homes / 2);
			ids[nids++] = id;
		} else {
			size_t k = rnd() % nids;

			remove_id(&h, ids[k]);
			ids[k] = ids[--nids];
		}
		if (step % check_every == 0 || nids < 16)
			check(&h);
		if (h.cap > max_cap)
			max_cap = h.cap;
	}
	check(&h);
	while (nids) {
		remove_id(&h, ids[--nids]);
		if (nids % check_every == 0 || nids < 16)
			check(&h);
	}
	for (size_t i = 0; i < h.cap; i++)
		assert_int_equal(h.ids[i], EMPTY); /* no tombstone or leftover */
	htab_free(&h);
	return max_cap;
}

static void test_random_inserts_and_removals_match_a_model(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 8; seed++) {
		reset(NULL);
		random_walk(seed * 0x100000001b3ull, 3000, 1u << (seed % 4 + 1), 60, 3);
	}
}

static void test_random_walk_across_table_growth_matches_a_model(void **state)
{
	(void)state;
	/* hundreds of live ids in one long run near the top: the table grows from 64 slots
	 * to 1024 or more, rehashing entries whose home moves with the wider mask */
	assert_true(random_walk(77, 6000, 40, 1500, 250) >= 1024);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_lookups_on_an_empty_table_find_nothing, reset),
		cmocka_unit_test_setup(test_equal_hashes_are_told_apart_by_the_key, reset),
		cmocka_unit_test_setup(test_removal_shifts_entries_back_across_the_end_of_the_table,
				       reset),
		cmocka_unit_test_setup(test_random_inserts_and_removals_match_a_model, reset),
		cmocka_unit_test_setup(test_random_walk_across_table_growth_matches_a_model, reset),
	};

	return cmocka_run_group_tests_name("htab", tests, NULL, NULL);
}
