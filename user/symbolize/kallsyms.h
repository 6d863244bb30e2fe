/* SPDX-License-Identifier: MIT */
/* Kernel symbols for --kernel: /proc/kallsyms read once, its text symbols sorted by address
 * within a byte budget, looked up by the nearest symbol at or below an address. Module
 * symbols carry their module ("nf_hook_slow [nf_tables]"). When kptr_restrict or the
 * reader's rights hide the addresses, the file lists every one as zero: the table is then
 * "restricted" and names nothing. */
#ifndef PW_KALLSYMS_H
#define PW_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KALLSYMS_PATH "/proc/kallsyms"
#define KALLSYMS_DEFAULT_BUDGET ((size_t)64 << 20)

struct kallsyms;

struct kallsyms_stats {
	size_t symbols;	    /* text symbols kept */
	size_t skipped;	    /* lines that were no text symbol, or did not parse */
	size_t over_budget; /* text symbols left out past the byte budget */
	size_t bytes;	    /* held */
	bool restricted;    /* every address was zero: hidden from this reader */
};

/* Read `path` (KALLSYMS_PATH) within budget_bytes (0: KALLSYMS_DEFAULT_BUDGET). NULL with
 * errno set when it cannot be read (or ENOMEM); a restricted file gives a table. */
struct kallsyms *kallsyms__load(const char *path, size_t budget_bytes);
void kallsyms__free(struct kallsyms *k);

struct kallsyms_hit {
	const char *name;   /* the symbol */
	const char *module; /* "" for the kernel proper */
	uint64_t offset;    /* addr - the symbol's address */
};
/* The symbol `addr` lies in: true and *hit filled, or false (below the first symbol, or a
 * restricted table). */
bool kallsyms__lookup(const struct kallsyms *k, uint64_t addr, struct kallsyms_hit *hit);
/* Is `addr` in the code that runs a BPF program (the program itself, listed in module
 * "bpf", and the tracepoint glue that calls it)? A stack a program takes of its own
 * context begins with these frames: they are the profiler, not the profiled. */
bool kallsyms__is_bpf_glue(const struct kallsyms *k, uint64_t addr);
/* The lowest symbol address (0 when none). */
uint64_t kallsyms__first(const struct kallsyms *k);
const struct kallsyms_stats *kallsyms__stats(const struct kallsyms *k);

#endif
