// SPDX-License-Identifier: MIT
/* Record -> symbolized, interned stack. Per record: no allocation once the caches are warm,
 * and a syscall only on a symbol or thread-name cache miss. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#include "lib/intern.h"
#include "lib/log.h"
#include "symbolize/native.h"
#include "symbolize/native_merge.h"
#include "inspect/proc.h"
#include "profile/profile.h"
#include "pystate/pythreads.h"
#include "lib/util.h"
#include "symbolize/xstack.h"

/* The frame cache only saves line-table lookups of the code objects the symbol cache
 * holds, and its entries outlive theirs (an evicted symbol's handle never matches again),
 * so it takes an eighth of the same budget: it starts over past budget / 8 / 64 entries
 * (an entry is 16 bytes and two index slots of 12, and either array may be twice what it
 * holds). */
static size_t fcache_max(size_t symtab_budget)
{
	size_t n = symtab_budget / 8 / 64;

	return n < 1024 ? 1024 : n;
}

/* A Python thread name kept for the outputs: cut to fit (at a character, marked '…'). */
#define PYNAME_SIZE 64
/* Reads of a process's threading._active: one at most this often, and a thread is looked
 * for this many times before it is taken for one threading does not know (started from C,
 * or a thread that never called into threading). */
#define NAMES_REFRESH_NS 200000000ull
#define NAMES_TRIES 8
/* Each process's name reads come from a bucket of memory reads, refilled at a rate one
 * scan of an ordinary process needs a sliver of, and holding one scan's most: a crafted
 * threading._active makes every scan cost that most, and would otherwise cost that 5
 * times a second, a reader's whole second per hostile process. A scan is not started
 * with less than the minimum left. */
#define NAMES_READS_PER_S 10000ull
#define NAMES_READS_BURST ((uint64_t)PYTHREADS_MAX_READS)
#define NAMES_READS_MIN 1000ull

struct thread_name {
	uint32_t proc, tid;
	char comm[32];
	char pyname[PYNAME_SIZE]; /* "" until found */
	pid_t nstid;		  /* tid in the process's own pid namespace */
	uint8_t tries;		  /* reads that did not name it */
	bool sampled;		  /* has a record in this profile (not only carried over) */
};

/* kernel address -> agg frame id, so each return address is looked up once */
struct kcache_entry {
	uint64_t addr;
	uint32_t frame_id;
};

/* (symbol handle, instruction) -> agg frame id, so each line is looked up once */
struct frame_cache_entry {
	int64_t sym;
	uint32_t instr, frame_id;
};

/* A tracked process: what outputs show, and what the symbolizer needs while it lives. */
struct proc {
	struct profile_process shown;
	bool sampled; /* has a counted sample */
	uint64_t code_type;
	struct py_objlayout lay;
	bool own_pidns;
	struct pythreads_src names; /* where its thread names are read */
	uint64_t names_next_ns;	    /* no read of them before this (record time) */
	uint64_t names_tokens;	    /* memory reads its name reads may still make */
	uint64_t names_refill_ns;   /* record time the bucket was last refilled */
};

struct profile {
	struct profile_opts opts;
	struct symtab *symtab;
	bool owns_symtab; /* a window or a tap borrows its parent's */
	struct agg *agg;

	struct intern procs;   /* struct proc, by target id */
	size_t nsampled;       /* processes with samples */
	struct intern threads; /* struct thread_name, by (proc, tid) */
	struct intern fcache;  /* struct frame_cache_entry, by (sym, instr) */
	size_t fcache_max;
	struct intern kcache; /* struct kcache_entry, by address; bounded as fcache */
	uint32_t kernel_map;  /* the kernel's mapping id, 0 until a kernel frame needs it */

	/* Python frames, kernel frames and an off-CPU stack's pseudo-frame */
	uint32_t ids[PW_MAX_FRAMES_CAP + PW_KSTACK_MAX + 1];
	/* --async: a record's frames in the order they are counted (async_order) */
	uint32_t order[PW_MAX_FRAMES_CAP];
	uint64_t block_fid[PW_BLOCK__COUNT]; /* agg frame id + 1 of each, 0: none yet */
	/* --native: which Python frames start an eval activation, and the merged stack */
	bool entry[PW_MAX_FRAMES_CAP];
	bool is_eval[NATIVE_MAX_FRAMES];
	struct merge_item merged[PW_MAX_FRAMES_CAP + NATIVE_MAX_FRAMES];
	/* the merged stack, then kernel frames and the pseudo-frame as in ids */
	uint32_t mids[PW_MAX_FRAMES_CAP + NATIVE_MAX_FRAMES + PW_KSTACK_MAX + 1];
	struct profile_drops drops;
	struct profile_drops rotated_drops; /* of the windows rotated out of this profile */
	struct profile_sampling sampling;
	/* CLOCK_BOOTTIME when sampling.start_ns was stamped: the end is that start plus the
	 * time elapsed since, whatever the wall clock did meanwhile; 0 for times given
	 * explicitly (profile__set_sampling) */
	uint64_t start_boot_ns;

	struct pythread_name *names_buf; /* PYTHREADS_MAX, for one read; allocated when needed */
	struct profile_names names;

	struct profile_event *events; /* opts.timeline */
	size_t nevents, events_cap;
	uint64_t events_dropped;
};

struct thread_key {
	uint32_t proc, tid;
};

struct fcache_key {
	int64_t sym;
	uint32_t instr;
};

static bool kcache_eq(const void *item, const void *key)
{
	return ((const struct kcache_entry *)item)->addr == *(const uint64_t *)key;
}

static bool proc_eq(const void *item, const void *key)
{
	return ((const struct proc *)item)->shown.target == *(const uint32_t *)key;
}

static bool thread_eq(const void *item, const void *key)
{
	const struct thread_name *t = item;
	const struct thread_key *k = key;

	return t->proc == k->proc && t->tid == k->tid;
}

static bool fcache_eq(const void *item, const void *key)
{
	const struct frame_cache_entry *e = item;
	const struct fcache_key *k = key;

	return e->sym == k->sym && e->instr == k->instr;
}

static struct proc *proc_at(const struct profile *p, size_t i)
{
	return intern_at(&p->procs, i);
}

struct profile *profile__new(const struct profile_opts *opts)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->opts = *opts;
	p->procs = (struct intern)INTERN_INIT(struct proc, proc_eq);
	p->threads = (struct intern)INTERN_INIT(struct thread_name, thread_eq);
	p->fcache = (struct intern)INTERN_INIT(struct frame_cache_entry, fcache_eq);
	p->kcache = (struct intern)INTERN_INIT(struct kcache_entry, kcache_eq);
	p->symtab = symtab__new(opts->symtab_bytes);
	p->owns_symtab = true;
	p->agg = agg__new();
	if (!p->symtab || !p->agg) {
		profile__free(p);
		return NULL;
	}
	p->fcache_max = fcache_max(symtab__stats(p->symtab)->budget);
	return p;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	if (p->owns_symtab)
		symtab__free(p->symtab);
	agg__free(p->agg);
	free(p->names_buf);
	free(p->events);
	intern_free(&p->procs);
	intern_free(&p->threads);
	intern_free(&p->fcache);
	intern_free(&p->kcache);
	free(p);
}

void profile__set_ksyms(struct profile *p, const struct kallsyms *k)
{
	p->opts.ksyms = k;
}

/* Index of the process with target id `target`, or -1. */
static int64_t proc_index(const struct profile *p, uint32_t target)
{
	return intern_find(&p->procs, hash_mix64(target), &target);
}

int profile__add_target(struct profile *p, const struct target *t)
{
	struct proc new = { 0 }, *pr = &new;
	int64_t id;

	if (proc_index(p, t->id) >= 0)
		return 0;
	pr->shown.target = t->id;
	pr->shown.pid = t->pid;
	pr->shown.nspid = t->nspid ? t->nspid : t->pid;
	snprintf(pr->shown.comm, sizeof(pr->shown.comm), "%s", t->comm[0] ? t->comm : "?");
	snprintf(pr->shown.container, sizeof(pr->shown.container), "%s", t->container);
	py_version_str(&t->ver, pr->shown.python, sizeof(pr->shown.python));
	pr->shown.free_threaded = t->ver.free_threaded;
	snprintf(pr->shown.service, sizeof(pr->shown.service), "%s", t->service);
	pr->shown.service_asked = t->service_asked;
	pr->code_type = t->code_type;
	pr->lay = t->ver.obj;
	pr->own_pidns = t->own_pidns;
	pythreads_src_of(t, &pr->names);
	pr->names_tokens = NAMES_READS_BURST;
	id = intern_add(&p->procs, hash_mix64(t->id), pr);
	return id < 0 ? (int)id : 0;
}

bool profile__free_threaded(const struct profile *p, uint32_t target)
{
	int64_t i = proc_index(p, target);

	return i >= 0 && proc_at(p, (size_t)i)->shown.free_threaded;
}

void profile__target_gone(struct profile *p, uint32_t id)
{
	int64_t i = proc_index(p, id);

	if (i < 0 || proc_at(p, (size_t)i)->shown.gone)
		return;
	proc_at(p, (size_t)i)->shown.gone = true;
	if (p->owns_symtab)
		symtab__forget_target(p->symtab, id);
}

static struct symtab_target symtab_target_of(const struct proc *pr)
{
	return (struct symtab_target){ .id = pr->shown.target,
				       .pid = pr->shown.pid,
				       .code_type = pr->code_type,
				       .lay = &pr->lay };
}

/* `src` cut to fit `size` bytes at a character boundary, marked with '…' when cut. */
static void copy_name(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n < size) {
		memcpy(dst, src, n + 1);
		return;
	}
	n = size - 4; /* room for the mark and the terminator */
	while (n && ((unsigned char)src[n] & 0xc0) == 0x80)
		n--; /* not inside a character */
	memcpy(dst, src, n);
	memcpy(dst + n, "\xe2\x80\xa6", 4);
}

static void refill_names_bucket(struct proc *pr, uint64_t now)
{
	uint64_t dt = now > pr->names_refill_ns ? now - pr->names_refill_ns : 0;

	if (!pr->names_refill_ns || dt >= 1000000000ull * NAMES_READS_BURST / NAMES_READS_PER_S)
		pr->names_tokens = NAMES_READS_BURST;
	else
		pr->names_tokens += dt * NAMES_READS_PER_S / 1000000000ull;
	if (pr->names_tokens > NAMES_READS_BURST)
		pr->names_tokens = NAMES_READS_BURST;
	pr->names_refill_ns = now;
}

/* Read process `proc`'s Python thread names and give them to its threads that have none
 * yet. */
static void read_names(struct profile *p, uint32_t proc, uint64_t now)
{
	struct proc *pr = proc_at(p, proc);
	struct pythreads_result res;
	int err;

	pr->names_next_ns = now + NAMES_REFRESH_NS;
	if (!p->names_buf)
		p->names_buf = calloc(PYTHREADS_MAX, sizeof(*p->names_buf));
	if (!p->names_buf)
		return;
	refill_names_bucket(pr, now);
	if (pr->names_tokens < NAMES_READS_MIN) {
		p->names.over_budget++;
		return; /* no try is spent: the threads are looked for again later */
	}
	pr->names.max_reads = (uint32_t)pr->names_tokens;
	p->names.reads++;
	err = pythreads_read(&pr->names, p->names_buf, PYTHREADS_MAX, &res);
	pr->names_tokens -= res.reads < pr->names_tokens ? res.reads : pr->names_tokens;
	p->names.mem_reads += res.reads;
	if (res.cut && pr->names.max_reads < PYTHREADS_MAX_READS)
		p->names.over_budget++; /* cut short by the budget, not by the bound of a scan */
	else if (err == -ENOENT)
		p->names.no_threading++;
	else if (err)
		p->names.failed++;
	p->names.unreadable += res.unreadable;
	for (size_t i = 0; i < intern_count(&p->threads); i++) {
		struct thread_name *t = intern_at(&p->threads, i);

		if (t->proc != proc || t->pyname[0])
			continue;
		for (size_t j = 0; !err && j < res.named; j++)
			if (t->nstid > 0 && p->names_buf[j].native_id == (uint32_t)t->nstid) {
				copy_name(t->pyname, sizeof(t->pyname), p->names_buf[j].name);
				p->names.named++;
			}
		if (!t->pyname[0] && t->tries < NAMES_TRIES)
			t->tries++;
	}
}

/* Remember thread `tid` with its names (the Python one when it can be read), at its first
 * record; a thread still without a Python name is looked for again, now and then. */
static int note_thread(struct profile *p, uint32_t proc, uint32_t tid, uint64_t now)
{
	struct thread_key k = { proc, tid };
	uint64_t hash = hash_mix64((uint64_t)proc << 32 | tid);
	struct thread_name t = { .proc = proc, .tid = tid };
	struct proc *pr = proc_at(p, proc);
	int64_t id = intern_find(&p->threads, hash, &k);

	if (id >= 0) {
		struct thread_name *have = intern_at(&p->threads, (size_t)id);

		have->sampled = true;
		if (!have->pyname[0] && have->tries < NAMES_TRIES && now >= pr->names_next_ns)
			read_names(p, proc, now);
		return 0;
	}
	if (proc_read_comm(pr->shown.pid, tid, t.comm, sizeof(t.comm)) || !t.comm[0])
		strcpy(t.comm, "?");
	t.nstid = pr->own_pidns ? proc_read_nspid((pid_t)tid) : (pid_t)tid;
	t.sampled = true;
	id = intern_add(&p->threads, hash, &t);
	if (id < 0)
		return (int)id;
	p->names.threads++;
	if (now >= pr->names_next_ns)
		read_names(p, proc, now);
	return 0;
}

/* agg frame id for (sym, instr), or a negative errno */
static int64_t frame_id(struct profile *p, int64_t sym, uint32_t instr)
{
	struct fcache_key k = { sym, instr };
	uint64_t hash = hash_mix64((uint64_t)sym * 0x9e3779b97f4a7c15ull ^ instr);
	struct frame_cache_entry e;
	int64_t id = intern_find(&p->fcache, hash, &k), fid;
	uint32_t func;

	if (id >= 0)
		return ((const struct frame_cache_entry *)intern_at(&p->fcache, (size_t)id))
			->frame_id;
	func = symtab__func(p->symtab, sym);
	/* by function: every line of a function is one frame, named by where it starts */
	fid = agg__frame_id(p->agg, func,
			    p->opts.by_function ? symtab__func_firstline(p->symtab, func)
						: symtab__line(p->symtab, sym, instr));
	if (fid < 0)
		return fid;
	/* a cache, not the profile: starting over costs only lookups */
	if (intern_count(&p->fcache) >= p->fcache_max)
		intern_clear(&p->fcache);
	e = (struct frame_cache_entry){ sym, instr, (uint32_t)fid };
	id = intern_add(&p->fcache, hash, &e);
	return id < 0 ? id : fid;
}

/* The kernel's one mapping: the upper half of the address space, where x86-64 and arm64
 * keep the kernel and its modules. */
static int64_t kernel_mapping(struct profile *p)
{
	struct symtab_mapping m = { .kind = FRAME_KERNEL,
				    .path = SYMTAB_KERNEL_MAPPING,
				    .start = 1ull << 63,
				    .limit = UINT64_MAX };
	int64_t id;

	if (p->kernel_map)
		return p->kernel_map;
	id = symtab__mapping(p->symtab, &m);
	if (id > 0)
		p->kernel_map = (uint32_t)id;
	return id;
}

/* The function a kernel return address lies in: its symbol (and module), or what stands
 * for it: "[unknown]+0xADDR" outside every symbol, "[kernel unsymbolized]" when the
 * symbols are hidden. */
static int64_t kernel_func(struct profile *p, uint64_t addr)
{
	const struct kallsyms *k = p->opts.ksyms;
	struct kallsyms_hit hit;
	char name[48];

	if (!k || kallsyms__stats(k)->restricted)
		return symtab__machine_func(p->symtab, FRAME_KERNEL, "[kernel unsymbolized]", "");
	if (kallsyms__lookup(k, addr, &hit))
		return symtab__machine_func(p->symtab, FRAME_KERNEL, hit.name, hit.module);
	snprintf(name, sizeof(name), "[unknown]+0x%llx", (unsigned long long)addr);
	return symtab__machine_func(p->symtab, FRAME_KERNEL, name, "");
}

/* agg frame id of kernel address `addr`, or a negative errno */
static int64_t kernel_frame_id(struct profile *p, uint64_t addr)
{
	uint64_t hash = hash_mix64(addr);
	int64_t id = intern_find(&p->kcache, hash, &addr), func, map, fid;
	struct kcache_entry e;

	if (id >= 0)
		return ((const struct kcache_entry *)intern_at(&p->kcache, (size_t)id))->frame_id;
	func = kernel_func(p, addr);
	map = func < 0 ? func : kernel_mapping(p);
	if (map < 0)
		return map;
	fid = agg__addr_frame_id(p->agg, (uint32_t)func, (uint32_t)map, addr);
	if (fid < 0)
		return fid;
	if (intern_count(&p->kcache) >= p->fcache_max)
		intern_clear(&p->kcache);
	e = (struct kcache_entry){ addr, (uint32_t)fid };
	id = intern_add(&p->kcache, hash, &e);
	return id < 0 ? id : fid;
}

/* Append the kernel frames of a paired sample's stack record after the *n frames in
 * ids (room for PW_KSTACK_MAX more): the record is leaf first, stacks root first, so the syscall entry comes first
 * and the innermost function last. 0 or a negative errno. */
static int add_kernel_frames(struct profile *p, const struct pw_stack_hdr *ks, uint32_t *ids,
			     uint32_t *n)
{
	uint32_t nips = ks->len / sizeof(uint64_t), leaf = 0;
	const uint8_t *ips = (const uint8_t *)(ks + 1);
	const struct kallsyms *k = p->opts.ksyms;

	if (nips > PW_KSTACK_MAX)
		nips = PW_KSTACK_MAX;
	/* a tracing program's stack starts inside the program and what called it: those are
	 * pywalk's own frames, left out (the rest is where the thread was) */
	while (k && leaf < nips) {
		uint64_t addr;

		memcpy(&addr, ips + (size_t)leaf * sizeof(addr), sizeof(addr));
		if (!kallsyms__is_bpf_glue(k, addr))
			break;
		leaf++;
	}
	for (uint32_t i = nips; i-- > leaf;) {
		uint64_t addr;
		int64_t fid;

		memcpy(&addr, ips + (size_t)i * sizeof(addr), sizeof(addr));
		if (!addr)
			continue;
		fid = kernel_frame_id(p, addr);
		if (fid < 0)
			return (int)fid;
		ids[(*n)++] = (uint32_t)fid;
	}
	return 0;
}

/* The leaf pseudo-frame of an off-CPU stack, by why its thread left the CPU (the
 * switch-out's state, PW_SF_BLOCK): agg frame id or a negative errno. */
static int64_t block_frame(struct profile *p, uint16_t flags)
{
	static const char *const labels[PW_BLOCK__COUNT] = {
		[PW_BLOCK_PREEMPTED] = "[off-cpu: preempted]",
		[PW_BLOCK_SLEEP] = "[off-cpu: sleeping]",
		[PW_BLOCK_IO] = "[off-cpu: uninterruptible]",
		[PW_BLOCK_OTHER] = "[off-cpu: other]",
	};
	unsigned int reason = PW_SF_BLOCK(flags);
	int64_t func = symtab__pseudo_func(p->symtab, labels[reason]), fid;

	if (func < 0)
		return func;
	fid = agg__frame_id(p->agg, (uint32_t)func, 0);
	if (fid >= 0)
		p->block_fid[reason] = (uint64_t)fid + 1;
	return fid;
}

/* The task name in a mark's label: "[task NAME]" or "[task NAME] (+N awaiting)". NAME is
 * the target's and may hold "] (+": the label's own suffix is the last one, after which
 * only digits and " awaiting)" can follow. */
static bool task_label_name(const char *label, const char **name, size_t *len)
{
	static const char head[] = "[task ", tail[] = " awaiting)";
	size_t n = strlen(label);
	const char *cut;

	if (strncmp(label, head, sizeof(head) - 1) || n < sizeof(head))
		return false;
	*name = label + sizeof(head) - 1;
	if (label[n - 1] == ']') {
		*len = (size_t)(label + n - 1 - *name);
		return true;
	}
	if (n < sizeof(tail) || strcmp(label + n - (sizeof(tail) - 1), tail))
		return false;
	for (cut = label + n - sizeof(tail); cut > *name && isdigit((unsigned char)*cut); cut--)
		;
	if (cut - *name < 3 || strncmp(cut - 3, "] (+", 4))
		return false;
	*len = (size_t)(cut - 3 - *name);
	return true;
}

const char *profile__stack_task(const struct profile *p, const uint32_t *frames, uint32_t n,
				char *buf, size_t size)
{
	const struct agg *agg = p->agg;

	while (n-- > 0) {
		const struct agg_frame *fr = agg__frame(agg, frames[n]);
		const char *name;
		size_t len;

		if (!fr || symtab__func_kind(p->symtab, fr->func) != FRAME_PSEUDO ||
		    !task_label_name(symtab__func_name(p->symtab, fr->func), &name, &len))
			continue;
		snprintf(buf, size, "%.*s", (int)len, name);
		return buf;
	}
	return NULL;
}

const char *profile__block_reason(const struct profile *p, uint32_t frame_id)
{
	static const char *const names[PW_BLOCK__COUNT] = {
		[PW_BLOCK_PREEMPTED] = "preempted",
		[PW_BLOCK_SLEEP] = "sleeping",
		[PW_BLOCK_IO] = "uninterruptible",
		[PW_BLOCK_OTHER] = "other",
	};

	for (unsigned int i = 0; i < PW_BLOCK__COUNT; i++)
		if (p->block_fid[i] == (uint64_t)frame_id + 1)
			return names[i];
	return NULL;
}

static uint64_t sample_period_ns(const struct profile *p)
{
	return p->sampling.frequency_hz ? 1000000000ull / p->sampling.frequency_hz : 0;
}

/* The time a counted stack of `probe` weighing `weight` stands for: a sample's period on
 * CPU, a wait's or a call's nanoseconds; 0 for a hit that is counted, not timed. */
static uint64_t event_ns(const struct profile *p, uint16_t probe, uint64_t weight)
{
	if (probe == PW_PROBE_OFFCPU)
		return weight;
	if (probe)
		return probe < PW_MAX_PROBES && p->opts.probe_ns[probe] ? weight : 0;
	return p->opts.value == PROFILE_VALUE_SAMPLES ? weight * sample_period_ns(p) : weight;
}

/* Place a counted sample in time, within the timeline's byte budget. */
static int note_event(struct profile *p, uint64_t end_ns, uint64_t dur_ns, size_t stack)
{
	size_t budget = p->opts.timeline_bytes ? p->opts.timeline_bytes : PROFILE_TIMELINE_BUDGET;
	int err;

	if ((p->nevents + 1) * sizeof(*p->events) > budget) {
		p->events_dropped++;
		return 0;
	}
	err = grow_array((void **)&p->events, &p->events_cap, p->nevents + 1, sizeof(*p->events));
	if (err)
		return err;
	p->events[p->nevents++] =
		(struct profile_event){ .end_ns = end_ns, .dur_ns = dur_ns, .stack = stack };
	return 0;
}

/* agg frame id of a native frame: function (its symbol, or 'lib+0xOFF' when no symbol
 * table names it) at its address in its module's mapping; a negative errno */
static int64_t native_frame(struct profile *p, const struct native_frame *f)
{
	struct symtab_mapping m = { .kind = FRAME_NATIVE,
				    .path = f->path,
				    .start = f->start,
				    .limit = f->limit,
				    .build_id_len = f->build_id_len };
	char name[512];
	int64_t func, map;

	if (f->symbol)
		snprintf(name, sizeof(name), "%s", f->symbol);
	else
		snprintf(name, sizeof(name), "%s+0x%llx", f->module, (unsigned long long)f->rel);
	memcpy(m.build_id, f->build_id, f->build_id_len);
	func = symtab__machine_func(p->symtab, FRAME_NATIVE, name, f->path);
	map = func < 0 ? func : symtab__mapping(p->symtab, &m);
	if (map < 0)
		return map;
	return agg__addr_frame_id(p->agg, (uint32_t)func, (uint32_t)map, f->pc);
}

/* Replace p->ids[0..*n) (Python, root first, p->entry marking activations) by the merged
 * stack of `ns`: 0, 1 when the sample is not to be counted (its drop counted), or a
 * negative errno. */
static int merge_native(struct profile *p, const struct native_stack *ns, uint32_t *n)
{
	int m;

	if (ns->status != NATIVE_OK) {
		p->drops.n[ns->status == NATIVE_MALFORMED      ? PROFILE_DROP_MALFORMED
			   : ns->status == NATIVE_EVAL_UNNAMED ? PROFILE_DROP_NATIVE_EVAL_UNNAMED
			   : ns->status == NATIVE_MISMATCH     ? PROFILE_DROP_NATIVE_MISMATCH
			   : ns->status == NATIVE_DEEP	       ? PROFILE_DROP_NATIVE_DEEP
							       : PROFILE_DROP_NATIVE_INCOMPLETE]++;
		return 1;
	}
	for (uint32_t i = 0; i < ns->n; i++)
		p->is_eval[i] = ns->f[i].is_eval;
	m = native_merge(p->is_eval, ns->n, p->entry, *n, p->merged,
			 PW_MAX_FRAMES_CAP + NATIVE_MAX_FRAMES);
	if (m < 0) {
		uint32_t evals = 0, entries = 0;

		for (uint32_t i = 0; i < ns->n; i++)
			evals += ns->f[i].is_eval;
		for (uint32_t i = 0; i < *n; i++)
			entries += i == 0 || p->entry[i];
		pw_debug("native: a stack of %u native frames with %u eval activations and %u "
			 "Python frames with %u entry frames: not counted\n",
			 ns->n, evals, *n, entries);
		p->drops.n[PROFILE_DROP_NATIVE_MISMATCH]++;
		return 1;
	}
	for (int i = 0; i < m; i++) {
		int64_t fid = p->merged[i].python ? p->ids[p->merged[i].index]
						  : native_frame(p, &ns->f[p->merged[i].index]);

		if (fid < 0)
			return (int)fid;
		p->mids[i] = (uint32_t)fid;
	}
	*n = (uint32_t)m;
	return 0;
}

/* --async: the order a sample's frames are counted in, root first, as indexes into its
 * frames (leaf first). The record holds the running task's frames (the thread's own, leaf
 * first), the task's mark, then each awaiting task's coroutine frames as they were read
 * (outermost first) and its mark, then the thread's frames below the task; counted root
 * first that is the thread's frames, then for each task from the outermost its mark and
 * its frames outermost first. Returns the number of marks, or -1 when the marks do not
 * name the sample's task list in order (`tasks`, ntasks entries after the frames). */
static int async_order(const struct pw_frame *f, uint32_t n, const struct pw_task_name *tasks,
		       uint32_t ntasks, uint32_t *order)
{
	uint32_t k = 0, marks = 0;
	int64_t i = (int64_t)n - 1;

	while (i >= 0 && f[i].instr != PW_INSTR_TASK)
		order[k++] = (uint32_t)i--;
	while (i >= 0) {
		int64_t j = i - 1;

		/* marks go from the outermost task (the last in the list) to the running one */
		if (f[i].tag >= ntasks || f[i].tag != ntasks - 1 - marks ||
		    tasks[f[i].tag].task != f[i].code)
			return -1;
		marks++;
		order[k++] = (uint32_t)i;
		while (j >= 0 && f[j].instr != PW_INSTR_TASK)
			j--;
		if (j < 0) {
			/* the running task: its frames are the thread's, leaf first */
			for (int64_t x = i - 1; x >= 0; x--)
				order[k++] = (uint32_t)x;
		} else {
			for (int64_t x = j + 1; x < i; x++)
				order[k++] = (uint32_t)x;
		}
		i = j;
	}
	return marks == ntasks ? (int)marks : -1;
}

/* The label of a task mark: "[task NAME]", and " (+N awaiting)" after it when other tasks
 * await it too (the chain followed one of them). The name is the target's: cut to what
 * the sample carried and marked, escaped by every writer as any name. */
static int64_t task_frame(struct profile *p, const struct pw_task_name *t)
{
	char *name = NULL, *label = NULL;
	int64_t func;

	if (t->kind == PW_TASK_NAME_INT) {
		if (asprintf(&name, "Task-%s%llu", t->negative ? "-" : "",
			     (unsigned long long)t->value) < 0)
			name = NULL;
	} else if (t->kind == 1 || t->kind == 2 || t->kind == 4) {
		uint32_t have = PW_TASK_NAME_MAX / t->kind;
		uint32_t n = t->length < have ? t->length : have;

		name = symtab_decode_str(t->data, n, t->kind, t->length > n);
	} else {
		name = strdup("?");
	}
	if (!name)
		return -ENOMEM;
	if ((t->awaiters ? asprintf(&label, "[task %s] (+%u awaiting)", name, t->awaiters)
			 : asprintf(&label, "[task %s]", name)) < 0)
		label = NULL;
	free(name);
	if (!label)
		return -ENOMEM;
	func = symtab__pseudo_func(p->symtab, label);
	free(label);
	if (func < 0)
		return func;
	return agg__frame_id(p->agg, (uint32_t)func, 0);
}

static int add_sample(struct profile *p, const struct pw_sample_hdr *h, size_t size,
		      const struct native_stack *ns)
{
	uint32_t *ids = p->ids, *order = NULL;
	bool entry = false;
	const struct pw_frame *frames;
	const struct pw_task_name *tasks = NULL;
	struct xstack_parts parts;
	struct symtab_target st;
	int64_t proc;
	uint32_t n = 0;
	uint64_t weight;
	uint16_t probe;
	size_t stack;
	int err;

	if (xstack_parts(h, size, &parts) || h->nframes > PW_MAX_FRAMES_CAP ||
	    parts.sample_size < sizeof(*h) + (size_t)h->nframes * sizeof(struct pw_frame)) {
		p->drops.n[PROFILE_DROP_MALFORMED]++;
		return 0;
	}
	/* never a stack without the part the user asked for */
	if ((h->flags & PW_SF_KSTACK) && !parts.kstack) {
		p->drops.n[PROFILE_DROP_NO_KSTACK]++;
		return 0;
	}
	if ((h->flags & PW_SF_USTACK) && !parts.ustack) {
		p->drops.n[PROFILE_DROP_NO_USTACK]++;
		return 0;
	}
	proc = proc_index(p, h->target);
	if (proc < 0 || proc_at(p, (size_t)proc)->shown.pid != (pid_t)h->pid) {
		p->drops.n[PROFILE_DROP_UNTRACKED]++;
		return 0;
	}
	st = symtab_target_of(proc_at(p, (size_t)proc));
	frames = (const struct pw_frame *)(h + 1);
	if (h->flags & PW_SF_ASYNC) {
		/* --async: the task list follows the frames; each mark names one of it */
		size_t at = sizeof(*h) + (size_t)h->nframes * sizeof(struct pw_frame);
		uint32_t ntasks = 0;

		for (uint32_t i = 0; i < h->nframes; i++)
			ntasks += frames[i].instr == PW_INSTR_TASK;
		tasks = (const struct pw_task_name *)(frames + h->nframes);
		if (!ntasks || ntasks > PW_ASYNC_MAX_TASKS ||
		    parts.sample_size < at + ntasks * sizeof(*tasks) ||
		    async_order(frames, h->nframes, tasks, ntasks, p->order) < 0) {
			p->drops.n[PROFILE_DROP_MALFORMED]++;
			return 0;
		}
		order = p->order;
	}
	/* the record is leaf first; stacks are interned root first */
	for (uint32_t k = 0; k < h->nframes; k++) {
		uint32_t i = order ? order[k] : h->nframes - 1 - k;
		int64_t sym, fid;

		if (order && frames[i].instr == PW_INSTR_TASK) {
			fid = task_frame(p, &tasks[frames[i].tag]);
			if (fid < 0)
				return (int)fid;
			p->entry[n] = false;
			p->ids[n++] = (uint32_t)fid;
			continue;
		}
		sym = symtab__resolve(p->symtab, &st, frames[i].code & ~PW_FRAME_ENTRY,
				      frames[i].tag);

		entry |= (frames[i].code & PW_FRAME_ENTRY) != 0;

		if (sym == -ENOMEM)
			return -ENOMEM;
		if (sym < 0) {
			/* never guess: a stack with an unreadable or since-replaced code object
			 * is not counted */
			p->drops.n[sym == -ESTALE   ? PROFILE_DROP_STALE
				   : sym == -EINVAL ? PROFILE_DROP_NOT_CODE
				   : sym == -ESRCH  ? PROFILE_DROP_EXITED
						    : PROFILE_DROP_UNREADABLE]++;
			return 0;
		}
		if (symtab__is_shim(p->symtab, sym))
			continue; /* an activation it starts starts at the next frame kept */
		fid = frame_id(p, sym, frames[i].instr);
		if (fid < 0)
			return (int)fid;
		p->entry[n] = entry;
		entry = false;
		p->ids[n++] = (uint32_t)fid;
	}
	/* native frames between and below the Python ones (root first, interleaved) */
	if (ns) {
		err = merge_native(p, ns, &n);
		if (err)
			return err < 0 ? err : 0;
		ids = p->mids;
	}
	/* kernel frames at the leaf, below the Python and native ones (a sample taken in user
	 * mode has none); a stack whose Python frames are all shims stays empty */
	if (parts.kstack && n) {
		err = add_kernel_frames(p, parts.kstack, ids, &n);
		if (err)
			return err;
	}
	if (h->probe == PW_PROBE_OFFCPU && p->opts.block_frames && n) {
		int64_t fid = block_frame(p, h->flags);

		if (fid < 0)
			return (int)fid;
		ids[n++] = (uint32_t)fid;
	}
	/* always keyed by thread: writers that group by thread need it, and the folded
	 * writer merges stacks that print alike when thread roots are off */
	err = note_thread(p, (uint32_t)proc, h->tid, h->time_ns);
	if (err)
		return err;
	if (!proc_at(p, (size_t)proc)->sampled) {
		/* the second process with samples: outputs tell processes apart from now on */
		proc_at(p, (size_t)proc)->sampled = true;
		p->nsampled++;
		if (p->nsampled > 1)
			p->opts.by_process = true;
	}
	probe = h->probe;
	weight = h->weight ? h->weight : 1;
	if (probe == PW_PROBE_OFFCPU)
		probe = 0; /* time off CPU, counted with the sampler's stacks (wall) */
	else if (probe == 0 && p->opts.value == PROFILE_VALUE_WALL_NS)
		weight *= sample_period_ns(p); /* a sample stands for a period on CPU */
	err = agg__add_at(
		p->agg,
		&(struct agg_who){
			.proc = (uint32_t)proc, .pid = h->pid, .tid = h->tid, .probe = probe },
		ids, n, weight, &stack);
	if (!err && p->opts.timeline)
		err = note_event(p, h->time_ns, event_ns(p, h->probe, weight), stack);
	if (!err && p->opts.on_stack)
		p->opts.on_stack(p->opts.on_stack_ctx, p, h, parts.sample_size, (uint32_t)proc, ids,
				 n);
	return err;
}

int profile__add_stack(struct profile *p, const struct agg_who *who, const uint32_t *ids,
		       uint32_t n, uint64_t weight)
{
	return agg__add(p->agg, who, ids, n, weight);
}

void profile__add_drops(struct profile *p, const struct profile_drops *d)
{
	for (int i = 0; i < PROFILE_DROP__COUNT; i++)
		p->drops.n[i] += d->n[i];
}

static int add_code(struct profile *p, const struct pw_code_hdr *h, size_t size)
{
	if (!p->owns_symtab)
		return 0; /* the owner of the shared cache takes it */
	{
		int64_t proc = proc_index(p, h->target);
		struct symtab_target st;
		int err;

		if (proc < 0 || proc_at(p, (size_t)proc)->shown.gone)
			return 0; /* a sample that needs it is counted when it comes */
		st = symtab_target_of(proc_at(p, (size_t)proc));
		err = symtab__add_record(p->symtab, &st, h, size);
		return err == -ENOMEM ? err : 0;
	}
}

int profile__add_record(struct profile *p, const void *data, size_t size)
{
	__u32 kind;

	if (size < sizeof(kind)) {
		p->drops.n[PROFILE_DROP_MALFORMED]++;
		return 0;
	}
	memcpy(&kind, data, sizeof(kind));
	if (kind == PW_REC_SAMPLE && size >= sizeof(struct pw_sample_hdr))
		return add_sample(p, data, size, NULL);
	if (kind == PW_REC_CODE && size >= sizeof(struct pw_code_hdr))
		return add_code(p, data, size);
	p->drops.n[PROFILE_DROP_MALFORMED]++;
	return 0;
}

int profile__add_sample_native(struct profile *p, const void *data, size_t size,
			       const struct native_stack *ns)
{
	if (size < sizeof(struct pw_sample_hdr)) {
		p->drops.n[PROFILE_DROP_MALFORMED]++;
		return 0;
	}
	return add_sample(p, data, size, ns);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

/* A profile's times are on a time line: the wall clock read once, at its start, then the
 * time elapsed since on CLOCK_BOOTTIME, which a step of the wall clock (date -s, an NTP
 * step) does not move and which counts a suspend. So a duration is the time that passed,
 * and a window's end is the next one's start: windows stay in order and never overlap
 * whatever the wall clock does. When a window closes with the wall clock ahead of the line
 * by more than this (stepped forward), the next window starts at the clock, after a gap;
 * behind it (stepped back), the line goes on, ahead of the clock, rather than start a
 * window before the ones already closed. Below it, the two clocks' readings' jitter. */
#define WALL_AHEAD_FOLLOWED_NS (100 * 1000000ull)

/* Stamp the start: the wall clock first, so that a delay between the two readings puts the
 * line behind the clock, never ahead: a later window finds the clock ahead of it by that
 * delay at most, which is far below WALL_AHEAD_FOLLOWED_NS. */
static void stamp_start(struct profile *p, uint32_t frequency_hz)
{
	uint64_t wall = wall_ns();

	profile__set_sampling(p, frequency_hz, wall, 0);
	p->start_boot_ns = clock_ns(CLOCK_BOOTTIME);
}

/* Where p's time line is at `boot_ns`. */
static uint64_t line_at(const struct profile *p, uint64_t boot_ns)
{
	if (!p->start_boot_ns)
		return wall_ns();
	return p->sampling.start_ns + (boot_ns > p->start_boot_ns ? boot_ns - p->start_boot_ns : 0);
}

void profile__start_sampling(struct profile *p, uint32_t frequency_hz)
{
	stamp_start(p, frequency_hz);
}

void profile__stop_sampling(struct profile *p)
{
	p->sampling.end_ns = line_at(p, clock_ns(CLOCK_BOOTTIME));
}

void profile__set_sampling(struct profile *p, uint32_t frequency_hz, uint64_t start_ns,
			   uint64_t end_ns)
{
	p->sampling = (struct profile_sampling){ .frequency_hz = frequency_hz,
						 .start_ns = start_ns,
						 .end_ns = end_ns };
	p->start_boot_ns = 0;
}

const struct profile_sampling *profile__sampling(const struct profile *p)
{
	return &p->sampling;
}

uint64_t profile__period_ns(const struct profile *p)
{
	return profile__counts_ns(p) ? 1 : sample_period_ns(p);
}

bool profile__counts_ns(const struct profile *p)
{
	return p->opts.value != PROFILE_VALUE_SAMPLES;
}

const char *profile__value_name(const struct profile *p)
{
	switch (p->opts.value) {
	case PROFILE_VALUE_OFFCPU_NS:
		return "off_cpu";
	case PROFILE_VALUE_WALL_NS:
		return "wall";
	default:
		return "cpu";
	}
}

uint64_t profile__duration_ns(const struct profile *p)
{
	uint64_t end =
		p->sampling.end_ns ? p->sampling.end_ns : line_at(p, clock_ns(CLOCK_BOOTTIME));

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

const struct profile_event *profile__timeline(const struct profile *p, size_t *n)
{
	*n = p->nevents;
	return p->events;
}

uint64_t profile__timeline_dropped(const struct profile *p)
{
	return p->events_dropped;
}

void profile__run_drops(const struct profile *p, struct profile_drops *out)
{
	for (int i = 0; i < PROFILE_DROP__COUNT; i++)
		out->n[i] = p->drops.n[i] + p->rotated_drops.n[i];
}

uint64_t profile__dropped(const struct profile *p)
{
	uint64_t n = 0;

	for (int i = 0; i < PROFILE_DROP__COUNT; i++)
		n += p->drops.n[i];
	return n;
}

static const struct {
	const char *name, *text;
} drop_reasons[PROFILE_DROP__COUNT] = {
	[PROFILE_DROP_EXITED] = { "exited", "of processes that had exited before their code "
					    "objects were read" },
	[PROFILE_DROP_UNREADABLE] = { "unreadable", "with a code object that could not be "
						    "read from its live process" },
	[PROFILE_DROP_NOT_CODE] = { "not_code", "whose code object had been freed (no code "
						"object at its address)" },
	[PROFILE_DROP_STALE] = { "stale", "whose code object had been freed and its address "
					  "reused by another" },
	[PROFILE_DROP_MALFORMED] = { "malformed", "malformed" },
	[PROFILE_DROP_UNTRACKED] = { "untracked", "of untracked processes" },
	[PROFILE_DROP_NO_KSTACK] = { "no_kernel_stack", "whose kernel stack record never came "
							"(--kernel)" },
	[PROFILE_DROP_NO_USTACK] = { "no_native_stack", "whose native stack record never came "
							"(--native)" },
	[PROFILE_DROP_NATIVE_INCOMPLETE] = { "native_incomplete",
					     "whose native stack could not be unwound to its "
					     "first frame (--native)" },
	[PROFILE_DROP_NATIVE_MISMATCH] = { "native_mismatch",
					   "whose native eval-loop activations and Python entry "
					   "frames did not pair up (--native)" },
	[PROFILE_DROP_NATIVE_EVAL_UNNAMED] = { "native_eval_unnamed",
					       "of an interpreter whose symbols do not name its "
					       "eval loop (--native: install its debug symbols)" },
	[PROFILE_DROP_NATIVE_DEEP] = { "native_deep",
				       "with more eval-loop activations than --native matches "
				       "(64)" },
};
_Static_assert(PW_USTACK_SHIMS == 64, "the native_deep text names the bound");

const char *profile_drop_name(enum profile_drop d)
{
	return drop_reasons[d].name;
}

const char *profile_drop_text(enum profile_drop d)
{
	return drop_reasons[d].text;
}

const struct profile_process *profile__process(const struct profile *p, uint32_t proc)
{
	return proc < intern_count(&p->procs) ? &proc_at(p, proc)->shown : NULL;
}

size_t profile__nprocesses(const struct profile *p)
{
	return intern_count(&p->procs);
}

static const struct thread_name *thread_at(const struct profile *p, uint32_t proc, uint32_t tid)
{
	struct thread_key k = { proc, tid };
	int64_t id = intern_find(&p->threads, hash_mix64((uint64_t)proc << 32 | tid), &k);

	return id >= 0 ? intern_at(&p->threads, (size_t)id) : NULL;
}

const char *profile__proc_thread_name(const struct profile *p, uint32_t proc, uint32_t tid)
{
	const struct thread_name *t = thread_at(p, proc, tid);

	return !t ? "?" : t->pyname[0] ? t->pyname : t->comm;
}

const char *profile__proc_thread_os_name(const struct profile *p, uint32_t proc, uint32_t tid)
{
	const struct thread_name *t = thread_at(p, proc, tid);

	return t ? t->comm : "?";
}

const struct profile_names *profile__names(const struct profile *p)
{
	return &p->names;
}

const char *profile__thread_name(const struct profile *p, uint32_t target, uint32_t tid)
{
	int64_t proc = proc_index(p, target);

	return proc < 0 ? "?" : profile__proc_thread_name(p, (uint32_t)proc, tid);
}

const struct symtab_stats *profile__symtab_stats(const struct profile *p)
{
	return symtab__stats(p->symtab);
}

void profile__process_tag(const struct profile *p, uint32_t proc, char *buf, size_t size)
{
	const struct profile_process *pr = profile__process(p, proc);
	size_t n;

	if (!pr) {
		snprintf(buf, size, " (?)");
		return;
	}
	n = (size_t)snprintf(buf, size, " (%d", pr->pid);
	if (n < size && pr->nspid != pr->pid)
		n += (size_t)snprintf(buf + n, size - n, ", ns %d", pr->nspid);
	if (n < size && pr->container[0])
		n += (size_t)snprintf(buf + n, size - n, ", container %.12s", pr->container);
	if (n < size)
		snprintf(buf + n, size - n, ")");
}

/* An empty profile borrowing p's symbol cache, with p's live processes (new indexes). */
static struct profile *new_borrower(const struct profile *p)
{
	struct profile *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->opts = p->opts;
	n->opts.on_stack = NULL;
	n->procs = (struct intern)INTERN_INIT(struct proc, proc_eq);
	n->threads = (struct intern)INTERN_INIT(struct thread_name, thread_eq);
	n->fcache = (struct intern)INTERN_INIT(struct frame_cache_entry, fcache_eq);
	n->kcache = (struct intern)INTERN_INIT(struct kcache_entry, kcache_eq);
	n->fcache_max = p->fcache_max;
	n->symtab = p->symtab;
	n->agg = agg__new();
	if (!n->agg)
		goto fail;
	for (size_t i = 0; i < intern_count(&p->procs); i++) {
		struct proc pr = *proc_at(p, i);

		if (pr.shown.gone)
			continue;
		pr.sampled = false;
		if (intern_add(&n->procs, hash_mix64(pr.shown.target), &pr) < 0)
			goto fail;
	}
	/* the names of the threads of live processes sampled in p: a thread with one sample
	 * in the next window is named as it was, without waiting for the next read */
	for (size_t i = 0; i < intern_count(&p->threads); i++) {
		struct thread_name t = *(const struct thread_name *)intern_at(&p->threads, i);
		int64_t proc = proc_index(n, proc_at(p, t.proc)->shown.target);

		if (!t.sampled || proc < 0)
			continue;
		t.proc = (uint32_t)proc;
		t.sampled = false;
		if (intern_add(&n->threads, hash_mix64((uint64_t)t.proc << 32 | t.tid), &t) < 0)
			goto fail;
	}
	return n;
fail:
	profile__free(n);
	return NULL;
}

struct profile *profile__rotate(struct profile *p)
{
	struct profile *w = new_borrower(p), tmp;
	/* the wall clock first, as in stamp_start */
	uint64_t wall = wall_ns(), boot = clock_ns(CLOCK_BOOTTIME), end;

	if (!w)
		return NULL;
	/* swap the bodies: w takes what p counted (its processes, names and drops, the cache
	 * borrowed), p goes on with the live processes, nothing counted, the cache its own */
	tmp = *p;
	*p = *w;
	*w = tmp;
	p->owns_symtab = true;
	w->owns_symtab = false;
	p->opts = w->opts;
	/* the window's drops go with it; the run's summary still counts them */
	for (int i = 0; i < PROFILE_DROP__COUNT; i++)
		p->rotated_drops.n[i] = w->rotated_drops.n[i] + w->drops.n[i];
	end = line_at(w, boot);
	w->sampling.end_ns = end;
	p->sampling = (struct profile_sampling){
		.frequency_hz = w->sampling.frequency_hz,
		.start_ns = w->start_boot_ns && wall > end + WALL_AHEAD_FOLLOWED_NS ? wall : end
	};
	p->start_boot_ns = boot;
	return w;
}

void profile__collect_names(struct profile *const *ps, size_t n)
{
	struct symtab *st = n ? ps[0]->symtab : NULL;
	struct symtab_gc *gc;

	if (!st || !symtab__names_due(st) || !(gc = symtab__gc_begin(st)))
		return;
	for (size_t i = 0; i < n; i++) {
		const struct agg *agg = ps[i]->agg;

		/* the kernel's mapping id is cached apart from the frames that use it */
		symtab__gc_keep(gc, SYMTAB_NO_FUNC, ps[i]->kernel_map);
		for (size_t f = 0; f < agg__nframes(agg); f++) {
			const struct agg_frame *fr = agg__frame(agg, (uint32_t)f);

			symtab__gc_keep(gc, fr->func, fr->map);
		}
	}
	symtab__gc_end(st, gc);
}

struct profile *profile__new_tap(const struct profile *p)
{
	struct profile *t = new_borrower(p);

	if (t)
		stamp_start(t, p->sampling.frequency_hz);
	return t;
}
