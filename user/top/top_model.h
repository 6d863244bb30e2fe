/* SPDX-License-Identifier: MIT */
/* The numbers behind `pywalk top`: own and total sample counts per function (or, when
 * several processes are watched, per process and function) for the last interval and for
 * the whole run, and their ranking. Reads stacks from an agg (whose stacks
 * are append-only and whose counts only grow, so an interval is the difference between two
 * looks); knows nothing about symbols, escaping or the terminal. */
#ifndef PW_TOP_MODEL_H
#define PW_TOP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/agg.h"

enum top_sort {
	TOP_SORT_OWN,	  /* own samples, most first */
	TOP_SORT_TOTAL,	  /* total samples, most first */
	TOP_SORT_NAME,	  /* qualname, byte order */
	TOP_SORT_PROCESS, /* process label (PIDs in numeric order), then own samples */
};

/* One function (of one process, when rows are per process) in the window shown: samples
 * where it is the leaf frame (own) and samples whose stack holds it anywhere, counted once
 * per sample even when it recurses (total). */
struct top_row {
	uint32_t proc; /* the agg stacks' process; 0 when rows are not per process */
	uint32_t func; /* the agg frames' function id */
	uint64_t own, total;
};

/* How the caller names a function id (the view also prints file and line) and a process
 * (an agg stack's proc: "comm (PID)"). Strings are untrusted and stay valid until the next
 * update; `process` may be NULL when rows are not per process. */
struct top_names {
	const char *(*name)(void *ctx, uint32_t func);
	const char *(*file)(void *ctx, uint32_t func);
	int (*line)(void *ctx, uint32_t func);
	const char *(*process)(void *ctx, uint32_t proc);
	void *ctx;
};

struct top_model;

/* `per_process`: a row is (process, function), so the same function in two processes is
 * two rows; otherwise a row is a function, whatever process its samples came from. */
struct top_model *top_model__new(bool per_process);
bool top_model__per_process(const struct top_model *m);
void top_model__free(struct top_model *m);

/* Take the samples `agg` gained since the previous call (all of them the first time): they
 * become the interval, replacing the previous one, and are added to the whole run.
 * 0 or -ENOMEM (the counts are then unchanged). */
int top_model__update(struct top_model *m, const struct agg *agg);

/* Samples in the last interval, or in the whole run: every counted stack, also those with
 * no Python frame, so the percentages of the rows are of all samples. */
uint64_t top_model__samples(const struct top_model *m, bool cumulative);

/* Rank the rows seen in the interval (or the whole run) by `key`, ties broken by the other
 * count, then the name, then the process label, then the ids, so equal data gives an equal
 * order; `reverse` flips the order. TOP_SORT_PROCESS keeps each process's rows together:
 * by label (then index), then own samples (most first), then the name. Returns the number
 * of rows, or -ENOMEM. The rows, read with top_model__rows(), are owned by the model and
 * valid until the next rank or update. */
int top_model__rank(struct top_model *m, bool cumulative, enum top_sort key, bool reverse,
		    const struct top_names *names);
const struct top_row *top_model__rows(const struct top_model *m, size_t *n);

#endif
