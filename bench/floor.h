/* SPDX-License-Identifier: MIT */
/* The read plan shared by the floor program (floor.bpf.c) and pwbench: the exact
 * (address, size) user-memory reads pywalk's program makes for one sample of a thread whose
 * stack does not change. Fixed-width types only; never includes vmlinux.h. */
#ifndef PW_BENCH_FLOOR_H
#define PW_BENCH_FLOOR_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Largest single read, a power of two >= PW_TSTATE_READ_MAX, PW_FRAME_READ_MAX and the
 * data-stack window PW_WINDOW_MAX (pwbench checks), and the most reads one sample may make: thread state, cframe, every frame
 * (Python frames plus entry shims) and data-stack chunk headers. */
#define FLOOR_READ_MAX 16384
#define FLOOR_MAX_READS 4608

struct floor_read {
	__u64 addr;
	__u32 size_m1; /* size - 1, so the program bounds it with a mask, not a branch */
	__u32 pad;
};
_Static_assert(sizeof(struct floor_read) == 16, "floor_read is ABI");

struct floor_plan {
	__u32 n;
	__u32 pad;
	struct floor_read reads[FLOOR_MAX_READS];
};

#endif
