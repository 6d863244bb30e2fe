// SPDX-License-Identifier: MIT
/* `pywalk record`: sample processes (or a launched command) for a while and write a
 * profile. Parses options, checks preconditions before touching the kernel, then wires
 * target discovery, the loader, the profile and a writer together. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <unistd.h>

#include "cmd.h"
#include "launch.h"
#include "loader.h"
#include "log.h"
#include "out.h"
#include "outfile.h"
#include "preflight.h"
#include "profile.h"
#include "proc.h"
#include "progress.h"
#include "session.h"
#include "target.h"
#include "util.h"

struct record_opts {
	pid_t pids[SESSION_MAX_PIDS];
	size_t npids;
	uint32_t frequency_hz;
	uint64_t duration_ms; /* 0 = until interrupted or the targets exit */
	const char *output;
	const char *format;
	const char *event;
	uint32_t max_depth;
	bool threads;
	char **command; /* after "--" */
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void record_help(FILE *f)
{
	fprintf(f,
		"Usage: pywalk record [options] -p PID [-p PID...]\n"
		"       pywalk record [options] -- COMMAND [ARGS...]\n\n"
		"Sample the Python stacks of running processes, or of a command until it exits,\n"
		"and write a profile. Only stacks proven complete are counted; every sample is\n"
		"accounted for in a summary on stderr.\n\n"
		"Options:\n"
		"  -p, --pid PID          process to profile (repeat, or PID,PID,...)\n"
		"  -F, --frequency HZ     samples per second per CPU (default 99; -r, --rate too)\n"
		"  -d, --duration TIME    stop after TIME: 10, 10s, 500ms, 2m (default: until\n"
		"                         Ctrl-C or the targets exit)\n"
		"  -o, --output FILE      write the profile to FILE (default: stdout)\n"
		"  -f, --format FMT       %s\n"
		"                         (default: by FILE's extension, else folded)\n"
		"      --threads          add a root frame per thread: 'comm (TID)'\n"
		"      --max-depth N      longest stack kept, 1-%d Python frames (default %d);\n"
		"                         deeper stacks are rejected and counted, never cut\n"
		"  -e, --event EVENT      perf event: cpu-clock (default), task-clock, cycles\n"
		"  -q, --quiet            no summary or progress line, only errors\n"
		"  -v, --verbose          more diagnostics (-vv adds libbpf's)\n"
		"  -h, --help             this text\n\n"
		"Folded output: one line per distinct stack, root first,\n"
		"  'qualname (file:line);...;qualname (file:line) COUNT'\n"
		"with ';', '\\' and control characters in names written as \\x3b, \\\\, \\n, \\xNN\n"
		"(NUL \\x00), and C1, bidi and invisible characters as \\uXXXX (\\UXXXXXXXX\n"
		"past U+FFFF).\n"
		"Several processes get a root frame 'comm (PID)'.\n\n"
		"Examples:\n"
		"    pywalk record -p 4242 -d 10 -o out.folded     # 10 s of PID 4242\n"
		"    pywalk record -F 999 -- python3 app.py --flag # a command, to its end\n"
		"    pywalk record -p 1,2 --threads -d 30          # two processes, per thread\n\n"
		"Exit status: 0 ok (also after Ctrl-C: the profile is written), 1 runtime failure,\n"
		"2 usage error.\n",
		out_names(), PW_MAX_FRAMES_CAP, PW_DEFAULT_MAX_DEPTH);
}

static int usage_error(const char *fmt, const char *arg)
{
	return cmd_usage_error("record", fmt, arg);
}

/* Returns -1 to go on, or an exit code. */
static int parse_args(int argc, char **argv, struct record_opts *o)
{
	enum { OPT_THREADS = 256, OPT_MAX_DEPTH };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "rate", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "event", required_argument, NULL, 'e' },
		{ "threads", no_argument, NULL, OPT_THREADS },
		{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	o->frequency_hz = 99;
	o->max_depth = PW_DEFAULT_MAX_DEPTH;
	opterr = 0;
	optind = 1;
	/* '+': stop at the first non-option so the command's own flags stay its own */
	while ((c = getopt_long(argc, argv, "+:p:F:r:d:o:f:e:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (session_add_pids(o->pids, &o->npids, optarg))
				return usage_error("invalid PID list '%s'", optarg);
			break;
		case 'F':
		case 'r':
			if (parse_u32(optarg, 1, 100000, &o->frequency_hz))
				return usage_error("invalid frequency '%s' (1-100000 Hz)", optarg);
			break;
		case 'd':
			if (parse_duration_ms(optarg, &o->duration_ms))
				return usage_error("invalid duration '%s' (e.g. 10, 10s, 500ms, 2m)",
						   optarg);
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			o->format = optarg;
			break;
		case 'e':
			o->event = optarg;
			break;
		case OPT_THREADS:
			o->threads = true;
			break;
		case OPT_MAX_DEPTH:
			if (parse_u32(optarg, 1, PW_MAX_FRAMES_CAP, &o->max_depth))
				return usage_error("invalid --max-depth '%s' (1-4096)", optarg);
			break;
		case 'q':
			log_level = LOG_ERR;
			break;
		case 'v':
			log_level = log_level < LOG_DEBUG ? LOG_DEBUG : LOG_LIBBPF;
			break;
		case 'h':
			record_help(stdout);
			return EXIT_OK;
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->command = argv + optind;
	if (!o->npids && !o->command)
		return usage_error("%s", "nothing to profile: give -p PID or -- COMMAND");
	if (o->npids && o->command)
		return usage_error("%s", "give either -p PID or a command, not both");
	if (o->format && !out_by_name(o->format))
		return usage_error("unknown format '%s'", o->format);
	return -1;
}

static int on_sample(void *ctx, const void *data, size_t size)
{
	return profile__add_record(ctx, data, size);
}

static void print_summary(const uint64_t counts[PW_OUT__COUNT], uint64_t runs,
			  const struct profile *p)
{
	const struct profile_drops *d = profile__drops(p);
	uint64_t dropped = profile__dropped(p);

	if (log_level < LOG_INFO)
		return;
	fprintf(stderr, "pywalk: %llu perf events, accounted as:\n", (unsigned long long)runs);
	for (int i = 0; i < PW_OUT__COUNT; i++)
		fprintf(stderr, "  %-26s %10llu\n", session_outcome_label(i, false),
			(unsigned long long)counts[i]);
	if (dropped)
		fprintf(stderr,
			"pywalk: of the shipped stacks, %llu were not counted: %llu unsymbolizable "
			"(code object unreadable, e.g. process exited), %llu stale (code object "
			"freed and its address reused), %llu malformed, %llu of untracked "
			"processes\n",
			(unsigned long long)dropped, (unsigned long long)d->unsymbolized,
			(unsigned long long)d->stale, (unsigned long long)d->malformed,
			(unsigned long long)d->unknown_pid);
}

/* After exec: wait until the command's interpreter is up. 0, or an exit code path error. */
static int wait_for_launched(struct launch *l, struct target *t)
{
	char why[512] = "";
	uint64_t start = now_ns();
	int err;

	for (;;) {
		err = target_open(l->pid, t, why, sizeof(why));
		if (!err)
			return 0;
		if (launch_poll_exit(l)) {
			pw_err("the command exited before Python started in it\n");
			return -ECHILD;
		}
		/* the dynamic loader maps libpython before main(), so a program that still has
		 * no _PyRuntime after a second of running is not Python */
		if (err != -EAGAIN && (err != -ENOEXEC || now_ns() - start > 1000000000ull))
			break;
		if (stop_requested)
			return -EINTR;
		usleep(2000);
	}
	pw_err("%s\n", why);
	return err;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	struct target *targets = NULL;
	struct profile *prof = NULL;
	struct loader *ld = NULL;
	struct outfile out = { 0 };
	struct launch child = { .pid = -1, .release_fd = -1, .exec_err_fd = -1 };
	const struct out_writer *writer;
	struct sigaction sa = { .sa_handler = on_signal };
	struct progress progress = { 0 };
	uint64_t counts[PW_OUT__COUNT] = { 0 }, runs = 0, deadline = 0;
	char why[512] = "";
	size_t ntargets;
	int ret = EXIT_FAIL, err;

	ret = parse_args(argc, argv, &o);
	if (ret >= 0)
		return ret;
	ret = EXIT_FAIL;

	writer = o.format ? out_by_name(o.format) : NULL;
	if (!writer && o.output)
		writer = out_by_path(o.output);
	if (!writer)
		writer = out_by_name("folded");

	if (preflight_check(why, sizeof(why))) {
		pw_err("%s\n", why);
		return EXIT_FAIL;
	}
	err = outfile_open(&out, o.output);
	if (err) {
		pw_err("cannot write %s: %s\n", o.output, strerror(-err));
		return EXIT_FAIL;
	}

	ntargets = o.command ? 1 : o.npids;
	targets = calloc(ntargets, sizeof(*targets));
	if (!targets) {
		pw_err("out of memory\n");
		goto out;
	}
	if (!o.command && session_open_pids(o.pids, o.npids, targets))
		goto out;

	prof = profile__new(&(struct profile_opts){ .by_thread = o.threads,
						    .by_process = ntargets > 1 });
	if (!prof) {
		pw_err("out of memory\n");
		goto out;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	if (o.command) {
		err = launch_prepare(&child, o.command);
		if (err) {
			pw_err("cannot start %s: %s\n", o.command[0], strerror(-err));
			goto out;
		}
	}

	log_hook_libbpf();
	ld = loader__open(&(struct loader_opts){ .frequency_hz = o.frequency_hz,
						 .max_depth = o.max_depth,
						 .event = o.event,
						 .on_sample = on_sample,
						 .ctx = prof },
			  why, sizeof(why));
	if (!ld) {
		pw_err("%s\n", why);
		goto out;
	}

	if (o.command) {
		err = launch_release(&child);
		if (err) {
			pw_err("cannot run %s: %s\n", o.command[0], strerror(-err));
			goto out;
		}
		if (wait_for_launched(&child, &targets[0]))
			goto out;
	}
	/* sampling starts with tracking: writers state its period and time span */
	profile__start_sampling(prof, o.frequency_hz);
	if (session_track(prof, ld, targets, ntargets))
		goto out;
	if (o.duration_ms)
		deadline = now_ns() + o.duration_ms * 1000000ull;
	pw_debug("sampling %zu process(es) at %u Hz\n", ntargets, o.frequency_hz);

	progress_init(&progress, now_ns());
	while (!stop_requested) {
		err = loader__poll(ld, 100);
		if (err < 0) {
			progress_clear(&progress);
			pw_err("reading samples failed: %s\n", strerror(-err));
			goto out;
		}
		if (deadline && now_ns() >= deadline)
			break;
		if (o.command ? launch_poll_exit(&child) : !session_any_alive(targets, ntargets))
			break;
		/* the counters are per-CPU map reads: only when the line is due */
		if (progress_due(&progress, now_ns()) && !loader__read_outcomes(ld, counts, &runs))
			progress_show(&progress, now_ns(), counts[PW_OUT_SHIPPED],
				      session_rejected(counts, NULL), counts[PW_OUT_LOST]);
	}
	/* before the profile (stdout may be this terminal too) and the summary */
	progress_clear(&progress);
	/* stop sampling, then take what is still in the ring buffer: after this the
	 * counters and the records agree */
	loader__stop(ld);
	profile__stop_sampling(prof);
	err = loader__drain(ld);
	if (err < 0) {
		pw_err("reading samples failed: %s\n", strerror(-err));
		goto out;
	}
	err = loader__read_outcomes(ld, counts, &runs);
	if (err) {
		pw_err("cannot read the outcome counters: %s\n", strerror(-err));
		goto out;
	}
	err = writer->write(out.f, prof);
	if (!err)
		err = outfile_commit(&out);
	if (err) {
		pw_err("cannot write %s: %s\n", o.output ? o.output : "stdout", strerror(-err));
		goto out;
	}
	print_summary(counts, runs, prof);
	if (!agg__total(profile__agg(prof)))
		pw_warn("no Python stacks were captured (pywalk samples on-CPU time; "
			"was the target idle?)\n");
	ret = EXIT_OK;
out:
	if (ret != EXIT_OK)
		outfile_abort(&out);
	if (o.command)
		launch_kill(&child);
	loader__free(ld);
	profile__free(prof);
	free(targets);
	return ret;
}
