/* SPDX-License-Identifier: MIT */
/* An interning table: fixed-size items in one array with a hash index over them, which is
 * what every "give this thing a small dense id" table in pywalk is (frames, stacks,
 * functions, strings, processes, threads). The owner says how a key compares with an item;
 * ids are array indexes, stable while the item is there. A cache that must stay bounded
 * starts over with intern_clear(); a table whose ids others hold removes the items nobody
 * holds with intern_remove(), and their ids are given to the next items added. */
#ifndef PW_INTERN_H
#define PW_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/htab.h"

struct intern {
	void *items;
	size_t n, cap, size; /* items, room, bytes per item */
	struct htab index;
	uint32_t *free_ids; /* removed items' ids, reused last removed first */
	size_t nfree, free_cap;
	/* does `item` have the key `key` (whatever the owner looks items up by)? */
	bool (*eq)(const void *item, const void *key);
};

/* A table of `type` items compared by `eq_fn`. */
#define INTERN_INIT(type, eq_fn)                    \
	{                                           \
		.size = sizeof(type), .eq = (eq_fn) \
	}

/* Id of the item with key `key` (hashed to `hash`), or -1. */
int64_t intern_find(const struct intern *t, uint64_t hash, const void *key);
/* Add a copy of `item` under `hash` (the caller knows it is not there), in a removed
 * item's place if there is one. Its id, or -ENOMEM, or -E2BIG past UINT32_MAX - 1 items. */
int64_t intern_add(struct intern *t, uint64_t hash, const void *item);
/* The id of the item with key `key`, adding `item` when there is none (*added, may be NULL,
 * says which). A negative errno as intern_add. */
int64_t intern_put(struct intern *t, uint64_t hash, const void *key, const void *item, bool *added);

static inline void *intern_at(const struct intern *t, size_t id)
{
	return (char *)t->items + id * t->size;
}

/* Ids in use or removed: every id is below it. */
static inline size_t intern_count(const struct intern *t)
{
	return t->n;
}

/* Take item `id` (stored under `hash`) out of the index: lookups no longer find it and its
 * id goes to a later intern_add. Its memory is the owner's to release first; intern_at(id)
 * stays addressable (the owner marks it removed). 0 or -ENOMEM. */
int intern_remove(struct intern *t, uint64_t hash, uint32_t id);

/* Bytes held: the items and the index. */
size_t intern_bytes(const struct intern *t);
/* Forget every item (memory is kept for reuse). */
void intern_clear(struct intern *t);
void intern_free(struct intern *t);

#endif
