// SPDX-License-Identifier: MIT
/* Interval and whole-run counts per row key: (process, function) when rows are per process,
 * else (0, function). Slots are kept in one array, found through a hash index on the key;
 * a key gets its slot the first time one of its samples is seen and keeps it for the run
 * (whole-run totals need it). An update walks the interned stacks once: that is once per
 * interval, off the per-record path, and allocates only when new stacks or keys appeared. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/intern.h"
#include "top/top_model.h"
#include "lib/util.h"

struct slot {
	uint32_t proc, func;	     /* the key */
	uint64_t own_iv, total_iv;   /* last interval */
	uint64_t own_run, total_run; /* whole run */
	uint64_t stamp;		     /* last stack that counted this slot in total */
};

struct slot_key {
	uint32_t proc, func;
};

struct top_model {
	bool per_process;

	struct intern slots; /* struct slot, by struct slot_key */

	uint64_t *seen; /* per agg stack index: its count at the previous update */
	size_t nseen, seen_cap;

	uint64_t stamp;
	uint64_t samples_iv, samples_run;

	struct top_row *rows;
	size_t nrows, rows_cap;
};

static bool slot_eq(const void *item, const void *key)
{
	const struct slot *sl = item;
	const struct slot_key *k = key;

	return sl->proc == k->proc && sl->func == k->func;
}

struct top_model *top_model__new(bool per_process)
{
	struct top_model *m = calloc(1, sizeof(struct top_model));

	if (m) {
		m->per_process = per_process;
		m->slots = (struct intern)INTERN_INIT(struct slot, slot_eq);
	}
	return m;
}

bool top_model__per_process(const struct top_model *m)
{
	return m->per_process;
}

void top_model__free(struct top_model *m)
{
	if (!m)
		return;
	intern_free(&m->slots);
	free(m->seen);
	free(m->rows);
	free(m);
}

static uint64_t key_hash(const struct slot_key *k)
{
	return hash_mix64((uint64_t)k->proc << 32 | k->func);
}

/* The key of frame `id` of stack `s`: the process counts only when rows are per process. */
static struct slot_key frame_key(const struct top_model *m, const struct agg *agg,
				 const struct agg_stack *s, uint32_t id)
{
	return (struct slot_key){ .proc = m->per_process ? s->proc : 0,
				  .func = agg__frame(agg, id)->func };
}

/* The slot of `k`, which must have one (make_slots ran over its stack). */
static struct slot *slot_of(struct top_model *m, const struct slot_key *k)
{
	int64_t id = intern_find(&m->slots, key_hash(k), k);

	return intern_at(&m->slots, id >= 0 ? (size_t)id : 0);
}

/* Give every key of `s`'s frames a zeroed slot. A failure leaves only unused zero slots
 * behind, which rank as nothing, so the counts are as they were. 0 or -ENOMEM. */
static int make_slots(struct top_model *m, const struct agg *agg, const struct agg_stack *s)
{
	const uint32_t *ids = agg__stack_frames(agg, s);

	for (uint32_t j = 0; j < s->nframes; j++) {
		struct slot_key k = frame_key(m, agg, s, ids[j]);
		struct slot fresh = { .proc = k.proc, .func = k.func };
		int64_t id = intern_put(&m->slots, key_hash(&k), &k, &fresh, NULL);

		if (id < 0)
			return -ENOMEM;
	}
	return 0;
}

int top_model__update(struct top_model *m, const struct agg *agg)
{
	size_t nstacks = agg__nstacks(agg);
	int err = 0;

	/* allocate first, so a failure leaves the counts as they were */
	if (nstacks > m->nseen) {
		err = grow_array((void **)&m->seen, &m->seen_cap, nstacks, sizeof(*m->seen));
		if (err)
			return err;
		memset(m->seen + m->nseen, 0, (nstacks - m->nseen) * sizeof(*m->seen));
		m->nseen = nstacks;
	}
	for (size_t i = 0; i < nstacks && !err; i++) {
		const struct agg_stack *s = agg__stack(agg, i);

		if (s->count != m->seen[i])
			err = make_slots(m, agg, s);
	}
	if (err)
		return err;

	for (size_t i = 0; i < intern_count(&m->slots); i++) {
		struct slot *sl = intern_at(&m->slots, i);

		sl->own_iv = sl->total_iv = 0;
	}
	m->samples_iv = 0;

	for (size_t i = 0; i < nstacks; i++) {
		const struct agg_stack *s = agg__stack(agg, i);
		const uint32_t *ids = agg__stack_frames(agg, s);
		uint64_t d = s->count - m->seen[i];
		struct slot *sl = NULL;

		if (!d)
			continue;
		m->seen[i] = s->count;
		m->samples_iv += d;
		/* a fresh stamp per stack: a recursive function is counted in total once */
		m->stamp++;
		for (uint32_t j = 0; j < s->nframes; j++) {
			struct slot_key k = frame_key(m, agg, s, ids[j]);

			sl = slot_of(m, &k);
			if (sl->stamp == m->stamp)
				continue;
			sl->stamp = m->stamp;
			sl->total_iv += d;
		}
		/* frames are root first: the slot looked up last is the leaf's */
		if (sl)
			sl->own_iv += d;
	}

	for (size_t i = 0; i < intern_count(&m->slots); i++) {
		struct slot *sl = intern_at(&m->slots, i);

		sl->own_run += sl->own_iv;
		sl->total_run += sl->total_iv;
	}
	m->samples_run += m->samples_iv;
	return 0;
}

uint64_t top_model__samples(const struct top_model *m, bool cumulative)
{
	return cumulative ? m->samples_run : m->samples_iv;
}

struct rank_ctx {
	enum top_sort key;
	bool reverse;
	const struct top_names *names;
};

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

static int cmp_u32(uint32_t a, uint32_t b)
{
	return a < b ? -1 : a > b;
}

/* Process labels in version order, so "python3 (99)" comes before "python3 (100)"; equal
 * labels (a PID reused by the same program) and processes without names by index, so the
 * rows of one process stay together. */
static int cmp_process(const struct rank_ctx *ctx, uint32_t a, uint32_t b)
{
	const struct top_names *n = ctx->names;
	int c = 0;

	if (a == b)
		return 0;
	if (n->process)
		c = strverscmp(n->process(n->ctx, a), n->process(n->ctx, b));
	return c ? c : cmp_u32(a, b);
}

static int cmp_name(const struct rank_ctx *ctx, uint32_t a, uint32_t b)
{
	const struct top_names *n = ctx->names;

	return a == b ? 0 : strcmp(n->name(n->ctx, a), n->name(n->ctx, b));
}

static int cmp_row(const void *pa, const void *pb, void *pctx)
{
	const struct top_row *a = pa, *b = pb;
	const struct rank_ctx *ctx = pctx;
	int c = 0;

	switch (ctx->key) {
	case TOP_SORT_PROCESS:
		/* each process's rows together, its busiest first */
		c = cmp_process(ctx, a->proc, b->proc);
		if (!c)
			c = cmp_u64_desc(a->own, b->own);
		if (!c)
			c = cmp_name(ctx, a->func, b->func);
		if (!c)
			c = cmp_u64_desc(a->total, b->total);
		break;
	case TOP_SORT_OWN:
		c = cmp_u64_desc(a->own, b->own);
		if (!c)
			c = cmp_u64_desc(a->total, b->total);
		break;
	case TOP_SORT_TOTAL:
		c = cmp_u64_desc(a->total, b->total);
		if (!c)
			c = cmp_u64_desc(a->own, b->own);
		break;
	case TOP_SORT_NAME:
		break;
	}
	if (!c)
		c = cmp_name(ctx, a->func, b->func);
	if (!c && ctx->key == TOP_SORT_NAME)
		c = cmp_u64_desc(a->total, b->total);
	if (!c)
		c = cmp_process(ctx, a->proc, b->proc);
	if (!c)
		c = cmp_u32(a->func, b->func);
	return ctx->reverse ? -c : c;
}

int top_model__rank(struct top_model *m, bool cumulative, enum top_sort key, bool reverse,
		    const struct top_names *names)
{
	struct rank_ctx ctx = { .key = key, .reverse = reverse, .names = names };
	int err;

	err = grow_array((void **)&m->rows, &m->rows_cap,
			 intern_count(&m->slots) ? intern_count(&m->slots) : 1, sizeof(*m->rows));
	if (err)
		return err;
	m->nrows = 0;
	for (size_t i = 0; i < intern_count(&m->slots); i++) {
		const struct slot *sl = intern_at(&m->slots, i);
		uint64_t total = cumulative ? sl->total_run : sl->total_iv;

		/* own <= total always: a leaf is also on the stack */
		if (!total)
			continue;
		m->rows[m->nrows++] = (struct top_row){
			.proc = sl->proc,
			.func = sl->func,
			.own = cumulative ? sl->own_run : sl->own_iv,
			.total = total,
		};
	}
	qsort_r(m->rows, m->nrows, sizeof(*m->rows), cmp_row, &ctx);
	return m->nrows > INT32_MAX ? INT32_MAX : (int)m->nrows;
}

const struct top_row *top_model__rows(const struct top_model *m, size_t *n)
{
	*n = m->nrows;
	return m->rows;
}
