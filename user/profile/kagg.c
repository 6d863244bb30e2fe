// SPDX-License-Identifier: MIT
/* Keys of the kernel's aggregation maps -> the stacks their first records made. Two
 * generations are live at once (the one being drained and the one counting), so the keys
 * are kept per generation parity and forgotten when theirs is drained. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/intern.h"
#include "profile/kagg.h"
#include "lib/util.h"

struct kagg_entry {
	struct pw_agg_key key;
	uint32_t proc, pid, probe;
	uint32_t nids, first;	  /* frame ids in the generation's arena */
	bool counted;		  /* the first record was counted: its stack is the key's */
	struct profile_drops why; /* else: the bucket the profile put it in */
};

struct kagg_gen {
	struct intern keys; /* struct kagg_entry by key */
	uint32_t *ids;
	size_t nids, ids_cap;
};

struct kagg {
	struct kagg_gen gen[2];
	/* the key kagg__first is counting: its generation parity and id, or -1 */
	int pending_gen;
	int64_t pending;
	struct kagg_stats stats;
};

static bool entry_eq(const void *item, const void *key)
{
	return !memcmp(&((const struct kagg_entry *)item)->key, key, sizeof(struct pw_agg_key));
}

static uint64_t key_hash(const struct pw_agg_key *k)
{
	return hash_mix64(k->stack ^ hash_mix64((uint64_t)k->target << 32 | k->tid) ^
			  ((uint64_t)k->probe << 48 | (uint64_t)k->site << 32 | k->nframes));
}

struct kagg *kagg__new(void)
{
	struct kagg *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	for (int i = 0; i < 2; i++)
		k->gen[i].keys = (struct intern)INTERN_INIT(struct kagg_entry, entry_eq);
	k->pending = -1;
	return k;
}

void kagg__free(struct kagg *k)
{
	if (!k)
		return;
	for (int i = 0; i < 2; i++) {
		intern_free(&k->gen[i].keys);
		free(k->gen[i].ids);
	}
	free(k);
}

static struct profile_drops drops_since(const struct profile_drops *a,
					const struct profile_drops *b)
{
	struct profile_drops d;

	for (int i = 0; i < PROFILE_DROP__COUNT; i++)
		d.n[i] = b->n[i] - a->n[i];
	return d;
}

int kagg__first(struct kagg *k, struct profile *p, const void *data, size_t size,
		int (*count)(void *ctx, const void *data, size_t size), void *ctx)
{
	const struct pw_agg_first *f = data;
	const struct pw_sample_hdr *h = (const void *)(f + 1);
	struct kagg_entry e = { 0 };
	struct profile_drops before;
	struct kagg_gen *g;
	bool added;
	int64_t id;
	int err;

	if (size < sizeof(*f) + sizeof(*h))
		return count(ctx, data, 0); /* counted as malformed */
	g = &k->gen[f->gen & 1];
	e.key = (struct pw_agg_key){ .stack = f->stack,
				     .nframes = h->nframes,
				     .target = h->target,
				     .tid = h->tid,
				     .probe = h->probe,
				     .site = h->site };
	/* two CPUs may both ship a key's first hit: each is counted, the first names it */
	id = intern_put(&g->keys, key_hash(&e.key), &e.key, &e, &added);
	if (id < 0)
		return (int)id;
	if (added)
		k->stats.keys++;
	k->pending = added ? id : -1;
	k->pending_gen = (int)(f->gen & 1);
	before = *profile__drops(p);
	err = count(ctx, h, size - sizeof(*f));
	if (added) {
		struct kagg_entry *entry = intern_at(&g->keys, (size_t)id);

		if (!entry->counted)
			entry->why = drops_since(&before, profile__drops(p));
	}
	k->pending = -1;
	return err;
}

void kagg__on_stack(void *ctx, const struct profile *p, const struct pw_sample_hdr *h, size_t size,
		    uint32_t proc, const uint32_t *ids, uint32_t n)
{
	struct kagg *k = ctx;
	struct kagg_gen *g;
	struct kagg_entry *e;

	(void)p;
	(void)size;
	if (k->pending < 0)
		return;
	g = &k->gen[k->pending_gen];
	e = intern_at(&g->keys, (size_t)k->pending);
	if (grow_array((void **)&g->ids, &g->ids_cap, g->nids + n, sizeof(*g->ids)))
		return; /* no memory for the key: its later hits count as not symbolized */
	memcpy(g->ids + g->nids, ids, n * sizeof(*ids));
	e->first = (uint32_t)g->nids;
	e->nids = n;
	g->nids += n;
	e->proc = proc;
	e->pid = h->pid;
	e->probe = h->probe;
	e->counted = true;
}

int kagg__credit(struct kagg *k, struct profile *p, uint32_t gen, const struct pw_agg_key *key,
		 const struct pw_agg_val *val)
{
	struct kagg_gen *g = &k->gen[gen & 1];
	int64_t id = intern_find(&g->keys, key_hash(key), key);
	const struct kagg_entry *e;
	struct profile_drops d = { 0 };

	if (!val->hits)
		return 0;
	k->stats.drained++;
	if (id < 0) {
		/* cannot happen: a key counts only once its first record is shipped */
		k->stats.unattributed += val->hits;
		d.n[PROFILE_DROP_MALFORMED] = val->hits;
		profile__add_drops(p, &d);
		return 0;
	}
	e = intern_at(&g->keys, (size_t)id);
	if (!e->counted) {
		/* its hits go where the first one went (no memory to keep its stack: malformed,
		 * the bucket of what could not be read as it should) */
		bool any = false;

		for (int i = 0; i < PROFILE_DROP__COUNT; i++) {
			d.n[i] = e->why.n[i] * val->hits;
			any |= d.n[i] != 0;
		}
		if (!any)
			d.n[PROFILE_DROP_MALFORMED] = val->hits;
		profile__add_drops(p, &d);
		return 0;
	}
	return profile__add_stack(
		p,
		&(struct agg_who){
			.proc = e->proc, .pid = e->pid, .tid = key->tid, .probe = e->probe },
		g->ids + e->first, e->nids, val->weight);
}

void kagg__end_gen(struct kagg *k, uint32_t gen)
{
	struct kagg_gen *g = &k->gen[gen & 1];

	intern_clear(&g->keys);
	g->nids = 0;
	k->stats.drains++;
}

const struct kagg_stats *kagg__stats(const struct kagg *k)
{
	return &k->stats;
}
