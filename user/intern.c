// SPDX-License-Identifier: MIT
/* The interning table over htab: the index holds ids, the array holds the items. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "intern.h"
#include "util.h"

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

int64_t intern_put(struct intern *t, uint64_t hash, const void *key, const void *item,
		   bool *added)
{
	int64_t id = intern_find(t, hash, key);

	if (added)
		*added = id < 0;
	return id >= 0 ? id : intern_add(t, hash, item);
}

size_t intern_bytes(const struct intern *t)
{
	return t->cap * t->size + htab_bytes(&t->index);
}

void intern_clear(struct intern *t)
{
	t->n = 0;
	htab_free(&t->index);
}

void intern_free(struct intern *t)
{
	if (!t)
		return;
	free(t->items);
	htab_free(&t->index);
	t->items = NULL;
	t->n = t->cap = 0;
}
