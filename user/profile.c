// SPDX-License-Identifier: MIT
/* Record -> symbolized, interned stack. Per record: no allocation once the caches are warm,
 * and a syscall only on a symbol or thread-name cache miss. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "htab.h"
#include "proc.h"
#include "profile.h"
#include "util.h"

struct thread_name {
	uint32_t pid, tid;
	char comm[32];
};

/* (symbol, instruction) -> agg frame id, so each line table is decoded once per offset */
struct frame_cache_entry {
	uint32_t sym, instr, frame_id;
};

struct profile {
	struct profile_opts opts;
	struct symtab *symtab;
	struct agg *agg;
	struct target *targets;
	size_t ntargets, targets_cap;

	struct thread_name *threads;
	size_t nthreads, threads_cap;
	struct htab thread_index;

	struct frame_cache_entry *fcache;
	size_t nfcache, fcache_cap;
	struct htab fcache_index;

	uint32_t ids[PW_MAX_FRAMES_CAP];
	struct profile_drops drops;
	struct profile_sampling sampling;
};

struct profile *profile__new(const struct profile_opts *opts)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->opts = *opts;
	p->symtab = symtab__new();
	p->agg = agg__new();
	if (!p->symtab || !p->agg) {
		profile__free(p);
		return NULL;
	}
	return p;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	symtab__free(p->symtab);
	agg__free(p->agg);
	free(p->targets);
	free(p->threads);
	htab_free(&p->thread_index);
	free(p->fcache);
	htab_free(&p->fcache_index);
	free(p);
}

int profile__add_target(struct profile *p, const struct target *t)
{
	int err = grow_array((void **)&p->targets, &p->targets_cap, p->ntargets + 1,
			     sizeof(*p->targets));

	if (err)
		return err;
	p->targets[p->ntargets++] = *t;
	return 0;
}

static struct target *find_target(struct profile *p, uint32_t pid)
{
	/* a handful of targets in record mode; system-wide mode will index this */
	for (size_t i = 0; i < p->ntargets; i++)
		if ((uint32_t)p->targets[i].pid == pid)
			return &p->targets[i];
	return NULL;
}

void profile__target_gone(struct profile *p, pid_t pid)
{
	symtab__forget_pid(p->symtab, pid);
}

struct thread_key {
	uint32_t pid, tid;
};

static bool thread_eq(uint32_t id, const void *key, void *ctx)
{
	const struct profile *p = ctx;
	const struct thread_key *k = key;

	return p->threads[id].pid == k->pid && p->threads[id].tid == k->tid;
}

static int note_thread(struct profile *p, uint32_t pid, uint32_t tid)
{
	struct thread_key k = { pid, tid };
	uint64_t hash = hash_mix64((uint64_t)pid << 32 | tid);
	struct thread_name *t;
	uint32_t id;
	int err;

	if (htab_find(&p->thread_index, hash, thread_eq, &k, p, &id))
		return 0;
	err = grow_array((void **)&p->threads, &p->threads_cap, p->nthreads + 1,
			 sizeof(*p->threads));
	if (!err)
		err = htab_insert(&p->thread_index, hash, (uint32_t)p->nthreads);
	if (err)
		return err;
	t = &p->threads[p->nthreads++];
	t->pid = pid;
	t->tid = tid;
	if (proc_read_comm(pid, tid, t->comm, sizeof(t->comm)) || !t->comm[0])
		strcpy(t->comm, "?");
	return 0;
}

struct fcache_key {
	uint32_t sym, instr;
};

static bool fcache_eq(uint32_t id, const void *key, void *ctx)
{
	const struct profile *p = ctx;
	const struct fcache_key *k = key;

	return p->fcache[id].sym == k->sym && p->fcache[id].instr == k->instr;
}

/* agg frame id for (sym, instr), or a negative errno */
static int64_t frame_id(struct profile *p, uint32_t sym, uint32_t instr)
{
	struct fcache_key k = { sym, instr };
	uint64_t hash = hash_mix64((uint64_t)sym << 32 | instr);
	uint32_t id;
	int64_t fid;
	int err;

	if (htab_find(&p->fcache_index, hash, fcache_eq, &k, p, &id))
		return p->fcache[id].frame_id;
	fid = agg__frame_id(p->agg, symtab__func(p->symtab, sym), symtab__line(p->symtab, sym, instr));
	if (fid < 0)
		return fid;
	err = grow_array((void **)&p->fcache, &p->fcache_cap, p->nfcache + 1, sizeof(*p->fcache));
	if (!err)
		err = htab_insert(&p->fcache_index, hash, (uint32_t)p->nfcache);
	if (err)
		return err;
	p->fcache[p->nfcache++] = (struct frame_cache_entry){ sym, instr, (uint32_t)fid };
	return fid;
}

int profile__add_record(struct profile *p, const void *data, size_t size)
{
	const struct pw_sample_hdr *h = data;
	const struct pw_frame *frames;
	struct target *t;
	uint32_t n = 0;
	int err;

	if (size < sizeof(*h) || h->nframes > PW_MAX_FRAMES_CAP ||
	    size < sizeof(*h) + (size_t)h->nframes * sizeof(struct pw_frame)) {
		p->drops.malformed++;
		return 0;
	}
	t = find_target(p, h->pid);
	if (!t) {
		p->drops.unknown_pid++;
		return 0;
	}
	frames = (const struct pw_frame *)(h + 1);
	/* the record is leaf first; stacks are interned root first */
	for (uint32_t i = h->nframes; i-- > 0;) {
		int64_t sym = symtab__resolve(p->symtab, h->pid, t->code_type, &t->ver.obj,
					      frames[i].code, frames[i].tag);
		int64_t fid;

		if (sym == -ENOMEM)
			return -ENOMEM;
		if (sym < 0) {
			/* never guess: a stack with an unreadable or since-replaced code object
			 * is not counted */
			if (sym == -ESTALE)
				p->drops.stale++;
			else
				p->drops.unsymbolized++;
			return 0;
		}
		if (symtab__is_shim(p->symtab, (uint32_t)sym))
			continue;
		fid = frame_id(p, (uint32_t)sym, frames[i].instr);
		if (fid < 0)
			return (int)fid;
		p->ids[n++] = (uint32_t)fid;
	}
	/* always keyed by thread: writers that group by thread need it, and the folded
	 * writer merges stacks that print alike when thread roots are off */
	err = note_thread(p, h->pid, h->tid);
	if (err)
		return err;
	return agg__add(p->agg, h->pid, h->tid, p->ids, n, 1);
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void profile__start_sampling(struct profile *p, uint32_t frequency_hz)
{
	profile__set_sampling(p, frequency_hz, wall_ns(), 0);
}

void profile__stop_sampling(struct profile *p)
{
	p->sampling.end_ns = wall_ns();
}

void profile__set_sampling(struct profile *p, uint32_t frequency_hz, uint64_t start_ns,
			   uint64_t end_ns)
{
	p->sampling = (struct profile_sampling){ .frequency_hz = frequency_hz,
						 .start_ns = start_ns,
						 .end_ns = end_ns };
}

const struct profile_sampling *profile__sampling(const struct profile *p)
{
	return &p->sampling;
}

uint64_t profile__period_ns(const struct profile *p)
{
	return p->sampling.frequency_hz ? 1000000000ull / p->sampling.frequency_hz : 0;
}

uint64_t profile__duration_ns(const struct profile *p)
{
	uint64_t end = p->sampling.end_ns ? p->sampling.end_ns : wall_ns();

	if (!p->sampling.start_ns)
		return 0;
	return end > p->sampling.start_ns ? end - p->sampling.start_ns : 0;
}

const struct agg *profile__agg(const struct profile *p)
{
	return p->agg;
}

const struct symtab *profile__symtab(const struct profile *p)
{
	return p->symtab;
}

const struct profile_opts *profile__opts(const struct profile *p)
{
	return &p->opts;
}

const struct profile_drops *profile__drops(const struct profile *p)
{
	return &p->drops;
}

uint64_t profile__dropped(const struct profile *p)
{
	return p->drops.malformed + p->drops.unknown_pid + p->drops.unsymbolized + p->drops.stale;
}

const char *profile__process_name(const struct profile *p, uint32_t pid)
{
	for (size_t i = 0; i < p->ntargets; i++)
		if ((uint32_t)p->targets[i].pid == pid)
			return p->targets[i].comm[0] ? p->targets[i].comm : "?";
	return "?";
}

const char *profile__thread_name(const struct profile *p, uint32_t pid, uint32_t tid)
{
	struct thread_key k = { pid, tid };
	uint32_t id;

	if (htab_find(&p->thread_index, hash_mix64((uint64_t)pid << 32 | tid), thread_eq, &k,
		      (void *)p, &id))
		return p->threads[id].comm;
	return "?";
}
