/* SPDX-License-Identifier: MIT */
/* A run's probes, resolved against this system and the targets before anything is
 * attached: a probe becomes one or more sites (the tracepoints a wildcard matches, the
 * syscalls of a pattern, the files a library name is in each target's maps). */
#ifndef PW_PROBE_RESOLVE_H
#define PW_PROBE_RESOLVE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "engine/sampling.h"
#include "trace/probe.h"

struct probe_site {
	uint32_t probe; /* probe id (1..) */
	uint32_t site;	/* what records carry: index + 1 within the probe, or the syscall
			 * number + 1 */
	char label[3 * PROBE_PART_MAX + 32]; /* this site as a probe spec ("tracepoint:a:b") */
	/* tracepoint: category and name; usdt: provider and name; kprobe: the function */
	char cat[PROBE_PART_MAX], name[PROBE_PART_MAX];
	int nr;		      /* syscall number */
	int fd;		      /* uprobe/usdt: O_PATH fd of the binary (-1: none) */
	char path[32];	      /* "/proc/self/fd/N": the binary, for the kernel and libbpf */
	char shown[PATH_MAX]; /* the binary as it was found, for messages */
	uint64_t offset;      /* uprobe: file offset of the function (+OFFSET); kprobe: +OFFSET */
};

struct trace_probe {
	struct probe_spec spec;
	uint32_t id;
	bool latency; /* entry of a --latency pair */
	size_t first, nsites;
};

struct probe_set {
	/* ids 1 up to below the off-CPU row (0 is the sampler's) */
	struct trace_probe probes[PW_PROBE_OFFCPU - 1];
	size_t nprobes;
	struct probe_site *sites;
	size_t nsites, cap;
	bool mounted_tracefs; /* resolving mounted it */
};

/* Parse and add one probe spec. 0, or -EINVAL / -E2BIG (too many) with a sentence in
 * `why`: usage errors. */
int probe_set_add(struct probe_set *set, const char *text, char *why, size_t why_size);

/* With --latency every probe must have a return to pair with (uprobe:, syscall entry).
 * 0 or -EINVAL with a sentence (usage error). */
int probe_set_check_latency(const struct probe_set *set, char *why, size_t why_size);

/* Find every probe's sites: tracepoints in tracefs (mounted when absent), syscalls in the
 * table, binaries in the targets' maps (-p) or on this system, functions and USDT notes in
 * them, the kernel support kprobes and perf events need. 0, or a negative errno with one
 * sentence naming the probe in `why` (a runtime error). */
int probe_set_resolve(struct probe_set *set, const struct cli_sampling *s, char *why,
		      size_t why_size);

/* Only the binaries of probe `tp` (uprobe or usdt; tp->first set), as sites, for -l. 0 or
 * a negative errno with a sentence. */
int probe_set_find_binaries(struct probe_set *set, struct trace_probe *tp,
			    const struct cli_sampling *s, char *why, size_t why_size);

/* The label of a record's (probe, site): the site's own when the probe has several, else
 * the probe's text. */
const char *probe_set_label(const struct probe_set *set, uint32_t probe, uint32_t site);

void probe_set_free(struct probe_set *set);

/* Does this kernel have kprobes? 0, or -EOPNOTSUPP with why not in `why` (after the
 * probe or pattern named `what`): one sentence for kprobe: probes and -l alike. */
int probe_kprobes_supported(const char *what, char *why, size_t why_size);

#endif
