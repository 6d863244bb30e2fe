// SPDX-License-Identifier: MIT
/* Interned strings for the writers, hashed once per lookup. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/intern.h"
#include "lib/strtab.h"
#include "lib/util.h"

struct strtab {
	struct intern strs; /* char *, owned */
};

static bool str_eq(const void *item, const void *key)
{
	return !strcmp(*(char *const *)item, key);
}

struct strtab *strtab__new(void)
{
	struct strtab *t = calloc(1, sizeof(*t));

	if (t)
		t->strs = (struct intern)INTERN_INIT(char *, str_eq);
	return t;
}

void strtab__free(struct strtab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < intern_count(&t->strs); i++)
		free(*(char **)intern_at(&t->strs, i));
	intern_free(&t->strs);
	free(t);
}

int64_t strtab__intern(struct strtab *t, const char *s)
{
	uint64_t hash = hash_bytes(s, strlen(s), 0);
	int64_t id = intern_find(&t->strs, hash, s);
	char *copy;

	if (id >= 0)
		return id;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	id = intern_add(&t->strs, hash, &copy);
	if (id < 0)
		free(copy);
	return id;
}

size_t strtab__count(const struct strtab *t)
{
	return intern_count(&t->strs);
}

const char *strtab__get(const struct strtab *t, size_t i)
{
	return *(char **)intern_at(&t->strs, i);
}

int strtab__remove(struct strtab *t, size_t i)
{
	char **s = intern_at(&t->strs, i);
	int err;

	if (!*s)
		return 0;
	err = intern_remove(&t->strs, hash_bytes(*s, strlen(*s), 0), (uint32_t)i);
	if (err)
		return err;
	free(*s);
	*s = NULL;
	return 0;
}
