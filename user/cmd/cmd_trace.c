// SPDX-License-Identifier: MIT
/* `pywalk trace PROBE...`: the Python stack of every hit of probes (tracepoints, uprobes,
 * USDT, perf events), counted exactly. Probes are parsed (usage errors) and then resolved
 * against the system and the targets (runtime errors) before the output is opened and
 * before anything is attached, so a bad probe costs nothing. The rest is the engine. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "engine/engine.h"
#include "trace/filter.h"
#include "lib/log.h"
#include "output/out.h"
#include "output/outfile.h"
#include "trace/probe_resolve.h"
#include "trace/trace_attach.h"
#include "trace/trace_list.h"
#include "trace/trace_print.h"
#include "lib/util.h"

enum {
	OPT_LATENCY = 0x2000,
	OPT_PRINT,
	OPT_FILTER,
	OPT_AGGREGATE,
	OPT_AGGREGATE_ENTRIES,
	OPT_LIST = 'l',
};

static void trace_help(FILE *f)
{
	fprintf(f,
		"Usage: pywalk trace [options] -p PID PROBE...\n"
		"       pywalk trace [options] --all PROBE...\n"
		"       pywalk trace [options] PROBE... -- COMMAND [ARGS...]\n"
		"       pywalk trace -l PATTERN [-p PID]\n\n"
		"Count the Python stack of every hit of the probes in the target processes:\n"
		"exact counts, not samples. Every hit is accounted for in a summary per probe.\n\n"
		"Probes:\n"
		"  tracepoint:CATEGORY:NAME     kernel tracepoint (wildcards); syscalls:sys_enter_X\n"
		"                               and sys_exit_X go by syscall number\n"
		"  uprobe:PATH|LIB:SYMBOL[+OFF] function entry (LIB: looked up in -p's maps)\n"
		"  uretprobe:PATH|LIB:SYMBOL    function return\n"
		"  usdt:PATH|LIB:PROVIDER:NAME  USDT note (e.g. python:gc__start)\n"
		"  kprobe:FUNC, kretprobe:FUNC  kernel function (kernels with kprobes only)\n"
		"  software:EVENT[:N|:FREQhz]   perf software event (page-faults, cs, ...):\n"
		"                               every Nth event (default 1; clocks 99hz)\n"
		"  hardware:EVENT[:N|:FREQhz]   perf hardware event (cycles, ...; default\n"
		"                               every 1000000th)\n\n");
	cli_help_groups(f, CLI_SAMPLING | CLI_NATIVE | CLI_DURATION | CLI_OUTPUT, 0);
	fprintf(f,
		"      --latency          weigh each stack by the nanoseconds spent inside the\n"
		"                         call (uprobe: to its return; syscalls:sys_enter_X to\n"
		"                         its exit), per thread, nesting and recursion paired\n"
		"      --filter EXPR      count only hits where EXPR holds, decided in the\n"
		"                         kernel: arg0..arg5 (uprobe, usdt, syscall entry), ret\n"
		"                         (uretprobe, syscall exit), args.NAME (a tracepoint's\n"
		"                         field), pid, tid, comm; == != < > <= >= && || ! ( ),\n"
		"                         integers, \"strings\" for comm\n"
		"      --print            one line per hit on stdout, as it happens (the\n"
		"                         profile is then written only with -o)\n"
		"      --aggregate        count each stack's hits in the kernel: only the first\n"
		"                         hit of a stack per thread and second is shipped (for\n"
		"                         probes that fire a million times a second); counts\n"
		"                         stay exact. Not with --print, --kernel or --native\n"
		"      --aggregate-entries N\n"
		"                         distinct (stack, thread, probe) the kernel holds\n"
		"                         between drains, 1-1048576 (default %d); hits beyond\n"
		"                         are lost and counted\n"
		"  -l, --list PATTERN     list the probes matching PATTERN and exit\n",
		PW_AGG_DEFAULT_ENTRIES);
	cli_help_other(f, CLI_QUIET);
	fprintf(f,
		"\n"
		"trace has no -F, -e, --mode or --min-block: a probe's rate is in its spec\n"
		"(software:cpu-clock:99hz, hardware:cycles:1000000), the others count every hit.\n"
		"Several probes: folded output and the flame graph have the probe as a root\n"
		"frame; pprof has one sample type per probe (count, or nanoseconds with\n"
		"--latency); speedscope has one profile per probe and thread, named after both.\n\n"
		"--print lines, tab-separated:\n"
		"  SECONDS  PID  TID  COMM  PROBE  WEIGHT  ARGS  STACK\n"
		"SECONDS since tracing began, WEIGHT 1 (nanoseconds with --latency), ARGS what\n"
		"the probe saw ('arg0=1 arg1=0 ...', 'ret=0', '-'), STACK root first as in folded\n"
		"output, COMM and names escaped as folded output escapes them.\n\n"
		"Examples:\n"
		"    pywalk trace -p 4242 tracepoint:syscalls:sys_enter_openat -d 10\n"
		"    pywalk trace usdt:/usr/bin/python3.11:python:gc__start -- python3.11 app.py\n"
		"    pywalk trace -p 4242 uprobe:libc.so.6:usleep --latency\n"
		"    pywalk trace -p 4242 tracepoint:syscalls:sys_enter_write --filter 'arg0 == 1'\n"
		"    pywalk trace --print -p 4242 tracepoint:syscalls:sys_enter_kill\n"
		"    pywalk trace --aggregate -p 4242 'uprobe:libc.so.6:malloc' -d 10\n"
		"    pywalk trace -l 'tracepoint:syscalls:*open*'\n\n"
		"Exit status: 0 ok, 1 runtime failure (a probe that is not there, a kernel\n"
		"without the feature), 2 usage error.\n");
}

struct trace_opts {
	struct probe_set set;
	bool latency, print, aggregate;
	uint32_t aggregate_entries;
	const char *list;
	bool listing; /* -l: no target needed */
	const char *filter;
};

static int handle_option(void *ctx, int opt, const char *arg)
{
	struct trace_opts *t = ctx;

	switch (opt) {
	case OPT_LATENCY:
		t->latency = true;
		return 0;
	case OPT_PRINT:
		t->print = true;
		return 0;
	case OPT_FILTER:
		t->filter = arg;
		return 0;
	case OPT_LIST:
		t->list = arg;
		t->listing = true;
		return 0;
	case OPT_AGGREGATE:
		t->aggregate = true;
		return 0;
	case OPT_AGGREGATE_ENTRIES:
		if (parse_u32(arg, 1, 1u << 20, &t->aggregate_entries))
			return cli_usage_error("trace",
					       "invalid --aggregate-entries '%s' (1-1048576)", arg);
		return 0;
	/* the sampler's options, which would do nothing here */
	case 'F':
	case 'r':
		return cli_usage_error(
			"trace", "%s",
			"trace takes no -F/--frequency: a probe's rate is in its spec "
			"(e.g. software:cpu-clock:99hz); tracepoints, uprobes and USDT "
			"probes count every hit");
	case 'e':
		return cli_usage_error("trace", "%s",
				       "trace takes no -e/--event: the probe is the event (e.g. "
				       "software:cpu-clock:99hz, hardware:cycles:1000000)");
	case CLI_OPT_MODE:
		return cli_usage_error(
			"trace", "%s",
			"trace takes no --mode: it counts the probes' hits (--latency "
			"weighs them by the time inside; off-CPU time is pywalk record "
			"--mode off-cpu)");
	case CLI_OPT_MIN_BLOCK:
		return cli_usage_error(
			"trace", "%s",
			"trace takes no --min-block: it is pywalk record --mode off-cpu's "
			"(trace --filter chooses which hits count)");
	case CLI_OPT_ASYNC:
		return cli_usage_error("trace", "%s",
				       "trace takes no --async: asyncio task chains are sampled "
				       "by pywalk record, top and agent --async");
	}
	return 1;
}

static int take_probe(void *ctx, const char *arg)
{
	struct trace_opts *t = ctx;
	char why[1024];

	if (probe_set_add(&t->set, arg, why, sizeof(why)))
		return cli_usage_error("trace", "%s", why);
	return 0;
}

struct trace_run {
	struct trace_opts *t;
	struct filter_set filters;
	struct trace_print print;
};

static int attach(void *ctx, struct loader *ld)
{
	struct trace_run *r = ctx;
	char why[1024];
	int err = filter_load(&r->filters, ld, why, sizeof(why));

	if (!err)
		err = trace_attach(&r->t->set, ld, why, sizeof(why));
	if (err)
		pw_err("%s\n", why);
	r->print.start_ns = now_ns();
	return err;
}

/* Every hit of every probe in exactly one bucket; a --latency probe's hits are its returns
 * (an entry is counted when its return comes). */
static int print_summary(struct engine *e, const struct trace_opts *t)
{
	const struct probe_set *set = &t->set;
	struct engine_counts c;
	uint64_t full = 0;
	int err = 0;

	for (size_t i = 0; i < set->nprobes && !err; i++) {
		const struct trace_probe *tp = &set->probes[i];

		err = engine__read_probe_counts(e, tp->id, &c);
		full += err ? 0 : c.outcomes[PW_OUT_AGG_FULL];
		if (err || log_level < LOG_INFO)
			continue;
		log_printf(LOG_INFO, "pywalk: %llu hits of %s, accounted as:\n",
			   (unsigned long long)c.runs, tp->spec.text);
		for (int k = 0; k < PW_OUT__COUNT; k++)
			if (k != PW_OUT_AGG_FULL || t->aggregate)
				log_printf(LOG_INFO, "  %-26s %10llu\n",
					   engine_outcome_label(k, false),
					   (unsigned long long)c.outcomes[k]);
		if (tp->latency)
			log_printf(
				LOG_INFO,
				"pywalk: %s: %llu entries; %llu returns without their entry "
				"(calls in progress at the start), %llu calls nested too deep to "
				"pair\n",
				tp->spec.text,
				(unsigned long long)c.counters[PW_CNT_LATENCY_ENTRIES],
				(unsigned long long)c.counters[PW_CNT_LATENCY_UNPAIRED],
				(unsigned long long)c.counters[PW_CNT_LATENCY_DEEP]);
		if (t->aggregate)
			log_printf(
				LOG_INFO,
				"pywalk: %s: --aggregate: of the %llu shipped, %llu counted in the "
				"kernel, %llu shipped as the first of their stack, %llu shipped whole "
				"(%llu deeper than %d frames, %llu whose stack hash another stack "
				"held)\n",
				tp->spec.text, (unsigned long long)c.outcomes[PW_OUT_SHIPPED],
				(unsigned long long)c.counters[PW_CNT_AGG_COUNTED],
				(unsigned long long)c.counters[PW_CNT_AGG_FIRST],
				(unsigned long long)(c.counters[PW_CNT_AGG_DEEP] +
						     c.counters[PW_CNT_AGG_COLLISION]),
				(unsigned long long)c.counters[PW_CNT_AGG_DEEP], PW_AGG_MAX_FRAMES,
				(unsigned long long)c.counters[PW_CNT_AGG_COLLISION]);
	}
	if (err) {
		pw_err("cannot read the outcome counters: %s\n", strerror(-err));
		return err;
	}
	if (engine__kagg_stats(e)) {
		const struct kagg_stats *ks = engine__kagg_stats(e);

		pw_debug("--aggregate: %llu generations drained, %llu keys shipped first, %llu "
			 "keys' counts read from the kernel\n",
			 (unsigned long long)ks->drains, (unsigned long long)ks->keys,
			 (unsigned long long)ks->drained);
	}
	if (full)
		pw_warn("%llu hits were lost (aggregate map full): more distinct stacks and threads "
			"in one second than the kernel holds (%u); raise --aggregate-entries\n",
			(unsigned long long)full,
			t->aggregate_entries ? t->aggregate_entries : PW_AGG_DEFAULT_ENTRIES);
	err = engine__read_counts(e, &c);
	if (!err)
		engine__print_details(e, &c);
	return err;
}

static int run(struct trace_opts *t, const struct cli_sampling *s, const struct cli_output *o)
{
	struct trace_run r = { .t = t, .print = { .f = stdout, .set = &t->set } };
	struct engine_opts eo = {
		.sampling = s, .no_sampler = true, .attach = attach, .attach_ctx = &r
	};
	const struct out_writer *writer = NULL;
	bool write_profile = !t->print || o->path;
	struct outfile out = { 0 };
	char why[1024] = "";
	struct engine *e = NULL;
	int ret = EXIT_FAIL, err;

	if (t->aggregate && t->print)
		return cli_usage_error(
			"trace", "%s",
			"--print writes every hit and --aggregate ships only the first "
			"of each stack: give one of them");
	if (t->aggregate_entries && !t->aggregate)
		return cli_usage_error("trace", "%s", "--aggregate-entries is for --aggregate");
	if (t->aggregate && s->kernel)
		return cli_usage_error(
			"trace", "%s",
			"--kernel cannot go with --aggregate: the kernel counts stacks "
			"of Python frames only");
	if (t->aggregate && s->native)
		return cli_usage_error(
			"trace", "%s",
			"--native cannot go with --aggregate: the kernel counts stacks "
			"of Python frames only, and a native stack is unwound per hit");
	if (t->latency) {
		if (probe_set_check_latency(&t->set, why, sizeof(why)))
			return cli_usage_error("trace", "%s", why);
		for (size_t i = 0; i < t->set.nprobes; i++)
			t->set.probes[i].latency = true;
	}
	/* the syntax now; a tracepoint's fields once its tracepoints are known */
	if (t->filter && filter_compile(&r.filters, t->filter, &t->set, false, why, sizeof(why)))
		return cli_usage_error("trace", "%s", why);
	writer = out_choose(o->format, o->path);
	if (writer->timeline && !t->latency)
		return cli_usage_error("trace", "%s",
				       "the timeline format places each hit in "
				       "time by what it lasted: use it with --latency");
	if (writer->timeline && t->aggregate)
		return cli_usage_error(
			"trace", "%s",
			"the timeline format places each hit in time and --aggregate "
			"counts hits in the kernel, without their times: give one of "
			"them");

	eo.profile.timeline = writer->timeline;
	eo.profile.by_process = s->npids > 1 || s->all;
	eo.profile.nprobes = (uint32_t)t->set.nprobes;
	for (size_t i = 0; i < t->set.nprobes; i++) {
		eo.profile.probe_names[t->set.probes[i].id] = t->set.probes[i].spec.text;
		eo.profile.probe_ns[t->set.probes[i].id] = t->set.probes[i].latency;
	}
	if (t->print) {
		eo.profile.on_stack = trace_print_stack;
		eo.profile.on_stack_ctx = &r.print;
		eo.print_args = true;
	}
	eo.latency_probes = trace_latency_mask(&t->set);
	eo.aggregate = t->aggregate;
	eo.aggregate_entries = t->aggregate_entries;
	eo.filter_probes = r.filters.mask;
	/* checks the named PIDs first: a PID that is not Python fails before probes resolve */
	e = engine__new(&eo);
	if (!e)
		goto out;
	err = probe_set_resolve(&t->set, s, why, sizeof(why));
	if (err) {
		pw_err("%s\n", why);
		goto out;
	}
	if (t->filter && filter_compile(&r.filters, t->filter, &t->set, true, why, sizeof(why))) {
		ret = cli_usage_error("trace", "%s", why);
		goto out;
	}
	if (write_profile) {
		err = outfile_open(&out, o->path);
		if (err) {
			pw_err("cannot write %s: %s\n", o->path, out.why);
			goto out;
		}
	}
	if (engine__start(e))
		goto out;
	err = engine__run(e, NULL);
	if (err || engine__finish(e))
		goto out;
	if (r.print.err) {
		pw_err("cannot write stdout: %s\n", strerror(-r.print.err));
		goto out;
	}
	if (write_profile) {
		err = writer->write(out.f, engine__profile(e));
		if (err) {
			pw_err("cannot write %s: %s\n", o->path ? o->path : "stdout",
			       strerror(-err));
			goto out;
		}
		err = outfile_commit(&out);
		if (err) {
			pw_err("cannot write %s: %s\n", o->path ? o->path : "stdout", out.why);
			goto out;
		}
	}
	if (print_summary(e, t))
		goto out;
	ret = EXIT_OK;
out:
	if (ret != EXIT_OK && write_profile)
		outfile_abort(&out);
	engine__free(e);
	return ret;
}

int cmd_trace(int argc, char **argv)
{
	static const struct option options[] = {
		{ "latency", no_argument, NULL, OPT_LATENCY },
		{ "print", no_argument, NULL, OPT_PRINT },
		{ "filter", required_argument, NULL, OPT_FILTER },
		{ "list", required_argument, NULL, OPT_LIST },
		{ "aggregate", no_argument, NULL, OPT_AGGREGATE },
		{ "aggregate-entries", required_argument, NULL, OPT_AGGREGATE_ENTRIES },
		{ 0 },
	};
	struct trace_opts t = { 0 };
	struct cli_spec spec = { .name = "trace",
				 .groups = CLI_SAMPLING | CLI_NATIVE | CLI_DURATION | CLI_COMMAND |
					   CLI_OUTPUT | CLI_QUIET,
				 .options = options,
				 .shortopts = "l:",
				 .handle = handle_option,
				 .help = trace_help,
				 .positional = take_probe,
				 .target_optional = &t.listing,
				 .ctx = &t };
	struct cli_sampling s;
	struct cli_output o;
	int ret;

	ret = cli_parse(argc, argv, &spec, &s, &o);
	if (ret >= 0)
		goto out;
	if (t.list) {
		ret = t.set.nprobes ? cli_usage_error("trace", "%s", "-l takes no probes")
				    : trace_list(stdout, t.list, &s);
		goto out;
	}
	if (!t.set.nprobes) {
		ret = cli_usage_error("trace", "%s",
				      "no probe given (e.g. tracepoint:syscalls:sys_enter_openat; "
				      "list them with -l)");
		goto out;
	}
	ret = run(&t, &s, &o);
out:
	probe_set_free(&t.set);
	return ret;
}
