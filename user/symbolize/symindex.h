/* SPDX-License-Identifier: MIT */
/* One binary's function symbols sorted by address, for the native unwinder's naming:
 * libdwfl's own address lookup scans the whole symbol table, and a sampled leaf's address
 * is new nearly every time. Pure: the entries are given, names are not copied. */
#ifndef PW_SYMINDEX_H
#define PW_SYMINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sym_entry {
	uint64_t lo, hi; /* [lo, hi); hi == lo: a symbol without a size */
	const char *name;
	const char *shown; /* the user's: name as shown once looked up (NULL until then) */
	bool global;	   /* named where a same-address local alias is too: prefer it */
};

struct symindex {
	struct sym_entry *e;
	size_t n;
};

/* Takes `e` (malloc'd, n entries): sorts it and drops same-address duplicates. */
void symindex__init(struct symindex *x, struct sym_entry *e, size_t n);
/* The symbol holding addr: the innermost sized one whose range holds it; else, when the
 * nearest symbol below addr has no size, that one (as symbol tables without sizes are
 * read); NULL when addr is in no symbol's range. */
const struct sym_entry *symindex__find(const struct symindex *x, uint64_t addr);
size_t symindex__bytes(const struct symindex *x);
void symindex__free(struct symindex *x);

#endif
