/* SPDX-License-Identifier: MIT */
/* The sampling engine every command runs on: privilege checks, target discovery (named
 * PIDs, a launched command, --all, --subprocesses), the loader, the profile, signals and
 * the poll loop that feeds records to them. A command parses its options (cli.h), starts
 * the engine, runs it with its own hook (progress line, key presses, windows), then reads
 * the profile and the counters. */
#ifndef PW_ENGINE_H
#define PW_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "abi.h"
#include "engine/sampling.h"
#include "engine/discover.h"
#include "profile/kagg.h"
#include "profile/profile.h"

struct engine;
struct loader;

struct engine_opts {
	const struct cli_sampling *sampling;
	struct profile_opts profile;
	bool hup_reloads; /* SIGHUP asks for a reload (engine__take_reload), not a stop */
	/* trace: no sampler; its probes are attached by `attach` once the BPF side is
	 * loaded, before any target is added (returns 0 or a negative errno, printed) */
	bool no_sampler;
	uint32_t latency_probes, filter_probes; /* bit per probe id */
	/* trace --aggregate: hits counted in the kernel, drained every second and at the end
	 * into the profile (whose on_stack hook the engine then takes) */
	bool aggregate;
	uint32_t aggregate_entries; /* keys the kernel holds between drains (0: default) */
	bool print_args;	    /* trace --print: samples carry the probe's arguments */
	bool gil_stats;		    /* count every thread's samples by whether it held the GIL */
	int (*attach)(void *ctx, struct loader *ld);
	void *attach_ctx;
};

/* Profiles that may count alongside the engine's own at once. */
#define ENGINE_MAX_TAPS 4

/* Every counter the kernel side and the engine keep, read at one moment. */
struct engine_counts {
	uint64_t outcomes[PW_OUT__COUNT];
	uint64_t runs;			  /* sampler runs; the outcomes add up to it */
	uint64_t counters[PW_CNT__COUNT]; /* code and process records */
	/* --mode off-cpu, wall: every switch-out of a target thread in one outcome */
	uint64_t offcpu_outcomes[PW_OUT__COUNT];
	uint64_t offcpu_runs;
};

/* Check privileges and the kernel, and (without touching the kernel) that the named PIDs
 * are Python processes pywalk can sample. Prints the one error line and returns NULL. */
struct engine *engine__new(const struct engine_opts *opts);
/* The exit code a failed engine__new calls for: EXIT_USAGE (2) when an option cannot apply
 * to a named target (--mode gil where its Python cannot tell who holds the GIL), else 1. */
int engine__new_failure(void);
void engine__free(struct engine *e);

/* Load and attach the BPF side, start following the targets (launching the command, if
 * any), and stamp the start of sampling. Prints the error and returns a negative errno. */
int engine__start(struct engine *e);

/* Called every loop turn with the time; returns 0 to go on, 1 to stop, or a negative errno
 * (printed by the hook). `poll_ms` bounds the wait for records between turns. */
struct engine_hook {
	int (*tick)(void *ctx, struct engine *e, uint64_t now_ns);
	int poll_ms;
	void *ctx;
};

/* Sample until a signal (SIGINT, SIGTERM, SIGHUP), -d, the hook, or the end of every target
 * (the launched command's exit, in launch mode). 0 or a negative errno (printed). */
int engine__run(struct engine *e, const struct engine_hook *hook);

/* Stop sampling and take every record still in the ring buffer: after this the counters and
 * the profile agree. Idempotent. 0 or a negative errno (printed). */
int engine__finish(struct engine *e);

/* The launched command at the end of a run: ENGINE_CMD_EXITED when it ended by itself
 * (*status: its wait status), ENGINE_CMD_STOPPED when it was still running and has now been
 * stopped (SIGTERM) and reaped, ENGINE_CMD_NONE when there is no command. */
enum { ENGINE_CMD_NONE, ENGINE_CMD_EXITED, ENGINE_CMD_STOPPED };
int engine__end_command(struct engine *e, int *status);
/* Was the run ended by a signal? */
bool engine__interrupted(const struct engine *e);
/* Did a SIGHUP ask for a reload since the last call (with hup_reloads)? */
bool engine__take_reload(struct engine *e);
/* Feed every sample to `tap` too (a profile__new_tap of the engine's profile) until it is
 * removed; processes that start and end meanwhile are told to it. 0 or -EBUSY. */
int engine__add_tap(struct engine *e, struct profile *tap);
void engine__remove_tap(struct engine *e, struct profile *tap);
/* Free the names neither the profile nor a tap holds any more (profile__collect_names):
 * after a window's profile is freed. */
void engine__collect_names(struct engine *e);
/* Is anything left to sample (a target, or a followed process that may become one)? */
bool engine__sampling(const struct engine *e);

int engine__read_counts(struct engine *e, struct engine_counts *c);
/* --aggregate: what userspace did with the kernel's counts (NULL without it). */
const struct kagg_stats *engine__kagg_stats(const struct engine *e);
/* (engine__read_counts: with no_sampler, the outcomes of every probe together.)
 * The same for trace's probe `probe` (its outcomes, runs and latency counters; the code and
 * process counters are the run's, as in engine__read_counts). */
int engine__read_probe_counts(struct engine *e, uint32_t probe, struct engine_counts *c);
struct profile *engine__profile(struct engine *e);
const struct discover *engine__discover(const struct engine *e);

/* The end-of-run accounting on stderr (at the default log level): every sampler run in
 * exactly one bucket, what userspace could not count, the processes seen and skipped. */
void engine__print_summary(struct engine *e, const struct engine_counts *c);
/* --gil-stats' table on stderr (nothing without it). */
void engine__print_gil_stats(struct engine *e);
/* Its part after the outcomes: uncounted stacks, processes, lost records (trace prints
 * its own outcomes per probe). */
void engine__print_details(struct engine *e, const struct engine_counts *c);

/* Sum of the "rejected: ..." outcomes; *worst (may be NULL) gets the biggest of them
 * (PW_OUT_TORN when all are zero). */
uint64_t engine_rejected(const uint64_t counts[PW_OUT__COUNT], int *worst);
/* Printed label of an outcome ("rejected: torn chain"); `short_label` drops "rejected: ". */
const char *engine_outcome_label(int outcome, bool short_label);

#endif
