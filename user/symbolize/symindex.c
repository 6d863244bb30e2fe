// SPDX-License-Identifier: MIT
#include "symbolize/symindex.h"

#include <stdlib.h>

/* How many entries below the nearest one a lookup looks back for one whose range holds the
 * address (a function that contains the nearest symbol, a label inside it). */
#define LOOK_BACK 8

static int by_address(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* at one address: the sized before the sizeless, the global before the local */
	if ((x->hi > x->lo) != (y->hi > y->lo))
		return x->hi > x->lo ? -1 : 1;
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return x->hi > y->hi ? -1 : x->hi < y->hi;
}

void symindex__init(struct symindex *x, struct sym_entry *e, size_t n)
{
	size_t kept = 0;

	if (n)
		qsort(e, n, sizeof(*e), by_address);
	for (size_t i = 0; i < n; i++)
		if (!kept || e[kept - 1].lo != e[i].lo)
			e[kept++] = e[i];
	x->e = e;
	x->n = kept;
}

const struct sym_entry *symindex__find(const struct symindex *x, uint64_t addr)
{
	size_t lo = 0, hi = x->n, near;

	/* the first entry above addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->e[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	near = lo - 1;
	for (size_t i = near + 1, back = 0; i-- > 0 && back < LOOK_BACK; back++)
		if (x->e[i].hi > addr)
			return &x->e[i];
	return x->e[near].hi == x->e[near].lo ? &x->e[near] : NULL;
}

size_t symindex__bytes(const struct symindex *x)
{
	return x->n * sizeof(*x->e);
}

void symindex__free(struct symindex *x)
{
	free(x->e);
	x->e = NULL;
	x->n = 0;
}
