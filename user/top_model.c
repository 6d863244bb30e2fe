// SPDX-License-Identifier: MIT
/* Interval and whole-run counts per function, kept in arrays indexed by function id (ids
 * are small and dense). An update walks every interned stack once: that is once per
 * interval, off the per-record path, and allocates only when new stacks or functions
 * appeared. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "top_model.h"
#include "util.h"

struct func_counts {
	uint64_t own_iv, total_iv;   /* last interval */
	uint64_t own_run, total_run; /* whole run */
	uint64_t stamp;		     /* last stack that counted this function in total */
};

struct top_model {
	struct func_counts *funcs;
	size_t nfuncs, funcs_cap;
	size_t nframes_seen; /* agg frames whose function has a slot */

	uint64_t *seen; /* per agg stack index: its count at the previous update */
	size_t nseen, seen_cap;

	uint64_t stamp;
	uint64_t samples_iv, samples_run;

	struct top_row *rows;
	size_t nrows, rows_cap;
};

struct top_model *top_model__new(void)
{
	return calloc(1, sizeof(struct top_model));
}

void top_model__free(struct top_model *m)
{
	if (!m)
		return;
	free(m->funcs);
	free(m->seen);
	free(m->rows);
	free(m);
}

/* Make room for every function id of `agg`'s frames, zeroing new slots. Frames are
 * append-only too, so only those interned since the last call are looked at. */
static int reserve_funcs(struct top_model *m, const struct agg *agg)
{
	size_t need = m->nfuncs, nframes = agg__nframes(agg);
	int err;

	for (size_t i = m->nframes_seen; i < nframes; i++) {
		const struct agg_frame *f = agg__frame(agg, (uint32_t)i);

		if (f->func >= need)
			need = (size_t)f->func + 1;
	}
	if (need > m->nfuncs) {
		err = grow_array((void **)&m->funcs, &m->funcs_cap, need, sizeof(*m->funcs));
		if (err)
			return err;
		memset(m->funcs + m->nfuncs, 0, (need - m->nfuncs) * sizeof(*m->funcs));
		m->nfuncs = need;
	}
	m->nframes_seen = nframes;
	return 0;
}

int top_model__update(struct top_model *m, const struct agg *agg)
{
	size_t nstacks = agg__nstacks(agg);
	int err;

	/* allocate first, so a failure leaves the counts as they were */
	err = reserve_funcs(m, agg);
	if (!err && nstacks > m->nseen) {
		err = grow_array((void **)&m->seen, &m->seen_cap, nstacks, sizeof(*m->seen));
		if (!err) {
			memset(m->seen + m->nseen, 0, (nstacks - m->nseen) * sizeof(*m->seen));
			m->nseen = nstacks;
		}
	}
	if (err)
		return err;

	for (size_t f = 0; f < m->nfuncs; f++)
		m->funcs[f].own_iv = m->funcs[f].total_iv = 0;
	m->samples_iv = 0;

	for (size_t i = 0; i < nstacks; i++) {
		const struct agg_stack *s = agg__stack(agg, i);
		const uint32_t *ids = agg__stack_frames(agg, s);
		uint64_t d = s->count - m->seen[i];

		if (!d)
			continue;
		m->seen[i] = s->count;
		m->samples_iv += d;
		/* a fresh stamp per stack: a recursive function is counted in total once */
		m->stamp++;
		for (uint32_t j = 0; j < s->nframes; j++) {
			struct func_counts *fc = &m->funcs[agg__frame(agg, ids[j])->func];

			if (fc->stamp == m->stamp)
				continue;
			fc->stamp = m->stamp;
			fc->total_iv += d;
		}
		/* frames are root first: the last one is the leaf */
		if (s->nframes)
			m->funcs[agg__frame(agg, ids[s->nframes - 1])->func].own_iv += d;
	}

	for (size_t f = 0; f < m->nfuncs; f++) {
		m->funcs[f].own_run += m->funcs[f].own_iv;
		m->funcs[f].total_run += m->funcs[f].total_iv;
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

static int cmp_row(const void *pa, const void *pb, void *pctx)
{
	const struct top_row *a = pa, *b = pb;
	const struct rank_ctx *ctx = pctx;
	int c = 0;

	switch (ctx->key) {
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
		c = strcmp(ctx->names->name(ctx->names->ctx, a->func),
			   ctx->names->name(ctx->names->ctx, b->func));
	if (!c && ctx->key == TOP_SORT_NAME)
		c = cmp_u64_desc(a->total, b->total);
	if (!c)
		c = a->func < b->func ? -1 : a->func > b->func;
	return ctx->reverse ? -c : c;
}

int top_model__rank(struct top_model *m, bool cumulative, enum top_sort key, bool reverse,
		    const struct top_names *names)
{
	struct rank_ctx ctx = { .key = key, .reverse = reverse, .names = names };
	int err;

	err = grow_array((void **)&m->rows, &m->rows_cap, m->nfuncs ? m->nfuncs : 1,
			 sizeof(*m->rows));
	if (err)
		return err;
	m->nrows = 0;
	for (size_t f = 0; f < m->nfuncs; f++) {
		const struct func_counts *fc = &m->funcs[f];
		uint64_t total = cumulative ? fc->total_run : fc->total_iv;

		/* own <= total always: a leaf is also on the stack */
		if (!total)
			continue;
		m->rows[m->nrows++] = (struct top_row){
			.func = (uint32_t)f,
			.own = cumulative ? fc->own_run : fc->own_iv,
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
