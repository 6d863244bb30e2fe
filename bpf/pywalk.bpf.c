// SPDX-License-Identifier: GPL-2.0 OR MIT
/* BPF side of pywalk. The sampler (perf events) finds the sampled thread's PyThreadState,
 * walks its Python frames with walk.h and ships the stack only when the walk proved it
 * complete, preceded by a code record (code.h) for each code object this CPU has not shipped
 * before. The sched programs follow processes: a fork child of a target inherits its
 * config here, at once; an exec or the exit of a target removes its config before its PID
 * can be reused, and userspace is told through the same ring buffer, after the last sample
 * of that process. Every sampler run ends in exactly one outcome counter. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

/* libbpf before 1.2 has no sixth-argument accessors; x86-64 passes it in r9 (for a
 * syscall as well). */
#ifndef PT_REGS_PARM6
#define PT_REGS_PARM6(x) (((const struct pt_regs *)(x))->r9)
#endif
#ifndef PT_REGS_PARM6_CORE_SYSCALL
#define PT_REGS_PARM6_CORE_SYSCALL(x) BPF_CORE_READ((const struct pt_regs *)(x), r9)
#endif

#define PW_INLINE static __always_inline
#define PW_READ_USER(dst, size, addr) \
	bpf_probe_read_user((dst), (size), (const void *)(unsigned long)(addr))
#include "walk.h"
#include "async.h"
#include "gil.h"
#include "code.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

const volatile __u32 max_depth = PW_DEFAULT_MAX_DEPTH;
/* Every process on the host is followed (--all): report every exec and exit, and every
 * fork child of a target inherits its config. */
const volatile bool follow_all = false;
/* Ship code records (off only in benchmarks that measure the walk alone). */
const volatile bool capture_code = true;
/* trace --print: every probe fills its hit, and samples carry it (struct pw_print_args) */
const volatile bool print_args = false;
/* --async: a sample of a thread running an asyncio task carries the task's chain (async.h);
 * never with --print or --aggregate, which are trace's */
const volatile bool async_wanted = false;

/* 100 ms: at a high sample rate most of the consumer's CPU goes to its wakeups (epoll's
 * return path), and a longer interval wakes it less often. Userspace polls every 100 ms
 * anyway, and 1 MiB waiting wakes it early, so the ring buffer (4 MiB and up) never waits
 * on it. */
#define PW_WAKEUP_NS (100 * 1000 * 1000)
#define PW_WAKEUP_BYTES (1 << 20)
/* Code records one sample may ship; the rest go with later samples of the same stack. */
#define PW_CODE_PER_SAMPLE 16
/* Per-CPU memory of shipped (target, code, tag): direct-mapped, a power of two. */
#define PW_SEEN_SLOTS 8192

/* What a trace probe's hit offers --filter: the arguments, the return value and the
 * tracepoint's record, filled only for probes that have a filter. */
/* struct pw_hit and pw_filter_run: filter_run.h, shared with the unit tests */
#define PW_FILTER_PID() (bpf_get_current_pid_tgid() >> 32)
#define PW_FILTER_TID() ((__u32)bpf_get_current_pid_tgid())
#define PW_FILTER_RUN_DECL __noinline int
#include "filter_run.h"

struct scratch {
	__u8 tstate[PW_TSTATE_READ_MAX] __attribute__((aligned(8)));
	struct pw_walk walk_state; /* the frame walk's state */
	struct pw_walkmem walk;	   /* the data-stack window and the tags of one walk */
	struct pw_async async;	   /* --async: the chain walk's state and what it read */
	struct pw_asyncmem async_mem;
	__u64 async_coro_frame; /* the running task's coroutine frame, for the walk to find */
	__u32 async_split;	/* frames up to and including it (0: not on the stack) */
	struct pw_hit hit;
	struct pw_agg_key agg_key; /* --aggregate: the hit's key */
	struct pw_agg_frames_key agg_fkey;
	struct pw_agg_first agg_first; /* shipped with the sample after it */
	struct pw_sample sample;
	struct pw_kstack kstack; /* --kernel: shipped just before the sample */
	__u8 code_rec[PW_CODE_REC_BUF] __attribute__((aligned(8)));
	__u64 seen[PW_SEEN_SLOTS];
	__u64 last_wakeup_ns; /* when this CPU last woke the consumer */
	__u32 busy;	      /* a walk is using this scratch (see sample_python) */
};
_Static_assert(__builtin_offsetof(struct scratch, sample) ==
		       __builtin_offsetof(struct scratch, agg_first) + sizeof(struct pw_agg_first),
	       "a first record is its header and the sample, shipped as one");

/* Sized at load from the need (loader.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct pw_proc);
} procs SEC(".maps");

/* --async: where the tasks of a process are (host tgid -> its _asyncio table's offsets, for
 * the lifetime pw_async_off.target), written by userspace once the program has imported
 * asyncio; sized at load like procs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct pw_async_off);
} async_procs SEC(".maps");

/* See PW_TARGET_BITS: the early exit of a non-target is one load of this. */
__u64 target_bits[PW_TARGET_BITS / 64];

/* The config of process `tgid`, or NULL when it is not a target. */
static __always_inline const struct pw_proc *lookup_target(__u32 tgid)
{
	if (!tgid || !(target_bits[PW_TARGET_WORD(tgid)] & PW_TARGET_BIT(tgid)))
		return NULL;
	return bpf_map_lookup_elem(&procs, &tgid);
}

/* Followed processes (tgid -> PW_FOLLOW_*), targets or not (a shell that starts Python):
 * their execs and exits are reported, and with PW_FOLLOW_CHILDREN their fork children are
 * followed alike. Not used with follow_all. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} family SEC(".maps");

/* (target << 32 | tid) -> PyThreadState address; re-checked against the thread id on use.
 * Keyed by target, not PID, so no entry outlives the process lifetime it was found in. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PW_MAX_PROBES *PW_NSLOTS);
	__type(key, __u32);
	__type(value, __u64);
} outcomes SEC(".maps");

/* The next kernel-assigned target id (PW_TARGET_KERNEL_BIT | n). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} next_target SEC(".maps");

/* One slot per CPU, indexed by CPU id; too big for a per-CPU map value. Sized at load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&outcomes, &which);

	if (c)
		*c += 1;
}

#define count_counter(c) count(PW_COUNTER_INDEX(c))

/* Outcome or counter `slot` of probe `probe` (PW_MAX_PROBES rows). */
static __always_inline void count_probe(__u32 probe, __u32 slot)
{
	if (probe < PW_MAX_PROBES)
		count(PW_SLOT(probe, slot));
}

#include "agg_count.h"
#include "ustack.h"

/* ---- sampler ------------------------------------------------------------------------- */

struct tfind_ctx {
	struct pw_tfind tf;
	const struct pw_proc *cfg;
};

static long tfind_cb(__u32 index __attribute__((unused)), void *data)
{
	struct tfind_ctx *c = data;

	return pw_tfind_step(&c->tf, c->cfg);
}

/* The context of the loops of one sample (the frame walk, and with --async the chain's
 * walk and splice): one on the stack for all of them, since the sampler's stack and the
 * frames of the functions its loops call must fit the kernel's 512 bytes together. */
struct walk_ctx {
	struct pw_walk *w; /* the walk's state (in the scratch) */
	const struct pw_proc *cfg;
	struct scratch *s;   /* frames go to its record (and, --aggregate, into its key's hash);
			    * its walk memory is the window and the tags */
	struct pw_ustack *u; /* --native: the entry frames passed go to its list */
	const struct pw_async_off *o; /* --async: the process's task table */
	__u32 top;		      /* --async: the frames of the stack */
	__u32 nblock;		      /* the chain's block, to go after the task's frames */
};

/* One frame. A global function: the verifier checks it once, on its own, instead of once
 * per path through the loop around it, which keeps loading fast. */
__noinline int walk_frame(struct pw_walk *w, const struct pw_proc *cfg, struct pw_walkmem *m)
{
	if (!w || !cfg || !m)
		return 1;
	return pw_walk_step(w, cfg, m);
}

static long walk_cb(__u32 index __attribute__((unused)), void *data)
{
	struct walk_ctx *c = data;
	struct pw_walk *w = c->w;
	__u64 at = w->frame;
	int done = walk_frame(w, c->cfg, &c->s->walk);
	__u32 idx = w->nframes - 1;

	/* a step that goes on without a frame to ship passed an entry frame */
	if (native_stack && c->u && !done && !w->emit)
		ustack_note_shim(c->u, at);

	/* --async: the running task's frames end at its coroutine's (0: none to find) */
	if (async_wanted && w->emit && at == c->s->async_coro_frame)
		c->s->async_split = w->nframes;
	if (w->emit && idx < PW_MAX_FRAMES_CAP) {
		c->s->sample.frames[idx] = w->cur;
		if (aggregate)
			c->s->agg_key.stack = agg_fold(c->s->agg_key.stack, &w->cur);
	}
	/* --native: the root-most frame of each eval-loop activation (PW_FRAME_ENTRY): a 3.11
	 * frame with is_entry, the frame a 3.12+ entry shim (a step that emits nothing)
	 * follows, every 3.10 frame (one activation each) */
	if (native_stack && idx < PW_MAX_FRAMES_CAP && w->nframes &&
	    (w->last_was_entry || (w->emit && c->cfg->chain_kind == PW_CHAIN_FRAMEOBJ)))
		c->s->sample.frames[idx].code |= PW_FRAME_ENTRY;
	return done ? 1 : 0;
}

/* Ship one code record. A global function, verified once. Returns 1 when shipped. */
__noinline int ship_code(struct scratch *s, const struct pw_proc *cfg, __u32 pid,
			 const struct pw_frame *f)
{
	__u32 len;

	if (!s || !cfg || !f)
		return 0;
	len = pw_code_capture(cfg, pid, f->code & ~PW_FRAME_ENTRY, f->tag, s->code_rec);
	if (!len) {
		count_counter(PW_CNT_CODE_UNREADABLE);
		return 0;
	}
	if (len > PW_CODE_REC_BUF)
		return 0;
	if (bpf_ringbuf_output(&events, s->code_rec, len, BPF_RB_NO_WAKEUP)) {
		count_counter(PW_CNT_CODE_LOST);
		return 0;
	}
	count_counter(PW_CNT_CODE_SENT);
	return 1;
}

struct code_ctx {
	struct scratch *s;
	const struct pw_proc *cfg;
	__u32 pid, nframes, budget;
};

static __always_inline __u64 seen_key(__u32 target, const struct pw_frame *f)
{
	__u64 k = ((f->code & ~PW_FRAME_ENTRY) ^ ((__u64)f->tag << 32) ^ target) *
		  0x9e3779b97f4a7c15ull;

	return k | 1; /* never 0, the empty slot */
}

/* Step i of the code-record loop: frame i, or the walk's i-th first-seen (code, tag) when
 * it listed them all (then the other frames repeat those). */
static long code_cb(__u32 i, void *data)
{
	struct code_ctx *c = data;
	const struct pw_walkmem *m = &c->s->walk;
	const struct pw_frame *f;
	__u64 key;
	__u32 slot;

	if (m->nfresh <= PW_TAGMEMO_SLOTS) {
		if (i >= m->nfresh)
			return 1;
		i = m->fresh[i & (PW_TAGMEMO_SLOTS - 1)];
	}
	if (i >= c->nframes || i >= PW_MAX_FRAMES_CAP || !c->budget)
		return 1;
	f = &c->s->sample.frames[i];
	if (async_wanted && f->instr == PW_INSTR_TASK)
		return 0; /* --async: a task's mark, no code object */
	key = seen_key(c->cfg->target, f);
	slot = (__u32)(key >> 40) & (PW_SEEN_SLOTS - 1);
	if (c->s->seen[slot] == key)
		return 0;
	c->budget--;
	if (ship_code(c->s, c->cfg, c->pid, f))
		c->s->seen[slot] = key;
	return 0;
}

/* The id the thread states hold for this thread: the TID as the process sees it (its own
 * pid namespace's, in a container), or fsbase on 3.10. */
static __always_inline __u64 current_thread_id(const struct pw_proc *cfg, __u32 tid)
{
	struct task_struct *task;

	if (cfg->thread_match == PW_MATCH_NATIVE_TID) {
		struct pid *p;
		unsigned int level;

		if (!(cfg->flags & PW_PROCF_NSPID))
			return tid;
		/* gettid() in the process's own namespace: the innermost level of its pid */
		task = bpf_get_current_task_btf();
		p = BPF_CORE_READ(task, thread_pid);
		level = BPF_CORE_READ(p, level);
		return (__u32)BPF_CORE_READ(p, numbers[level & 31].nr);
	}
#if defined(__TARGET_ARCH_x86)
	/* 3.10: tstate->thread_id is pthread_self(), which glibc makes the TCB = fsbase */
	task = bpf_get_current_task_btf();
	return BPF_CORE_READ(task, thread.fsbase);
#else
	return 0;
#endif
}

static __always_inline int read_tstate(struct scratch *s, const struct pw_proc *cfg, __u64 tstate)
{
	__u32 size = cfg->off.tstate_read_size;

	if (size > PW_TSTATE_READ_MAX)
		size = PW_TSTATE_READ_MAX;
	return bpf_probe_read_user(s->tstate, size, (const void *)(unsigned long)tstate);
}

static __always_inline __u64 tstate_thread_id(const struct scratch *s, const struct pw_proc *cfg)
{
	if (cfg->thread_match == PW_MATCH_NATIVE_TID)
		return pw_load_u32(s->tstate, cfg->off.tstate_thread_id, PW_TSTATE_READ_MAX);
	return pw_load_u64(s->tstate, cfg->off.tstate_thread_id, PW_TSTATE_READ_MAX);
}

/* The GIL is read only for the modes that use it (--mode gil, --gil-stats): up to three
 * reads a sample that every other profile would pay for nothing. */
const volatile bool gil_wanted = false;

/* Whether the thread state holds the GIL (PW_SF_GIL_*). A global function: its reads get
 * a stack frame of their own, beside the walk's rather than on top of the sampler's. */
__noinline int gil_flags(const struct scratch *s, const struct pw_proc *cfg, __u64 tstate)
{
	if (!gil_wanted || !s || !cfg)
		return 0;
	return pw_gil_flags(cfg, s->tstate, tstate);
}

/* --kernel: every sample is shipped after its kernel stack (a record of its own). Off, the
 * programs never call bpf_get_stack. */
const volatile bool kernel_stacks = false;

/* Ship the kernel stack of the sample s->sample.hdr is about to be (its tid and time):
 * bpf_get_stack on the program's own context, which every program type here (perf_event,
 * tracepoint, raw_tp, tp_btf, uprobe) may pass. A sample taken in user mode (and a uprobe,
 * whose registers are the user's) has an empty one, which is no error. 0 or the outcome
 * that ends the sample. */
static __always_inline __u32 ship_kstack(void *ctx, struct scratch *s)
{
	long n = bpf_get_stack(ctx, s->kstack.ips, sizeof(s->kstack.ips), 0);

	if (n < 0)
		return PW_OUT_KSTACK_FAULT;
	if (n > (long)sizeof(s->kstack.ips))
		n = sizeof(s->kstack.ips);
	s->kstack.hdr.kind = PW_REC_KSTACK;
	s->kstack.hdr.tid = s->sample.hdr.tid;
	s->kstack.hdr.time_ns = s->sample.hdr.time_ns;
	s->kstack.hdr.len = (__u32)n;
	s->kstack.hdr.pad = 0;
	/* the sample follows at once: its wakeup (if any) wakes the consumer for both */
	if (bpf_ringbuf_output(&events, &s->kstack, sizeof(struct pw_stack_hdr) + (__u64)n,
			       BPF_RB_NO_WAKEUP))
		return PW_OUT_LOST;
	return 0;
}

/* The thread state of thread id `want` found by a bounded walk of the interpreters' thread
 * lists, cached under `key` and read into s->tstate. */
static __always_inline __u8 find_thread_state_slow(struct scratch *s, const struct pw_proc *cfg,
						   __u64 key, __u64 want, __u64 *tstate)
{
	struct tfind_ctx tc = { .cfg = cfg };

	if (pw_tfind_init(&tc.tf, cfg, want))
		return PW_OUT_READ_FAULT;
	bpf_loop(PW_MAX_THREAD_WALK, tfind_cb, &tc, 0);
	if (tc.tf.err)
		return PW_OUT_READ_FAULT;
	if (!tc.tf.found)
		return PW_OUT_NO_TSTATE;
	*tstate = tc.tf.found;
	bpf_map_update_elem(&threads, &key, tstate, BPF_ANY);
	if (read_tstate(s, cfg, *tstate))
		return PW_OUT_READ_FAULT;
	return PW_OUT__CONTINUE;
}

/* The thread state of thread `tid` (`*tstate`), read into s->tstate: the cached one when it
 * still names this thread (it may have been freed and reused by another), else found by a
 * bounded walk of the interpreters' thread lists. PW_OUT__CONTINUE or the outcome. */
static __always_inline __u8 find_thread_state(struct scratch *s, const struct pw_proc *cfg,
					      __u32 tid, __u64 *tstate)
{
	__u64 key = (__u64)cfg->target << 32 | tid;
	__u64 want = current_thread_id(cfg, tid), *cached;

	cached = bpf_map_lookup_elem(&threads, &key);
	if (cached) {
		*tstate = *cached;
		if (!read_tstate(s, cfg, *tstate) && tstate_thread_id(s, cfg) == want)
			return PW_OUT__CONTINUE;
	}
	return find_thread_state_slow(s, cfg, key, want, tstate);
}

/* Walk the Python frames of the thread state in s->tstate into s->sample.frames (leaf
 * first; s->walk_state.nframes of them). PW_OUT_SHIPPED when the walk proved the stack
 * complete, else the outcome that rejects it. */
static __always_inline __u8 walk_python(struct scratch *s, const struct pw_proc *cfg,
					struct walk_ctx *wc)
{
	__u64 current;
	__u8 outcome = pw_current_frame(cfg, s->tstate, &current);

	if (outcome != PW_OUT__CONTINUE)
		return outcome;
	wc->w = &s->walk_state;
	wc->cfg = cfg;
	wc->s = s;
	wc->u = ustack_walk_begin(cfg);
	s->agg_key.stack = agg_seed;
	pw_walk_start(&s->walk_state, &s->walk, cfg, s->tstate, current, max_depth);
	bpf_loop(pw_walk_bound(max_depth), walk_cb, wc, 0);
	if (s->walk_state.outcome == PW_OUT__CONTINUE)
		return PW_OUT_DEPTH;
	return s->walk_state.outcome;
}

/* ---- --async: the running task's chain (async.h) -------------------------------------- */

/* The task table of process `pid` for this lifetime (counted: none yet). */
static __always_inline const struct pw_async_off *async_table(__u32 pid, const struct pw_proc *cfg)
{
	const struct pw_async_off *o;

	if (!async_wanted || aggregate || print_args)
		return NULL;
	o = bpf_map_lookup_elem(&async_procs, &pid);
	if (o && o->target == cfg->target)
		return o;
	count_counter(PW_CNT_ASYNC_UNKNOWN);
	return NULL;
}

/* One step of the chain walk. A global function, verified once. */
__noinline int async_step(struct pw_async *a, const struct pw_proc *cfg,
			  const struct pw_async_off *o, struct pw_asyncmem *m,
			  struct pw_walkmem *wm)
{
	if (!a || !cfg || !o || !m || !wm)
		return 1;
	return pw_async_step(a, cfg, o, m, wm);
}

static long async_cb(__u32 index __attribute__((unused)), void *data)
{
	struct walk_ctx *c = data;

	return async_step(&c->s->async, c->cfg, c->o, &c->s->async_mem, &c->s->walk) ? 1 : 0;
}

/* Move the thread's frames below the task (from the root end) up past the block. */
static long splice_move_cb(__u32 i, void *data)
{
	struct walk_ctx *c = data;
	__u32 from = c->top - 1 - i, to = from + c->nblock;

	if (from >= PW_MAX_FRAMES_CAP || to >= PW_MAX_FRAMES_CAP)
		return 1;
	c->s->sample.frames[to] = c->s->sample.frames[from];
	return 0;
}

static long splice_copy_cb(__u32 i, void *data)
{
	struct walk_ctx *c = data;
	__u32 to = c->s->async_split + i;

	if (i >= PW_ASYNC_BLOCK_BUF || to >= PW_MAX_FRAMES_CAP)
		return 1;
	c->s->sample.frames[to] = c->s->async_mem.block[i];
	return 0;
}

/* The chain's task list after the frames (c->top of them, the block's included). */
static long names_cb(__u32 i, void *data)
{
	struct walk_ctx *c = data;
	__u8 *to;

	if (i >= PW_ASYNC_MAX_TASKS || c->top > PW_MAX_FRAMES_CAP)
		return 1;
	to = (__u8 *)&c->s->sample.frames[c->top] + i * sizeof(struct pw_task_name);
	__builtin_memcpy(to, &c->s->async_mem.names[i], sizeof(struct pw_task_name));
	return 0;
}

/* Before the frame walk: the task the thread runs (pw_async_begin), whose coroutine frame
 * the walk then looks for (s->async_coro_frame, 0: none); wc->o is the process's task
 * table (NULL: none known). PW_OUT__CONTINUE or the outcome that rejects the sample. */
static __always_inline __u8 async_begin_sample(struct scratch *s, const struct pw_proc *cfg,
					       __u32 pid, __u64 tstate, struct walk_ctx *wc)
{
	s->async_coro_frame = 0;
	s->async_split = 0;
	wc->o = async_table(pid, cfg);
	if (!wc->o)
		return PW_OUT__CONTINUE;
	switch (pw_async_begin(&s->async, wc->o, tstate)) {
	case 1:
		s->async_coro_frame = s->async.coro_frame;
		return PW_OUT__CONTINUE;
	case 0:
		return PW_OUT__CONTINUE;
	default:
		return s->async.outcome;
	}
}

/* After a complete walk (wc->top frames) of a thread running a task: the chain read and
 * put into the stack: after the running task's own frames (the first s->async_split, leaf
 * first) come the block's marks and awaiting tasks' frames, then the thread's frames below
 * the task, then the task list; wc->top is then the frames of the stack. Left as it is
 * when the task's coroutine was not on the stack: a task's step running Python outside
 * the task's coroutine (asyncio's own scheduling, called from C) has no place for it.
 * PW_OUT__CONTINUE or the outcome that rejects the sample. The loops run from here, not
 * from a subprogram: the chain's steps need the stack a subprogram's frame would take. */
static __always_inline __u8 async_end_sample(struct scratch *s, __u64 tstate, struct walk_ctx *wc)
{
	__u32 split = s->async_split;
	__u8 outcome;

	if (!split) {
		count_counter(PW_CNT_ASYNC_OUTSIDE);
		return PW_OUT__CONTINUE;
	}
	bpf_loop(PW_ASYNC_STEPS, async_cb, wc, 0);
	if (s->async.outcome != PW_OUT__CONTINUE)
		return s->async.outcome;
	if (s->async.phase != PW_APH_DONE)
		return PW_OUT_ASYNC_BOUND;
	outcome = pw_async_recheck(&s->async, wc->o, tstate);
	if (outcome != PW_OUT__CONTINUE)
		return outcome;
	wc->nblock = s->async.nblock;
	if (split > wc->top || wc->top + wc->nblock > PW_MAX_FRAMES_CAP ||
	    s->async.ntasks > PW_ASYNC_MAX_TASKS)
		return PW_OUT_ASYNC_BOUND;
	bpf_loop(wc->top - split, splice_move_cb, wc, 0);
	bpf_loop(wc->nblock, splice_copy_cb, wc, 0);
	wc->top += wc->nblock;
	bpf_loop(s->async.ntasks, names_cb, wc, 0);
	/* the frames moved: the code-record loop looks at every one, not the walk's list */
	s->walk.nfresh = PW_TAGMEMO_SLOTS + 1;
	count_counter(PW_CNT_ASYNC_RUNNING);
	return PW_OUT__CONTINUE;
}

/* --aggregate: count the hit in the kernel's map. PW_OUT_SHIPPED when counted there (nothing
 * more to ship), PW_OUT_AGG_FULL, or PW_OUT__CONTINUE to ship the sample. */
static __always_inline __u8 count_in_kernel(struct scratch *s, const struct pw_proc *cfg, __u32 tid,
					    __u32 probe, __u32 site, __u64 weight, __u32 nframes)
{
	int agg;

	s->agg_key.nframes = nframes;
	s->agg_key.target = cfg->target;
	s->agg_key.tid = tid;
	s->agg_key.probe = (__u16)probe;
	s->agg_key.site = (__u16)site;
	agg = agg_count(s, weight);
	if (agg == AGG_COUNTED)
		return PW_OUT_SHIPPED;
	if (agg == AGG_FULL)
		return PW_OUT_AGG_FULL;
	return PW_OUT__CONTINUE;
}

/* A record of each code object of the stack this CPU has not shipped yet (at most
 * PW_CODE_PER_SAMPLE): only a complete stack's are worth copying, and they go first, so
 * userspace has them when it reads the sample. */
static __always_inline void ship_code_records(struct scratch *s, const struct pw_proc *cfg,
					      __u32 pid, __u32 nframes)
{
	if (capture_code) {
		struct code_ctx cc = { .s = s,
				       .cfg = cfg,
				       .pid = pid,
				       .nframes = nframes,
				       .budget = PW_CODE_PER_SAMPLE };

		bpf_loop(PW_MAX_FRAMES_CAP, code_cb, &cc, 0);
	}
}

/* --native: the stack record goes before the sample, or neither does. Every program that
 * gets here runs in the context of the thread it walks (a sampled thread, a probe's hit, a
 * thread switching out or back from a wait), so the task's user registers are that
 * thread's: where it was interrupted, or where it resumes after the kernel. Sets
 * PW_SF_USTACK in *sflags when one was shipped. PW_OUT__CONTINUE or PW_OUT_LOST. */
static __always_inline __u8 ship_native_stack(struct scratch *s, __u32 tid, __u16 *sflags)
{
	__u32 cpu, ulen;
	struct pw_ustack *u;

	if (!native_stack)
		return PW_OUT__CONTINUE;
	cpu = bpf_get_smp_processor_id();
	u = bpf_map_lookup_elem(&ustack_scratch, &cpu);
	if (!u)
		return PW_OUT_LOST;
	ulen = ustack_fill(u, tid, s->sample.hdr.time_ns);
	if (!ulen)
		return PW_OUT__CONTINUE;
	if (ulen > sizeof(struct pw_ustack) ||
	    bpf_ringbuf_output(&events, u, ulen, BPF_RB_NO_WAKEUP))
		return PW_OUT_LOST;
	*sflags |= PW_SF_USTACK;
	return PW_OUT__CONTINUE;
}

/* trace --print: what the probe saw goes after the frames; returns the bytes added. */
static __always_inline __u64 append_print_args(struct scratch *s, __u32 nframes)
{
	struct pw_print_args *pa;

	if (!print_args || nframes > PW_PRINT_ARGS_MAX_FRAMES)
		return 0;
	pa = (void *)&s->sample.frames[nframes];
	__builtin_memcpy(pa->arg, s->hit.args, sizeof(pa->arg));
	pa->ret = (__s64)s->hit.ret;
	pa->nargs = s->hit.nargs;
	pa->has_ret = s->hit.has_ret;
	return sizeof(struct pw_print_args);
}

/* Waking the consumer costs an IPI and a context switch, several microseconds: wake it only
 * when this CPU's last wakeup is PW_WAKEUP_NS old or the buffer is filling up, which bounds
 * the delay before symbolization (code objects can die meanwhile). */
static __always_inline __u64 wakeup_flags(struct scratch *s, __u64 now, __u64 len)
{
	if (now - s->last_wakeup_ns >= PW_WAKEUP_NS ||
	    bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + len >= PW_WAKEUP_BYTES) {
		s->last_wakeup_ns = now;
		return BPF_RB_FORCE_WAKEUP;
	}
	return BPF_RB_NO_WAKEUP;
}

/* Ship the sample built in s->sample (`len` bytes), after its kernel stack (--kernel,
 * never with --aggregate: without it no sample) and, for the first hit of an --aggregate
 * key, with the header right before it that says which key it defines. */
static __always_inline __u32 ship_sample(void *ctx, struct scratch *s, __u64 len, __u64 flags)
{
	if (kernel_stacks && ctx) {
		__u32 out = ship_kstack(ctx, s);

		if (out)
			return out;
		s->sample.hdr.flags |= PW_SF_KSTACK;
	}
	if (aggregate && s->agg_first.kind == PW_REC_AGG_FIRST) {
		if (bpf_ringbuf_output(&events, &s->agg_first, sizeof(struct pw_agg_first) + len,
				       flags))
			return PW_OUT_LOST;
		agg_defined(s); /* its frames are on their way */
		return PW_OUT_SHIPPED;
	}
	if (bpf_ringbuf_output(&events, &s->sample, len, flags))
		return PW_OUT_LOST;
	return PW_OUT_SHIPPED;
}

/* The outcome of one sample of thread `tid` of Python process `pid` for probe `probe`,
 * counting `weight` (1, or nanoseconds for a latency); `sflags` (PW_SF_*) go with it, and
 * whether it holds the GIL. `ctx` is the program's context, for the kernel stack (NULL:
 * none is taken, the flag is not set). */
static __always_inline __u32 walk_and_ship(void *ctx, struct scratch *s, __u32 pid, __u32 tid,
					   const struct pw_proc *cfg, __u32 probe, __u32 site,
					   __u64 weight, __u16 sflags)
{
	struct walk_ctx wc = {};
	__u64 tstate = 0, len;
	__u32 nframes, ntasks = 0;
	__u8 outcome;

	outcome = find_thread_state(s, cfg, tid, &tstate);
	if (outcome != PW_OUT__CONTINUE)
		return outcome;
	if (async_wanted) {
		outcome = async_begin_sample(s, cfg, pid, tstate, &wc);
		if (outcome != PW_OUT__CONTINUE)
			return outcome;
	}
	outcome = walk_python(s, cfg, &wc);
	if (outcome != PW_OUT_SHIPPED)
		return outcome;
	nframes = s->walk_state.nframes;
	if (async_wanted && wc.o && s->async_coro_frame) {
		wc.top = nframes;
		outcome = async_end_sample(s, tstate, &wc);
		if (outcome != PW_OUT__CONTINUE)
			return outcome;
		if (s->async_split) {
			nframes = wc.top;
			ntasks = s->async.ntasks;
			sflags |= PW_SF_ASYNC;
		}
	}
	if (aggregate) {
		outcome = count_in_kernel(s, cfg, tid, probe, site, weight, nframes);
		if (outcome != PW_OUT__CONTINUE)
			return outcome;
	}
	ship_code_records(s, cfg, pid, nframes);

	s->sample.hdr.kind = PW_REC_SAMPLE;
	s->sample.hdr.time_ns = bpf_ktime_get_ns();
	outcome = ship_native_stack(s, tid, &sflags);
	if (outcome != PW_OUT__CONTINUE)
		return outcome;
	s->sample.hdr.tstate = tstate;
	s->sample.hdr.pid = pid;
	s->sample.hdr.tid = tid;
	s->sample.hdr.target = cfg->target;
	s->sample.hdr.nframes = nframes;
	s->sample.hdr.probe = (__u16)probe;
	s->sample.hdr.site = (__u16)site;
	s->sample.hdr.weight = weight;
	s->sample.hdr.flags = sflags | (__u16)gil_flags(s, cfg, tstate);
	/* --async: the task list async_end_sample put after the frames */
	len = sizeof(struct pw_sample_hdr) + (__u64)nframes * sizeof(struct pw_frame) +
	      (__u64)(ntasks & (2 * PW_ASYNC_MAX_TASKS - 1)) * sizeof(struct pw_task_name);
	if (len > sizeof(struct pw_sample))
		return PW_OUT_DEPTH;
	len += append_print_args(s, nframes);
	return ship_sample(ctx, s, len, wakeup_flags(s, s->sample.hdr.time_ns, len));
}

/* The scratch is per CPU, and a sampler's interrupt can land in another program's walk on
 * the same CPU (an NMI-driven hardware event inside the off-CPU walk, which no recursion
 * guard of the kernel covers for tracing programs): the second one is counted, never let
 * to write over the first's scratch. */
static __always_inline __u32 sample_python(void *ctx, __u32 pid, __u32 tid,
					   const struct pw_proc *cfg, __u32 probe, __u32 site,
					   __u64 weight, __u16 sflags)
{
	__u32 cpu = bpf_get_smp_processor_id(), outcome;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &cpu);

	if (!s)
		return PW_OUT_LOST;
	if (s->busy)
		return PW_OUT_NESTED;
	s->busy = 1;
	outcome = walk_and_ship(ctx, s, pid, tid, cfg, probe, site, weight, sflags);
	s->busy = 0;
	return outcome;
}

/* ---- trace probes ---------------------------------------------------------------------- */

/* Probes with a --filter (bit per probe id) and their programs. */
const volatile __u32 filter_probes = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PW_MAX_PROBES);
	__type(key, __u32);
	__type(value, struct pw_filter);
} filters SEC(".maps");

static __always_inline bool has_filter(__u32 probe)
{
	return probe < PW_MAX_PROBES && ((filter_probes >> probe) & 1);
}

/* Does the hit's program fill what the probe saw (for its filter, or --print)? */
static __always_inline bool wants_hit(__u32 probe)
{
	return print_args || has_filter(probe);
}

/* The hit of this CPU, for the programs of probes with a filter to fill. */
static __always_inline struct pw_hit *hit_buf(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct scratch *s = bpf_map_lookup_elem(&scratch, &cpu);

	if (!s)
		return NULL;
	/* keeps the compiler from adding the offset before the NULL check (the verifier
	 * refuses arithmetic on a pointer that may be NULL) */
	barrier_var(s);
	return &s->hit;
}

/* Does the hit pass its probe's filter? */
static __always_inline bool filter_pass(__u32 probe, struct pw_hit *hit)
{
	const struct pw_filter *f = bpf_map_lookup_elem(&filters, &probe);

	if (!f || !hit)
		return true;
	__builtin_memset((void *)hit->comm, 0, sizeof(hit->comm));
	bpf_get_current_comm((void *)hit->comm, sizeof(hit->comm));
	return pw_filter_run(f, hit);
}

/* A hit of probe `probe` (site `site`) in the current thread, counting `weight` (1, or
 * nanoseconds for a latency): every one ends in exactly one outcome. `hit` is what the
 * probe's filter looks at (NULL: it has none). */
static __always_inline void sample_current(void *ctx, __u32 probe, __u32 site, __u64 weight,
					   struct pw_hit *hit)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id;
	const struct pw_proc *cfg;

	count_probe(probe, PW_COUNTER_INDEX(PW_CNT_RUNS));
	cfg = lookup_target(pid);
	if (!cfg) {
		count_probe(probe, PW_OUT_NOT_TARGET);
		return;
	}
	if (has_filter(probe) && !filter_pass(probe, hit)) {
		count_probe(probe, PW_OUT_FILTERED);
		return;
	}
	count_probe(probe, sample_python(ctx, pid, tid, cfg, probe, site, weight, 0));
}

/* --latency: entry times per thread and probe, a small stack so that nesting and recursion
 * pair each return with its own entry. Deeper calls than this are counted, not paired. */
#define PW_LATENCY_DEPTH 16

struct pw_entries {
	__u64 t[PW_LATENCY_DEPTH]; /* 0: an entry the filter turned away */
	__u32 depth;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64); /* tid << 32 | probe */
	__type(value, struct pw_entries);
} entries SEC(".maps");

/* A new thread's entries, from read-only data: 136 bytes the BPF stack cannot spare. */
static const struct pw_entries no_entries;

/* Syscall number -> probes of sys_enter_NAME / sys_exit_NAME (PW_SYSCALL_VALUE; 0: none).
 * Syscalls come through the raw sys_enter/sys_exit tracepoints, which need no tracefs. */
#define PW_MAX_SYSCALLS 1024

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PW_MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, __u32);
} syscall_probes SEC(".maps");

/* Probes whose hits are entries of a --latency pair (bit per probe id). */
const volatile __u32 latency_probes = 0;

static __always_inline bool is_latency(__u32 probe)
{
	return probe < PW_MAX_PROBES && ((latency_probes >> probe) & 1);
}

/* An entry of a latency pair in a target: remember when (the filter decides here, where
 * the arguments are), ship nothing yet. Outside the targets nothing is counted: the return
 * counts the hit. */
static __always_inline void latency_enter(__u32 probe, struct pw_hit *hit)
{
	__u64 id = bpf_get_current_pid_tgid(), key = id << 32 | probe;
	__u32 pid = id >> 32;
	struct pw_entries *st;
	bool pass;

	if (!lookup_target(pid))
		return;
	pass = !has_filter(probe) || filter_pass(probe, hit);
	st = bpf_map_lookup_elem(&entries, &key);
	if (!st) {
		bpf_map_update_elem(&entries, &key, &no_entries, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&entries, &key);
		if (!st)
			return;
	}
	count_probe(probe, PW_COUNTER_INDEX(PW_CNT_LATENCY_ENTRIES));
	if (st->depth >= PW_LATENCY_DEPTH) {
		count_probe(probe, PW_COUNTER_INDEX(PW_CNT_LATENCY_DEEP));
		st->depth++;
		return;
	}
	st->t[st->depth & (PW_LATENCY_DEPTH - 1)] = pass ? bpf_ktime_get_ns() : 0;
	st->depth++;
}

/* A return of a latency pair (probe id of the pair): the nanoseconds inside (at least 1)
 * for the caller to sample with, or 0 when the hit ends here, counted. Callers sample at
 * one place only: every inlined copy of the walk takes BPF stack of its own. */
static __always_inline __u64 latency_exit(__u32 probe)
{
	__u64 id = bpf_get_current_pid_tgid(), key = id << 32 | probe;
	__u32 pid = id >> 32;
	struct pw_entries *st;
	__u64 t0, now;

	if (!lookup_target(pid)) {
		count_probe(probe, PW_COUNTER_INDEX(PW_CNT_RUNS));
		count_probe(probe, PW_OUT_NOT_TARGET);
		return 0;
	}
	st = bpf_map_lookup_elem(&entries, &key);
	if (!st || !st->depth) {
		/* attached while the call was in progress: no entry to pair with */
		count_probe(probe, PW_COUNTER_INDEX(PW_CNT_LATENCY_UNPAIRED));
		return 0;
	}
	st->depth--;
	if (st->depth >= PW_LATENCY_DEPTH)
		return 0; /* counted as too deep at its entry */
	t0 = st->t[st->depth & (PW_LATENCY_DEPTH - 1)];
	if (!t0) {
		count_probe(probe, PW_COUNTER_INDEX(PW_CNT_RUNS));
		count_probe(probe, PW_OUT_FILTERED);
		return 0;
	}
	now = bpf_ktime_get_ns();
	return now > t0 ? now - t0 : 1;
}

static __always_inline void probe_hit(void *ctx, __u32 probe, __u32 site, struct pw_hit *hit)
{
	if (is_latency(probe))
		latency_enter(probe, hit);
	else
		sample_current(ctx, probe, site, 1, hit);
}

/* The arguments of a function call (x86-64 ABI: the first six in registers), or at its
 * return (`ret`) its return value. */
static __always_inline struct pw_hit *call_hit(__u32 probe, struct pt_regs *ctx, bool ret)
{
	struct pw_hit *hit;

	if (!wants_hit(probe) || !(hit = hit_buf()))
		return NULL;
	hit->nargs = ret ? 0 : 6;
	hit->has_ret = ret;
	hit->args[0] = PT_REGS_PARM1(ctx);
	hit->args[1] = PT_REGS_PARM2(ctx);
	hit->args[2] = PT_REGS_PARM3(ctx);
	hit->args[3] = PT_REGS_PARM4(ctx);
	hit->args[4] = PT_REGS_PARM5(ctx);
	hit->args[5] = PT_REGS_PARM6(ctx);
	hit->ret = PT_REGS_RC(ctx);
	return hit;
}

/* uprobes, and kprobes where the kernel has them (the same program type) */
SEC("uprobe")
int on_uprobe(struct pt_regs *ctx)
{
	__u64 c = bpf_get_attach_cookie(ctx);

	probe_hit(ctx, PW_COOKIE_PROBE(c), PW_COOKIE_SITE(c),
		  call_hit(PW_COOKIE_PROBE(c), ctx, false));
	return 0;
}

/* The return of a --latency uprobe, attached with the pair's cookie; a uretprobe of its
 * own (no --latency) is a plain hit, its filter sees the return value. */
SEC("uretprobe")
int on_uretprobe(struct pt_regs *ctx)
{
	__u64 c = bpf_get_attach_cookie(ctx), weight = 1;
	__u32 probe = PW_COOKIE_PROBE(c), site = PW_COOKIE_SITE(c);
	struct pw_hit *hit = call_hit(probe, ctx, true);

	/* a latency pair's filter decided at the entry (the hit keeps the return value for
	 * --print) */
	if (is_latency(probe)) {
		weight = latency_exit(probe);
		if (!weight)
			return 0;
		hit = NULL;
	}
	sample_current(ctx, probe, site, weight, hit);
	return 0;
}

/* libbpf's USDT support keeps the attach cookie for its argument specs: ours comes from
 * bpf_usdt_cookie, and the arguments from the probe's note. */
SEC("usdt")
int on_usdt(struct pt_regs *ctx)
{
	__u64 c = bpf_usdt_cookie(ctx);
	__u32 probe = PW_COOKIE_PROBE(c);
	struct pw_hit *hit = NULL;

	if (wants_hit(probe) && (hit = hit_buf())) {
		for (int i = 0; i < 6; i++) {
			long v = 0;

			bpf_usdt_arg(ctx, i, &v);
			hit->args[i] = v;
		}
		hit->nargs = (__u32)bpf_usdt_arg_cnt(ctx);
		hit->has_ret = 0;
	}
	probe_hit(ctx, probe, PW_COOKIE_SITE(c), hit);
	return 0;
}

SEC("tracepoint")
int on_tracepoint(void *ctx)
{
	__u64 c = bpf_get_attach_cookie(ctx);
	__u32 probe = PW_COOKIE_PROBE(c);
	struct pw_hit *hit = NULL;

	/* the record as the filter's fields describe it (its format in tracefs) */
	if (wants_hit(probe) && (hit = hit_buf())) {
		bpf_probe_read_kernel(hit->rec, sizeof(hit->rec), ctx);
		hit->nargs = 0;
		hit->has_ret = 0;
	}
	probe_hit(ctx, probe, PW_COOKIE_SITE(c), hit);
	return 0;
}

static __always_inline __u32 syscall_entry(__u64 nr)
{
	__u32 key = (__u32)nr, *v;

	if (nr >= PW_MAX_SYSCALLS)
		return 0;
	v = bpf_map_lookup_elem(&syscall_probes, &key);
	return v ? *v : 0;
}

SEC("raw_tp/sys_enter")
int on_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 nr = ctx->args[1];
	__u32 v = syscall_entry(nr), probe = PW_SYSCALL_ENTER(v);
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
	struct pw_hit *hit = NULL;

	if (!probe)
		return 0;
	if (wants_hit(probe) && (hit = hit_buf())) {
		hit->nargs = 6;
		hit->has_ret = 0;
		hit->args[0] = PT_REGS_PARM1_CORE_SYSCALL(regs);
		hit->args[1] = PT_REGS_PARM2_CORE_SYSCALL(regs);
		hit->args[2] = PT_REGS_PARM3_CORE_SYSCALL(regs);
		hit->args[3] = PT_REGS_PARM4_CORE_SYSCALL(regs);
		hit->args[4] = PT_REGS_PARM5_CORE_SYSCALL(regs);
		hit->args[5] = PT_REGS_PARM6_CORE_SYSCALL(regs);
	}
	probe_hit(ctx, probe, (__u32)nr + 1, hit);
	return 0;
}

SEC("raw_tp/sys_exit")
int on_sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
	__u64 nr = BPF_CORE_READ(regs, orig_ax);
	__u32 v = syscall_entry(nr), probe = PW_SYSCALL_EXIT(v);
	struct pw_hit *hit = NULL;

	__u64 weight = 1;

	/* the exit of a --latency pair is the enter probe's return */
	if (PW_SYSCALL_PAIR(v)) {
		probe = PW_SYSCALL_ENTER(v);
		weight = latency_exit(probe);
		if (!weight)
			return 0;
		if (print_args && (hit = hit_buf())) {
			hit->ret = ctx->args[1]; /* for --print; the filter decided at the entry */
			hit->nargs = 0;
			hit->has_ret = 1;
			hit = NULL;
		}
	} else if (!probe) {
		return 0;
	} else if (wants_hit(probe) && (hit = hit_buf())) {
		hit->ret = ctx->args[1];
		hit->nargs = 0;
		hit->has_ret = 1;
	}
	sample_current(ctx, probe, (__u32)nr + 1, weight, hit);
	return 0;
}

SEC("perf_event")
int on_perf_event(struct bpf_perf_event_data *ctx)
{
	/* the sampler's perf events carry no cookie (probe 0); trace's software and hardware
	 * event probes carry theirs, and a filter of theirs sees no arguments */
	__u64 c = bpf_get_attach_cookie(ctx);
	struct pw_hit *hit;

	if (!c) {
		sample_current(ctx, 0, 0, 1, NULL);
		return 0;
	}
	hit = hit_buf();
	if (hit) {
		hit->nargs = 0;
		hit->has_ret = 0;
	}
	sample_current(ctx, PW_COOKIE_PROBE(c), PW_COOKIE_SITE(c), 1, hit);
	return 0;
}

#include "offcpu_switch.h"

/* ---- process lifecycle --------------------------------------------------------------- */

static __always_inline void ship_proc(__u32 event, __u32 pid, __u32 ppid, __u32 target,
				      __u32 parent_target)
{
	struct pw_proc_rec r = { .kind = PW_REC_PROC,
				 .event = event,
				 .time_ns = bpf_ktime_get_ns(),
				 .pid = pid,
				 .ppid = ppid,
				 .target = target,
				 .parent_target = parent_target };

	/* discovery latency matters (a process may live 30 ms): wake the consumer now */
	if (bpf_ringbuf_output(&events, &r, sizeof(r), BPF_RB_FORCE_WAKEUP))
		count_counter(PW_CNT_PROC_LOST);
	else
		count_counter(PW_CNT_PROC_SENT);
}

static __always_inline bool is_followed(__u32 tgid)
{
	return follow_all || bpf_map_lookup_elem(&family, &tgid);
}

static __always_inline bool follows_children(__u32 tgid)
{
	__u8 *how = follow_all ? NULL : bpf_map_lookup_elem(&family, &tgid);

	return follow_all || (how && *how == PW_FOLLOW_CHILDREN);
}

/* tp_btf programs get the tracepoint's arguments in ctx[], typed by the kernel's BTF */
SEC("tp_btf/sched_process_fork")
int on_fork(__u64 *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx[0];
	struct task_struct *child = (struct task_struct *)ctx[1];
	__u32 ptgid = parent->tgid, ctgid = child->tgid, zero = 0, *next;
	const struct pw_proc *pcfg;
	struct pw_proc cfg;
	__u8 how = PW_FOLLOW_CHILDREN;

	if (ctgid != (__u32)child->pid || !follows_children(ptgid))
		return 0; /* a new thread, or nobody asked for children */
	if (!follow_all)
		bpf_map_update_elem(&family, &ctgid, &how, BPF_ANY);
	pcfg = bpf_map_lookup_elem(&procs, &ptgid);
	if (!pcfg) {
		/* not Python (yet): the child tells us what it is when it execs */
		if (!follow_all)
			ship_proc(PW_PROC_FORK, ctgid, ptgid, 0, 0);
		return 0;
	}
	/* a fork child is a copy of its parent's memory: same runtime, same offsets */
	next = bpf_map_lookup_elem(&next_target, &zero);
	if (!next)
		return 0;
	cfg = *pcfg;
	cfg.target = PW_TARGET_KERNEL_BIT | (__sync_fetch_and_add(next, 1) + 1);
	__sync_fetch_and_or(&target_bits[PW_TARGET_WORD(ctgid)], PW_TARGET_BIT(ctgid));
	if (bpf_map_update_elem(&procs, &ctgid, &cfg, BPF_NOEXIST)) {
		count_counter(PW_CNT_PROC_FULL);
		cfg.target = 0;
	} else if (async_wanted) {
		/* and the same tasks' layout, if its parent had imported asyncio */
		const struct pw_async_off *po = bpf_map_lookup_elem(&async_procs, &ptgid);
		struct pw_async_off co;

		if (po && po->target == pcfg->target) {
			co = *po;
			co.target = cfg.target;
			bpf_map_update_elem(&async_procs, &ctgid, &co, BPF_ANY);
		}
	}
	ship_proc(PW_PROC_FORK, ctgid, ptgid, cfg.target, pcfg->target);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int on_exec(__u64 *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	__u32 tgid = p->tgid, target = 0;
	const struct pw_proc *cfg = bpf_map_lookup_elem(&procs, &tgid);

	if (cfg) {
		/* the image the config describes is gone */
		target = cfg->target;
		bpf_map_delete_elem(&procs, &tgid);
	} else if (!is_followed(tgid)) {
		return 0;
	}
	ship_proc(PW_PROC_EXEC, tgid, 0, target, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int on_exit(__u64 *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];
	__u32 tgid = p->tgid, target = 0;
	const struct pw_proc *cfg;
	bool followed;

	/* only the last thread of the process ends it */
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	cfg = bpf_map_lookup_elem(&procs, &tgid);
	followed = !follow_all && bpf_map_lookup_elem(&family, &tgid);
	if (followed)
		bpf_map_delete_elem(&family, &tgid);
	if (cfg) {
		target = cfg->target;
		bpf_map_delete_elem(&procs, &tgid);
	} else if (!followed && !follow_all) {
		return 0;
	}
	ship_proc(PW_PROC_EXIT, tgid, 0, target, 0);
	return 0;
}
