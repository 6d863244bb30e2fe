// SPDX-License-Identifier: MIT
/* Interned frames and stacks with counts. Frame ids of all stacks live in one growing
 * arena, so adding a stack seen before allocates nothing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/agg.h"
#include "lib/intern.h"
#include "lib/util.h"

struct agg {
	struct intern frames; /* struct agg_frame */
	struct intern stacks; /* struct agg_stack */

	uint32_t *arena;
	size_t arena_len, arena_cap;
	uint64_t total;
};

struct stack_key {
	uint32_t proc, tid, probe, n;
	const uint32_t *ids;
	const uint32_t *arena; /* where the interned stacks' frame ids are */
};

static bool frame_eq(const void *item, const void *key)
{
	const struct agg_frame *f = item, *k = key;

	return f->func == k->func && f->line == k->line && f->map == k->map && f->addr == k->addr;
}

static bool stack_eq(const void *item, const void *key)
{
	const struct agg_stack *s = item;
	const struct stack_key *k = key;

	return s->proc == k->proc && s->tid == k->tid && s->probe == k->probe &&
	       s->nframes == k->n && !memcmp(k->arena + s->first, k->ids, k->n * sizeof(*k->ids));
}

struct agg *agg__new(void)
{
	struct agg *agg = calloc(1, sizeof(*agg));

	if (!agg)
		return NULL;
	agg->frames = (struct intern)INTERN_INIT(struct agg_frame, frame_eq);
	agg->stacks = (struct intern)INTERN_INIT(struct agg_stack, stack_eq);
	return agg;
}

void agg__free(struct agg *agg)
{
	if (!agg)
		return;
	intern_free(&agg->frames);
	intern_free(&agg->stacks);
	free(agg->arena);
	free(agg);
}

int64_t agg__frame_id(struct agg *agg, uint32_t func, int32_t line)
{
	struct agg_frame k = { .func = func, .line = line };

	return intern_put(&agg->frames, hash_mix64((uint64_t)func << 32 | (uint32_t)line), &k, &k,
			  NULL);
}

int64_t agg__addr_frame_id(struct agg *agg, uint32_t func, uint32_t map, uint64_t addr)
{
	struct agg_frame k = { .func = func, .map = map, .addr = addr };

	return intern_put(&agg->frames, hash_mix64(addr ^ hash_mix64((uint64_t)func << 32 | map)),
			  &k, &k, NULL);
}

int agg__add(struct agg *agg, const struct agg_who *who, const uint32_t *ids, uint32_t n,
	     uint64_t count)
{
	size_t index;

	return agg__add_at(agg, who, ids, n, count, &index);
}

int agg__add_at(struct agg *agg, const struct agg_who *who, const uint32_t *ids, uint32_t n,
		uint64_t count, size_t *index)
{
	struct stack_key k = { .proc = who->proc,
			       .tid = who->tid,
			       .probe = who->probe,
			       .n = n,
			       .ids = ids,
			       .arena = agg->arena };
	uint64_t hash =
		hash_bytes(ids, n * sizeof(*ids),
			   ((uint64_t)who->proc << 32 | who->tid) ^ (uint64_t)who->probe << 56);
	struct agg_stack s;
	int64_t id = intern_find(&agg->stacks, hash, &k);
	int err;

	if (id >= 0) {
		((struct agg_stack *)intern_at(&agg->stacks, (size_t)id))->count += count;
		agg->total += count;
		*index = (size_t)id;
		return 0;
	}
	err = grow_array((void **)&agg->arena, &agg->arena_cap, agg->arena_len + n,
			 sizeof(*agg->arena));
	if (err)
		return err;
	s = (struct agg_stack){ .proc = who->proc,
				.pid = who->pid,
				.tid = who->tid,
				.probe = who->probe,
				.nframes = n,
				.first = (uint32_t)agg->arena_len,
				.count = count };
	id = intern_add(&agg->stacks, hash, &s);
	if (id < 0)
		return (int)id;
	if (n) /* an empty first stack has no arena yet: memcpy(NULL, ..., 0) is UB */
		memcpy(agg->arena + agg->arena_len, ids, n * sizeof(*ids));
	agg->arena_len += n;
	agg->total += count;
	*index = (size_t)id;
	return 0;
}

size_t agg__nstacks(const struct agg *agg)
{
	return intern_count(&agg->stacks);
}

const struct agg_stack *agg__stack(const struct agg *agg, size_t i)
{
	return i < intern_count(&agg->stacks) ? intern_at(&agg->stacks, i) : NULL;
}

const uint32_t *agg__stack_frames(const struct agg *agg, const struct agg_stack *s)
{
	return agg->arena + s->first;
}

const struct agg_frame *agg__frame(const struct agg *agg, uint32_t id)
{
	return id < intern_count(&agg->frames) ? intern_at(&agg->frames, id) : NULL;
}

size_t agg__nframes(const struct agg *agg)
{
	return intern_count(&agg->frames);
}

uint64_t agg__total(const struct agg *agg)
{
	return agg->total;
}

size_t agg__bytes(const struct agg *agg)
{
	return intern_bytes(&agg->frames) + intern_bytes(&agg->stacks) +
	       agg->arena_cap * sizeof(*agg->arena);
}
