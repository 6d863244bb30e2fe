/* SPDX-License-Identifier: MIT */
/* --native: the sampled thread's native frames, unwound in userspace from the registers
 * and stack copy of its PW_REC_USTACK record with elfutils' libdwfl (each binary's CFI:
 * .eh_frame, .debug_frame), and named from .symtab, .dynsym, MiniDebugInfo or the debug
 * files under /usr/lib/debug. Its eval-loop activations are found by the addresses of
 * the entry frames the record carries (3.12+), which needs no name, else by name. The binaries are the target's own (opened through its view of
 * the file system, checked against the mapping's device and inode), kept per process. */
#ifndef PW_NATIVE_H
#define PW_NATIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"

#define NATIVE_MAX_FRAMES 512

/* What became of a sample's native stack. */
enum native_status {
	NATIVE_OK = 0,
	NATIVE_MALFORMED,  /* its stack record does not hold together (profile: malformed) */
	NATIVE_INCOMPLETE, /* the unwind did not reach the thread's first frame */
	/* 3.10/3.11 (no entry frames on the C stack): the interpreter's symbols do not
	 * cover its eval loop, so no activation can be told */
	NATIVE_EVAL_UNNAMED,
	NATIVE_MISMATCH, /* its entry frames do not lie one to a native frame, or a
			     * frame named eval holds none (native_find_evals) */
	NATIVE_DEEP,	 /* more entry frames than the record carries (PW_USTACK_SHIMS) */
};

struct native_frame {
	uint64_t pc;	    /* the return address (the interrupted ip for the leaf) */
	const char *symbol; /* NULL: not in any symbol table */
	const char *module; /* file name of the binary, "?" when in none */
	uint64_t rel;	    /* pc relative to the module's load bias (the ELF address) */
	/* an activation of the eval loop: 3.12+ the frame whose stack holds an entry frame
	 * the walk passed, 3.10/3.11 a frame named _PyEval_EvalFrameDefault */
	bool is_eval;
	/* the module's mapping: path as the target sees it, [start, limit), build-id */
	const char *path;
	uint64_t start, limit;
	uint8_t build_id[20];
	uint8_t build_id_len; /* 0: none known */
};

/* Root first. Strings live until the next native__unwind or native__free. */
struct native_stack {
	enum native_status status;
	uint32_t n;
	struct native_frame f[NATIVE_MAX_FRAMES];
};

struct native_stats {
	uint64_t unwound;     /* samples unwound to their first frame */
	uint64_t incomplete;  /* unwinds that stopped short */
	uint64_t unwind_ns;   /* time spent unwinding and naming */
	uint64_t map_reloads; /* maps re-read for an address outside every known module */
	uint64_t stack_used;  /* most bytes above sp a complete unwind read (--native-stack) */
	uint64_t peak_bytes;  /* most bytes the open processes held at once */
	uint64_t budget;      /* the bound on them (native__new) */
	uint64_t evicted;     /* processes closed for the budget or the process count */
};

struct native;

/* The binaries and names of the processes unwound are kept until they hold more than
 * `budget` bytes (the one being unwound is kept whatever its size). */
#define NATIVE_BUDGET (256ull << 20)
struct native *native__new(uint64_t budget);
void native__free(struct native *n);
/* The native stack of sample `h` from `rec`, the PW_REC_USTACK record paired with it
 * (user/symbolize/xstack.h: `rec->len` payload bytes follow it). */
void native__unwind(struct native *n, const struct pw_sample_hdr *h, const struct pw_stack_hdr *rec,
		    struct native_stack *out);
/* Process `pid` ended: its binaries are closed. */
void native__forget(struct native *n, pid_t pid);
const struct native_stats *native__stats(const struct native *n);

#endif
