// SPDX-License-Identifier: GPL-2.0 OR MIT
/* BPF side of pywalk: on each perf event, find the sampled thread's PyThreadState, walk its
 * Python frames with walk.h, and ship the stack only when the walk proved it complete.
 * Every run ends in exactly one outcome counter. No strings are read here. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#define PW_INLINE static __always_inline
#define PW_READ_USER(dst, size, addr) \
	bpf_probe_read_user((dst), (size), (const void *)(unsigned long)(addr))
#include "walk.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

const volatile __u32 max_depth = PW_DEFAULT_MAX_DEPTH;

#define PW_WAKEUP_NS (10 * 1000 * 1000)
#define PW_WAKEUP_BYTES (1 << 20)

/* Index of the "program ran" counter in `outcomes`, after the outcome codes. */
#define PW_COUNTER_RUNS PW_OUT__COUNT

struct scratch {
	__u8 tstate[PW_TSTATE_READ_MAX] __attribute__((aligned(8)));
	struct pw_sample sample;
	__u64 last_wakeup_ns; /* when this CPU last woke the consumer */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct pw_proc);
} procs SEC(".maps");

/* (tgid << 32 | tid) -> PyThreadState address; re-checked against the thread id on use */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PW_OUT__COUNT + 1);
	__type(key, __u32);
	__type(value, __u64);
} outcomes SEC(".maps");

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

struct tfind_ctx {
	struct pw_tfind tf;
	const struct pw_proc *cfg;
};

static long tfind_cb(__u32 index __attribute__((unused)), void *data)
{
	struct tfind_ctx *c = data;

	return pw_tfind_step(&c->tf, c->cfg);
}

struct walk_ctx {
	struct pw_walk w;
	const struct pw_proc *cfg;
	struct pw_frame *out; /* the scratch record's frames */
};

/* One frame. A global function: the verifier checks it once, on its own, instead of once
 * per path through the loop around it, which keeps loading fast. */
__noinline int walk_frame(struct pw_walk *w, const struct pw_proc *cfg)
{
	if (!w || !cfg)
		return 1;
	return pw_walk_step(w, cfg);
}

static long walk_cb(__u32 index __attribute__((unused)), void *data)
{
	struct walk_ctx *c = data;
	int done = walk_frame(&c->w, c->cfg);
	__u32 idx = c->w.nframes - 1;

	if (c->w.emit && idx < PW_MAX_FRAMES_CAP)
		c->out[idx] = c->w.cur;
	return done ? 1 : 0;
}

static __always_inline __u64 current_thread_id(const struct pw_proc *cfg, __u32 tid)
{
	if (cfg->thread_match == PW_MATCH_NATIVE_TID)
		return tid;
#if defined(__TARGET_ARCH_x86)
	/* 3.10: tstate->thread_id is pthread_self(), which glibc makes the TCB = fsbase */
	struct task_struct *task = bpf_get_current_task_btf();

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

/* The outcome of one sample of thread `tid` of Python process `pid`. */
static __always_inline __u32 sample_python(__u32 pid, __u32 tid, const struct pw_proc *cfg)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 key = (__u64)pid << 32 | tid;
	struct walk_ctx wc = {};
	struct scratch *s;
	__u64 *cached, tstate = 0, want, current;
	__u64 len, now, flags;

	s = bpf_map_lookup_elem(&scratch, &cpu);
	if (!s)
		return PW_OUT_LOST;
	want = current_thread_id(cfg, tid);

	cached = bpf_map_lookup_elem(&threads, &key);
	if (cached) {
		tstate = *cached;
		/* the thread state may have been freed and reused by another thread */
		if (read_tstate(s, cfg, tstate) || tstate_thread_id(s, cfg) != want)
			tstate = 0;
	}
	if (!tstate) {
		struct tfind_ctx tc = { .cfg = cfg };

		if (pw_tfind_init(&tc.tf, cfg, want))
			return PW_OUT_READ_FAULT;
		bpf_loop(PW_MAX_THREAD_WALK, tfind_cb, &tc, 0);
		if (tc.tf.err)
			return PW_OUT_READ_FAULT;
		if (!tc.tf.found)
			return PW_OUT_NO_TSTATE;
		tstate = tc.tf.found;
		bpf_map_update_elem(&threads, &key, &tstate, BPF_ANY);
		if (read_tstate(s, cfg, tstate))
			return PW_OUT_READ_FAULT;
	}

	current = pw_load_u64(s->tstate, cfg->off.tstate_frame, PW_TSTATE_READ_MAX);
	if (cfg->off.cframe_current_frame != PW_OFF_NONE) {
		/* 3.11/3.12: tstate->cframe->current_frame */
		__u64 cframe = current;

		if (!cframe)
			return PW_OUT_EMPTY;
		if (bpf_probe_read_user(&current, sizeof(current),
					(const void *)(unsigned long)(cframe +
								      cfg->off.cframe_current_frame)))
			return PW_OUT_READ_FAULT;
	}

	wc.cfg = cfg;
	wc.out = s->sample.frames;
	pw_walk_init(&wc.w, cfg, s->tstate, current, max_depth);
	bpf_loop(pw_walk_bound(max_depth), walk_cb, &wc, 0);
	if (wc.w.outcome == PW_OUT__CONTINUE)
		return PW_OUT_DEPTH;
	if (wc.w.outcome != PW_OUT_SHIPPED)
		return wc.w.outcome;

	s->sample.hdr.time_ns = bpf_ktime_get_ns();
	s->sample.hdr.tstate = tstate;
	s->sample.hdr.pid = pid;
	s->sample.hdr.tid = tid;
	s->sample.hdr.nframes = wc.w.nframes;
	s->sample.hdr.flags = 0;
	len = sizeof(struct pw_sample_hdr) + (__u64)wc.w.nframes * sizeof(struct pw_frame);
	if (len > sizeof(struct pw_sample))
		return PW_OUT_DEPTH;
	/* Waking the consumer costs an IPI and a context switch, several microseconds: wake it
	 * only when this CPU's last wakeup is PW_WAKEUP_NS old or the buffer is filling up,
	 * which bounds the delay before symbolization (code objects can die meanwhile). */
	now = s->sample.hdr.time_ns;
	flags = BPF_RB_NO_WAKEUP;
	if (now - s->last_wakeup_ns >= PW_WAKEUP_NS ||
	    bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + len >= PW_WAKEUP_BYTES) {
		flags = BPF_RB_FORCE_WAKEUP;
		s->last_wakeup_ns = now;
	}
	if (bpf_ringbuf_output(&events, &s->sample, len, flags))
		return PW_OUT_LOST;
	return PW_OUT_SHIPPED;
}

SEC("perf_event")
int on_perf_event(struct bpf_perf_event_data *ctx __attribute__((unused)))
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id;
	const struct pw_proc *cfg;

	count(PW_COUNTER_RUNS);
	cfg = pid ? bpf_map_lookup_elem(&procs, &pid) : NULL;
	if (!cfg) {
		count(PW_OUT_NOT_TARGET);
		return 0;
	}
	count(sample_python(pid, tid, cfg));
	return 0;
}
