/* SPDX-License-Identifier: MIT */
/* Which processes are sampled, as they come and go: the PIDs a command names (and, when
 * asked, their descendants), or every Python process on the host. Driven by the sampler's
 * fork/exec/exit records and a clock; it inspects and attaches through `discover_ops`, so
 * the state machine runs over synthetic events in the unit tests. Each process lifetime is
 * one target with its own id: a reused PID is a new target. */
#ifndef PW_DISCOVER_H
#define PW_DISCOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"
#include "inspect/target.h"

/* Why a process that was looked at is not sampled (counted, shown in the summary): the
 * words a user reads, and the metric label a query names. */
#define DISCOVER_SKIPS(X)                                                               \
	X(PERMISSION, "permission denied", "permission_denied")                         \
	X(UNSUPPORTED, "unsupported Python version", "unsupported_version")             \
	X(FREE_THREADED, "free-threaded build", "free_threaded")                        \
	X(MAP_FULL, "too many processes (raise --max-processes)", "too_many_processes") \
	X(ERROR, "could not be inspected", "error")

enum discover_skip {
#define DISCOVER_X_ENUM(name, label, id) DISCOVER_SKIP_##name,
	DISCOVER_SKIPS(DISCOVER_X_ENUM)
#undef DISCOVER_X_ENUM
		DISCOVER_SKIP__COUNT,
};

enum discover_end {
	DISCOVER_END_EXIT,     /* the process exited */
	DISCOVER_END_EXEC,     /* it exec'd: the image that was sampled is gone */
	DISCOVER_END_VANISHED, /* gone between inspection and attach (or PID reused) */
};

/* How a process's children are followed (the kernel side's `family` map). */
enum discover_follow {
	DISCOVER_FOLLOW_EXEC = 1,     /* only its own execs (a named PID) */
	DISCOVER_FOLLOW_CHILDREN = 2, /* it and every descendant */
};

struct discover_ops {
	/* as target_inspect */
	int (*inspect)(void *ctx, pid_t pid, struct target *t, bool *maybe_later, char *why,
		       size_t why_size);
	/* start sampling t (t->id set). 0, -E2BIG (no room), or another negative errno */
	int (*attach)(void *ctx, const struct target *t);
	/* stop sampling pid if its config is still target `id` */
	void (*detach)(void *ctx, pid_t pid, uint32_t id);
	/* have the kernel side report pid's execs, and with CHILDREN follow its forks */
	void (*follow)(void *ctx, pid_t pid, enum discover_follow how);
	/* /proc/PID/stat start time: 0 or -ESRCH */
	int (*start_time)(void *ctx, pid_t pid, uint64_t *ticks);
	/* a new pid-namespace view of a fork child (NSpid), 0 when unknown */
	pid_t (*nspid)(void *ctx, pid_t pid);
	/* all PIDs now running (for --all); returns how many, or -errno */
	int (*list_pids)(void *ctx, pid_t **pids);
	/* the profile learns of a target / its end */
	void (*began)(void *ctx, const struct target *t);
	void (*ended)(void *ctx, const struct target *t, enum discover_end why);
	/* one line at -v: a process skipped or followed (`why` says it) */
	void (*note)(void *ctx, pid_t pid, const char *why);
	void *ctx;
};

struct discover_opts {
	bool all;	   /* every process on the host */
	bool subprocesses; /* descendants of the named PIDs / the command */
	bool launched;	   /* the one named PID is a command pywalk started (held before
			    * exec): its descendants are followed unless it is Python */
};

struct discover_stats {
	uint64_t skipped[DISCOVER_SKIP__COUNT];
	uint64_t targets;     /* lifetimes sampled */
	uint64_t inherited;   /* of which fork children that inherited their parent's config */
	uint64_t not_python;  /* followed processes that never ran Python */
	uint64_t inspections; /* target inspections (each reads /proc/PID/maps) */
};

struct discover;

struct discover *discover__new(const struct discover_opts *opts, const struct discover_ops *ops);
void discover__free(struct discover *d);

/* Add a named PID (-p). A process that is not Python is an error (returned, with `why`)
 * unless its descendants are followed, when it is only watched. 0 or a negative errno. */
int discover__add_pid(struct discover *d, pid_t pid, char *why, size_t why_size);
/* The launched command's PID, before it is released to exec. */
int discover__add_launched(struct discover *d, pid_t pid);
/* --all: look at every process running now. */
int discover__scan(struct discover *d, uint64_t now_ns);

/* A PW_REC_PROC record from the sampler. Every now_ns given to discovery is CLOCK_MONOTONIC
 * read before the call, the records' clock: an exec record is compared with when each
 * target of its PID was inspected. */
void discover__on_event(struct discover *d, const struct pw_proc_rec *ev, uint64_t now_ns);
/* Retry processes that may become Python; returns when it next wants to run (ns). */
uint64_t discover__tick(struct discover *d, uint64_t now_ns);

/* The target with id `id` (active or ended), or NULL. */
const struct target *discover__target(const struct discover *d, uint32_t id);
/* Targets being sampled now, and processes followed that may still run Python. */
size_t discover__nactive(const struct discover *d);
size_t discover__nwatched(const struct discover *d);
/* The active targets, for titles (i < nactive). */
const struct target *discover__active(const struct discover *d, size_t i);
const struct discover_stats *discover__stats(const struct discover *d);
/* Printed label of a skip reason. */
const char *discover_skip_label(enum discover_skip s);
const char *discover_skip_id(enum discover_skip s); /* snake_case, for metric labels */

#endif
