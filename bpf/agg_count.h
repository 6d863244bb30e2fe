/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* trace --aggregate: a hit whose stack the walk proved complete is counted in a hash map
 * instead of being shipped (abi.h says what the key is). Two generations of maps: the
 * programs read the generation once per hit and use its two maps only, so userspace can
 * flip it, wait for the programs still running on the old one (a map-in-map update waits
 * for them), and drain the old maps while nothing writes them. Every hit ends in exactly
 * one outcome: counted here (shipped), shipped as a record (the first of its key, or a
 * stack this map cannot hold), or lost because the map is full (its own bucket).
 * Included by pywalk.bpf.c after the scratch area and the counters. */
#ifndef PW_AGG_COUNT_H
#define PW_AGG_COUNT_H

const volatile bool aggregate = false;
const volatile __u64 agg_seed = 0; /* random per run: crafted frames cannot aim at a hash */
/* The generation the programs count in; userspace flips it (.bss, mapped). */
__u32 agg_gen = 0;

/* Sized at load (--aggregate-entries); the frames are allocated as stacks appear. */
struct agg_counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PW_AGG_DEFAULT_ENTRIES);
	__type(key, struct pw_agg_key);
	__type(value, struct pw_agg_val);
} agg_counts_0 SEC(".maps"), agg_counts_1 SEC(".maps");

struct agg_frames_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PW_AGG_DEFAULT_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct pw_agg_frames_key);
	__type(value, struct pw_agg_frames);
} agg_frames_0 SEC(".maps"), agg_frames_1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct agg_counts_map);
} agg_counts SEC(".maps") = { .values = { &agg_counts_0, &agg_counts_1 } };

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct agg_frames_map);
} agg_frames SEC(".maps") = { .values = { &agg_frames_0, &agg_frames_1 } };

/* One frame into the stack's hash, as the walk emits it. */
static __always_inline __u64 agg_fold(__u64 h, const struct pw_frame *f)
{
	h = (h ^ f->code) * 0x9e3779b97f4a7c15ull;
	h ^= h >> 31;
	h = (h ^ ((__u64)f->instr << 32 | f->tag)) * 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

struct agg_cmp_ctx {
	const struct pw_frame *kept; /* the map's frames */
	const struct pw_frame *now;  /* the walk's */
	__u32 n;
	bool differ;
};

static long agg_cmp_cb(__u32 i, void *data)
{
	struct agg_cmp_ctx *c = data;

	if (i >= c->n || i >= PW_AGG_MAX_FRAMES)
		return 1;
	if (c->kept[i].code != c->now[i].code || c->kept[i].instr != c->now[i].instr ||
	    c->kept[i].tag != c->now[i].tag) {
		c->differ = true;
		return 1;
	}
	return 0;
}

enum agg_result {
	AGG_COUNTED = 1, /* counted in the map: nothing to ship */
	AGG_FIRST,	 /* ship the record as its key's first, then agg_defined() */
	AGG_WHOLE,	 /* ship the record as a plain sample */
	AGG_FULL,	 /* no room: lost, in its own bucket */
};

/* Count the complete stack in s->sample.frames, whose key the caller put in s->agg_key, at
 * `weight`. AGG_FIRST fills s->agg_first for the record: until it is shipped (and
 * agg_defined says so) no hit is counted under the key, so a key the map counts always has
 * its frames in userspace. A global function: verified once, with a stack of its own. */
__noinline int agg_count(struct scratch *s, __u64 weight)
{
	static const struct pw_agg_val zero;
	struct pw_agg_frames *kept;
	struct pw_agg_val *v;
	void *counts, *frames;
	__u32 now, g, probe, n;
	long err;

	if (!s)
		return AGG_WHOLE;
	s->agg_first.kind = 0; /* not a first record unless found so below */
	probe = s->agg_key.probe;
	n = s->agg_key.nframes;
	if (n > PW_AGG_MAX_FRAMES) {
		count_probe(probe, PW_COUNTER_INDEX(PW_CNT_AGG_DEEP));
		return AGG_WHOLE;
	}
	now = *(volatile __u32 *)&agg_gen;
	g = now & 1;
	counts = bpf_map_lookup_elem(&agg_counts, &g);
	frames = bpf_map_lookup_elem(&agg_frames, &g);
	if (!counts || !frames)
		return AGG_WHOLE;
	s->agg_fkey.stack = s->agg_key.stack;
	s->agg_fkey.nframes = n;
	s->agg_fkey.pad = 0;
	kept = bpf_map_lookup_elem(frames, &s->agg_fkey);
	if (!kept) {
		/* the first time this generation sees the hash: its frames are the hash's */
		err = bpf_map_update_elem(frames, &s->agg_fkey, s->sample.frames, BPF_NOEXIST);
		if (err == -EEXIST)
			kept = bpf_map_lookup_elem(frames, &s->agg_fkey); /* another CPU, now */
		else if (err)
			return AGG_FULL;
	}
	if (kept) {
		struct agg_cmp_ctx c = { .kept = kept->f, .now = s->sample.frames, .n = n };

		bpf_loop(PW_AGG_MAX_FRAMES, agg_cmp_cb, &c, 0);
		if (c.differ) {
			count_probe(probe, PW_COUNTER_INDEX(PW_CNT_AGG_COLLISION));
			return AGG_WHOLE;
		}
	}
	v = bpf_map_lookup_elem(counts, &s->agg_key);
	if (!v) {
		err = bpf_map_update_elem(counts, &s->agg_key, &zero, BPF_NOEXIST);
		if (err && err != -EEXIST)
			return AGG_FULL;
		v = bpf_map_lookup_elem(counts, &s->agg_key);
		if (!v)
			return AGG_FULL;
	}
	if (!v->defined) {
		s->agg_first.kind = PW_REC_AGG_FIRST;
		s->agg_first.gen = now;
		s->agg_first.stack = s->agg_key.stack;
		return AGG_FIRST;
	}
	__sync_fetch_and_add(&v->hits, 1);
	__sync_fetch_and_add(&v->weight, weight);
	count_probe(probe, PW_COUNTER_INDEX(PW_CNT_AGG_COUNTED));
	return AGG_COUNTED;
}

/* The first record of s->agg_key is shipped: its later hits are counted in the map. */
static __always_inline void agg_defined(struct scratch *s)
{
	__u32 g = s->agg_first.gen & 1;
	void *counts = bpf_map_lookup_elem(&agg_counts, &g);
	struct pw_agg_val *v = counts ? bpf_map_lookup_elem(counts, &s->agg_key) : NULL;

	if (v)
		v->defined = 1;
	count_probe(s->agg_key.probe, PW_COUNTER_INDEX(PW_CNT_AGG_FIRST));
}

#endif
