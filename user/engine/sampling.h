/* SPDX-License-Identifier: MIT */
/* What to sample and how: the engine's settings, as the command line's option groups
 * (cli.h) fill them in. */
#ifndef PW_SAMPLING_H
#define PW_SAMPLING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Most processes one command takes with -p. */
#define CLI_MAX_PIDS 256
/* --ring-size's bounds */
#define RING_SIZE_MIN (64u << 10)
#define RING_SIZE_MAX (1u << 30)

/* What to sample: -p/--all/--subprocesses/-- CMD, -F, -e, -d, --max-depth, --max-processes,
 * --symbol-cache */
/* What the samples measure (--mode). */
enum cli_mode {
	CLI_MODE_CPU = 0, /* on-CPU samples */
	CLI_MODE_OFFCPU,  /* time off CPU, by the stack that waited */
	CLI_MODE_WALL,	  /* both, in one unit: every thread's time */
	CLI_MODE_GIL,	  /* on-CPU samples of threads holding the GIL */
};

struct cli_sampling {
	pid_t pids[CLI_MAX_PIDS];
	size_t npids;
	bool all, subprocesses;
	char **command; /* after "--" */
	uint32_t frequency_hz;
	const char *event;
	uint64_t duration_ms; /* 0 = until interrupted or the targets exit */
	uint32_t max_depth;
	uint32_t max_processes;
	size_t symbol_cache_bytes; /* budget of the code-object cache; 0 = the default */
	/* --ring-size: bytes of the ring buffer (RING_SIZE_MIN-RING_SIZE_MAX, a power of
	 * two); 0 = sized by -F and the CPUs */
	uint32_t ring_bytes;
	enum cli_mode mode;
	uint64_t min_block_ns; /* off-cpu/wall: shorter times off CPU are not counted */
	bool kernel;	       /* --kernel: each stack ends in the kernel frames below it */
	bool async;	       /* --async: a running asyncio task's chain in its thread's stack */
	bool native;	       /* --native (CLI_NATIVE): native frames between the Python ones */
	/* with --native: bytes of user stack each stack copies and unwinds (--native-stack,
	 * else PW_USTACK_DEFAULT); 0 without */
	uint32_t native_stack;
	uint64_t native_cache; /* --native-cache: bytes of binaries kept open (0: the default) */
};

#endif
