/* SPDX-License-Identifier: MIT */
/* Target setup shared by `record` and `top`: the PID list option, opening targets by PID,
 * handing them to the profile and the loader, liveness, and reading the outcome counters
 * as the summaries show them. Helpers only: each command keeps its own flow. */
#ifndef PW_SESSION_H
#define PW_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"
#include "loader.h"
#include "profile.h"
#include "target.h"

/* Most processes one command takes with -p. */
#define SESSION_MAX_PIDS 256

/* Append the PIDs of "PID[,PID...]" to pids[*npids], at most SESSION_MAX_PIDS in all.
 * 0, -EINVAL/-ERANGE on a bad PID, -E2BIG when too many, -ENOMEM. */
int session_add_pids(pid_t *pids, size_t *npids, const char *arg);

/* Open targets[i] for pids[i]; a Python still starting up gets up to 2 s. On failure prints
 * the reason (naming the PID and the remedy) and returns a negative errno. */
int session_open_pids(const pid_t *pids, size_t n, struct target *targets);

/* Track the targets in the profile and start sampling them. Prints the error. */
int session_track(struct profile *prof, struct loader *ld, const struct target *targets,
		  size_t n);

/* Is any of the targets still running? */
bool session_any_alive(const struct target *targets, size_t n);

/* Sum of the "rejected: ..." outcomes; *worst (may be NULL) gets the biggest of them
 * (PW_OUT_TORN when all are zero). */
uint64_t session_rejected(const uint64_t counts[PW_OUT__COUNT], int *worst);
/* Printed label of an outcome ("rejected: torn chain"); `short_label` drops "rejected: ". */
const char *session_outcome_label(int outcome, bool short_label);

#endif
