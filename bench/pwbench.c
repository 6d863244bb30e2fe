// SPDX-License-Identifier: MIT
/* pwbench: what one sample costs in BPF, from the kernel's own run-time statistics.
 * `bpfcost` loads pywalk's real program (its skeleton, unchanged) and the floor program,
 * attaches each in turn to a perf event of one target process only, so every run is a walk
 * of that process's (unchanging) stack, and prints run_time_ns / run_cnt per round as JSON.
 * `exitcost` does the same on a process pywalk does not profile: the early-exit path.
 * `bpfcost --async` loads the program a second time as `--async` loads it (its rodata
 * `async_wanted` set, the target's asyncio table in `async_procs`, found as the engine
 * finds it) and alternates rounds of the two on the same process, instead of the floor.
 * It measures; it judges nothing (bench/run.py makes the table). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "floor.h"
#include "engine/loader.h"
#include "inspect/target.h"
#include "lib/util.h"
#include "pystate/asyncio_tasks.h"

/* ---- the walker over the target's memory, recording every read ------------------------- */

static pid_t mem_pid;
static struct floor_plan *recording; /* reads are appended here while non-NULL */
static int recording_overflow;

static int mem_read(void *dst, __u32 size, __u64 addr)
{
	struct iovec local = { .iov_base = dst, .iov_len = size };
	struct iovec remote = { .iov_base = (void *)(unsigned long)addr, .iov_len = size };

	if (recording) {
		if (recording->n < FLOOR_MAX_READS && size >= 1 && size <= FLOOR_READ_MAX) {
			recording->reads[recording->n].addr = addr;
			recording->reads[recording->n].size_m1 = size - 1;
			recording->n++;
		} else {
			recording_overflow = 1;
		}
	}
	if (process_vm_readv(mem_pid, &local, 1, &remote, 1, 0) != (ssize_t)size)
		return -EFAULT;
	return 0;
}

#define PW_READ_USER(dst, size, addr) mem_read((dst), (size), (addr))
#include "walk.h"

#include "floor.skel.h"
_Static_assert(PW_TSTATE_READ_MAX <= FLOOR_READ_MAX && PW_FRAME_READ_MAX <= FLOOR_READ_MAX &&
		       PW_WINDOW_MAX <= FLOOR_READ_MAX,
	       "the floor program must be able to make every read pywalk makes");
#include "pywalk.skel.h"

static const char *const outcome_names[] = {
#define PW_X_NAME(name, label) #name,
	PW_OUTCOMES(PW_X_NAME)
#undef PW_X_NAME
};

struct snapshot {
	__u64 tstate;
	__u32 nframes; /* Python frames the walk ships */
	__u32 visited; /* frames read, entry shims included */
	__u64 read_bytes;
};

/* The thread state of `tid`: the same search pywalk's program makes on a cache miss. 3.10
 * matches pthread_self(), which is not visible from outside, so there the process must have
 * exactly one thread state. */
static int find_tstate(const struct pw_proc *cfg, pid_t tid, __u64 *out)
{
	struct pw_tfind tf;
	__u64 interp = 0, ts = 0, next = 0;
	int err;

	if (cfg->thread_match == PW_MATCH_NATIVE_TID) {
		err = pw_tfind_init(&tf, cfg, (__u64)tid);
		for (int i = 0; !err && i < PW_MAX_THREAD_WALK; i++)
			if (pw_tfind_step(&tf, cfg))
				break;
		if (err || tf.err)
			return -EFAULT;
		*out = tf.found;
		return tf.found ? 0 : -ENOENT;
	}
	if (mem_read(&interp, 8, cfg->runtime_addr + cfg->off.runtime_interp_head) || !interp ||
	    mem_read(&ts, 8, interp + cfg->off.interp_threads_head) || !ts ||
	    mem_read(&next, 8, ts + cfg->off.tstate_next))
		return -EFAULT;
	if (next)
		return -EMLINK;
	*out = ts;
	return 0;
}

static struct pw_walkmem walk_mem;

/* Walk the thread's stack as pywalk's program does on a thread-cache hit, recording each
 * read into `plan`: thread state, cframe (3.11/3.12), then walk.h's reads. */
static int snapshot_take(const struct target *t, pid_t tid, __u32 max_depth,
			 struct floor_plan *plan, struct snapshot *snap, char *why, size_t why_size)
{
	const struct pw_proc *cfg = &t->ver.cfg;
	__u8 ts[PW_TSTATE_READ_MAX] = { 0 };
	__u32 ts_size = cfg->off.tstate_read_size;
	struct pw_walk w;
	__u64 current;
	int err;

	memset(snap, 0, sizeof(*snap));
	memset(plan, 0, sizeof(*plan));
	mem_pid = t->pid;
	err = find_tstate(cfg, tid, &snap->tstate);
	if (err) {
		snprintf(why, why_size, "no thread state for TID %d of PID %d: %s", tid, t->pid,
			 err == -EMLINK ? "3.10 target with several threads" : strerror(-err));
		return err;
	}
	if (ts_size > PW_TSTATE_READ_MAX)
		ts_size = PW_TSTATE_READ_MAX;
	recording = plan;
	recording_overflow = 0;
	err = mem_read(ts, ts_size, snap->tstate);
	if (!err && pw_current_frame(cfg, ts, &current) != PW_OUT__CONTINUE)
		err = -ENODATA;
	if (!err) {
		pw_walk_start(&w, &walk_mem, cfg, ts, current, max_depth);
		/* only the reads matter here: shipped frames are not kept */
		for (__u32 i = 0; i < pw_walk_bound(max_depth); i++)
			if (pw_walk_step(&w, cfg, &walk_mem))
				break;
	}
	recording = NULL;
	if (err || w.outcome != PW_OUT_SHIPPED || recording_overflow) {
		snprintf(why, why_size,
			 "walking PID %d from userspace did not give a shippable "
			 "stack (err %d, outcome %s, plan overflow %d)",
			 t->pid, err,
			 err			     ? "-"
			 : w.outcome < PW_OUT__COUNT ? outcome_names[w.outcome]
						     : "CONTINUE",
			 recording_overflow);
		return -EPROTO;
	}
	snap->nframes = w.nframes;
	snap->visited = w.visited;
	for (__u32 i = 0; i < plan->n; i++)
		snap->read_bytes += plan->reads[i].size_m1 + 1;
	return 0;
}

/* ---- perf events, program statistics --------------------------------------------------- */

static int open_task_event(pid_t pid, __u32 freq_hz)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = freq_hz,
		.disabled = 1,
	};
	int fd = syscall(__NR_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

struct prog_stats {
	__u64 run_cnt, run_time_ns;
};

static int prog_stats_read(int prog_fd, struct prog_stats *st, struct bpf_prog_info *info_out)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	st->run_cnt = info.run_cnt;
	st->run_time_ns = info.run_time_ns;
	if (info_out)
		*info_out = info;
	return 0;
}

/* The sampler's outcomes and counters (probe 0's row: PW_NSLOTS), summed over the CPUs. */
static int outcomes_read(const struct pywalk_bpf *skel, __u64 sums[PW_NSLOTS])
{
	int ncpus = libbpf_num_possible_cpus();
	__u64 *vals = calloc(ncpus, sizeof(*vals));

	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < PW_NSLOTS; k++) {
		sums[k] = 0;
		if (bpf_map__lookup_elem(skel->maps.outcomes, &k, sizeof(k), vals,
					 ncpus * sizeof(*vals), 0)) {
			free(vals);
			return -errno;
		}
		for (int c = 0; c < ncpus; c++)
			sums[k] += vals[c];
	}
	free(vals);
	return 0;
}

struct rb_count {
	__u64 records;
	__u64 wrong_depth; /* records whose frame count is not the snapshot's */
	__u32 want_frames;
	/* --async: records carrying a task chain (PW_SF_ASYNC), and their frame counts (the
	 * thread's frames, the task marks and the awaiting tasks' coroutine frames) */
	__u64 chains;
	__u32 chain_frames_min, chain_frames_max;
};

static int on_record(void *ctx, void *data, size_t size)
{
	struct rb_count *c = ctx;
	const struct pw_sample_hdr *h = data;

	/* a code record (shipped once per code object and CPU), a --kernel stack record */
	if (size >= sizeof(h->kind) && h->kind != PW_REC_SAMPLE)
		return 0;
	c->records++;
	if (size >= sizeof(*h) && (h->flags & PW_SF_ASYNC)) {
		if (!c->chains++ || h->nframes < c->chain_frames_min)
			c->chain_frames_min = h->nframes;
		if (h->nframes > c->chain_frames_max)
			c->chain_frames_max = h->nframes;
		return 0; /* its frame count is the chain's, not the snapshot's */
	}
	if (size < sizeof(*h) || h->nframes != c->want_frames)
		c->wrong_depth++;
	return 0;
}

/* Attach `prog` to a fresh perf event on `pid` for `ms` milliseconds (consuming `rb` if
 * given), and add the run statistics gained to `out`. */
static int run_round(int prog_fd, pid_t pid, __u32 freq_hz, __u32 ms, struct ring_buffer *rb,
		     struct prog_stats *out)
{
	struct prog_stats before = { 0 }, after = { 0 };
	int fd, err, link = -1;
	__u64 end;

	fd = open_task_event(pid, freq_hz);
	if (fd < 0)
		return fd;
	err = prog_stats_read(prog_fd, &before, NULL);
	if (err)
		goto out;
	/* a link by fd: the program may be pywalk's, the floor or another tool's (by id) */
	link = bpf_link_create(prog_fd, fd, BPF_PERF_EVENT, NULL);
	if (link < 0) {
		err = -errno;
		goto out;
	}
	if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
		err = -errno;
		goto out;
	}
	end = now_ns() + (__u64)ms * 1000000ull;
	while (now_ns() < end) {
		if (rb) {
			err = ring_buffer__poll(rb, 50);
			if (err < 0 && err != -EINTR)
				goto out;
		} else {
			usleep(20000);
		}
	}
	close(link);
	link = -1;
	if (rb)
		ring_buffer__consume(rb);
	err = prog_stats_read(prog_fd, &after, NULL);
	if (err)
		goto out;
	out->run_cnt = after.run_cnt - before.run_cnt;
	out->run_time_ns = after.run_time_ns - before.run_time_ns;
	err = 0;
out:
	if (link >= 0)
		close(link);
	close(fd);
	return err;
}

/* ---- the two measurements --------------------------------------------------------------- */

struct opts {
	pid_t pid;
	__u32 freq_hz, rounds, round_ms, max_depth;
	int exit_path; /* 1: `pid` is not registered, measure the early exit */
	int hold;      /* 1: just hold the empty program on every CPU's perf event */
	__u32 prog_id; /* progcost: the loaded program to measure */
	int kernel;    /* 1: pywalk's --kernel (each sample ships its kernel stack first) */
	int async;     /* 1: bpfcost also measures pywalk's --async, in alternating rounds */
};

static struct pywalk_bpf *pywalk_load(__u32 max_depth, int kernel, int async)
{
	struct pywalk_bpf *skel = pywalk_bpf__open();
	int err;

	if (!skel)
		return NULL;
	skel->rodata->max_depth = max_depth;
	skel->rodata->kernel_stacks = kernel;
	skel->rodata->async_wanted = async; /* as the loader sets it for --async */
	err = bpf_map__set_max_entries(skel->maps.scratch, libbpf_num_possible_cpus());
	if (!err)
		err = pywalk_bpf__load(skel);
	if (err) {
		pywalk_bpf__destroy(skel);
		errno = -err;
		return NULL;
	}
	return skel;
}

static void print_prog(const char *name, int prog_fd, const struct prog_stats *rounds, __u32 n)
{
	struct bpf_prog_info info;
	struct prog_stats st;

	memset(&info, 0, sizeof(info));
	prog_stats_read(prog_fd, &st, &info);
	printf("\"%s\": {\"prog\": \"%s\", \"verified_insns\": %u, \"xlated_insns\": %u, "
	       "\"jited_bytes\": %u, \"rounds\": [",
	       name, info.name, info.verified_insns, info.xlated_prog_len / 8, info.jited_prog_len);
	for (__u32 i = 0; i < n; i++)
		printf("%s[%llu, %llu]", i ? ", " : "", (unsigned long long)rounds[i].run_cnt,
		       (unsigned long long)rounds[i].run_time_ns);
	printf("]}");
}

/* --async: the sampler's offsets for target `t`, as the engine's table watch makes them
 * (async_watch.c): the _asyncio table found in its maps now, checked against its layouts. */
static int async_offsets(const struct target *t, struct pw_async_off *ao, char *why,
			 size_t why_size)
{
	struct async_table tab;
	char where[384];
	enum async_status st;

	if (t->ver.major != 3 || t->ver.minor < 14 || !t->ver.aio.present) {
		snprintf(why, why_size, "PID %d is CPython %u.%u: --async needs 3.14+", t->pid,
			 t->ver.major, t->ver.minor);
		return -ENOTSUP;
	}
	st = async_table_find(t->pid, t->binary, &tab, where, sizeof(where), NULL);
	if (st != ASYNC_OK) {
		snprintf(why, why_size, "PID %d: no asyncio task table (status %d): %s", t->pid,
			 (int)st, where);
		return -ENOENT;
	}
	return async_sampler_offsets(&tab, t, ao, why, why_size);
}

/* Register the process to sample in `skel`'s maps as pywalk's loader does: `t` (NULL: a
 * dummy that never runs, for the early exit), and with `ao` its asyncio table. */
static int pywalk_register(struct pywalk_bpf *skel, pid_t pid, const struct target *t,
			   const struct pw_async_off *ao)
{
	struct pw_proc cfg = { 0 };
	__u32 key = (__u32)pid;

	if (t)
		cfg = target_config(t);
	loader_mark_target(skel->bss->target_bits, key);
	if (bpf_map__update_elem(skel->maps.procs, &key, sizeof(key), &cfg, sizeof(cfg), BPF_ANY))
		return -errno;
	if (ao && bpf_map__update_elem(skel->maps.async_procs, &key, sizeof(key), ao, sizeof(*ao),
				       BPF_ANY))
		return -errno;
	return 0;
}

static void print_counts(const struct rb_count *rbc, const __u64 *out0, const __u64 *out1)
{
	printf("\"records\": %llu, \"records_wrong_depth\": %llu, \"outcomes\": {",
	       (unsigned long long)rbc->records, (unsigned long long)rbc->wrong_depth);
	for (int i = 0; i < PW_OUT__COUNT; i++)
		printf("%s\"%s\": %llu", i ? ", " : "", outcome_names[i],
		       (unsigned long long)(out1[i] - out0[i]));
	printf("}, ");
}

/* --async's part of the line: its records, outcomes and counters, and its rounds. */
static void print_async(int prog_fd, const struct rb_count *rbc, const __u64 *out0,
			const __u64 *out1, const struct prog_stats *rounds, __u32 n)
{
#define PW_ASYNC_COUNTER(c) \
	(unsigned long long)(out1[PW_COUNTER_INDEX(c)] - out0[PW_COUNTER_INDEX(c)])
	printf("\"async\": {\"chain_records\": %llu, \"chain_frames\": [%u, %u], ",
	       (unsigned long long)rbc->chains, rbc->chain_frames_min, rbc->chain_frames_max);
	print_counts(rbc, out0, out1);
	printf("\"counters\": {\"RUNS\": %llu, \"ASYNC_RUNNING\": %llu, \"ASYNC_OUTSIDE\": %llu, "
	       "\"ASYNC_UNKNOWN\": %llu}, ",
	       PW_ASYNC_COUNTER(PW_CNT_RUNS), PW_ASYNC_COUNTER(PW_CNT_ASYNC_RUNNING),
	       PW_ASYNC_COUNTER(PW_CNT_ASYNC_OUTSIDE), PW_ASYNC_COUNTER(PW_CNT_ASYNC_UNKNOWN));
#undef PW_ASYNC_COUNTER
	print_prog("walk", prog_fd, rounds, n);
	printf("}");
}

static int measure(const struct opts *o)
{
	struct prog_stats *walk_rounds = NULL, *other_rounds = NULL, warm;
	__u64 out0[PW_NSLOTS], out1[PW_NSLOTS], aout0[PW_NSLOTS], aout1[PW_NSLOTS];
	struct floor_plan *plan = NULL;
	struct pywalk_bpf *skel = NULL, *askel = NULL;
	struct floor_bpf *floor = NULL;
	struct ring_buffer *rb = NULL, *arb = NULL, *other_rb = NULL;
	struct rb_count rbc = { 0 }, arbc = { 0 };
	struct snapshot snap = { 0 };
	struct pw_async_off ao = { 0 };
	struct target t;
	char why[512] = "";
	int err = 0, stats_fd = -1, walk_fd, other_fd = -1;
	__u32 zero = 0;

	walk_rounds = calloc(o->rounds, sizeof(*walk_rounds));
	other_rounds = calloc(o->rounds, sizeof(*other_rounds));
	plan = calloc(1, sizeof(*plan));
	if (!walk_rounds || !other_rounds || !plan) {
		err = -ENOMEM;
		snprintf(why, sizeof(why), "out of memory");
		goto out;
	}
	if (!o->exit_path) {
		err = target_inspect(o->pid, NULL, &t, NULL, why, sizeof(why));
		t.id = 1;
		if (!err && o->async)
			err = async_offsets(&t, &ao, why, sizeof(why));
		/* an event loop's stack changes between a task's steps: another look then */
		for (int tries = 0; !err; tries++) {
			err = snapshot_take(&t, o->pid, o->max_depth, plan, &snap, why,
					    sizeof(why));
			if (err != -EPROTO || !o->async || tries == 50)
				break;
			usleep(20000);
		}
		if (err)
			goto out;
	}
	skel = pywalk_load(o->max_depth, o->kernel, 0);
	if (skel && o->async)
		askel = pywalk_load(o->max_depth, o->kernel, 1);
	if (!skel || (o->async && !askel)) {
		err = -errno;
		snprintf(why, sizeof(why), "cannot load pywalk's BPF program%s: %s",
			 skel ? " with --async" : "", strerror(errno));
		goto out;
	}
	if (o->exit_path)
		/* one registered process that never runs, so the lookup is a miss in a non-empty
		 * map, as in a real run */
		err = pywalk_register(skel, 0x3fffffff, NULL, NULL);
	else
		err = pywalk_register(skel, o->pid, &t, NULL);
	if (!err && askel)
		err = pywalk_register(askel, o->pid, &t, &ao);
	if (err) {
		snprintf(why, sizeof(why), "cannot configure pywalk's maps: %s", strerror(-err));
		goto out;
	}
	walk_fd = bpf_program__fd(skel->progs.on_perf_event);
	rbc.want_frames = snap.nframes;
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_record, &rbc, NULL);
	if (!rb) {
		err = -errno;
		snprintf(why, sizeof(why), "cannot read pywalk's ring buffer: %s", strerror(errno));
		goto out;
	}
	if (askel) {
		/* the rounds alternate pywalk without and with --async */
		arbc.want_frames = snap.nframes;
		arb = ring_buffer__new(bpf_map__fd(askel->maps.events), on_record, &arbc, NULL);
		if (!arb) {
			err = -errno;
			snprintf(why, sizeof(why), "cannot read pywalk's ring buffer: %s",
				 strerror(errno));
			goto out;
		}
		other_fd = bpf_program__fd(askel->progs.on_perf_event);
		other_rb = arb;
	} else {
		/* the rounds alternate pywalk and the floor */
		floor = floor_bpf__open_and_load();
		if (!floor) {
			err = -errno;
			snprintf(why, sizeof(why), "cannot set up the floor program: %s",
				 strerror(errno));
			goto out;
		}
		other_fd = bpf_program__fd(floor->progs.floor_reads);
		if (bpf_map__update_elem(floor->maps.plan, &zero, sizeof(zero), plan, sizeof(*plan),
					 BPF_ANY)) {
			err = -errno;
			snprintf(why, sizeof(why), "cannot write the read plan: %s",
				 strerror(errno));
			goto out;
		}
	}
	/* run-time statistics on while this fd is open (the kernel.bpf_stats_enabled counter) */
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		err = -errno;
		snprintf(why, sizeof(why), "cannot enable BPF run-time statistics: %s",
			 strerror(errno));
		goto out;
	}

	/* warm-up (thread cache, page tables, code), then ABAB.. / BABA.. alternating rounds */
	err = run_round(walk_fd, o->pid, o->freq_hz, 200, rb, &warm);
	if (!err && !o->exit_path)
		err = run_round(other_fd, o->pid, o->freq_hz, 200, other_rb, &warm);
	if (!err)
		err = outcomes_read(skel, out0);
	if (!err && askel)
		err = outcomes_read(askel, aout0);
	rbc.records = rbc.wrong_depth = 0;
	memset(&arbc, 0, sizeof(arbc));
	arbc.want_frames = snap.nframes;
	for (__u32 r = 0; !err && r < o->rounds; r++) {
		if (r % 2 == 0 || o->exit_path)
			err = run_round(walk_fd, o->pid, o->freq_hz, o->round_ms, rb,
					&walk_rounds[r]);
		if (!err && !o->exit_path)
			err = run_round(other_fd, o->pid, o->freq_hz, o->round_ms, other_rb,
					&other_rounds[r]);
		if (!err && r % 2 == 1 && !o->exit_path)
			err = run_round(walk_fd, o->pid, o->freq_hz, o->round_ms, rb,
					&walk_rounds[r]);
	}
	if (!err)
		err = outcomes_read(skel, out1);
	if (!err && askel)
		err = outcomes_read(askel, aout1);
	if (err) {
		snprintf(why, sizeof(why), "measuring PID %d failed: %s", o->pid, strerror(-err));
		goto out;
	}

	printf("{\"pid\": %d, \"hz\": %u, \"exit_path\": %s, ", o->pid, o->freq_hz,
	       o->exit_path ? "true" : "false");
	if (!o->exit_path)
		printf("\"python\": \"%u.%u.%u\", \"chain_kind\": %u, \"frames\": %u, "
		       "\"visited\": %u, \"reads\": %u, \"read_bytes\": %llu, "
		       "\"frame_read_size\": %u, \"tstate_read_size\": %u, ",
		       t.ver.major, t.ver.minor, t.ver.micro, t.ver.cfg.chain_kind, snap.nframes,
		       snap.visited, plan->n, (unsigned long long)snap.read_bytes,
		       t.ver.cfg.off.frame_read_size, t.ver.cfg.off.tstate_read_size);
	print_counts(&rbc, out0, out1);
	print_prog("walk", walk_fd, walk_rounds, o->rounds);
	if (askel) {
		printf(", ");
		print_async(other_fd, &arbc, aout0, aout1, other_rounds, o->rounds);
	} else if (!o->exit_path) {
		printf(", ");
		print_prog("floor", other_fd, other_rounds, o->rounds);
	}
	printf("}\n");
out:
	if (err)
		fprintf(stderr, "pwbench: %s\n", why);
	if (stats_fd >= 0)
		close(stats_fd);
	ring_buffer__free(rb);
	ring_buffer__free(arb);
	floor_bpf__destroy(floor);
	pywalk_bpf__destroy(askel);
	pywalk_bpf__destroy(skel);
	free(plan);
	free(walk_rounds);
	free(other_rounds);
	return err;
}

/* `progcost`: another tool's program, already loaded (bpftrace's, by id), attached to a
 * perf event of `pid` only, as pywalk's is: the same statistics, the same kind of run. */
static int measure_other(const struct opts *o)
{
	struct prog_stats *rounds = calloc(o->rounds, sizeof(*rounds)), warm;
	int prog_fd = -1, stats_fd = -1, err = 0;

	if (!rounds)
		return -ENOMEM;
	prog_fd = bpf_prog_get_fd_by_id(o->prog_id);
	if (prog_fd < 0) {
		err = -errno;
		fprintf(stderr, "pwbench: no BPF program %u: %s\n", o->prog_id, strerror(errno));
		goto out;
	}
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		err = -errno;
		fprintf(stderr, "pwbench: cannot enable BPF run-time statistics: %s\n",
			strerror(errno));
		goto out;
	}
	err = run_round(prog_fd, o->pid, o->freq_hz, 200, NULL, &warm);
	for (__u32 r = 0; !err && r < o->rounds; r++)
		err = run_round(prog_fd, o->pid, o->freq_hz, o->round_ms, NULL, &rounds[r]);
	if (err) {
		fprintf(stderr, "pwbench: measuring program %u on PID %d failed: %s\n", o->prog_id,
			o->pid, strerror(-err));
		goto out;
	}
	printf("{\"pid\": %d, \"hz\": %u, \"prog_id\": %u, ", o->pid, o->freq_hz, o->prog_id);
	print_prog("walk", prog_fd, rounds, o->rounds);
	printf("}\n");
out:
	if (stats_fd >= 0)
		close(stats_fd);
	if (prog_fd >= 0)
		close(prog_fd);
	free(rounds);
	return err;
}

static volatile sig_atomic_t hold_stop;

static void on_hold_signal(int sig)
{
	(void)sig;
	hold_stop = 1;
}

/* `hold`: the empty program on one perf event per CPU, as pywalk's loader sets them up,
 * until SIGINT or SIGTERM: what being sampled costs a process before any work is done. */
static int hold(const struct opts *o)
{
	struct sigaction sa = { .sa_handler = on_hold_signal };
	int ncpus = libbpf_num_possible_cpus(), err = 0;
	struct bpf_link **links = NULL;
	struct floor_bpf *skel = NULL;
	int *fds = NULL;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	links = calloc(ncpus, sizeof(*links));
	fds = calloc(ncpus, sizeof(*fds));
	skel = floor_bpf__open_and_load();
	if (!links || !fds || !skel) {
		err = -errno;
		goto out;
	}
	for (int cpu = 0; cpu < ncpus; cpu++)
		fds[cpu] = -1;
	for (int cpu = 0; cpu < ncpus; cpu++) {
		struct perf_event_attr attr = {
			.size = sizeof(attr),
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.freq = 1,
			.sample_freq = o->freq_hz,
		};

		fds[cpu] = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fds[cpu] < 0) {
			if (errno == ENODEV)
				continue;
			err = -errno;
			goto out;
		}
		links[cpu] = bpf_program__attach_perf_event(skel->progs.empty, fds[cpu]);
		if (!links[cpu]) {
			err = -errno;
			goto out;
		}
	}
	while (!hold_stop)
		pause();
out:
	if (err)
		fprintf(stderr, "pwbench: cannot attach the empty program: %s\n", strerror(-err));
	for (int cpu = 0; links && cpu < ncpus; cpu++)
		bpf_link__destroy(links[cpu]);
	for (int cpu = 0; fds && cpu < ncpus; cpu++)
		if (fds[cpu] >= 0)
			close(fds[cpu]);
	floor_bpf__destroy(skel);
	free(links);
	free(fds);
	return err;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: pwbench bpfcost -p PID [options]   # walk vs reads-only floor\n"
		"       pwbench exitcost -p PID [options]  # early exit, PID not profiled\n"
		"       pwbench progcost -p PID --prog-id ID # a loaded program (bpftrace's)\n"
		"       pwbench hold [-F HZ]               # empty program, every CPU, until ^C\n\n"
		"Prints one JSON line: per round, run_cnt and run_time_ns of pywalk's\n"
		"program (and of the floor), attached to a perf event of PID only.\n\n"
		"Options:\n"
		"  -p, --pid PID         process (bpfcost: a Python whose main thread's stack\n"
		"                        does not change, e.g. bench/workload.py depth)\n"
		"  -F, --frequency HZ    samples per second (default 999)\n"
		"  -n, --rounds N        rounds per program (default 5)\n"
		"  -t, --round-ms MS     length of one round (default 1000)\n"
		"      --max-depth N     pywalk's --max-depth (default %d)\n"
		"      --prog-id ID      progcost: id of a loaded perf_event program\n"
		"      --kernel          bpfcost: pywalk's --kernel (kernel stack per sample)\n"
		"      --async           bpfcost: pywalk without and with --async in alternating\n"
		"                        rounds (no floor); PID: CPython 3.14+ running asyncio,\n"
		"                        e.g. bench/workload.py asyncio\n",
		PW_DEFAULT_MAX_DEPTH);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "rounds", required_argument, NULL, 'n' },
		{ "round-ms", required_argument, NULL, 't' },
		{ "max-depth", required_argument, NULL, 'D' },
		{ "prog-id", required_argument, NULL, 'P' },
		{ "kernel", no_argument, NULL, 'K' },
		{ "async", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct opts o = {
		.freq_hz = 999, .rounds = 5, .round_ms = 1000, .max_depth = PW_DEFAULT_MAX_DEPTH
	};
	__u32 pid = 0;
	int c, bad = 0;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "exitcost"))
		o.exit_path = 1;
	else if (!strcmp(argv[1], "hold"))
		o.hold = 1;
	else if (!strcmp(argv[1], "progcost"))
		o.prog_id = ~0u; /* set by --prog-id */
	else if (strcmp(argv[1], "bpfcost"))
		bad = 1;
	optind = 2;
	while (!bad && (c = getopt_long(argc, argv, "p:F:n:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			bad = parse_u32(optarg, 1, 0x3fffffff, &pid);
			break;
		case 'F':
			bad = parse_u32(optarg, 1, 100000, &o.freq_hz);
			break;
		case 'n':
			bad = parse_u32(optarg, 1, 1000, &o.rounds);
			break;
		case 't':
			bad = parse_u32(optarg, 10, 600000, &o.round_ms);
			break;
		case 'D':
			bad = parse_u32(optarg, 1, PW_MAX_FRAMES_CAP, &o.max_depth);
			break;
		case 'P':
			bad = parse_u32(optarg, 1, 0x7fffffff, &o.prog_id);
			break;
		case 'K':
			o.kernel = 1;
			break;
		case 'A':
			o.async = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			bad = 1;
		}
	}
	/* --async is bpfcost's: the other commands measure no program of a Python target */
	if (o.async && (o.exit_path || o.hold || o.prog_id))
		bad = 1;
	if (bad || (!pid && !o.hold) || o.prog_id == ~0u) {
		fprintf(stderr, "pwbench: bad command line\nTry 'pwbench --help'.\n");
		return 2;
	}
	if (o.hold)
		return hold(&o) ? 1 : 0;
	o.pid = (pid_t)pid;
	if (o.prog_id)
		return measure_other(&o) ? 1 : 0;
	return measure(&o) ? 1 : 0;
}
