// SPDX-License-Identifier: MIT
/* The interning table over htab: the index holds ids, the array holds the items. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/intern.h"
#include "lib/util.h"

static bool item_eq(uint32_t id, const void *key, void *ctx)
{
	const struct intern *t = ctx;

	return t->eq(intern_at(t, id), key);
}

int64_t intern_find(const struct intern *t, uint64_t hash, const void *key)
{
	uint32_t id;

	if (!htab_find(&t->index, hash, item_eq, key, (void *)t, &id))
		return -1;
	return id;
}

int64_t intern_add(struct intern *t, uint64_t hash, const void *item)
{
	int err;

	if (t->nfree) {
		uint32_t id = t->free_ids[t->nfree - 1];

		err = htab_insert(&t->index, hash, id);
		if (err)
			return err;
		t->nfree--;
		memcpy(intern_at(t, id), item, t->size);
		return id;
	}
	if (t->n >= UINT32_MAX - 1)
		return -E2BIG;
	err = grow_array(&t->items, &t->cap, t->n + 1, t->size);
	if (!err)
		err = htab_insert(&t->index, hash, (uint32_t)t->n);
	if (err)
		return err;
	memcpy(intern_at(t, t->n), item, t->size);
	return (int64_t)t->n++;
}

int64_t intern_put(struct intern *t, uint64_t hash, const void *key, const void *item, bool *added)
{
	int64_t id = intern_find(t, hash, key);

	if (added)
		*added = id < 0;
	return id >= 0 ? id : intern_add(t, hash, item);
}

int intern_remove(struct intern *t, uint64_t hash, uint32_t id)
{
	int err =
		grow_array((void **)&t->free_ids, &t->free_cap, t->nfree + 1, sizeof(*t->free_ids));

	if (err)
		return err;
	if (htab_remove(&t->index, hash, id))
		t->free_ids[t->nfree++] = id;
	return 0;
}

size_t intern_bytes(const struct intern *t)
{
	return t->cap * t->size + htab_bytes(&t->index) + t->free_cap * sizeof(*t->free_ids);
}

void intern_clear(struct intern *t)
{
	t->n = t->nfree = 0;
	htab_free(&t->index);
}

void intern_free(struct intern *t)
{
	if (!t)
		return;
	free(t->items);
	free(t->free_ids);
	htab_free(&t->index);
	t->items = NULL;
	t->free_ids = NULL;
	t->n = t->cap = t->nfree = t->free_cap = 0;
}
