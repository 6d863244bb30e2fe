// SPDX-License-Identifier: MIT
/* pywalk entry point: the subcommand table, global options and exit codes. No real work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/log.h"

static const struct cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} cmds[] = {
	{ "record", cmd_record, "sample Python stacks of processes or a command, write a profile" },
	{ "trace", cmd_trace, "Python stacks on any probe (tracepoints, uprobes, USDT), counted" },
	{ "top", cmd_top, "live view of the functions processes spend CPU in, like top" },
	{ "agent", cmd_agent, "always-on host profiler: windows to Pyroscope, Parca, OTLP, files" },
	{ "dump", cmd_dump, "every thread's Python stack of a process, now (where is it stuck?)" },
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: pywalk <command> [options] [-- command args...]\n\n"
		"An eBPF sampling profiler for CPython 3.10-3.15 that ships only complete stacks.\n\n"
		"Commands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "  %-8s %s\n", "help", "show help of a command ('pywalk help record')");
	fprintf(f,
		"\nOptions: -h, --help   this text;   --version   print the version\n"
		"\nExamples:\n"
		"    pywalk record -p 4242 -d 10 -o out.folded   # 10 s of PID 4242\n"
		"    pywalk record -- python3 app.py             # profile a command to its end\n"
		"    pywalk record -p 4242 -d 30 -o flame.html   # interactive flame graph\n"
		"    pywalk top -p 4242                          # live view, like top\n"
		"\nExit status: 0 ok, 1 runtime failure, 2 usage error.\n");
}

int main(int argc, char **argv)
{
	const char *name;

	/* root's shell may name debuginfod servers: --native must not fetch from the network
	 * what a target's build-id asks for (debug files are looked for locally only) */
	unsetenv("DEBUGINFOD_URLS");
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	name = argv[1];
	if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(name, "--version") || !strcmp(name, "version")) {
		printf("pywalk %s\n", PYWALK_VERSION);
		return 0;
	}
	if (!strcmp(name, "help")) {
		if (argc < 3) {
			usage(stdout);
			return 0;
		}
		name = argv[2];
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			if (!strcmp(cmds[i].name, name)) {
				char *help_argv[] = { (char *)name, "--help", NULL };

				return cmds[i].run(2, help_argv);
			}
		}
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmds[i].name, name))
			return cmds[i].run(argc - 1, argv + 1);
	pw_err("unknown command '%s'\nTry 'pywalk --help'.\n", name);
	return 2;
}
