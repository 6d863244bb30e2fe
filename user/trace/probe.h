/* SPDX-License-Identifier: MIT */
/* trace's probe specs, parsed from their text alone (no system lookups): what kind of
 * probe, and its parts. Whether the probe exists is resolved elsewhere (probe_resolve.h). */
#ifndef PW_PROBE_H
#define PW_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum probe_kind {
	PROBE_TRACEPOINT = 1, /* tracepoint:CATEGORY:NAME (wildcards) */
	PROBE_SYSCALL,	      /* tracepoint:syscalls:sys_enter_X / sys_exit_X (wildcards) */
	PROBE_UPROBE,	      /* uprobe:PATH|LIB:SYMBOL[+OFFSET] */
	PROBE_URETPROBE,      /* uretprobe:PATH|LIB:SYMBOL */
	PROBE_USDT,	      /* usdt:PATH|LIB:PROVIDER:NAME */
	PROBE_KPROBE,	      /* kprobe:FUNCTION[+OFFSET] */
	PROBE_KRETPROBE,      /* kretprobe:FUNCTION */
	PROBE_SOFTWARE,	      /* software:NAME[:PERIOD|:FREQhz] */
	PROBE_HARDWARE,	      /* hardware:NAME[:PERIOD|:FREQhz] */
};

#define PROBE_PART_MAX 256

struct probe_spec {
	enum probe_kind kind;
	char text[3 * PROBE_PART_MAX]; /* as given: names the probe in messages and outputs */
	/* tracepoint: category, name; syscall: "syscalls", the pattern after sys_enter_ or
	 * sys_exit_; uprobe/usdt: the binary (path or library name), the symbol or provider;
	 * usdt: the note name in `name`; kprobe: the function; software/hardware: the event */
	char where[PROBE_PART_MAX];
	char what[PROBE_PART_MAX];
	char name[PROBE_PART_MAX];
	bool exit;	      /* syscall: sys_exit_ */
	uint64_t offset;      /* uprobe, kprobe: +OFFSET */
	uint32_t perf_type;   /* software/hardware: PERF_TYPE_* */
	uint64_t perf_config; /* PERF_COUNT_* */
	uint64_t period;      /* one hit every `period` events, or `period` Hz with freq */
	bool freq;
};

/* Parse `text`. 0, or -EINVAL with one sentence naming the problem and what to do in `why`
 * (a usage error). */
int probe_parse(const char *text, struct probe_spec *out, char *why, size_t why_size);

/* Does the probe's hit have arguments (arg0..arg5) / a return value for --filter? */
bool probe_has_args(const struct probe_spec *p);
bool probe_has_ret(const struct probe_spec *p);
/* Is `pattern` a wildcard (has *, ? or [)? */
bool probe_is_pattern(const char *pattern);

/* The perf event names software:/hardware: take, for help and -l. */
struct probe_perf_event {
	const char *name;
	uint32_t type;
	uint64_t config;
	uint64_t default_period; /* 0: default_freq Hz instead */
	uint64_t default_freq;
};
extern const struct probe_perf_event probe_perf_events[];
extern const size_t probe_nperf_events;

#endif
