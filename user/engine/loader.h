/* SPDX-License-Identifier: MIT */
/* The BPF side's lifetime: open/configure/load the skeleton, the sampler's perf events, the
 * process-lifecycle tracepoints, the ring buffer, per-process config, counters, teardown. */
#ifndef PW_LOADER_H
#define PW_LOADER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"

struct loader;

/* What the samples measure. */
enum loader_mode {
	LOADER_ON_CPU = 0, /* perf events: on-CPU samples */
	LOADER_OFF_CPU,	   /* sched_switch: off-CPU time by the stack that waited */
	LOADER_WALL,	   /* both: on-CPU samples and off-CPU time, every thread */
};

struct loader_opts {
	enum loader_mode mode;
	uint64_t min_block_ns; /* off-CPU: shorter waits in system calls are not walked */
	uint32_t frequency_hz;
	uint32_t max_depth;
	const char *event;	 /* "cpu-clock" (default), "cycles", "task-clock" */
	bool follow_all;	 /* every process is followed (every exec is reported) */
	bool no_code_records;	 /* benchmarks of the walk alone */
	uint32_t max_procs;	 /* processes sampled at once (map size); 0: 4096 */
	bool no_sampler;	 /* trace: no sampling perf events, only the probes it attaches */
	uint32_t latency_probes; /* trace: probes that are --latency entries (bit per id) */
	uint32_t filter_probes;	 /* trace: probes with a --filter (bit per id) */
	bool aggregate;		 /* trace --aggregate: hits counted in the kernel */
	bool print_args;	 /* trace --print: samples carry what the probe saw */
	bool gil;		 /* samples say whether their thread held the GIL */
	bool kernel_stacks;	 /* --kernel: samples come after their kernel stack record */
	uint32_t native_stack;	 /* --native: bytes of user stack each sample copies (0: off) */
	bool async;		 /* --async: samples carry the running asyncio task's chain */
	uint32_t aggregate_entries; /* its maps' keys per generation; 0: the default */
	/* the sampler's events go on these processes' threads and what they start later
	 * (perf_events.h), or on every CPU when none are given or they have too many */
	const pid_t *task_pids;
	size_t ntask_pids;
	uint32_t ring_bytes; /* the ring buffer (a power of 2, mapped twice: RSS); 0: 8 MiB */
	/* called for every ring-buffer record; returns 0 or a negative errno to stop */
	int (*on_record)(void *ctx, const void *data, size_t size);
	void *ctx;
};

/* Load and attach. On failure returns NULL with errno set and a sentence in `why`. */
struct loader *loader__open(const struct loader_opts *opts, char *why, size_t why_size);
void loader__free(struct loader *ld);

/* Start sampling process `pid` with config `cfg` (cfg->target names this lifetime).
 * 0 or a negative errno (-E2BIG: the map is full). */
/* Set tgid's bit of a loaded program's target bitmap (PW_TARGET_BITS), before its config
 * is inserted by hand (the bench does); loader__add_process does it itself. */
void loader_mark_target(__u64 *bits, __u32 tgid);
int loader__add_process(struct loader *ld, pid_t pid, const struct pw_proc *cfg);
/* Stop sampling `pid` if its config is still that of `target` (0: whatever it is). */
int loader__remove_process(struct loader *ld, pid_t pid, uint32_t target);
/* --async: where process `pid`'s tasks are, once its program has imported asyncio
 * (o->target names the lifetime). 0 or a negative errno. */
int loader__set_async(struct loader *ld, pid_t pid, const struct pw_async_off *o);
/* Report the execs and exit of `pid`, and with `children` follow its fork children alike,
 * whether or not it is sampled. */
int loader__follow(struct loader *ld, pid_t pid, bool children);

/* Per-task sampler events are opened stopped: start them once the targets are added (per-CPU
 * ones run from the open). 0 or a negative errno. */
int loader__start_sampler(struct loader *ld);
/* Threads the sampler's events were opened on; 0 when they are per CPU. */
size_t loader__sampled_tasks(const struct loader *ld);

/* Wait up to timeout_ms for records and hand them to on_sample. Returns records handled or
 * a negative errno (-EINTR is not an error). */
int loader__poll(struct loader *ld, int timeout_ms);
/* Off-CPU: thread `tid` of target `target` has been off CPU since `time_ns`, its stack
 * already held by userspace; its next switch-in reports the time. Not when the kernel has
 * already seen it leave since (-EEXIST). 0 or a negative errno. */
int loader__mark_switched_out(struct loader *ld, pid_t tid, uint32_t target, uint64_t time_ns,
			      uint32_t block);
/* Every thread still marked off CPU: cb(ctx, tid, target, since, owed ns, held). */
void loader__foreach_switched_out(struct loader *ld,
				  void (*cb)(void *ctx, pid_t tid, uint32_t target,
					     uint64_t time_ns, uint64_t owed_ns, bool held),
				  void *ctx);
/* Forget that mark if it is still the one made at `time_ns` (the thread ran meanwhile). */
void loader__unmark_switched_out(struct loader *ld, pid_t tid, uint64_t time_ns);

/* Hand over every record already in the ring buffer. */
int loader__drain(struct loader *ld);

/* Stop sampling: detach the program from the perf events, so the counters no longer move
 * and every record the program wrote is already in the ring buffer. */
void loader__stop(struct loader *ld);

/* trace's probes, attached with their cookie (PW_COOKIE). Each returns 0 or a negative
 * errno with a sentence in `why`; what they attach is detached by loader__stop. */
int loader__attach_tracepoint(struct loader *ld, const char *cat, const char *name, uint64_t cookie,
			      char *why, size_t why_size);
int loader__attach_uprobe(struct loader *ld, const char *path, uint64_t offset, bool ret,
			  uint64_t cookie, char *why, size_t why_size);
int loader__attach_usdt(struct loader *ld, const char *path, const char *provider, const char *name,
			uint64_t cookie, char *why, size_t why_size);
int loader__attach_kprobe(struct loader *ld, const char *func, uint64_t offset, bool ret,
			  uint64_t cookie, char *why, size_t why_size);
/* A perf event on every CPU: one hit every `period` events, or `period` Hz with `freq`. */
int loader__attach_perf(struct loader *ld, uint32_t type, uint64_t config, uint64_t period,
			bool freq, uint64_t cookie, char *why, size_t why_size);
/* Syscall `nr`'s probes (PW_SYSCALL_VALUE), then the raw syscall programs (once, after the
 * map is filled; `enter`/`exit`: which of the two are needed). */
int loader__set_syscall(struct loader *ld, uint32_t nr, uint32_t value);
int loader__attach_syscalls(struct loader *ld, bool enter, bool exit, char *why, size_t why_size);
/* Probe `probe`'s --filter program. */
int loader__set_filter(struct loader *ld, uint32_t probe, const struct pw_filter *f);

/* trace --aggregate (kagg.h of the BPF side). Flip the generation the programs count in
 * and wait until none still counts in the old one: *old is then quiescent, and every first
 * record of its keys is in the ring buffer. 0 or a negative errno. */
int loader__agg_flip(struct loader *ld, uint32_t *old);
/* Hand every count of generation `gen` to cb (which returns 0 or a negative errno to stop)
 * and empty its maps. Only for a generation loader__agg_flip made quiescent. */
int loader__agg_take(struct loader *ld, uint32_t gen,
		     int (*cb)(void *ctx, const struct pw_agg_key *k, const struct pw_agg_val *v),
		     void *ctx);

/* Sum the per-CPU counters: counts[PW_OUT__COUNT] outcomes, *runs = program runs. */
int loader__read_outcomes(struct loader *ld, uint64_t counts[PW_OUT__COUNT], uint64_t *runs);
/* The same for probe `probe` (< PW_MAX_PROBES; 0 is the sampler). */
int loader__read_probe_outcomes(struct loader *ld, uint32_t probe, uint64_t counts[PW_OUT__COUNT],
				uint64_t *runs);
/* The other counters (enum pw_counter). */
int loader__read_counters(struct loader *ld, uint64_t counters[PW_CNT__COUNT]);
/* Probe `probe`'s row of them (its latency counters). */
int loader__read_probe_counters(struct loader *ld, uint32_t probe,
				uint64_t counters[PW_CNT__COUNT]);

#endif
