/* SPDX-License-Identifier: MIT */
/* Subcommands: each parses its own options and wires the modules together. */
#ifndef PW_CMD_H
#define PW_CMD_H

#define PYWALK_VERSION "0.1.0"

enum exit_code { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* Print "pywalk: <fmt % arg>" and the pointer to `pywalk CMD --help`; returns EXIT_USAGE. */
int cmd_usage_error(const char *cmd, const char *fmt, const char *arg);

/* argv[0] is the command name. Returns an exit code. */
int cmd_record(int argc, char **argv);
int cmd_top(int argc, char **argv);

#endif
