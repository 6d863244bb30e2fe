/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* Off-CPU time by Python stack (record --mode off-cpu / wall). sched_switch runs in the
 * context of the thread that leaves the CPU, so its Python chain is read as the sampler
 * reads it, with the same completeness rules: the stack is shipped then, weight 0, and the
 * switch-out time is kept per thread. When that thread is switched in again, a small
 * record gives the nanoseconds it spent off CPU and the state it left in; userspace pairs
 * the two (the ring buffer keeps their order). A thread's Python stack cannot change while
 * it is off CPU, so the stack shipped is exactly the one that waited.
 * Included by pywalk.bpf.c after the sampler's helpers. */
#ifndef PW_OFFCPU_SWITCH_H
#define PW_OFFCPU_SWITCH_H

/* Set by the loader for --mode off-cpu and wall; the program is attached only then. */
const volatile bool offcpu_on = false;

struct pw_switched_out {
	__u64 time_ns;
	__u32 target;
	__u32 block;
};

/* Threads whose stack was shipped at switch-out and that have not run since (host tid). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct pw_switched_out);
} switched_out SEC(".maps");

#ifndef TASK_INTERRUPTIBLE
#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#endif
#define PW_TASK_REPORT_MASK 0xff /* the states below TASK_PARKED that tell why */

static __always_inline __u32 block_class(unsigned int state)
{
	state &= PW_TASK_REPORT_MASK;
	if (!state)
		return PW_BLOCK_PREEMPTED;
	if (state & TASK_UNINTERRUPTIBLE)
		return PW_BLOCK_IO;
	if (state & TASK_INTERRUPTIBLE)
		return PW_BLOCK_SLEEP;
	return PW_BLOCK_OTHER;
}

/* `next` runs again: the stack it shipped when it left weighs the time in between. */
static __always_inline void switched_in(struct task_struct *next, __u64 now)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	struct pw_switched_out *out = tid ? bpf_map_lookup_elem(&switched_out, &tid) : NULL;
	struct pw_offcpu_rec r = { .kind = PW_REC_OFFCPU, .tid = tid, .time_ns = now };

	if (!out)
		return;
	r.off_ns = now - out->time_ns;
	r.target = out->target;
	r.block = out->block;
	bpf_map_delete_elem(&switched_out, &tid);
	if (bpf_ringbuf_output(&events, &r, sizeof(r), 0))
		count(PW_COUNTER_INDEX(PW_CNT_OFFCPU_LOST));
	else
		count(PW_COUNTER_INDEX(PW_CNT_OFFCPU_RESUMED));
}

/* The current thread leaves the CPU in `state`: walk and ship its stack if it is a target's. */
static __always_inline void switched_out_now(struct task_struct *prev, unsigned int state,
					     __u64 now)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id, outcome;
	struct pw_switched_out out = { .time_ns = now, .block = block_class(state) };
	const struct pw_proc *cfg;

	/* an exiting thread does not come back; its last switch has nothing to wait for */
	if (!pid || (BPF_CORE_READ(prev, flags) & 0x4 /* PF_EXITING */))
		return;
	cfg = bpf_map_lookup_elem(&procs, &pid);
	if (!cfg)
		return;
	count_probe(PW_PROBE_OFFCPU, PW_COUNTER_INDEX(PW_CNT_RUNS));
	outcome = sample_python(pid, tid, cfg, PW_PROBE_OFFCPU, 0);
	count_probe(PW_PROBE_OFFCPU, outcome);
	if (outcome != PW_OUT_SHIPPED)
		return;
	out.target = cfg->target;
	bpf_map_update_elem(&switched_out, &tid, &out, BPF_ANY);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now;

	(void)ctx;
	(void)preempt;
	if (!offcpu_on)
		return 0;
	now = bpf_ktime_get_ns();
	switched_in(next, now);
	switched_out_now(prev, prev_state, now);
	return 0;
}

#endif /* PW_OFFCPU_SWITCH_H */
