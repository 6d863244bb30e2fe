/* SPDX-License-Identifier: MIT */
/* One recording's data: ring-buffer records are checked, symbolized and counted here.
 * Writers read it through the accessors; nothing here formats output. */
#ifndef PW_PROFILE_H
#define PW_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agg.h"
#include "symtab.h"
#include "target.h"

/* Presentation choices; samples are always kept per (pid, tid). */
struct profile_opts {
	bool by_thread;	 /* writers add a root frame per thread */
	bool by_process; /* writers add a root frame per process */
};

/* Samples that reached userspace but were not counted, by reason. */
struct profile_drops {
	uint64_t malformed;	/* record shorter than it claims */
	uint64_t unknown_pid;	/* process no longer tracked */
	uint64_t unsymbolized;	/* a code object could not be read (process exited) */
};

struct profile;

struct profile *profile__new(const struct profile_opts *opts);
void profile__free(struct profile *p);

/* Track a target; records of untracked PIDs are dropped. 0 or -ENOMEM. */
int profile__add_target(struct profile *p, const struct target *t);
/* A process exited: forget its cached symbols so reused addresses are re-read. */
void profile__target_gone(struct profile *p, pid_t pid);

/* Add one ring-buffer record. Always returns 0 (problems are counted in drops) unless
 * memory runs out (-ENOMEM). */
int profile__add_record(struct profile *p, const void *data, size_t size);

const struct agg *profile__agg(const struct profile *p);
const struct symtab *profile__symtab(const struct profile *p);
const struct profile_opts *profile__opts(const struct profile *p);
const struct profile_drops *profile__drops(const struct profile *p);
uint64_t profile__records(const struct profile *p);
/* "comm" of a process or thread as seen when it was first sampled ("?" if unknown). */
const char *profile__process_name(const struct profile *p, uint32_t pid);
const char *profile__thread_name(const struct profile *p, uint32_t pid, uint32_t tid);

#endif
