/* SPDX-License-Identifier: MIT */
/* Every thread's Python stack of one process, now (pywalk dump). The process is paused with
 * ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT: no signal it could see) while its thread states
 * are read, so each stack is the one of that instant; the frames are walked by the same
 * walker the BPF side runs (bpf/walk.h), over the target's memory, with the same proof of
 * completeness. Without the pause a stack that moved under the walk is rejected and tried
 * again. */
#ifndef PW_DUMP_H
#define PW_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"
#include "pystate/asyncio_tasks.h"
#include "pystate/pythreads.h"
#include "inspect/target.h"

struct dump_thread {
	pid_t tid;			  /* host tid; 0 when it could not be matched */
	uint64_t thread_id;		  /* what the thread state says: native tid or pthread id */
	char name[64];			  /* comm (raw bytes from the kernel) */
	char pyname[PYTHREADS_NAME_SIZE]; /* threading's name for it, "" when none */
	char state;	/* /proc/PID/task/TID/stat state: R, S, D, T, ... (0: unknown) */
	char wchan[64]; /* the kernel function it waits in ("" when running/unknown) */
	int outcome;	/* PW_OUT_SHIPPED, or why its stack is not shown */
	bool moved;	/* not paused: it ran while it was read (outcome TORN) */
	uint16_t gil;	/* PW_SF_GIL_* as the sampler would say (0: cannot tell) */
	uint32_t nframes;
	struct pw_frame *frames; /* leaf first */
};

struct dump {
	struct target t;
	bool paused;
	struct dump_thread *threads;
	size_t nthreads;
	unsigned int attempts; /* reads of the thread states it took (not paused: retries) */
	int names_err;	       /* reading the Python thread names: 0 or a negative errno */
	struct pythreads_result names;
	bool async_refused; /* --async for a Python without the table: nothing read */
	bool async_read;    /* --async: aio holds the tasks of the same instant */
	struct async_tasks aio;
};

struct dump_opts {
	bool nonblocking;   /* do not pause the process */
	uint32_t max_depth; /* 0: PW_DEFAULT_MAX_DEPTH */
	bool async;	    /* also read every asyncio task (3.14+) */
};

/* Read every thread's stack of `pid`. 0, or a negative errno with a sentence in `why`. */
int dump_process(pid_t pid, const struct dump_opts *o, struct dump *out, char *why,
		 size_t why_size);
void dump_free(struct dump *d);

/* The stack of thread `tid` of attached target `t`, read without pausing (for a thread
 * that is asleep: its stack cannot move), as the sample record the BPF side would have
 * shipped at its switch-out: probe PW_PROBE_OFFCPU, weight 0, time `time_ns`. Returns the
 * record's size, 0 when the thread has no complete Python stack, or a negative errno. */
int dump_thread_record(const struct target *t, pid_t tid, uint32_t max_depth, uint64_t time_ns,
		       void *buf, size_t size);

#endif
