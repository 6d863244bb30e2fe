/* SPDX-License-Identifier: MIT */
/* Output writers behind one small table; each writer escapes what it prints. */
#ifndef PW_OUT_H
#define PW_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "profile/profile.h"

struct out_writer {
	const char *name;      /* -f/--format value */
	const char *extension; /* picked by output file name's ending, e.g. ".folded" */
	int (*write)(FILE *f, const struct profile *p);
	bool timeline; /* needs each sample's time (profile_opts.timeline) */
};

/* Writer by format name, NULL if unknown. */
const struct out_writer *out_by_name(const char *name);
/* Writer for an output path by its extension; NULL when the extension says nothing. */
const struct out_writer *out_by_path(const char *path);
/* The writer a command uses: the one --format names (format, else NULL), else the one the
 * output path's extension names (path, else NULL), else folded. Never NULL (an unknown
 * format, which the command line refuses first, counts as none). */
const struct out_writer *out_choose(const char *format, const char *path);
/* Does the path's last component have an extension ("x.svg", not "x" or ".hidden")? */
bool out_path_has_extension(const char *path);
/* Comma-separated list of format names, for help and error messages. */
const char *out_names(void);

int out_folded_write(FILE *f, const struct profile *p);
/* One frame as folded output writes it, `name (file:line)` escaped (trace --print too). */
struct strbuf;
int out_folded_frame(struct strbuf *sb, const struct symtab *st, const struct agg_frame *fr);
int out_html_write(FILE *f, const struct profile *p);
int out_svg_write(FILE *f, const struct profile *p);
int out_speedscope_write(FILE *f, const struct profile *p);
/* speedscope's format with samples in time order per thread (needs opts.timeline). */
int out_timeline_write(FILE *f, const struct profile *p);
int out_pprof_write(FILE *f, const struct profile *p);

/* pprof of part of a profile, for the agent: only the stacks of process `proc` (an agg
 * stack's proc; -1: all; and of PID `pid` when > 0); `fleet` names the thread label thread_id (as fleet back ends
 * do) instead of tid; `labels` are added to every sample (key, value pairs). */
struct out_pprof_opts {
	int64_t proc;
	int64_t pid; /* > 0: only the stacks of processes with this PID */
	bool fleet;
	const char *(*labels)[2];
	size_t nlabels;
	/* when set, the agg stacks to look at (indexes, ascending), instead of all of them:
	 * the stacks of `proc`, listed once for a window of thousands of processes, so that
	 * writing each process costs its own stacks and frames, not the window's */
	const uint32_t *stacks;
	size_t nstacks;
};
int out_pprof_write_opts(FILE *f, const struct profile *p, const struct out_pprof_opts *o);

/* OTLP profiles of one process, for the agent's OTLP sink: an ExportProfilesServiceRequest
 * (opentelemetry-proto v1.11.0, profiles v1development) holding the stacks of process
 * `proc` (an agg stack's proc) as one resource, one scope ("pywalk") and one profile. */
struct out_otlp_opts {
	uint32_t proc;
	const char *service;	/* service.name; NULL: the process's service name, else comm */
	const char *host;	/* host.name; NULL or "": left out */
	const uint32_t *stacks; /* as out_pprof_opts.stacks: those of `proc`; NULL: look at all */
	size_t nstacks;
};
/* The encoded request into *buf (malloc'ed) and *len. 0, -EINVAL (no such process),
 * -E2BIG (a table past int32 indexes) or -ENOMEM. */
int out_otlp_encode(const struct profile *p, const struct out_otlp_opts *o, void **buf,
		    size_t *len);

#endif
