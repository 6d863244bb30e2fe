/* SPDX-License-Identifier: MIT */
/* Subcommands: each parses its own options (cli.h) and runs the engine (engine.h). */
#ifndef PW_CMD_H
#define PW_CMD_H

#include "lib/pywalk.h"

/* argv[0] is the command name. Returns an exit code. */
int cmd_record(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_trace(int argc, char **argv);

#endif
