// SPDX-License-Identifier: MIT
/* Extra stacks waiting for their sample, and the paired record. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/intern.h"
#include "lib/util.h"
#include "symbolize/xstack.h"

/* A stack record waits only for its sample, which the same program run ships right after
 * it, so few wait at once (a run or two per CPU), and each is freed when its sample takes
 * it: the threads of processes long gone hold nothing. A record whose sample never came
 * (the ring buffer was full then) is dropped once one XSTACK_STALE_NS younger has come, as
 * no program run lasts that long; at most XSTACK_MAX_WAITING wait before the table starts
 * over. */
#define XSTACK_STALE_NS (1000 * 1000 * 1000ull)
#define XSTACK_MAX_WAITING 4096
/* Stale records are looked for when this many wait, then when twice as many as were left
 * (each look costs a pass over the table). */
#define XSTACK_SWEEP_MIN 64

struct pending {
	uint32_t tid, kind;
	uint64_t time_ns;
	bool waiting;
	uint8_t *rec; /* the stack record as shipped, `len` bytes; NULL once taken */
	size_t len;
};

struct pending_key {
	uint32_t tid, kind;
};

struct xstack {
	struct intern pending; /* struct pending, by (tid, kind): the waiting records only */
	size_t held;	       /* how many the table holds */
	size_t rec_bytes;      /* and their records' buffers */
	size_t sweep_at;       /* look for stale ones when it holds this many */
	uint64_t newest_ns;    /* the latest stack record's time */
	uint8_t *out;	       /* the paired record */
	size_t out_cap;
	struct xstack_stats st;
};

static bool pending_eq(const void *item, const void *key)
{
	const struct pending *p = item;
	const struct pending_key *k = key;

	return p->tid == k->tid && p->kind == k->kind;
}

static uint64_t pending_hash(uint32_t tid, uint32_t kind)
{
	return hash_mix64((uint64_t)kind << 32 | tid);
}

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

int xstack_parts(const void *rec, size_t size, struct xstack_parts *out)
{
	const uint8_t *b = rec;
	struct pw_sample_hdr h;
	struct xstack_tail tail;
	size_t at, end;

	*out = (struct xstack_parts){ .sample_size = size };
	if (size < sizeof(h))
		return 0;
	memcpy(&h, rec, sizeof(h));
	if (!(h.flags & XSTACK_SF_PAIRED))
		return 0; /* not paired: no stacks, or they never came */
	if (size < sizeof(h) + sizeof(tail))
		return -EINVAL;
	memcpy(&tail, b + size - sizeof(tail), sizeof(tail));
	if (tail.magic != XSTACK_TAIL_MAGIC || tail.bytes > size - sizeof(h) - sizeof(tail))
		return -EINVAL;
	end = size - sizeof(tail);
	at = end - tail.bytes;
	out->sample_size = at;
	while (at < end) {
		struct pw_stack_hdr sh;

		/* records are 8-aligned in the paired buffer, which is malloc'ed */
		if (end - at < sizeof(sh))
			return -EINVAL;
		memcpy(&sh, b + at, sizeof(sh));
		if (sh.len > end - at - sizeof(sh))
			return -EINVAL;
		if (sh.kind == PW_REC_KSTACK)
			out->kstack = (const struct pw_stack_hdr *)(b + at);
		else if (sh.kind == PW_REC_USTACK)
			out->ustack = (const struct pw_stack_hdr *)(b + at);
		else
			return -EINVAL;
		at += align8(sizeof(sh) + sh.len);
	}
	return 0;
}

struct xstack *xstack__new(void)
{
	struct xstack *x = calloc(1, sizeof(*x));

	if (x) {
		x->pending = (struct intern)INTERN_INIT(struct pending, pending_eq);
		x->sweep_at = XSTACK_SWEEP_MIN;
	}
	return x;
}

static void drop_all(struct xstack *x)
{
	for (size_t i = 0; i < intern_count(&x->pending); i++) {
		struct pending *p = intern_at(&x->pending, i);

		x->st.unpaired += p->waiting;
		free(p->rec);
	}
	intern_clear(&x->pending);
	x->held = x->rec_bytes = 0;
}

/* Free record `id` and take it out of the table (its id goes to the next one added). */
static void release(struct xstack *x, size_t id)
{
	struct pending *p = intern_at(&x->pending, id);

	free(p->rec);
	x->rec_bytes -= p->len;
	p->rec = NULL;
	p->len = 0;
	p->waiting = false;
	/* out of memory for the free list: it stays, empty, and is reused by its key */
	if (!intern_remove(&x->pending, pending_hash(p->tid, p->kind), (uint32_t)id))
		x->held--;
}

/* Drop the records whose sample can no longer come (see XSTACK_STALE_NS), counted
 * unpaired; start over if too many still wait. */
static void sweep(struct xstack *x)
{
	for (size_t i = 0; i < intern_count(&x->pending); i++) {
		struct pending *p = intern_at(&x->pending, i);

		if (p->rec && x->newest_ns - p->time_ns > XSTACK_STALE_NS) {
			x->st.unpaired += p->waiting;
			release(x, i);
		}
	}
	if (x->held >= XSTACK_MAX_WAITING)
		drop_all(x);
	x->sweep_at = x->held * 2 > XSTACK_SWEEP_MIN ? x->held * 2 : XSTACK_SWEEP_MIN;
	if (x->sweep_at > XSTACK_MAX_WAITING)
		x->sweep_at = XSTACK_MAX_WAITING;
}

void xstack__free(struct xstack *x)
{
	if (!x)
		return;
	drop_all(x);
	intern_free(&x->pending);
	free(x->out);
	free(x);
}

int xstack__add_stack(struct xstack *x, const void *data, size_t size)
{
	struct pw_stack_hdr h;
	struct pending_key k;
	struct pending *p;
	int64_t id;
	uint8_t *copy;

	if (size < sizeof(h)) {
		x->st.malformed++;
		return 0;
	}
	memcpy(&h, data, sizeof(h));
	if (h.len > size - sizeof(h)) {
		x->st.malformed++;
		return 0;
	}
	if (h.time_ns > x->newest_ns)
		x->newest_ns = h.time_ns;
	k = (struct pending_key){ h.tid, h.kind };
	id = intern_find(&x->pending, pending_hash(h.tid, h.kind), &k);
	if (id < 0) {
		struct pending fresh = { .tid = h.tid, .kind = h.kind };

		if (x->held >= x->sweep_at)
			sweep(x);
		id = intern_add(&x->pending, pending_hash(h.tid, h.kind), &fresh);
		if (id < 0)
			return (int)id;
		x->held++;
	}
	p = intern_at(&x->pending, (size_t)id);
	if (p->waiting)
		x->st.unpaired++; /* the sample after it never came */
	p->waiting = false;
	/* its own size: it is freed when taken, so there is no buffer to reuse */
	copy = malloc(sizeof(h) + h.len);
	if (!copy) {
		release(x, (size_t)id);
		return -ENOMEM;
	}
	memcpy(copy, data, sizeof(h) + h.len);
	free(p->rec);
	x->rec_bytes += sizeof(h) + h.len - p->len;
	p->rec = copy;
	p->len = sizeof(h) + h.len;
	p->time_ns = h.time_ns;
	p->waiting = true;
	return 0;
}

/* The id of the waiting record of (tid, kind) for a sample of time_ns, taken (the caller
 * releases it once copied); -1 when none. */
static int64_t take(struct xstack *x, uint32_t tid, uint32_t kind, uint64_t time_ns)
{
	struct pending_key k = { tid, kind };
	int64_t id = intern_find(&x->pending, pending_hash(tid, kind), &k);
	struct pending *p;

	if (id < 0)
		return -1;
	p = intern_at(&x->pending, (size_t)id);
	if (!p->waiting)
		return -1;
	p->waiting = false;
	if (p->time_ns != time_ns) {
		x->st.unpaired++; /* another run's: its sample was lost */
		release(x, (size_t)id);
		return -1;
	}
	return id;
}

int xstack__pair(struct xstack *x, const void *data, size_t size, const void **out,
		 size_t *out_size)
{
	static const uint32_t kinds[][2] = { { PW_SF_KSTACK, PW_REC_KSTACK },
					     { PW_SF_USTACK, PW_REC_USTACK } };
	int64_t got[2] = { -1, -1 };
	struct xstack_tail tail = { 0, XSTACK_TAIL_MAGIC };
	struct pw_sample_hdr h;
	size_t at, need;
	int err = 0;

	*out = data;
	*out_size = size;
	if (size < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	if (!(h.flags & PW_SF_EXTRA_STACKS))
		return 0;
	need = align8(size);
	for (int i = 0; i < 2; i++) {
		if (!(h.flags & kinds[i][0]))
			continue;
		got[i] = take(x, h.tid, kinds[i][1], h.time_ns);
		if (got[i] < 0) {
			/* passed on without any: the profile rejects it for what is missing */
			x->st.missing++;
			goto release;
		}
		need += align8(((struct pending *)intern_at(&x->pending, (size_t)got[i]))->len);
	}
	err = grow_array((void **)&x->out, &x->out_cap, need + sizeof(tail), 1);
	if (err)
		goto release;
	memset(x->out, 0, need);
	memcpy(x->out, data, size);
	h.flags |= XSTACK_SF_PAIRED;
	memcpy(x->out, &h, sizeof(h));
	at = align8(size);
	for (int i = 0; i < 2; i++) {
		const struct pending *p;

		if (got[i] < 0)
			continue;
		p = intern_at(&x->pending, (size_t)got[i]);
		memcpy(x->out + at, p->rec, p->len);
		at += align8(p->len);
	}
	tail.bytes = (uint32_t)(at - align8(size));
	memcpy(x->out + at, &tail, sizeof(tail));
	x->st.paired++;
	*out = x->out;
	*out_size = at + sizeof(tail);
release:
	for (int i = 0; i < 2; i++)
		if (got[i] >= 0)
			release(x, (size_t)got[i]);
	return err;
}

void xstack__flush(struct xstack *x)
{
	for (size_t i = 0; i < intern_count(&x->pending); i++) {
		struct pending *p = intern_at(&x->pending, i);

		if (p->rec) {
			x->st.unpaired += p->waiting;
			release(x, i);
		}
	}
}

size_t xstack__bytes(const struct xstack *x)
{
	return x->rec_bytes + intern_bytes(&x->pending) + x->out_cap;
}

const struct xstack_stats *xstack__stats(const struct xstack *x)
{
	return &x->st;
}
