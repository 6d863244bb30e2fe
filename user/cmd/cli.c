// SPDX-License-Identifier: MIT
/* Shared option groups: one option table and one help paragraph per group, merged with a
 * command's own options into one getopt_long loop. Cross-option conflicts are checked
 * here, right after parsing, before anything touches the kernel. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "lib/log.h"
#include "output/out.h"
#include "lib/util.h"

enum {
	OPT_ALL = 0x1000,
	OPT_SUBPROCESSES,
	OPT_MAX_DEPTH,
	OPT_MAX_PROCESSES,
	OPT_SYMBOL_CACHE,
	OPT_RING_SIZE,
	OPT_KERNEL,
	OPT_NATIVE,
	OPT_NATIVE_STACK,
	OPT_NATIVE_CACHE,
	OPT_MODE = CLI_OPT_MODE,
	OPT_MIN_BLOCK = CLI_OPT_MIN_BLOCK,
	OPT_ASYNC = CLI_OPT_ASYNC,
};

static const struct option sampling_options[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "all", no_argument, NULL, OPT_ALL },
	{ "subprocesses", no_argument, NULL, OPT_SUBPROCESSES },
	{ "frequency", required_argument, NULL, 'F' },
	{ "rate", required_argument, NULL, 'r' },
	{ "event", required_argument, NULL, 'e' },
	{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
	{ "max-processes", required_argument, NULL, OPT_MAX_PROCESSES },
	{ "symbol-cache", required_argument, NULL, OPT_SYMBOL_CACHE },
	{ "ring-size", required_argument, NULL, OPT_RING_SIZE },
	{ "kernel", no_argument, NULL, OPT_KERNEL },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "min-block", required_argument, NULL, OPT_MIN_BLOCK },
	{ "async", no_argument, NULL, OPT_ASYNC },
};
static const struct option native_options[] = {
	{ "native", no_argument, NULL, OPT_NATIVE },
	{ "native-stack", required_argument, NULL, OPT_NATIVE_STACK },
	{ "native-cache", required_argument, NULL, OPT_NATIVE_CACHE },
};
static const struct option duration_options[] = {
	{ "duration", required_argument, NULL, 'd' },
};
static const struct option output_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, 'f' },
};
static const struct option quiet_options[] = {
	{ "quiet", no_argument, NULL, 'q' },
};
static const struct option common_options[] = {
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
};

#define MAX_OPTIONS 64

void cli_help_groups(FILE *f, unsigned int groups, unsigned int default_hz)
{
	if (groups & CLI_SAMPLING)
		fprintf(f,
			"What to sample:\n"
			"  -p, --pid PID          process to profile (repeat, or PID,PID,...)\n"
			"      --all              every Python process on the host, those running\n"
			"                         now and every one that starts later\n"
			"      --subprocesses     also every descendant of -p PID or of the command\n"
			"                         (fork children, shells that start Python, ...)\n");
	if ((groups & CLI_SAMPLING) && (groups & CLI_RATE))
		fprintf(f,
			"  -F, --frequency HZ     samples per second per CPU (default %u; -r, --rate\n"
			"                         too)\n"
			"  -e, --event EVENT      perf event: cpu-clock (default), task-clock, cycles\n",
			default_hz ? default_hz : 99);
	if (groups & CLI_SAMPLING)
		fprintf(f,
			"      --max-depth N      longest stack kept, 1-%d Python frames (default\n"
			"                         %d); deeper stacks are rejected and counted, never\n"
			"                         cut\n"
			"      --max-processes N  processes sampled at once (default: 8192, or twice\n"
			"                         the processes running, whichever is more)\n"
			"      --symbol-cache SIZE\n"
			"                         memory for the code objects that name frames,\n"
			"                         least recently used dropped first: 1M-64G\n"
			"                         (default 64M; K, M, G suffixes)\n"
			"      --ring-size SIZE   the ring buffer records reach pywalk through:\n"
			"                         64K-1G, a power of two (default 4M-8M, by -F and\n"
			"                         the CPUs); what does not fit is counted lost\n"
			"      --kernel           end each stack in its kernel frames (system calls,\n"
			"                         page faults; off-cpu: why the thread waited),\n"
			"                         named from /proc/kallsyms\n",
			PW_MAX_FRAMES_CAP, PW_DEFAULT_MAX_DEPTH);
	if ((groups & CLI_SAMPLING) && (groups & CLI_RATE))
		fprintf(f,
			"      --mode MODE        cpu (default): on-CPU samples; off-cpu: time\n"
			"                         spent off CPU (sleeping, waiting, I/O,\n"
			"                         preempted) by the stack that waited; wall: both,\n"
			"                         in nanoseconds, every thread; gil: on-CPU\n"
			"                         samples of threads holding the GIL (refused\n"
			"                         for a free-threaded 3.14t: it has none)\n"
			"      --min-block TIME   off-cpu, wall: do not count shorter times off CPU\n"
			"                         (default 0; e.g. 1ms, 500us)\n"
			"      --async            asyncio (CPython 3.14+): a thread running a task\n"
			"                         shows '[task NAME]' and the task's coroutines\n"
			"                         after each task that awaits it, outermost first\n");
	if ((groups & CLI_SAMPLING) && (groups & CLI_NATIVE))
		fprintf(f,
			"      --native           native (C) frames between the Python frames: each\n"
			"                         eval-loop activation is replaced by the Python\n"
			"                         frames it ran ('name [native]', 'lib+0xOFF\n"
			"                         [native]' without a symbol)\n"
			"      --native-stack SIZE\n"
			"                         bytes of user stack --native copies and unwinds\n"
			"                         per stack: 4K-64K, a power of two (default 16K)\n"
			"      --native-cache SIZE\n"
			"                         memory for the binaries --native keeps open: past\n"
			"                         it, the least recently sampled process's are closed\n"
			"                         (1M-64G, default 256M)\n");
	if (groups & CLI_DURATION)
		fprintf(f,
			"  -d, --duration TIME    stop after TIME: 10, 10s, 500ms, 2m (default:\n"
			"                         until Ctrl-C or the targets exit)\n");
	if (groups & CLI_OUTPUT)
		fprintf(f,
			"Output:\n"
			"  -o, --output FILE      write the profile to FILE (default: stdout)\n"
			"  -f, --format FMT       %s\n"
			"                         (default: by FILE's extension; none, or stdout:\n"
			"                         folded)\n",
			out_names());
}

void cli_help_other(FILE *f, unsigned int groups)
{
	fprintf(f, "Other:\n");
	if (groups & CLI_QUIET)
		fprintf(f, "  -q, --quiet            no summary or progress line, only errors\n");
	fprintf(f, "  -v, --verbose          more diagnostics (-vv adds libbpf's)\n"
		   "  -h, --help             this text\n");
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "pywalk: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'pywalk %s --help'.\n", cmd);
	return EXIT_USAGE;
}

static int add_pids(struct cli_sampling *s, const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		uint32_t pid;

		err = parse_u32(tok, 1, 0x3fffffff, &pid);
		if (!err && s->npids >= CLI_MAX_PIDS)
			err = -E2BIG;
		if (!err)
			s->pids[s->npids++] = (pid_t)pid;
	}
	free(copy);
	return err;
}

/* One option of a group; returns 1 when it is not one of them, 0 when taken, or an exit
 * code. */
static int handle_group_option(const struct cli_spec *spec, struct cli_sampling *s,
			       struct cli_output *o, int c, const char *arg)
{
	const char *cmd = spec->name;

	bool rate = spec->groups & CLI_RATE;

	if (s && (spec->groups & CLI_SAMPLING)) {
		switch (c) {
		case 'F':
		case 'r':
		case 'e':
		case OPT_MODE:
		case OPT_MIN_BLOCK:
		case OPT_ASYNC:
			if (!rate)
				return 1; /* the command's own handler says what to use instead */
			break;
		}
		switch (c) {
		case 'p':
			if (add_pids(s, arg))
				return cli_usage_error(cmd, "invalid PID list '%s'", arg);
			return 0;
		case OPT_ALL:
			s->all = true;
			return 0;
		case OPT_SUBPROCESSES:
			s->subprocesses = true;
			return 0;
		case 'F':
		case 'r':
			if (parse_u32(arg, 1, 100000, &s->frequency_hz))
				return cli_usage_error(cmd, "invalid frequency '%s' (1-100000 Hz)",
						       arg);
			return 0;
		case 'e':
			s->event = arg;
			return 0;
		case OPT_MAX_DEPTH:
			if (parse_u32(arg, 1, PW_MAX_FRAMES_CAP, &s->max_depth))
				return cli_usage_error(cmd, "invalid --max-depth '%s' (1-4096)",
						       arg);
			return 0;
		case OPT_MAX_PROCESSES:
			if (parse_u32(arg, 1, 1 << 22, &s->max_processes))
				return cli_usage_error(
					cmd, "invalid --max-processes '%s' (1-4194304)", arg);
			return 0;
		case OPT_SYMBOL_CACHE: {
			uint64_t bytes;

			if (parse_size(arg, 1ull << 20, 64ull << 30, &bytes) || bytes > SIZE_MAX)
				return cli_usage_error(cmd, "invalid --symbol-cache '%s' (1M-64G)",
						       arg);
			s->symbol_cache_bytes = (size_t)bytes;
			return 0;
		}
		case OPT_RING_SIZE: {
			uint64_t bytes;

			/* the kernel takes a power of two in whole pages: 64K is the largest
			 * page Linux uses (arm64); the ring is mapped twice, so it is RSS */
			if (parse_size(arg, RING_SIZE_MIN, RING_SIZE_MAX, &bytes) ||
			    (bytes & (bytes - 1)))
				return cli_usage_error(cmd,
						       "invalid --ring-size '%s' (64K-1G, a "
						       "power of two)",
						       arg);
			s->ring_bytes = (uint32_t)bytes;
			return 0;
		}
		case OPT_KERNEL:
			s->kernel = true;
			return 0;
		}
	}
	if (s && (spec->groups & CLI_SAMPLING) && (spec->groups & CLI_NATIVE)) {
		uint64_t bytes;

		switch (c) {
		case OPT_NATIVE:
			s->native = true;
			return 0;
		case OPT_NATIVE_STACK:
			if (parse_size(arg, PW_USTACK_PAGE, PW_USTACK_MAX, &bytes) ||
			    (bytes & (bytes - 1)))
				return cli_usage_error(cmd,
						       "invalid --native-stack '%s' (4K-64K, a "
						       "power of two)",
						       arg);
			s->native_stack = (uint32_t)bytes;
			return 0;
		case OPT_NATIVE_CACHE:
			if (parse_size(arg, 1ull << 20, 64ull << 30, &s->native_cache))
				return cli_usage_error(cmd, "invalid --native-cache '%s' (1M-64G)",
						       arg);
			return 0;
		}
	}
	if (s && (spec->groups & CLI_SAMPLING)) {
		switch (c) {
		case OPT_MODE:
			if (!strcmp(arg, "cpu") || !strcmp(arg, "on-cpu"))
				s->mode = CLI_MODE_CPU;
			else if (!strcmp(arg, "off-cpu"))
				s->mode = CLI_MODE_OFFCPU;
			else if (!strcmp(arg, "wall"))
				s->mode = CLI_MODE_WALL;
			else if (!strcmp(arg, "gil"))
				s->mode = CLI_MODE_GIL;
			else
				return cli_usage_error(
					cmd, "invalid --mode '%s' (cpu, off-cpu, wall or gil)",
					arg);
			return 0;
		case OPT_ASYNC:
			s->async = true;
			return 0;
		case OPT_MIN_BLOCK:
			if (parse_duration_ns(arg, &s->min_block_ns))
				return cli_usage_error(cmd,
						       "invalid --min-block '%s' (e.g. 1ms, 500us, "
						       "0)",
						       arg);
			return 0;
		}
	}
	if (s && (spec->groups & CLI_DURATION) && c == 'd') {
		if (parse_duration_ms(arg, &s->duration_ms))
			return cli_usage_error(
				cmd, "invalid duration '%s' (e.g. 10, 10s, 500ms, 2m)", arg);
		return 0;
	}
	if (o && (spec->groups & CLI_OUTPUT)) {
		if (c == 'o') {
			o->path = arg;
			return 0;
		}
		if (c == 'f') {
			o->format = arg;
			return 0;
		}
	}
	if ((spec->groups & CLI_QUIET) && c == 'q') {
		log_level = LOG_ERR;
		return 0;
	}
	if (c == 'v') {
		log_level = log_level < LOG_DEBUG ? LOG_DEBUG : LOG_LIBBPF;
		return 0;
	}
	return 1;
}

static void append(struct option *all, size_t *n, const struct option *opts, size_t count)
{
	for (size_t i = 0; i < count && *n < MAX_OPTIONS - 1; i++)
		all[(*n)++] = opts[i];
}

/* Conflicts between options, and what a group needs. Returns -1 or an exit code. */
static int check(const struct cli_spec *spec, struct cli_sampling *s, const struct cli_output *o)
{
	const char *cmd = spec->name;

	if (s && (spec->groups & CLI_SAMPLING)) {
		if (s->all && (s->npids || s->command))
			return cli_usage_error(cmd, "%s",
					       "--all takes every process: give no -p or command");
		if (!s->all && !s->npids && !s->command &&
		    !(spec->target_optional && *spec->target_optional))
			return cli_usage_error(
				cmd, "%s",
				(spec->groups & CLI_COMMAND)
					? "nothing to profile: give -p PID, --all or -- "
					  "COMMAND"
					: "nothing to profile: give -p PID or --all");
		if (s->npids && s->command)
			return cli_usage_error(cmd, "%s",
					       "give either -p PID or a command, not both");
		if (s->subprocesses && s->all)
			return cli_usage_error(
				cmd, "%s", "--subprocesses needs -p PID or a command, not --all");
		if (s->native_stack && !s->native)
			return cli_usage_error(cmd, "%s", "--native-stack needs --native");
		if (s->native_cache && !s->native)
			return cli_usage_error(cmd, "%s", "--native-cache needs --native");
		if (s->native && !s->native_stack)
			s->native_stack = PW_USTACK_DEFAULT;
	}
	/* a name pywalk does not know is a mistake to say, not a reason to write folded */
	if (o &&
	    (o->format ? !out_by_name(o->format)
		       : o->path && out_path_has_extension(o->path) && !out_by_path(o->path))) {
		if (o->format)
			return cli_usage_error(cmd, "unknown format '%s' (formats: %s)", o->format,
					       out_names());
		return cli_usage_error(
			cmd, "no format has the extension of '%s' (formats: %s; or give -f)",
			o->path, out_names());
	}
	return -1;
}

#define SHORTOPTS_SIZE 128

/* Every long option of the command into all[] (terminated) and its short options into
 * shortopts (SHORTOPTS_SIZE bytes). */
static void build_options(const struct cli_spec *spec, struct option *all, char *shortopts)
{
	size_t n = 0;

	strcpy(shortopts, "+:");
	if (spec->groups & CLI_SAMPLING) {
		append(all, &n, sampling_options, ARRAY_SIZE(sampling_options));
		strcat(shortopts, "p:F:r:e:");
	}
	if ((spec->groups & CLI_SAMPLING) && (spec->groups & CLI_NATIVE))
		append(all, &n, native_options, ARRAY_SIZE(native_options));
	if (spec->groups & CLI_DURATION) {
		append(all, &n, duration_options, ARRAY_SIZE(duration_options));
		strcat(shortopts, "d:");
	}
	if (spec->groups & CLI_OUTPUT) {
		append(all, &n, output_options, ARRAY_SIZE(output_options));
		strcat(shortopts, "o:f:");
	}
	if (spec->groups & CLI_QUIET) {
		append(all, &n, quiet_options, ARRAY_SIZE(quiet_options));
		strcat(shortopts, "q");
	}
	append(all, &n, common_options, ARRAY_SIZE(common_options));
	strcat(shortopts, "vh");
	for (const struct option *x = spec->options; x && x->name; x++)
		append(all, &n, x, 1);
	if (spec->shortopts && strlen(shortopts) + strlen(spec->shortopts) < SHORTOPTS_SIZE)
		strcat(shortopts, spec->shortopts);
	memset(&all[n], 0, sizeof(all[n]));
}

int cli_option_kind(const struct cli_spec *spec, const char *name)
{
	struct option all[MAX_OPTIONS];
	char shortopts[SHORTOPTS_SIZE];

	build_options(spec, all, shortopts);
	for (const struct option *o = all; o->name; o++)
		if (!strcmp(o->name, name))
			return o->has_arg == no_argument ? 0 : 1;
	return -1;
}

int cli_parse(int argc, char **argv, const struct cli_spec *spec, struct cli_sampling *s,
	      struct cli_output *o)
{
	struct option all[MAX_OPTIONS];
	char shortopts[SHORTOPTS_SIZE];
	int c;

	if (s) {
		memset(s, 0, sizeof(*s));
		s->frequency_hz = spec->default_hz ? spec->default_hz : 99;
		s->max_depth = PW_DEFAULT_MAX_DEPTH;
	}
	if (o)
		memset(o, 0, sizeof(*o));
	build_options(spec, all, shortopts);
	opterr = 0;
	optind = 1;
	/* '+': stop at the first non-option so a command's own flags stay its own */
	for (;;) {
		int r;

		c = getopt_long(argc, argv, shortopts, all, NULL);
		if (c == -1) {
			/* '+' stopped at a non-option: the command's positional argument, unless
			 * it was "--" (getopt stepped over it) */
			if (!spec->positional || optind >= argc || !strcmp(argv[optind - 1], "--"))
				break;
			r = spec->positional(spec->ctx, argv[optind++]);
			if (r)
				return r;
			continue;
		}

		if (c == 'h') {
			spec->help(stdout);
			return EXIT_OK;
		}
		if (c == ':')
			return cli_usage_error(spec->name, "option '%s' needs a value",
					       argv[optind - 1]);
		if (c == '?')
			return cli_usage_error(spec->name, "unknown option '%s'", argv[optind - 1]);
		r = handle_group_option(spec, s, o, c, optarg);
		if (r == 1)
			r = spec->handle ? spec->handle(spec->ctx, c, optarg) : 1;
		if (r == 1)
			return cli_usage_error(spec->name, "unknown option '%s'", argv[optind - 1]);
		if (r)
			return r;
	}
	if (optind < argc) {
		if (!s || !(spec->groups & CLI_COMMAND))
			return cli_usage_error(spec->name, "unexpected argument '%s'",
					       argv[optind]);
		s->command = argv + optind;
	}
	if (s && spec->default_all && !s->all && !s->npids && !s->command)
		s->all = true;
	return check(spec, s, o);
}
