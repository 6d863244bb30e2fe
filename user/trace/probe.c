// SPDX-License-Identifier: MIT
/* Probe specs in bpftrace's vocabulary, split into their parts. Only the text is looked at
 * here, so every message is about the spec as typed; existence is for probe_resolve.c. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/probe.h"
#include "lib/util.h"

const struct probe_perf_event probe_perf_events[] = {
	/* clocks tick all the time: sampled at a frequency unless a period is given */
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, 99 },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 0, 99 },
	/* the other software events are exact by default: every event is a hit */
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 1, 0 },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 1, 0 },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, 1, 0 },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1, 0 },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1, 0 },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1, 0 },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 1, 0 },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, 1, 0 },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, 1, 0 },
	/* hardware counters count too fast for every event: one hit per million by default */
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1000000, 0 },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1000000, 0 },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1000000, 0 },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, 1000000, 0 },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 1000000, 0 },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 1000000,
	  0 },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 1000000, 0 },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 1000000, 0 },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, 1000000, 0 },
};
const size_t probe_nperf_events = ARRAY_SIZE(probe_perf_events);

static int fail(char *why, size_t why_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t why_size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, why_size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

bool probe_is_pattern(const char *pattern)
{
	return strpbrk(pattern, "*?[") != NULL;
}

/* Copy `len` bytes of `s` into a part (PROBE_PART_MAX); false when empty or too long. */
static bool set_part(char *part, const char *s, size_t len)
{
	if (!len || len >= PROBE_PART_MAX)
		return false;
	memcpy(part, s, len);
	part[len] = 0;
	return true;
}

/* Names of tracepoints and kernel functions: the characters tracefs uses, and globs. */
static bool is_event_name(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("_-.*?[]", *s)))
			return false;
	return true;
}

/* Printable, no spaces: symbols and USDT names (C++ and Rust mangling included). */
static bool is_symbol(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

static int parse_offset(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || *end ? -EINVAL : 0;
}

/* "SYMBOL[+OFFSET]" into what/offset. */
static int split_symbol(const char *s, struct probe_spec *out, bool offset_ok, char *why,
			size_t why_size)
{
	const char *plus = strrchr(s, '+');
	size_t len = plus ? (size_t)(plus - s) : strlen(s);

	if (plus && !offset_ok)
		return fail(why, why_size, "'%s': a return probe takes no +OFFSET", out->text);
	if (plus && parse_offset(plus + 1, &out->offset))
		return fail(why, why_size, "'%s': invalid offset '%s' (e.g. +0x10 or +16)",
			    out->text, plus + 1);
	if (!set_part(out->what, s, len) || !is_symbol(out->what))
		return fail(why, why_size, "'%s': give a function name after the last ':'",
			    out->text);
	if (probe_is_pattern(out->what))
		return fail(why, why_size,
			    "'%s': wildcards are for tracepoints only; name one function",
			    out->text);
	return 0;
}

static int parse_tracepoint(const char *rest, struct probe_spec *out, char *why, size_t why_size)
{
	const char *colon = strchr(rest, ':');

	if (!colon || strchr(colon + 1, ':') || !set_part(out->where, rest, colon - rest) ||
	    !set_part(out->what, colon + 1, strlen(colon + 1)))
		return fail(why, why_size,
			    "'%s': a tracepoint is tracepoint:CATEGORY:NAME (e.g. "
			    "tracepoint:syscalls:sys_enter_openat)",
			    out->text);
	if (!is_event_name(out->where) || !is_event_name(out->what))
		return fail(why, why_size,
			    "'%s': tracepoint names are letters, digits, '_' "
			    "and wildcards (*, ?, [...])",
			    out->text);
	if (strcmp(out->where, "syscalls"))
		return 0;
	/* syscalls come from the raw sys_enter/sys_exit tracepoints, by syscall number */
	out->kind = PROBE_SYSCALL;
	if (!strncmp(out->what, "sys_enter_", 10)) {
		memmove(out->what, out->what + 10, strlen(out->what + 10) + 1);
	} else if (!strncmp(out->what, "sys_exit_", 9)) {
		out->exit = true;
		memmove(out->what, out->what + 9, strlen(out->what + 9) + 1);
	} else {
		return fail(why, why_size,
			    "'%s': syscall tracepoints are syscalls:sys_enter_NAME and "
			    "syscalls:sys_exit_NAME (NAME may be a wildcard)",
			    out->text);
	}
	if (!out->what[0])
		return fail(why, why_size, "'%s': name the syscall (or '*')", out->text);
	return 0;
}

static int parse_uprobe(const char *rest, struct probe_spec *out, char *why, size_t why_size)
{
	const char *colon = strrchr(rest, ':');

	if (!colon || !set_part(out->where, rest, colon - rest))
		return fail(why, why_size,
			    "'%s': a uprobe is uprobe:PATH:SYMBOL or uprobe:LIBRARY:SYMBOL (e.g. "
			    "uprobe:libc.so.6:malloc)",
			    out->text);
	if (!is_symbol(out->where))
		return fail(why, why_size,
			    "'%s': the binary's name has spaces or control "
			    "characters",
			    out->text);
	return split_symbol(colon + 1, out, out->kind == PROBE_UPROBE, why, why_size);
}

static int parse_usdt(const char *rest, struct probe_spec *out, char *why, size_t why_size)
{
	const char *last = strrchr(rest, ':'), *mid = NULL;

	for (const char *c = rest; last && c < last; c++)
		if (*c == ':')
			mid = c;
	if (!last || !mid || !set_part(out->where, rest, mid - rest) ||
	    !set_part(out->what, mid + 1, last - mid - 1) ||
	    !set_part(out->name, last + 1, strlen(last + 1)))
		return fail(why, why_size,
			    "'%s': a USDT probe is usdt:PATH:PROVIDER:NAME (e.g. "
			    "usdt:/usr/bin/python3.11:python:gc__start)",
			    out->text);
	if (!is_symbol(out->where) || !is_symbol(out->what) || !is_symbol(out->name))
		return fail(why, why_size, "'%s': names have spaces or control characters",
			    out->text);
	if (probe_is_pattern(out->what) || probe_is_pattern(out->name))
		return fail(why, why_size,
			    "'%s': wildcards are for tracepoints only; name one USDT probe "
			    "(list them with pywalk trace -l 'usdt:%s:*')",
			    out->text, out->where);
	return 0;
}

static int parse_perf(const char *rest, struct probe_spec *out, char *why, size_t why_size)
{
	const char *colon = strchr(rest, ':');
	const struct probe_perf_event *ev = NULL;
	uint32_t want = out->kind == PROBE_SOFTWARE ? PERF_TYPE_SOFTWARE : PERF_TYPE_HARDWARE;

	if (!set_part(out->what, rest, colon ? (size_t)(colon - rest) : strlen(rest)))
		return fail(why, why_size, "'%s': name the event (e.g. software:page-faults)",
			    out->text);
	for (size_t i = 0; i < probe_nperf_events; i++)
		if (probe_perf_events[i].type == want &&
		    !strcmp(probe_perf_events[i].name, out->what))
			ev = &probe_perf_events[i];
	if (!ev)
		return fail(why, why_size,
			    "'%s': unknown %s event '%s' (list them with pywalk "
			    "trace -l '%s:*')",
			    out->text, want == PERF_TYPE_SOFTWARE ? "software" : "hardware",
			    out->what, want == PERF_TYPE_SOFTWARE ? "software" : "hardware");
	out->perf_type = ev->type;
	out->perf_config = ev->config;
	out->period = ev->default_period ? ev->default_period : ev->default_freq;
	out->freq = !ev->default_period;
	if (colon) {
		char num[32];
		size_t len = strlen(colon + 1);
		uint64_t v;

		out->freq = len > 2 && !strcasecmp(colon + 1 + len - 2, "hz");
		if (out->freq)
			len -= 2;
		if (!len || len >= sizeof(num))
			goto bad;
		memcpy(num, colon + 1, len);
		num[len] = 0;
		if (parse_offset(num, &v) || !v || (out->freq && v > 100000))
			goto bad;
		out->period = v;
	}
	return 0;
bad:
	return fail(why, why_size,
		    "'%s': the part after the event is a period (every Nth "
		    "event, N >= 1) or a frequency (1-100000hz)",
		    out->text);
}

static const struct {
	const char *name;
	enum probe_kind kind;
} kinds[] = {
	{ "tracepoint", PROBE_TRACEPOINT },
	{ "t", PROBE_TRACEPOINT },
	{ "uprobe", PROBE_UPROBE },
	{ "u", PROBE_UPROBE },
	{ "uretprobe", PROBE_URETPROBE },
	{ "ur", PROBE_URETPROBE },
	{ "usdt", PROBE_USDT },
	{ "U", PROBE_USDT },
	{ "kprobe", PROBE_KPROBE },
	{ "k", PROBE_KPROBE },
	{ "kretprobe", PROBE_KRETPROBE },
	{ "kr", PROBE_KRETPROBE },
	{ "software", PROBE_SOFTWARE },
	{ "s", PROBE_SOFTWARE },
	{ "hardware", PROBE_HARDWARE },
	{ "h", PROBE_HARDWARE },
};

int probe_parse(const char *text, struct probe_spec *out, char *why, size_t why_size)
{
	const char *colon;
	size_t tlen;

	memset(out, 0, sizeof(*out));
	tlen = strlen(text);
	if (tlen >= sizeof(out->text))
		return fail(why, why_size, "probe '%.40s...' is too long", text);
	memcpy(out->text, text, tlen + 1);
	if (!is_symbol(text))
		return fail(why, why_size,
			    "probe '%s' has spaces or control characters "
			    "(give each probe as its own argument)",
			    text);
	colon = strchr(text, ':');
	for (size_t i = 0; colon && i < ARRAY_SIZE(kinds); i++) {
		if (strlen(kinds[i].name) == (size_t)(colon - text) &&
		    !strncmp(kinds[i].name, text, colon - text)) {
			out->kind = kinds[i].kind;
			break;
		}
	}
	if (!out->kind)
		return fail(why, why_size,
			    "unknown probe type in '%s' (use tracepoint:, uprobe:, uretprobe:, "
			    "usdt:, kprobe:, kretprobe:, software: or hardware:)",
			    text);
	switch (out->kind) {
	case PROBE_TRACEPOINT:
		return parse_tracepoint(colon + 1, out, why, why_size);
	case PROBE_UPROBE:
	case PROBE_URETPROBE:
		return parse_uprobe(colon + 1, out, why, why_size);
	case PROBE_USDT:
		return parse_usdt(colon + 1, out, why, why_size);
	case PROBE_KPROBE:
	case PROBE_KRETPROBE:
		if (!colon[1])
			return fail(why, why_size, "'%s': a kprobe is kprobe:FUNCTION[+OFFSET]",
				    text);
		return split_symbol(colon + 1, out, out->kind == PROBE_KPROBE, why, why_size);
	case PROBE_SOFTWARE:
	case PROBE_HARDWARE:
		return parse_perf(colon + 1, out, why, why_size);
	case PROBE_SYSCALL:
		break;
	}
	return -EINVAL;
}

bool probe_has_args(const struct probe_spec *p)
{
	return p->kind == PROBE_UPROBE || p->kind == PROBE_USDT || p->kind == PROBE_KPROBE ||
	       (p->kind == PROBE_SYSCALL && !p->exit);
}

bool probe_has_ret(const struct probe_spec *p)
{
	return p->kind == PROBE_URETPROBE || p->kind == PROBE_KRETPROBE ||
	       (p->kind == PROBE_SYSCALL && p->exit);
}
