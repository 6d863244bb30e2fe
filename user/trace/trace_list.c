// SPDX-License-Identifier: MIT
/* Listing: syscalls from the built-in table, other tracepoints from tracefs, functions and
 * USDT notes from the binaries a probe would attach to, perf events from probe.c's table.
 * Names read from binaries are untrusted: written escaped, as folded output does. */
#include <errno.h>
#include <fnmatch.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/pywalk.h"
#include "trace/elfprobe.h"
#include "lib/escape.h"
#include "lib/log.h"
#include "trace/probe_resolve.h"
#include "inspect/proc.h"
#include "trace/syscalls.h"
#include "trace/trace_list.h"
#include "trace/tracefs.h"

struct lister {
	FILE *f;
	const char *prefix; /* "uprobe:/lib/libc.so.6:" */
	const char *pattern;
	const char *cat, *name; /* tracepoint globs */
	size_t n;
};

static void put_escaped(struct lister *l, const char *name)
{
	struct strbuf sb = { 0 };

	if (!escape_folded(&sb, name))
		fprintf(l->f, "%s%s\n", l->prefix, sb.buf);
	strbuf_free(&sb);
	l->n++;
}

static void one_syscall(void *ctx, const char *name, int nr)
{
	struct lister *l = ctx;
	char ev[300];

	(void)nr;
	for (int exit = 0; exit < 2; exit++) {
		snprintf(ev, sizeof(ev), "sys_%s_%s", exit ? "exit" : "enter", name);
		if (!fnmatch(l->name, ev, 0)) {
			fprintf(l->f, "tracepoint:syscalls:%s\n", ev);
			l->n++;
		}
	}
}

static void one_tracepoint(void *ctx, const char *cat, const char *name)
{
	struct lister *l = ctx;

	/* syscalls come from the table, with or without tracefs */
	if (strcmp(cat, "syscalls")) {
		fprintf(l->f, "tracepoint:%s:%s\n", cat, name);
		l->n++;
	}
}

static int list_tracepoints(struct lister *l, const char *rest)
{
	char cat[256], why[512];
	const char *colon = strchr(rest, ':');
	bool mounted;
	int n;

	snprintf(cat, sizeof(cat), "%.*s", colon ? (int)(colon - rest) : (int)strlen(rest), rest);
	l->cat = cat;
	l->name = colon ? colon + 1 : "*";
	if (!fnmatch(cat, "syscalls", 0))
		syscalls_match("*", one_syscall, l);
	if (tracefs_ensure(&mounted, why, sizeof(why))) {
		pw_warn("%s: only syscall tracepoints are listed\n", why);
		return 0;
	}
	if (mounted)
		pw_debug(
			"tracefs was not mounted: mounted it at %s, in a mount namespace of pywalk's own\n",
			TRACEFS_DIR);
	n = tracefs_match(cat, l->name, one_tracepoint, l);
	if (n < 0)
		pw_warn("cannot list tracepoints in %s: %s\n", TRACEFS_DIR, strerror(-n));
	return 0;
}

static void one_func(void *ctx, const char *name)
{
	put_escaped(ctx, name);
}

static void one_usdt(void *ctx, const char *probe)
{
	struct lister *l = ctx;

	if (!fnmatch(l->pattern, probe, 0))
		put_escaped(l, probe);
}

/* uprobe:WHERE:GLOB, usdt:WHERE:GLOB or usdt:WHERE:PROVIDER:GLOB */
static int list_binary(struct lister *l, const char *type, const char *rest,
		       const struct cli_sampling *s)
{
	bool usdt = !strcmp(type, "usdt");
	struct probe_set set = { 0 };
	struct trace_probe *tp = &set.probes[0];
	const char *colon = strchr(rest, ':');
	char prefix[PROBE_PART_MAX + 16], why[1024] = "";
	int err;

	if (!colon || colon == rest || (size_t)(colon - rest) >= sizeof(tp->spec.where)) {
		pw_err("-l '%s:%s': give %s:PATH:PATTERN (or a library name with -p PID)\n", type,
		       rest, type);
		return EXIT_USAGE;
	}
	tp->spec.kind = usdt ? PROBE_USDT : PROBE_UPROBE;
	snprintf(tp->spec.text, sizeof(tp->spec.text), "%s:%s", type, rest);
	snprintf(tp->spec.where, sizeof(tp->spec.where), "%.*s", (int)(colon - rest), rest);
	tp->id = 1;
	set.nprobes = 1;
	err = probe_set_find_binaries(&set, tp, s, why, sizeof(why));
	if (err) {
		pw_err("%s\n", why);
		probe_set_free(&set);
		return EXIT_FAIL;
	}
	l->pattern = colon + 1;
	for (size_t i = 0; i < set.nsites; i++) {
		int fd = proc_reopen_for_reading(set.sites[i].fd);

		snprintf(prefix, sizeof(prefix), "%s:%s:", type, tp->spec.where);
		l->prefix = prefix;
		if (fd < 0)
			continue;
		err = usdt ? elfprobe_list_usdt(fd, one_usdt, l)
			   : elfprobe_list_funcs(fd, l->pattern, one_func, l);
		close(fd);
		if (err)
			pw_warn("cannot read %s: %s\n", set.sites[i].shown, strerror(-err));
	}
	probe_set_free(&set);
	return EXIT_OK;
}

static void list_perf(struct lister *l, const char *type, const char *rest)
{
	bool sw = !strcmp(type, "software");

	for (size_t i = 0; i < probe_nperf_events; i++) {
		const struct probe_perf_event *ev = &probe_perf_events[i];

		if ((ev->type == PERF_TYPE_SOFTWARE) != sw || fnmatch(rest, ev->name, 0))
			continue;
		fprintf(l->f, "%s:%s\n", type, ev->name);
		l->n++;
	}
}

int trace_list(FILE *f, const char *pattern, const struct cli_sampling *s)
{
	struct lister l = { .f = f, .prefix = "" };
	const char *colon = strchr(pattern, ':');
	char type[32];
	int ret = EXIT_OK;

	snprintf(type, sizeof(type), "%.*s", colon ? (int)(colon - pattern) : (int)strlen(pattern),
		 pattern);
	if (!colon && strcmp(pattern, "*")) {
		pw_err("-l '%s': give TYPE:PATTERN (e.g. 'tracepoint:syscalls:*open*', "
		       "'uprobe:libc.so.6:mall*', 'usdt:/usr/bin/python3.11:*', 'software:*')\n",
		       pattern);
		return EXIT_USAGE;
	}
	if (!colon) {
		list_tracepoints(&l, "*:*");
		list_perf(&l, "software", "*");
		list_perf(&l, "hardware", "*");
	} else if (!strcmp(type, "tracepoint") || !strcmp(type, "t")) {
		list_tracepoints(&l, colon + 1);
	} else if (!strcmp(type, "uprobe") || !strcmp(type, "uretprobe") || !strcmp(type, "usdt")) {
		ret = list_binary(&l, type, colon + 1, s);
	} else if (!strcmp(type, "software") || !strcmp(type, "hardware")) {
		list_perf(&l, type, colon + 1);
	} else if (!strcmp(type, "kprobe") || !strcmp(type, "kretprobe")) {
		char why[512];

		if (probe_kprobes_supported(pattern, why, sizeof(why))) {
			pw_err("-l %s (list them with pywalk trace -l 'tracepoint:*')\n", why);
			return EXIT_FAIL;
		}
		pw_err("-l '%s': listing kernel functions is not implemented (see "
		       "/proc/kallsyms)\n",
		       pattern);
		return EXIT_FAIL;
	} else {
		pw_err("-l '%s': unknown probe type (use tracepoint:, uprobe:, usdt:, software: "
		       "or hardware:)\n",
		       pattern);
		return EXIT_USAGE;
	}
	if (ferror(f))
		return EXIT_FAIL;
	if (ret == EXIT_OK && !l.n)
		pw_info("no probe matches '%s'\n", pattern);
	return ret;
}
