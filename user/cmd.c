// SPDX-License-Identifier: MIT
/* What every subcommand shares: the usage-error message. */
#include <stdio.h>

#include "cmd.h"

int cmd_usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "pywalk: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'pywalk %s --help'.\n", cmd);
	return EXIT_USAGE;
}
