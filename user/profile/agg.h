/* SPDX-License-Identifier: MIT */
/* Stack interning and counting. A frame is an opaque (func, line) pair, or for machine code
 * (native, kernel) an opaque (func, mapping, address), and a stack is (process, tid, frames
 * root first); this module knows nothing about symbols or formats. */
#ifndef PW_AGG_H
#define PW_AGG_H

#include <stddef.h>
#include <stdint.h>

struct agg;

struct agg_frame {
	uint32_t func; /* caller-defined function id */
	int32_t line;  /* 0 for machine code */
	uint32_t map;  /* caller-defined mapping id of machine code; 0: none (Python) */
	uint64_t addr; /* the address machine code ran at, as the target saw it; 0: none */
};

/* Whose a stack is: it is counted apart for each distinct one. */
struct agg_who {
	uint32_t proc;	   /* caller-defined process id (one lifetime of a PID) */
	uint32_t pid, tid; /* host PID (shown, not part of the key: proc is) and thread */
	uint32_t probe;	   /* which probe took it (0: the sampler) */
};

struct agg_stack {
	uint32_t proc;	   /* caller-defined process id (one lifetime of a PID) */
	uint32_t pid, tid; /* 0 when the caller does not split by them */
	uint32_t probe;
	uint32_t nframes;
	uint32_t first; /* index of the root frame id in the frame-id arena */
	uint64_t count;
};

struct agg *agg__new(void);
void agg__free(struct agg *agg);

/* Intern a frame; returns its id or a negative errno. */
int64_t agg__frame_id(struct agg *agg, uint32_t func, int32_t line);
/* Intern a frame of machine code: function `func` at `addr` in mapping `map`. Its id or a
 * negative errno. */
int64_t agg__addr_frame_id(struct agg *agg, uint32_t func, uint32_t map, uint64_t addr);
/* Count `count` (samples, events or nanoseconds) for the stack `ids` (n frame ids, root
 * first) of `who`. 0 or -ENOMEM. */
int agg__add(struct agg *agg, const struct agg_who *who, const uint32_t *ids, uint32_t n,
	     uint64_t count);
/* The same, and the index of the stack counted (for agg__stack) in *index. */
int agg__add_at(struct agg *agg, const struct agg_who *who, const uint32_t *ids, uint32_t n,
		uint64_t count, size_t *index);

size_t agg__nstacks(const struct agg *agg);
const struct agg_stack *agg__stack(const struct agg *agg, size_t i);
/* The frame ids of stack `s`, root first (s->nframes of them). */
const uint32_t *agg__stack_frames(const struct agg *agg, const struct agg_stack *s);
const struct agg_frame *agg__frame(const struct agg *agg, uint32_t id);
size_t agg__nframes(const struct agg *agg);
uint64_t agg__total(const struct agg *agg);
/* Bytes its tables hold (what a pull's budget counts). */
size_t agg__bytes(const struct agg *agg);

#endif
