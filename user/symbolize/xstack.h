/* SPDX-License-Identifier: MIT */
/* Pairs a sample with the extra stacks (kernel: PW_REC_KSTACK; native: PW_REC_USTACK) that
 * the same program run shipped just before it. A stack record waits per (tid, kind) for its
 * sample; the sample that says (PW_SF_KSTACK, PW_SF_USTACK) it has them comes out as one
 * record: the sample as shipped, the stack records, and a tail that finds them. That one
 * record is what everything downstream holds and counts (off-CPU waits, taps, windows), so
 * a stack never travels apart from its sample. A stack record whose sample never came and
 * a sample whose stack record never came are each counted; the latter goes on without its
 * stacks, for the profile to reject under its own reason. */
#ifndef PW_XSTACK_H
#define PW_XSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"

/* A paired record's header flags have this bit too (never set by the kernel side), so a
 * sample whose stacks never came is never read as paired. */
#define XSTACK_SF_PAIRED PW_SF_USERSPACE_PAIRED
/* After the extra stack records of a paired sample: how many bytes they take (right
 * before the tail) and a mark. */
#define XSTACK_TAIL_MAGIC 0x4b545350u /* "PSTK" */
struct xstack_tail {
	uint32_t bytes;
	uint32_t magic;
};

/* The parts of a sample record: its size as shipped (header, frames, trace --print's
 * arguments) and, when it was paired, the stack record of `kind` in it. */
struct xstack_parts {
	size_t sample_size;
	const struct pw_stack_hdr *kstack, *ustack; /* NULL: not there */
};
/* Split `size` bytes at `rec` (a sample). -EINVAL when a tail is there but does not hold
 * together (its records do not fit in it). */
int xstack_parts(const void *rec, size_t size, struct xstack_parts *out);

struct xstack_stats {
	uint64_t paired;    /* samples that got every stack they said they had */
	uint64_t missing;   /* samples whose stack record never came (passed on without) */
	uint64_t unpaired;  /* stack records whose sample never came (ring buffer full
				 * when it was shipped, or rejected after) */
	uint64_t malformed; /* stack records that did not hold together */
};

struct xstack;

struct xstack *xstack__new(void);
void xstack__free(struct xstack *x);

/* A PW_REC_KSTACK or PW_REC_USTACK record: kept for its sample (a record of the same tid
 * and kind waiting already is unpaired now). 0 or -ENOMEM. */
int xstack__add_stack(struct xstack *x, const void *data, size_t size);

/* A sample record: *out and *out_size are what to pass on, the paired record (valid until
 * the next call) or the sample itself when it has no extra stacks or they never came. 0
 * or -ENOMEM. */
int xstack__pair(struct xstack *x, const void *data, size_t size, const void **out,
		 size_t *out_size);

/* Sampling ended: stack records still waiting are unpaired. */
void xstack__flush(struct xstack *x);

const struct xstack_stats *xstack__stats(const struct xstack *x);
/* Bytes it holds: the waiting records, their table and the paired record's buffer. */
size_t xstack__bytes(const struct xstack *x);

#endif
