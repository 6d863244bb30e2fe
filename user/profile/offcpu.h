/* SPDX-License-Identifier: MIT */
/* Pairs the stacks the kernel ships when a target thread leaves the CPU (weight 0) with
 * the record that says how long it stayed off (struct pw_offcpu_rec): the stack is held
 * per thread until then, and comes out as an ordinary sample weighing those nanoseconds.
 * Held stacks have a byte budget; every stack ends in one counted bucket. */
#ifndef PW_OFFCPU_H
#define PW_OFFCPU_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"

struct offcpu_stats {
	uint64_t held;		      /* stacks shipped at a switch-out */
	uint64_t counted;	      /* resumed, weighed by their time off CPU and counted */
	uint64_t short_blocks;	      /* off CPU for less than --min-block: not counted */
	uint64_t open_at_end;	      /* still off CPU when sampling stopped: counted up to then */
	uint64_t open_ns;	      /* their time off CPU (why is not known: they never woke) */
	uint64_t replaced;	      /* the thread left again before its resumption was seen
				* (the record was lost): not counted */
	uint64_t over_budget;	      /* no room to hold it: not counted */
	uint64_t ended;		      /* resumed in another lifetime of its PID: not counted */
	uint64_t unpaired;	      /* resumptions without a held stack (their stack was
				* rejected, or shipped before pywalk listened) */
	uint64_t ns[PW_BLOCK__COUNT]; /* time counted, by why the thread was off CPU */
	/* --min-block: waits in a system call, walked at its exit and weighed there (not
	 * held; the kernel counts their time by reason) */
	uint64_t at_exit, at_exit_ns;
};

struct offcpu;

/* Stacks off CPU for less than min_block_ns are not counted; at most budget_bytes held. */
struct offcpu *offcpu__new(uint64_t min_block_ns, size_t budget_bytes);
void offcpu__free(struct offcpu *o);

/* A sample record (PW_REC_SAMPLE). 1 if it is an off-CPU stack, now held (or counted as not
 * held), 0 if it is an ordinary sample the caller counts itself, or -ENOMEM. */
int offcpu__hold(struct offcpu *o, const void *data, size_t size);

/* What a completed stack is handed to: a sample record whose weight is its time off CPU
 * (its probe stays PW_PROBE_OFFCPU, which tells the profile so). 0 or a negative errno. */
typedef int (*offcpu_emit_fn)(void *ctx, const void *data, size_t size);

/* A resumption record (PW_REC_OFFCPU): emits the held stack it completes, if it is long
 * enough. 0 or the emitter's error. */
int offcpu__resume(struct offcpu *o, const void *data, size_t size, offcpu_emit_fn emit, void *ctx);

/* Waits still going on at now_ns count up to now (and the rest when they end): a hung
 * thread shows in a live view and in each of the agent's windows, each window with its own
 * share of the wait. Emits only waits long enough to count, at most every
 * OFFCPU_OPEN_STEP_NS each. 0 or the emitter's error. */
#define OFFCPU_OPEN_STEP_NS (100 * 1000000ull)
int offcpu__count_open(struct offcpu *o, uint64_t now_ns, offcpu_emit_fn emit, void *ctx);

/* Sampling stopped at now_ns (CLOCK_MONOTONIC): every stack still held has been off CPU
 * since its switch-out; emit each that is long enough and release all. */
int offcpu__flush(struct offcpu *o, uint64_t now_ns, offcpu_emit_fn emit, void *ctx);

const struct offcpu_stats *offcpu__stats(const struct offcpu *o);

#endif
