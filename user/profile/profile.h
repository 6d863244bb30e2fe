/* SPDX-License-Identifier: MIT */
/* One recording's data: ring-buffer records are checked, symbolized and counted here.
 * Writers read it through the accessors; nothing here formats output. */
#ifndef PW_PROFILE_H
#define PW_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "profile/agg.h"
#include "symbolize/kallsyms.h"
#include "symbolize/symtab.h"
#include "inspect/target.h"

struct profile;

/* Presentation choices; samples are always kept per (process lifetime, tid). */
/* What a stack's count is. */
enum profile_value {
	PROFILE_VALUE_SAMPLES = 0, /* on-CPU samples (cpu time = count x period) */
	PROFILE_VALUE_OFFCPU_NS,   /* nanoseconds off CPU */
	PROFILE_VALUE_WALL_NS,	   /* nanoseconds on CPU (samples x period) and off CPU */
};

struct profile_opts {
	enum profile_value value;
	bool by_thread;	     /* writers add a root frame per thread */
	bool by_process;     /* writers add a root frame per process (turned on when a
			      * second process has samples) */
	bool block_frames;   /* an off-CPU stack ends in a pseudo-frame saying why its
			      * thread was off CPU: "[off-cpu: sleeping]" (record) */
	bool by_function;    /* a frame is its function, at its first line, not the line
			      * running: one box per function (--function) */
	size_t symtab_bytes; /* budget of the code-object cache (0: the default) */
	/* --kernel: names the kernel frames samples carry (the caller's, outliving every
	 * profile that uses it; NULL or restricted: "[kernel unsymbolized]" frames) */
	const struct kallsyms *ksyms;
	/* keep every counted sample's time too (the timeline format), within
	 * timeline_bytes (0: PROFILE_TIMELINE_BUDGET); past it samples are counted but not
	 * placed in time, and profile__timeline_dropped says how many */
	bool timeline;
	size_t timeline_bytes;
	/* trace: its probes by id (index 0 unused; the strings outlive the profile), and
	 * whether a probe's hits weigh nanoseconds (--latency) rather than count once.
	 * Several probes get a root frame each in folded output; pprof names its sample
	 * types after them. */
	const char *probe_names[PW_MAX_PROBES];
	bool probe_ns[PW_MAX_PROBES];
	uint32_t nprobes;
	/* called for every stack counted, with its record (`size` bytes from h) and its agg
	 * frame ids root first (trace --print, --aggregate); not inherited by taps and
	 * windows */
	void (*on_stack)(void *ctx, const struct profile *p, const struct pw_sample_hdr *h,
			 size_t size, uint32_t proc, const uint32_t *ids, uint32_t n);
	void *on_stack_ctx;
};

/* A process as outputs name it: one lifetime of one PID (a reused PID is another one). */
struct profile_process {
	uint32_t target; /* its target id */
	pid_t pid;	 /* host PID */
	pid_t nspid;	 /* PID in its own namespace (== pid when not in one) */
	bool gone;	 /* exited or exec'd: its symbols are freed */
	char comm[32];
	char container[65];
	char python[16]; /* "3.12.1", "3.14.7t" for a free-threaded build */
	bool free_threaded;
	char service[129];  /* service name for fleet back ends (sanitized) */
	bool service_asked; /* named by its own environment, not guessed from its command */
};

/* Samples that reached userspace but were not counted, by reason. */
/* Why a shipped stack was not counted: one bucket each, named in the summary and in the
 * agent's metrics. */
enum profile_drop {
	PROFILE_DROP_EXITED,		  /* a code object unread when its process had exited */
	PROFILE_DROP_UNREADABLE,	  /* a code object unreadable in a process still there */
	PROFILE_DROP_NOT_CODE,		  /* no code object at that address any more (freed) */
	PROFILE_DROP_STALE,		  /* another code object took the sampled one's address */
	PROFILE_DROP_MALFORMED,		  /* record shorter than it claims */
	PROFILE_DROP_UNTRACKED,		  /* of a process (target id) never tracked */
	PROFILE_DROP_NO_KSTACK,		  /* its kernel stack record never came (--kernel) */
	PROFILE_DROP_NO_USTACK,		  /* its native stack record never came (--native) */
	PROFILE_DROP_NATIVE_INCOMPLETE,	  /* --native: the unwind stopped short of the root */
	PROFILE_DROP_NATIVE_MISMATCH,	  /* --native: eval activations and entry frames differ */
	PROFILE_DROP_NATIVE_EVAL_UNNAMED, /* --native: no symbol covers the eval loop */
	PROFILE_DROP_NATIVE_DEEP, /* --native: more eval activations than a record matches */
	PROFILE_DROP__COUNT
};

struct profile_drops {
	uint64_t n[PROFILE_DROP__COUNT];
};

/* The metric label value of a drop reason ("exited", "stale", ...). */
const char *profile_drop_name(enum profile_drop d);
/* The summary's words for it ("of processes that had exited before ..."). */
const char *profile_drop_text(enum profile_drop d);

/* One counted sample in time: the interval [end_ns - dur_ns, end_ns] of the kernel's
 * monotonic clock that it weighs, and its agg stack (which names process and thread). */
struct profile_event {
	uint64_t end_ns;
	uint64_t dur_ns;
	size_t stack;
};
#define PROFILE_TIMELINE_BUDGET ((size_t)64 << 20)

/* How the samples were taken, so writers can state periods and times. */
struct profile_sampling {
	uint32_t frequency_hz; /* samples per second per CPU; 0 = unknown */
	/* Unix time (ns) when sampling began: the wall clock (CLOCK_REALTIME) when it started,
	 * a window's the end of the window before (profile__rotate); 0 = unknown */
	uint64_t start_ns;
	/* when it ended: the start plus the time elapsed (CLOCK_BOOTTIME), which a step of the
	 * wall clock does not move; 0 = still running (writers take "now" so) */
	uint64_t end_ns;
};

struct profile;

struct profile *profile__new(const struct profile_opts *opts);
void profile__free(struct profile *p);

/* Close a window: returns a profile holding everything p counted since it started (or
 * since the previous rotation), its processes and names, sampling times ending now; p
 * goes on with its live processes and nothing counted, from where the window ended (or,
 * the wall clock stepped ahead of the windows' time line, from the clock: profile.c). The
 * window borrows p's symbol cache: free it before p. NULL on ENOMEM (p is unchanged). */
struct profile *profile__rotate(struct profile *p);
/* Free the names (symtab.h) that neither the symbol cache nor any of the `n` profiles
 * sharing it (the one that owns it and its taps: every profile still alive) holds, when
 * they are past their budget; a window's profile is freed before (agent: each window). */
void profile__collect_names(struct profile *const *ps, size_t n);
/* A profile that counts alongside p from now on (the caller feeds it the same sample
 * records), borrowing p's symbol cache and knowing p's live processes; code records go to
 * p only. Free it before p. NULL on ENOMEM. */
struct profile *profile__new_tap(const struct profile *p);

/* --kernel: the kernel symbols that name kernel frames from now on (opts.ksyms). */
void profile__set_ksyms(struct profile *p, const struct kallsyms *k);

/* Track a target (t->id set); records of other target ids are dropped. 0 or -ENOMEM. */
int profile__add_target(struct profile *p, const struct target *t);
/* Target `id` ended (exit or exec): its symbols are freed; its samples stay counted. */
void profile__target_gone(struct profile *p, uint32_t id);

/* Add one ring-buffer record (a sample or a code record). Always returns 0 (problems are
 * counted in drops) unless memory runs out (-ENOMEM). */
int profile__add_record(struct profile *p, const void *data, size_t size);
struct native_stack;
/* The same for a sample record with its unwound native stack (--native): counted merged
 * with its Python frames, or not counted under the reason `ns` or the merge gives. */
int profile__add_sample_native(struct profile *p, const void *data, size_t size,
			       const struct native_stack *ns);

/* Count `weight` for a stack symbolized before (the agg frame ids an on_stack hook was
 * given, root first): trace --aggregate's hits that the kernel counted. 0 or -ENOMEM. */
int profile__add_stack(struct profile *p, const struct agg_who *who, const uint32_t *ids,
		       uint32_t n, uint64_t weight);
/* Shipped hits not counted, for the reasons `d` gives (the kernel counted them under a
 * stack whose first record was not counted). */
void profile__add_drops(struct profile *p, const struct profile_drops *d);

/* Sampling starts now at `frequency_hz`: stamps the wall-clock start (and the time
 * elapsed is counted from now), clears the end. */
void profile__start_sampling(struct profile *p, uint32_t frequency_hz);
/* Sampling ended now (optional: until then writers take the time they write as the end). */
void profile__stop_sampling(struct profile *p);
/* Set all of it explicitly (times in CLOCK_REALTIME ns), e.g. for a profile built offline. */
void profile__set_sampling(struct profile *p, uint32_t frequency_hz, uint64_t start_ns,
			   uint64_t end_ns);
const struct profile_sampling *profile__sampling(const struct profile *p);
/* Nanoseconds of CPU time one sample stands for (1e9 / frequency); 0 when unknown. */
/* What one count is worth in nanoseconds: the sampling period for samples, 1 for profiles
 * whose counts are nanoseconds; 0 when unknown. */
uint64_t profile__period_ns(const struct profile *p);
/* The measured quantity, as pprof's value types name it: "cpu", "off_cpu" or "wall". */
const char *profile__value_name(const struct profile *p);
/* Counts are nanoseconds (off-cpu, wall), not samples. */
bool profile__counts_ns(const struct profile *p);
/* Wall-clock length of the recording in ns: end (or now, while running) minus start. */
uint64_t profile__duration_ns(const struct profile *p);

const struct agg *profile__agg(const struct profile *p);
const struct symtab *profile__symtab(const struct profile *p);
const struct profile_opts *profile__opts(const struct profile *p);
const struct profile_drops *profile__drops(const struct profile *p);
/* The samples in time (opts.timeline), in the order counted; *n of them. */
const struct profile_event *profile__timeline(const struct profile *p, size_t *n);
/* Samples counted but not in the timeline: past its byte budget. */
uint64_t profile__timeline_dropped(const struct profile *p);
/* Shipped records not counted, all reasons together. */
uint64_t profile__dropped(const struct profile *p);
/* The same as profile__drops, and of every window rotated out of p before (profile__rotate):
 * what a run did not count, for its summary. */
void profile__run_drops(const struct profile *p, struct profile_drops *out);
/* The process of agg stacks' `proc` field (NULL if out of range). */
const struct profile_process *profile__process(const struct profile *p, uint32_t proc);
size_t profile__nprocesses(const struct profile *p);
/* What follows a process's comm in a root frame: " (4242)", or in a container
 * " (4242, ns 7, container 0123456789ab)". Digits and hex only: writers add it unescaped.
 * PROFILE_TAG_SIZE bytes are enough. */
#define PROFILE_TAG_SIZE 64
void profile__process_tag(const struct profile *p, uint32_t proc, char *buf, size_t size);
/* The name of thread `tid` of process `proc` (an agg stack's proc): its Python name
 * (threading.Thread.name) when it could be read, else its comm as seen when it was first
 * sampled ("?" if unknown). */
const char *profile__proc_thread_name(const struct profile *p, uint32_t proc, uint32_t tid);
/* Its comm only (what the kernel calls it). */
const char *profile__proc_thread_os_name(const struct profile *p, uint32_t proc, uint32_t tid);

/* How the Python thread names went: threads sampled, of them named; reads of the
 * threading module, failed ones, ones that found it not imported, and threads it knows
 * whose name could not be read. */
struct profile_names {
	uint64_t threads, named;
	uint64_t reads, failed, no_threading, unreadable;
	uint64_t mem_reads;   /* memory reads the scans made */
	uint64_t over_budget; /* scans not started, or cut, for the process's read budget */
};
const struct profile_names *profile__names(const struct profile *p);
/* "sleeping", "uninterruptible", "preempted" or "other" when agg frame `frame_id` is an
 * off-CPU stack's leaf pseudo-frame (opts.block_frames), else NULL. */
const char *profile__block_reason(const struct profile *p, uint32_t frame_id);
/* --async: the name of the task the stack's thread was running (its innermost task mark,
 * "[task NAME]"), written into buf (cut to fit); NULL when the stack has none. */
const char *profile__stack_task(const struct profile *p, const uint32_t *frames, uint32_t n,
				char *buf, size_t size);
/* The same for the process of target id `target` ("?" if unknown). */
const char *profile__thread_name(const struct profile *p, uint32_t target, uint32_t tid);
/* Is target `target` a free-threaded build (no GIL)? false when unknown. */
bool profile__free_threaded(const struct profile *p, uint32_t target);
/* The symbolizer's figures (cache bytes, evictions, where entries came from). */
const struct symtab_stats *profile__symtab_stats(const struct profile *p);

#endif
