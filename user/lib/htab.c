// SPDX-License-Identifier: MIT
/* Linear-probing hash index, kept at most half full. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/htab.h"

#define EMPTY UINT32_MAX

bool htab_find(const struct htab *h, uint64_t hash, htab_eq_fn eq, const void *key, void *ctx,
	       uint32_t *id)
{
	size_t mask, i;

	if (!h->cap)
		return false;
	mask = h->cap - 1;
	for (i = hash & mask;; i = (i + 1) & mask) {
		if (h->ids[i] == EMPTY)
			return false;
		if (h->hashes[i] == hash && eq(h->ids[i], key, ctx)) {
			*id = h->ids[i];
			return true;
		}
	}
}

static void place(uint64_t *hashes, uint32_t *ids, size_t cap, uint64_t hash, uint32_t id)
{
	size_t mask = cap - 1, i;

	for (i = hash & mask; ids[i] != EMPTY; i = (i + 1) & mask)
		;
	hashes[i] = hash;
	ids[i] = id;
}

int htab_insert(struct htab *h, uint64_t hash, uint32_t id)
{
	if ((h->n + 1) * 2 > h->cap) {
		size_t ncap = h->cap ? h->cap * 2 : 64;
		uint64_t *hashes = malloc(ncap * sizeof(*hashes));
		uint32_t *ids = malloc(ncap * sizeof(*ids));

		if (!hashes || !ids) {
			free(hashes);
			free(ids);
			return -ENOMEM;
		}
		memset(ids, 0xff, ncap * sizeof(*ids));
		for (size_t i = 0; i < h->cap; i++)
			if (h->ids[i] != EMPTY)
				place(hashes, ids, ncap, h->hashes[i], h->ids[i]);
		free(h->hashes);
		free(h->ids);
		h->hashes = hashes;
		h->ids = ids;
		h->cap = ncap;
	}
	place(h->hashes, h->ids, h->cap, hash, id);
	h->n++;
	return 0;
}

bool htab_remove(struct htab *h, uint64_t hash, uint32_t id)
{
	size_t mask, i, j;

	if (!h->cap)
		return false;
	mask = h->cap - 1;
	for (i = hash & mask; h->ids[i] != id; i = (i + 1) & mask)
		if (h->ids[i] == EMPTY)
			return false;
	/* backward-shift deletion: move up every later entry of the run whose home slot does
	 * not lie cyclically in (i, j], so each stays reachable from its home slot */
	for (j = (i + 1) & mask; h->ids[j] != EMPTY; j = (j + 1) & mask) {
		size_t home = h->hashes[j] & mask;

		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		h->hashes[i] = h->hashes[j];
		h->ids[i] = h->ids[j];
		i = j;
	}
	h->ids[i] = EMPTY;
	h->n--;
	return true;
}

void htab_free(struct htab *h)
{
	if (!h)
		return;
	free(h->hashes);
	free(h->ids);
	memset(h, 0, sizeof(*h));
}
