/* SPDX-License-Identifier: MIT */
/* trace --filter: an expression over a hit (arg0..arg5, ret, pid, tid, comm, a tracepoint's
 * args.NAME) compiled into
 * the postfix programs the BPF probe programs run (abi.h, struct pw_filter), one per probe,
 * each checked against what that probe's hits offer. */
#ifndef PW_FILTER_H
#define PW_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "engine/loader.h"
#include "trace/probe_resolve.h"

struct filter_set {
	struct pw_filter prog[PW_MAX_PROBES]; /* by probe id */
	uint32_t mask;			      /* probes with a filter (bit per id) */
};

/* Parse `expr` and compile it for every probe of `set`. 0, or -EINVAL with a sentence in
 * `why` (the expression does not parse, is too big, or names what a probe lacks). A
 * tracepoint's own fields (args.NAME) are looked up in tracefs only once the probes are
 * `resolved` (their sites known); before that only the syntax is checked. */
int filter_compile(struct filter_set *fs, const char *expr, const struct probe_set *set,
		   bool resolved, char *why, size_t why_size);

/* Write the programs into the BPF side. 0 or a negative errno with a sentence. */
int filter_load(const struct filter_set *fs, struct loader *ld, char *why, size_t why_size);

#endif
