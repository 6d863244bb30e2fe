/* SPDX-License-Identifier: MIT */
/* trace --print: one line per event as it arrives, tab-separated,
 *   SECONDS <TAB> PID <TAB> TID <TAB> COMM <TAB> PROBE <TAB> WEIGHT <TAB> ARGS <TAB> STACK
 * SECONDS since tracing began (microseconds), WEIGHT 1 (or nanoseconds inside with
 * --latency), ARGS what the probe saw ('arg0=3 arg1=-1 ...', 'ret=0', or '-'), STACK root
 * first as in folded output ('qualname (file:line);...'), COMM and the names escaped as
 * folded output escapes them (so no tab or newline can appear). */
#ifndef PW_TRACE_PRINT_H
#define PW_TRACE_PRINT_H

#include <stdint.h>
#include <stdio.h>

#include "trace/probe_resolve.h"
#include "profile/profile.h"

struct trace_print {
	FILE *f;
	const struct probe_set *set;
	uint64_t start_ns; /* CLOCK_MONOTONIC when tracing began (the records' clock) */
	int err;	   /* the first write error */
};

/* A profile_opts.on_stack hook; ctx is a struct trace_print. */
void trace_print_stack(void *ctx, const struct profile *p, const struct pw_sample_hdr *h,
		       size_t size, uint32_t proc, const uint32_t *ids, uint32_t n);

#endif
