/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* --native: the user registers and the user stack from sp up of the current thread, copied
 * into a PW_REC_USTACK record that userspace unwinds (perf's --call-graph dwarf). The
 * registers are the task's user registers, saved at its entry into the kernel, in every
 * context the sampler runs in: for a perf event that interrupted user mode they are the
 * interrupted registers themselves, and for one that interrupted the kernel (a system
 * call, a page fault) or a tracepoint they are where user code will resume. Included by
 * pywalk.bpf.c after its maps. */
#ifndef PW_USTACK_H
#define PW_USTACK_H

/* --native; the bytes of stack to copy (a power of two, PW_USTACK_PAGE..PW_USTACK_MAX) */
const volatile bool native_stack = false;
const volatile __u32 native_stack_bytes = PW_USTACK_DEFAULT;

/* The record being built, one per CPU (its use is under the sampler scratch's `busy`);
 * sized to the CPUs at load with --native, to one unused slot without. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pw_ustack);
} ustack_scratch SEC(".maps");

struct ustack_ctx {
	struct pw_ustack *u;
	__u64 sp;
	__u32 want; /* bytes to copy from sp up */
	__u32 done;
	__u32 base; /* where in data sp's byte goes: past the red zone, when it was read */
};

/* --native: this CPU's record, its entry-frame list emptied for the walk about to start
 * (NULL without --native: then the walk costs nothing more). 3.12+ keep an entry frame on
 * the C stack for each eval-loop activation; 3.10/3.11 have none (no PW_USF_SHIMS). */
static __always_inline struct pw_ustack *ustack_walk_begin(const struct pw_proc *cfg)
{
	__u32 cpu;
	struct pw_ustack *u;

	if (!native_stack)
		return NULL;
	cpu = bpf_get_smp_processor_id();
	u = bpf_map_lookup_elem(&ustack_scratch, &cpu);
	if (!u)
		return NULL;
	u->nshims = 0;
	u->pad = 0;
	u->flags = cfg->chain_kind == PW_CHAIN_SHIM || cfg->chain_kind == PW_CHAIN_BASE
			   ? PW_USF_SHIMS
			   : 0;
	return u;
}

/* The walk passed the entry frame at `addr`: counted, and kept while there is room. */
static __always_inline void ustack_note_shim(struct pw_ustack *u, __u64 addr)
{
	__u32 i = u->nshims;

	if (i < PW_USTACK_SHIMS)
		u->shim[i] = addr;
	u->nshims = i + 1;
}

/* One page-bounded piece: the first ends at sp's page boundary, the others are whole
 * pages, so the copy stops exactly where the stack's mapping ends (the main thread's
 * stack often has less than --native-stack above sp). */
static long ustack_piece(__u32 i __attribute__((unused)), void *data)
{
	struct ustack_ctx *c = data;
	__u64 addr = c->sp + c->done;
	__u32 len = PW_USTACK_PAGE - (__u32)(addr & (PW_USTACK_PAGE - 1));
	__u32 off = c->done;
	__u32 base = c->base > PW_USTACK_REDZONE ? PW_USTACK_REDZONE : c->base;

	if (off >= c->want || off > PW_USTACK_MAX - PW_USTACK_PAGE)
		return 1;
	if (len > c->want - off)
		len = c->want - off;
	if (len > PW_USTACK_PAGE || !len)
		return 1;
	if (bpf_probe_read_user(&c->u->data[base + off], len, (const void *)(unsigned long)addr))
		return 1;
	c->done = off + len;
	return 0;
}

/* Fill `u` for the sample of `tid` taken at `time_ns`; returns the record's length, 0 when
 * the thread has no user registers to read. A global function, verified once. */
__noinline __u32 ustack_fill(struct pw_ustack *u, __u32 tid, __u64 time_ns)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct ustack_ctx c = {};

	if (!u || !regs)
		return 0;
	u->hdr.kind = PW_REC_USTACK;
	u->hdr.tid = tid;
	u->hdr.time_ns = time_ns;
	u->flags &= PW_USF_SHIMS; /* the walk's (ustack_walk_begin) */
	u->hdr.pad = 0;
#if defined(__TARGET_ARCH_x86)
	u->regs[PW_UREG_IP] = BPF_CORE_READ(regs, ip);
	u->regs[PW_UREG_SP] = BPF_CORE_READ(regs, sp);
	u->regs[PW_UREG_BP] = BPF_CORE_READ(regs, bp);
	u->regs[PW_UREG_BX] = BPF_CORE_READ(regs, bx);
	u->regs[PW_UREG_R12] = BPF_CORE_READ(regs, r12);
	u->regs[PW_UREG_R13] = BPF_CORE_READ(regs, r13);
	u->regs[PW_UREG_R14] = BPF_CORE_READ(regs, r14);
	u->regs[PW_UREG_R15] = BPF_CORE_READ(regs, r15);
#else
	return 0;
#endif
	c.u = u;
	c.sp = u->regs[PW_UREG_SP];
	/* the red zone first; a thread whose sp is at its stack's lowest mapped page has none
	 * readable, and its unwind does without */
	if (!bpf_probe_read_user(u->data, PW_USTACK_REDZONE,
				 (const void *)(unsigned long)(c.sp - PW_USTACK_REDZONE))) {
		c.base = PW_USTACK_REDZONE;
		u->flags |= PW_USF_REDZONE;
	}
	c.want = native_stack_bytes;
	if (c.want > PW_USTACK_MAX)
		c.want = PW_USTACK_MAX;
	bpf_loop(PW_USTACK_MAX / PW_USTACK_PAGE + 1, ustack_piece, &c, 0);
	u->size = c.base + c.done;
	u->hdr.len = PW_USTACK_LEN_BASE + u->size;
	if (c.done >= c.want)
		u->flags |= PW_USF_CUT;
	return PW_USTACK_DATA_OFF + u->size;
}

#endif /* PW_USTACK_H */
