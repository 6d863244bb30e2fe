/* SPDX-License-Identifier: MIT */
/* Command-line option groups every command shares (what to sample and how, where the
 * profile goes, verbosity), parsed by one getopt_long loop per command with its own
 * options on top, and one help text per group. */
#ifndef PW_CLI_H
#define PW_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "engine/sampling.h"

/* Where the profile goes: -o, -f */
struct cli_output {
	const char *path; /* NULL: stdout */
	const char *format;
};

/* Option groups a command takes. */
enum {
	CLI_SAMPLING = 1 << 0, /* -p, --all, --subprocesses, -F, -e, --max-depth, ... */
	CLI_DURATION = 1 << 1, /* -d */
	CLI_COMMAND = 1 << 2,  /* -- COMMAND [ARGS...] */
	CLI_OUTPUT = 1 << 3,   /* -o, -f */
	CLI_QUIET = 1 << 4,    /* -q (-v and -h are always there) */
	/* with CLI_SAMPLING: how the sampler samples (-F/-r, -e, --mode, --min-block). A
	 * command without it (trace: each probe has its own rate) gets these options in its
	 * own handler, to refuse them with what to use instead */
	CLI_RATE = 1 << 5,
	/* with CLI_SAMPLING: --native, --native-stack, --native-cache (native frames merged
	 * between the Python ones) */
	CLI_NATIVE = 1 << 6,
};

/* What a command without CLI_RATE gets in its handler for --mode and --min-block (and
 * 'F', 'r', 'e' for -F, -r, -e). */
#define CLI_OPT_MODE 0x1800
#define CLI_OPT_MIN_BLOCK 0x1801
#define CLI_OPT_ASYNC 0x1802

/* A command's own options on top of the groups. */
struct cli_spec {
	const char *name;	      /* "record" */
	unsigned int groups;	      /* CLI_* */
	uint32_t default_hz;	      /* -F when not given (0: 99) */
	bool default_all;	      /* no target given means --all (the agent) */
	const struct option *options; /* its own long options, { 0 }-terminated; may be NULL */
	const char *shortopts;	      /* its own short options ("i:"), may be NULL */
	/* handle one of its own options; returns 0, or an exit code (usage error) */
	int (*handle)(void *ctx, int opt, const char *arg);
	void (*help)(FILE *f); /* the whole --help text (uses cli_help_groups) */
	/* takes the arguments that are not options (trace's probes), anywhere before "--";
	 * the command then starts only after "--". Returns 0 or an exit code. May be NULL. */
	int (*positional)(void *ctx, const char *arg);
	/* when it points to true after parsing, no target is needed (trace -l) */
	const bool *target_optional;
	void *ctx;
};

/* Parse argv (argv[0] is the command name) into `s` and `o` (either may be NULL when the
 * command takes no such group). Defaults are set first. Returns -1 to go on, or an exit
 * code: 0 after --help, 2 after a usage error (already printed). */
int cli_parse(int argc, char **argv, const struct cli_spec *spec, struct cli_sampling *s,
	      struct cli_output *o);

/* Whether `name` (a long option, without "--") is one of the command's: -1 no, 0 yes and
 * takes no value, 1 yes and needs one. For config files that mirror the options. */
int cli_option_kind(const struct cli_spec *spec, const char *name);

/* The options part of the help text for `groups`: what to sample, output; then the
 * command's own options; then cli_help_other (verbosity, help). */
/* default_hz: the command's -F default (0: 99) */
void cli_help_groups(FILE *f, unsigned int groups, unsigned int default_hz);
void cli_help_other(FILE *f, unsigned int groups);

/* Print "pywalk: <fmt % arg>" and the pointer to `pywalk CMD --help`; returns the usage
 * exit code. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
