/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* Off-CPU time by Python stack (record --mode off-cpu / wall). sched_switch runs in the
 * context of the thread that leaves the CPU, and a thread's Python stack cannot change while
 * it is off CPU, so the stack that waited can be read in two places, both in that thread's
 * own context and by the sampler's rules:
 * - at the switch-out itself: the stack is shipped with weight 0 and the switch-in ships a
 *   small record of the time off CPU, which userspace pairs with it (the ring buffer keeps
 *   their order). This is the way without --min-block, and always for a thread that leaves
 *   outside a system call (preempted, a page fault): nothing else runs in its context
 *   before its Python code does.
 * - with --min-block, for a thread that blocks inside a system call: nothing is read when
 *   it leaves; when it comes back after at least min_block_ns, the wait is owed to it, and
 *   the exit of that same system call, the first thing it does in its own context, walks
 *   and ships the stack weighing the whole wait. Short waits cost a map update and a
 *   lookup, no walk: that bounds the cost on a program that switches 100,000 times a second.
 * Included by pywalk.bpf.c after the sampler's helpers. */
#ifndef PW_OFFCPU_SWITCH_H
#define PW_OFFCPU_SWITCH_H

/* Set by the loader for --mode off-cpu and wall; the programs are attached only then. */
const volatile bool offcpu_on = false;
const volatile __u64 offcpu_min_block_ns = 0;
const volatile bool offcpu_wall = false; /* on-CPU samples too: preemption is counted */

/* pw_switched_out.flags */
#define PW_SW_HELD 1 /* the stack is in userspace already (shipped, or read by pywalk) */
#define PW_SW_OWED 2 /* back on CPU after a long wait: the syscall exit walks */

struct pw_switched_out {
	__u64 time_ns; /* when it left (the latest time, for a wait owed so far) */
	__u32 target;
	__u32 block;
	__u64 owed_ns; /* waits of this system call long enough to count, so far */
	__s64 syscall; /* the system call it waits in (deferred waits) */
	__u32 flags;   /* PW_SW_* */
	__u32 pad;
};

/* Target threads that left the CPU and whose wait is not accounted yet (host tid). */
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

static __always_inline void count_blocked_ns(__u32 block, __u64 ns)
{
	__u32 k = PW_COUNTER_INDEX(PW_CNT_OFFCPU_NS_PREEMPTED) +
		  (block < PW_BLOCK__COUNT ? block : PW_BLOCK_OTHER);
	__u64 *v = bpf_map_lookup_elem(&outcomes, &k);

	if (v)
		*v += ns;
}

/* Tell userspace that the wait `out` of thread `tid`, whose stack it holds, ended now after
 * `off_ns` (0: it ended unseen). 0, or -1 when the record was lost (counted).
 * The consumer is woken by the samples' rule, not for each record: a wakeup per return
 * made pywalk preempt the threads it watches, each preemption a switch-out to walk and a
 * return to ship, a storm of tens of thousands a second that it then charged to them. */
static __always_inline int ship_resumption(__u32 tid, __u64 now, __u64 off_ns,
					   const struct pw_switched_out *out)
{
	struct pw_offcpu_rec r = { .kind = PW_REC_OFFCPU,
				   .tid = tid,
				   .time_ns = now,
				   .off_ns = off_ns,
				   .target = out->target,
				   .block = out->block };
	__u32 cpu = bpf_get_smp_processor_id();
	struct scratch *s = bpf_map_lookup_elem(&scratch, &cpu);
	__u64 flags = s ? wakeup_flags(s, now, sizeof(r)) : 0;

	if (bpf_ringbuf_output(&events, &r, sizeof(r), flags)) {
		count(PW_COUNTER_INDEX(PW_CNT_OFFCPU_LOST));
		return -1;
	}
	return 0;
}

/* `next` runs again. */
static __always_inline void switched_in(struct task_struct *next, __u64 now)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	struct pw_switched_out *out = tid ? bpf_map_lookup_elem(&switched_out, &tid) : NULL;
	__u64 ns;

	if (!out || (out->flags & PW_SW_OWED))
		return;
	ns = now - out->time_ns;
	if (!(out->flags & PW_SW_HELD)) {
		/* deferred: owed to the syscall exit if long enough, else forgotten */
		if (ns >= offcpu_min_block_ns) {
			out->owed_ns += ns;
			out->flags |= PW_SW_OWED;
		} else if (out->owed_ns) {
			out->flags |= PW_SW_OWED; /* an earlier wait of this syscall counts */
		} else {
			count(PW_COUNTER_INDEX(PW_CNT_OFFCPU_SHORT));
			bpf_map_delete_elem(&switched_out, &tid);
		}
		return;
	}
	/* the stack is held in userspace: say how long it waited (the entry is read before it
	 * is deleted; the thread runs here, so nothing else changes it meanwhile) */
	if (!ship_resumption(tid, now, ns, out))
		count(PW_COUNTER_INDEX(PW_CNT_OFFCPU_RESUMED));
	bpf_map_delete_elem(&switched_out, &tid);
}

/* `prev` leaves the CPU again while its last wait (`out`, whose stack userspace holds) has
 * no return: the kernel did not show the switch that brought it back (some kernels do not
 * deliver every sched_switch to BPF). Since that return the thread ran without a break, so
 * its scheduler's run time since it was last picked, sum_exec_runtime - its value then,
 * says when it came back: that return is shipped now. A thread that ran longer than it
 * has been away came back before its wait began (a mark set at attach too late): nothing
 * is shipped and userspace counts the wait as one whose end was not seen. */
static __always_inline void returned_unseen(struct task_struct *prev, __u32 tid, __u64 now,
					    const struct pw_switched_out *out)
{
	__u64 ran = BPF_CORE_READ(prev, se.sum_exec_runtime) -
		    BPF_CORE_READ(prev, se.prev_sum_exec_runtime);
	__u64 back;

	if (now <= out->time_ns || ran >= now - out->time_ns)
		return;
	back = now - ran;
	if (!ship_resumption(tid, back, back - out->time_ns, out))
		count(PW_COUNTER_INDEX(PW_CNT_OFFCPU_UNSEEN));
}

/* The system call the current thread is in, or -1 (a fault, an interrupt, preemption). */
static __always_inline __s64 current_syscall(struct task_struct *task)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	return regs ? (__s64)BPF_CORE_READ(regs, orig_ax) : -1;
}

/* The current thread leaves the CPU in `state`; ctx is the program's (its kernel stack). */
static __always_inline void switched_out_now(void *ctx, struct task_struct *prev,
					     unsigned int state, __u64 now)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id, outcome, block = block_class(state);
	struct pw_switched_out out = { .time_ns = now, .block = block }, *old;
	const struct pw_proc *cfg;
	__s64 nr;

	/* an exiting thread does not come back; its last switch has nothing to wait for */
	if (!pid || (BPF_CORE_READ(prev, flags) & 0x4 /* PF_EXITING */))
		return;
	cfg = lookup_target(pid);
	if (!cfg)
		return;
	out.target = cfg->target;
	/* off-cpu with --min-block: a preempted thread is runnable, not waiting for anything
	 * (wall mode counts it, as time the thread wanted the CPU) */
	if (block == PW_BLOCK_PREEMPTED && offcpu_min_block_ns && !offcpu_wall) {
		count(PW_COUNTER_INDEX(PW_CNT_OFFCPU_PREEMPTIONS));
		return;
	}
	nr = block == PW_BLOCK_PREEMPTED ? -1 : current_syscall(prev);
	if (offcpu_min_block_ns && nr >= 0) {
		old = bpf_map_lookup_elem(&switched_out, &tid);
		if (old && (old->flags & PW_SW_HELD)) {
			/* marked waiting at attach, but it ran before the mark was set: its
			 * held stack's wait ended unseen (a zero wait says so) */
			ship_resumption(tid, now, 0, old);
			old = NULL;
		}
		if (old && (old->flags & PW_SW_OWED) && old->syscall == nr) {
			/* woke and waits again inside the same system call: one wait */
			out.owed_ns = old->owed_ns;
		} else if (old && (old->flags & PW_SW_OWED)) {
			count(PW_COUNTER_INDEX(PW_CNT_OFFCPU_UNATTRIBUTED));
		}
		out.syscall = nr;
		count(PW_COUNTER_INDEX(PW_CNT_OFFCPU_DEFERRED));
		bpf_map_update_elem(&switched_out, &tid, &out, BPF_ANY);
		return;
	}
	old = bpf_map_lookup_elem(&switched_out, &tid);
	if (old && (old->flags & PW_SW_OWED))
		count(PW_COUNTER_INDEX(PW_CNT_OFFCPU_UNATTRIBUTED));
	else if (old && (old->flags & PW_SW_HELD))
		returned_unseen(prev, tid, now, old);
	count_probe(PW_PROBE_OFFCPU, PW_COUNTER_INDEX(PW_CNT_RUNS));
	/* its kernel stack, here in __schedule, is why it left the CPU */
	outcome = sample_python(ctx, pid, tid, cfg, PW_PROBE_OFFCPU, 0, 0,
				(__u16)(block << PW_SF_BLOCK_SHIFT));
	count_probe(PW_PROBE_OFFCPU, outcome);
	if (outcome != PW_OUT_SHIPPED) {
		if (old)
			bpf_map_delete_elem(&switched_out, &tid);
		return;
	}
	out.flags = PW_SW_HELD;
	bpf_map_update_elem(&switched_out, &tid, &out, BPF_ANY);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now;

	(void)preempt;
	if (!offcpu_on)
		return 0;
	now = bpf_ktime_get_ns();
	switched_in(next, now);
	switched_out_now(ctx, prev, prev_state, now);
	return 0;
}

/* The exit of a system call: if this thread's wait in it was long, walk now (its Python
 * stack is still the one that waited) and ship the stack weighing the wait. */
SEC("raw_tp/sys_exit")
int on_offcpu_sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id, outcome, block;
	struct pw_switched_out *out = bpf_map_lookup_elem(&switched_out, &tid);
	struct pt_regs *regs;
	const struct pw_proc *cfg;
	__u64 owed;

	if (!out || !(out->flags & PW_SW_OWED))
		return 0;
	regs = (struct pt_regs *)ctx->args[0];
	owed = out->owed_ns;
	block = out->block;
	if ((__s64)BPF_CORE_READ(regs, orig_ax) != out->syscall || out->target == 0) {
		count(PW_COUNTER_INDEX(PW_CNT_OFFCPU_UNATTRIBUTED));
		bpf_map_delete_elem(&switched_out, &tid);
		return 0;
	}
	bpf_map_delete_elem(&switched_out, &tid);
	cfg = lookup_target(pid);
	if (!cfg) {
		count(PW_COUNTER_INDEX(PW_CNT_OFFCPU_UNATTRIBUTED));
		return 0;
	}
	count_probe(PW_PROBE_OFFCPU, PW_COUNTER_INDEX(PW_CNT_RUNS));
	/* no kernel stack: this one is the system call's return, not where it waited */
	outcome = sample_python(NULL, pid, tid, cfg, PW_PROBE_OFFCPU, 0, owed,
				(__u16)((block & 3) << PW_SF_BLOCK_SHIFT));
	count_probe(PW_PROBE_OFFCPU, outcome);
	if (outcome == PW_OUT_SHIPPED)
		count_blocked_ns(block, owed);
	return 0;
}

#endif /* PW_OFFCPU_SWITCH_H */
