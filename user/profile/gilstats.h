/* SPDX-License-Identifier: MIT */
/* --gil-stats: per thread, how its samples split between holding the GIL, on CPU without
 * it (waiting for it, or in C code that released it) and, where the mode sees it (wall),
 * off CPU. Fed every sample record the engine counts; prints one table at the end. */
#ifndef PW_GILSTATS_H
#define PW_GILSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "abi.h"

struct gil_thread {
	uint32_t target, pid, tid;
	uint64_t held, not_held, unknown; /* on-CPU samples */
	uint64_t off_ns;		  /* time off CPU (wall) */
};

struct gilstats;

struct gilstats *gilstats__new(void);
void gilstats__free(struct gilstats *g);

/* A sample record as the profile gets it (off-CPU stacks weighed already). 0 or -ENOMEM. */
int gilstats__add(struct gilstats *g, const struct pw_sample_hdr *h);

size_t gilstats__count(const struct gilstats *g);
const struct gil_thread *gilstats__at(const struct gilstats *g, size_t i);

/* The name a thread is shown with (escaped already, or safe as it is). */
typedef const char *(*gilstats_name_fn)(void *ctx, uint32_t target, uint32_t tid);

/* The table: one line per thread, its shares of the time the mode sees. `period_ns`: what
 * an on-CPU sample stands for (wall mode adds off-CPU time, in ns; 0: samples only). */
void gilstats__print(const struct gilstats *g, FILE *f, uint64_t period_ns, bool off_cpu_seen,
		     gilstats_name_fn name, void *ctx);

#endif
