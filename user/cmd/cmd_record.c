// SPDX-License-Identifier: MIT
/* `pywalk record`: sample processes (or a launched command, or every Python process) for a
 * while and write a profile. Its own options are --threads and the output; the rest is the
 * engine. The named PIDs are checked before the output is opened, and the output before
 * the kernel is touched, so a bad PID or an unwritable path costs nothing. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "profile/calltree.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "engine/engine.h"
#include "lib/log.h"
#include "output/out.h"
#include "output/outfile.h"
#include "engine/progress.h"
#include "lib/util.h"

enum { OPT_THREADS = 0x2000, OPT_FUNCTION, OPT_GIL_STATS };

/* record's own options */
struct record_opts {
	bool threads, function, gil_stats;
};

static void record_help(FILE *f)
{
	fprintf(f,
		"Usage: pywalk record [options] -p PID [-p PID...]\n"
		"       pywalk record [options] --all\n"
		"       pywalk record [options] -- COMMAND [ARGS...]\n\n"
		"Sample the Python stacks of running processes, of every Python process on the\n"
		"host, or of a command until it exits, and write a profile. Only stacks proven\n"
		"complete are counted; every sample is accounted for in a summary on stderr.\n"
		"A command that is not Python itself (a shell, make) is followed into the Python\n"
		"processes it starts; with --subprocesses every descendant is.\n\n");
	cli_help_groups(f, CLI_SAMPLING | CLI_RATE | CLI_NATIVE | CLI_DURATION | CLI_OUTPUT, 0);
	fprintf(f,
		"      --threads          add a root frame per thread: 'NAME (TID)', its Python\n"
		"                         name (threading's), else its OS name\n"
		"      --function         a frame per function, not per line: the calls of a\n"
		"                         function from several lines are one box, shown at\n"
		"                         its first line (py-spy's --nolineno)\n"
		"      --gil-stats        at the end, per thread: the share of its samples\n"
		"                         holding the GIL, on CPU without it (waiting for\n"
		"                         it, or in C code that released it) and, with\n"
		"                         --mode wall, off CPU\n");
	cli_help_other(f, CLI_QUIET);
	fprintf(f,
		"\n"
		"-o FILE: a regular FILE is replaced atomically (temporary file, then rename;\n"
		"mode 0666 minus the umask); a symbolic link at FILE is refused, and in its\n"
		"directory only links of root or yours are followed; an existing FIFO or device\n"
		"is written in place (a FIFO needs a reader); '-' is stdout.\n\n"
		"Folded output: one line per distinct stack, root first,\n"
		"  'qualname (file:line);...;qualname (file:line) COUNT'\n"
		"with ';', '\\' and control characters in names written as \\x3b, \\\\, \\n, \\xNN\n"
		"(NUL \\x00), and C1, bidi and invisible characters as \\uXXXX (\\UXXXXXXXX\n"
		"past U+FFFF).\n"
		"Several processes (and --all) get a root frame 'comm (PID)'.\n\n"
		"Examples:\n"
		"    pywalk record -p 4242 -d 10 -o out.folded     # 10 s of PID 4242\n"
		"    pywalk record -F 999 -- python3 app.py --flag # a command, to its end\n"
		"    pywalk record --all -d 30 -o all.html         # every Python process\n"
		"    pywalk record -p 4242 -d 30 -o flame.svg      # a flame graph image\n"
		"    pywalk record --subprocesses -- make test     # a build and its Pythons\n"
		"    pywalk record -p 1,2 --threads -d 30          # two processes, per thread\n\n"
		"With -d, a COMMAND still running when the time is up is stopped (SIGTERM), and\n"
		"the end says so.\n\n"
		"Exit status: 0 ok (also after Ctrl-C: the profile is written), 1 runtime failure,\n"
		"2 usage error. A COMMAND that exits non-zero or is killed by a signal is said so\n"
		"in one line, and its status is pywalk's: the same number, or 128+N for signal N\n"
		"(as a shell and time(1) give it; Ctrl-C reaches COMMAND too). The profile is\n"
		"written either way.\n");
}

static int handle_option(void *ctx, int opt, const char *arg)
{
	struct record_opts *ro = ctx;

	(void)arg; /* its options are flags */
	if (opt == OPT_THREADS)
		ro->threads = true;
	else if (opt == OPT_FUNCTION)
		ro->function = true;
	else if (opt == OPT_GIL_STATS)
		ro->gil_stats = true;
	else
		return 1;
	return 0;
}

struct record_run {
	struct progress progress;
};

/* The progress line: the counters are per-CPU map reads, so only when it is due. */
static int record_tick(void *ctx, struct engine *e, uint64_t now_ns)
{
	struct record_run *r = ctx;
	struct engine_counts c;

	if (progress_due(&r->progress, now_ns) && !engine__read_counts(e, &c))
		progress_show(&r->progress, now_ns, c.outcomes[PW_OUT_SHIPPED],
			      engine_rejected(c.outcomes, NULL), c.outcomes[PW_OUT_LOST]);
	return 0;
}

/* "pywalk: wrote FILE (N stacks, M samples)": what the file holds, counted as the writers
 * show it (distinct stacks of the call tree). */
static void print_written(const struct profile *p, const char *path)
{
	struct calltree t = { 0 };
	char stacks[32], samples[32];

	if (log_level < LOG_INFO)
		return;
	if (!calltree_build(&t, p)) {
		size_t n = calltree_nstacks(&t);
		uint64_t total = t.nodes[0].total;

		const char *name = !path || !strcmp(path, "-") ? "stdout" : path;

		fmt_count(n, stacks, sizeof(stacks));
		/* off-CPU and wall profiles count nanoseconds, not samples */
		if (profile__counts_ns(p))
			pw_info("wrote %s (%s stack%s, %.3f s)\n", name, stacks, n == 1 ? "" : "s",
				(double)total / 1e9);
		else
			pw_info("wrote %s (%s stack%s, %s sample%s)\n", name, stacks,
				n == 1 ? "" : "s", fmt_count(total, samples, sizeof(samples)),
				total == 1 ? "" : "s");
	}
	calltree_free(&t);
}

/* The launched command's end, in one line, and the exit status that passes it on: its
 * own failure is not hidden behind pywalk's 0. */
static int command_end(struct engine *e, const struct cli_sampling *s)
{
	int status = 0;

	switch (engine__end_command(e, &status)) {
	case ENGINE_CMD_EXITED:
		if (WIFEXITED(status) && WEXITSTATUS(status)) {
			pw_err("command exited with status %d\n", WEXITSTATUS(status));
			return WEXITSTATUS(status);
		}
		if (WIFSIGNALED(status)) {
			pw_err("command was killed by signal %d (%s)\n", WTERMSIG(status),
			       strsignal(WTERMSIG(status)));
			return 128 + WTERMSIG(status);
		}
		return EXIT_OK;
	case ENGINE_CMD_STOPPED:
		if (s->duration_ms && !engine__interrupted(e)) {
			uint64_t ms = s->duration_ms;

			pw_info("stopped the command (SIGTERM): -d %llu%s is over\n",
				(unsigned long long)(ms % 1000 ? ms : ms / 1000),
				ms % 1000 ? "ms" : "s");
		} else {
			pw_info("stopped the command (SIGTERM)\n");
		}
		return EXIT_OK;
	}
	return EXIT_OK;
}

/* Nothing counted: say which bucket took the samples and what to do about it, rather
 * than guess that the target was idle. */
static void warn_no_stacks(const struct engine_counts *c, const struct cli_sampling *s)
{
	uint64_t taken = c->runs - c->outcomes[PW_OUT_NOT_TARGET], rejected;
	char n[32], m[32], why[160];
	int worst;

	rejected = engine_rejected(c->outcomes, &worst);
	if (c->outcomes[PW_OUT_SHIPPED]) {
		pw_warn("no Python stacks were captured: none of the %s shipped could be counted "
			"(see above)\n",
			fmt_count(c->outcomes[PW_OUT_SHIPPED], n, sizeof(n)));
		return;
	}
	if (!taken) {
		pw_warn("no Python stacks were captured (pywalk samples on-CPU time; "
			"was the target idle?)\n");
		return;
	}
	if (c->outcomes[PW_OUT_LOST] >= rejected &&
	    c->outcomes[PW_OUT_LOST] >= c->outcomes[PW_OUT_NO_TSTATE] + c->outcomes[PW_OUT_EMPTY]) {
		pw_warn("no Python stacks were captured: %s of %s samples were lost (ring buffer "
			"full; lower -F)\n",
			fmt_count(c->outcomes[PW_OUT_LOST], n, sizeof(n)),
			fmt_count(taken, m, sizeof(m)));
		return;
	}
	if (c->outcomes[worst] < c->outcomes[PW_OUT_NO_TSTATE] + c->outcomes[PW_OUT_EMPTY]) {
		pw_warn("no Python stacks were captured: the target's %s sample%s found no Python "
			"frame (it ran native code, or threads without Python)\n",
			fmt_count(taken, n, sizeof(n)), taken == 1 ? "" : "s");
		return;
	}
	switch (worst) {
	case PW_OUT_DEPTH:
		snprintf(why, sizeof(why), "stack deeper than --max-depth %u; raise --max-depth",
			 s->max_depth);
		break;
	case PW_OUT_TORN:
		snprintf(why, sizeof(why), "the walk never ended at the interpreter's entry frame");
		break;
	case PW_OUT_CYCLE:
		snprintf(why, sizeof(why), "the frame chain loops");
		break;
	case PW_OUT_READ_FAULT:
		snprintf(why, sizeof(why), "the target's memory could not be read");
		break;
	default:
		snprintf(why, sizeof(why), "a frame failed its checks");
		break;
	}
	/* the walker's own refusals are pywalk's to fix, not the user's */
	if (worst != PW_OUT_DEPTH)
		strncat(why, "; please report it with the Python version",
			sizeof(why) - strlen(why) - 1);
	if (c->outcomes[worst] == taken)
		pw_warn("no Python stacks were captured: all %s sample%s rejected: %s (%s)\n",
			fmt_count(taken, n, sizeof(n)), taken == 1 ? " was" : "s were",
			engine_outcome_label(worst, true), why);
	else
		pw_warn("no Python stacks were captured: %s of %s samples were rejected, most: "
			"%s (%s)\n",
			fmt_count(rejected, n, sizeof(n)), fmt_count(taken, m, sizeof(m)),
			engine_outcome_label(worst, true), why);
}

int cmd_record(int argc, char **argv)
{
	static const struct option options[] = {
		{ "threads", no_argument, NULL, OPT_THREADS },
		{ "function", no_argument, NULL, OPT_FUNCTION },
		{ "gil-stats", no_argument, NULL, OPT_GIL_STATS },
		{ 0 },
	};
	struct record_opts ro = { 0 };
	struct cli_spec spec = { .name = "record",
				 .groups = CLI_SAMPLING | CLI_RATE | CLI_NATIVE | CLI_DURATION |
					   CLI_COMMAND | CLI_OUTPUT | CLI_QUIET,
				 .options = options,
				 .handle = handle_option,
				 .help = record_help,
				 .ctx = &ro };
	struct cli_sampling s;
	struct cli_output o;
	struct record_run run = { 0 };
	struct engine_hook hook = { .tick = record_tick, .ctx = &run };
	struct outfile out = { 0 };
	struct engine_counts counts;
	const struct out_writer *writer;
	struct engine *e;
	struct profile *prof;
	int ret, err;

	ret = cli_parse(argc, argv, &spec, &s, &o);
	if (ret >= 0)
		return ret;
	writer = out_choose(o.format, o.path);
	if (ro.gil_stats && s.mode == CLI_MODE_OFFCPU)
		return cli_usage_error(
			"record", "%s",
			"--gil-stats counts on-CPU samples: give --mode cpu, wall or "
			"gil, not off-cpu");

	e = engine__new(&(struct engine_opts){
		.sampling = &s,
		.gil_stats = ro.gil_stats,
		.profile = { .by_thread = ro.threads,
			     .by_function = ro.function,
			     .timeline = writer->timeline,
			     .block_frames = s.mode == CLI_MODE_OFFCPU || s.mode == CLI_MODE_WALL,
			     .by_process = s.npids > 1 || s.all } });
	if (!e)
		return engine__new_failure();
	ret = EXIT_FAIL;
	/* before the kernel and the command: an unwritable output fails before sampling */
	err = outfile_open(&out, o.path);
	if (err) {
		pw_err("cannot write %s: %s\n", o.path, out.why);
		goto out;
	}
	if (engine__start(e))
		goto out;
	progress_init(&run.progress, now_ns());
	err = engine__run(e, &hook);
	/* before the profile (stdout may be this terminal too) and the summary */
	progress_clear(&run.progress);
	if (err || engine__finish(e))
		goto out;
	err = engine__read_counts(e, &counts);
	if (err) {
		pw_err("cannot read the outcome counters: %s\n", strerror(-err));
		goto out;
	}
	prof = engine__profile(e);
	err = writer->write(out.f, prof);
	if (err) {
		pw_err("cannot write %s: %s\n", o.path ? o.path : "stdout", strerror(-err));
		goto out;
	}
	err = outfile_commit(&out);
	if (err) {
		pw_err("cannot write %s: %s\n", o.path ? o.path : "stdout", out.why);
		goto out;
	}
	engine__print_summary(e, &counts);
	engine__print_gil_stats(e);
	print_written(prof, o.path);
	if (!agg__total(profile__agg(prof)))
		warn_no_stacks(&counts, &s);
	ret = command_end(e, &s);
out:
	if (ret != EXIT_OK)
		outfile_abort(&out);
	engine__free(e);
	return ret;
}
