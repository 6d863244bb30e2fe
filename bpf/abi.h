/* SPDX-License-Identifier: MIT */
/* The ABI shared by the BPF program and userspace: per-process config, sample records
 * and outcome codes. Fixed-width types only; never includes vmlinux.h. */
#ifndef PW_ABI_H
#define PW_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PW_ABI_VERSION 4

/* Hard cap of Python frames in one record (--max-depth may not exceed it). */
#define PW_MAX_FRAMES_CAP 4096
#define PW_DEFAULT_MAX_DEPTH 2048
/* Bytes read per frame and per thread state; offsets used must fit below these. */
#define PW_FRAME_READ_MAX 112
#define PW_TSTATE_READ_MAX 320
/* Bound of the thread-list walk on a thread-state cache miss. */
#define PW_MAX_THREAD_WALK 1024
#define PW_MAX_INTERPRETERS 16

/* Every perf event ends in exactly one outcome (DESIGN.md invariant 2). One list defines the
 * codes and their printed labels so a new reason cannot be added in one place only. */
#define PW_OUTCOMES(X)                                                 \
	X(SHIPPED, "shipped")                                          \
	X(NOT_TARGET, "not a target process")                          \
	X(NOT_PYTHON, "not python")                                    \
	X(NO_TSTATE, "no thread state")                                \
	X(EMPTY, "empty stack")                                        \
	X(TORN, "rejected: torn chain")                                \
	X(CYCLE, "rejected: cycle")                                    \
	X(DEPTH, "rejected: depth bound")                              \
	X(READ_FAULT, "rejected: read fault")                          \
	X(BAD_FRAME, "rejected: bad frame")                            \
	X(LOST, "lost (ring buffer full)")

enum pw_outcome {
#define PW_X_ENUM(name, label) PW_OUT_##name,
	PW_OUTCOMES(PW_X_ENUM)
#undef PW_X_ENUM
	PW_OUT__COUNT,
	/* Not an outcome: a walk still in progress. */
	PW_OUT__CONTINUE = 0xff,
};

/* How a version's frame chain is shaped; selects the walker's rules. */
enum pw_chain_kind {
	PW_CHAIN_FRAMEOBJ = 1, /* 3.10: PyFrameObject chain via f_back; complete iff f_back NULL */
	PW_CHAIN_ISENTRY = 2,  /* 3.11: _PyInterpreterFrame; bottom frame has is_entry and NULL previous */
	PW_CHAIN_SHIM = 3,     /* 3.12-3.14: owner==3 frames are entry shims; bottom one has NULL previous */
	PW_CHAIN_BASE = 4,     /* 3.15+: complete iff the walk ends at tstate->base_frame (PR #141912) */
};

/* How a thread state is matched to the sampled OS thread. */
enum pw_thread_match {
	PW_MATCH_NATIVE_TID = 1, /* 3.11+: tstate->native_thread_id == gettid() */
	PW_MATCH_PTHREAD = 2,    /* 3.10: tstate->thread_id == pthread_self() == fsbase */
};

#define PW_OFF_NONE 0xffff

/* Byte offsets the walker needs, all relative to the start of the named object. */
struct pw_offsets {
	__u16 runtime_interp_head;  /* _PyRuntime.interpreters.head */
	__u16 interp_next;	    /* PyInterpreterState.next */
	__u16 interp_threads_head;  /* PyInterpreterState.threads.head (tstate_head in 3.10) */
	__u16 tstate_next;	    /* PyThreadState.next */
	__u16 tstate_thread_id;	    /* native_thread_id (3.11+) or thread_id (3.10) */
	__u16 tstate_frame;	    /* 3.10 frame, 3.11/3.12 cframe, 3.13+ current_frame */
	__u16 cframe_current_frame; /* _PyCFrame.current_frame (3.11/3.12), else PW_OFF_NONE */
	__u16 tstate_base_frame;    /* 3.15+ base_frame, else PW_OFF_NONE */
	__u16 frame_previous;	    /* previous (f_back in 3.10) */
	__u16 frame_code;	    /* f_code / f_executable */
	__u16 frame_instr;	    /* prev_instr / instr_ptr (3.11+), f_lasti int (3.10) */
	__u16 frame_owner;	    /* owner char, PW_OFF_NONE in 3.10 */
	__u16 frame_is_entry;	    /* is_entry bool (3.11), else PW_OFF_NONE */
	__u16 code_adaptive;	    /* co_code_adaptive (3.11+), 0 in 3.10 */
	__u16 frame_read_size;	    /* bytes to read per frame, <= PW_FRAME_READ_MAX */
	__u16 tstate_read_size;	    /* bytes to read per thread state, <= PW_TSTATE_READ_MAX */
	__u16 tstate_datastack_chunk; /* datastack_chunk (3.11+), PW_OFF_NONE = don't check */
	__u16 code_tag;		    /* start of the code object's tag window, PW_OFF_NONE = no tag */
	__u16 code_tag_mask;	    /* which 8-byte words of the window make the tag */
	__u16 code_tag_size;	    /* bytes to read for the window */
};
_Static_assert(sizeof(struct pw_offsets) == 40, "pw_offsets is ABI");

/* Per-process config; key of the `procs` map is the tgid. */
struct pw_proc {
	__u64 runtime_addr; /* address of _PyRuntime in the target */
	struct pw_offsets off;
	__u8 chain_kind;    /* enum pw_chain_kind */
	__u8 thread_match;  /* enum pw_thread_match */
	__u8 code_tag_bits; /* low bits of f_executable that are tags (3.14+: 3) */
	__u8 max_owner;	    /* largest valid owner value (2 in 3.11, 3 later) */
	__u8 shim_owner;    /* owner value of entry/shim frames; 0xff when none */
	__u8 code_tag_name; /* window word holding the name str whose text joins the tag;
			     * 0xff: none (3.12+ have co_version instead) */
	__u8 pad[2];
};
_Static_assert(sizeof(struct pw_proc) == 56, "pw_proc is ABI");

/* Owner of frames on the thread's data stack (FRAME_OWNED_BY_THREAD, 3.11+). */
#define PW_OWNER_THREAD 0
/* _PyStackChunk: previous, size, top, then data[] (3.11+). */
#define PW_CHUNK_DATA_OFFSET 24

/* Instruction offset value meaning "before the first instruction". */
#define PW_INSTR_NONE 0xffffffffu

/* One Python frame: the code object address, the instruction offset in code units, and a
 * tag of the code object as it was at sample time, so userspace never names a frame after
 * another code object that reused the address (DESIGN.md invariant 3). */
struct pw_frame {
	__u64 code;
	__u32 instr;
	__u32 tag;
};

/* The tag: immutable words of the code object folded to 32 bits. The window starts at
 * offsets.code_tag and spans up to PW_CODE_TAG_WORDS 8-byte words; bit i of code_tag_mask
 * selects word i. 3.12+ include co_version, unique per code object created; older versions
 * use pointers to objects the code object owns (names, line table, constants). */
#define PW_CODE_TAG_WORDS 8

/* Fully unrolled in BPF: straight-line code costs the verifier one state, a loop many. */
#if defined(__clang__)
#define PW_UNROLL _Pragma("unroll")
#else
#define PW_UNROLL
#endif

static inline __u32 pw_code_tag(const __u64 *words, __u16 mask)
{
	__u64 h = 0xcbf29ce484222325ull;

	/* branch-free, so the verifier sees one path whatever the mask */
	PW_UNROLL
	for (int i = 0; i < PW_CODE_TAG_WORDS; i++) {
		__u64 keep = -(__u64)((mask >> i) & 1);

		h ^= words[i] & keep;
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return (__u32)h ^ (__u32)(h >> 32);
}

/* Bytes of a str object read for the tag: [16, 80) = length, hash, state, wstr, data. */
#define PW_NAME_TAG_START 16
#define PW_NAME_TAG_SIZE 64

/* Fold the immutable parts of a 3.10/3.11 compact str image (PW_NAME_TAG_SIZE bytes from
 * PW_NAME_TAG_START): its length, its kind/compact/ascii bits, and for ASCII strings the
 * first 32 characters (data at 48; bytes past the length are masked, they are not the
 * string's). The hash, interned bits and wstr fill in later, so they are left out. */
static inline __u32 pw_name_tag(const __u64 *w)
{
	__u64 len = w[0], state = w[2] & 0x7c, h = len * 0x9e3779b97f4a7c15ull ^ state;
	__u64 ascii = -(__u64)((state >> 6) & 1);

	/* branch-free, so the verifier sees one path */
	PW_UNROLL
	for (int i = 0; i < 4; i++) {
		__u64 have = len > (__u64)(8 * i) ? len - 8 * i : 0;
		__u64 bits = have >= 8 ? 64 : 8 * have;
		__u64 keep = bits == 64 ? ~0ull : ((1ull << bits) - 1);

		h = (h ^ (w[4 + i] & keep & ascii)) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	return (__u32)h ^ (__u32)(h >> 32);
}

/* Header of a ring-buffer record, followed by `nframes` struct pw_frame, leaf first. */
struct pw_sample_hdr {
	__u64 time_ns;
	__u64 tstate;
	__u32 pid;
	__u32 tid;
	__u32 nframes;
	__u32 flags;
};
_Static_assert(sizeof(struct pw_sample_hdr) == 32, "pw_sample_hdr is ABI");

struct pw_sample {
	struct pw_sample_hdr hdr;
	struct pw_frame frames[PW_MAX_FRAMES_CAP];
};

#endif /* PW_ABI_H */
