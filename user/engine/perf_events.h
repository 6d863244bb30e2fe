/* SPDX-License-Identifier: MIT */
/* The perf events a BPF program runs on: one per online CPU (every task of the host takes
 * the sampling interrupt), or one per thread of the named processes with `inherit`, so that
 * only they and what they start later take it. */
#ifndef PW_PERF_EVENTS_H
#define PW_PERF_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

struct bpf_program;
struct bpf_link;

/* Past this many threads in the named processes, per-CPU events are opened instead: each
 * per-task event is a file descriptor and a context-switch hook of its own. */
#define PERF_EVENTS_MAX_TASKS 1024

struct perf_event_link {
	int fd;
	int link_fd; /* the BPF program's link to the event */
};

struct perf_events {
	struct perf_event_link *ev;
	size_t n, cap;
	size_t tasks; /* threads given an event of their own (0: per CPU) */
};

/* Open `attr` on every online CPU and attach `prog` (cookie `cookie`) to each. 0 or a
 * negative errno with a sentence in `why`. */
int perf_events__open_cpus(struct perf_events *pe, const struct perf_event_attr *attr, int ncpus,
			   struct bpf_program *prog, uint64_t cookie, char *why, size_t why_size);
/* Open `attr` with inherit on every thread of each of `pids` (listing them again until no
 * new one appears) and attach `prog` to each, disabled until perf_events__enable. -E2BIG
 * (nothing left open) when they have more than `max_tasks` threads; another negative errno
 * with a sentence in `why`. */
int perf_events__open_tasks(struct perf_events *pe, const struct perf_event_attr *attr,
			    const pid_t *pids, size_t npids, size_t max_tasks,
			    struct bpf_program *prog, uint64_t cookie, char *why, size_t why_size);
/* Start the events opened disabled (and their inherited copies). 0 or a negative errno. */
int perf_events__enable(struct perf_events *pe);
/* Detach and close everything; pe can be opened again. */
void perf_events__close(struct perf_events *pe);
void perf_events__free(struct perf_events *pe);

/* The sentence for a failed attach of what (errno err): root and capabilities on EPERM. */
void perf_events_why(char *why, size_t why_size, const char *what, int err);

#endif
