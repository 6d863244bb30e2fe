// SPDX-License-Identifier: MIT
/* Interned strings for the writers, hashed once per lookup. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "htab.h"
#include "strtab.h"
#include "util.h"

struct strtab {
	char **strs;
	size_t n, cap;
	struct htab index;
};

struct strtab *strtab__new(void)
{
	return calloc(1, sizeof(struct strtab));
}

void strtab__free(struct strtab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->strs[i]);
	free(t->strs);
	htab_free(&t->index);
	free(t);
}

static bool str_eq(uint32_t id, const void *key, void *ctx)
{
	const struct strtab *t = ctx;

	return !strcmp(t->strs[id], key);
}

int64_t strtab__intern(struct strtab *t, const char *s)
{
	uint64_t hash = hash_bytes(s, strlen(s), 0);
	uint32_t id;
	char *copy;
	int err;

	if (htab_find(&t->index, hash, str_eq, s, t, &id))
		return id;
	if (t->n >= UINT32_MAX - 1)
		return -E2BIG;
	err = grow_array((void **)&t->strs, &t->cap, t->n + 1, sizeof(*t->strs));
	if (err)
		return err;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	err = htab_insert(&t->index, hash, (uint32_t)t->n);
	if (err) {
		free(copy);
		return err;
	}
	t->strs[t->n] = copy;
	return (int64_t)t->n++;
}

size_t strtab__count(const struct strtab *t)
{
	return t->n;
}

const char *strtab__get(const struct strtab *t, size_t i)
{
	return t->strs[i];
}
