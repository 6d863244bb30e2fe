// SPDX-License-Identifier: MIT
/* Interned frames and stacks with counts. Frame ids of all stacks live in one growing
 * arena, so adding a stack seen before allocates nothing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "htab.h"
#include "util.h"

struct agg {
	struct agg_frame *frames;
	size_t nframes, frames_cap;
	struct htab frame_index;

	struct agg_stack *stacks;
	size_t nstacks, stacks_cap;
	struct htab stack_index;

	uint32_t *arena;
	size_t arena_len, arena_cap;
	uint64_t total;
};

struct stack_key {
	uint32_t proc, tid, n;
	const uint32_t *ids;
};

struct agg *agg__new(void)
{
	return calloc(1, sizeof(struct agg));
}

void agg__free(struct agg *agg)
{
	if (!agg)
		return;
	free(agg->frames);
	htab_free(&agg->frame_index);
	free(agg->stacks);
	htab_free(&agg->stack_index);
	free(agg->arena);
	free(agg);
}

static bool frame_eq(uint32_t id, const void *key, void *ctx)
{
	const struct agg *agg = ctx;
	const struct agg_frame *k = key;

	return agg->frames[id].func == k->func && agg->frames[id].line == k->line;
}

int64_t agg__frame_id(struct agg *agg, uint32_t func, int32_t line)
{
	struct agg_frame k = { .func = func, .line = line };
	uint64_t hash = hash_mix64((uint64_t)func << 32 | (uint32_t)line);
	uint32_t id;
	int err;

	if (htab_find(&agg->frame_index, hash, frame_eq, &k, agg, &id))
		return id;
	err = grow_array((void **)&agg->frames, &agg->frames_cap, agg->nframes + 1,
			 sizeof(*agg->frames));
	if (err)
		return err;
	id = (uint32_t)agg->nframes;
	err = htab_insert(&agg->frame_index, hash, id);
	if (err)
		return err;
	agg->frames[agg->nframes++] = k;
	return id;
}

static bool stack_eq(uint32_t id, const void *key, void *ctx)
{
	const struct agg *agg = ctx;
	const struct stack_key *k = key;
	const struct agg_stack *s = &agg->stacks[id];

	return s->proc == k->proc && s->tid == k->tid && s->nframes == k->n &&
	       !memcmp(agg->arena + s->first, k->ids, k->n * sizeof(*k->ids));
}

int agg__add(struct agg *agg, uint32_t proc, uint32_t pid, uint32_t tid, const uint32_t *ids,
	     uint32_t n, uint64_t count)
{
	struct stack_key k = { .proc = proc, .tid = tid, .n = n, .ids = ids };
	uint64_t hash = hash_bytes(ids, n * sizeof(*ids), (uint64_t)proc << 32 | tid);
	struct agg_stack *s;
	uint32_t id;
	int err;

	agg->total += count;
	if (htab_find(&agg->stack_index, hash, stack_eq, &k, agg, &id)) {
		agg->stacks[id].count += count;
		return 0;
	}
	err = grow_array((void **)&agg->arena, &agg->arena_cap, agg->arena_len + n,
			 sizeof(*agg->arena));
	if (!err)
		err = grow_array((void **)&agg->stacks, &agg->stacks_cap, agg->nstacks + 1,
				 sizeof(*agg->stacks));
	if (!err)
		err = htab_insert(&agg->stack_index, hash, (uint32_t)agg->nstacks);
	if (err) {
		agg->total -= count;
		return err;
	}
	s = &agg->stacks[agg->nstacks++];
	*s = (struct agg_stack){ .proc = proc, .pid = pid, .tid = tid, .nframes = n,
				 .first = (uint32_t)agg->arena_len, .count = count };
	if (n) /* an empty first stack has no arena yet: memcpy(NULL, ..., 0) is UB */
		memcpy(agg->arena + agg->arena_len, ids, n * sizeof(*ids));
	agg->arena_len += n;
	return 0;
}

size_t agg__nstacks(const struct agg *agg)
{
	return agg->nstacks;
}

const struct agg_stack *agg__stack(const struct agg *agg, size_t i)
{
	return i < agg->nstacks ? &agg->stacks[i] : NULL;
}

const uint32_t *agg__stack_frames(const struct agg *agg, const struct agg_stack *s)
{
	return agg->arena + s->first;
}

const struct agg_frame *agg__frame(const struct agg *agg, uint32_t id)
{
	return id < agg->nframes ? &agg->frames[id] : NULL;
}

size_t agg__nframes(const struct agg *agg)
{
	return agg->nframes;
}

uint64_t agg__total(const struct agg *agg)
{
	return agg->total;
}
