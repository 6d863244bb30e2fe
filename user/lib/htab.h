/* SPDX-License-Identifier: MIT */
/* Open-addressing hash index from a 64-bit hash to 32-bit ids; the owner keeps the keys and
 * supplies equality. Lookups allocate nothing; removal shifts later entries back, so no
 * tombstones accumulate in a cache that churns. */
#ifndef PW_HTAB_H
#define PW_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct htab {
	uint64_t *hashes;
	uint32_t *ids; /* UINT32_MAX = empty slot */
	size_t cap, n;
};

typedef bool (*htab_eq_fn)(uint32_t id, const void *key, void *ctx);

/* Find the id whose key equals `key`. true and *id set when found. */
bool htab_find(const struct htab *h, uint64_t hash, htab_eq_fn eq, const void *key, void *ctx,
	       uint32_t *id);
/* Add `id` under `hash` (the caller checked it is not there). 0 or -ENOMEM. */
int htab_insert(struct htab *h, uint64_t hash, uint32_t id);
/* Remove `id`, stored under `hash`. true when it was there. */
bool htab_remove(struct htab *h, uint64_t hash, uint32_t id);
void htab_free(struct htab *h);
/* Bytes the index itself holds. */
static inline size_t htab_bytes(const struct htab *h)
{
	return h->cap * (sizeof(*h->hashes) + sizeof(*h->ids));
}

#endif
