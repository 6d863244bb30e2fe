// SPDX-License-Identifier: MIT
/* Extra stacks waiting for their sample, and the paired record. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/intern.h"
#include "lib/util.h"
#include "symbolize/xstack.h"

/* Threads a waiting table keeps before it starts over: a stack record waits only until the
 * record after it, so a table this big holds mostly threads long gone. */
#define XSTACK_MAX_THREADS 4096

struct pending {
	uint32_t tid, kind;
	bool waiting;
	uint8_t *rec; /* the stack record as shipped, `len` bytes */
	size_t len, cap;
};

struct pending_key {
	uint32_t tid, kind;
};

struct xstack {
	struct intern pending; /* struct pending, by (tid, kind) */
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

	if (x)
		x->pending = (struct intern)INTERN_INIT(struct pending, pending_eq);
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
	int err;

	if (size < sizeof(h)) {
		x->st.malformed++;
		return 0;
	}
	memcpy(&h, data, sizeof(h));
	if (h.len > size - sizeof(h)) {
		x->st.malformed++;
		return 0;
	}
	k = (struct pending_key){ h.tid, h.kind };
	id = intern_find(&x->pending, pending_hash(h.tid, h.kind), &k);
	if (id < 0) {
		struct pending fresh = { .tid = h.tid, .kind = h.kind };

		if (intern_count(&x->pending) >= XSTACK_MAX_THREADS)
			drop_all(x);
		id = intern_add(&x->pending, pending_hash(h.tid, h.kind), &fresh);
		if (id < 0)
			return (int)id;
	}
	p = intern_at(&x->pending, (size_t)id);
	if (p->waiting)
		x->st.unpaired++; /* the sample after it never came */
	p->waiting = false;
	err = grow_array((void **)&p->rec, &p->cap, sizeof(h) + h.len, 1);
	if (err)
		return err;
	memcpy(p->rec, data, sizeof(h) + h.len);
	p->len = sizeof(h) + h.len;
	p->waiting = true;
	return 0;
}

/* The waiting record of (tid, kind) for a sample of time_ns, taken; NULL when none. */
static struct pending *take(struct xstack *x, uint32_t tid, uint32_t kind, uint64_t time_ns)
{
	struct pending_key k = { tid, kind };
	int64_t id = intern_find(&x->pending, pending_hash(tid, kind), &k);
	struct pending *p;
	struct pw_stack_hdr h;

	if (id < 0)
		return NULL;
	p = intern_at(&x->pending, (size_t)id);
	if (!p->waiting)
		return NULL;
	memcpy(&h, p->rec, sizeof(h));
	p->waiting = false;
	if (h.time_ns != time_ns) {
		x->st.unpaired++; /* another run's: its sample was lost */
		return NULL;
	}
	return p;
}

int xstack__pair(struct xstack *x, const void *data, size_t size, const void **out,
		 size_t *out_size)
{
	static const uint32_t kinds[][2] = { { PW_SF_KSTACK, PW_REC_KSTACK },
					     { PW_SF_USTACK, PW_REC_USTACK } };
	struct pending *got[2] = { 0 };
	struct xstack_tail tail = { 0, XSTACK_TAIL_MAGIC };
	struct pw_sample_hdr h;
	size_t at, need;
	int err;

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
		if (!got[i]) {
			/* passed on without any: the profile rejects it for what is missing */
			x->st.missing++;
			return 0;
		}
		need += align8(got[i]->len);
	}
	err = grow_array((void **)&x->out, &x->out_cap, need + sizeof(tail), 1);
	if (err)
		return err;
	memset(x->out, 0, need);
	memcpy(x->out, data, size);
	h.flags |= XSTACK_SF_PAIRED;
	memcpy(x->out, &h, sizeof(h));
	at = align8(size);
	for (int i = 0; i < 2; i++) {
		if (!got[i])
			continue;
		memcpy(x->out + at, got[i]->rec, got[i]->len);
		at += align8(got[i]->len);
	}
	tail.bytes = (uint32_t)(at - align8(size));
	memcpy(x->out + at, &tail, sizeof(tail));
	x->st.paired++;
	*out = x->out;
	*out_size = at + sizeof(tail);
	return 0;
}

void xstack__flush(struct xstack *x)
{
	for (size_t i = 0; i < intern_count(&x->pending); i++) {
		struct pending *p = intern_at(&x->pending, i);

		x->st.unpaired += p->waiting;
		p->waiting = false;
	}
}

const struct xstack_stats *xstack__stats(const struct xstack *x)
{
	return &x->st;
}
