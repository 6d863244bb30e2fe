/* SPDX-License-Identifier: MIT */
/* The ABI shared by the BPF program and userspace: per-process config, sample records
 * and outcome codes. Fixed-width types only; never includes vmlinux.h. */
#ifndef PW_ABI_H
#define PW_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PW_ABI_VERSION 12

/* Hard cap of Python frames in one record (--max-depth may not exceed it). */
#define PW_MAX_FRAMES_CAP 4096
#define PW_DEFAULT_MAX_DEPTH 2048
/* Bytes read per frame and per thread state; offsets used must fit below these. */
#define PW_FRAME_READ_MAX 112
#define PW_TSTATE_READ_MAX 320
/* Bound of the thread-list walk on a thread-state cache miss. */
#define PW_MAX_THREAD_WALK 1024
#define PW_MAX_INTERPRETERS 16

/* Every perf event ends in exactly one outcome (doc/design.md, "What must hold"). One list defines the
 * codes and their printed labels so a new reason cannot be added in one place only. */
#define PW_OUTCOMES(X)                               \
	X(SHIPPED, "shipped")                        \
	X(NOT_TARGET, "not a target process")        \
	X(FILTERED, "filtered out (--filter)")       \
	X(NOT_PYTHON, "not python")                  \
	X(NO_TSTATE, "no thread state")              \
	X(EMPTY, "empty stack")                      \
	X(TORN, "rejected: torn chain")              \
	X(CYCLE, "rejected: cycle")                  \
	X(DEPTH, "rejected: depth bound")            \
	X(READ_FAULT, "rejected: read fault")        \
	X(BAD_FRAME, "rejected: bad frame")          \
	X(BAD_TLBC, "rejected: no bytecode copy")    \
	X(KSTACK_FAULT, "rejected: no kernel stack") \
	X(ASYNC_FAULT, "rejected: task unreadable")  \
	X(ASYNC_LOOP, "rejected: other loop")        \
	X(ASYNC_CYCLE, "rejected: task cycle")       \
	X(ASYNC_BOUND, "rejected: await bound")      \
	X(ASYNC_CHANGED, "rejected: task changed")   \
	X(LOST, "lost (ring buffer full)")           \
	X(NESTED, "lost (interrupted a walk)")       \
	X(AGG_FULL, "lost (aggregate map full)")

enum pw_outcome {
#define PW_X_ENUM(name, label) PW_OUT_##name,
	PW_OUTCOMES(PW_X_ENUM)
#undef PW_X_ENUM
		PW_OUT__COUNT,
	/* Not an outcome: a walk still in progress. */
	PW_OUT__CONTINUE = 0xff,
};

/* Counters beside the outcomes, in the same per-CPU array after PW_OUT__COUNT. */
#define PW_COUNTERS(X)                                                                       \
	X(RUNS, "sampler runs")                                                              \
	X(CODE_SENT, "code records shipped")                                                 \
	X(CODE_LOST, "code records lost (ring buffer full)")                                 \
	X(CODE_UNREADABLE, "code objects unreadable at sample time")                         \
	X(PROC_SENT, "process events shipped")                                               \
	X(PROC_LOST, "process events lost (ring buffer full)")                               \
	X(PROC_FULL, "fork children not followed (process map full)")                        \
	X(LATENCY_ENTRIES, "latency entries")                                                \
	X(LATENCY_DEEP, "latency entries nested too deep to pair")                           \
	X(LATENCY_UNPAIRED, "latency returns without their entry")                           \
	X(OFFCPU_RESUMED, "off-CPU: blocked threads that ran again")                         \
	X(OFFCPU_LOST, "off-CPU: resumptions lost (ring buffer full)")                       \
	X(OFFCPU_UNSEEN, "off-CPU: returns the kernel did not show, timed from run time")    \
	X(OFFCPU_DEFERRED, "off-CPU: waits in a system call, walked at its exit if long")    \
	X(OFFCPU_SHORT, "off-CPU: waits shorter than --min-block, not walked")               \
	X(OFFCPU_UNATTRIBUTED, "off-CPU: long waits whose system call exit was not seen")    \
	X(OFFCPU_PREEMPTIONS, "off-CPU: preemptions, not walked (off-cpu with --min-block)") \
	X(OFFCPU_NS_PREEMPTED, "off-CPU: ns preempted, walked at the syscall exit")          \
	X(OFFCPU_NS_SLEEP, "off-CPU: ns sleeping, walked at the syscall exit")               \
	X(OFFCPU_NS_IO, "off-CPU: ns uninterruptible, walked at the syscall exit")           \
	X(OFFCPU_NS_OTHER, "off-CPU: ns other, walked at the syscall exit")                  \
	X(AGG_COUNTED, "--aggregate: hits counted in the kernel")                            \
	X(AGG_FIRST, "--aggregate: hits shipped as the first of their stack")                \
	X(AGG_DEEP, "--aggregate: hits shipped whole, deeper than the kernel keeps")         \
	X(AGG_COLLISION, "--aggregate: hits shipped whole, their stack's hash taken")        \
	X(ASYNC_RUNNING, "--async: samples of a thread running an asyncio task")             \
	X(ASYNC_OUTSIDE, "--async: samples in a task's step outside its coroutine")          \
	X(ASYNC_UNKNOWN, "--async: samples of a process with no task table (yet)")

enum pw_counter {
#define PW_X_COUNTER(name, label) PW_CNT_##name,
	PW_COUNTERS(PW_X_COUNTER)
#undef PW_X_COUNTER
		PW_CNT__COUNT,
};

/* Index of counter `c` in the `outcomes` map. */
#define PW_COUNTER_INDEX(c) (PW_OUT__COUNT + (c))
#define PW_NSLOTS (PW_OUT__COUNT + PW_CNT__COUNT)

/* Probes of one run: 0 is the sampler (perf events of record/top/agent), the others are
 * `trace` probes. Each has its own row of PW_NSLOTS counters in `outcomes` (the code and
 * process counters live in row 0), so every probe's hits add up on their own. */
#define PW_MAX_PROBES 16
#define PW_SLOT(probe, slot) ((probe)*PW_NSLOTS + (slot))
/* The row of the off-CPU walks (one per switch-out of a target thread): the last one,
 * which trace's probe ids never reach. */
#define PW_PROBE_OFFCPU (PW_MAX_PROBES - 1)

/* A trace probe may have several sites (the matches of a wildcard, the syscalls of a
 * syscall group): an attach cookie is the probe id in the low 16 bits and the site in the
 * next 16 (0: the probe has one site, else its index + 1), and every record carries both. */
#define PW_COOKIE(probe, site) ((__u64)(probe) | (__u64)(site) << 16)
#define PW_COOKIE_PROBE(c) ((__u32)(c)&0xffff)
#define PW_COOKIE_SITE(c) ((__u32)((c) >> 16) & 0xffff)

/* syscall_probes values: the probes of a syscall number's entry and exit, and whether the
 * exit is the return of a --latency entry. A syscall probe's records carry the syscall
 * number + 1 as their site. */
#define PW_SYSCALL_VALUE(enter, exit, pair) \
	((__u32)(enter) | (__u32)(exit) << 8 | (__u32) !!(pair) << 16)
#define PW_SYSCALL_ENTER(v) ((v)&0xff)
#define PW_SYSCALL_EXIT(v) (((v) >> 8) & 0xff)
#define PW_SYSCALL_PAIR(v) (((v) >> 16) & 1)

/* --filter, compiled (user/trace/filter.c) into a postfix program per probe that the probe
 * programs run over the hit: comparisons push a truth value, AND/OR/NOT combine the top
 * of a stack of bits. Userspace proves a program well formed (no underflow, one value
 * left, at most 64 deep) before it writes it. */
#define PW_FILTER_MAX_INSNS 32
#define PW_FILTER_MAX_STRS 4
#define PW_FILTER_STR_LEN 16  /* a comm, NUL-padded (TASK_COMM_LEN) */
#define PW_FILTER_REC_MAX 256 /* bytes of a tracepoint record a filter may look at */

enum pw_filter_op {
	PW_FOP_CMP = 1, /* push (field CMP value) */
	PW_FOP_AND = 2,
	PW_FOP_OR = 3,
	PW_FOP_NOT = 4,
};

enum pw_filter_cmp {
	PW_FCMP_EQ = 1,
	PW_FCMP_NE,
	PW_FCMP_LT,
	PW_FCMP_GT,
	PW_FCMP_LE,
	PW_FCMP_GE,
};

enum pw_filter_field {
	PW_FF_PID = 1,	/* host tgid */
	PW_FF_TID = 2,	/* host tid */
	PW_FF_COMM = 3, /* the thread's comm; value: index of a string; EQ and NE only */
	PW_FF_ARG = 4,	/* argument `arg` (0-5) of the function or syscall */
	PW_FF_RET = 5,	/* return value (sys_exit, uretprobe) */
	PW_FF_CTX = 6,	/* a tracepoint field: `size` bytes at `off` of its record */
};

struct pw_filter_insn {
	__u8 op;	/* enum pw_filter_op */
	__u8 cmp;	/* enum pw_filter_cmp */
	__u8 field;	/* enum pw_filter_field */
	__u8 arg;	/* PW_FF_ARG: which */
	__u16 off;	/* PW_FF_CTX: offset in the record */
	__u8 size;	/* PW_FF_CTX: 1, 2, 4 or 8 */
	__u8 is_signed; /* PW_FF_CTX: sign-extend */
	__s64 value;	/* compared as signed 64-bit */
};
_Static_assert(sizeof(struct pw_filter_insn) == 16, "pw_filter_insn is ABI");

struct pw_filter {
	__u32 n;
	__u32 pad;
	struct pw_filter_insn insn[PW_FILTER_MAX_INSNS];
	char strs[PW_FILTER_MAX_STRS][PW_FILTER_STR_LEN];
};
_Static_assert(sizeof(struct pw_filter) == 8 + 16 * PW_FILTER_MAX_INSNS + 64, "pw_filter is ABI");

/* How a version's frame chain is shaped; selects the walker's rules. */
enum pw_chain_kind {
	PW_CHAIN_FRAMEOBJ = 1, /* 3.10: PyFrameObject chain via f_back; complete iff f_back NULL */
	PW_CHAIN_ISENTRY =
		2, /* 3.11: _PyInterpreterFrame; bottom frame has is_entry and NULL previous */
	PW_CHAIN_SHIM =
		3, /* 3.12-3.14: owner==3 frames are entry shims; bottom one has NULL previous */
	PW_CHAIN_BASE =
		4, /* 3.15+: complete iff the walk ends at tstate->base_frame (PR #141912) */
};

/* How a thread state is matched to the sampled OS thread. */
enum pw_thread_match {
	PW_MATCH_NATIVE_TID = 1, /* 3.11+: tstate->native_thread_id == gettid() */
	PW_MATCH_PTHREAD = 2,	 /* 3.10: tstate->thread_id == pthread_self() == fsbase */
};

#define PW_OFF_NONE 0xffff

/* Byte offsets the walker needs, all relative to the start of the named object. */
struct pw_offsets {
	__u16 runtime_interp_head;    /* _PyRuntime.interpreters.head */
	__u16 interp_next;	      /* PyInterpreterState.next */
	__u16 interp_threads_head;    /* PyInterpreterState.threads.head (tstate_head in 3.10) */
	__u16 tstate_next;	      /* PyThreadState.next */
	__u16 tstate_thread_id;	      /* native_thread_id (3.11+) or thread_id (3.10) */
	__u16 tstate_frame;	      /* 3.10 frame, 3.11/3.12 cframe, 3.13+ current_frame */
	__u16 cframe_current_frame;   /* _PyCFrame.current_frame (3.11/3.12), else PW_OFF_NONE */
	__u16 tstate_base_frame;      /* 3.15+ base_frame, else PW_OFF_NONE */
	__u16 frame_previous;	      /* previous (f_back in 3.10) */
	__u16 frame_code;	      /* f_code / f_executable */
	__u16 frame_instr;	      /* prev_instr / instr_ptr (3.11+), f_lasti int (3.10) */
	__u16 frame_owner;	      /* owner char, PW_OFF_NONE in 3.10 */
	__u16 frame_is_entry;	      /* is_entry bool (3.11), else PW_OFF_NONE */
	__u16 code_adaptive;	      /* co_code_adaptive (3.11+), 0 in 3.10 */
	__u16 frame_read_size;	      /* bytes to read per frame, <= PW_FRAME_READ_MAX */
	__u16 tstate_read_size;	      /* bytes to read per thread state, <= PW_TSTATE_READ_MAX */
	__u16 tstate_datastack_chunk; /* datastack_chunk (3.11+), PW_OFF_NONE = don't check */
	__u16 code_tag;	     /* start of the code object's tag window, PW_OFF_NONE = no tag */
	__u16 code_tag_mask; /* which 8-byte words of the window make the tag */
	__u16 code_tag_size; /* bytes to read for the window */
	/* Who holds the GIL (pw_proc.gil_kind says which of these are used): */
	__u16 gil_ptr;		/* TSTATE_CURRENT: _PyRuntime.gilstate.tstate_current;
				     * STRUCT: PyInterpreterState.ceval.gil (a pointer) */
	__u16 tstate_interp;	/* STRUCT: PyThreadState.interp */
	__u16 gil_locked;	/* STRUCT: _gil_runtime_state.locked (an int) */
	__u16 gil_holder;	/* STRUCT: _gil_runtime_state.last_holder */
	__u16 tstate_holds_gil; /* TSTATE_FLAG: PyThreadState.holds_gil (an int) */
	/* Free-threaded builds (thread-local bytecode), else 0 (no such field is at 0): */
	__u16 frame_tlbc_index; /* _PyInterpreterFrame.tlbc_index (an int32) */
	__u16 code_tlbc;	/* PyCodeObject.co_tlbc (a _PyCodeArray *) */
	__u16 code_ob_size;	/* PyVarObject.ob_size of the code object: code units */
};
_Static_assert(sizeof(struct pw_offsets) == 56, "pw_offsets is ABI");

/* Where the code-object capture (code.h) finds things in code, str and bytes objects. */
struct pw_objoff {
	__u16 co_head_size;	/* bytes of the code object read, from its start */
	__u16 co_qualname;	/* str * (co_name on 3.10, which has no qualname) */
	__u16 co_filename;	/* str * */
	__u16 co_linetable;	/* bytes * (co_linetable / co_lnotab-era PEP 626 table) */
	__u16 str_length;	/* PyASCIIObject.length */
	__u16 str_state;	/* PyASCIIObject.state */
	__u16 str_ascii_data;	/* data of a compact ASCII str */
	__u16 str_compact_data; /* data of a compact non-ASCII str */
	__u16 bytes_size;	/* PyVarObject.ob_size of a bytes object */
	__u16 bytes_data;	/* PyBytesObject.ob_sval */
	__u16 str_kind_shift;	/* bit of PyASCIIObject.state where `kind` starts (2; 8 in
				 * free-threaded builds, whose `interned` is a whole byte) */
	__u16 pad;
};
_Static_assert(sizeof(struct pw_objoff) == 24, "pw_objoff is ABI");

/* How a version tells whether a thread holds the GIL (pw_proc.gil_kind). */
enum pw_gil_kind {
	PW_GIL_NONE = 0,	   /* it cannot be told */
	PW_GIL_TSTATE_CURRENT = 1, /* 3.10/3.11: _PyRuntime.gilstate.tstate_current is the
				    * holder, NULL while nobody holds it */
	PW_GIL_STRUCT = 2,	   /* 3.12-3.14: the interpreter's _gil_runtime_state is
				    * locked and its last_holder is this thread state */
	PW_GIL_TSTATE_FLAG = 3,	   /* 3.15+: tstate->holds_gil */
};

/* pw_proc.flags */
#define PW_PROCF_NSPID \
	1 /* thread ids in the thread states are the process's pid-namespace
			  * ids, not the host's (a container): the sampler translates */

/* Per-process config; key of the `procs` map is the host tgid. */
struct pw_proc {
	__u64 runtime_addr; /* address of _PyRuntime in the target */
	struct pw_offsets off;
	struct pw_objoff obj;
	__u32 target;	    /* id of this process's lifetime (pw_target_id): carried by
			     * every record, so a reused PID is never mistaken for it */
	__u8 chain_kind;    /* enum pw_chain_kind */
	__u8 thread_match;  /* enum pw_thread_match */
	__u8 code_tag_bits; /* low bits of f_executable that are tags (3.14+: 2; 3.14t: 1) */
	__u8 max_owner;	    /* largest valid owner value (2 in 3.11, 3 later) */
	__u8 shim_owner;    /* owner value of entry/shim frames; 0xff when none */
	__u8 code_tag_name; /* window word holding the name str whose text joins the tag;
			     * 0xff: none (3.12+ have co_version instead) */
	__u8 flags;	    /* PW_PROCF_* */
	__u8 gil_kind;	    /* enum pw_gil_kind */
};
_Static_assert(sizeof(struct pw_proc) == 104, "pw_proc is ABI");

/* The sampler's target bitmap (`target_bits`, in the program's .bss): bit tgid % PW_TARGET_BITS
 * is set before a config of that tgid goes into `procs`, by whoever inserts it, and never
 * cleared. A clear bit proves "not a target" with one load instead of a hash lookup. */
#define PW_TARGET_BITS (1u << 16)
#define PW_TARGET_WORD(tgid) (((tgid) / 64) % (PW_TARGET_BITS / 64))
#define PW_TARGET_BIT(tgid) (1ull << ((tgid) % 64))

/* Values of the kernel side's `family` map: how a followed process is followed. */
#define PW_FOLLOW_EXEC 1     /* its execs and exit are reported */
#define PW_FOLLOW_CHILDREN 2 /* and its fork children are followed like it */

/* Target ids: userspace numbers the processes it inspects from 1 up; the kernel side numbers
 * fork children that inherit their parent's config with the top bit set, so the two never
 * collide. 0 is "no target". */
#define PW_TARGET_KERNEL_BIT 0x80000000u

/* Owner of frames on the thread's data stack (FRAME_OWNED_BY_THREAD, 3.11+). */
#define PW_OWNER_THREAD 0
/* _PyStackChunk: previous, size, top, then data[] (3.11+). */
#define PW_CHUNK_DATA_OFFSET 24
/* PyThreadState.datastack_top (where the live part of the newest chunk ends) is the field
 * right after datastack_chunk in every version that has one (3.11-3.15). */
#define PW_DATASTACK_TOP_AFTER_CHUNK 8

/* Instruction offset value meaning "before the first instruction". */
#define PW_INSTR_NONE 0xffffffffu

/* One Python frame: the code object address, the instruction offset in code units, and a
 * tag of the code object as it was at sample time, so userspace never names a frame after
 * another code object that reused the address (doc/design.md, "What must hold"). */
struct pw_frame {
	__u64 code;
	__u32 instr;
	__u32 tag;
};

/* --async (CPython 3.14+): a sample of a thread whose event loop is running a task carries
 * the task and the tasks awaiting it, read where the sample is taken (bpf/async.h): the
 * thread is stopped there, and a loop's tasks change only in its own thread. The running
 * task's coroutine frames are the thread's own, from the leaf down to the task's coroutine
 * frame; a task mark (a struct pw_frame with instr PW_INSTR_TASK, code the task's address,
 * tag its index in the sample's task list) follows them, then each awaiting task's
 * coroutine frames (read from its suspended coroutines, leaf first) and its mark, and then
 * the thread's frames below the task's step. The task list (struct pw_task_name, one per
 * mark, in mark order) follows the frames. */
#define PW_ASYNC_MAX_TASKS 16	/* tasks in one chain: the running one and its awaiters */
#define PW_ASYNC_MAX_FRAMES 256 /* coroutine frames of the awaiting tasks, together */
#define PW_ASYNC_BLOCK (PW_ASYNC_MAX_TASKS + PW_ASYNC_MAX_FRAMES)
#define PW_ASYNC_SET_SCAN 1024 /* entries of an awaiters set looked at */
#define PW_ASYNC_SET_CHUNK 16  /* entries read at once */
#define PW_ASYNC_TASK_READ 256 /* bytes of a task object read, from its start */
#define PW_ASYNC_GEN_READ 256  /* bytes of a coroutine read: its header and frame */
#define PW_TASK_NAME_MAX 64    /* bytes of a task name's characters a sample carries */
#define PW_INSTR_TASK 0xfffffffeu

/* Where the async walk finds things (map async_procs, keyed by host tgid): the table of the
 * target's _asyncio module and the generator, set and int layouts of its interpreter. */
struct pw_async_off {
	/* PyUnicode_Type and PyLong_Type (0: unknown): a task name of either type is read
	 * without its type's flags */
	__u64 str_type;
	__u64 long_type;
	__u32 target;	       /* the process lifetime (pw_proc.target) it describes */
	__u16 ts_running_loop; /* in the thread state */
	__u16 ts_running_task; /* in the thread state */
	__u16 task_read;       /* bytes of a task read: every task field lies below */
	__u16 task_loop;       /* the task's loop (the first field after the object header) */
	__u16 task_name;       /* a str or an int */
	__u16 task_awaited_by; /* one task, a set of them, or NULL */
	__u16 task_is_task;    /* char */
	__u16 task_awaited_by_is_set; /* char */
	__u16 task_coro;
	__u16 ob_type;
	__u16 tp_flags;
	__u16 long_lv_tag;
	__u16 long_digit;
	__u16 gen_iframe;	  /* the coroutine's embedded frame */
	__u16 gen_frame_state;	  /* int8 */
	__u16 gen_read;		  /* bytes of a coroutine read (<= PW_ASYNC_GEN_READ) */
	__u16 frame_stackpointer; /* _PyInterpreterFrame.stackpointer */
	__u16 set_used;
	__u16 set_mask;
	__u16 set_table;
	__s8 fs_yield_from;	   /* a coroutine suspended in await */
	__s8 fs_yield_from_locked; /* 3.15's variant of it */
	__s8 fs_finished;	   /* the first state of a finished one */
	__u8 await_slot;	   /* what it awaits: this many stack slots below stackpointer */
	__u8 owner_generator;	   /* FRAME_OWNED_BY_GENERATOR */
	__u8 pad[7];
};
_Static_assert(sizeof(struct pw_async_off) == 72, "pw_async_off is ABI");

/* One task of a sample's chain (PW_SF_ASYNC): its name as the sample saw it. */
#define PW_TASK_NAME_INT 0x80 /* kind: an int name (asyncio's "Task-N" counter) */
struct pw_task_name {
	__u64 task;	/* the task object */
	__u32 awaiters; /* tasks awaiting it besides the one the chain goes on with */
	__u32 length;	/* a str name's length in characters (data holds what fits) */
	__u64 value;	/* an int name's value */
	__u8 kind;	/* 1, 2, 4: a str of that width; PW_TASK_NAME_INT; 0: neither */
	__u8 negative;	/* an int name below 0 */
	__u8 pad[6];
	__u8 data[PW_TASK_NAME_MAX];
};
_Static_assert(sizeof(struct pw_task_name) == 96, "pw_task_name is ABI");

/* Every ring-buffer record starts with its kind (a __u32). */
enum pw_rec_kind {
	PW_REC_SAMPLE = 1,    /* struct pw_sample_hdr + frames */
	PW_REC_CODE = 2,      /* struct pw_code_hdr + captured bytes */
	PW_REC_PROC = 3,      /* struct pw_proc_rec */
	PW_REC_OFFCPU = 4,    /* struct pw_offcpu_rec */
	PW_REC_AGG_FIRST = 5, /* struct pw_agg_first, then a sample (kind PW_REC_SAMPLE) */
	PW_REC_KSTACK = 6,    /* struct pw_kstack: the kernel stack of the sample after it */
	PW_REC_USTACK = 7,    /* --native: struct pw_ustack (header, regs, stack bytes) of
			    * the sample after it (PW_SF_USTACK) */
};

/* pw_sample_hdr.flags: what the sampler saw of the thread besides its stack. The GIL bits
 * are read when the stack is (the thread is stopped in its own context); the block class
 * is that of an off-CPU stack (probe PW_PROBE_OFFCPU): why the thread left the CPU. */
#define PW_SF_GIL_KNOWN 0x1 /* the version tells who holds the GIL */
#define PW_SF_GIL_HELD 0x2  /* and this thread held it */
#define PW_SF_BLOCK_SHIFT 2 /* 2 bits: enum pw_block */
#define PW_SF_BLOCK(flags) (((flags) >> PW_SF_BLOCK_SHIFT) & 3)
/* A stack record of this kind (PW_REC_KSTACK, PW_REC_USTACK) was shipped by the same
 * program run just before this sample, with the same tid and time_ns. */
#define PW_SF_KSTACK 0x10
#define PW_SF_USTACK 0x20
#define PW_SF_EXTRA_STACKS (PW_SF_KSTACK | PW_SF_USTACK)
/* --async: the frames hold task marks, and the task list follows them (PW_INSTR_TASK) */
#define PW_SF_ASYNC 0x40
/* Userspace's own: the stack records were appended to this sample (user/symbolize/xstack.h). */
#define PW_SF_USERSPACE_PAIRED 0x8000

/* --native: bit 0 of pw_frame.code (code objects are aligned, and the walker masks tag
 * bits off) marks the root-most Python frame an eval-loop activation ran (3.11: is_entry;
 * 3.12+: the frame an entry shim precedes). Userspace masks it off before any lookup. */
#define PW_FRAME_ENTRY 1ull

/* A shipped stack: the header, then `nframes` struct pw_frame, leaf first. nframes is at
 * most PW_MAX_FRAMES_CAP, so 16 bits of what was a 32-bit count hold the flags. */
struct pw_sample_hdr {
	__u32 kind; /* PW_REC_SAMPLE */
	__u16 nframes;
	__u16 flags;   /* PW_SF_* */
	__u64 time_ns; /* bpf_ktime_get_ns() */
	__u64 tstate;
	__u32 pid; /* host tgid and tid */
	__u32 tid;
	__u32 target; /* pw_proc.target of the process when sampled */
	__u16 probe;  /* which probe took it (0: the sampler) */
	__u16 site;   /* which of the probe's sites (0: its only one; PW_COOKIE_SITE) */
	__u64 weight; /* what the stack counts for: 1, or nanoseconds (latency) */
};
_Static_assert(sizeof(struct pw_sample_hdr) == 48, "pw_sample_hdr is ABI");

struct pw_sample {
	struct pw_sample_hdr hdr;
	struct pw_frame frames[PW_MAX_FRAMES_CAP];
	/* --async: room for the task list after the deepest stack */
	struct pw_task_name tasks_room[PW_ASYNC_MAX_TASKS];
};

/* An extra stack of a sample (--kernel, --native) travels as its own record, shipped just
 * before the sample by the same program run: kind, the sample's tid and time_ns (which
 * pair the two), and `len` bytes of the kind's payload after this header. If it cannot be
 * shipped, neither is the sample. */
struct pw_stack_hdr {
	__u32 kind;    /* PW_REC_KSTACK, PW_REC_USTACK */
	__u32 tid;     /* host tid of the sample */
	__u64 time_ns; /* the sample header's time_ns */
	__u32 len;     /* payload bytes after the header */
	__u32 pad;
};
_Static_assert(sizeof(struct pw_stack_hdr) == 24, "pw_stack_hdr is ABI");

/* Kernel return addresses, leaf first (bpf_get_stack; perf's default
 * kernel.perf_event_max_stack is 127 frames). A sample taken in user mode has none. */
#define PW_KSTACK_MAX 127
struct pw_kstack {
	struct pw_stack_hdr hdr; /* kind PW_REC_KSTACK; len = 8 x the number of addresses */
	__u64 ips[PW_KSTACK_MAX];
};

/* trace --print: what the probe saw, after a sample's frames (a stack shallower than
 * PW_MAX_FRAMES_CAP - 4 frames, which every stack within --max-depth's default is). */
struct pw_print_args {
	__s64 arg[6]; /* uprobe, usdt, syscall entry: the call's arguments */
	__s64 ret;    /* uretprobe, syscall exit: the return value */
	__u32 nargs;  /* how many of arg[] the probe has */
	__u32 has_ret;
};
_Static_assert(sizeof(struct pw_print_args) == 64, "pw_print_args is ABI");
#define PW_PRINT_ARGS_MAX_FRAMES (PW_MAX_FRAMES_CAP - 4)

/* trace --aggregate: each hit of a complete stack is counted in a BPF hash map keyed by
 * (stack, its process lifetime, thread, probe, site) instead of being shipped. The stack is
 * a hash of its frames (seeded per run), checked frame by frame against the frames the map
 * holds for that hash, so two stacks never share a count: a stack whose hash another one
 * holds is shipped whole, as without --aggregate. The first hit of a key in a generation
 * is shipped as a record (code records before it, as for any sample) that tells userspace
 * the key's frames; later hits are only counted. Userspace flips the generation, waits for
 * running programs to end, and drains the old one's maps. */
#define PW_AGG_MAX_FRAMES 256 /* deeper stacks are shipped whole */
#define PW_AGG_DEFAULT_ENTRIES 16384

struct pw_agg_key {
	__u64 stack; /* the frames' hash */
	__u32 nframes;
	__u32 target;
	__u32 tid;
	__u16 probe;
	__u16 site;
};
_Static_assert(sizeof(struct pw_agg_key) == 24, "pw_agg_key is ABI");

struct pw_agg_val {
	__u64 hits;
	__u64 weight;  /* the hits' weights summed: hits, or nanoseconds (--latency) */
	__u32 defined; /* a first record of the key was shipped: hits may be counted here */
	__u32 pad;
};
_Static_assert(sizeof(struct pw_agg_val) == 24, "pw_agg_val is ABI");

/* The frames the map holds for a stack hash, to compare with. */
struct pw_agg_frames_key {
	__u64 stack;
	__u32 nframes;
	__u32 pad;
};

struct pw_agg_frames {
	struct pw_frame f[PW_AGG_MAX_FRAMES];
};

/* Precedes the sample of the first hit of a key: which generation's maps count the rest. */
struct pw_agg_first {
	__u32 kind; /* PW_REC_AGG_FIRST */
	__u32 gen;
	__u64 stack;
};
_Static_assert(sizeof(struct pw_agg_first) == 16, "pw_agg_first is ABI");

/* Off-CPU: when a target thread switches out, its stack is walked there (in its own
 * context, by the usual rules) and shipped with weight 0; when it runs again, this record
 * says for how long it was off CPU and why, and the stack weighs that many nanoseconds. */
enum pw_block {
	PW_BLOCK_PREEMPTED = 0, /* runnable: its time slice ended or a task of higher
				 * priority woke */
	PW_BLOCK_SLEEP = 1,	/* TASK_INTERRUPTIBLE: waiting for an event (lock, sleep,
				 * socket, futex) */
	PW_BLOCK_IO = 2,	/* TASK_UNINTERRUPTIBLE: disk I/O, page faults, some locks */
	PW_BLOCK_OTHER = 3,	/* stopped, traced, ... */
	PW_BLOCK__COUNT,
};

struct pw_offcpu_rec {
	__u32 kind;    /* PW_REC_OFFCPU */
	__u32 tid;     /* host tid */
	__u64 time_ns; /* when it ran again */
	__u64 off_ns;  /* how long it was off CPU */
	__u32 target;  /* of the shipped stack */
	__u32 block;   /* enum pw_block */
};
_Static_assert(sizeof(struct pw_offcpu_rec) == 32, "pw_offcpu_rec is ABI");

/* --native: the user registers of the sampled thread and a copy of its stack from sp up,
 * which userspace unwinds with each binary's CFI (perf's --call-graph dwarf). Registers in
 * the order of enum pw_ureg (x86-64: what CFI may need to recover the caller's frame). */
enum pw_ureg {
	PW_UREG_IP,
	PW_UREG_SP,
	PW_UREG_BP,
	PW_UREG_BX,
	PW_UREG_R12,
	PW_UREG_R13,
	PW_UREG_R14,
	PW_UREG_R15,
	PW_UREG__COUNT,
};
#define PW_USTACK_MAX 65536 /* bytes of stack one record may carry (--native-stack) */
#define PW_USTACK_DEFAULT 16384
#define PW_USTACK_PAGE 4096 /* copied page by page, up to the first unmapped one */
/* x86-64's red zone: the bytes below sp a function may use without moving sp, which no
 * signal or interrupt overwrites. An epilogue interrupted after its pops has its CFI still
 * saying where the popped registers were saved, there: without them the unwind stops. */
#define PW_USTACK_REDZONE 128

/* Entry frames whose addresses one record carries: more eval-loop activations than this
 * in one stack cannot be matched (userspace counts the sample as native_deep). */
#define PW_USTACK_SHIMS 64

/* The extra-stack header (kind, the sample's tid and time_ns that pair the two, the
 * payload's length: the registers, size, flags, the entry frames and the stack bytes),
 * then the payload. */
struct pw_ustack {
	struct pw_stack_hdr hdr; /* kind PW_REC_USTACK */
	__u64 regs[PW_UREG__COUNT];
	__u32 size;  /* stack bytes after `shim`: from regs[PW_UREG_SP] up, after the red
			 * zone below it with PW_USF_REDZONE */
	__u32 flags; /* PW_USF_* */
	/* 3.12+ (PW_USF_SHIMS): the target addresses of the entry frames (owner
	 * pw_proc.shim_owner) the Python walk passed, leaf first. Each eval-loop activation
	 * keeps its own on the C stack, so each lies in the native frame of the activation
	 * that pushed it. nshims counts them all; the first PW_USTACK_SHIMS are here. */
	__u32 nshims;
	__u32 pad;
	__u64 shim[PW_USTACK_SHIMS];
	__u8 data[PW_USTACK_REDZONE + PW_USTACK_MAX];
};
#define PW_USTACK_DATA_OFF __builtin_offsetof(struct pw_ustack, data)
_Static_assert(PW_USTACK_DATA_OFF == 104 + 8 * PW_USTACK_SHIMS, "pw_ustack is ABI");
#define PW_USTACK_LEN_BASE (PW_USTACK_DATA_OFF - sizeof(struct pw_stack_hdr))
#define PW_USF_CUT 1	 /* the copy stopped at --native-stack, not at the stack's end */
#define PW_USF_REDZONE 2 /* data starts PW_USTACK_REDZONE bytes below regs[PW_UREG_SP] */
#define PW_USF_SHIMS 4	 /* the interpreter keeps entry frames on the C stack: shim is filled */

/* Process lifecycle, from the sched_process_* tracepoints. */
enum pw_proc_event {
	PW_PROC_FORK = 1, /* pid is a new process, child of ppid */
	PW_PROC_EXEC = 2, /* pid replaced its program */
	PW_PROC_EXIT = 3, /* the last thread of pid exited */
};

struct pw_proc_rec {
	__u32 kind;  /* PW_REC_PROC */
	__u32 event; /* enum pw_proc_event */
	__u64 time_ns;
	__u32 pid;
	__u32 ppid;	     /* fork: the parent tgid */
	__u32 target;	     /* fork: the child's inherited target id (0 = none);
			      * exec/exit: the target id that ended (0 = none) */
	__u32 parent_target; /* fork: the parent's target id (0 = none) */
};
_Static_assert(sizeof(struct pw_proc_rec) == 32, "pw_proc_rec is ABI");

/* What the sampler copies of a code object the first time a CPU ships it, so a code object
 * or process that dies before userspace looks can still be named. The bytes follow the
 * header: head_len of the code object from its start, name_len of its qualname str object
 * from its start (header and characters), file_len of its filename str, lt_len of its
 * line table's data. */
struct pw_code_hdr {
	__u32 kind; /* PW_REC_CODE */
	__u32 target;
	__u64 code; /* address of the code object */
	__u32 pid;
	__u32 tag; /* the frame tag it was shipped with */
	__u16 head_len;
	__u16 name_len;
	__u16 file_len;
	__u16 flags; /* PW_CODEF_* */
	__u32 lt_len;
	__u32 lt_size; /* the line table's full size; > lt_len when it was cut */
};
_Static_assert(sizeof(struct pw_code_hdr) == 40, "pw_code_hdr is ABI");

/* pw_code_hdr.flags: parts that could not be read (userspace reads them itself if it can) */
#define PW_CODEF_NO_NAME 1
#define PW_CODEF_NO_FILE 2
#define PW_CODEF_NO_LINETABLE 4

/* Bounds of what one code record carries. */
#define PW_CODE_HEAD_MAX 512
#define PW_CODE_STR_MAX 1024	    /* str object bytes: header + characters */
#define PW_CODE_LINETABLE_MAX 16384 /* line table bytes */
#define PW_CODE_REC_MAX                                                        \
	(sizeof(struct pw_code_hdr) + PW_CODE_HEAD_MAX + 2 * PW_CODE_STR_MAX + \
	 PW_CODE_LINETABLE_MAX)
/* The buffer a record is built in: the line table may start anywhere below 4096. */
#define PW_CODE_REC_BUF (4096 + PW_CODE_LINETABLE_MAX)

#endif /* PW_ABI_H */
