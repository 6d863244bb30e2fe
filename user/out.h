/* SPDX-License-Identifier: MIT */
/* Output writers behind one small table; each writer escapes what it prints. */
#ifndef PW_OUT_H
#define PW_OUT_H

#include <stdio.h>

#include "profile.h"

struct out_writer {
	const char *name;      /* -f/--format value */
	const char *extension; /* picked by output file name's ending, e.g. ".folded" */
	int (*write)(FILE *f, const struct profile *p);
};

/* Writer by format name, NULL if unknown. */
const struct out_writer *out_by_name(const char *name);
/* Writer for an output path by its extension; NULL when the extension says nothing. */
const struct out_writer *out_by_path(const char *path);
/* Comma-separated list of format names, for help and error messages. */
const char *out_names(void);

int out_folded_write(FILE *f, const struct profile *p);
int out_html_write(FILE *f, const struct profile *p);
int out_speedscope_write(FILE *f, const struct profile *p);
int out_pprof_write(FILE *f, const struct profile *p);

#endif
