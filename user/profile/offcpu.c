// SPDX-License-Identifier: MIT
/* Off-CPU pairing (offcpu.h). One held record per thread: a thread is off CPU at most once
 * at a time, and the ring buffer keeps a switch-out's stack before its resumption. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/htab.h"
#include "profile/offcpu.h"

struct held {
	uint32_t tid; /* 0: a free slot */
	uint32_t next_free;
	void *rec; /* a copy of the sample record */
	size_t size;
	uint64_t counted_ns; /* of its wait, already counted while it went on */
};

struct offcpu {
	uint64_t min_block_ns;
	size_t budget, bytes;
	struct held *slots;
	size_t nslots, cap;
	uint32_t free_head; /* UINT32_MAX: none */
	struct htab index;  /* tid -> slot */
	struct offcpu_stats st;
};

static uint64_t tid_hash(uint32_t tid)
{
	uint64_t h = tid * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 29);
}

static bool slot_eq(uint32_t id, const void *key, void *ctx)
{
	const struct offcpu *o = ctx;

	return o->slots[id].tid == *(const uint32_t *)key;
}

struct offcpu *offcpu__new(uint64_t min_block_ns, size_t budget_bytes)
{
	struct offcpu *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->min_block_ns = min_block_ns;
	o->budget = budget_bytes;
	o->free_head = UINT32_MAX;
	return o;
}

static void release(struct offcpu *o, uint32_t id)
{
	struct held *h = &o->slots[id];

	htab_remove(&o->index, tid_hash(h->tid), id);
	o->bytes -= h->size;
	free(h->rec);
	*h = (struct held){ .next_free = o->free_head };
	o->free_head = id;
}

void offcpu__free(struct offcpu *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->nslots; i++)
		free(o->slots[i].rec);
	free(o->slots);
	htab_free(&o->index);
	free(o);
}

static int find(const struct offcpu *o, uint32_t tid, uint32_t *id)
{
	return htab_find(&o->index, tid_hash(tid), slot_eq, &tid, (void *)o, id);
}

int offcpu__hold(struct offcpu *o, const void *data, size_t size)
{
	struct pw_sample_hdr h;
	uint32_t id;
	void *copy;
	int err;

	if (size < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	if (h.probe != PW_PROBE_OFFCPU)
		return 0;
	if (h.weight) {
		/* walked at the exit of the system call it waited in, weighed already */
		o->st.at_exit++;
		o->st.at_exit_ns += h.weight;
		return 0;
	}
	o->st.held++;
	if (find(o, h.tid, &id)) {
		/* a second switch-out before the first one's resumption: that record was lost */
		o->st.replaced++;
		release(o, id);
	}
	if (o->bytes + size > o->budget) {
		o->st.over_budget++;
		return 1;
	}
	copy = malloc(size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, size);
	if (o->free_head != UINT32_MAX) {
		id = o->free_head;
		o->free_head = o->slots[id].next_free;
	} else {
		if (o->nslots == o->cap) {
			size_t cap = o->cap ? o->cap * 2 : 64;
			struct held *s = realloc(o->slots, cap * sizeof(*s));

			if (!s) {
				free(copy);
				return -ENOMEM;
			}
			o->slots = s;
			o->cap = cap;
		}
		id = (uint32_t)o->nslots++;
	}
	err = htab_insert(&o->index, tid_hash(h.tid), id);
	if (err) {
		free(copy);
		o->slots[id] = (struct held){ .next_free = o->free_head };
		o->free_head = id;
		return err;
	}
	o->slots[id] = (struct held){ .tid = h.tid, .rec = copy, .size = size };
	o->bytes += size;
	return 1;
}

/* Emit slot `id` weighing `ns` off CPU, if long enough, and release it. `block` is why it
 * was off CPU, or PW_BLOCK__COUNT for a thread still waiting at the end. */
static int complete(struct offcpu *o, uint32_t id, uint64_t ns, uint32_t block, offcpu_emit_fn emit,
		    void *ctx)
{
	struct held *h = &o->slots[id];
	struct pw_sample_hdr *hdr = h->rec;
	int err = 0;

	if (ns < o->min_block_ns || !ns) {
		o->st.short_blocks++;
	} else {
		/* what offcpu__count_open counted of it already is not counted again */
		hdr->weight = ns > h->counted_ns ? ns - h->counted_ns : 0;
		if (block == PW_BLOCK__COUNT) {
			o->st.open_at_end++;
			o->st.open_ns += ns;
		} else {
			o->st.counted++;
			o->st.ns[block < PW_BLOCK__COUNT ? block : PW_BLOCK_OTHER] += ns;
		}
		/* the record was stamped when the thread left: what it now weighs ends here */
		hdr->time_ns += ns;
		if (hdr->weight)
			err = emit(ctx, h->rec, h->size);
	}
	release(o, id);
	return err;
}

int offcpu__count_open(struct offcpu *o, uint64_t now_ns, offcpu_emit_fn emit, void *ctx)
{
	for (size_t i = 0; i < o->nslots; i++) {
		struct held *h = &o->slots[i];
		struct pw_sample_hdr *hdr = h->rec;
		uint64_t so_far;
		int err;

		if (!h->tid || now_ns <= hdr->time_ns)
			continue;
		so_far = now_ns - hdr->time_ns;
		if (so_far < o->min_block_ns || so_far < h->counted_ns + OFFCPU_OPEN_STEP_NS)
			continue;
		hdr->weight = so_far - h->counted_ns;
		h->counted_ns = so_far;
		/* stamped with the end of the part counted now (the timeline's interval) */
		hdr->time_ns = now_ns;
		err = emit(ctx, h->rec, h->size);
		hdr->time_ns = now_ns - so_far;
		hdr->weight = 0;
		if (err)
			return err;
	}
	return 0;
}

int offcpu__resume(struct offcpu *o, const void *data, size_t size, offcpu_emit_fn emit, void *ctx)
{
	struct pw_offcpu_rec r;
	struct pw_sample_hdr *hdr;
	uint32_t id;

	if (size < sizeof(r))
		return 0;
	memcpy(&r, data, sizeof(r));
	if (!find(o, r.tid, &id)) {
		o->st.unpaired++;
		return 0;
	}
	hdr = o->slots[id].rec;
	if (!r.off_ns) {
		/* the kernel saw it leave again without seeing it come back (a thread marked
		 * waiting at attach that had already woken): its wait's length is unknown */
		o->st.replaced++;
		release(o, id);
		return 0;
	}
	if (hdr->target != r.target) {
		/* not the lifetime that left: its exec ended that one (never observed) */
		o->st.ended++;
		release(o, id);
		return 0;
	}
	return complete(o, id, r.off_ns, r.block < PW_BLOCK__COUNT ? r.block : PW_BLOCK_OTHER, emit,
			ctx);
}

int offcpu__flush(struct offcpu *o, uint64_t now_ns, offcpu_emit_fn emit, void *ctx)
{
	int err = 0;

	for (size_t i = 0; i < o->nslots; i++) {
		struct held *h = &o->slots[i];
		const struct pw_sample_hdr *hdr = h->rec;
		uint64_t ns;
		int e;

		if (!h->tid)
			continue;
		ns = now_ns > hdr->time_ns ? now_ns - hdr->time_ns : 0;
		/* still waiting: a hung thread's time is what off-CPU profiles are for */
		e = complete(o, (uint32_t)i, ns, PW_BLOCK__COUNT, emit, ctx);
		if (!err)
			err = e;
	}
	return err;
}

const struct offcpu_stats *offcpu__stats(const struct offcpu *o)
{
	return &o->st;
}
