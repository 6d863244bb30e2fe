/* SPDX-License-Identifier: MIT */
/* trace -l PATTERN: the probes that match, one spec a line, ready to be given back. */
#ifndef PW_TRACE_LIST_H
#define PW_TRACE_LIST_H

#include <stdio.h>

#include "engine/sampling.h"

/* tracepoint:CAT:NAME, uprobe:PATH|LIB:FUNC, usdt:PATH|LIB:PROVIDER:NAME (or usdt:PATH:GLOB),
 * software:NAME, hardware:NAME, globs anywhere but in a path; a library is looked up in
 * the maps of -p's processes. Returns an exit code (errors printed). */
int trace_list(FILE *f, const char *pattern, const struct cli_sampling *s);

#endif
