// SPDX-License-Identifier: MIT
/* The engine's state, shared by the files of the engine that make it up (engine.c runs it,
 * summary.c says what it counted). Nothing outside user/engine/ includes this. */
#ifndef PYWALK_ENGINE_IMPL_H
#define PYWALK_ENGINE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/launch.h"

struct gone {
	uint32_t id;
	uint64_t at_ns;
};

struct engine {
	struct cli_sampling s;
	struct profile *prof;
	struct target_cache *cache;
	struct loader *ld;
	struct discover *disc;
	struct launch child;
	bool launched, started, finished;
	uint64_t deadline_ns, next_tick_ns, next_launch_poll_ns;
	struct gone *gone;
	size_t ngone, gone_cap;
	int record_err;
	struct profile *taps[ENGINE_MAX_TAPS]; /* profiles counting alongside (pulls) */
	size_t ntaps;
	struct offcpu *off;	  /* --mode off-cpu, wall: stacks waiting for their time off CPU */
	uint64_t seeded;	  /* threads found waiting at attach, their stacks read here */
	uint64_t deferred_at_end; /* deferred waits still going at the end, read here */
	struct kagg *kagg;	  /* --aggregate */
	struct native *native;	  /* --native: stack records and the binaries that unwind them */
	struct native_stack *nstack; /* the sample being counted's native frames */
	uint64_t next_agg_drain_ns;
	uint32_t agg_draining;	/* the generation being drained */
	struct gilstats *gil;	/* --gil-stats */
	struct async_watch *aw; /* --async: which targets' task tables the sampler has */
	struct xstack *xs;	/* --kernel, --native: stack records waiting for their sample */
	struct kallsyms *ksyms; /* --kernel: names of kernel frames (NULL: unreadable) */
	/* --mode gil: on-CPU samples not counted, of threads not holding the GIL and of
	 * threads whose version could not tell */
	uint64_t gil_not_held, gil_unknown;
	/* --mode gil under --all: free-threaded processes, sampled in cpu mode instead */
	uint64_t gil_free_threaded;
	struct engine_opts opts;
};

#endif
